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

use crate::plan::Plan;
use crate::{part, status, supervise, Graph, Result};
use ptmp::data::now_us;
use ptmp::Transport;
use ptmp_agents::Kind;
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
            let (Some(p), Some(pid)) = (st["process"].as_str(), st["pid"].as_i64()) else {
                continue;
            };
            let nodes = st["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|n| {
                    (
                        n["name"].as_str().unwrap_or("?").to_string(),
                        n["in"].as_u64().unwrap_or(0),
                        n["out"].as_u64().unwrap_or(0),
                    )
                })
                .collect();
            let fin = st["final"].as_bool() == Some(true);
            let e = self
                .seen
                .entry((p.to_string(), pid as i32))
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
    let sink_nodes: Vec<String> = g
        .nodes
        .iter()
        .filter(|n| n.kind == Kind::Sink)
        .map(|n| n.name.clone())
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
                    .filter(|s| s["final"].as_bool() != Some(true))
                    .filter_map(|s| {
                        Some((
                            s["process"].as_str()?.to_string(),
                            s["pid"].as_i64()? as i32,
                        ))
                    })
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
                let mut at_us = now_us();
                match kind {
                    Fault::Kill => {
                        // Kill just after the process wrote its status, so
                        // its last counts are as fresh as can be.
                        let sfile = status::status_file(&dir, &process);
                        let t = Instant::now();
                        while t.elapsed() < part::STATUS_EVERY + Duration::from_millis(50) {
                            let fresh = std::fs::read(&sfile)
                                .ok()
                                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                                .is_some_and(|v| {
                                    v["pid"].as_i64() == Some(pid as i64)
                                        && v["time_us"]
                                            .as_i64()
                                            .is_some_and(|u| now_us() - u < 10_000)
                                });
                            if fresh {
                                break;
                            }
                            std::thread::sleep(Duration::from_millis(2));
                        }
                        lock().track.poll(&dir);
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
                            lock().track.poll(&dir);
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        // A pid that died meanwhile is still our unreaped
                        // child or already gone.
                        supervise::send_signal(pid, Signal::CONT);
                    }
                }
                lock().injected.push(Injected {
                    kind,
                    process,
                    pid,
                    at_us,
                });
            }
            // Recovery: every process running again and the sinks counting.
            let base: u64 = {
                let mut s = lock();
                s.track.poll(&dir);
                sink_nodes.iter().map(|n| s.track.node(n).0).sum()
            };
            let limit = Instant::now() + opts.recover;
            let mut why = String::new();
            while !graph_ended.load(Ordering::Relaxed) && !stop() {
                let all = status::read_all(&dir);
                let down: Vec<String> = g
                    .processes
                    .iter()
                    .filter(|p| sup.host.as_ref().is_none_or(|h| g.hosts[p.host].name == *h))
                    .filter(|p| {
                        !all.iter().any(|s| {
                            s["process"] == p.name.as_str()
                                && (s["final"].as_bool() == Some(true)
                                    || s["pid"].as_i64().is_some_and(|pid| live_child(pid as i32)))
                        })
                    })
                    .map(|p| p.name.clone())
                    .collect();
                let now: u64 = {
                    let mut s = lock();
                    s.track.poll(&dir);
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

/// Per stream (source node) tallies from the sinks' dumps.
#[derive(Default)]
struct Stream {
    /// count -> times received. A restarted source goes on counting, so
    /// one stream has one numbering over every incarnation.
    got: HashMap<u32, u32>,
    received: u64,
}

fn account(
    g: &Graph,
    plan: &Plan,
    opts: &Options,
    outcome: &supervise::Outcome,
    sh: Shared,
    elapsed: Duration,
) -> Report {
    let mut failures = Vec::new();
    // Faults.
    let mut per: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for f in &sh.injected {
        let e = per.entry(f.process.clone()).or_default();
        match f.kind {
            Fault::Kill => e.0 += 1,
            Fault::Stop => e.1 += 1,
        }
    }
    let kills = sh.injected.iter().filter(|f| f.kind == Fault::Kill).count() as u64;
    let stops = sh.injected.len() as u64 - kills;
    // Sources: detid -> node index, and kill times of their processes.
    let sources: Vec<usize> = (0..g.nodes.len())
        .filter(|&i| g.nodes[i].kind == Kind::Source)
        .collect();
    let detid_of = |i: usize| {
        g.nodes[i]
            .data
            .get("detid")
            .and_then(Value::as_u64)
            .unwrap_or(0) as u32
    };
    let kills_of = |process: &str| -> Vec<&Injected> {
        let mut v: Vec<&Injected> = sh
            .injected
            .iter()
            .filter(|f| f.kind == Fault::Kill && f.process == process)
            .collect();
        v.sort_by_key(|f| f.at_us);
        v
    };
    // Read every sink's dump.
    let mut streams: BTreeMap<u32, Stream> = BTreeMap::new();
    let mut foreign = 0u64;
    let mut min_msg = usize::MAX;
    for n in g.nodes.iter().filter(|n| n.kind == Kind::Sink) {
        let Some(f) = n.data.get("ofile").and_then(Value::as_str) else {
            failures.push(format!(
                "sink {} has no ofile: nothing to count from",
                n.name
            ));
            continue;
        };
        let file = match std::fs::File::open(f) {
            Ok(x) => x,
            Err(e) => {
                failures.push(format!("sink {}: ofile {f}: {e}", n.name));
                continue;
            }
        };
        let mut r = ptmp::data::dump::DumpReader::new(std::io::BufReader::new(file));
        let mut fr = ptmp::Frames::new();
        loop {
            match r.read_into(&mut fr) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    failures.push(format!("sink {}: ofile {f}: {e}", n.name));
                    break;
                }
            }
            min_msg = min_msg.min(fr.iter().map(|b| b.len() + 9).sum());
            let Some(set) = fr.get(1).and_then(|b| ptmp::data::decode_tpset(b).ok()) else {
                foreign += 1;
                continue;
            };
            if !sources.iter().any(|&i| detid_of(i) == set.detid) {
                foreign += 1;
                continue;
            }
            let s = streams.entry(set.detid).or_default();
            *s.got.entry(set.count).or_insert(0) += 1;
            s.received += 1;
        }
    }
    if min_msg == usize::MAX {
        min_msg = 16;
    }
    // Streams.
    let mut jstreams = Vec::new();
    let (mut t_sent, mut t_recv, mut t_uniq, mut t_dup, mut t_lost) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    for &i in &sources {
        let node = &g.nodes[i];
        let process = &g.processes[node.process].name;
        let detid = detid_of(i);
        let ks = kills_of(process);
        let st = streams.remove(&detid).unwrap_or_default();
        // Sent: the highest number received, or what the last incarnation
        // said it reached (where it started, from the sequence file its
        // part keeps, plus its own count), whichever is more.
        let max_got = st.got.keys().max().map_or(0, |m| *m as u64 + 1);
        let last = sh
            .track
            .seen
            .iter()
            .filter(|((p, pid), _)| p == process && !ks.iter().any(|x| x.pid == *pid))
            .filter_map(|((_, pid), (v, _))| {
                v.iter().find(|x| x.0 == node.name).map(|x| (*pid, x.2))
            })
            .max_by_key(|x| x.1);
        let seq: Value = std::fs::read(part::sequence_file(&plan.run_dir, process))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(Value::Null);
        let said = last.map_or(0, |(pid, out)| {
            let from = &seq[&node.name];
            let first = if from["pid"].as_i64() == Some(pid as i64) {
                from["first"].as_u64().unwrap_or(0)
            } else {
                0
            };
            first + out
        });
        let sent = said.max(max_got);
        let uniq = st.got.len() as u64;
        let dup = st.got.values().map(|c| (*c - 1) as u64).sum::<u64>();
        let lost = sent.saturating_sub(uniq);
        t_sent += sent;
        t_recv += st.received;
        t_uniq += uniq;
        t_dup += dup;
        t_lost += lost;
        jstreams.push(json!({
            "source": node.name, "detid": detid, "incarnations": ks.len() + 1,
            "sent": sent, "received": st.received, "received_unique": uniq,
            "duplicated": dup, "lost": lost,
        }));
    }
    // The bound: what each killed process could hold.
    // A unix stream socket queues at the reader, charged to the writer's
    // send buffer; tcp has both buffers.
    let wmem = read_u64("/proc/sys/net/core/wmem_default").unwrap_or(212_992);
    let rmem = read_u64("/proc/sys/net/core/rmem_default").unwrap_or(212_992);
    let per_msg = min_msg.max(1) as u64;
    let capacity = |e: usize| -> u64 {
        let edge = &g.edges[e];
        let hwm = edge.hwm.unwrap_or(1000).max(0) as u64;
        match plan.links[e].transport {
            Transport::Shm => ptmp::config::DEFAULT_SHM_SLOTS as u64,
            Transport::Inproc => 2 * hwm,
            Transport::Ipc => 2 * hwm + wmem / per_msg,
            Transport::Tcp => 2 * hwm + (wmem + rmem) / per_msg,
        }
    };
    let mut bound = 0u64;
    let mut proc_bound: BTreeMap<String, u64> = BTreeMap::new();
    for p in &g.processes {
        let mut b = p.nodes.len() as u64;
        for (e, edge) in g.edges.iter().enumerate() {
            if edge.from.iter().chain(&edge.to).any(|r| {
                g.nodes[r.node].process
                    == g.processes
                        .iter()
                        .position(|x| x.name == p.name)
                        .unwrap_or(usize::MAX)
            }) {
                b += capacity(e);
            }
        }
        proc_bound.insert(p.name.clone(), b);
    }
    for f in sh.injected.iter().filter(|f| f.kind == Fault::Kill) {
        bound += proc_bound.get(&f.process).copied().unwrap_or(0);
    }
    // Edges, from the status files.
    let killed: Vec<&str> = sh
        .injected
        .iter()
        .filter(|f| f.kind == Fault::Kill)
        .map(|f| f.process.as_str())
        .collect();
    let mut jedges = Vec::new();
    for (e, edge) in g.edges.iter().enumerate() {
        let sent: u64 = edge
            .from
            .iter()
            .map(|r| sh.track.node(&g.nodes[r.node].name).1)
            .sum();
        let recv: u64 = edge
            .to
            .iter()
            .map(|r| sh.track.node(&g.nodes[r.node].name).0)
            .sum();
        let approx = edge
            .from
            .iter()
            .chain(&edge.to)
            .any(|r| killed.contains(&g.processes[g.nodes[r.node].process].name.as_str()));
        jedges.push(json!({
            "edge": g.edge_label(e),
            "pattern": edge.pattern.name(),
            "transport": plan.links[e].transport.scheme(),
            "sent": sent, "received": recv,
            "difference": sent as i64 - recv as i64,
            "approximate": approx,
        }));
    }
    let restarts: Map<String, Value> = outcome
        .restarts
        .iter()
        .map(|(p, n)| (p.clone(), json!(n)))
        .collect();
    let restarts_total: u64 = outcome.restarts.iter().map(|x| x.1 as u64).sum();
    let per_json: Map<String, Value> = per
        .iter()
        .map(|(p, (k, s))| (p.clone(), json!({"kills": k, "stops": s})))
        .collect();
    if sh.injected.is_empty() {
        failures.push("no fault was injected: nothing was tested".into());
    }
    if t_lost > bound {
        failures.push(format!(
            "lost {t_lost} messages, more than the {bound} the killed processes could hold"
        ));
    }
    if t_dup > 0 {
        failures.push(format!("{t_dup} messages were delivered more than once"));
    }
    if t_uniq + t_lost != t_sent {
        failures.push(format!(
            "accounts do not balance: received once {t_uniq} + lost {t_lost} != sent {t_sent}"
        ));
    }
    if foreign > 0 {
        failures.push(format!(
            "{foreign} messages at the sinks came from no known source"
        ));
    }
    if sh.interrupted {
        failures.push(format!(
            "interrupted after {:.1} s of the {:.1} asked for",
            elapsed.as_secs_f64(),
            opts.duration.as_secs_f64()
        ));
    }
    if let Some(s) = &sh.stalled {
        failures.push(format!("stalled: {s}"));
    }
    if !outcome.ok {
        failures.push(format!("supervisor: {}", outcome.reason));
    }
    let ok = failures.is_empty();
    let json = json!({
        "graph": g.name,
        "seconds": opts.duration.as_secs_f64(),
        "every_ms": opts.every.as_millis() as u64,
        "stop_ms": opts.stop_for.as_millis() as u64,
        "faults_allowed": opts.faults.iter().map(|f| f.name()).collect::<Vec<_>>(),
        "start": opts.start,
        "elapsed_s": (elapsed.as_secs_f64() * 1000.0).round() / 1000.0,
        "faults": {"kills": kills, "stops": stops, "skipped": sh.skipped, "per_process": per_json},
        "restarts": restarts,
        "restarts_total": restarts_total,
        "edges": jedges,
        "streams": jstreams,
        "end_to_end": {
            "sent": t_sent, "received": t_recv, "received_unique": t_uniq,
            "duplicated": t_dup, "lost": t_lost, "bound": bound,
        },
        "bound_per_kill": proc_bound,
        "smallest_message_bytes": min_msg,
        "supervisor": {"reason": outcome.reason, "ok": outcome.ok},
        "stalled": sh.stalled,
        "failures": failures,
        "ok": ok,
    });
    Report { json, ok, failures }
}

/// The report as text, for people.
pub fn text(r: &Value) -> String {
    let mut s = String::new();
    let f = &r["faults"];
    s += &format!(
        "soak of graph {}: {} s, a fault every ~{} ms ({}), start {}\n",
        r["graph"].as_str().unwrap_or("?"),
        r["elapsed_s"],
        r["every_ms"],
        r["faults_allowed"]
            .as_array()
            .map(|a| a
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(","))
            .unwrap_or_default(),
        r["start"],
    );
    s += &format!(
        "faults: {} kills, {} stops ({} skipped: no candidate)\n",
        f["kills"], f["stops"], f["skipped"]
    );
    for (p, v) in f["per_process"].as_object().into_iter().flatten() {
        s += &format!("  {p}: {} kills, {} stops\n", v["kills"], v["stops"]);
    }
    s += &format!("restarts: {}", r["restarts_total"]);
    let rs: Vec<String> = r["restarts"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, n)| n.as_u64() != Some(0))
        .map(|(p, n)| format!("{p} x{n}"))
        .collect();
    if !rs.is_empty() {
        s += &format!(" ({})", rs.join(", "));
    }
    s += "\n";
    s += &format!(
        "{:<48} {:>9} {:>6} {:>10} {:>10} {:>8}\n",
        "edge", "pattern", "over", "sent", "received", "diff"
    );
    for e in r["edges"].as_array().into_iter().flatten() {
        s += &format!(
            "{:<48} {:>9} {:>6} {:>10} {:>10} {:>8}{}\n",
            e["edge"].as_str().unwrap_or("?"),
            e["pattern"].as_str().unwrap_or("?"),
            e["transport"].as_str().unwrap_or("?"),
            e["sent"].as_u64().unwrap_or(0),
            e["received"].as_u64().unwrap_or(0),
            e["difference"].as_i64().unwrap_or(0),
            if e["approximate"].as_bool() == Some(true) {
                "  ~ (a process was killed)"
            } else {
                ""
            }
        );
    }
    s += &format!(
        "{:<16} {:>6} {:>5} {:>10} {:>10} {:>10} {:>6} {:>8}\n",
        "stream", "detid", "incs", "sent", "received", "once", "dup", "lost"
    );
    for t in r["streams"].as_array().into_iter().flatten() {
        s += &format!(
            "{:<16} {:>6} {:>5} {:>10} {:>10} {:>10} {:>6} {:>8}\n",
            t["source"].as_str().unwrap_or("?"),
            t["detid"].as_u64().unwrap_or(0),
            t["incarnations"].as_u64().unwrap_or(0),
            t["sent"].as_u64().unwrap_or(0),
            t["received"].as_u64().unwrap_or(0),
            t["received_unique"].as_u64().unwrap_or(0),
            t["duplicated"].as_u64().unwrap_or(0),
            t["lost"].as_u64().unwrap_or(0)
        );
    }
    let e = &r["end_to_end"];
    s += &format!(
        "end to end: sent {}, received {}, once {}, duplicated {}, lost {} (bound for what killed processes held: {})\n",
        e["sent"], e["received"], e["received_unique"], e["duplicated"], e["lost"], e["bound"]
    );
    if r["ok"].as_bool() == Some(true) {
        s += "soak passed\n";
    } else {
        for f in r["failures"].as_array().into_iter().flatten() {
            s += &format!("FAILED: {}\n", f.as_str().unwrap_or("?"));
        }
    }
    s
}

/// Where the soak writes a sink's dump when the graph gives none.
pub fn default_ofile(run_dir: &Path, sink: &str) -> PathBuf {
    run_dir.join(format!("soak-{sink}.dump"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptmp::data::dump::DumpWriter;
    use ptmp::TPSet;

    #[test]
    fn fault_names_are_checked() {
        assert_eq!(
            parse_faults("kill,stop,kill").unwrap(),
            vec![Fault::Kill, Fault::Stop]
        );
        assert_eq!(parse_faults(" stop ").unwrap(), vec![Fault::Stop]);
        for bad in ["", "kill,", "explode", "kill,Stop"] {
            let e = parse_faults(bad).unwrap_err();
            assert!(e.contains("unknown fault"), "{bad}: {e}");
        }
    }

    fn graph() -> Value {
        json!({
            "name": "soak-unit",
            "nodes": [
                {"name": "a", "type": "source"},
                {"name": "b", "type": "source", "data": {"detid": 0}},
                {"name": "w", "type": "worker"},
                {"name": "snk", "type": "sink"}
            ],
            "edges": [
                {"from": ["a.out", "b.out"], "to": "w.in", "pattern": "pushpull"},
                {"from": "w.out", "to": "snk.in", "pattern": "pushpull", "hwm": 10}
            ],
            "restart": {"max": 3}
        })
    }

    #[test]
    fn prepare_gives_sinks_dumps_and_sources_their_own_detid() {
        let d = tempfile::tempdir().unwrap();
        let mut v = graph();
        let notes = prepare(&mut v, d.path(), 40).unwrap();
        assert_eq!(v["nodes"][0]["data"]["detid"], 1, "0 is b's");
        assert_eq!(
            v["nodes"][3]["data"]["ofile"],
            json!(default_ofile(d.path(), "snk"))
        );
        assert_eq!(v["restart"]["max"], 40);
        assert!(notes.iter().any(|n| n == "restart.max raised from 3 to 40"));
        // Two sources naming one detid cannot be told apart.
        let mut v = graph();
        v["nodes"][0]["data"] = json!({"detid": 0});
        let e = prepare(&mut v, d.path(), 1).unwrap_err();
        assert!(e.contains("sources a and b both send detid 0"), "{e}");
    }

    fn write_dump(path: &Path, sets: &[(u32, u32, i64)]) {
        let mut w = DumpWriter::new(std::fs::File::create(path).unwrap());
        let mut buf = Vec::new();
        for &(detid, count, created) in sets {
            let s = TPSet {
                detid,
                count,
                created,
                ..Default::default()
            };
            ptmp::data::encode_tpset(&s, &mut buf);
            w.write([&ptmp::data::VERSION_FRAME[..], &buf[..]]).unwrap();
        }
        w.flush().unwrap();
    }

    fn status(
        process: &str,
        pid: i32,
        node: &str,
        inn: u64,
        out: u64,
    ) -> ((String, i32), (NodeCounts, bool)) {
        (
            (process.to_string(), pid),
            (vec![(node.to_string(), inn, out)], true),
        )
    }

    /// The counting from a dump: source a (detid 1) was killed once at
    /// time 1000, its first life sent 5 (numbers 0..5, 3 never arrived),
    /// its second life sent 3 more (numbers 5..8, all arrived, 6 twice);
    /// source b (detid 0) sent 4, all arrived. Lost, duplicated and the
    /// bound are what they must be, and the duplicate fails the run.
    #[test]
    fn accounts_from_dumps_split_restarts_and_find_duplicates_and_gaps() {
        let d = tempfile::tempdir().unwrap();
        let mut v = graph();
        prepare(&mut v, d.path(), 10).unwrap();
        let (g, plan) = crate::load(&v, "x", Some(d.path())).unwrap();
        let a1 = [(1, 0, 10), (1, 1, 20), (1, 2, 30), (1, 4, 50)];
        // Its second life went on from 5 (where its part recorded it
        // started): 5, 6 twice, 7.
        let a2 = [(1, 5, 2000), (1, 6, 2010), (1, 6, 2010), (1, 7, 2020)];
        let seq = part::sequence_file(d.path(), "a");
        std::fs::create_dir_all(seq.parent().unwrap()).unwrap();
        std::fs::write(&seq, json!({"a": {"first": 5, "pid": 101}}).to_string()).unwrap();
        let b = [(0, 0, 5), (0, 1, 15), (0, 2, 1500), (0, 3, 2500)];
        let mut all: Vec<(u32, u32, i64)> = Vec::new();
        all.extend(a1);
        all.extend(b);
        all.extend(a2);
        write_dump(&default_ofile(d.path(), "snk"), &all);
        let mut sh = Shared::default();
        sh.track.seen = [
            // a's first life's last status said 3 sent: the dump shows 5.
            status("a", 100, "a", 0, 3),
            status("a", 101, "a", 0, 3),
            status("b", 200, "b", 0, 4),
        ]
        .into_iter()
        .collect();
        sh.injected = vec![
            Injected {
                kind: Fault::Kill,
                process: "a".into(),
                pid: 100,
                at_us: 1000,
            },
            Injected {
                kind: Fault::Stop,
                process: "w".into(),
                pid: 300,
                at_us: 1200,
            },
        ];
        let outcome = supervise::Outcome {
            reason: "interrupted".into(),
            restarts: vec![("a".into(), 1)],
            ok: true,
            ..Default::default()
        };
        let opts = Options {
            duration: Duration::from_secs(1),
            every: Duration::from_millis(100),
            faults: vec![Fault::Kill, Fault::Stop],
            stop_for: Duration::from_millis(10),
            start: 1,
            kill_only: None,
            recover: Duration::from_secs(1),
        };
        let r = account(&g, &plan, &opts, &outcome, sh, Duration::from_secs(1));
        let e = &r.json["end_to_end"];
        assert_eq!(e["sent"], 5 + 3 + 4, "{}", r.json);
        assert_eq!(e["received"], 12);
        assert_eq!(e["received_unique"], 11);
        assert_eq!(e["duplicated"], 1);
        assert_eq!(e["lost"], 1, "number 3 of a's first life");
        let sa = &r.json["streams"][0];
        assert_eq!(
            (&sa["source"], &sa["incarnations"]),
            (&json!("a"), &json!(2))
        );
        // One kill of a: its one node in flight, plus its edge, a fan-in
        // over ipc: 2 x 1000 (high-water marks) + the socket buffer.
        let per = r.json["bound_per_kill"]["a"].as_u64().unwrap();
        assert!(per > 2001, "{}", r.json);
        assert_eq!(e["bound"], per);
        assert_eq!(r.json["faults"]["kills"], 1);
        assert_eq!(r.json["faults"]["stops"], 1);
        assert!(!r.ok);
        assert_eq!(r.failures, vec!["1 messages were delivered more than once"]);
    }
}
