//! A graph sink's dump file across restarts, with real processes: a sink
//! killed with SIGKILL and restarted by the supervisor, and a sink
//! restarted by `ptmp graph apply`, keep every set they wrote before and
//! go on after it; the printed apply plan says why a node whose own data
//! did not change is restarted.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

mod common;
use common::{finish, node_in, read_dump, status, text, wait_for, write_json, PTMP};

const LIMIT: Duration = Duration::from_secs(60);

/// A running supervisor, stopped (then killed) if a test fails while it
/// runs, so no graph outlives its test.
struct Sup(Option<Child>);

impl Sup {
    fn start(file: &Path, run_dir: &Path, log: &Path) -> Sup {
        let c = Command::new(PTMP)
            .args(["graph", "run"])
            .arg(file)
            .arg("--run-dir")
            .arg(run_dir)
            .stdout(std::fs::File::create(log.with_extension("out")).unwrap())
            .stderr(std::fs::File::create(log.with_extension("err")).unwrap())
            .spawn()
            .unwrap();
        Sup(Some(c))
    }
    fn finish(mut self) -> Output {
        finish(self.0.take().unwrap(), LIMIT)
    }
}

impl Drop for Sup {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            // SAFETY: kill only sends a signal to the supervisor this test
            // started and has not reaped; it touches no memory.
            unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
            let t = std::time::Instant::now();
            while c.try_wait().ok().flatten().is_none() && t.elapsed() < LIMIT {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn logs(log: &Path) -> String {
    let r = |x: &str| std::fs::read_to_string(log.with_extension(x)).unwrap_or_default();
    format!("stdout:\n{}\nstderr:\n{}", r("out"), r("err"))
}

fn pid(run_dir: &Path, process: &str) -> i64 {
    wait_for(LIMIT, &format!("{process}'s status"), || {
        status(run_dir, process)?["pid"].as_i64()
    })
}

/// The counts of the whole records of a dump file, in order (a file being
/// written may end in a torn record: it is left out).
fn counts_so_far(dump: &Path) -> Vec<u64> {
    let Ok(f) = std::fs::File::open(dump) else {
        return vec![];
    };
    let mut r = ptmp_formats::dump::DumpReader::new(std::io::BufReader::new(f));
    let mut f = ptmp_data::Frames::new();
    let mut out = vec![];
    while r.read_into(&mut f).unwrap_or(false) {
        out.push(ptmp_data::decode_tpset(f.get(1).unwrap()).unwrap().count as u64);
    }
    out
}

fn counts(dump: &Path) -> Vec<u64> {
    read_dump(dump).iter().map(|s| s.count as u64).collect()
}

/// Every number below `n` is in `got`, and `before` is where `got` starts.
fn keeps(before: &[u64], got: &[u64], n: u64, l: &str) {
    assert!(
        got.len() >= before.len() && got[..before.len()] == *before,
        "the {} sets written before the restart are not the file's first ({} now)\n{l}",
        before.len(),
        got.len()
    );
    let mut all = got.to_vec();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all, (0..n).collect::<Vec<_>>(), "{l}");
}

fn write(dir: &Path, file: &str, v: &Value) -> PathBuf {
    write_json(dir, file, v)
}

#[test]
fn a_sink_killed_and_restarted_keeps_what_it_wrote() {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    let out = d.path().join("out.dump");
    let log = d.path().join("run.log");
    let n = 6000;
    let g = json!({
        "name": format!("sinkkill-{}", std::process::id()),
        "nodes": [
            {"name": "src", "type": "source", "data": {"count": n, "rate": 2000, "detid": 1}},
            {"name": "snk", "type": "sink", "data": {"ofile": out}}
        ],
        "edges": [{"from": "src.out", "to": "snk.in", "pattern": "pushpull"}]
    });
    let f = write(d.path(), "g.json", &g);
    let sup = Sup::start(&f, &rd, &log);
    let first = pid(&rd, "snk");
    let before = wait_for(LIMIT, "sets in the sink's file", || {
        Some(counts_so_far(&out)).filter(|c| c.len() >= 1000)
    });
    // SAFETY: kill only sends a signal to the sink process this test's
    // supervisor started; it touches no memory.
    assert_eq!(unsafe { libc::kill(first as i32, libc::SIGKILL) }, 0);
    wait_for(LIMIT, "the restarted sink", || {
        Some(pid(&rd, "snk")).filter(|p| *p != first)
    });
    let o = sup.finish();
    let l = logs(&log);
    assert!(o.status.success(), "{l}");
    assert!(l.contains("process snk") && l.contains("restarting"), "{l}");
    keeps(&before, &counts(&out), n, &l);
    assert!(l.contains("appended after the"), "{l}");
}

#[test]
fn a_sink_restarted_by_an_apply_keeps_what_it_wrote_and_the_plan_says_why() {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    let (out, out_b) = (d.path().join("out.dump"), d.path().join("b.dump"));
    let log = d.path().join("run.log");
    let n = 8000;
    let name = format!("sinkapply-{}", std::process::id());
    // src (detid 0) -> w -> snk: the sink drops repeats (dedup), as the
    // only source numbers its sets.
    let g1 = json!({
        "name": name,
        "nodes": [
            {"name": "src", "type": "source", "data": {"count": n, "rate": 2000}},
            {"name": "w", "type": "worker", "data": {"work_us": 0}},
            {"name": "snk", "type": "sink", "data": {"ofile": out}}
        ],
        "edges": [
            {"from": "src.out", "to": "w.in", "pattern": "pushpull"},
            {"from": "w.out", "to": "snk.in", "pattern": "pushpull"}
        ]
    });
    // Change only the worker, and add a pair whose source also sends
    // detid 0: the runner no longer has the sink drop repeats.
    let mut g2 = g1.clone();
    g2["nodes"][1]["data"]["work_us"] = json!(20);
    g2["nodes"].as_array_mut().unwrap().extend([
        json!({"name": "srcb", "type": "source", "data": {"rate": 500}}),
        json!({"name": "snkb", "type": "sink", "data": {"ofile": out_b}}),
    ]);
    g2["edges"]
        .as_array_mut()
        .unwrap()
        .push(json!({"from": "srcb.out", "to": "snkb.in", "pattern": "pushpull"}));
    let f1 = write(d.path(), "g1.json", &g1);
    let f2 = write(d.path(), "g2.json", &g2);
    let sup = Sup::start(&f1, &rd, &log);
    wait_for(LIMIT, "traffic at the sink", || {
        node_in(&rd, "snk", "snk").filter(|n| *n >= 1000)
    });
    let snk = pid(&rd, "snk");
    let before = counts_so_far(&out);
    assert!(!before.is_empty());
    let c = Command::new(PTMP)
        .args(["graph", "apply"])
        .arg(&f2)
        .arg("--run-dir")
        .arg(&rd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = finish(c, LIMIT);
    let said = text(&o.stdout);
    assert!(o.status.success(), "{said}{}", text(&o.stderr));
    assert!(said.contains("~ restart  snk"), "{said}");
    wait_for(LIMIT, "the restarted sink", || {
        Some(pid(&rd, "snk")).filter(|p| *p != snk)
    });
    let o = sup.finish();
    let l = logs(&log);
    assert!(o.status.success(), "{l}");
    keeps(&before, &counts(&out), n, &l);
    // The sink's own data did not change: the plan names what did, and why.
    let line = said
        .lines()
        .find(|x| x.contains("replaced snk"))
        .unwrap_or_else(|| panic!("no line for snk in\n{said}"));
    assert!(
        line.contains("dedup true -> (none) set by the runner")
            && line.contains("src, srcb")
            && line.contains("detid 0"),
        "{said}"
    );
}

/// The supervisor and its parts killed at once (a crash of the host's
/// supervisor, as systemd then restarts it), then the graph run again on
/// the same run directory: the new run continues the dead one. Its source
/// goes on counting, its sink appends to the file (never empties it) and
/// drops the sets the file holds already that the source sends again (its
/// last status was up to a quarter second old): every number once, in
/// order, with what the file held first.
#[test]
fn a_run_after_its_supervisor_died_continues_the_recording() {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    let out = d.path().join("out.dump");
    let log = d.path().join("run.log");
    let n = 8000;
    let g = json!({
        "name": format!("supkill-{}", std::process::id()),
        "nodes": [
            {"name": "src", "type": "source", "data": {"count": n, "rate": 4000, "detid": 1}},
            {"name": "snk", "type": "sink", "data": {"ofile": out}}
        ],
        "edges": [{"from": "src.out", "to": "snk.in", "pattern": "pushpull"}]
    });
    let f = write(d.path(), "g.json", &g);
    let mut sup = Sup::start(&f, &rd, &log);
    let parts = [pid(&rd, "src"), pid(&rd, "snk")];
    wait_for(LIMIT, "sets in the sink's file", || {
        Some(counts_so_far(&out)).filter(|c| c.len() >= 2000)
    });
    let sup_pid = sup.0.as_ref().unwrap().id() as i32;
    // SAFETY: kill only sends signals to processes this test started (the
    // supervisor, held stopped so that it cannot react, and its parts).
    unsafe {
        libc::kill(sup_pid, libc::SIGSTOP);
        for p in parts {
            libc::kill(p as i32, libc::SIGKILL);
        }
        libc::kill(sup_pid, libc::SIGKILL);
    }
    let _ = sup.0.take().unwrap().wait();
    let before = counts_so_far(&out);
    assert!(before.len() >= 2000 && before.len() < n as usize);
    let o = Sup::start(&f, &rd, &d.path().join("again.log")).finish();
    let l = logs(&d.path().join("again.log"));
    assert!(o.status.success(), "{l}");
    assert!(l.contains("died without cleaning up"), "{l}");
    assert!(l.contains("appended after the"), "{l}");
    let got = counts(&out);
    assert_eq!(
        got[..before.len()],
        before[..],
        "the file lost what it held\n{l}"
    );
    assert!(
        got.windows(2).all(|w| w[0] < w[1]),
        "a set written twice or out of order\n{l}"
    );
    assert_eq!(got.last(), Some(&(n - 1)), "{l}");
    eprintln!(
        "held {} sets; after the new run {} of {n}; {}",
        before.len(),
        got.len(),
        l.lines()
            .filter(|x| x.contains("repeats_dropped") || x.contains("missing"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
}
