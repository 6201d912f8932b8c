//! Changes applied to a running graph through the library's reconfig API
//! ([`reconfig::send`] to a supervisor running [`supervise::run`]), with
//! real part processes (this binary is the part command; see
//! `common/mod.rs`):
//!
//! * A node's parameter changed (the source's `detid`) takes effect: the
//!   answer is the diff (the node replaced, its process restarted, the
//!   other kept), the sink's file turns from the old `detid` to the new
//!   one once and for good, the replaced source counts on (no number
//!   twice), and the sink's process is never touched.
//! * An edge added (a new source and sink on a new edge, each in a new
//!   process) takes effect: the answer says what starts and what is kept,
//!   the new sink gets the new source's sets from 0, in order, and the
//!   running processes keep their pids.
//! * Refused changes (an unknown node type, an edge to a port that does
//!   not exist, a new name, the running graph itself) are answered with a
//!   refusal whose message names what is wrong; a dry run describes a
//!   change without making it; an apply with no supervisor is an error
//!   naming the run directory. Through all of them the graph runs on:
//!   the same pids, sets still arriving, all with the old `detid`.

mod common;

use common::{increasing, rings_left, sets, unique, Supervisor, Sweep};
use ptmp_graph::reconfig::{self, Refusal, Reply, Request};
use ptmp_graph::supervise;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

fn main() {
    common::main(&[
        (
            "a_changed_parameter_and_an_added_edge_take_effect",
            a_changed_parameter_and_an_added_edge_take_effect,
        ),
        (
            "a_refused_change_names_what_is_wrong_and_the_graph_runs_on",
            a_refused_change_names_what_is_wrong_and_the_graph_runs_on,
        ),
    ]);
}

/// An endless source (`detid` 3) feeding a sink that writes `out`, each
/// in a process of its own.
fn pair(name: &str, out: &Path) -> Value {
    json!({
        "name": name,
        "nodes": [
            {"name": "src", "type": "source", "data": {"rate": 1000, "tps": 1, "detid": 3}},
            {"name": "snk", "type": "sink", "data": {"ofile": out}}
        ],
        "edges": [{"from": "src.out", "to": "snk.in", "pattern": "pushpull"}],
        "processes": [
            {"name": "front", "nodes": ["src"]},
            {"name": "back", "nodes": ["snk"]}
        ]
    })
}

/// Ask the supervisor running from `run_dir` to change to `graph`.
fn apply(run_dir: &Path, graph: &Value, dry_run: bool) -> ptmp_graph::Result<Reply> {
    let req = Request {
        id: reconfig::new_id(),
        graph: graph.clone(),
        default_name: "g".into(),
        dry_run,
    };
    reconfig::send(run_dir, &req, common::LIMIT)
}

/// Wait until the file `out` holds `n` sets more than it did.
fn more_sets(sup: &Supervisor, out: &Path, n: usize) {
    let before = sets(out).len();
    sup.wait_for(&format!("{n} more sets in {}", out.display()), || {
        (sets(out).len() >= before + n).then_some(())
    });
}

fn options() -> supervise::Options {
    common::options(Duration::from_secs(10))
}

fn a_changed_parameter_and_an_added_edge_take_effect(dir: &Path) {
    let name = unique("apl");
    let _sweep = Sweep(name.clone());
    let (out, out2) = (dir.join("out.dump"), dir.join("out2.dump"));
    let run_dir = dir.join("run");
    let g1 = pair(&name, &out);
    let sup = Supervisor::start(&g1, &run_dir, options());
    more_sets(&sup, &out, 200);
    let (front, back) = (sup.pid("front"), sup.pid("back"));

    // A parameter: the source's detid.
    let mut g2 = g1.clone();
    g2["nodes"][0]["data"]["detid"] = json!(7);
    let t = Instant::now();
    let r = apply(&run_dir, &g2, false).unwrap();
    let took = t.elapsed();
    let log = sup.log();
    assert_eq!(r.refused, None, "{}\n{log}", r.message);
    for line in [
        "~ replaced src (detid 3 -> 7)",
        "~ restart  front",
        "= keep     back",
        "processes: 0 started, 0 stopped, 1 restarted, 1 kept",
    ] {
        assert!(r.message.contains(line), "no {line:?} in\n{}", r.message);
    }
    assert!(
        log.contains(&format!("graph {name}: change applied")),
        "{log}"
    );
    let front2 = sup.wait_for("the new source", || {
        Some(sup.pid("front")).filter(|&p| p != front)
    });
    sup.wait_for("sets of the new detid", || {
        (sets(&out).iter().filter(|s| s.1 == 7).count() >= 200).then_some(())
    });
    assert_eq!(sup.pid("back"), back, "the sink's process was touched");
    let got = sets(&out);
    let first7 = got.iter().position(|s| s.1 == 7).unwrap();
    assert!(first7 > 0, "no set of the old detid");
    assert!(
        got[..first7].iter().all(|s| s.1 == 3) && got[first7..].iter().all(|s| s.1 == 7),
        "the detid did not turn once: {:?}",
        got.iter().map(|s| s.1).collect::<Vec<_>>()
    );
    assert!(
        increasing(&got),
        "a set twice or out of order\n{}",
        sup.log()
    );
    eprintln!("  the parameter change took {took:.1?}");

    // An edge added: a second source and sink, each a new process.
    let mut g3 = g2.clone();
    g3["nodes"].as_array_mut().unwrap().extend([
        json!({"name": "src2", "type": "source", "data": {"rate": 1000, "detid": 9}}),
        json!({"name": "snk2", "type": "sink", "data": {"ofile": out2}}),
    ]);
    g3["edges"]
        .as_array_mut()
        .unwrap()
        .push(json!({"from": "src2.out", "to": "snk2.in", "pattern": "pushpull"}));
    g3["processes"].as_array_mut().unwrap().extend([
        json!({"name": "front2", "nodes": ["src2"]}),
        json!({"name": "back2", "nodes": ["snk2"]}),
    ]);
    let r = apply(&run_dir, &g3, false).unwrap();
    assert_eq!(r.refused, None, "{}\n{}", r.message, sup.log());
    for line in [
        "+ added    src2.out -> snk2.in",
        "= kept     src.out -> snk.in",
        "+ start    front2",
        "+ start    back2",
        "= keep     front",
        "= keep     back",
        "processes: 2 started, 0 stopped, 0 restarted, 2 kept",
    ] {
        assert!(r.message.contains(line), "no {line:?} in\n{}", r.message);
    }
    more_sets(&sup, &out2, 200);
    more_sets(&sup, &out, 200);
    assert_eq!((sup.pid("front"), sup.pid("back")), (front2, back));
    let (o, log) = sup.stop();
    assert!(o.ok, "{o:?}\n{log}");
    assert_eq!(o.reason, "interrupted", "{log}");
    let added = sets(&out2);
    assert!(
        added.iter().map(|s| s.0).eq(0..added.len() as u64),
        "the new sink's sets are not 0, 1, 2, ...\n{log}"
    );
    assert!(added.iter().all(|s| s.1 == 9), "{log}");
    assert!(increasing(&sets(&out)), "{log}");
    assert_eq!(rings_left(&name), Vec::<String>::new(), "{log}");
}

/// Send `graph`; it must be refused with `why`, the message containing
/// every one of `words`.
#[track_caller]
fn refused(run_dir: &Path, graph: &Value, why: Refusal, words: &[&str]) {
    let r = apply(run_dir, graph, false).unwrap();
    assert_eq!(r.refused, Some(why), "{}", r.message);
    for w in words {
        assert!(r.message.contains(w), "no {w:?} in {:?}", r.message);
    }
}

fn a_refused_change_names_what_is_wrong_and_the_graph_runs_on(dir: &Path) {
    let name = unique("ref");
    let _sweep = Sweep(name.clone());
    let out = dir.join("out.dump");
    let run_dir = dir.join("run");
    let g1 = pair(&name, &out);
    // No supervisor yet: an error naming the run directory.
    let e = apply(&run_dir, &g1, false).unwrap_err().to_string();
    assert!(
        e.contains(&format!("no graph is running from {}", run_dir.display())),
        "{e}"
    );
    let sup = Supervisor::start(&g1, &run_dir, options());
    more_sets(&sup, &out, 200);
    let pids = (sup.pid("front"), sup.pid("back"));

    let mut bad = g1.clone();
    bad["nodes"][0]["type"] = json!("sorce");
    refused(
        &run_dir,
        &bad,
        Refusal::Invalid,
        &["type = \"sorce\": unknown node type"],
    );
    let mut bad = g1.clone();
    bad["edges"][0]["to"] = json!("snk.nope");
    refused(
        &run_dir,
        &bad,
        Refusal::Invalid,
        &["edges[0].to: node snk: no port \"nope\""],
    );
    let mut bad = g1.clone();
    bad["name"] = json!(format!("{name}x"));
    refused(
        &run_dir,
        &bad,
        Refusal::Invalid,
        &[
            &format!("the running graph is called {name}"),
            "cannot be renamed",
        ],
    );
    refused(&run_dir, &g1, Refusal::NothingToDo, &["nothing to do"]);
    // A dry run describes a change and makes none.
    let mut g2 = g1.clone();
    g2["nodes"][0]["data"]["detid"] = json!(7);
    let r = apply(&run_dir, &g2, true).unwrap();
    assert_eq!(r.refused, None, "{}", r.message);
    assert!(r.message.contains("~ restart  front"), "{}", r.message);

    // The graph runs on as it was.
    more_sets(&sup, &out, 200);
    assert_eq!((sup.pid("front"), sup.pid("back")), pids, "{}", sup.log());
    let (o, log) = sup.stop();
    assert!(o.ok, "{o:?}\n{log}");
    assert!(!log.contains("change applied"), "{log}");
    assert_eq!(log.matches("applying a new version").count(), 0, "{log}");
    let got = sets(&out);
    assert!(got.iter().all(|s| s.1 == 3), "a refused change was made");
    assert!(
        got.iter().map(|s| s.0).eq(0..got.len() as u64),
        "sets lost or repeated\n{log}"
    );
    assert_eq!(rings_left(&name), Vec::<String>::new(), "{log}");
}
