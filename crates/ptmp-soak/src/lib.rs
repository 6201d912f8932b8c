//! `ptmp graph soak`: run a graph under the supervisor while a fault thread
//! kills (SIGKILL) and stops (SIGSTOP, then SIGCONT) its part processes at
//! random, then stop it cleanly and account for every message.
//!
//! * Faults: every `every` (jittered between half and one and a half of
//!   it) the fault thread picks a running part process at random (a child
//!   of this process, never the supervisor itself) and a fault kind from the
//!   allowed ones. A kill is followed by the supervisor's restart; a stop
//!   lasts `stop_for`, then SIGCONT. Processes holding a sink are never
//!   killed: a restarted sink appends to its dump file, the record the soak
//!   counts from, but may write again the sets it had written and not yet
//!   committed, which would count as duplicated (they may be stopped).
//! * Counting: every sink writes a dump file (the soak gives each sink
//!   without an `ofile` one in the run directory). Each source sends its own
//!   stream, told apart by `detid`, each set numbered by `count` from 0; a
//!   source restarted after a kill goes on numbering where its last status
//!   said it was, so a stream has one numbering over every incarnation.
//!   Per stream: sent (the highest number received, or where the last
//!   incarnation got to, whichever is more), received, received once
//!   (unique), duplicated (a number seen twice) and lost (numbers below
//!   sent never received). Per edge: what the upstream
//!   nodes sent and the downstream nodes received, from the status files
//!   (summed over every incarnation; approximate for a killed one, whose
//!   last status may be up to a quarter of a second old).
//! * The promise on PUSH/PULL paths: nothing is lost except what was inside
//!   a killed process. Each kill adds to a bound what its process could
//!   hold: for every edge at its nodes, the send and receive high-water
//!   marks, the kernel's socket buffers (ipc and tcp; as many of the
//!   smallest message seen as fit), the ring's slots (shm), and one message
//!   in flight per node. The run fails when lost exceeds the bound, when
//!   anything is duplicated, when the graph made no progress after the
//!   faults ended, or when the supervisor gave up or a part did not stop.

mod report;

use report::account;
pub use report::text;

use ptmp::data::now_us;
use ptmp::Transport;
use ptmp_agents::Kind;
use ptmp_graph::plan::Plan;
use ptmp_graph::{part, status, supervise, Graph, Result};
use rustix::process::Signal;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// SIGKILL; the supervisor restarts the process.
    Kill,
    /// SIGSTOP for a while, then SIGCONT.
    Stop,
}

impl Fault {
    /// The name `--faults` and the report use for it.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Kill => "kill",
            Fault::Stop => "stop",
        }
    }
}

/// Parse a comma-separated list of fault names (`kill`, `stop`).
pub fn parse_faults(s: &str) -> std::result::Result<Vec<Fault>, String> {
    let mut out = Vec::new();
    for w in s.split(',').map(str::trim) {
        let f = match w {
            "kill" => Fault::Kill,
            "stop" => Fault::Stop,
            _ => {
                return Err(format!(
                    "--faults {s:?}: unknown fault {w:?}; use kill, stop or both (kill,stop)"
                ))
            }
        };
        if !out.contains(&f) {
            out.push(f);
        }
    }
    Ok(out)
}

/// How a soak run injects faults and judges recovery.
pub struct Options {
    /// How long faults are injected.
    pub duration: Duration,
    /// Mean time between faults.
    pub every: Duration,
    /// The kinds of fault to choose from, each time at random.
    pub faults: Vec<Fault>,
    /// How long a stopped process stays stopped.
    pub stop_for: Duration,
    /// Start of the random sequence (the same start, the same choices).
    pub start: u64,
    /// Processes that may be killed (default: every process without a sink).
    pub kill_only: Option<Vec<String>>,
    /// After the last fault, how long the graph has to show progress again
    /// (every process running, more messages at the sinks).
    pub recover: Duration,
}

/// Prepare a graph's configuration for a soak: give every sink without an
/// `ofile` one in `run_dir`, give sources distinct `detid`s where they set
/// none, and raise `restart.max` to `restarts` at least. Returns notes of
/// what was changed; an error names a configuration the soak cannot count.
pub fn prepare(
    v: &mut Value,
    run_dir: &Path,
    restarts: u32,
) -> std::result::Result<Vec<String>, String> {
    let mut notes = Vec::new();
    let Some(nodes) = v.get_mut("nodes").and_then(Value::as_array_mut) else {
        return Ok(notes);
    };
    let mut used: BTreeMap<u64, String> = BTreeMap::new();
    let mut unset = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        if n["type"] == "source" {
            let name = n["name"].as_str().unwrap_or("?").to_string();
            match n["data"]["detid"].as_u64() {
                Some(d) => {
                    if let Some(other) = used.insert(d, name.clone()) {
                        return Err(format!(
                            "sources {other} and {name} both send detid {d}: the soak tells streams apart by detid; give each source its own"
                        ));
                    }
                }
                None => unset.push(i),
            }
        }
    }
    let mut next = 0u64;
    for i in unset {
        while used.contains_key(&next) {
            next += 1;
        }
        let n = &mut nodes[i];
        let name = n["name"].as_str().unwrap_or("?").to_string();
        if !n["data"].is_object() {
            n["data"] = json!({});
        }
        n["data"]["detid"] = json!(next);
        notes.push(format!("source {name}: detid {next}"));
        used.insert(next, name);
    }
    for n in nodes.iter_mut() {
        if n["type"] != "sink" {
            continue;
        }
        let name = n["name"].as_str().unwrap_or("?").to_string();
        if !n["data"].is_object() {
            n["data"] = json!({});
        }
        let has = n["data"]["ofile"].as_str().is_some_and(|s| !s.is_empty());
        if !has {
            let f = default_ofile(run_dir, &name);
            notes.push(format!("sink {name}: ofile {}", f.display()));
            n["data"]["ofile"] = json!(f);
        }
    }
    if !v["restart"].is_object() {
        v["restart"] = json!({});
    }
    let max = v["restart"]["max"].as_u64().unwrap_or(0);
    if max < restarts as u64 {
        notes.push(format!("restart.max raised from {max} to {restarts}"));
        v["restart"]["max"] = json!(restarts);
    }
    Ok(notes)
}

/// A small random sequence (xorshift64*), enough to pick faults.
struct Rng(u64);

impl Rng {
    fn new(start: u64) -> Rng {
        // Spread the start so that small starts differ from the first pick.
        let mut z = start.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One process's state as /proc sees it: (state letter, parent pid).
fn proc_stat(pid: i32) -> Option<(char, i32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) S ppid ...": comm may hold spaces and parentheses.
    let rest = &s[s.rfind(')')? + 1..];
    let mut w = rest.split_whitespace();
    let state = w.next()?.chars().next()?;
    let ppid = w.next()?.parse().ok()?;
    Some((state, ppid))
}

/// A live (not zombie) child of this process.
fn live_child(pid: i32) -> bool {
    pid > 0
        && pid != std::process::id() as i32
        && proc_stat(pid)
            .is_some_and(|(s, pp)| s != 'Z' && s != 'X' && pp == std::process::id() as i32)
}

/// Per node of one process: name, in, out.
type NodeCounts = Vec<(String, u64, u64)>;

#[derive(Default)]
struct Track {
    /// (process, pid) -> per node (in, out), and whether final.
    seen: BTreeMap<(String, i32), (NodeCounts, bool)>,
}

impl Track {
    fn poll(&mut self, run_dir: &Path) {
        for st in status::read_all(run_dir) {
            if st.pid == 0 {
                continue;
            }
            let nodes = st
                .nodes
                .iter()
                .map(|n| (n.name.clone(), n.received, n.sent))
                .collect();
            let fin = st.ended;
            let e = self
                .seen
                .entry((st.process.clone(), st.pid as i32))
                .or_insert((Vec::new(), false));
            if !e.1 {
                *e = (nodes, fin);
            }
        }
    }
    /// A node's (in, out) summed over every incarnation.
    fn node(&self, node: &str) -> (u64, u64) {
        let mut t = (0, 0);
        for (nodes, _) in self.seen.values() {
            for (n, i, o) in nodes {
                if n == node {
                    t.0 += i;
                    t.1 += o;
                }
            }
        }
        t
    }
}

/// One injected fault.
#[derive(Debug, Clone)]
pub struct Injected {
    /// What was done.
    pub kind: Fault,
    /// The graph process it was done to.
    pub process: String,
    /// That process's pid at the time.
    pub pid: i32,
    /// Wall-clock microseconds when the signal was sent.
    pub at_us: i64,
}

#[derive(Default)]
struct Shared {
    track: Track,
    injected: Vec<Injected>,
    skipped: u64,
    /// Why the graph did not recover after the faults, if it did not.
    stalled: Option<String>,
    /// Ended early by a signal.
    interrupted: bool,
}

/// The soak's result.
#[derive(Debug)]
pub struct Report {
    /// Everything measured (faults, counts, losses, recovery times), as the
    /// JSON report the command writes.
    pub json: Value,
    /// True when the graph recovered from every fault and `failures` is
    /// empty.
    pub ok: bool,
    /// One sentence per check that failed.
    pub failures: Vec<String>,
}

fn read_u64(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Inject fault `kind` into `process` (pid `pid`), a live child of ours;
/// gives when it struck (microseconds since the epoch).
fn strike(
    kind: Fault,
    (process, pid): (&str, i32),
    dir: &Path,
    opts: &Options,
    shared: &Mutex<Shared>,
    stop: &(dyn Fn() -> bool + Sync),
    say: &dyn Fn(String),
) -> i64 {
    let lock = || shared.lock().unwrap_or_else(|e| e.into_inner());
    let mut at_us = now_us();
    match kind {
        Fault::Kill => {
            // Kill just after the process wrote its status, so
            // its last counts are as fresh as can be.
            let sfile = status::status_file(dir, process);
            let t = Instant::now();
            while t.elapsed() < part::STATUS_EVERY + Duration::from_millis(50) {
                let fresh = std::fs::read(&sfile)
                    .ok()
                    .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                    .is_some_and(|v| {
                        v["pid"].as_i64() == Some(pid as i64)
                            && v["time_us"].as_i64().is_some_and(|u| now_us() - u < 10_000)
                    });
                if fresh {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            lock().track.poll(dir);
            // A live child of ours (checked just now); only the
            // supervisor reaps it, so the pid is ours.
            supervise::send_signal(pid, Signal::KILL);
            // After the kill: whatever the killed process
            // created is older, its successor's sets newer.
            at_us = now_us();
            say(format!("SIGKILL to process {process} (pid {pid})"));
        }
        Fault::Stop => {
            supervise::send_signal(pid, Signal::STOP);
            say(format!(
                "SIGSTOP to process {process} (pid {pid}) for {} ms",
                opts.stop_for.as_millis()
            ));
            let until = Instant::now() + opts.stop_for;
            while Instant::now() < until && !stop() {
                lock().track.poll(dir);
                std::thread::sleep(Duration::from_millis(20));
            }
            // A pid that died meanwhile is still our unreaped
            // child or already gone.
            supervise::send_signal(pid, Signal::CONT);
        }
    }
    at_us
}

/// After the last fault: wait, up to `opts.recover`, until every process
/// of this host runs again and the sinks count more than they had; gives
/// why not (empty when it recovered or the graph ended).
fn recovery(
    g: &Graph,
    sup: &supervise::Options,
    dir: &Path,
    opts: &Options,
    shared: &Mutex<Shared>,
    graph_ended: &AtomicBool,
    stop: &(dyn Fn() -> bool + Sync),
) -> String {
    let lock = || shared.lock().unwrap_or_else(|e| e.into_inner());
    let sink_nodes: Vec<&str> = g
        .nodes
        .iter()
        .filter(|n| n.kind == Kind::Sink)
        .map(|n| n.name.as_str())
        .collect();
    let base: u64 = {
        let mut s = lock();
        s.track.poll(dir);
        sink_nodes.iter().map(|n| s.track.node(n).0).sum()
    };
    let limit = Instant::now() + opts.recover;
    let mut why = String::new();
    while !graph_ended.load(Ordering::Relaxed) && !stop() {
        let all = status::read_all(dir);
        let down: Vec<String> = g
            .processes
            .iter()
            .filter(|p| sup.host.as_ref().is_none_or(|h| g.hosts[p.host].name == *h))
            .filter(|p| {
                !all.iter().any(|s| {
                    s.process == p.name && (s.ended || (s.pid > 0 && live_child(s.pid as i32)))
                })
            })
            .map(|p| p.name.clone())
            .collect();
        let now: u64 = {
            let mut s = lock();
            s.track.poll(dir);
            sink_nodes.iter().map(|n| s.track.node(n).0).sum()
        };
        if down.is_empty() && (now > base || sink_nodes.is_empty()) {
            why.clear();
            break;
        }
        why = if down.is_empty() {
            format!(
                "no message reached a sink in {:?} after the last fault",
                opts.recover
            )
        } else {
            format!(
                "process(es) {} not running again {:?} after the last fault",
                down.join(", "),
                opts.recover
            )
        };
        if Instant::now() >= limit {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    why
}

/// Run the soak; `stop` is polled (a signal flag) and ends it early.
pub fn run(
    g: &Graph,
    plan: &Plan,
    sup: &supervise::Options,
    opts: &Options,
    stop: &(dyn Fn() -> bool + Sync),
    log: &mut (dyn Write + Send),
) -> Result<Report> {
    let t0 = Instant::now();
    let dir = plan.run_dir.clone();
    let shared = Mutex::new(Shared::default());
    let faults_over = AtomicBool::new(false);
    let graph_ended = AtomicBool::new(false);
    let sink_procs: Vec<String> = g
        .processes
        .iter()
        .filter(|p| p.nodes.iter().any(|&n| g.nodes[n].kind == Kind::Sink))
        .map(|p| p.name.clone())
        .collect();
    let killable = |p: &str| {
        !sink_procs.iter().any(|s| s == p)
            && opts
                .kill_only
                .as_ref()
                .is_none_or(|l| l.iter().any(|x| x == p))
    };
    let lock = || shared.lock().unwrap_or_else(|e| e.into_inner());
    let log = Mutex::new(log);
    let say = |s: String| {
        let mut l = log.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(l, "graph {}: soak: {s}", g.name);
    };
    let outcome = std::thread::scope(|sc| {
        sc.spawn(|| {
            let mut rng = Rng::new(opts.start);
            let end = t0 + opts.duration;
            let over =
                |t: Instant| Instant::now() >= t || graph_ended.load(Ordering::Relaxed) || stop();
            // Sleep until `t`, keeping the counts current.
            let idle = |t: Instant| {
                while !over(t) {
                    lock().track.poll(&dir);
                    std::thread::sleep(Duration::from_millis(50).min(t - Instant::now()));
                }
            };
            let jitter = |rng: &mut Rng| {
                let ms = opts.every.as_millis() as u64;
                Duration::from_millis(ms / 2 + rng.next() % (ms + 1))
            };
            let mut next = t0 + jitter(&mut rng);
            loop {
                idle(next.min(end));
                if over(end) {
                    break;
                }
                next = Instant::now() + jitter(&mut rng);
                let kind = opts.faults[rng.below(opts.faults.len())];
                let mut cands: Vec<(String, i32)> = status::read_all(&dir)
                    .iter()
                    .filter(|s| !s.ended && s.pid > 0)
                    .map(|s| (s.process.clone(), s.pid as i32))
                    .filter(|(_, pid)| live_child(*pid))
                    .collect();
                if kind == Fault::Kill {
                    cands.retain(|(p, _)| killable(p));
                }
                if cands.is_empty() {
                    lock().skipped += 1;
                    continue;
                }
                let (process, pid) = cands[rng.below(cands.len())].clone();
                let at_us = strike(kind, (&process, pid), &dir, opts, &shared, stop, &say);
                lock().injected.push(Injected {
                    kind,
                    process,
                    pid,
                    at_us,
                });
            }
            let why = recovery(g, sup, &dir, opts, &shared, &graph_ended, stop);
            if !why.is_empty() && !graph_ended.load(Ordering::Relaxed) && !stop() {
                say(format!("stalled: {why}"));
                lock().stalled = Some(why);
            }
            faults_over.store(true, Ordering::Relaxed);
        });
        let stop_all = || stop() || faults_over.load(Ordering::Relaxed);
        let mut sup_log = SayLog(&log);
        let r = supervise::run(g, plan, sup, &stop_all, &|| false, &mut sup_log);
        graph_ended.store(true, Ordering::Relaxed);
        r
    });
    let outcome = outcome?;
    let mut sh = shared.into_inner().unwrap_or_else(|e| e.into_inner());
    sh.track.poll(&dir);
    sh.interrupted = stop();
    let elapsed = t0.elapsed();
    Ok(account(g, plan, opts, &outcome, sh, elapsed))
}

/// Writes the supervisor's lines through the shared log.
struct SayLog<'a, 'b>(&'a Mutex<&'b mut (dyn Write + Send)>);

impl Write for SayLog<'_, '_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).write(b)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).flush()
    }
}

/// Where the soak writes a sink's dump when the graph gives none.
pub fn default_ofile(run_dir: &Path, sink: &str) -> PathBuf {
    ptmp_graph::rundir::soak_dump_file(run_dir, sink)
}

#[cfg(test)]
mod tests;
