//! The two merges of time-ordered streams, [`Zipper`] and [`Sorted`], and
//! what they share: the agent loop ([`MergeAgent`]), the tardy-set policy,
//! and per-stream statistics. They differ in their release rules, which
//! each core implements as [`Merge`], and in how they read their input: the
//! zipper reads one socket with all its endpoints and tells streams apart by
//! `detid`, sorted opens one socket per endpoint, each its own stream (as
//! PTMP's do).

pub(crate) mod sorted;
pub(crate) mod zipper;

pub use sorted::Sorted;
pub use zipper::Zipper;

use crate::cfg::Cfg;
use crate::error::{Error, Result};
use crate::stats::Moments;
use crate::{recv_set, send_set, Agent, Ctl, Got, Report, POLL};
use ptmp::{Receiver, Sender, SocketConfig, TPSet};
use std::sync::mpsc;
use std::thread::JoinHandle;
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
    /// The input socket the stream is read from, for a merge whose streams
    /// are its sockets (sorted); `None` where streams are told apart by
    /// `detid` (zipper).
    pub input: Option<usize>,
    /// The stream's detector id (with `input`, that of its latest set).
    pub detid: u32,
    /// Sets received from the stream.
    pub received: u64,
    /// Sets of the stream sent on.
    pub sent: u64,
    /// Sets that arrived with a `tstart` before one already sent.
    pub tardy: u64,
    /// Tardy sets the core itself dropped (sorted, which judges a set when
    /// it reaches the head of its stream); the zipper hands tardy sets back
    /// to the agent instead ([`Pushed::Tardy`]).
    pub dropped: u64,
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
            let which = match s.input {
                Some(i) => format!("input {i} (detid {})", s.detid),
                None => format!("detid {}", s.detid),
            };
            format!(
                "{which}: received {} sent {} tardy {} (ticks late mean {:.0} max {:.0}); held us mean {:.1} max {:.0}",
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
    /// Accept a set received at `now_us` on input socket `input` (always 0
    /// for a merge reading one socket).
    fn push(&mut self, input: usize, set: TPSet, now_us: i64) -> Pushed;
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

/// A merge core between its input socket(s) and an output socket.
pub struct MergeAgent<M: Merge> {
    name: String,
    inputs: Inputs,
    tx: Sender,
    core: M,
}

/// Where a merge reads: one socket for every stream, or one per stream.
enum Inputs {
    Shared(Box<Receiver>),
    /// Taken by the reader threads when the agent runs.
    PerSocket(Vec<Receiver>),
}

impl<M: Merge> MergeAgent<M> {
    /// The agent around `core`, reading `input` (one socket with all its
    /// endpoints) and writing `output`.
    pub fn with_core(
        name: String,
        input: &SocketConfig,
        output: &SocketConfig,
        core: M,
    ) -> Result<Self> {
        let (rx, tx) = crate::open_io(&name, input, output)?;
        Ok(MergeAgent {
            name,
            inputs: Inputs::Shared(Box::new(rx)),
            tx,
            core,
        })
    }

    /// The agent around `core`, reading one socket per endpoint of `input`
    /// (binds first, then connects, each in the order listed: input `i` of
    /// [`Merge::push`]) and writing `output`.
    pub fn per_socket(
        name: String,
        input: &SocketConfig,
        output: &SocketConfig,
        core: M,
    ) -> Result<Self> {
        let rxs = split_endpoints(input)
            .iter()
            .map(|c| crate::io::open_rx(&name, c))
            .collect::<Result<Vec<_>>>()?;
        let tx = crate::io::open_tx(&name, output)?;
        Ok(MergeAgent {
            name,
            inputs: Inputs::PerSocket(rxs),
            tx,
            core,
        })
    }
}

/// One configuration per endpoint of `c`, binds first, each otherwise as
/// `c` (type, high-water marks ...): PTMP's "one socket per endpoint".
pub fn split_endpoints(c: &SocketConfig) -> Vec<SocketConfig> {
    c.per_endpoint()
}

/// What a reader thread hands the merge.
enum Read {
    Set(usize, TPSet),
    Bad,
    Failed(Error),
}

/// Reader threads, one per input socket, feeding one queue so the merge
/// waits on all its sockets at once and knows which socket each set came
/// from. Dropping it closes the queue and waits for the threads, which end
/// at their next read.
struct Fanin {
    rx: Option<mpsc::Receiver<Read>>,
    threads: Vec<JoinHandle<()>>,
}

/// Sets a reader may have queued ahead of the merge: enough to keep the
/// sockets flowing, small next to the sockets' own high-water marks.
const FANIN_QUEUE: usize = 256;

impl Fanin {
    fn start(rxs: Vec<Receiver>, ctl: &Ctl, name: &str) -> Result<Fanin> {
        let (tx, rx) = mpsc::sync_channel(FANIN_QUEUE);
        let mut threads = Vec::new();
        for (i, sock) in rxs.into_iter().enumerate() {
            let (tx, ctl, agent) = (tx.clone(), ctl.clone(), name.to_string());
            let h = std::thread::Builder::new()
                .name(format!("{name}-in{i}"))
                .spawn(move || read_socket(i, sock, &tx, &ctl, &agent))
                .map_err(|e| Error::run(name, format!("cannot start a reader thread: {e}")))?;
            threads.push(h);
        }
        Ok(Fanin {
            rx: Some(rx),
            threads,
        })
    }

    /// The next set and its input, waiting at most `wait`; `None` after a
    /// timeout, a message that is not a TPSet (counted in `bad`), or the
    /// last reader's end (see [`Fanin::ended`]).
    fn recv(&mut self, wait: Duration, ctl: &Ctl, bad: &mut u64) -> Result<Option<(usize, TPSet)>> {
        let Some(rx) = &self.rx else { return Ok(None) };
        match rx.recv_timeout(wait) {
            Ok(Read::Set(i, set)) => {
                ctl.took_in(Some(&set));
                Ok(Some((i, set)))
            }
            Ok(Read::Bad) => {
                *bad += 1;
                Ok(None)
            }
            Ok(Read::Failed(e)) => Err(e),
            Err(mpsc::RecvTimeoutError::Timeout) => Ok(None),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                self.rx = None;
                Ok(None)
            }
        }
    }

    /// Whether every reader has ended (each does once the agent is
    /// stopped and its socket has gone quiet).
    fn ended(&self) -> bool {
        self.rx.is_none()
    }
}

impl Drop for Fanin {
    fn drop(&mut self) {
        self.rx = None;
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}

/// One reader thread: pass each set of socket `i` on until the agent is
/// stopped and the socket has nothing more (or the drain time is up), or
/// the merge is gone.
fn read_socket(i: usize, mut sock: Receiver, tx: &mpsc::SyncSender<Read>, ctl: &Ctl, agent: &str) {
    let mut set = TPSet::default();
    loop {
        let r = match sock.recv_into(&mut set, Some(POLL)) {
            Ok(true) => Read::Set(i, std::mem::take(&mut set)),
            Ok(false) | Err(ptmp::Error::Interrupted) => {
                if let Err(e) = crate::io::refused_rx(&mut sock, agent) {
                    let _ = tx.send(Read::Failed(e));
                    return;
                }
                if ctl.done(true) {
                    return;
                }
                continue;
            }
            Err(ptmp::Error::Wire(_)) => Read::Bad,
            Err(e) => {
                let _ = tx.send(Read::Failed(Error::socket(agent)(e)));
                return;
            }
        };
        if tx.send(r).is_err() || ctl.done(false) {
            return;
        }
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
        // once the pool has grown (one shared socket; reader threads make
        // their own sets).
        let mut pool: Vec<TPSet> = Vec::new();
        let mut scratch = TPSet::default();
        let mut n = Counts::default();
        let mut fanin = match &mut self.inputs {
            Inputs::PerSocket(rxs) => Some(Fanin::start(std::mem::take(rxs), ctl, &self.name)?),
            Inputs::Shared(_) => None,
        };
        let mut clock = ptmp_data::Clock::new();
        loop {
            let now = clock.now_us();
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
            let (input, set) = match (&mut fanin, &mut self.inputs) {
                (Some(f), _) => {
                    if f.ended() {
                        break;
                    }
                    match f.recv(wait, ctl, &mut n.bad)? {
                        Some(got) => got,
                        None => continue,
                    }
                }
                (None, Inputs::Shared(rx)) => {
                    match recv_set(rx, &mut scratch, wait, ctl, &mut n.bad, &self.name)? {
                        Got::Set => {}
                        Got::Nothing => continue,
                        Got::Done => break,
                    }
                    let fresh = pool.pop().unwrap_or_default();
                    (0, std::mem::replace(&mut scratch, fresh))
                }
                (None, Inputs::PerSocket(_)) => break,
            };
            n.nin += 1;
            if let Pushed::Tardy { set, send } = self.core.push(input, set, clock.now_us()) {
                if send {
                    self.send(&set, ctl, &mut n)?;
                } else {
                    n.dropped += 1;
                }
                pool.push(set);
            }
        }
        // Readers end within one read of the stop; wait for them before the
        // final flush so the sockets close with the agent.
        drop(fanin);
        let now = clock.now_us();
        while let Some(s) = self.core.flush_one(now) {
            self.send(&s, ctl, &mut n)?;
            n.flushed += 1;
        }
        let streams = self.core.stream_stats();
        let tardy: u64 = streams.iter().map(|s| s.tardy).sum();
        let dropped = n.dropped + streams.iter().map(|s| s.dropped).sum::<u64>();
        let mut r = Report::new(&self.name, M::KIND)
            .count("in", n.nin)
            .count("out", n.nout)
            .count("tardy", tardy)
            .count("tardy_dropped", dropped)
            .count("flushed_at_stop", n.flushed)
            .count("unsent_at_stop", n.unsent)
            .count("bad_messages", n.bad);
        r.lines = stream_lines(&streams);
        Ok(r)
    }
}
