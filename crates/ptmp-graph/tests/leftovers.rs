//! What a run finds in its run directory when it starts, as the library
//! deals with it (`supervise/leftovers.rs`), with real processes: the
//! first supervisor is this binary run as `supervise` (see
//! `common/mod.rs`), so the test can kill it with SIGKILL.
//!
//! * After a supervisor killed with SIGKILL (its lock file and rings left
//!   behind, a part that ignores SIGTERM still running, an apply request
//!   it never took), the next run from the same directory says the
//!   earlier supervisor died, waits for the live part and then kills it,
//!   saying so, removes the rings (saying how many), drops the stale
//!   request unmade, and continues the run: its source counts on from
//!   where the dead run's stopped and its sink appends to the same file,
//!   so the file holds every number once, in order, none missing at the
//!   handover. It ends cleanly, leaving no lock file and no ring.
//! * After a clean end, the next run starts anew (its source counts from
//!   0) and reports nothing left over.

mod common;

use common::{alive, increasing, rings_left, sets, unique, wait_for, Owned, Supervisor, Sweep};
use ptmp_graph::reconfig::Request;
use ptmp_graph::{rundir, status, supervise};
use rustix::process::Signal;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn main() {
    common::main(&[
        (
            "a_run_after_a_killed_supervisor_clears_what_it_left_and_continues",
            a_run_after_a_killed_supervisor_clears_what_it_left_and_continues,
        ),
        (
            "a_run_after_a_clean_end_starts_anew",
            a_run_after_a_clean_end_starts_anew,
        ),
    ]);
}

/// A source (`detid` 4; `count` sets, or endless) feeding a sink that
/// writes `out` (ending after `sink_count` sets, or not), in processes
/// `front` and `sink`.
fn pair(name: &str, sink: &str, out: &Path, count: Option<u64>, sink_count: Option<u64>) -> Value {
    let mut g = json!({
        "name": name,
        "nodes": [
            {"name": "src", "type": "source", "data": {"rate": 2000, "tps": 1, "detid": 4}},
            {"name": "snk", "type": "sink", "data": {"ofile": out}}
        ],
        "edges": [{"from": "src.out", "to": "snk.in", "pattern": "pushpull"}],
        "processes": [
            {"name": "front", "nodes": ["src"]},
            {"name": sink, "nodes": ["snk"]}
        ]
    });
    if let Some(n) = count {
        g["nodes"][0]["data"]["count"] = json!(n);
    }
    if let Some(n) = sink_count {
        g["nodes"][1]["data"]["count"] = json!(n);
    }
    g
}

/// `process`'s part's last status.
fn last_status(run_dir: &Path, process: &str) -> Option<status::ProcessStatus> {
    status::read_all(run_dir)
        .into_iter()
        .find(|s| s.process == process)
}

/// Run graph `g` (its sink's process `stubborn`, which ignores SIGTERM)
/// from `run_dir` under a supervisor of its own process until the sink's
/// file `out` holds 500 sets, then kill the supervisor with SIGKILL. Its
/// death sends its parts SIGTERM: the source's part ends, the sink's runs
/// on. Gives the supervisor's pid, the sink part's pid and the part itself
/// (killed when dropped), once the sink's file holds every set the source
/// sent.
fn run_and_kill(dir: &Path, g: &Value, run_dir: &Path, out: &Path) -> (i32, i32, Owned) {
    let file = dir.join("g1.json");
    std::fs::write(&file, serde_json::to_vec(g).unwrap()).unwrap();
    let err = dir.join("sup1.err");
    let c = Command::new(std::env::current_exe().unwrap())
        .arg("supervise")
        .arg(&file)
        .arg(run_dir)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let sup_pid = c.id() as i32;
    let mut sup = Owned::Child(c);
    let said = || std::fs::read_to_string(&err).unwrap_or_default();
    wait_for("500 sets from the first run", || {
        (sets(out).len() >= 500).then_some(())
    });
    let pid = |p: &str| last_status(run_dir, p).expect("a part's status").pid as i32;
    let (front, sink) = (pid("front"), pid("stubborn"));
    let sink_part = Owned::Part(sink);
    supervise::send_signal(sup_pid, Signal::KILL);
    if let Owned::Child(c) = &mut sup {
        let st = c.wait().unwrap();
        assert_eq!(st.code(), None, "the supervisor was not killed\n{}", said());
    }
    wait_for("the source's part to end", || (!alive(front)).then_some(()));
    // Its last word: how many it sent. The sink, idle, flushes them all.
    let sent = wait_for("the source's last status", || {
        let s = last_status(run_dir, "front").filter(|s| s.ended)?;
        Some(s.node("src")?.sent)
    });
    wait_for("the sink to hold every set sent", || {
        (sets(out).last().map(|s| s.0 + 1) == Some(sent)).then_some(())
    });
    assert!(alive(sink), "the sink's part is gone\n{}", said());
    (sup_pid, sink, sink_part)
}

fn a_run_after_a_killed_supervisor_clears_what_it_left_and_continues(dir: &Path) {
    let name = unique("lft");
    let _sweep = Sweep(name.clone());
    let out = dir.join("out.dump");
    let run_dir = dir.join("run");
    let g = |sink_count| pair(&name, "stubborn", &out, None, sink_count);
    let (sup_pid, sink, sink_part) = run_and_kill(dir, &g(None), &run_dir, &out);
    assert!(
        rundir::lock_path(&run_dir).exists(),
        "the kill left the lock"
    );
    let rings = rings_left(&name);
    assert!(!rings.is_empty(), "the kill left no ring");
    let first = sets(&out);
    let last = first.last().unwrap().0;
    // An apply asked of the dead run, never taken.
    let mut changed = g(None);
    changed["nodes"][0]["data"]["detid"] = json!(8);
    let req = Request {
        id: "stale-1".into(),
        graph: changed,
        default_name: "g".into(),
        dry_run: false,
    };
    let request = rundir::request_file(&run_dir);
    std::fs::write(&request, serde_json::to_vec(&req).unwrap()).unwrap();

    // The next run: its sink ends after 300 sets of its own.
    let n = 300;
    let sup = Supervisor::start(
        &g(Some(n)),
        &run_dir,
        common::options(Duration::from_secs(2)),
    );
    let (o, log) = sup.ended(common::LIMIT);
    drop(sink_part);
    assert!(o.ok, "{o:?}\n{log}");
    assert_eq!(o.reason, "finished", "{log}");
    for said in [
        format!(
            "graph {name}: supervisor pid {sup_pid} of an earlier run from {} died without cleaning up",
            run_dir.display()
        ),
        format!(
            "graph {name}: parts of an earlier run still alive (pids {sink}); waiting for them to end"
        ),
        format!("graph {name}: part pid {sink} did not end; killed it"),
        format!(
            "graph {name}: removed {} shm ring(s) and ipc socket file(s) left from an earlier run",
            rings.len()
        ),
    ] {
        assert!(log.contains(&said), "no {said:?} in\n{log}");
    }
    assert!(!alive(sink), "the earlier run's part still runs");
    assert!(!request.exists(), "the stale request is still there");
    assert!(
        !log.contains("applying"),
        "the stale request was made\n{log}"
    );
    // The run continued the dead one's: the sink appended, the source
    // counted on, nothing twice, nothing missing at the handover.
    let all = sets(&out);
    assert_eq!(
        all[..first.len()],
        first[..],
        "the first run's sets changed"
    );
    let new = &all[first.len()..];
    assert_eq!(new.len() as u64, n, "{log}");
    assert!(
        new.iter().map(|s| s.0).eq(last + 1..last + 1 + n),
        "after {last}, the new run's sink got {:?}...\n{log}",
        &new[..new.len().min(5)]
    );
    assert!(increasing(&all), "{log}");
    assert!(all.iter().all(|s| s.1 == 4), "{log}");
    // A clean end leaves nothing.
    assert!(!rundir::lock_path(&run_dir).exists(), "{log}");
    assert_eq!(rings_left(&name), Vec::<String>::new(), "{log}");
}

fn a_run_after_a_clean_end_starts_anew(dir: &Path) {
    let name = unique("cln");
    let _sweep = Sweep(name.clone());
    let run_dir = dir.join("run");
    let n = 200;
    for (k, out) in ["a.dump", "b.dump"].iter().enumerate() {
        let out = dir.join(out);
        let sup = Supervisor::start(
            &pair(&name, "back", &out, Some(n), Some(n)),
            &run_dir,
            common::options(Duration::from_secs(10)),
        );
        let (o, log) = sup.ended(common::LIMIT);
        assert!(o.ok, "run {k}: {o:?}\n{log}");
        assert_eq!(o.reason, "finished", "run {k}: {log}");
        assert!(!log.contains("earlier run"), "run {k}: {log}");
        let got: Vec<u64> = sets(&out).iter().map(|s| s.0).collect();
        assert_eq!(got, (0..n).collect::<Vec<_>>(), "run {k}: {log}");
        assert!(!rundir::lock_path(&run_dir).exists(), "run {k}: {log}");
        assert_eq!(rings_left(&name), Vec::<String>::new(), "run {k}: {log}");
    }
}
