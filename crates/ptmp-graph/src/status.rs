//! Per-node counts and rates, shared through the run directory.
//!
//! Each running process writes `RUNDIR/status/PROCESS.json` a few times a
//! second (written to a temporary file and renamed, so a reader never sees
//! half of one): its pid, and per node the messages in and out so far, the
//! rates over the last second, whether the node has ended and, at the end,
//! its final report. `ptmp graph run` prints them on SIGUSR1 or every
//! `--status` seconds; `ptmp graph status` prints them from another shell.
//!
//! Besides `nodes`, a document lists the process's `sockets` (every
//! Sender and Receiver, from [`ptmp::meter`]): direction, endpoints,
//! messages, bytes, errors, lost and stalls (sends that found the queue
//! full) so far, durable shm readers the sender's ring gave up, for a
//! CURVE server the clients it admitted and refused (`curve_admitted`,
//! `curve_refused`), message and byte rates over about the last second, and
//! the latency since each TPSet's `created`
//! (p50, p99 and max over that second, microseconds; `null` with no
//! sample). The supervisor keeps `RUNDIR/processes.json` with each
//! process's pid, state (`starting`, `running`, `restarting`, `finished`,
//! `failed`, `stopped`) and restarts so far.

use crate::rundir::docs;
pub use crate::rundir::{processes_file, status_dir, status_file};
mod collect;
mod edge;
pub mod live;
mod planned;
mod report;
mod state;
pub use crate::rundir::docs::{
    Latency, NodeCounts, NodeReport, ProcessStatus, SocketDir, SocketStatus, Supervised,
    SupervisedProcess, SupervisedState,
};
pub use collect::{Collector, Placement, Reading, SocketRow};
pub use edge::{pattern_of, EdgeFigures};
pub use live::GraphState;
pub use planned::{PartRead, Planned, PlannedReading, LOCALHOST};
use ptmp::meter::{self, Snapshot};
pub use report::{EdgeReport, Report};
pub use state::{node_state, now_us, process_state, runs_here, this_node, NodeState, STALE};
use std::collections::VecDeque;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

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

/// The status file `path`, when it is there and readable (see
/// [`crate::rundir::read`]; never waits).
pub fn read_one(path: &Path) -> Option<ProcessStatus> {
    docs::read(path, crate::rundir::STATUS_LIMIT).ok().flatten()
}

/// Every status file in the run directory, sorted by process name; a file
/// that cannot be read (see [`read_all_noting`]) is left out.
pub fn read_all(run_dir: &Path) -> Vec<ProcessStatus> {
    read_all_noting(run_dir).0
}

/// Every status file in the run directory, sorted by process name, and
/// what is wrong with those that could not be read (a FIFO, a link, too
/// big, not a status document), each naming its file. No read waits.
pub fn read_all_noting(run_dir: &Path) -> (Vec<ProcessStatus>, Vec<String>) {
    let mut out: Vec<ProcessStatus> = Vec::new();
    let mut bad = Vec::new();
    let Ok(rd) = std::fs::read_dir(status_dir(run_dir)) else {
        return (vec![], vec![]);
    };
    for e in rd.flatten() {
        let p = e.path();
        let Some(process) = crate::rundir::doc_process(&p) else {
            continue;
        };
        match docs::read::<ProcessStatus>(&p, crate::rundir::STATUS_LIMIT) {
            Ok(Some(mut v)) => {
                if v.process.is_empty() {
                    // Named by its file, as the part that wrote it is.
                    v.process = process.to_string();
                }
                out.push(v);
            }
            // Replaced between the listing and the read.
            Ok(None) => {}
            Err(e) => bad.push(e.to_string()),
        }
    }
    out.sort_by(|a, b| a.process.cmp(&b.process));
    (out, bad)
}

/// Every node's state ([`node_state`]) by name, the supervisor's view of
/// its processes being `sup`.
pub fn node_states(
    statuses: &[ProcessStatus],
    sup: Option<&Supervised>,
) -> std::collections::BTreeMap<String, NodeState> {
    let local = runs_here(sup, this_node().as_deref());
    let now = now_us();
    let mut out = std::collections::BTreeMap::new();
    for st in statuses {
        let said = sup.and_then(|s| s.process(&st.process));
        for n in &st.nodes {
            let state = node_state(said, Some(st), &n.name, local, now);
            out.insert(n.name.clone(), state);
        }
    }
    out
}

/// Every process's state ([`process_state`]) by name: each that wrote a
/// status, and each the supervisor names.
pub fn process_states(
    statuses: &[ProcessStatus],
    sup: Option<&Supervised>,
) -> std::collections::BTreeMap<String, NodeState> {
    let local = runs_here(sup, this_node().as_deref());
    let now = now_us();
    let mut names: std::collections::BTreeSet<&str> =
        statuses.iter().map(|s| s.process.as_str()).collect();
    names.extend(
        sup.iter()
            .flat_map(|s| s.processes.iter().map(|p| p.name.as_str())),
    );
    names
        .into_iter()
        .map(|name| {
            let st = statuses.iter().find(|s| s.process == name);
            let said = sup.and_then(|s| s.process(name));
            (name.to_string(), process_state(said, st, local, now))
        })
        .collect()
}

/// A table of every node's counts, rates and state ([`node_state`]), the
/// supervisor's view of its processes being `sup`.
pub fn table(statuses: &[ProcessStatus], sup: Option<&Supervised>) -> String {
    let local = runs_here(sup, this_node().as_deref());
    let now = now_us();
    let mut s = format!(
        "{:<20} {:<16} {:>8} {:>12} {:>12} {:>11} {:>11}  state\n",
        "node", "process", "pid", "in", "out", "in/s", "out/s"
    );
    for st in statuses {
        let said = sup.and_then(|s| s.process(&st.process));
        for n in &st.nodes {
            let state = node_state(said, Some(st), &n.name, local, now);
            s += &format!(
                "{:<20} {:<16} {:>8} {:>12} {:>12} {:>11.1} {:>11.1}  {}\n",
                n.name, st.process, st.pid, n.received, n.sent, n.in_rate, n.out_rate, state
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
    final_reports: Option<Vec<NodeReport>>,
) -> ProcessStatus {
    let nodes = nodes
        .iter()
        .map(|(name, (i, o), ended, (ri, ro))| NodeCounts {
            name: name.clone(),
            received: *i,
            sent: *o,
            ended: *ended,
            in_rate: round1(*ri),
            out_rate: round1(*ro),
        })
        .collect();
    let mut sockets = sockets();
    if final_reports.is_some() {
        // The agents have ended and closed their sockets: the final
        // document gives each socket's last counts, totals (nothing flows
        // any more).
        sockets.extend(
            meter::take_closed()
                .iter()
                .map(|s| socket_status(s, None, 0.0, 0, true)),
        );
        for s in &mut sockets {
            (s.rate, s.byte_rate) = (0.0, 0.0);
        }
    }
    ProcessStatus {
        graph: graph.to_string(),
        process: process.to_string(),
        sockets,
        pid: std::process::id(),
        time_us: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0),
        nodes,
        ended: final_reports.is_some(),
        held: false,
        reports: final_reports,
    }
}

/// Snapshots of this process's sockets over about the last second, for
/// rates and interval latencies.
static SOCKET_SNAPS: Mutex<VecDeque<(Instant, Vec<Snapshot>)>> = Mutex::new(VecDeque::new());

fn same_socket(a: &Snapshot, b: &Snapshot) -> bool {
    a.id == b.id
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Every socket of this process as the status document lists it.
pub fn sockets() -> Vec<SocketStatus> {
    let now = Instant::now();
    let cur = meter::snapshot(true);
    let mut snaps = SOCKET_SNAPS.lock().unwrap_or_else(|p| p.into_inner());
    snaps.push_back((now, cur.clone()));
    while snaps.len() > 2 && now.duration_since(snaps[1].0) >= Duration::from_secs(1) {
        snaps.pop_front();
    }
    let (t0, old) = &snaps[0];
    let dt = now.duration_since(*t0).as_secs_f64();
    cur.iter()
        .map(|s| {
            let prev = old.iter().find(|o| same_socket(o, s));
            let max = snaps
                .iter()
                .skip(1)
                .flat_map(|(_, v)| v.iter().filter(|o| same_socket(o, s)))
                .map(|o| o.latency_max_us)
                .max()
                .unwrap_or(0);
            socket_status(s, prev, dt, max, false)
        })
        .collect()
}

/// One socket's status from its counts now (`s`), about a second ago
/// (`prev`, `dt` seconds before) and its largest latency over that time;
/// its latency over its whole life instead with `whole_life`.
fn socket_status(
    s: &Snapshot,
    prev: Option<&Snapshot>,
    dt: f64,
    max: u64,
    whole_life: bool,
) -> SocketStatus {
    let d = |a: u64, b: Option<u64>| a.saturating_sub(b.unwrap_or(a));
    let rate = |a: u64, b: Option<u64>| {
        if dt > 0.0 && prev.is_some() {
            round1(d(a, b) as f64 / dt)
        } else {
            0.0
        }
    };
    let hist: Vec<u64> = (0..s.latency.len())
        .map(|k| match whole_life {
            true => s.latency[k],
            false => d(s.latency[k], prev.map(|p| p.latency[k])),
        })
        .collect();
    let latency = match (
        meter::quantile_us(&hist, 0.5),
        meter::quantile_us(&hist, 0.99),
    ) {
        // A quantile is its bucket's upper edge, so it may
        // exceed the true maximum: cap it there.
        (Some(p50), Some(p99)) if max > 0 => Some(Latency {
            p50: p50.min(max),
            p99: p99.min(max),
            max,
        }),
        (Some(p50), Some(p99)) => Some(Latency { p50, p99, max: p99 }),
        _ => None,
    };
    SocketStatus {
        dir: match s.dir {
            meter::Dir::Send => SocketDir::Send,
            meter::Dir::Recv => SocketDir::Recv,
        },
        endpoints: s.endpoints.clone(),
        messages: s.messages,
        bytes: s.bytes,
        errors: s.errors,
        lost: s.lost,
        stalls: s.stalls,
        readers_given_up: s.readers_given_up,
        rate: rate(s.messages, prev.map(|p| p.messages)),
        byte_rate: rate(s.bytes, prev.map(|p| p.bytes)),
        latency_us: latency,
        // A CURVE server: the clients its allow-list let in and refused.
        curve_admitted: s.curve.map(|c| c.0),
        curve_refused: s.curve.map(|c| c.1),
    }
}

/// Write the supervisor's view of its processes (atomically).
pub fn write_processes(run_dir: &Path, procs: &[SupervisedProcess]) -> std::io::Result<()> {
    let (node, step) = slurm_step();
    let doc = Supervised {
        supervisor_pid: std::process::id(),
        processes: procs.to_vec(),
        node,
        step,
    };
    docs::write(&processes_file(run_dir), &doc)
}

/// Where this supervisor runs when Slurm started it as a job step: its
/// node (`SLURMD_NODENAME`) and step (`JOB.STEP`); `None` otherwise.
fn slurm_step() -> (Option<String>, Option<String>) {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let step = var("SLURM_JOB_ID")
        .zip(var("SLURM_STEP_ID"))
        .map(|(j, s)| format!("{j}.{s}"));
    (var("SLURMD_NODENAME").filter(|_| step.is_some()), step)
}

/// The supervisor's view of its processes, if it wrote one it can read.
pub fn read_processes(run_dir: &Path) -> Option<Supervised> {
    read_processes_noting(run_dir).ok().flatten()
}

/// The supervisor's view of its processes: `Ok(None)` when there is none
/// yet, the error naming the file when it cannot be read.
pub fn read_processes_noting(run_dir: &Path) -> crate::Result<Option<Supervised>> {
    docs::read(&processes_file(run_dir), crate::rundir::STATUS_LIMIT)
}
