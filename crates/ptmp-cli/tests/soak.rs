//! `ptmp graph soak` with real processes: a short soak under SIGKILL and
//! SIGSTOP keeps its accounts (sent = received once + lost, lost within
//! what the killed processes could hold, nothing twice), agrees with the
//! sink's own dump, and a soak that could inject nothing is not a pass.

use ptmp_data::{decode_tpset, Frames};
use ptmp_formats::dump::DumpReader;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{finish, text, write_graph, PTMP};

fn soak(graph: &Path, run_dir: &Path, extra: &[&str]) -> Output {
    let c = Command::new(PTMP)
        .args(["graph", "soak", graph.to_str().unwrap(), "--run-dir"])
        .arg(run_dir)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish(c, Duration::from_secs(60))
}

/// source -> worker -> sink, every edge pushpull over ipc.
fn chain(out: &Path) -> Value {
    // A name of its own per test (from its temporary directory): the
    // tests run at once, and one graph runs once per host.
    let tag: String = out
        .parent()
        .and_then(Path::file_name)
        .map(|n| {
            n.to_string_lossy()
                .replace(|c: char| !c.is_ascii_alphanumeric(), "")
        })
        .unwrap_or_default();
    json!({
        "name": format!("soak-test-{tag}"),
        "nodes": [
            {"name": "src", "type": "source", "data": {"rate": 2000}},
            {"name": "w", "type": "worker"},
            {"name": "snk", "type": "sink", "data": {"ofile": out.to_str().unwrap()}}
        ],
        "edges": [
            {"from": "src.out", "to": "w.in", "pattern": "pushpull", "transport": "ipc"},
            {"from": "w.out", "to": "snk.in", "pattern": "pushpull", "transport": "ipc"}
        ],
        "restart": {"max": 2, "backoff_ms": 100}
    })
}

/// Eight seconds of faults every ~700 ms: the worker is killed and
/// restarted, any process is stopped and continued. On this all-ipc
/// PUSH/PULL chain nothing arrives twice and what is lost fits in what the
/// killed worker could hold; the report's figures agree with each other and
/// with the sink's dump read here.
#[test]
fn soak_with_kills_and_stops_keeps_its_accounts() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("received.dump");
    let f = write_graph(d.path(), &chain(&out));
    let rd = d.path().join("run");
    let t0 = Instant::now();
    let o = soak(
        &f,
        &rd,
        &[
            "--seconds",
            "8",
            "--every-ms",
            "700",
            "--stop-ms",
            "250",
            "--kill-only",
            "w",
            "--start",
            "7",
            "--json",
        ],
    );
    let (so, se) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{so}\n{se}");
    // The graph stopped within a bound after the faults: no hang.
    assert!(t0.elapsed() < Duration::from_secs(40), "{se}");
    let r: Value = serde_json::from_str(so.lines().last().unwrap()).unwrap();
    let n = |v: &Value| v.as_u64().unwrap();
    let kills = n(&r["faults"]["kills"]);
    let stops = n(&r["faults"]["stops"]);
    assert!(kills > 0 && stops > 0, "{so}");
    // Only the worker is killed; restart.max was raised to cover the kills.
    assert_eq!(n(&r["faults"]["per_process"]["w"]["kills"]), kills, "{so}");
    assert!(n(&r["restarts"]["w"]) >= kills, "{so}");
    assert_eq!(
        se.matches("killed by SIGKILL; restarting").count() as u64,
        kills,
        "{se}"
    );
    assert!(se.contains("restart.max raised from 2"), "{se}");
    let e = &r["end_to_end"];
    let (sent, recv, once, dup, lost, bound) = (
        n(&e["sent"]),
        n(&e["received"]),
        n(&e["received_unique"]),
        n(&e["duplicated"]),
        n(&e["lost"]),
        n(&e["bound"]),
    );
    assert!(sent > 1000, "{so}");
    assert_eq!(sent, once + lost, "{so}");
    assert_eq!(dup, 0, "{so}");
    assert_eq!(recv, once, "{so}");
    assert!(lost <= bound, "{so}");
    assert!(bound > 0, "kills add to the bound: {so}");
    assert_eq!(r["ok"], true, "{so}");
    assert!(so.contains("soak passed"), "{so}");
    // The sink's dump, read independently: as many sets as the report
    // says were received, each number once, and the highest below sent.
    let mut rd = DumpReader::new(std::io::BufReader::new(std::fs::File::open(&out).unwrap()));
    let mut fr = Frames::new();
    let mut seen = std::collections::HashSet::new();
    while rd.read_into(&mut fr).unwrap() {
        let s = decode_tpset(fr.get(1).unwrap()).unwrap();
        assert!(seen.insert(s.count), "set {} twice", s.count);
        assert!((s.count as u64) < sent);
    }
    assert_eq!(seen.len() as u64, recv);
    // The source was never killed: its final report's count is the sent.
    assert!(so.contains(&format!("sent={sent}")), "{so}");
}

/// An unknown fault name is a usage error naming it, as is a process the
/// graph lacks; a soak whose faults all had no candidate (only kills, and
/// the only process named holds the sink, which is never killed) is not
/// reported as a pass.
#[test]
fn soak_that_injects_nothing_is_not_a_pass() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("received.dump");
    let f = write_graph(d.path(), &chain(&out));
    let rd = d.path().join("run");
    let o = soak(&f, &rd, &["--faults", "kill,explode", "--seconds", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("unknown fault \"explode\""),
        "{}",
        text(&o.stderr)
    );
    let o = soak(&f, &rd, &["--kill-only", "nope", "--seconds", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("no process \"nope\""),
        "{}",
        text(&o.stderr)
    );
    assert!(
        !rd.join("status").exists(),
        "nothing may start for bad arguments"
    );
    let o = soak(
        &f,
        &rd,
        &[
            "--faults",
            "kill",
            "--kill-only",
            "snk",
            "--seconds",
            "2",
            "--every-ms",
            "200",
            "--json",
        ],
    );
    let so = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{so}\n{}", text(&o.stderr));
    let r: Value = serde_json::from_str(so.lines().last().unwrap()).unwrap();
    assert_eq!(r["faults"]["kills"], 0, "{so}");
    assert!(r["faults"]["skipped"].as_u64().unwrap() > 0, "{so}");
    assert_eq!(r["ok"], false, "{so}");
    assert!(
        text(&o.stderr).contains("no fault was injected: nothing was tested"),
        "{}",
        text(&o.stderr)
    );
}

/// SIGINT while a process is held stopped for a long time: the soak
/// continues it, stops the graph cleanly and soon, and reports the run as
/// interrupted, not passed.
#[test]
fn interrupted_soak_continues_stopped_processes_and_is_not_a_pass() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("received.dump");
    let f = write_graph(d.path(), &chain(&out));
    let rd = d.path().join("run");
    let err = d.path().join("stderr");
    let c = Command::new(PTMP)
        .args(["graph", "soak", f.to_str().unwrap(), "--run-dir"])
        .arg(&rd)
        .args(["--seconds", "60", "--every-ms", "300", "--faults", "stop"])
        .args(["--stop-ms", "60000", "--json"])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let stopped = loop {
        let s = std::fs::read_to_string(&err).unwrap_or_default();
        if let Some(l) = s.lines().find(|l| l.contains("SIGSTOP to process")) {
            let pid: i32 = l
                .split("(pid ")
                .nth(1)
                .unwrap()
                .split(')')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            break pid;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "no fault: {s}");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(200));
    let state = std::fs::read_to_string(format!("/proc/{stopped}/stat")).unwrap();
    assert!(state.contains(") T "), "held stopped: {state}");
    let t1 = Instant::now();
    // SAFETY: our child, still running.
    unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
    let o = finish(c, Duration::from_secs(30));
    assert!(t1.elapsed() < Duration::from_secs(20));
    let e = std::fs::read_to_string(&err).unwrap();
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("soak failed: interrupted after"), "{e}");
    // Every part, the stopped one too, stopped cleanly.
    assert!(e.contains("stopping: interrupted"), "{e}");
    assert!(!e.contains("did not stop"), "{e}");
    let so = text(&o.stdout);
    let r: Value = serde_json::from_str(so.lines().last().unwrap()).unwrap();
    assert_eq!(r["supervisor"]["ok"], true, "{so}");
    assert_eq!(r["ok"], false, "{so}");
}
