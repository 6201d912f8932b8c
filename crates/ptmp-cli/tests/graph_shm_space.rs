//! Graphs in a small `/dev/shm`, with real processes: the chain example
//! runs in a default container's 64 MiB (a private mount namespace with a
//! 64 MiB tmpfs on /dev/shm); a graph whose rings cannot fit is refused
//! once, before anything starts, saying what to do; and a part that fails
//! for its configuration (a set larger than its ring's largest message)
//! stops the graph with its error said once instead of being restarted.

use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

mod common;
use common::{finish, read_dump, spawn, text, write_graph, PTMP};

const LIMIT: Duration = Duration::from_secs(60);

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// Mounting a tmpfs in a mount namespace of our own needs root and
/// `unshare`; elsewhere the tests say they were skipped.
fn can_mount() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let unshare = Command::new("unshare")
        .args(["-m", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !(root && unshare) {
        eprintln!("skipped: mounting a tmpfs on /dev/shm needs root and unshare -m");
    }
    root && unshare
}

/// `ptmp graph run GRAPH --run-dir RUN` from `cwd` in a private mount
/// namespace whose /dev/shm is a fresh tmpfs of `size` (the mount, and
/// every ring in it, goes when the run ends).
fn run_in_shm(size: &str, graph: &Path, run_dir: &Path, cwd: &Path) -> Output {
    let c = Command::new("unshare")
        .args(["-m", "sh", "-c"])
        .arg(format!(
            "mount -t tmpfs -o size={size} tmpfs /dev/shm && exec \"$0\" graph run \"$1\" --run-dir \"$2\" --ttl 50"
        ))
        .arg(PTMP)
        .arg(graph)
        .arg(run_dir)
        .current_dir(cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish(c, LIMIT)
}

#[test]
fn the_chain_example_runs_in_a_default_containers_64_mib() {
    if !can_mount() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let o = run_in_shm(
        "64m",
        &example("chain-graph.jsonnet"),
        &d.path().join("run"),
        d.path(),
    );
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "stdout:\n{out}\nstderr:\n{err}");
    assert!(!err.contains("restarting"), "{err}");
    // Its four shm edges carried the sets to the sink's file.
    let sets = read_dump(&d.path().join("run/chain-graph.dump"));
    let tps: usize = sets.iter().map(|s| s.tps.len()).sum();
    assert!(
        !sets.is_empty() && tps > 0,
        "stdout:\n{out}\nstderr:\n{err}"
    );
}

#[test]
fn rings_that_cannot_fit_are_refused_once_with_what_to_do() {
    if !can_mount() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let o = run_in_shm(
        "16m",
        &example("chain-graph.jsonnet"),
        &d.path().join("run"),
        d.path(),
    );
    let err = text(&o.stderr);
    assert!(!o.status.success(), "{err}");
    // Said once, with the remedies, before any process started.
    assert_eq!(err.matches("--shm-size").count(), 1, "{err}");
    for what in [
        "shm_slots",
        "shm_max_message",
        "\"transport\": \"ipc\"",
        "/dev/shm",
    ] {
        assert!(err.contains(what), "no {what:?} in\n{err}");
    }
    assert!(!err.contains("started (pid"), "{err}");
    assert!(!err.contains("restarting"), "{err}");
    assert!(!d.path().join("run/chain-graph.dump").exists());
}

#[test]
fn a_part_failing_for_its_configuration_is_not_restarted() {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    let name = format!("cfgerr-{}", std::process::id());
    // A set of 100 TPs does not fit a ring whose largest message is 64
    // bytes: every attempt would fail the same way.
    let g = json!({
        "name": name,
        "nodes": [
            {"name": "src", "type": "source", "data": {"count": 50, "rate": 100, "tps": 100, "detid": 1}},
            {"name": "snk", "type": "sink", "data": {}}
        ],
        "edges": [{"from": "src.out", "to": "snk.in", "pattern": "pushpull", "shm_max_message": 64}],
        "restart": {"max": 5, "backoff_ms": 10}
    });
    let f = write_graph(d.path(), &g);
    let (fs, rs) = (f.display().to_string(), rd.display().to_string());
    let o = finish(
        spawn(&["graph", "run", &fs, "--run-dir", &rs, "--ttl", "50"]),
        LIMIT,
    );
    let err = text(&o.stderr);
    // Exit 2, as for a graph refused before it starts: systemd's unit
    // (RestartPreventExitStatus=2) and the Slurm launcher do not start it
    // again either.
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("restarting"), "{err}");
    assert_eq!(
        err.matches("exceeds the channel's maximum of 64").count(),
        1,
        "{err}"
    );
    assert!(
        err.contains("process src") && err.contains("a configuration error"),
        "{err}"
    );
    // The rings went with the run.
    let left = std::fs::read_dir(ptmp_shm::shm_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(&name))
        .count();
    assert_eq!(left, 0);
}
