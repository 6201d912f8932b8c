//! The two merges of time-ordered streams, [`zipper`] and [`sorted`], and
//! what they share: the agent loop ([`MergeAgent`]), the tardy-set policy,
//! and per-stream statistics. They differ only in their release rules, which
//! each core implements as [`Merge`].

pub mod sorted;
pub mod zipper;

use crate::cfg::Cfg;
use crate::error::Result;
use crate::stats::Moments;
use crate::{recv_set, send_set, Agent, Ctl, Got, Report, POLL};
use ptmp::{Receiver, Sender, SocketConfig, TPSet};
use std::time::Duration;

/// What to do with a tardy set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TardyPolicy {
    /// Drop a tardy set (counted).
    Drop,
    /// Send a tardy set at once, out of order (counted).
    Send,
}

impl TardyPolicy {
    pub(crate) fn parse(c: &Cfg) -> Result<TardyPolicy> {
        Ok(match c.choice("tardy_policy", "drop", &["drop", "send"])? {
            "send" => TardyPolicy::Send,
            _ => TardyPolicy::Drop,
        })
    }
}

/// What a merge core did with a set it was given ([`Merge::push`]).
pub enum Pushed {
    /// Held in the queue until the release rules let it go.
    Queued,
    /// Tardy: the set is handed back; `send` says whether the policy wants
    /// it sent now.
    Tardy {
        /// The set itself.
        set: TPSet,
        /// Whether the policy wants it sent now (else it is dropped).
        send: bool,
    },
}

/// Per-stream statistics.
#[derive(Debug, Clone, Default)]
pub struct StreamStats {
    /// The stream's detector id.
    pub detid: u32,
    /// Sets received from the stream.
    pub received: u64,
    /// Sets of the stream sent on.
    pub sent: u64,
    /// Sets that arrived with a `tstart` before one already sent.
    pub tardy: u64,
    /// Ticks behind the last sent tstart, of tardy sets.
    pub tardy_ticks: Moments,
    /// Real time held in the queue, microseconds.
    pub held_us: Moments,
}

/// Per-stream report lines shared by zipper and sorted.
pub(crate) fn stream_lines(streams: &[StreamStats]) -> Vec<String> {
    streams
        .iter()
        .map(|s| {
            format!(
                "detid {}: received {} sent {} tardy {} (ticks late mean {:.0} max {:.0}); held us mean {:.1} max {:.0}",
                s.detid,
                s.received,
                s.sent,
                s.tardy,
                s.tardy_ticks.mean(),
                if s.tardy_ticks.n > 0 { s.tardy_ticks.max } else { 0.0 },
                s.held_us.mean(),
                if s.held_us.n > 0 { s.held_us.max } else { 0.0 },
            )
        })
        .collect()
}

/// A merge core: queues sets and says which to send when.
pub trait Merge: Send {
    /// The agent kind, for reports.
    const KIND: &'static str;
    /// Accept a set received at `now_us`.
    fn push(&mut self, set: TPSet, now_us: i64) -> Pushed;
    /// The next set to send at `now_us`, if any is ready.
    fn pop(&mut self, now_us: i64) -> Option<TPSet>;
    /// The next set that is safe to send while the pipeline stops (see
    /// [`Ctl::hold`]): never one released only because time passed.
    fn pop_held(&mut self, now_us: i64) -> Option<TPSet>;
    /// The next held set regardless of the rules (shutdown flush).
    fn flush_one(&mut self, now_us: i64) -> Option<TPSet>;
    /// When the rules may next release something without new input.
    fn next_due(&self) -> Option<i64>;
    /// Per-stream statistics.
    fn stream_stats(&self) -> Vec<StreamStats>;
}

/// A merge core between an input and an output socket.
pub struct MergeAgent<M: Merge> {
    name: String,
    rx: Receiver,
    tx: Sender,
    core: M,
}

impl<M: Merge> MergeAgent<M> {
    /// The agent around `core`, reading `input` and writing `output`.
    pub fn with_core(
        name: String,
        input: &SocketConfig,
        output: &SocketConfig,
        core: M,
    ) -> Result<Self> {
        let (rx, tx) = crate::open_io(&name, input, output)?;
        Ok(MergeAgent { name, rx, tx, core })
    }
}

#[derive(Default)]
struct Counts {
    nin: u64,
    nout: u64,
    dropped: u64,
    bad: u64,
    unsent: u64,
    flushed: u64,
}

impl<M: Merge> MergeAgent<M> {
    fn send(&mut self, s: &TPSet, ctl: &Ctl, n: &mut Counts) -> Result<()> {
        if send_set(&mut self.tx, s, ctl, &self.name)? {
            n.nout += 1;
        } else {
            n.unsent += 1;
        }
        Ok(())
    }
}

impl<M: Merge> Agent for MergeAgent<M> {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&mut self, ctl: &Ctl) -> Result<Report> {
        // Sets sent are recycled as receive buffers: no allocation per set
        // once the pool has grown.
        let mut pool: Vec<TPSet> = Vec::new();
        let mut scratch = TPSet::default();
        let mut n = Counts::default();
        loop {
            let now = ptmp_data::now_us();
            let hold = ctl.holding();
            loop {
                let next = if hold {
                    self.core.pop_held(now)
                } else {
                    self.core.pop(now)
                };
                let Some(s) = next else { break };
                self.send(&s, ctl, &mut n)?;
                pool.push(s);
            }
            if ctl.done(false) {
                break;
            }
            let wait = match self.core.next_due() {
                Some(d) if !hold => {
                    Duration::from_micros(d.saturating_sub(now).max(0) as u64).min(POLL)
                }
                _ => POLL,
            };
            match recv_set(
                &mut self.rx,
                &mut scratch,
                wait,
                ctl,
                &mut n.bad,
                &self.name,
            )? {
                Got::Set => {}
                Got::Nothing => continue,
                Got::Done => break,
            }
            n.nin += 1;
            let set = std::mem::replace(&mut scratch, pool.pop().unwrap_or_default());
            if let Pushed::Tardy { set, send } = self.core.push(set, ptmp_data::now_us()) {
                if send {
                    self.send(&set, ctl, &mut n)?;
                } else {
                    n.dropped += 1;
                }
                pool.push(set);
            }
        }
        let now = ptmp_data::now_us();
        while let Some(s) = self.core.flush_one(now) {
            self.send(&s, ctl, &mut n)?;
            n.flushed += 1;
        }
        let streams = self.core.stream_stats();
        let tardy: u64 = streams.iter().map(|s| s.tardy).sum();
        let mut r = Report::new(&self.name, M::KIND)
            .count("in", n.nin)
            .count("out", n.nout)
            .count("tardy", tardy)
            .count("tardy_dropped", n.dropped)
            .count("flushed_at_stop", n.flushed)
            .count("unsent_at_stop", n.unsent)
            .count("bad_messages", n.bad);
        r.lines = stream_lines(&streams);
        Ok(r)
    }
}
