//! Graphs under crashes, races and stalls, with real processes: a
//! supervisor killed with SIGKILL leaves nothing the next run reads; of
//! supervisors started at the same moment exactly one runs; a graph whose
//! edges form a cycle is refused; a part stopped while its reader is stalled
//! stops within the drain time; a stalled reader slows its source instead
//! of making it fail; a restarted node delivers nothing twice and a
//! restarted source goes on counting.

use ptmp_data::{decode_tpset, Frames, TPSet};
use ptmp_formats::dump::DumpReader;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{finish, node_in, status, text, wait_for, PTMP};

const LIMIT: Duration = Duration::from_secs(30);

fn write_graph(dir: &Path, v: &Value) -> PathBuf {
    let f = dir.join(format!("{}.json", v["name"].as_str().unwrap()));
    std::fs::write(&f, serde_json::to_vec_pretty(v).unwrap()).unwrap();
    f
}

fn pid_of(run_dir: &Path, process: &str) -> Option<i32> {
    status(run_dir, process)?["pid"].as_i64().map(|p| p as i32)
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: kill only sends a signal to a pid of a process this test
    // started (a supervisor or one of its parts); it touches no memory.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill({pid}, {sig})");
}

fn alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next())
        .is_some_and(|s| s != "Z" && s != "X")
}

fn start(graph: &Path, run_dir: &Path, err: &Path) -> Child {
    Command::new(PTMP)
        .args(["graph", "run"])
        .arg(graph)
        .arg("--run-dir")
        .arg(run_dir)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(err).unwrap())
        .spawn()
        .unwrap()
}

fn sets(dump: &Path) -> Vec<TPSet> {
    let Ok(f) = std::fs::File::open(dump) else {
        return vec![];
    };
    let mut r = DumpReader::new(std::io::BufReader::new(f));
    let mut f = Frames::new();
    let mut out = Vec::new();
    while r.read_into(&mut f).unwrap_or(false) {
        out.push(decode_tpset(f.get(1).unwrap()).unwrap());
    }
    out
}

/// Files in the run directory other than status and plan files.
fn sockets_left(run_dir: &Path) -> Vec<String> {
    std::fs::read_dir(run_dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".ipc"))
                .collect()
        })
        .unwrap_or_default()
}

fn shm_rings(graph: &str) -> Vec<String> {
    let dir = std::env::var("PTMP_SHM_DIR").unwrap_or_else(|_| "/dev/shm".into());
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains(&format!("{graph}.")))
                .collect()
        })
        .unwrap_or_default()
}

/// A run's clean end leaves no pid file, no ring of graph `name` and no
/// ipc socket file in `run_dir`.
#[track_caller]
fn assert_left_nothing(run_dir: &Path, name: &str) {
    assert!(!run_dir.join("supervisor.pid").exists());
    assert_eq!(shm_rings(name), Vec::<String>::new());
    assert_eq!(sockets_left(run_dir), Vec::<String>::new());
}

/// A chain src -> w -> snk over shm (each its own process) and an ipc
/// edge from w to a second sink, the sink counting `count` sets.
fn chain(name: &str, count: u64, rate: u64, out: &Path) -> Value {
    json!({
        "name": name,
        "nodes": [
            {"name": "src", "type": "source", "data": {"count": count, "rate": rate, "detid": 7}},
            {"name": "w", "type": "worker"},
            {"name": "snk", "type": "sink", "data": {"count": count, "ofile": out}}
        ],
        "edges": [
            {"from": "src.out", "to": "w.in", "pattern": "pushpull"},
            {"from": "w.out", "to": "snk.in", "pattern": "pushpull", "transport": "ipc"}
        ],
        "restart": {"max": 3, "backoff_ms": 100}
    })
}

/// The supervisor and every part killed with SIGKILL while the rings hold
/// unread sets (the sink stopped): the next run of the graph says the
/// earlier supervisor died, clears the rings, the pid file and the socket
/// files, and its sink receives only the new run's sets, numbered on from
/// the dead run's (the new run continues it). A clean run leaves no pid
/// file, ring or socket file behind.
#[test]
fn a_killed_supervisor_leaves_nothing_the_next_run_reads() {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    let out = d.path().join("out.dump");
    let name = format!("crash-stale-{}", std::process::id());
    let f = write_graph(d.path(), &chain(&name, 0, 20_000, &out));
    let err = d.path().join("err1");
    let sup = start(&f, &rd, &err);
    let limit = LIMIT;
    wait_for(limit, "traffic at the sink", || {
        node_in(&rd, "snk", "snk").filter(|n| *n >= 100)
    });
    let pids: Vec<i32> = ["src", "w", "snk"]
        .iter()
        .map(|p| pid_of(&rd, p).unwrap())
        .collect();
    // Stop the sink so the rings fill, then kill everything at once.
    signal(pids[2], libc::SIGSTOP);
    wait_for(limit, "a full ring", || {
        let a = node_in(&rd, "w", "w")?;
        std::thread::sleep(Duration::from_millis(300));
        (node_in(&rd, "w", "w")? == a).then_some(())
    });
    signal(sup.id() as i32, libc::SIGKILL);
    for &p in &pids {
        signal(p, libc::SIGKILL);
    }
    let o = finish(sup, limit);
    assert!(!o.status.success());
    for &p in &pids {
        wait_for(limit, "the parts' end", || (!alive(p)).then_some(()));
    }
    assert!(rd.join("supervisor.pid").exists(), "the kill left it");
    assert!(!shm_rings(&name).is_empty(), "the kill left the rings");
    // The next run: the sink counts (the source goes on from where the
    // dead run's stopped), slow enough that old sets would stand out.
    let n = 300u64;
    std::fs::remove_file(&out).unwrap();
    let mut g = chain(&name, n, 2000, &out);
    g["nodes"][0]["data"]
        .as_object_mut()
        .unwrap()
        .remove("count");
    let f = write_graph(d.path(), &g);
    let err2 = d.path().join("err2");
    let t_start = ptmp_data::now_us();
    let o = finish(start(&f, &rd, &err2), limit);
    let e = std::fs::read_to_string(&err2).unwrap();
    assert!(o.status.success(), "{e}");
    assert!(e.contains("died without cleaning up"), "{e}");
    let got = sets(&out);
    let old: Vec<&TPSet> = got.iter().filter(|s| s.created < t_start).collect();
    assert!(
        old.is_empty(),
        "the new run's sink received {} sets of the killed run",
        old.len()
    );
    let counts: Vec<u64> = got.iter().map(|s| s.count as u64).collect();
    let c0 = counts.first().copied().unwrap_or(0);
    assert!(c0 >= 100, "the source started again at {c0}\n{e}");
    assert_eq!(counts, (c0..c0 + n).collect::<Vec<_>>(), "{e}");
    // A clean end leaves nothing behind.
    assert_left_nothing(&rd, &name);
}

/// Four supervisors of one run directory started at the same moment:
/// exactly one runs the graph to its end; each other is refused with exit
/// status 1, naming the winner's pid, and takes nothing of its run away
/// (the winner's sink gets every set). The run's end removes its ipc
/// socket files.
#[test]
fn of_supervisors_started_together_exactly_one_runs() {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    let out = d.path().join("out.dump");
    let name = format!("crash-race-{}", std::process::id());
    let n = 400u64;
    let f = write_graph(d.path(), &chain(&name, n, 1000, &out));
    let kids: Vec<(Child, PathBuf)> = (0..4)
        .map(|i| {
            let err = d.path().join(format!("err{i}"));
            (start(&f, &rd, &err), err)
        })
        .collect();
    let ids: Vec<u32> = kids.iter().map(|(c, _)| c.id()).collect();
    let mut won = Vec::new();
    let mut refused = Vec::new();
    for (i, (c, err)) in kids.into_iter().enumerate() {
        let o = finish(c, LIMIT);
        let e = std::fs::read_to_string(&err).unwrap();
        if o.status.success() {
            won.push(i);
        } else {
            refused.push((i, o.status.code(), e));
        }
    }
    assert_eq!(won.len(), 1, "winners {won:?}; refused {refused:?}");
    let winner = ids[won[0]];
    for (i, code, e) in &refused {
        assert_eq!(*code, Some(1), "{i}: {e}");
        assert!(
            e.contains(&format!(
                "already running from {} (supervisor pid {winner})",
                rd.display()
            )),
            "{i}: {e}"
        );
        assert!(!e.contains("started (pid"), "{i} started parts: {e}");
    }
    let counts: Vec<u64> = sets(&out).iter().map(|s| s.count as u64).collect();
    assert_eq!(counts, (0..n).collect::<Vec<_>>());
    // The winner's clean end leaves no pid file, ring or ipc socket file.
    assert_left_nothing(&rd, &name);
}

/// A cycle of data edges is refused by check and run (exit 2, naming the
/// cycle's nodes) before anything starts; a done edge back to a source is
/// not a cycle.
#[test]
fn a_cycle_that_cannot_drain_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let g = json!({
        "name": "cyc",
        "nodes": [
            {"name": "src", "type": "source"},
            {"name": "z", "type": "zipper"},
            {"name": "a", "type": "worker"},
            {"name": "b", "type": "proxy"}
        ],
        "edges": [
            {"from": "src.out", "to": "z.in", "pattern": "pushpull"},
            {"from": "z.out", "to": "a.in", "pattern": "pushpull"},
            {"from": "a.out", "to": "b.in", "pattern": "pushpull"},
            {"from": "b.out", "to": "z.in", "pattern": "pushpull"}
        ]
    });
    let f = write_graph(d.path(), &g);
    let rd = d.path().join("run");
    for cmd in ["check", "run"] {
        let o = Command::new(PTMP)
            .args(["graph", cmd])
            .arg(&f)
            .arg("--run-dir")
            .arg(&rd)
            .output()
            .unwrap();
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {e}");
        assert!(e.contains("edges form a cycle"), "{cmd}: {e}");
        assert!(e.contains("z -> a -> b -> z"), "{cmd}: {e}");
    }
    assert!(!rd.exists(), "nothing may start for a bad graph");
    // The butterfly's done edge leads back to its source: allowed.
    let b = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/butterfly.jsonnet");
    let o = Command::new(PTMP)
        .args(["graph", "check"])
        .arg(&b)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// src -> w1 -> w2 -> snk over shm, flat out. w2 is stopped (SIGSTOP), so
/// w1 waits for room in its output ring; w1's part is then sent SIGTERM.
/// It must stop within the drain time and end cleanly (exit 143, for the
/// SIGTERM), not sit out the ring's block timeout and fail; not sent by
/// the supervisor, the signal makes it restart w1. The source, whose
/// reader w1 was for a moment gone, is not restarted.
#[test]
fn a_stop_is_honoured_while_the_reader_is_stalled() {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    let g = json!({
        "name": format!("crash-stop-{}", std::process::id()),
        "nodes": [
            {"name": "src", "type": "source"},
            {"name": "w1", "type": "worker"},
            {"name": "w2", "type": "worker"},
            {"name": "snk", "type": "sink"}
        ],
        "edges": [
            {"from": "src.out", "to": "w1.in", "pattern": "pushpull"},
            {"from": "w1.out", "to": "w2.in", "pattern": "pushpull"},
            {"from": "w2.out", "to": "snk.in", "pattern": "pushpull"}
        ],
        "restart": {"max": 3, "backoff_ms": 100}
    });
    let f = write_graph(d.path(), &g);
    let err = d.path().join("err");
    let sup = start(&f, &rd, &err);
    wait_for(LIMIT, "traffic at the sink", || {
        node_in(&rd, "snk", "snk").filter(|n| *n >= 1000)
    });
    let w1 = pid_of(&rd, "w1").unwrap();
    let w2 = pid_of(&rd, "w2").unwrap();
    signal(w2, libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(500));
    signal(w1, libc::SIGTERM);
    // The drain is 2 s per agent; the ring's block timeout would be 10 s.
    let t = Instant::now();
    while alive(w1) && t.elapsed() < Duration::from_secs(8) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let stopped_in = t.elapsed();
    if stopped_in < Duration::from_secs(8) {
        wait_for(LIMIT, "the supervisor to see w1's end", || {
            let e = std::fs::read_to_string(&err).unwrap_or_default();
            e.contains(&format!("process w1 (pid {w1})")).then_some(())
        });
    }
    signal(w2, libc::SIGCONT);
    signal(sup.id() as i32, libc::SIGINT);
    let o = finish(sup, LIMIT);
    let e = std::fs::read_to_string(&err).unwrap();
    assert!(
        stopped_in < Duration::from_secs(8),
        "w1 still running 8 s after SIGTERM\n{e}"
    );
    // Stopped by a SIGTERM it did not send, w1 has not finished its input:
    // the supervisor restarts it.
    assert!(
        e.contains(&format!(
            "process w1 (pid {w1}) stopped by SIGTERM, which the supervisor did not send (exit status 143); restarting"
        )),
        "{e}"
    );
    assert!(
        !e.contains(&format!("process w1 (pid {w1}) finished")),
        "{e}"
    );
    assert!(
        !e.lines()
            .any(|l| l.contains("process src") && l.contains("restarting")),
        "{e}"
    );
    assert!(o.status.success(), "{e}");
}

/// A worker on a shm chain stopped (SIGSTOP) for longer than a lone shm
/// sender's block timeout (10 s): the source is held back and waits, it
/// neither fails nor is restarted, and when the worker goes on every set
/// arrives once, in order. The source is paced (30,000 sets over 10 s) so
/// that the chain is still running when the worker is stopped: flat out it
/// could finish between two of the sink's status writes.
#[test]
fn a_stalled_reader_slows_its_source_instead_of_restarting_it() {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    let out = d.path().join("out.dump");
    let n = 30_000u64;
    let g = json!({
        "name": format!("crash-stall-{}", std::process::id()),
        "nodes": [
            {"name": "src", "type": "source", "data": {"count": n, "rate": 3000, "detid": 3}},
            {"name": "w", "type": "worker"},
            {"name": "snk", "type": "sink", "data": {"count": n, "ofile": out}}
        ],
        "edges": [
            {"from": "src.out", "to": "w.in", "pattern": "pushpull"},
            {"from": "w.out", "to": "snk.in", "pattern": "pushpull"}
        ],
        "restart": {"max": 3, "backoff_ms": 100}
    });
    let f = write_graph(d.path(), &g);
    let err = d.path().join("err");
    let sup = start(&f, &rd, &err);
    wait_for(LIMIT, "traffic at the sink", || {
        node_in(&rd, "snk", "snk").filter(|n| *n >= 100)
    });
    let w = pid_of(&rd, "w").unwrap();
    signal(w, libc::SIGSTOP);
    let seen = node_in(&rd, "snk", "snk").unwrap_or(0);
    assert!(seen < n, "the chain finished before the worker was stopped");
    std::thread::sleep(Duration::from_millis(11_000));
    signal(w, libc::SIGCONT);
    let o = finish(sup, LIMIT);
    let e = std::fs::read_to_string(&err).unwrap();
    assert!(o.status.success(), "{e}");
    assert!(!e.contains("restarting"), "{e}");
    assert!(e.contains("stopping: finished"), "{e}");
    let counts: Vec<u64> = sets(&out).iter().map(|s| s.count as u64).collect();
    assert_eq!(counts.len() as u64, n, "{e}");
    assert!(counts.iter().copied().eq(0..n), "{e}");
}

/// Run a counted chain src -> w -> snk (`transport` for both edges, each
/// node its own process), kill `victim`'s process with SIGKILL once the
/// sink has `at` sets, and return the counts the sink wrote, in order,
/// with the supervisor's log.
fn kill_once(name: &str, transport: &str, victim: &str, n: u64, at: u64) -> (Vec<u64>, String) {
    signal_once(name, transport, victim, n, at, libc::SIGKILL)
}

/// As [`kill_once`], with signal `sig` (sent by the test, not by the
/// supervisor) instead of SIGKILL.
fn signal_once(
    name: &str,
    transport: &str,
    victim: &str,
    n: u64,
    at: u64,
    sig: i32,
) -> (Vec<u64>, String) {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    let out = d.path().join("out.dump");
    let g = json!({
        "name": format!("{name}-{}", std::process::id()),
        "nodes": [
            {"name": "src", "type": "source", "data": {"count": n, "rate": 4000, "detid": 5}},
            {"name": "w", "type": "worker"},
            {"name": "snk", "type": "sink", "data": {"count": n, "ofile": out}}
        ],
        "edges": [
            {"from": "src.out", "to": "w.in", "pattern": "pushpull", "transport": transport},
            {"from": "w.out", "to": "snk.in", "pattern": "pushpull", "transport": transport}
        ],
        "restart": {"max": 3, "backoff_ms": 50}
    });
    let f = write_graph(d.path(), &g);
    let err = d.path().join("err");
    let sup = start(&f, &rd, &err);
    wait_for(LIMIT, "traffic at the sink", || {
        node_in(&rd, "snk", "snk").filter(|k| *k >= at)
    });
    let pid = pid_of(&rd, victim).unwrap();
    signal(pid, sig);
    let how = match sig {
        libc::SIGKILL => "killed by SIGKILL".to_string(),
        _ => format!(
            "stopped by {}, which the supervisor did not send (exit status {})",
            signal_name(sig),
            128 + sig
        ),
    };
    wait_for(LIMIT, "the restart", || {
        let e = std::fs::read_to_string(&err).unwrap_or_default();
        e.contains(&format!("process {victim} (pid {pid}) {how}; restarting"))
            .then_some(())
    });
    // What the killed process held may be lost (over zmq its queues die
    // with it), so the sink may never reach its count.
    let e = settle(&rd, sup, &err, n, LIMIT, Duration::from_millis(300));
    let counts = sets(&out).iter().map(|s| s.count as u64).collect();
    (counts, e)
}

/// Once the source `src` is done, waits until the sink `snk` has all `n`
/// sets or has stopped receiving, stops the graph if the sink has not
/// ended by itself, and returns the supervisor's log after checking that
/// it exited cleanly. `pause` is how long the sink must stay still to
/// count as stopped.
fn settle(
    rd: &Path,
    sup: Child,
    err: &Path,
    n: u64,
    source_limit: Duration,
    pause: Duration,
) -> String {
    wait_for(source_limit, "the source's end", || {
        status(rd, "src").filter(|s| s["final"] == true).map(|_| ())
    });
    let mut last = None;
    wait_for(LIMIT, "the sink to settle", || {
        let now = node_in(rd, "snk", "snk");
        let settled =
            now == Some(n) || status(rd, "snk").is_none() || (now.is_some() && now == last);
        last = now;
        std::thread::sleep(pause);
        settled.then_some(())
    });
    if status(rd, "snk").is_some_and(|s| s["final"] != true) {
        signal(sup.id() as i32, libc::SIGINT);
    }
    let o = finish(sup, LIMIT);
    let e = std::fs::read_to_string(err).unwrap();
    assert!(o.status.success(), "{e}");
    e
}

/// The sum of the supervisor's per-edge loss lines.
fn reported_losses(log: &str) -> u64 {
    log.lines()
        .filter(|l| l.contains(" lost (numbers missing"))
        .filter_map(|l| {
            let (_, rest) = l.split_once("): ")?;
            rest.split_whitespace().next()?.parse::<u64>().ok()
        })
        .sum()
}

fn dups_and_missing(counts: &[u64], n: u64) -> (u64, Vec<u64>) {
    let mut seen = vec![0u32; n as usize];
    for &c in counts {
        seen[c as usize] += 1;
    }
    let dups = seen.iter().map(|&k| k.saturating_sub(1) as u64).sum();
    let missing = (0..n).filter(|&c| seen[c as usize] == 0).collect();
    (dups, missing)
}

/// A worker between two shm edges killed with SIGKILL mid-stream: its
/// input ring keeps its place (the first set it had not forwarded) and the
/// source waits for its successor, which resumes there; the few sets
/// forwarded but not yet shown as committed come again and the sink drops
/// them. Every set arrives exactly once, in order, and no loss is reported.
#[test]
fn a_restarted_worker_on_shm_delivers_nothing_twice() {
    let n = 6000;
    let (counts, e) = kill_once("crash-shmw", "shm", "w", n, 1500);
    let (dups, missing) = dups_and_missing(&counts, n);
    assert_eq!(dups, 0, "{e}");
    assert_eq!(missing, Vec::<u64>::new(), "{e}");
    assert_eq!(reported_losses(&e), 0, "{e}");
    assert!(counts.iter().copied().eq(0..n), "{e}");
}

/// A shm chain src -> w1 -> w2 -> snk, each node its own process, under
/// load (20,000 sets a second: a ring of 1,024 lasts 51 ms, less than a
/// restart takes): the workers are killed with SIGKILL six times in turn,
/// each time as soon as the previous restart is up, then w1 is stopped
/// (SIGSTOP) for 3 s. The sink gets every set exactly once, in order: 0
/// lost, 0 duplicated. (Before readers kept their place in the ring, the
/// writer dropped a dead reader and ran a ringful past it before the
/// successor came: sets were lost at every kill.)
#[test]
fn a_shm_chain_whose_workers_are_killed_again_and_again_delivers_every_set_once() {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    let out = d.path().join("out.dump");
    let n = 100_000u64;
    let g = json!({
        "name": format!("crash-again-{}", std::process::id()),
        "nodes": [
            {"name": "src", "type": "source", "data": {"count": n, "rate": 20000, "detid": 9}},
            {"name": "w1", "type": "worker"},
            {"name": "w2", "type": "worker"},
            {"name": "snk", "type": "sink", "data": {"count": n, "ofile": out}}
        ],
        "edges": [
            {"from": "src.out", "to": "w1.in", "pattern": "pushpull"},
            {"from": "w1.out", "to": "w2.in", "pattern": "pushpull"},
            {"from": "w2.out", "to": "snk.in", "pattern": "pushpull"}
        ],
        "restart": {"max": 10, "backoff_ms": 50}
    });
    let f = write_graph(d.path(), &g);
    let err = d.path().join("err");
    let sup = start(&f, &rd, &err);
    wait_for(LIMIT, "traffic at the sink", || {
        node_in(&rd, "snk", "snk").filter(|k| *k >= 500)
    });
    let mut killed = Vec::new();
    for k in 0..6 {
        let victim = ["w1", "w2"][k % 2];
        // The live process of the victim (a restarted one after a kill).
        let pid = wait_for(LIMIT, "the victim's process", || {
            pid_of(&rd, victim).filter(|p| alive(*p) && !killed.contains(p))
        });
        signal(pid, libc::SIGKILL);
        killed.push(pid);
        wait_for(LIMIT, "the restart", || {
            let e = std::fs::read_to_string(&err).unwrap_or_default();
            e.contains(&format!(
                "process {victim} (pid {pid}) killed by SIGKILL; restarting"
            ))
            .then_some(())
        });
        std::thread::sleep(Duration::from_millis(200));
    }
    let w1 = wait_for(LIMIT, "w1's process", || {
        pid_of(&rd, "w1").filter(|p| alive(*p) && !killed.contains(p))
    });
    signal(w1, libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(3000));
    signal(w1, libc::SIGCONT);
    // Were anything lost the sink would wait for ever: `settle` also ends
    // on a sink that stopped receiving.
    let e = settle(
        &rd,
        sup,
        &err,
        n,
        Duration::from_secs(60),
        Duration::from_millis(500),
    );
    assert_eq!(e.matches("killed by SIGKILL; restarting").count(), 6, "{e}");
    let counts: Vec<u64> = sets(&out).iter().map(|s| s.count as u64).collect();
    let (dups, missing) = dups_and_missing(&counts, n);
    assert_eq!((counts.len() as u64, dups), (n, 0), "{e}");
    assert_eq!(missing, Vec::<u64>::new(), "{e}");
    assert!(counts.iter().copied().eq(0..n), "{e}");
    assert_eq!(reported_losses(&e), 0, "{e}");
}

/// The source killed with SIGKILL mid-stream: its successor goes on
/// counting where it stopped (not from 0), numbers it sends again are
/// dropped downstream, and the sink ends with every number once.
#[test]
fn a_restarted_source_continues_its_sequence() {
    let n = 6000;
    let (counts, e) = kill_once("crash-shms", "shm", "src", n, 1500);
    let (dups, missing) = dups_and_missing(&counts, n);
    assert_eq!(dups, 0, "{e}");
    assert_eq!(missing, Vec::<u64>::new(), "{e}");
    assert_eq!(counts.len() as u64, n, "{e}");
}

/// The same over ipc: what the killed worker held in its queues is lost
/// with it (zmq's queues die with their process), but nothing arrives
/// twice, and the supervisor's report of losses per edge, from the gaps in
/// the numbers, adds up to exactly what the sink is missing.
#[test]
fn over_zmq_a_restart_loses_only_what_it_held_and_says_how_many_per_edge() {
    let n = 6000;
    let (counts, e) = kill_once("crash-ipcw", "ipc", "w", n, 1500);
    let (dups, missing) = dups_and_missing(&counts, n);
    assert_eq!(dups, 0, "{e}");
    let reported = reported_losses(&e);
    // What the killed worker held shows as lost on its output edge.
    assert!(
        missing.is_empty() || e.contains("edges[1] (w.out -> snk.in): "),
        "no per-edge loss report\n{e}"
    );
    assert_eq!(reported, missing.len() as u64, "missing {missing:?}\n{e}");
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => panic!("no name for signal {sig} here"),
    }
}

/// A worker stopped mid-stream by SIGTERM, SIGHUP or SIGINT that the
/// supervisor did not send: it stops cleanly, draining, and exits 128 +
/// the signal, so the supervisor restarts it as it would a crashed one
/// rather than record it as finished (before, it was never restarted, the
/// sink stopped short, and the run still ended with success and no loss
/// reported). Over shm, after any signal but SIGINT, its successor
/// resumes where it stopped and every set arrives exactly once; over ipc nothing arrives twice and whatever
/// is missing is reported, edge by edge.
#[test]
fn a_worker_stopped_by_a_signal_the_supervisor_did_not_send_is_restarted() {
    // Five seconds of sets at the source's 4,000 a second: a worker
    // stopped at the 1,500th drains its busy input for up to two seconds
    // before it exits, and the source must still be sending when its
    // successor starts (with fewer, the graph finished first and the
    // supervisor stopped the draining worker itself).
    let n = 20_000;
    for (transport, sig) in [
        ("shm", libc::SIGTERM),
        ("ipc", libc::SIGHUP),
        ("shm", libc::SIGINT),
        ("ipc", libc::SIGTERM),
    ] {
        let what = format!("{} to w over {transport}", signal_name(sig));
        let name = format!("sig-{transport}-{sig}");
        let (counts, e) = signal_once(&name, transport, "w", n, 1500, sig);
        let (dups, missing) = dups_and_missing(&counts, n);
        assert_eq!(dups, 0, "{what}\n{e}");
        assert_eq!(
            reported_losses(&e),
            missing.len() as u64,
            "{what}: missing {missing:?}\n{e}"
        );
        // A part stopped by a signal other than the supervisor's own
        // (SIGINT) keeps its durable readers' places, so over shm its
        // successor resumes there. After a SIGINT, which the part cannot
        // tell from its supervisor's, what the source sent between the
        // exit and the restart may be overwritten: reported, as checked
        // above, not kept.
        if transport == "shm" && sig != libc::SIGINT {
            assert_eq!(missing, Vec::<u64>::new(), "{what}\n{e}");
        }
    }
}

/// The fault soak over shm (the default transports): source -> 2 workers
/// -> sink, every process but the sink's killed or stopped at random for
/// 6 s, at 1,000 sets a second, slow enough that a killed worker's input
/// ring still holds what it had passed on when its successor attaches.
/// Nothing is delivered twice (before restarts went on counting and
/// receivers dropped repeats, this soak found 1,065 duplicates in 4 worker
/// kills), the accounts balance, and nothing is lost: a killed worker's
/// input ring keeps its place for its successor.
#[test]
fn the_shm_soak_with_kills_delivers_nothing_twice() {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    let g = json!({
        "name": format!("crash-soak-{}", std::process::id()),
        "nodes": [
            {"name": "src", "type": "source", "data": {"rate": 1000}},
            {"name": "w1", "type": "worker"},
            {"name": "w2", "type": "worker"},
            {"name": "snk", "type": "sink"}
        ],
        "edges": [
            {"from": "src.out", "to": "w1.in", "pattern": "pushpull"},
            {"from": "w1.out", "to": "w2.in", "pattern": "pushpull"},
            {"from": "w2.out", "to": "snk.in", "pattern": "pushpull"}
        ]
    });
    let f = write_graph(d.path(), &g);
    let c = Command::new(PTMP)
        .args(["graph", "soak"])
        .arg(&f)
        .arg("--run-dir")
        .arg(&rd)
        .args([
            "--seconds",
            "6",
            "--every-ms",
            "500",
            "--start",
            "3",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = finish(c, Duration::from_secs(60));
    let so = text(&o.stdout);
    let r: Value = serde_json::from_str(so.lines().last().unwrap_or("{}")).unwrap_or_default();
    let e = &r["end_to_end"];
    assert!(r["faults"]["kills"].as_u64() > Some(0), "{so}");
    assert_eq!(e["duplicated"], 0, "{so}");
    assert_eq!(e["lost"], 0, "{so}");
    assert!(e["sent"].as_u64() > Some(500), "{so}");
    assert_eq!(r["ok"], true, "{so}\n{}", text(&o.stderr));
    assert!(o.status.success(), "{so}");
}
