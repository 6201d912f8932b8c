//! `sorted` (PTMP's TPSorted, the zipper's predecessor): a head-of-line
//! merge of time-ordered streams.
//!
//! Keys: `input`, `output` (required); `tardy` ms (required, positive);
//! `tardy_policy` "drop" (default) or "send".
//!
//! Semantics (those of PTMP's last TPSorted, which differ from the
//! zipper's): each endpoint of `input` gets a socket of its own, and each
//! socket is one stream, whatever the `detid` of its sets (so two links that
//! carry the same detid still merge as two streams); the streams are
//! numbered binds first, then connects, each in the order listed. Each
//! stream keeps its sets in arrival order. The set at the head of some
//! stream goes out when every stream that is *live* has a head; the
//! smallest `tstart` goes first (ties: the lowest-numbered stream). A stream
//! is live while it has sent something within the last `tardy` ms; a stream
//! never seen is not waited for, and a stream silent for
//! longer than `tardy` stops holding the others back. So where the zipper
//! bounds each set's delay, sorted bounds how long a silent stream can stall
//! the merge. A set whose `tstart` is before the last one sent is tardy:
//! dropped (counted) or sent at once with "send". On stop every held set is
//! flushed in order.

use super::{Merge, MergeAgent, Pushed, StreamStats, TardyPolicy};
use crate::cfg::Cfg;
use crate::error::Result;
use ptmp::{SocketConfig, TPSet};
use std::collections::VecDeque;
use std::time::Duration;

#[derive(Debug, Clone)]
/// A validated sorted configuration (keys in the module docs).
pub struct Config {
    /// The merged streams: one socket, and one stream, per endpoint.
    pub input: SocketConfig,
    /// Socket the ordered stream goes out on.
    pub output: SocketConfig,
    /// Milliseconds of silence after which a stream stops holding the others.
    pub tardy_ms: u64,
    /// What to do with sets that arrive too late.
    pub policy: TardyPolicy,
}

impl Config {
    /// Validate the keys of a sorted's `data`.
    pub fn parse(c: &Cfg) -> Result<Config> {
        Ok(Config {
            input: c.req_socket("input")?,
            output: c.req_socket("output")?,
            tardy_ms: c.req_int("tardy", 1, 3_600_000)? as u64,
            policy: TardyPolicy::parse(c)?,
        })
    }
}

struct Stream {
    q: VecDeque<(TPSet, i64)>,
    /// When the stream last sent something; `None` before its first set.
    last_seen: Option<i64>,
    stats: StreamStats,
}

impl Stream {
    fn new(input: usize) -> Stream {
        Stream {
            q: VecDeque::new(),
            last_seen: None,
            stats: StreamStats {
                input: Some(input),
                ..Default::default()
            },
        }
    }

    /// Whether the merge must wait for this stream at `now_us`: it has no
    /// head, and it sent something within the last `tardy_us`.
    fn stalls(&self, now_us: i64, tardy_us: i64) -> bool {
        self.q.is_empty()
            && self
                .last_seen
                .is_some_and(|t| now_us.saturating_sub(t) <= tardy_us)
    }
}

/// The head-of-line merge core.
pub struct Sorted {
    tardy_us: i64,
    policy: TardyPolicy,
    streams: Vec<Stream>,
    last_out: Option<u64>,
}

impl Sorted {
    /// A merge of `ninputs` streams (one per input socket) in which a
    /// stream silent for `tardy` no longer holds the others back.
    pub fn new(ninputs: usize, tardy: Duration, policy: TardyPolicy) -> Self {
        Sorted {
            tardy_us: i64::try_from(tardy.as_micros()).unwrap_or(i64::MAX),
            policy,
            streams: (0..ninputs).map(Stream::new).collect(),
            last_out: None,
        }
    }

    /// Accept a set received on input `input` at `now_us` (microseconds
    /// since the Unix epoch): queued on that input's stream, or handed back
    /// if tardy.
    pub fn push(&mut self, input: usize, set: TPSet, now_us: i64) -> Pushed {
        while self.streams.len() <= input {
            self.streams.push(Stream::new(self.streams.len()));
        }
        let st = &mut self.streams[input];
        st.last_seen = Some(now_us);
        st.stats.received += 1;
        st.stats.detid = set.detid;
        if let Some(last) = self.last_out {
            if set.tstart < last {
                st.stats.tardy += 1;
                st.stats.tardy_ticks.add((last - set.tstart) as f64);
                let send = self.policy == TardyPolicy::Send;
                if send {
                    st.stats.sent += 1;
                }
                return Pushed::Tardy { set, send };
            }
        }
        st.q.push_back((set, now_us));
        Pushed::Queued
    }

    /// The next set to send, if the merge can go on at `now_us`.
    pub fn pop(&mut self, now_us: i64) -> Option<TPSet> {
        if self.streams.iter().any(|s| s.stalls(now_us, self.tardy_us)) {
            return None;
        }
        self.take(now_us)
    }

    /// [`Sorted::pop`] while the pipeline stops: every input is waited
    /// for, live, silent or never heard from (any may be fed by a stage
    /// still to flush what it holds); the rest goes in order at stop.
    pub fn pop_held(&mut self, now_us: i64) -> Option<TPSet> {
        if self.streams.iter().any(|s| s.q.is_empty()) {
            return None;
        }
        self.take(now_us)
    }

    fn take(&mut self, now_us: i64) -> Option<TPSet> {
        let i = (0..self.streams.len())
            .filter(|&i| !self.streams[i].q.is_empty())
            .min_by_key(|&i| (self.streams[i].q[0].0.tstart, i))?;
        let st = &mut self.streams[i];
        let (set, t) = st.q.pop_front()?;
        st.stats.sent += 1;
        st.stats.held_us.add(now_us.saturating_sub(t) as f64);
        self.last_out = Some(self.last_out.map_or(set.tstart, |l| l.max(set.tstart)));
        Some(set)
    }

    /// Release the next held set regardless of the other streams.
    pub fn flush_one(&mut self, now_us: i64) -> Option<TPSet> {
        self.take(now_us)
    }

    /// When the next silent stream stops being waited for.
    pub fn next_due(&self) -> Option<i64> {
        self.streams
            .iter()
            .filter(|s| s.q.is_empty())
            .filter_map(|s| s.last_seen)
            .map(|t| t.saturating_add(self.tardy_us).saturating_add(1))
            .min()
    }
}

/// The head-of-line merge between its sockets.
pub type SortedAgent = MergeAgent<Sorted>;

impl SortedAgent {
    /// The merge between the sockets of `c`: one input socket, and one
    /// stream, per input endpoint.
    pub fn new(name: String, c: &Config) -> Result<Self> {
        let n = c.input.bind().len() + c.input.connect().len();
        let core = Sorted::new(n, Duration::from_millis(c.tardy_ms), c.policy);
        Self::per_socket(name, &c.input, &c.output, core)
    }
}

impl Merge for Sorted {
    const KIND: &'static str = "sorted";
    fn push(&mut self, input: usize, set: TPSet, now_us: i64) -> Pushed {
        Sorted::push(self, input, set, now_us)
    }
    fn pop(&mut self, now_us: i64) -> Option<TPSet> {
        Sorted::pop(self, now_us)
    }
    fn pop_held(&mut self, now_us: i64) -> Option<TPSet> {
        Sorted::pop_held(self, now_us)
    }
    fn flush_one(&mut self, now_us: i64) -> Option<TPSet> {
        Sorted::flush_one(self, now_us)
    }
    fn next_due(&self) -> Option<i64> {
        Sorted::next_due(self)
    }
    fn stream_stats(&self) -> Vec<StreamStats> {
        self.streams.iter().map(|s| s.stats.clone()).collect()
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

    const MS: i64 = 1000;

    #[test]
    fn merges_heads_and_stops_waiting_for_silent_streams() {
        let mut z = Sorted::new(2, Duration::from_millis(10), TardyPolicy::Drop);
        z.push(0, s(1, 100), 0);
        z.push(0, s(1, 300), 0);
        // Only stream 1 known: nothing to wait for.
        assert_eq!(z.pop(0).map(|x| x.tstart), Some(100));
        z.push(1, s(2, 200), MS);
        // Stream 1 head 300, stream 2 head 200.
        assert_eq!(z.pop(MS).map(|x| x.tstart), Some(200));
        // Stream 2 is now empty but live (seen 1 ms ago): wait.
        assert!(z.pop(2 * MS).is_none());
        assert_eq!(z.next_due(), Some(11 * MS + 1));
        // Silent for more than 10 ms: stop waiting.
        assert_eq!(z.pop(12 * MS).map(|x| x.tstart), Some(300));
        // Stream 2 comes back late: tardy, dropped.
        assert!(matches!(
            z.push(1, s(2, 250), 13 * MS),
            Pushed::Tardy { send: false, .. }
        ));
        let st = Merge::stream_stats(&z);
        assert_eq!((st[1].received, st[1].tardy), (2, 1));
    }

    #[test]
    fn held_merge_waits_for_silent_streams_too() {
        let mut z = Sorted::new(2, Duration::from_millis(10), TardyPolicy::Drop);
        z.push(0, s(1, 100), 0);
        z.push(1, s(2, 50), 0);
        z.push(0, s(1, 300), 0);
        assert_eq!(z.pop_held(0).map(|x| x.tstart), Some(50));
        // Stream 2 silent for an hour: pop stops waiting, pop_held not.
        let hour = 3_600_000 * MS;
        assert!(z.pop_held(hour).is_none());
        z.push(1, s(2, 200), hour);
        let mut v = vec![];
        while let Some(x) = z.pop_held(hour) {
            v.push(x.tstart);
        }
        assert_eq!(v, vec![100, 200]);
        assert_eq!(z.flush_one(hour).map(|x| x.tstart), Some(300));
        // An input never heard from is waited for too: its stage may be
        // about to flush everything it held.
        let mut z = Sorted::new(2, Duration::from_millis(10), TardyPolicy::Drop);
        z.push(0, s(1, 100), 0);
        assert!(z.pop_held(hour).is_none());
        assert_eq!(z.pop(hour).map(|x| x.tstart), Some(100));
    }

    /// PTMP's sorted takes one stream per input socket: two inputs with
    /// the same detid, one 10 ms (500_000 ticks) ahead in data time, merge
    /// into one ordered stream of all their sets, none tardy; at equal
    /// tstart the lower-numbered input goes first.
    #[test]
    fn same_detid_on_two_inputs_merges_everything_in_order() {
        let mut z = Sorted::new(2, Duration::from_millis(1000), TardyPolicy::Drop);
        let (n, ahead) = (2000u64, 500_000u64);
        let mut out = vec![];
        let mut now = 0;
        for i in 0..n {
            // Input 1 is ahead in data time. (Were it heard from before
            // input 0 ever was, its first set would go at once and input
            // 0's first would be tardy, in PTMP as here.)
            for (input, t) in [(0, 1_000_000 + 1000 * i), (1, 1_000_000 + ahead + 1000 * i)] {
                now += 5;
                let mut set = s(7, t);
                set.count = input as u32;
                assert!(matches!(z.push(input, set, now), Pushed::Queued));
                while let Some(x) = z.pop(now) {
                    out.push((x.tstart, x.count));
                }
            }
        }
        // Input 0 stops sending; once it is silent for `tardy`, input 1's
        // remaining sets go.
        now += 1_000_001;
        while let Some(x) = z.pop(now) {
            out.push((x.tstart, x.count));
        }
        assert_eq!(out.len(), 2 * n as usize);
        assert!(
            out.windows(2).all(|w| w[0] <= w[1]),
            "in order, ties by input"
        );
        let ties = out.windows(2).filter(|w| w[0].0 == w[1].0).count();
        assert_eq!(ties, (n - ahead / 1000) as usize);
        let st = Merge::stream_stats(&z);
        assert!(st
            .iter()
            .all(|s| s.tardy == 0 && s.sent == n && s.detid == 7));
        assert_eq!(st[1].input, Some(1));
    }

    /// Ties at equal tstart go by input order, whichever arrived first.
    #[test]
    fn ties_go_by_input_order() {
        let mut z = Sorted::new(3, Duration::from_millis(10), TardyPolicy::Drop);
        for input in [2, 1, 0] {
            let mut set = s(9, 100);
            set.count = input as u32;
            z.push(input, set, 0);
        }
        // Input 0 goes first; then it is empty but live, so the merge waits
        // for it; once every input has been silent for `tardy`, the rest.
        assert_eq!(z.pop(0).map(|x| x.count), Some(0));
        assert!(z.pop(0).is_none());
        let later = 20_000;
        let order: Vec<u32> = std::iter::from_fn(|| z.pop(later))
            .map(|x| x.count)
            .collect();
        assert_eq!(order, vec![1, 2]);
    }

    #[test]
    fn extreme_values_through_sorted() {
        let mut cases = 0;
        for &now in &[i64::MIN, -1, 0, i64::MAX] {
            for &detid in &[0, u32::MAX] {
                cases += 1;
                let mut z = Sorted::new(1, Duration::from_secs(3600), TardyPolicy::Drop);
                for &t in &[0, u64::MAX, 1 << 63, u64::MAX - 1] {
                    z.push(0, s(detid, t), now);
                    while z.pop(now).is_some() {}
                    let _ = z.next_due();
                }
                while z.flush_one(now).is_some() {}
                let st = Merge::stream_stats(&z);
                assert_eq!(st[0].tardy, 2);
            }
        }
        assert_eq!(cases, 8);
    }
}
