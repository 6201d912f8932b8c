//! `sorted` (PTMP's TPSorted, the zipper's predecessor): a head-of-line
//! merge of time-ordered streams.
//!
//! Keys: `input`, `output` (required); `tardy` ms (required, positive);
//! `tardy_policy` "drop" (default) or "send".
//!
//! Semantics (those of PTMP's last TPSorted, rule for rule; they differ from
//! the zipper's): each endpoint of `input` gets a socket of its own, and
//! each socket is one stream, whatever the `detid` of its sets (so two links
//! that carry the same detid still merge as two streams); the streams are
//! numbered binds first, then connects, each in the order listed. Sets wait
//! in their stream's queue (PTMP leaves them in the socket); each stream has
//! at most one *head*, the set it offers to the merge. The merge goes in
//! steps; a step at time `now`
//! 1. gives every stream without a head its next queued set. A set whose
//!    `tstart` is before the last one sent is *tardy*: dropped (counted), or
//!    with "send" it becomes the head all the same. A stream is *seen* at the
//!    step that gave it a head;
//! 2. if some stream still has no head but was seen within `tardy` ms
//!    (whole milliseconds, as PTMP counts them), the merge *sleeps*: for
//!    `tardy` less the time since that stream was seen (at least 1 ms, and
//!    `tardy` when every stream is such), whatever arrives meanwhile. A
//!    stream never seen, or silent for longer, is not waited for;
//! 3. else the head with the smallest `tstart` goes out (ties: the
//!    lowest-numbered stream), and the next step follows at once; with no
//!    head at all the merge sleeps `tardy`.
//!
//! So the merge runs about `tardy` behind its inputs, in bursts: any stream
//! that starts, or falls behind the others, by less than `tardy` loses
//! nothing, and a merge of links paced in real time is their exact
//! time-ordered merge. (The first step, before anything arrived, sleeps
//! `tardy`: links that start within `tardy` of the first are all waited
//! for.) While the pipeline stops ([`crate::Ctl::hold`]) nothing sleeps and a
//! head goes only when every stream has one; on stop every held set is
//! flushed in order (PTMP dropped them). Unlike PTMP, a `tstart` of 2^63 or
//! more is merged like any other (PTMP never sent such a set and so stalled
//! its stream).

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
    /// Milliseconds a seen stream is waited for.
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
    /// Sets received, not yet offered (PTMP leaves them in the socket).
    q: VecDeque<(TPSet, i64)>,
    /// The set offered to the merge, with its receive time.
    head: Option<(TPSet, i64)>,
    /// When the stream last got a head; `None` before its first.
    seen: Option<i64>,
    stats: StreamStats,
}

impl Stream {
    fn new(input: usize) -> Stream {
        Stream {
            q: VecDeque::new(),
            head: None,
            seen: None,
            stats: StreamStats {
                input: Some(input),
                ..Default::default()
            },
        }
    }
}

/// The head-of-line merge core (the rules are in the module docs).
pub struct Sorted {
    tardy_ms: i64,
    policy: TardyPolicy,
    streams: Vec<Stream>,
    last_out: Option<u64>,
    /// The merge sleeps until then (PTMP's wait on its control pipe).
    asleep_until: Option<i64>,
    /// PTMP's `wait_time_ms`: kept from step to step, reset by a send.
    wait_ms: i64,
}

impl Sorted {
    /// A merge of `ninputs` streams (one per input socket) that waits
    /// `tardy` for a stream it has seen.
    pub fn new(ninputs: usize, tardy: Duration, policy: TardyPolicy) -> Self {
        Sorted {
            tardy_ms: i64::try_from(tardy.as_millis()).unwrap_or(i64::MAX / 1000),
            policy,
            streams: (0..ninputs).map(Stream::new).collect(),
            last_out: None,
            asleep_until: None,
            wait_ms: 0,
        }
    }

    /// Accept a set received on input `input` at `now_us` (microseconds
    /// since the Unix epoch): it is queued on that input's stream; whether
    /// it is tardy is decided when it becomes the stream's head.
    pub fn push(&mut self, input: usize, set: TPSet, now_us: i64) -> Pushed {
        while self.streams.len() <= input {
            self.streams.push(Stream::new(self.streams.len()));
        }
        let st = &mut self.streams[input];
        st.stats.received += 1;
        st.stats.detid = set.detid;
        st.q.push_back((set, now_us));
        Pushed::Queued
    }

    /// Step 1 for stream `i`: give it its next queued set as head, unless
    /// it has one. True when it has a head now.
    fn offer(&mut self, i: usize, now_us: i64) -> bool {
        let last = self.last_out;
        let policy = self.policy;
        let st = &mut self.streams[i];
        if st.head.is_some() {
            return true;
        }
        let Some((set, t)) = st.q.pop_front() else {
            return false;
        };
        if let Some(last) = last.filter(|&l| set.tstart < l) {
            st.stats.tardy += 1;
            st.stats.tardy_ticks.add((last - set.tstart) as f64);
            if policy == TardyPolicy::Drop {
                st.stats.dropped += 1;
                return false;
            }
        }
        st.head = Some((set, t));
        st.seen = Some(now_us);
        true
    }

    /// One step of the merge at `now_us` (module docs): the set to send,
    /// or `None` (then the merge may have gone to sleep).
    pub fn pop(&mut self, now_us: i64) -> Option<TPSet> {
        if self.asleep_until.is_some_and(|t| now_us < t) {
            return None;
        }
        self.asleep_until = None;
        let n = self.streams.len();
        let mut nwait = 0;
        for i in 0..n {
            if self.offer(i, now_us) {
                continue;
            }
            let Some(seen) = self.streams[i].seen else {
                continue;
            };
            let since_ms = now_us.saturating_sub(seen) / 1000;
            let needed = self.tardy_ms.saturating_sub(since_ms);
            if (0..=self.tardy_ms).contains(&needed) {
                self.wait_ms = self.wait_ms.max(needed);
                nwait += 1;
            }
        }
        if nwait > 0 {
            self.wait_ms = if nwait == n {
                self.tardy_ms
            } else {
                self.wait_ms.min(self.tardy_ms).max(1)
            };
            return self.sleep(now_us);
        }
        match self.take(now_us) {
            Some(s) => {
                self.wait_ms = 0;
                Some(s)
            }
            None => {
                self.wait_ms = self.tardy_ms;
                self.sleep(now_us)
            }
        }
    }

    fn sleep(&mut self, now_us: i64) -> Option<TPSet> {
        self.asleep_until = Some(now_us.saturating_add(self.wait_ms.saturating_mul(1000)));
        None
    }

    /// [`Sorted::pop`] while the pipeline stops: no sleeping, and a head
    /// goes only when every stream, live, silent or never heard from, has
    /// one (any may be fed by a stage still to flush what it holds); the
    /// rest goes in order at stop.
    pub fn pop_held(&mut self, now_us: i64) -> Option<TPSet> {
        let mut all = true;
        for i in 0..self.streams.len() {
            // A tardy set dropped here lets the next one be offered.
            while !self.offer(i, now_us) {
                if self.streams[i].q.is_empty() {
                    all = false;
                    break;
                }
            }
        }
        if !all {
            return None;
        }
        self.take(now_us)
    }

    /// Send the smallest head (ties: the lowest-numbered stream).
    fn take(&mut self, now_us: i64) -> Option<TPSet> {
        let i = (0..self.streams.len())
            .filter_map(|i| self.streams[i].head.as_ref().map(|h| (h.0.tstart, i)))
            .min()?
            .1;
        let st = &mut self.streams[i];
        let (set, t) = st.head.take()?;
        st.stats.sent += 1;
        st.stats.held_us.add(now_us.saturating_sub(t) as f64);
        self.last_out = Some(set.tstart);
        Some(set)
    }

    /// Release the next held set regardless of the other streams.
    pub fn flush_one(&mut self, now_us: i64) -> Option<TPSet> {
        for i in 0..self.streams.len() {
            while !self.offer(i, now_us) && !self.streams[i].q.is_empty() {}
        }
        self.take(now_us)
    }

    /// When the merge wakes from its sleep.
    pub fn next_due(&self) -> Option<i64> {
        self.asleep_until
    }
}

/// The head-of-line merge between its sockets.
pub(crate) type SortedAgent = MergeAgent<Sorted>;

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

    fn drain(z: &mut Sorted, now: i64) -> Vec<u64> {
        std::iter::from_fn(|| z.pop(now))
            .map(|x| x.tstart)
            .collect()
    }

    /// The first step sleeps `tardy`: a stream that starts later, but
    /// within `tardy`, loses nothing, even with smaller tstarts.
    #[test]
    fn first_step_sleeps_so_late_starters_are_merged() {
        let mut z = Sorted::new(2, Duration::from_millis(10), TardyPolicy::Drop);
        assert!(z.pop(0).is_none());
        assert_eq!(z.next_due(), Some(10 * MS));
        z.push(0, s(1, 300), MS);
        z.push(0, s(1, 400), MS);
        assert!(z.pop(MS).is_none(), "asleep");
        z.push(1, s(2, 100), 9 * MS);
        // Stream 1's head goes; stream 0's (300) waits for stream 1.
        assert_eq!(drain(&mut z, 10 * MS), vec![100]);
        // Stream 1 is empty and got its head 0 ms ago: sleep 10 ms,
        // whatever arrives meanwhile.
        assert_eq!(z.next_due(), Some(20 * MS));
        z.push(1, s(2, 350), 11 * MS);
        assert!(z.pop(11 * MS).is_none());
        assert_eq!(drain(&mut z, 20 * MS), vec![300, 350]);
        // Stream 1 (head at 20 ms) is still waited for at 30 ms; PTMP keeps
        // its last wait (10 ms) until it sends, so it sleeps 10 ms more.
        assert!(z.pop(30 * MS).is_none());
        assert_eq!(z.next_due(), Some(40 * MS));
        assert_eq!(drain(&mut z, 40 * MS), vec![400]);
    }

    /// The old rule (go on as soon as every stream heard from has a head)
    /// sent stream 0's sets before stream 1 was first heard from, so
    /// stream 1's first sets were tardy.
    #[test]
    fn a_stream_heard_from_first_does_not_run_ahead() {
        let mut z = Sorted::new(2, Duration::from_millis(100), TardyPolicy::Drop);
        let mut out = vec![];
        // Stream 0 from 1 ms, stream 1 from 40 ms, both one set per ms of
        // the same data time.
        for ms in 0..400i64 {
            let now = ms * MS;
            if ms >= 1 {
                z.push(0, s(1, (ms - 1) as u64), now);
            }
            if ms >= 40 {
                z.push(1, s(2, (ms - 40) as u64), now);
            }
            out.extend(drain(&mut z, now));
        }
        out.extend(std::iter::from_fn(|| z.flush_one(400 * MS)).map(|x| x.tstart));
        assert_eq!(out.len(), 399 + 360);
        assert!(out.windows(2).all(|w| w[0] <= w[1]));
        let st = Merge::stream_stats(&z);
        assert_eq!((st[0].tardy, st[1].tardy), (0, 0));
    }

    /// A stream silent for longer than `tardy` is no longer waited for; its
    /// later sets before the last sent are tardy, dropped when they reach
    /// the head; a never-seen stream is not waited for.
    #[test]
    fn silent_streams_stop_holding_the_merge_and_come_back_tardy() {
        let mut z = Sorted::new(3, Duration::from_millis(10), TardyPolicy::Drop);
        assert!(z.pop(0).is_none());
        z.push(0, s(1, 100), MS);
        z.push(1, s(2, 200), MS);
        z.push(0, s(1, 300), MS);
        // Stream 2 never heard from: not waited for.
        assert_eq!(drain(&mut z, 10 * MS), vec![100, 200]);
        // Stream 1 seen at 10 ms, empty: asleep until 20 ms.
        assert_eq!(z.next_due(), Some(20 * MS));
        assert!(z.pop(20 * MS).is_none(), "seen 10 ms ago: still waited for");
        // 11 ms later it is no longer waited for (whole milliseconds).
        assert_eq!(drain(&mut z, 31 * MS), vec![300]);
        z.push(1, s(2, 250), 32 * MS);
        z.push(1, s(2, 350), 32 * MS);
        // One set per stream per step: the tardy 250 is dropped, and with
        // nothing to send the merge sleeps `tardy` before offering 350.
        assert!(drain(&mut z, 100 * MS).is_empty());
        assert_eq!(z.next_due(), Some(110 * MS));
        assert_eq!(drain(&mut z, 110 * MS), vec![350]);
        let st = Merge::stream_stats(&z);
        assert_eq!((st[1].received, st[1].tardy, st[1].dropped), (3, 1, 1));
        // With "send" a tardy head goes out by tstart like any other.
        let mut z = Sorted::new(1, Duration::from_millis(10), TardyPolicy::Send);
        z.push(0, s(1, 100), 0);
        z.push(0, s(1, 50), 0);
        assert_eq!(drain(&mut z, 10 * MS), vec![100, 50]);
        assert_eq!(Merge::stream_stats(&z)[0].tardy, 1);
    }

    #[test]
    fn held_merge_waits_for_every_stream_and_never_sleeps() {
        let mut z = Sorted::new(2, Duration::from_millis(10), TardyPolicy::Drop);
        z.push(0, s(1, 100), 0);
        z.push(1, s(2, 50), 0);
        z.push(0, s(1, 300), 0);
        assert_eq!(z.pop_held(0).map(|x| x.tstart), Some(50));
        let hour = 3_600_000 * MS;
        assert!(z.pop_held(hour).is_none());
        z.push(1, s(2, 200), hour);
        let v: Vec<u64> = std::iter::from_fn(|| z.pop_held(hour))
            .map(|x| x.tstart)
            .collect();
        assert_eq!(v, vec![100, 200]);
        assert_eq!(z.flush_one(hour).map(|x| x.tstart), Some(300));
        assert!(z.flush_one(hour).is_none());
    }

    /// Two inputs with the same detid are two streams; at equal tstart the
    /// lower-numbered input goes first, whichever arrived first.
    #[test]
    fn streams_are_sockets_and_ties_go_by_input_order() {
        let mut z = Sorted::new(3, Duration::from_millis(10), TardyPolicy::Drop);
        for input in [2, 1, 0] {
            let mut set = s(9, 100);
            set.count = input as u32;
            z.push(input, set, 0);
        }
        let order: Vec<u32> = std::iter::from_fn(|| z.pop(10 * MS))
            .map(|x| x.count)
            .collect();
        assert_eq!(order, vec![0]);
        let order: Vec<u32> = std::iter::from_fn(|| z.pop(100 * MS))
            .map(|x| x.count)
            .collect();
        assert_eq!(order, vec![1, 2]);
        let st = Merge::stream_stats(&z);
        assert!(st
            .iter()
            .all(|s| s.tardy == 0 && s.sent == 1 && s.detid == 9));
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
                assert_eq!(st[0].sent + st[0].tardy, 4);
            }
        }
        assert_eq!(cases, 8);
    }
}
