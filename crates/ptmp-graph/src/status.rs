//! Per-node counts and rates, shared through the run directory.
//!
//! Each running process writes `RUNDIR/status/PROCESS.json` a few times a
//! second (written to a temporary file and renamed, so a reader never sees
//! half of one): its pid, and per node the messages in and out so far, the
//! rates over the last second, whether the node has ended and, at the end,
//! its final report. `ptmp graph run` prints them on SIGUSR1 or every
//! `--status` seconds; `ptmp graph status` prints them from another shell.

use serde_json::{json, Value};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The directory under `run_dir` holding one status file per process.
pub fn status_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("status")
}

/// The status file process `process` rewrites while it runs.
pub fn status_file(run_dir: &Path, process: &str) -> PathBuf {
    status_dir(run_dir).join(format!("{process}.json"))
}

/// Rate keeping for one process: recent snapshots of every node's counts.
pub struct Rates {
    snaps: VecDeque<(Instant, Vec<(u64, u64)>)>,
}

impl Default for Rates {
    fn default() -> Self {
        Self::new()
    }
}

impl Rates {
    /// No snapshots yet: the first [`Rates::update`] has nothing earlier to
    /// compare with, so its rates are zero.
    pub fn new() -> Self {
        Rates {
            snaps: VecDeque::new(),
        }
    }
    /// Record `counts` now and return per-node (in/s, out/s) over about the
    /// last second.
    pub fn update(&mut self, counts: &[(u64, u64)]) -> Vec<(f64, f64)> {
        let now = Instant::now();
        self.snaps.push_back((now, counts.to_vec()));
        while self.snaps.len() > 2 && now.duration_since(self.snaps[1].0) >= Duration::from_secs(1)
        {
            self.snaps.pop_front();
        }
        let (t0, c0) = &self.snaps[0];
        let dt = now.duration_since(*t0).as_secs_f64();
        counts
            .iter()
            .zip(c0)
            .map(|(a, b)| {
                if dt <= 0.0 {
                    (0.0, 0.0)
                } else {
                    (
                        a.0.saturating_sub(b.0) as f64 / dt,
                        a.1.saturating_sub(b.1) as f64 / dt,
                    )
                }
            })
            .collect()
    }
}

/// Write `v` to `path` atomically.
pub fn write_atomic(path: &Path, v: &Value) -> std::io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(v).unwrap_or_default())?;
    std::fs::rename(&tmp, path)
}

/// Every status file in the run directory, sorted by process name.
pub fn read_all(run_dir: &Path) -> Vec<Value> {
    let mut out: Vec<(String, Value)> = Vec::new();
    let Ok(rd) = std::fs::read_dir(status_dir(run_dir)) else {
        return vec![];
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        if let Some(v) = std::fs::read(&p)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        {
            let name = v["process"].as_str().unwrap_or("").to_string();
            out.push((name, v));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.into_iter().map(|(_, v)| v).collect()
}

/// A table of every node's counts and rates.
pub fn table(statuses: &[Value]) -> String {
    let mut s = format!(
        "{:<20} {:<16} {:>8} {:>12} {:>12} {:>11} {:>11}  state\n",
        "node", "process", "pid", "in", "out", "in/s", "out/s"
    );
    for st in statuses {
        let process = st["process"].as_str().unwrap_or("?");
        let pid = st["pid"].as_u64().unwrap_or(0);
        let state = if st["final"].as_bool() == Some(true) {
            "exited"
        } else {
            "running"
        };
        for n in st["nodes"].as_array().into_iter().flatten() {
            let ended = n["ended"].as_bool() == Some(true);
            s += &format!(
                "{:<20} {:<16} {:>8} {:>12} {:>12} {:>11.1} {:>11.1}  {}\n",
                n["name"].as_str().unwrap_or("?"),
                process,
                pid,
                n["in"].as_u64().unwrap_or(0),
                n["out"].as_u64().unwrap_or(0),
                n["in_rate"].as_f64().unwrap_or(0.0),
                n["out_rate"].as_f64().unwrap_or(0.0),
                if ended && state == "running" {
                    "ended"
                } else {
                    state
                }
            );
        }
    }
    s
}

/// One node's name, (in, out) counts, whether it ended, (in/s, out/s).
pub type NodeStatus = (String, (u64, u64), bool, (f64, f64));

/// The status document of one process.
pub fn document(
    graph: &str,
    process: &str,
    nodes: &[NodeStatus],
    final_reports: Option<Vec<Value>>,
) -> Value {
    let list: Vec<Value> = nodes
        .iter()
        .map(|(name, (i, o), ended, (ri, ro))| {
            json!({"name": name, "in": i, "out": o, "ended": ended,
                   "in_rate": (ri * 10.0).round() / 10.0,
                   "out_rate": (ro * 10.0).round() / 10.0})
        })
        .collect();
    let mut v = json!({
        "graph": graph,
        "process": process,
        "pid": std::process::id(),
        "time_us": std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0),
        "nodes": list,
        "final": final_reports.is_some(),
    });
    if let Some(r) = final_reports {
        v["reports"] = Value::Array(r);
    }
    v
}
