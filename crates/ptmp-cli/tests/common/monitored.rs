//! A graph run with `--http` for the tests of the monitor: started with a
//! fresh run and user directory, its monitor's address read from what it
//! prints, stopped when dropped.

use super::{state, PTMP};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A graph run with `--http`, stopped (SIGINT, then killed) when dropped.
pub struct Run {
    pub child: Child,
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
}

impl Drop for Run {
    fn drop(&mut self) {
        super::proc::interrupt(&mut self.child, Duration::from_secs(20));
    }
}

/// Three processes, source -> filter -> sink, the source at 200 sets/s
/// with no count, so it runs until stopped.
pub fn graph(dir: &Path) -> PathBuf {
    let g = json!({
        "name": format!("mon-{}", std::process::id()),
        "nodes": [
            {"name": "src", "type": "source", "data": {"rate": 200, "tps": 4, "detid": 1}},
            {"name": "pass", "type": "filter", "data": {"engine": "pass"}},
            {"name": "sink", "type": "sink", "data": {}}
        ],
        "edges": [
            {"from": "src.out", "to": "pass.in", "pattern": "pushpull"},
            {"from": "pass.out", "to": "sink.in", "pattern": "pushpull"}
        ]
    });
    let f = dir.join("mon.json");
    std::fs::write(&f, g.to_string()).unwrap();
    f
}

pub fn start(extra: &[&str]) -> Run {
    start_graph(graph, extra)
}

pub fn start_graph(make: fn(&Path) -> PathBuf, extra: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let g = make(dir.path());
    let mut child = Command::new(PTMP)
        .args(["graph", "run"])
        .arg(&g)
        .arg("--run-dir")
        .arg(dir.path().join("run"))
        // The tests run one graph name at once, each over shm and ipc in
        // its own run directory: each its own user directory (graph locks).
        .env("XDG_RUNTIME_DIR", dir.path().join("xdg"))
        .args(["--http", "127.0.0.1:0", "--ttl", "120"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if let Some(a) = line.split("monitor at http://").nth(1) {
                let _ = tx.send(a.trim_end_matches('/').to_string());
            }
        }
    });
    let addr = match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(a) => a.parse().unwrap(),
        Err(_) => {
            let _ = child.kill();
            panic!("ptmp graph run --http printed no monitor address");
        }
    };
    Run { child, addr, dir }
}

/// Messages the sink has received so far, per the JSON state.
pub fn sink_in(addr: SocketAddr) -> u64 {
    state(addr)["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "sink")
        .and_then(|n| n["in"].as_u64())
        .unwrap()
}

pub fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Two sources in one process, fanned in to a zipper that shares a
/// process with a filter, and a sink: three processes, transports of
/// several kinds, for the page's picture.
pub fn merge_graph(dir: &Path) -> PathBuf {
    let g = json!({
        "name": format!("mon-merge-{}", std::process::id()),
        "nodes": [
            {"name": "link1", "type": "source", "data": {"rate": 200, "tps": 4, "detid": 1}},
            {"name": "link2", "type": "source", "data": {"rate": 300, "tps": 4, "detid": 2}},
            {"name": "zip", "type": "zipper", "data": {"sync_time": 1000}},
            {"name": "pass", "type": "filter", "data": {"engine": "pass", "keep_detid": true}},
            {"name": "sink", "type": "sink", "data": {}}
        ],
        "edges": [
            {"from": ["link1.out", "link2.out"], "to": "zip.in", "pattern": "pushpull"},
            {"from": "zip.out", "to": "pass.in", "pattern": "pushpull"},
            {"from": "pass.out", "to": "sink.in", "pattern": "pushpull"}
        ],
        "processes": [
            {"name": "sources", "nodes": ["link1", "link2"]},
            {"name": "merge", "nodes": ["zip", "pass"]},
            {"name": "sink", "nodes": ["sink"]}
        ]
    });
    let f = dir.join("merge.json");
    std::fs::write(&f, g.to_string()).unwrap();
    f
}
