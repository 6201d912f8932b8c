//! The live monitor of `ptmp graph run --http` follows `ptmp graph apply`:
//! with real processes, a running graph has one source and sink pair
//! replaced by another, and `/api/state` and `/metrics` (plain HTTP from
//! here) then show the new nodes with their counters and edge, and
//! neither the removed nodes nor their edge.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

mod common;
use common::{finish, get, state, text, wait_for, write_json, PTMP};

const LIMIT: Duration = Duration::from_secs(40);

/// A running supervisor, stopped with SIGINT (then killed) when the test
/// ends, so no graph outlives its test.
struct Sup(Child);

impl Drop for Sup {
    fn drop(&mut self) {
        // SAFETY: kill only sends a signal to the supervisor this test
        // started and has not reaped; it touches no memory.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGINT) };
        let t = std::time::Instant::now();
        while self.0.try_wait().ok().flatten().is_none() && t.elapsed() < LIMIT {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The named node of a state, if it lists it.
fn node<'a>(st: &'a Value, name: &str) -> Option<&'a Value> {
    st["nodes"].as_array()?.iter().find(|n| n["name"] == name)
}

/// The edges of a state as `from -> to` node names.
fn edges(st: &Value) -> Vec<String> {
    st["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let names = |k: &str| -> String {
                e[k].as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|r| r["node"].as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            };
            format!("{} -> {}", names("from"), names("to"))
        })
        .collect()
}

/// src -> snk, plus a second pair `extra` -> `extra_sink`, each node its
/// own process; the sources send until stopped.
fn pairs(name: &str, extra: &str, extra_sink: &str) -> Value {
    json!({
        "name": name,
        "nodes": [
            {"name": "src", "type": "source", "data": {"rate": 500, "detid": 1}},
            {"name": "snk", "type": "sink", "data": {}},
            {"name": extra, "type": "source", "data": {"rate": 500, "detid": 2}},
            {"name": extra_sink, "type": "sink", "data": {}}
        ],
        "edges": [
            {"from": "src.out", "to": "snk.in", "pattern": "pushpull"},
            {"from": format!("{extra}.out"), "to": format!("{extra_sink}.in"), "pattern": "pushpull"}
        ]
    })
}

#[test]
fn the_monitor_follows_an_applied_graph() {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    let name = format!("apply-http-{}", std::process::id());
    let f1 = write_json(d.path(), "g1.json", &pairs(&name, "srcb", "snkb"));
    let f2 = write_json(d.path(), "g2.json", &pairs(&name, "srcc", "snkc"));
    let mut child = Command::new(PTMP)
        .args(["graph", "run"])
        .arg(&f1)
        .arg("--run-dir")
        .arg(&rd)
        .args(["--http", "127.0.0.1:0", "--ttl", "120"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let sup = Sup(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if let Some(a) = line.split("monitor at http://").nth(1) {
                let _ = tx.send(a.trim_end_matches('/').to_string());
            }
        }
    });
    let addr: SocketAddr = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("ptmp graph run --http printed no monitor address")
        .parse()
        .unwrap();
    let first = wait_for(LIMIT, "traffic at snkb in /api/state", || {
        let st = state(addr);
        (node(&st, "snkb")?["in"].as_u64()? > 0).then_some(st)
    });
    assert!(node(&first, "snkc").is_none(), "{first}");
    assert!(
        edges(&first).contains(&"srcb -> snkb".to_string()),
        "{first}"
    );
    let structure = first["structure"].as_u64().expect("a structure number");

    let (s2, r) = (f2.display().to_string(), rd.display().to_string());
    let c = Command::new(PTMP)
        .args(["graph", "apply", &s2, "--run-dir", &r])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = finish(c, LIMIT);
    assert!(o.status.success(), "{}", text(&o.stderr));

    // The new sink appears with its counters, the removed pair goes.
    let after = wait_for(LIMIT, "snkc counting in /api/state", || {
        let st = state(addr);
        (node(&st, "snkc")?["in"].as_u64()? > 0).then_some(st)
    });
    assert!(node(&after, "srcc").is_some(), "{after}");
    assert!(
        node(&after, "snkb").is_none() && node(&after, "srcb").is_none(),
        "{after}"
    );
    let mut e = edges(&after);
    e.sort();
    assert_eq!(e, ["src -> snk", "srcc -> snkc"], "{after}");
    assert!(
        after["structure"].as_u64().unwrap() > structure,
        "the structure number did not change: {after}"
    );
    // The history keeps no removed node.
    let hist = after["history"]["nodes"].as_object().unwrap();
    assert!(
        !hist.contains_key("snkb") && hist.contains_key("snkc"),
        "{after}"
    );
    // The untouched pair still counts.
    let snk = node(&after, "snk").unwrap()["in"].as_u64().unwrap();
    assert!(snk > 0, "{after}");

    let (code, metrics) = get(addr, "/metrics");
    assert_eq!(code, 200);
    assert!(metrics.contains("node=\"snkc\""), "{metrics}");
    assert!(!metrics.contains("node=\"snkb\""), "{metrics}");
    drop(sup);
}
