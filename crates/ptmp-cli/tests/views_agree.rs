//! The views of one running graph agree: `ptmp top --once --json`, `ptmp
//! graph status --json` and the monitor's `/api/state` each render the
//! state the graph library works out (a node's and a process's state, an
//! edge's figures), so on the same run they say the same of every node,
//! process and edge.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

mod common;
use common::monitored::{merge_graph, sink_in, start, start_graph, wait_for, Run};
use common::{state, PTMP};

/// `ptmp ARGS` as JSON.
fn ptmp_json(args: &[&str]) -> Value {
    let o = Command::new(PTMP).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `ptmp graph status GRAPH --run-dir RUN --json` of run `r`, `graph`
/// being the graph file's name in the run's directory.
fn graph_status(r: &Run, graph: &str) -> Value {
    let (rd, g) = (r.dir.path().join("run"), r.dir.path().join(graph));
    ptmp_json(&[
        "graph",
        "status",
        g.to_str().unwrap(),
        "--run-dir",
        rd.to_str().unwrap(),
        "--json",
    ])
}

/// Each node's state as `ptmp top --once --json`, `ptmp graph status
/// --json` and `/api/state` give it, in that order.
fn three_views(r: &Run) -> [Vec<(String, String)>; 3] {
    let rd = r.dir.path().join("run");
    let rd = rd.to_str().unwrap();
    let pairs = |v: &Value, name: &str| -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = v
            .as_array()
            .into_iter()
            .flatten()
            .map(|n| {
                (
                    n[name].as_str().unwrap().into(),
                    n["state"].as_str().unwrap().into(),
                )
            })
            .collect();
        out.sort();
        out
    };
    let top = ptmp_json(&["top", rd, "--once", "--json"]);
    let status = graph_status(r, "mon.json");
    let status: Vec<(String, String)> = status["states"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect();
    [
        pairs(&top["tables"]["nodes"], "node"),
        status,
        pairs(&state(r.addr)["nodes"], "name"),
    ]
}

/// Each process's state as `graph status --json` and the monitor's
/// `/api/state` say it, sorted by process.
fn process_views(r: &Run) -> [Vec<(String, String)>; 2] {
    let v = graph_status(r, "mon.json");
    let status = v["process_states"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect();
    let mut api: Vec<(String, String)> = state(r.addr)["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().into(),
                p["state"].as_str().unwrap().into(),
            )
        })
        .collect();
    api.sort();
    [status, api]
}

/// The terminal view, `graph status` and the monitor work a node's state
/// out in one place, so on one run they say the same of every node: all
/// running, then one process stopped (SIGSTOP) until its status is stale.
#[test]
fn top_graph_status_and_the_monitor_agree_on_every_node() {
    let r = start(&[]);
    wait_for("messages at the sink", Duration::from_secs(30), || {
        sink_in(r.addr) > 0
    });
    let [top, status, api] = three_views(&r);
    assert_eq!(top.len(), 3, "{top:?}");
    assert!(top.iter().all(|(_, s)| s == "running"), "{top:?}");
    assert_eq!((&top, &status), (&api, &api));
    let [status, api] = process_views(&r);
    assert_eq!(status, api);
    assert!(api.iter().all(|(_, s)| s == "running"), "{api:?}");
    let pid = state(r.addr)["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "sink")
        .and_then(|p| p["pid"].as_u64())
        .unwrap() as i32;
    // SAFETY: kill(2) on a pid the supervisor reported as its running child.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let mut views = three_views(&r);
    wait_for(
        "the stopped sink shown stale",
        Duration::from_secs(30),
        || {
            views = three_views(&r);
            views[2]
                .iter()
                .any(|(n, s)| n == "sink" && s.starts_with("stale"))
        },
    );
    // The three were read one after the other: a stale age may have
    // gone on by a second between them.
    let word = |v: &[(String, String)]| -> Vec<(String, String, u64)> {
        v.iter()
            .map(|(n, s)| {
                let (w, age) = s.split_once(' ').unwrap_or((s, "0s"));
                let age = age.trim_end_matches('s').parse().unwrap_or(0);
                (n.clone(), w.to_string(), age)
            })
            .collect()
    };
    // A process's state, as the monitor and `graph status` say it: the
    // stopped one stale too (before, the monitor said "running").
    let procs = process_views(&r);
    // SAFETY: as above; the process is let go on again.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let [status, api] = procs.clone().map(|v| word(&v));
    for (a, b) in status.iter().zip(&api) {
        assert_eq!((&a.0, &a.1), (&b.0, &b.1), "{procs:?}");
        assert!(a.2.abs_diff(b.2) <= 1, "{procs:?}");
    }
    assert_eq!(status.len(), api.len(), "{procs:?}");
    for (n, w, _) in &api {
        assert_eq!(
            w,
            if n == "sink" { "stale" } else { "running" },
            "{procs:?}"
        );
    }
    let [top, status, api] = views.clone().map(|v| word(&v));
    for other in [&top, &status] {
        for (a, b) in other.iter().zip(&api) {
            assert_eq!((&a.0, &a.1), (&b.0, &b.1), "{views:?}");
            assert!(a.2.abs_diff(b.2) <= 1, "{views:?}");
        }
    }
    assert!(
        top.iter().any(|(n, w, _)| n == "sink" && w == "stale"),
        "{views:?}"
    );
    assert!(
        top.iter()
            .filter(|(n, _, _)| n != "sink")
            .all(|(_, w, _)| w == "running"),
        "{views:?}"
    );
}

/// An edge's figures as a view gives them, by its address: rate, lost,
/// stalls, p99 latency.
type EdgeFigs = BTreeMap<String, [Value; 4]>;

/// Every edge of `ptmp top --once --json`, `ptmp graph status --json`
/// and `/api/state`, in that order.
fn edge_views(r: &Run) -> [EdgeFigs; 3] {
    let rd = r.dir.path().join("run");
    let top = ptmp_json(&["top", rd.to_str().unwrap(), "--once", "--json"]);
    let status = graph_status(r, "merge.json");
    let top: EdgeFigs = top["tables"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let a = e["address"].as_str().unwrap().to_string();
            (
                a,
                [
                    e["rate_per_s"].clone(),
                    e["lost"].clone(),
                    e["stalls"].clone(),
                    e["p99_us"].clone(),
                ],
            )
        })
        .collect();
    // `graph status` gives the rate as the status files hold it: rounded
    // to a tenth as the other two show it.
    let tenth = |v: &Value| -> Value {
        v.as_f64()
            .map_or(Value::Null, |r| json!((r * 10.0).round() / 10.0))
    };
    let status: EdgeFigs = status["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let a = e["addresses"][0].as_str().unwrap().to_string();
            let p99 = e["latency_us"]["p99"].clone();
            (
                a,
                [
                    tenth(&e["rate"]),
                    e["lost"].clone(),
                    e["stalls"].clone(),
                    p99,
                ],
            )
        })
        .collect();
    let api: EdgeFigs = state(r.addr)["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let a = e["addresses"][0].as_str().unwrap().to_string();
            let p99 = e["latency_us"]["p99"].clone();
            (
                a,
                [
                    e["rate"].clone(),
                    e["lost"].clone(),
                    e["stalls"].clone(),
                    p99,
                ],
            )
        })
        .collect();
    [top, status, api]
}

/// The terminal view, `graph status` and the monitor count an edge's
/// sockets by one rule
/// (`EdgeFigures` of the graph library), so with every part held still
/// (SIGSTOP: their status files stop changing) they give every edge the
/// same rate, loss, stalls and latency, the fan-in to the zipper (two
/// senders, one receiving socket) included. Before, the monitor took the
/// senders' rate and the terminal view the receivers'.
#[test]
fn top_and_the_monitor_agree_on_every_edge() {
    let r = start_graph(merge_graph, &[]);
    wait_for("messages at the sink", Duration::from_secs(30), || {
        sink_in(r.addr) > 0
    });
    // Wait until every edge has a rate, so the figures compared are not
    // all nothing.
    wait_for("every edge flowing", Duration::from_secs(30), || {
        let e = state(r.addr)["edges"].clone();
        e.as_array()
            .is_some_and(|e| e.len() == 3 && e.iter().all(|e| e["rate"].as_f64() > Some(0.0)))
    });
    let pids: Vec<i32> = state(r.addr)["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["pid"].as_i64())
        .map(|p| p as i32)
        .collect();
    assert_eq!(pids.len(), 3);
    for &p in &pids {
        // SAFETY: kill(2) on pids the supervisor reported as its children.
        unsafe { libc::kill(p, libc::SIGSTOP) };
    }
    // The monitor reads the run directory about once a second: once two
    // reads a second apart give the same edges, it has read the last
    // status files.
    let mut views = edge_views(&r);
    wait_for(
        "the monitor's edges holding still",
        Duration::from_secs(20),
        || {
            std::thread::sleep(Duration::from_millis(1500));
            let again = edge_views(&r);
            let still = again[2] == views[2];
            views = again;
            still
        },
    );
    for &p in &pids {
        // SAFETY: as above; the processes are let go on again.
        unsafe { libc::kill(p, libc::SIGCONT) };
    }
    let [top, status, api] = views;
    assert_eq!(top.len(), 3, "{top:?}");
    assert_eq!(top, api);
    assert_eq!(status, api);
    assert!(top.values().all(|f| f[0].as_f64() > Some(0.0)), "{top:?}");
}
