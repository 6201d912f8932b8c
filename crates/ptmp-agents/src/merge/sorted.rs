//! `sorted` (PTMP's TPSorted, the zipper's predecessor): a head-of-line
//! merge of time-ordered streams.
//!
//! Keys: `input`, `output` (required); `tardy` ms (required, positive);
//! `tardy_policy` "drop" (default) or "send".
//!
//! Semantics (those of PTMP's last TPSorted, which differ from the
//! zipper's): each stream (told apart by `detid`) keeps its sets in arrival
//! order. The set at the head of some stream goes out when every stream that
//! is *live* has a head; the smallest `tstart` goes first (ties: the stream
//! seen first). A stream is live while it has sent something within the last
//! `tardy` ms; a stream never seen is not waited for, and a stream silent for
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
    /// Socket of the merged streams (one endpoint per stream).
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
    last_seen: i64,
    stats: StreamStats,
}

/// The head-of-line merge core.
pub struct Sorted {
    tardy_us: i64,
    policy: TardyPolicy,
    streams: Vec<Stream>,
    last_out: Option<u64>,
}

impl Sorted {
    /// A merge in which a stream silent for `tardy` no longer holds the
    /// others back.
    pub fn new(tardy: Duration, policy: TardyPolicy) -> Self {
        Sorted {
            tardy_us: i64::try_from(tardy.as_micros()).unwrap_or(i64::MAX),
            policy,
            streams: Vec::new(),
            last_out: None,
        }
    }

    fn slot(&mut self, detid: u32) -> usize {
        if let Some(i) = self.streams.iter().position(|s| s.stats.detid == detid) {
            return i;
        }
        self.streams.push(Stream {
            q: VecDeque::new(),
            last_seen: 0,
            stats: StreamStats {
                detid,
                ..Default::default()
            },
        });
        self.streams.len() - 1
    }

    /// Accept a set received at `now_us` (microseconds since the Unix epoch):
    /// queued on its stream, or handed back if tardy.
    pub fn push(&mut self, set: TPSet, now_us: i64) -> Pushed {
        let i = self.slot(set.detid);
        let st = &mut self.streams[i];
        st.last_seen = now_us;
        st.stats.received += 1;
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
        let waiting = self
            .streams
            .iter()
            .any(|s| s.q.is_empty() && now_us.saturating_sub(s.last_seen) <= self.tardy_us);
        if waiting {
            return None;
        }
        self.take(now_us)
    }

    /// [`Sorted::pop`] while the pipeline stops: every stream seen is
    /// waited for, live or silent (a silent one may be a stage still
    /// flushing upstream); the rest goes in order at stop.
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
            .map(|s| s.last_seen.saturating_add(self.tardy_us).saturating_add(1))
            .min()
    }
}

/// The head-of-line merge between its sockets.
pub type SortedAgent = MergeAgent<Sorted>;

impl SortedAgent {
    /// The merge between the sockets of `c`.
    pub fn new(name: String, c: &Config) -> Result<Self> {
        let core = Sorted::new(Duration::from_millis(c.tardy_ms), c.policy);
        Self::with_core(name, &c.input, &c.output, core)
    }
}

impl Merge for Sorted {
    const KIND: &'static str = "sorted";
    fn push(&mut self, set: TPSet, now_us: i64) -> Pushed {
        Sorted::push(self, set, now_us)
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
        let mut z = Sorted::new(Duration::from_millis(10), TardyPolicy::Drop);
        z.push(s(1, 100), 0);
        z.push(s(1, 300), 0);
        // Only stream 1 known: nothing to wait for.
        assert_eq!(z.pop(0).map(|x| x.tstart), Some(100));
        z.push(s(2, 200), MS);
        // Stream 1 head 300, stream 2 head 200.
        assert_eq!(z.pop(MS).map(|x| x.tstart), Some(200));
        // Stream 2 is now empty but live (seen 1 ms ago): wait.
        assert!(z.pop(2 * MS).is_none());
        assert_eq!(z.next_due(), Some(11 * MS + 1));
        // Silent for more than 10 ms: stop waiting.
        assert_eq!(z.pop(12 * MS).map(|x| x.tstart), Some(300));
        // Stream 2 comes back late: tardy, dropped.
        assert!(matches!(
            z.push(s(2, 250), 13 * MS),
            Pushed::Tardy { send: false, .. }
        ));
        let st = Merge::stream_stats(&z);
        assert_eq!((st[1].received, st[1].tardy), (2, 1));
    }

    #[test]
    fn held_merge_waits_for_silent_streams_too() {
        let mut z = Sorted::new(Duration::from_millis(10), TardyPolicy::Drop);
        z.push(s(1, 100), 0);
        z.push(s(2, 50), 0);
        z.push(s(1, 300), 0);
        assert_eq!(z.pop_held(0).map(|x| x.tstart), Some(50));
        // Stream 2 silent for an hour: pop stops waiting, pop_held not.
        let hour = 3_600_000 * MS;
        assert!(z.pop_held(hour).is_none());
        z.push(s(2, 200), hour);
        let mut v = vec![];
        while let Some(x) = z.pop_held(hour) {
            v.push(x.tstart);
        }
        assert_eq!(v, vec![100, 200]);
        assert_eq!(z.flush_one(hour).map(|x| x.tstart), Some(300));
    }

    #[test]
    fn extreme_values_through_sorted() {
        let mut cases = 0;
        for &now in &[i64::MIN, -1, 0, i64::MAX] {
            for &detid in &[0, u32::MAX] {
                cases += 1;
                let mut z = Sorted::new(Duration::from_secs(3600), TardyPolicy::Drop);
                for &t in &[0, u64::MAX, 1 << 63, u64::MAX - 1] {
                    z.push(s(detid, t), now);
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
