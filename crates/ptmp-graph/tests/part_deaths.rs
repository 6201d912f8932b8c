//! How a graph ends when a part dies in a way restarts cannot mend,
//! through the library alone with real part processes (this binary is the
//! part command; see `common/mod.rs`). A part killed once and restarted is
//! `supervise.rs`'s; these are the deaths the supervisor must not answer
//! with restarts for ever:
//!
//! * A part that keeps dying (killed by SIGKILL at every start) is
//!   restarted `restart.max` times, then the supervisor gives up: the run
//!   ends by itself, not ok, its reason naming the process, how it died
//!   and how often it was restarted; the other part is stopped, the
//!   process is shown as failed, and no ring is left. Between the deaths
//!   its source counts on, so the sink's file holds no number twice.
//! * A part that exits with [`part::EXIT_CONFIG`] (its source's sets do not
//!   fit its ring's largest message, a configuration error) is not
//!   restarted at all, though restarts are allowed: the run ends at once,
//!   flagged as a configuration error, its reason naming the process and
//!   the exit status, and the part's last status names the node and what
//!   is wrong with it.

mod common;

use common::{part_log, rings_left, sets, unique, Supervisor, Sweep};
use ptmp_graph::part;
use ptmp_graph::status::{self, SupervisedState};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

fn main() {
    common::main(&[
        (
            "a_part_that_keeps_dying_uses_up_its_restarts_and_the_graph_says_so",
            a_part_that_keeps_dying_uses_up_its_restarts_and_the_graph_says_so,
        ),
        (
            "a_part_failing_for_its_configuration_ends_the_graph_naming_it",
            a_part_failing_for_its_configuration_ends_the_graph_naming_it,
        ),
    ]);
}

/// The state the supervisor last published for `process`.
fn state(run_dir: &Path, process: &str) -> Option<SupervisedState> {
    Some(status::read_processes(run_dir)?.process(process)?.state)
}

fn a_part_that_keeps_dying_uses_up_its_restarts_and_the_graph_says_so(dir: &Path) {
    let name = unique("doom");
    let _sweep = Sweep(name.clone());
    let out = dir.join("out.dump");
    let run_dir = dir.join("run");
    let g = json!({
        "name": name,
        "nodes": [
            {"name": "src", "type": "source", "data": {"rate": 2000, "tps": 1, "detid": 3}},
            {"name": "snk", "type": "sink", "data": {"ofile": out}}
        ],
        "edges": [{"from": "src.out", "to": "snk.in", "pattern": "pushpull"}],
        "processes": [
            {"name": "doomed", "nodes": ["src"]},
            {"name": "back", "nodes": ["snk"]}
        ],
        "restart": {"max": 2, "backoff_ms": 100}
    });
    let t0 = Instant::now();
    let sup = Supervisor::start(&g, &run_dir, common::options(Duration::from_secs(10)));
    // Three starts of 0.4 s each and two backoffs: it ends by itself, long
    // before this.
    let (o, log) = sup.ended(Duration::from_secs(15));
    let took = t0.elapsed();
    assert!(!o.ok, "{o:?}\n{log}");
    assert!(!o.config_error, "{o:?}\n{log}");
    assert!(
        o.reason.starts_with("process doomed (pid ")
            && o.reason
                .ends_with("killed by SIGKILL; restarted 2 times already, giving up"),
        "{o:?}\n{log}"
    );
    let mut restarts = o.restarts.clone();
    restarts.sort();
    assert_eq!(
        restarts,
        [("back".to_string(), 0), ("doomed".to_string(), 2)],
        "{log}"
    );
    // Started once and restarted twice, each restart said with its bound;
    // no third.
    assert_eq!(
        log.matches("process doomed started (pid").count(),
        1,
        "{log}"
    );
    assert_eq!(
        log.matches("process doomed restarted (pid").count(),
        2,
        "{log}"
    );
    for k in 1..=2 {
        let said = format!("killed by SIGKILL; restarting ({k} of at most 2)");
        assert!(log.contains(&said), "no {said:?} in\n{log}");
    }
    assert!(!log.contains("(3 of at most 2)"), "{log}");
    assert!(
        log.contains(&format!("graph {name}: stopping: {}", o.reason)),
        "{log}"
    );
    // What the views read: the process failed, the other one was stopped.
    assert_eq!(
        state(&run_dir, "doomed"),
        Some(SupervisedState::Failed),
        "{log}"
    );
    assert_eq!(
        state(&run_dir, "back"),
        Some(SupervisedState::Stopped),
        "{log}"
    );
    // Each start ran: sets arrived, the restarted source counting on from
    // where its last status said it was, the sink dropping repeats.
    let got = sets(&out);
    assert!(got.len() > 300, "{} sets\n{log}", got.len());
    assert!(
        common::increasing(&got),
        "a set twice or out of order\n{log}"
    );
    assert_eq!(rings_left(&name), Vec::<String>::new(), "{log}");
    eprintln!(
        "  gave up after {took:.1?}; the sink holds {} sets",
        got.len()
    );
}

fn a_part_failing_for_its_configuration_ends_the_graph_naming_it(dir: &Path) {
    let name = unique("cfg");
    let _sweep = Sweep(name.clone());
    let run_dir = dir.join("run");
    // A set of 100 TPs does not fit a ring whose largest message is 64
    // bytes: every start would fail the same way.
    let g = json!({
        "name": name,
        "nodes": [
            {"name": "src", "type": "source", "data": {"rate": 100, "tps": 100, "detid": 1}},
            {"name": "snk", "type": "sink"}
        ],
        "edges": [{"from": "src.out", "to": "snk.in", "pattern": "pushpull",
                   "shm_max_message": 64}],
        "processes": [
            {"name": "front", "nodes": ["src"]},
            {"name": "back", "nodes": ["snk"]}
        ],
        "restart": {"max": 5, "backoff_ms": 10}
    });
    let t0 = Instant::now();
    let sup = Supervisor::start(&g, &run_dir, common::options(Duration::from_secs(10)));
    let (o, log) = sup.ended(Duration::from_secs(15));
    let took = t0.elapsed();
    assert!(!o.ok, "{o:?}\n{log}");
    assert!(o.config_error, "{o:?}\n{log}");
    let exit = format!("exit status {}", part::EXIT_CONFIG);
    for what in [
        "process front (pid ",
        exit.as_str(),
        "a configuration error",
        "not restarted",
    ] {
        assert!(
            o.reason.contains(what),
            "no {what:?} in {:?}\n{log}",
            o.reason
        );
    }
    assert!(o.restarts.iter().all(|(_, n)| *n == 0), "{o:?}\n{log}");
    assert!(!log.contains("restarting"), "{log}");
    assert_eq!(
        state(&run_dir, "front"),
        Some(SupervisedState::Failed),
        "{log}"
    );
    assert_eq!(
        state(&run_dir, "back"),
        Some(SupervisedState::Stopped),
        "{log}"
    );
    // Why, in the part's last status: the node and what is wrong with it.
    let front = status::read_all(&run_dir)
        .into_iter()
        .find(|s| s.process == "front")
        .expect("front's last status");
    assert!(front.ended, "{front:?}");
    let err = front
        .reports
        .iter()
        .flatten()
        .find(|r| r.name == "src")
        .and_then(|r| r.error.clone())
        .unwrap_or_else(|| panic!("no error reported for src: {front:?}\n{log}"));
    assert!(err.contains("exceeds the channel's maximum of 64"), "{err}");
    // ... and said once in the part's log: it was started once.
    let plog = part_log(&name, "front");
    assert_eq!(
        plog.matches("exceeds the channel's maximum of 64").count(),
        1,
        "{plog}"
    );
    assert_eq!(rings_left(&name), Vec::<String>::new(), "{log}");
    // Ended at once, not after rounds of restarts.
    assert!(took < Duration::from_secs(10), "took {took:?}\n{log}");
    eprintln!("  ended after {took:.1?}: {}", o.reason);
}
