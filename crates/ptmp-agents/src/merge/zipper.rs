//! `zipper` (PTMP's TPZipper): merges N time-ordered TPSet streams into one
//! stream ordered by `tstart`, with a bound on the real-time latency it adds.
//!
//! Keys: `input` (required; its endpoints count the streams, N), `output`
//! (required), `streams` (at least this many streams, for an input whose
//! one endpoint several senders reach; the graph planner sets it), `sync_time` ms (default 10, at least 1; PTMP's old name
//! `tardy` is accepted and, as in PTMP, wins when both are given),
//! `tardy_policy` "drop" (default) or "send".
//!
//! Streams are told apart by `detid`, as in PTMP. Each set received gets an
//! *overdue* time, receive time + `sync_time`, and waits in a queue ordered
//! by (`tstart`, arrival). A queued set goes out
//! * early, when it has the smallest `tstart` and every other stream has a
//!   set queued (then nothing earlier can still come), or
//! * when a set in the queue is overdue: that set goes out after *sweeping*
//!   every queued set with a smaller or equal `tstart` ahead of it.
//!
//! A set arriving with a `tstart` before one already sent is *tardy*:
//! dropped by default, or sent at once (out of order) with "send"; either way
//! it is counted, per stream. Sets are otherwise sent unaltered. On stop the
//! queue is flushed in order (PTMP dropped it). Per stream the agent reports sets received,
//! tardy, how late the tardy ones were in data time (ticks behind the last
//! sent `tstart`), and how long sets were held in real time (microseconds).

use super::{Merge, MergeAgent, Pushed, StreamStats, TardyPolicy};
use crate::cfg::Cfg;
use crate::error::Result;
use ptmp::{SocketConfig, TPSet};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

#[derive(Debug, Clone)]
/// A validated zipper configuration (keys in the module docs).
pub struct Config {
    /// Socket of the merged streams; its endpoints count the streams.
    pub input: SocketConfig,
    /// Socket the ordered stream goes out on.
    pub output: SocketConfig,
    /// Milliseconds a set may wait for the other streams (`sync_time`).
    pub sync_ms: u64,
    /// What to do with sets that arrive too late.
    pub policy: TardyPolicy,
    /// Streams to expect at least (`streams`), beyond the input's endpoints.
    pub streams: usize,
}

impl Config {
    /// Validate the keys of a zipper's `data`.
    pub fn parse(c: &Cfg) -> Result<Config> {
        let input = c.req_socket("input")?;
        let output = c.req_socket("output")?;
        // PTMP reads the old name first: given both, `tardy` wins. Some
        // generated configurations carry both, so both are accepted; only
        // values that disagree earn a warning, as one of them is ignored.
        let sync = match (
            c.int_in("sync_time", 1, 3_600_000)?,
            c.int_in("tardy", 1, 3_600_000)?,
        ) {
            (Some(s), Some(t)) => {
                if s != t {
                    eprintln!(
                        "warning: agent {}: tardy = {t} and sync_time = {s}: tardy is the old \
                         name of sync_time and wins, as in PTMP; sync_time is ignored",
                        c.agent
                    );
                }
                t
            }
            (Some(s), None) | (None, Some(s)) => s,
            (None, None) => 10,
        };
        Ok(Config {
            input,
            output,
            sync_ms: sync as u64,
            policy: TardyPolicy::parse(c)?,
            streams: c.int_in("streams", 1, 4096)?.unwrap_or(1) as usize,
        })
    }
}

struct Item {
    tstart: u64,
    seq: u64,
    slot: usize,
    recv_us: i64,
    set: TPSet,
}

impl PartialEq for Item {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Item {}
impl PartialOrd for Item {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Item {
    // Reversed: BinaryHeap is a max-heap and we want the smallest first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.tstart, o.seq).cmp(&(self.tstart, self.seq))
    }
}

/// The zipper's queue and release rules, fed with a clock.
pub struct Zipper {
    sync_us: i64,
    policy: TardyPolicy,
    nstreams: usize,
    detids: Vec<u32>,
    streams: Vec<StreamStats>,
    queued: Vec<usize>,
    with_data: usize,
    heap: BinaryHeap<Item>,
    due: VecDeque<(i64, u64)>,
    bound: Option<u64>,
    last_out: Option<u64>,
    seq: u64,
}

impl Zipper {
    /// `nstreams`: how many input streams to expect.
    pub fn new(nstreams: usize, sync: Duration, policy: TardyPolicy) -> Self {
        Zipper {
            sync_us: i64::try_from(sync.as_micros()).unwrap_or(i64::MAX),
            policy,
            nstreams: nstreams.max(1),
            detids: Vec::new(),
            streams: Vec::new(),
            queued: Vec::new(),
            with_data: 0,
            heap: BinaryHeap::new(),
            due: VecDeque::new(),
            bound: None,
            last_out: None,
            seq: 0,
        }
    }

    fn slot(&mut self, detid: u32) -> usize {
        if let Some(i) = self.detids.iter().position(|d| *d == detid) {
            return i;
        }
        self.detids.push(detid);
        self.streams.push(StreamStats {
            detid,
            ..Default::default()
        });
        self.queued.push(0);
        self.detids.len() - 1
    }

    /// Accept a set received at `now_us`.
    pub fn push(&mut self, set: TPSet, now_us: i64) -> Pushed {
        let slot = self.slot(set.detid);
        let st = &mut self.streams[slot];
        st.received += 1;
        if let Some(last) = self.last_out {
            if set.tstart < last {
                st.tardy += 1;
                st.tardy_ticks.add((last - set.tstart) as f64);
                let send = self.policy == TardyPolicy::Send;
                if send {
                    st.sent += 1;
                }
                return Pushed::Tardy { set, send };
            }
        }
        if self.queued[slot] == 0 {
            self.with_data += 1;
        }
        self.queued[slot] += 1;
        self.seq += 1;
        self.due
            .push_back((now_us.saturating_add(self.sync_us), set.tstart));
        self.heap.push(Item {
            tstart: set.tstart,
            seq: self.seq,
            slot,
            recv_us: now_us,
            set,
        });
        Pushed::Queued
    }

    fn take_top(&mut self, now_us: i64) -> Option<TPSet> {
        let it = self.heap.pop()?;
        self.queued[it.slot] -= 1;
        if self.queued[it.slot] == 0 {
            self.with_data -= 1;
        }
        self.last_out = Some(self.last_out.map_or(it.tstart, |l| l.max(it.tstart)));
        let st = &mut self.streams[it.slot];
        st.sent += 1;
        st.held_us.add(now_us.saturating_sub(it.recv_us) as f64);
        Some(it.set)
    }

    /// The next set to send at `now_us`, if any is ready.
    pub fn pop(&mut self, now_us: i64) -> Option<TPSet> {
        while let Some(&(due, ts)) = self.due.front() {
            if due > now_us {
                break;
            }
            self.bound = Some(self.bound.map_or(ts, |b| b.max(ts)));
            self.due.pop_front();
        }
        self.pop_held(now_us)
    }

    /// [`Zipper::pop`] without the timeout: while the pipeline stops, a
    /// set goes only when every stream has one queued (or an earlier
    /// overdue set already swept past it), so a stream whose upstream is
    /// still flushing is waited for; the rest goes in order at stop.
    pub fn pop_held(&mut self, now_us: i64) -> Option<TPSet> {
        let top = self.heap.peek()?.tstart;
        let swept = self.bound.is_some_and(|b| top <= b);
        let all = self.with_data >= self.nstreams.max(self.detids.len());
        if swept || all {
            self.take_top(now_us)
        } else {
            None
        }
    }

    /// Release the next queued set regardless of time (shutdown flush).
    pub fn flush_one(&mut self, now_us: i64) -> Option<TPSet> {
        self.take_top(now_us)
    }

    /// When the earliest queued set becomes overdue, if any.
    pub fn next_due(&self) -> Option<i64> {
        self.due.front().map(|d| d.0)
    }

    /// Sets waiting in the queue.
    pub fn queued(&self) -> usize {
        self.heap.len()
    }

    /// Per-stream statistics, in the order the streams were first seen.
    pub fn streams(&self) -> &[StreamStats] {
        &self.streams
    }
}

/// The zipper between its sockets.
pub(crate) type ZipperAgent = MergeAgent<Zipper>;

impl ZipperAgent {
    /// The zipper between the sockets of `c`; the input's endpoints give the
    /// number of streams.
    pub fn new(name: String, c: &Config) -> Result<Self> {
        let n = (c.input.bind().len() + c.input.connect().len()).max(c.streams);
        let core = Zipper::new(n, Duration::from_millis(c.sync_ms), c.policy);
        Self::with_core(name, &c.input, &c.output, core)
    }
}

impl Merge for Zipper {
    const KIND: &'static str = "zipper";
    fn push(&mut self, _input: usize, set: TPSet, now_us: i64) -> Pushed {
        Zipper::push(self, set, now_us)
    }
    fn pop(&mut self, now_us: i64) -> Option<TPSet> {
        Zipper::pop(self, now_us)
    }
    fn pop_held(&mut self, now_us: i64) -> Option<TPSet> {
        Zipper::pop_held(self, now_us)
    }
    fn flush_one(&mut self, now_us: i64) -> Option<TPSet> {
        Zipper::flush_one(self, now_us)
    }
    fn next_due(&self) -> Option<i64> {
        Zipper::next_due(self)
    }
    fn stream_stats(&self) -> Vec<StreamStats> {
        self.streams.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(detid: u32, tstart: u64) -> TPSet {
        TPSet {
            detid,
            tstart,
            ..Default::default()
        }
    }

    fn drain(z: &mut Zipper, now: i64) -> Vec<(u32, u64)> {
        let mut v = Vec::new();
        while let Some(x) = z.pop(now) {
            v.push((x.detid, x.tstart));
        }
        v
    }

    const MS: i64 = 1000;

    #[test]
    fn interleaved_inputs_go_out_in_tstart_order_early() {
        let mut z = Zipper::new(2, Duration::from_millis(10), TardyPolicy::Drop);
        assert!(matches!(z.push(s(1, 100), 0), Pushed::Queued));
        assert!(matches!(z.push(s(1, 300), 0), Pushed::Queued));
        // Only stream 1 has data and nothing is overdue: hold.
        assert!(drain(&mut z, 1).is_empty());
        z.push(s(2, 200), 2);
        // Both streams have data: 100 goes; then stream 1 still has 300 and
        // stream 2 has 200, so 200 goes; then only stream 1 has data.
        assert_eq!(drain(&mut z, 3), vec![(1, 100), (2, 200)]);
        z.push(s(2, 400), 4);
        assert_eq!(drain(&mut z, 5), vec![(1, 300)]);
        assert_eq!(z.queued(), 1);
    }

    #[test]
    fn overdue_set_sweeps_smaller_ones_and_later_arrivals_are_tardy() {
        let mut z = Zipper::new(3, Duration::from_millis(10), TardyPolicy::Drop);
        z.push(s(1, 500), 0);
        z.push(s(2, 300), 5 * MS);
        // Stream 3 never reports. Before 10 ms nothing is overdue.
        assert!(drain(&mut z, 9 * MS).is_empty());
        assert_eq!(z.next_due(), Some(10 * MS));
        // At 10 ms the 500 set is overdue: it goes out after sweeping 300.
        assert_eq!(drain(&mut z, 10 * MS), vec![(2, 300), (1, 500)]);
        // A set from stream 3 before 500 is now tardy and dropped; one equal
        // to the last sent tstart is not tardy.
        match z.push(s(3, 400), 11 * MS) {
            Pushed::Tardy { send, set } => {
                assert!(!send);
                assert_eq!(set.tstart, 400);
            }
            Pushed::Queued => panic!("expected tardy"),
        }
        assert!(matches!(z.push(s(3, 500), 11 * MS), Pushed::Queued));
        let st3 = &z.streams()[2];
        assert_eq!((st3.detid, st3.received, st3.tardy), (3, 2, 1));
        assert_eq!(st3.tardy_ticks.max, 100.0);
    }

    #[test]
    fn tardy_policy_send_hands_the_set_back_for_sending() {
        let mut z = Zipper::new(1, Duration::from_millis(0), TardyPolicy::Send);
        z.push(s(1, 100), 0);
        assert_eq!(drain(&mut z, 0), vec![(1, 100)]);
        match z.push(s(1, 50), 1) {
            Pushed::Tardy { send, .. } => assert!(send),
            Pushed::Queued => panic!("expected tardy"),
        }
        assert_eq!(z.streams()[0].sent, 2);
    }

    #[test]
    fn held_time_is_bounded_by_sync_time() {
        let mut z = Zipper::new(2, Duration::from_millis(10), TardyPolicy::Drop);
        // Only one stream ever reports: each set waits exactly sync_time.
        for i in 0..5 {
            z.push(s(1, 100 + i), i as i64 * MS);
        }
        let mut out = vec![];
        for t in 0..30 {
            out.extend(drain(&mut z, t * MS));
        }
        assert_eq!(out.len(), 5);
        let h = &z.streams()[0].held_us;
        assert_eq!((h.min, h.max), (10.0 * MS as f64, 10.0 * MS as f64));
    }

    #[test]
    fn flush_releases_everything_in_order() {
        let mut z = Zipper::new(4, Duration::from_millis(1000), TardyPolicy::Drop);
        for (d, t) in [(1, 30), (2, 10), (1, 40), (3, 20)] {
            z.push(s(d, t), 0);
        }
        let mut v = vec![];
        while let Some(x) = z.flush_one(0) {
            v.push(x.tstart);
        }
        assert_eq!(v, vec![10, 20, 30, 40]);
    }

    /// While the pipeline stops, time does not release a set: one stream's
    /// flushed sets wait for the other stream's, then all go in order.
    #[test]
    fn held_merge_waits_for_every_stream_then_goes_in_order() {
        let mut z = Zipper::new(2, Duration::from_millis(10), TardyPolicy::Drop);
        for t in [100, 200, 300] {
            z.push(s(1, t), 0);
        }
        // An hour later, still nothing is released while holding; pop would
        // release all three by timeout.
        let hour = 3_600_000 * MS;
        assert!(z.pop_held(hour).is_none());
        for t in [150, 250] {
            assert!(matches!(z.push(s(2, t), hour), Pushed::Queued));
        }
        let mut v = vec![];
        while let Some(x) = z.pop_held(hour) {
            v.push(x.tstart);
        }
        // 300 waits: stream 2 may still send something before it.
        assert_eq!(v, vec![100, 150, 200, 250]);
        while let Some(x) = z.flush_one(hour) {
            v.push(x.tstart);
        }
        assert_eq!(v, vec![100, 150, 200, 250, 300]);
        assert!(z.streams().iter().all(|s| s.tardy == 0));
    }

    /// PTMP accepts `tardy` and `sync_time` together, `tardy` winning.
    #[test]
    fn tardy_and_sync_time_together_are_accepted_tardy_wins() {
        let sock = serde_json::json!({"socket": {"type": "PULL", "bind": ["inproc://x"]}});
        let parse = |extra: serde_json::Value| {
            let mut d = serde_json::json!({"input": sock, "output": sock});
            for (k, v) in extra.as_object().unwrap() {
                d[k] = v.clone();
            }
            Config::parse(&Cfg::new("z", &d).unwrap()).map(|c| c.sync_ms)
        };
        let both = serde_json::json!({"tardy": 100, "sync_time": 250_000});
        assert_eq!(parse(both).unwrap(), 100);
        let same = serde_json::json!({"tardy": 20, "sync_time": 20});
        assert_eq!(parse(same).unwrap(), 20);
        assert_eq!(parse(serde_json::json!({"sync_time": 30})).unwrap(), 30);
        assert_eq!(parse(serde_json::json!({"tardy": 40})).unwrap(), 40);
        assert_eq!(parse(serde_json::json!({})).unwrap(), 10);
    }

    /// Extreme tstarts, detids and clocks: no overflow, order kept, tardy
    /// counted with the exact distance.
    #[test]
    fn extreme_values_through_the_zipper() {
        let ticks = [0, 1, u64::MAX - 1, u64::MAX, 1 << 63];
        let clocks = [i64::MIN, -1, 0, 1, i64::MAX - 1, i64::MAX];
        let mut cases = 0;
        for &now in &clocks {
            for &detid in &[0, 1, u32::MAX] {
                for policy in [TardyPolicy::Drop, TardyPolicy::Send] {
                    cases += 1;
                    let mut z = Zipper::new(2, Duration::from_secs(3600), policy);
                    for &t in &ticks {
                        z.push(s(detid, t), now);
                        z.push(s(detid ^ 1, t), now);
                        while z.pop(now).is_some() {}
                        let _ = z.pop_held(now);
                    }
                    let mut last = 0;
                    while let Some(x) = z.flush_one(now) {
                        assert!(x.tstart >= last);
                        last = x.tstart;
                    }
                    let st = z.streams();
                    // 1 << 63 after u64::MAX: tardy by 2^63 - 1 ticks.
                    assert_eq!(st[0].tardy, 1);
                    assert_eq!(st[0].tardy_ticks.max, ((1u64 << 63) - 1) as f64);
                }
            }
        }
        assert_eq!(cases, 36);
    }
}
