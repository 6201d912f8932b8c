//! # ptmp-agents: PTMP's agents and its `ptmper` runner
//!
//! An *agent* (PTMP calls them actors or proxies) is a thread with input and
//! output sockets that transforms a stream of TPSets: [`zipper`], [`sorted`],
//! [`window`], [`replay`], [`czmqat`], [`monitor`], [`stats`], [`filter`],
//! and [`composer`], which builds a list of the others; and the data-flow
//! graph's built-in [`nodes`] (source, sink, worker, proxy). Each is configured by
//! the same JSON keys as its C++ PTMP counterpart, so PTMP configurations run
//! unmodified; the keys, defaults and where our behaviour differs from the
//! C++ code are documented on each module.
//!
//! Design:
//! * **Validate, then build, then run.** [`Proxy::parse`] checks a whole
//!   configuration (types, ranges, socket configs, filter engines) without
//!   touching the network; [`Proxy::build`] makes the sockets; [`Running`]
//!   runs each agent on its own thread. A config with any error starts
//!   nothing.
//! * **Algorithms apart from sockets.** Each agent's core (the zipper's queue,
//!   the window's binning, the replay's pacing, the stats' integration) is a
//!   plain struct fed TPSets and a clock, so its semantics are unit-tested
//!   with crafted streams and benchmarked without I/O; the agent wraps it
//!   with a [`ptmp::Receiver`] and [`ptmp::Sender`].
//! * **Cooperative stop.** Agents poll their inputs with a short timeout
//!   ([`POLL`]) and check [`Ctl::stopped`]; on stop they flush what they hold
//!   (the zipper's queue, the window's buffer) before returning a [`Report`]
//!   of their counters, so nothing already accepted is silently lost.
//!   [`Running::stop_in_order`] first tells every agent the pipeline is
//!   stopping ([`Ctl::holding`]: merges stop releasing sets by timeout,
//!   since their upstream is draining), then stops the agents one at a time
//!   in topological order, each drained and flushed before the next.

pub mod cfg;
pub mod composer;
pub mod czmqat;
pub mod error;
pub mod filter;
pub mod jsonnet;
pub mod merge;
pub mod monitor;
pub mod nodes;
pub mod plugin;
pub mod ptmper;
pub mod replay;
pub mod sorted;
pub mod stats;
pub mod window;
pub mod zipper;

pub use error::{Error, Result};

use ptmp::SocketConfig;
use serde_json::Value;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long an agent waits on its input before checking for stop.
pub const POLL: Duration = Duration::from_millis(20);

/// How long a stopped agent keeps reading a busy input before it gives up
/// draining it.
pub const DRAIN_MAX: Duration = Duration::from_secs(2);

/// Run control of one agent: its stop request and verbosity.
///
/// Stopping drains: a stopped agent goes on reading its input until a read
/// finds nothing (or [`DRAIN_MAX`] passes), then flushes and returns. The
/// runner stops agents upstream first, so what a source sent before it
/// stopped flows through the whole chain.
#[derive(Clone, Default)]
pub struct Ctl {
    stop: Arc<AtomicBool>,
    hold: Arc<AtomicBool>,
    since: Arc<std::sync::Mutex<Option<Instant>>>,
    pub verbose: bool,
    /// Messages the agent has taken in and sent out so far, readable while
    /// it runs (the graph runner's per-node counts and rates).
    pub counts: Arc<Counts>,
}

/// Live message counters of one agent. An increment is a plain load and
/// store, not a locked read-modify-write, to keep the hot path cheap: exact
/// when one thread writes (every agent but a monitor with several taps,
/// whose tap threads may lose an increment now and then); readers on other
/// threads see a recent value.
#[derive(Default, Debug)]
pub struct Counts {
    input: AtomicU64,
    output: AtomicU64,
}

impl Counts {
    #[inline]
    pub fn add_in(&self) {
        let v = self.input.load(Ordering::Relaxed);
        self.input.store(v + 1, Ordering::Relaxed);
    }
    #[inline]
    pub fn add_out(&self) {
        let v = self.output.load(Ordering::Relaxed);
        self.output.store(v + 1, Ordering::Relaxed);
    }
    /// (messages in, messages out).
    pub fn get(&self) -> (u64, u64) {
        (
            self.input.load(Ordering::Relaxed),
            self.output.load(Ordering::Relaxed),
        )
    }
}

impl Ctl {
    pub fn new(verbose: bool) -> Self {
        Ctl {
            verbose,
            ..Default::default()
        }
    }
    /// A new, independent control with the same verbosity.
    pub fn fresh(&self) -> Self {
        Ctl::new(self.verbose)
    }
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
    /// Say the pipeline is stopping: the agents upstream are draining and
    /// flushing into this one, which will be stopped after them. A merge
    /// then stops releasing sets by timeout (a stream whose stage is still
    /// flushing would otherwise see its sets dropped as tardy) and releases
    /// only what is safe, flushing the rest in order when stopped itself.
    pub fn hold(&self) {
        self.hold.store(true, Ordering::Relaxed)
    }
    /// Whether [`Ctl::hold`] was called.
    pub fn holding(&self) -> bool {
        self.hold.load(Ordering::Relaxed)
    }
    pub fn stop(&self) {
        let mut s = self.since.lock().unwrap_or_else(|p| p.into_inner());
        s.get_or_insert_with(Instant::now);
        self.stop.store(true, Ordering::Relaxed)
    }
    /// Whether the agent should end now: stopped, and its input was `idle`
    /// (a read found nothing) or draining has gone on for [`DRAIN_MAX`].
    pub fn done(&self, idle: bool) -> bool {
        if !self.stopped() {
            return false;
        }
        idle || self
            .since
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|t| t.elapsed() >= DRAIN_MAX)
    }
}

/// An agent's final counters.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub name: String,
    pub kind: &'static str,
    pub counters: Vec<(String, u64)>,
    /// Free-form lines (per-input statistics and the like).
    pub lines: Vec<String>,
}

impl Report {
    pub fn new(name: &str, kind: &'static str) -> Self {
        Report {
            name: name.to_string(),
            kind,
            ..Default::default()
        }
    }
    pub fn count(mut self, key: &str, n: u64) -> Self {
        self.counters.push((key.to_string(), n));
        self
    }
    pub fn get(&self, key: &str) -> Option<u64> {
        self.counters
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| *v)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name, self.kind)?;
        for (k, v) in &self.counters {
            write!(f, " {k}={v}")?;
        }
        for l in &self.lines {
            write!(f, "\n    {l}")?;
        }
        Ok(())
    }
}

/// A runnable agent: owns its sockets, runs on one thread.
pub trait Agent: Send {
    fn name(&self) -> &str;
    /// Run until `ctl` says stop or the input is exhausted (a file read to
    /// its end, `number` messages copied), flush, and report.
    fn run(&mut self, ctl: &Ctl) -> Result<Report>;
}

/// Open the input and output sockets of a one-in, one-out agent; errors
/// name the agent.
pub fn open_io(
    agent: &str,
    input: &ptmp::SocketConfig,
    output: &ptmp::SocketConfig,
) -> Result<(ptmp::Receiver, ptmp::Sender)> {
    let rx = ptmp::Receiver::from_config(input).map_err(Error::socket(agent))?;
    let tx = ptmp::Sender::from_config(output).map_err(Error::socket(agent))?;
    Ok((rx, tx))
}

/// What one read of an agent's input gave.
pub enum Got {
    /// A set arrived.
    Set,
    /// Nothing this time (a timeout, a signal, or a message that is not a
    /// TPSet, which is counted).
    Nothing,
    /// Nothing, and the agent is stopping: time to flush and return.
    Done,
}

/// Read one TPSet from an agent's input, waiting at most `wait`.
pub fn recv_set(
    rx: &mut ptmp::Receiver,
    set: &mut ptmp::TPSet,
    wait: Duration,
    ctl: &Ctl,
    bad: &mut u64,
    agent: &str,
) -> Result<Got> {
    match rx.recv_into(set, Some(wait)) {
        Ok(true) => {
            ctl.counts.add_in();
            Ok(Got::Set)
        }
        Ok(false) | Err(ptmp::Error::Interrupted) => Ok(if ctl.done(true) {
            Got::Done
        } else {
            Got::Nothing
        }),
        Err(ptmp::Error::Wire(_)) => {
            *bad += 1;
            Ok(Got::Nothing)
        }
        Err(e) => Err(Error::socket(agent)(e)),
    }
}

/// [`recv_set`] for raw frames (agents that pass messages without parsing
/// them): `Got::Set` when a message arrived, counted as input.
pub fn recv_frames(
    rx: &mut ptmp::Receiver,
    f: &mut ptmp::Frames,
    ctl: &Ctl,
    agent: &str,
) -> Result<Got> {
    match rx.recv_raw_into(f, Some(POLL)) {
        Ok(true) => {
            ctl.counts.add_in();
            Ok(Got::Set)
        }
        Ok(false) | Err(ptmp::Error::Interrupted) => Ok(if ctl.done(true) {
            Got::Done
        } else {
            Got::Nothing
        }),
        Err(e) => Err(Error::socket(agent)(e)),
    }
}

/// Send `set` on `tx`, waiting for room as long as the agent is not done
/// (see [`Ctl::done`]). `Ok(false)`: the agent is stopping and nobody took
/// the set within [`DRAIN_MAX`], so it was not sent (callers count it).
pub fn send_set(tx: &mut ptmp::Sender, set: &ptmp::TPSet, ctl: &Ctl, agent: &str) -> Result<bool> {
    loop {
        if tx.send_within(set, POLL).map_err(Error::socket(agent))? {
            ctl.counts.add_out();
            return Ok(true);
        }
        if ctl.done(false) {
            return Ok(false);
        }
    }
}

/// [`send_set`] for raw frames.
pub fn send_frames(
    tx: &mut ptmp::Sender,
    f: &ptmp::Frames,
    ctl: &Ctl,
    agent: &str,
) -> Result<bool> {
    loop {
        if tx
            .send_frames_within(f, POLL)
            .map_err(Error::socket(agent))?
        {
            ctl.counts.add_out();
            return Ok(true);
        }
        if ctl.done(false) {
            return Ok(false);
        }
    }
}

/// The agent kinds, by PTMP factory alias.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Zipper,
    Sorted,
    Window,
    Replay,
    Czmqat,
    Monitor,
    Stats,
    Filter,
    Composer,
    Source,
    Sink,
    Worker,
    Proxy,
}

/// Aliases accepted in a proxy's `type`: PTMP's factory aliases and the C++
/// class names.
const ALIASES: &[(&str, Kind)] = &[
    ("zipper", Kind::Zipper),
    ("TPZipper", Kind::Zipper),
    ("sorted", Kind::Sorted),
    ("TPSorted", Kind::Sorted),
    ("window", Kind::Window),
    ("TPWindow", Kind::Window),
    ("replay", Kind::Replay),
    ("TPReplay", Kind::Replay),
    ("czmqat", Kind::Czmqat),
    ("cat", Kind::Czmqat),
    ("TPCat", Kind::Czmqat),
    ("monitor", Kind::Monitor),
    ("TPMonitor", Kind::Monitor),
    ("TPMonitorz", Kind::Monitor),
    ("stats", Kind::Stats),
    ("TPStats", Kind::Stats),
    ("filter", Kind::Filter),
    ("TPFilter", Kind::Filter),
    ("composer", Kind::Composer),
    ("TPComposer", Kind::Composer),
    ("source", Kind::Source),
    ("sink", Kind::Sink),
    ("worker", Kind::Worker),
    ("proxy", Kind::Proxy),
];

impl Kind {
    pub fn parse(s: &str) -> Option<Kind> {
        ALIASES.iter().find(|(a, _)| *a == s).map(|(_, k)| *k)
    }
    pub fn name(self) -> &'static str {
        ALIASES
            .iter()
            .find(|(_, k)| *k == self)
            .map(|(a, _)| *a)
            .unwrap_or("?")
    }
    pub fn known() -> String {
        let mut v: Vec<&str> = ALIASES
            .iter()
            .map(|(a, _)| *a)
            .filter(|a| a.chars().next().is_some_and(|c| c.is_lowercase()))
            .collect();
        v.dedup();
        v.join(", ")
    }
}

/// A validated agent configuration.
#[derive(Debug, Clone)]
pub enum Spec {
    Zipper(zipper::Config),
    Sorted(sorted::Config),
    Window(window::Config),
    Replay(replay::Config),
    Czmqat(czmqat::Config),
    Monitor(monitor::Config),
    Stats(stats::Config),
    Filter(filter::Config),
    Composer(Vec<Proxy>),
    Source(nodes::SourceConfig),
    Sink(nodes::SinkConfig),
    /// A worker, or a proxy (a worker with no work).
    Worker(nodes::WorkerConfig),
}

/// One entry of `proxies`: `{name, type, data}`, validated.
#[derive(Debug, Clone)]
pub struct Proxy {
    pub name: String,
    pub kind: Kind,
    pub spec: Spec,
    /// Keys in `data` the agent does not use (reported with `verbose`).
    pub unread: Vec<String>,
}

impl Proxy {
    /// Validate `{name, type, data}`; `at` says where it sits
    /// (e.g. `proxies[3]`) for errors when it has no name.
    pub fn parse(at: &str, v: &Value, plugins: &plugin::Plugins) -> Result<Proxy> {
        let obj = v.as_object().ok_or_else(|| {
            Error::config(
                at,
                at,
                v.to_string(),
                "a proxy must be an object {name, type, data}",
            )
        })?;
        let name = match obj.get("name") {
            None => at.to_string(),
            Some(Value::String(s)) => s.clone(),
            Some(o) => return Err(Error::config(at, "name", o.to_string(), "must be a string")),
        };
        let tname = match obj.get("type") {
            Some(Value::String(s)) => s.as_str(),
            None => {
                return Err(Error::config(
                    &name,
                    "type",
                    "(missing)",
                    "a proxy needs a type",
                ))
            }
            Some(o) => {
                return Err(Error::config(
                    &name,
                    "type",
                    o.to_string(),
                    "must be a string",
                ))
            }
        };
        let kind = Kind::parse(tname).ok_or_else(|| {
            Error::config(
                &name,
                "type",
                format!("{tname:?}"),
                format!("unknown agent type; known: {}", Kind::known()),
            )
        })?;
        let empty = Value::Object(Default::default());
        let data = obj.get("data").unwrap_or(&empty);
        Self::parse_data(&name, kind, data, plugins)
    }

    /// Validate an agent's `data` given its kind.
    pub fn parse_data(
        name: &str,
        kind: Kind,
        data: &Value,
        plugins: &plugin::Plugins,
    ) -> Result<Proxy> {
        let c = cfg::Cfg::new(name, data)?;
        // The thread name PTMP reads from data.name; we only use it in logs.
        let _ = c.get("name");
        let spec = match kind {
            Kind::Zipper => Spec::Zipper(zipper::Config::parse(&c)?),
            Kind::Sorted => Spec::Sorted(sorted::Config::parse(&c)?),
            Kind::Window => Spec::Window(window::Config::parse(&c)?),
            Kind::Replay => Spec::Replay(replay::Config::parse(&c)?),
            Kind::Czmqat => Spec::Czmqat(czmqat::Config::parse(&c)?),
            Kind::Monitor => Spec::Monitor(monitor::Config::parse(&c)?),
            Kind::Stats => Spec::Stats(stats::Config::parse(&c)?),
            Kind::Filter => Spec::Filter(filter::Config::parse(&c, data, plugins)?),
            Kind::Composer => Spec::Composer(composer::parse(&c, plugins)?),
            Kind::Source => Spec::Source(nodes::SourceConfig::parse(&c)?),
            Kind::Sink => Spec::Sink(nodes::SinkConfig::parse(&c)?),
            Kind::Worker => Spec::Worker(nodes::WorkerConfig::parse(&c, false)?),
            Kind::Proxy => Spec::Worker(nodes::WorkerConfig::parse(&c, true)?),
        };
        Ok(Proxy {
            name: name.to_string(),
            kind,
            spec,
            unread: c.unread(),
        })
    }

    /// The agents this proxy makes: itself, or a composer's, flattened, in
    /// the order [`Proxy::build`] makes them.
    pub fn leaves(&self) -> Vec<&Proxy> {
        match &self.spec {
            Spec::Composer(list) => list.iter().flat_map(|p| p.leaves()).collect(),
            _ => vec![self],
        }
    }

    /// The sockets this agent reads and writes (empty for a composer).
    pub fn io(&self) -> (Vec<&SocketConfig>, Vec<&SocketConfig>) {
        match &self.spec {
            Spec::Zipper(c) => (vec![&c.input], vec![&c.output]),
            Spec::Sorted(c) => (vec![&c.input], vec![&c.output]),
            Spec::Window(c) => (vec![&c.input], vec![&c.output]),
            Spec::Replay(c) => (vec![&c.input], vec![&c.output]),
            Spec::Czmqat(c) => (c.input.iter().collect(), c.output.iter().collect()),
            Spec::Monitor(c) => (
                c.taps.iter().map(|t| &t.input).collect(),
                c.taps.iter().map(|t| &t.output).collect(),
            ),
            Spec::Stats(c) => (vec![&c.input], vec![&c.output]),
            Spec::Filter(c) => (vec![&c.input], vec![&c.output]),
            Spec::Composer(_) => (vec![], vec![]),
            Spec::Source(c) => (c.done.iter().collect(), vec![&c.output]),
            Spec::Sink(c) => (vec![&c.input], c.done.iter().collect()),
            Spec::Worker(c) => (vec![&c.input], vec![&c.output]),
        }
    }

    /// Whether this agent ends by itself: a source or sink with a `count`,
    /// a czmqat reading a file or copying a `number` (a composer: when all
    /// of its agents do).
    pub fn finite(&self) -> bool {
        match &self.spec {
            Spec::Source(c) => c.count > 0,
            Spec::Sink(c) => c.count.is_some(),
            Spec::Czmqat(c) => c.ifile.is_some() || c.number.is_some(),
            Spec::Composer(list) => !list.is_empty() && list.iter().all(|p| p.finite()),
            _ => false,
        }
    }

    /// Make the sockets (and filter engines) of this agent, or of every
    /// agent of a composer.
    pub fn build(&self) -> Result<Vec<Box<dyn Agent>>> {
        let n = self.name.clone();
        let one: Box<dyn Agent> = match &self.spec {
            Spec::Zipper(c) => Box::new(zipper::ZipperAgent::new(n, c)?),
            Spec::Sorted(c) => Box::new(sorted::SortedAgent::new(n, c)?),
            Spec::Window(c) => Box::new(window::WindowAgent::new(n, c)?),
            Spec::Replay(c) => Box::new(replay::ReplayAgent::new(n, c)?),
            Spec::Czmqat(c) => Box::new(czmqat::CatAgent::new(n, c)?),
            Spec::Monitor(c) => Box::new(monitor::MonitorAgent::new(n, c)?),
            Spec::Stats(c) => Box::new(stats::StatsAgent::new(n, c)?),
            Spec::Filter(c) => Box::new(filter::FilterAgent::new(n, c)?),
            Spec::Source(c) => Box::new(nodes::SourceAgent::new(n, c)?),
            Spec::Sink(c) => Box::new(nodes::SinkAgent::new(n, c)?),
            Spec::Worker(c) => {
                let kind = if self.kind == Kind::Proxy {
                    "proxy"
                } else {
                    "worker"
                };
                Box::new(nodes::WorkerAgent::new(n, kind, c)?)
            }
            Spec::Composer(list) => {
                let mut all = Vec::new();
                for p in list {
                    all.extend(p.build()?);
                }
                return Ok(all);
            }
        };
        Ok(vec![one])
    }
}

/// Agents running, one thread each, each with its own [`Ctl`].
pub struct Running {
    slots: Vec<Slot>,
}

struct Slot {
    name: String,
    ctl: Ctl,
    thread: Option<JoinHandle<Result<Report>>>,
    result: Option<Result<Report>>,
}

impl Slot {
    fn reap(&mut self) {
        if let Some(h) = self.thread.take() {
            let r = h
                .join()
                .unwrap_or_else(|_| Err(Error::run(&self.name, "the agent's thread panicked")));
            self.result = Some(r);
        }
    }
}

impl Running {
    /// Start every agent on its own named thread.
    pub fn start(agents: Vec<Box<dyn Agent>>, ctl: &Ctl) -> std::io::Result<Running> {
        let mut r = Running { slots: Vec::new() };
        for mut a in agents {
            let name = a.name().to_string();
            let c = ctl.fresh();
            let c2 = c.clone();
            let h = std::thread::Builder::new()
                .name(name.chars().take(15).collect())
                .spawn(move || {
                    let r = a.run(&c2);
                    drop(a);
                    r
                });
            match h {
                Ok(h) => r.slots.push(Slot {
                    name,
                    ctl: c,
                    thread: Some(h),
                    result: None,
                }),
                Err(e) => {
                    r.stop();
                    return Err(e);
                }
            }
        }
        Ok(r)
    }

    /// Each agent's name, live counts (in, out) and whether it has ended.
    pub fn counts(&self) -> Vec<(&str, (u64, u64), bool)> {
        self.slots
            .iter()
            .map(|s| {
                let ended = s.thread.as_ref().is_none_or(|h| h.is_finished());
                (s.name.as_str(), s.ctl.counts.get(), ended)
            })
            .collect()
    }

    /// Each agent's name and counters, to read after the agents stop.
    pub fn count_handles(&self) -> Vec<(String, Arc<Counts>)> {
        self.slots
            .iter()
            .map(|s| (s.name.clone(), s.ctl.counts.clone()))
            .collect()
    }

    /// Whether agent `i` (in start order) has ended.
    pub fn ended(&self, i: usize) -> bool {
        self.slots
            .get(i)
            .is_some_and(|s| s.thread.as_ref().is_none_or(|h| h.is_finished()))
    }

    /// Number of agents still running.
    pub fn alive(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.thread.as_ref().is_some_and(|h| !h.is_finished()))
            .count()
    }

    /// Collect agents that ended by themselves; true if one of them failed
    /// (an agent ends early when its input is exhausted, or on an error,
    /// which the runner must not hide).
    pub fn any_failed_early(&mut self) -> bool {
        let mut failed = false;
        for s in &mut self.slots {
            if s.thread.as_ref().is_some_and(|h| h.is_finished()) {
                s.reap();
                failed |= matches!(s.result, Some(Err(_)));
            }
        }
        failed
    }

    /// Stop every agent at once and wait for them.
    pub fn stop(self) -> Vec<(String, Result<Report>)> {
        let order: Vec<usize> = (0..self.slots.len()).collect();
        for s in &self.slots {
            s.ctl.stop();
        }
        self.stop_in_order(&order)
    }

    /// Stop agents one at a time in `order` (indices in start order, each
    /// waited for before the next is stopped: upstream first, so what is in
    /// flight drains downstream); agents not listed are stopped last.
    ///
    /// First every agent is told the pipeline is stopping ([`Ctl::hold`]),
    /// so a merge point keeps what its draining upstream stages flush into
    /// it (instead of timing out one stream while another still flushes)
    /// and sends it in order when its own turn to stop comes.
    pub fn stop_in_order(mut self, order: &[usize]) -> Vec<(String, Result<Report>)> {
        let n = self.slots.len();
        for s in &self.slots {
            s.ctl.hold();
        }
        let rest = (0..n).filter(|i| !order.contains(i));
        for i in order.iter().copied().filter(|i| *i < n).chain(rest) {
            self.slots[i].ctl.stop();
            self.slots[i].reap();
        }
        self.slots
            .into_iter()
            .map(|s| {
                let r = s
                    .result
                    .unwrap_or_else(|| Err(Error::run(&s.name, "the agent did not report")));
                (s.name, r)
            })
            .collect()
    }
}

/// A key under which a bound and a connected address of the same channel
/// meet: the address itself, except for tcp, where `*`, `0.0.0.0`, a host
/// name and `127.0.0.1` may all name the same listener, so the port alone.
fn channel_key(address: &str) -> String {
    match address.strip_prefix("tcp://") {
        Some(rest) => format!("tcp:{}", rest.rsplit(':').next().unwrap_or(rest)),
        None => address.to_string(),
    }
}

/// An order in which to stop `agents` so each stops after every agent that
/// feeds it (by matching output and input addresses); agents in a cycle
/// keep their configuration order.
pub fn upstream_first(agents: &[&Proxy]) -> Vec<usize> {
    let keys = |cfgs: Vec<&SocketConfig>| -> Vec<String> {
        cfgs.iter()
            .flat_map(|c| c.endpoints().map(|(_, e)| channel_key(&e.address)))
            .collect()
    };
    let io: Vec<(Vec<String>, Vec<String>)> = agents
        .iter()
        .map(|p| {
            let (i, o) = p.io();
            (keys(i), keys(o))
        })
        .collect();
    let n = agents.len();
    // feeds[a] holds b when a's output meets b's input.
    let mut feeds = vec![Vec::new(); n];
    for a in 0..n {
        for b in 0..n {
            if a != b && io[a].1.iter().any(|k| io[b].0.contains(k)) {
                feeds[a].push(b);
            }
        }
    }
    upstream_order(&feeds)
}

/// An order of nodes `0..feeds.len()` in which each comes after every node
/// feeding it (`feeds[a]` lists the nodes `a` feeds, each once); in a cycle,
/// the first node not yet placed goes next.
pub fn upstream_order(feeds: &[Vec<usize>]) -> Vec<usize> {
    let n = feeds.len();
    let mut indeg = vec![0usize; n];
    for f in feeds {
        for &b in f {
            indeg[b] += 1;
        }
    }
    let mut order = Vec::with_capacity(n);
    let mut done = vec![false; n];
    while order.len() < n {
        // The first agent (in config order) with nothing upstream left; in
        // a cycle, the first not yet stopped.
        let next = (0..n)
            .find(|&i| !done[i] && indeg[i] == 0)
            .or_else(|| (0..n).find(|&i| !done[i]))
            .expect("some agent remains");
        done[next] = true;
        order.push(next);
        for &b in &feeds[next] {
            indeg[b] = indeg[b].saturating_sub(1);
        }
    }
    order
}
