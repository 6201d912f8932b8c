//! What every agent is: the [`Agent`] trait, its run control ([`Ctl`]),
//! its live counters ([`Counts`]) and its final [`Report`].

use crate::error::Result;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
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
    since: Arc<Mutex<Option<Instant>>>,
    /// Print per-agent detail (unused keys, engine errors) while running.
    pub verbose: bool,
    /// Messages the agent has taken in and sent out so far, readable while
    /// it runs (the graph runner's per-node counts and rates).
    pub counts: Arc<Counts>,
    /// The per-period figures of the agent's `metrics`, when configured
    /// (fed by the agent's reads and writes: [`crate::recv_set`],
    /// [`crate::send_set`] and the like).
    pub meter: Option<Arc<crate::metrics::Meter>>,
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
    /// Count one message taken in.
    pub fn add_in(&self) {
        let v = self.input.load(Ordering::Relaxed);
        self.input.store(v + 1, Ordering::Relaxed);
    }
    #[inline]
    /// Count one message sent out.
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
    /// A control not yet stopped; `verbose` asks the agent for detail.
    pub fn new(verbose: bool) -> Self {
        Ctl {
            verbose,
            ..Default::default()
        }
    }
    /// A TPSet (or, `None`, another message) taken in: counted, and
    /// noted for the metrics.
    #[inline]
    pub fn took_in(&self, set: Option<&ptmp::TPSet>) {
        self.counts.add_in();
        if let Some(m) = &self.meter {
            m.note_in(set);
        }
    }
    /// A TPSet (or, `None`, another message) sent out: counted, and noted
    /// for the metrics.
    #[inline]
    pub fn sent_out(&self, set: Option<&ptmp::TPSet>) {
        self.counts.add_out();
        if let Some(m) = &self.meter {
            m.note_out(set);
        }
    }
    /// This control (the same stop, hold and counts) feeding `meter` too.
    pub fn with_meter(&self, meter: Arc<crate::metrics::Meter>) -> Self {
        Ctl {
            meter: Some(meter),
            ..self.clone()
        }
    }
    /// A new, independent control with the same verbosity.
    pub fn fresh(&self) -> Self {
        Ctl::new(self.verbose)
    }
    /// Whether a stop was requested (the agent may still be draining).
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
    /// Ask the agent to stop: it drains its input (at most [`DRAIN_MAX`]),
    /// flushes and returns. The first call starts the drain clock.
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
    /// The agent's name, as configured.
    pub name: String,
    /// The agent's kind (its PTMP factory alias), e.g. `"zipper"`.
    pub kind: &'static str,
    /// Named counters in the order the agent added them, e.g. `in`, `out`.
    pub counters: Vec<(String, u64)>,
    /// Free-form lines (per-input statistics and the like).
    pub lines: Vec<String>,
}

impl Report {
    /// An empty report for agent `name` of `kind`.
    pub fn new(name: &str, kind: &'static str) -> Self {
        Report {
            name: name.to_string(),
            kind,
            ..Default::default()
        }
    }
    /// Add counter `key` with value `n` (builder style).
    pub fn count(mut self, key: &str, n: u64) -> Self {
        self.counters.push((key.to_string(), n));
        self
    }
    /// The value of counter `key`, if the agent reported it.
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
    /// The agent's configured name (its thread is named after it).
    fn name(&self) -> &str;
    /// Run until `ctl` says stop or the input is exhausted (a file read to
    /// its end, `number` messages copied), flush, and report.
    fn run(&mut self, ctl: &Ctl) -> Result<Report>;
}
