//! A reader's wait for its next message (invariant 6): spinning, then
//! sleeping on the channel's futex, and [`wait_any`] over many channels.

use super::Reader;
use crate::error::{Result, ShmError};
use crate::protocol;
use crate::wait::{futex_wait, writers_barrier, Deadline, UNPROMISED_SLEEP};
use rustix::thread::futex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Longest a reader sleeps without checking that its segment is intact.
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// Most channels one [`wait_any`] call can watch (the kernel's futex_waitv
/// limit).
pub const MAX_WAIT_CHANNELS: usize = 128;

/// How many messages ahead a reader that has caught up with a streaming
/// writer waits for (at most a quarter of the ring). Polling the very
/// slot the writer is filling takes its lines from the writer in the
/// middle of each message; waiting further ahead leaves the writer that
/// many messages to write undisturbed, which the reader then reads in one
/// run. Through 64 MiB rings this lifted empty TPSets between two
/// processes by a ninth to a seventh, and raw frames by about a quarter
/// (docs/benchmarks.md).
const AHEAD: u64 = 1024;
/// The longest a wait ahead lasts: a writer that does not publish that
/// many messages in this time is not streaming.
const AHEAD_PATIENCE: Duration = Duration::from_micros(20);
/// Waits made the usual way after a wait ahead that ran out of patience
/// with fewer than two messages written (one message at a time in flight,
/// as in a round trip), before the next try: so at most one message in
/// this many waits 20 us longer.
const AHEAD_PAUSE: u32 = 16_384;

impl Reader {
    /// Sleep on the channel's futex until something is published or the
    /// deadline passes; false when the deadline has passed. Checks the
    /// header before sleeping, so a corrupt segment is reported, not slept
    /// or spun on.
    pub(crate) fn wait(&mut self, deadline: Option<Instant>) -> Result<bool> {
        // Nothing to read: a writer must not wait on a position this
        // reader has passed but not yet shown.
        self.flush_release();
        if self.wait_ahead(deadline) {
            return Ok(true);
        }
        self.wait_here(deadline)
    }

    /// While the writer streams, wait for the message [`AHEAD`] of this
    /// reader's next instead of the next itself: true once it is written
    /// (so the next is too). False, at once, when the reader does not spin,
    /// the ring is small, the next message is there, or waiting ahead is
    /// paused; false at the deadline; false after [`AHEAD_PATIENCE`], and
    /// then, if the writer wrote fewer than two messages meanwhile, pausing
    /// it for [`AHEAD_PAUSE`] waits. Reads the slot stamps only, as the
    /// usual wait's spin does, and the clock once, then once every 64
    /// polls.
    fn wait_ahead(&mut self, deadline: Option<Instant>) -> bool {
        if self.ahead_pause > 0 {
            self.ahead_pause -= 1;
            return false;
        }
        let seg = self.seg();
        let k = AHEAD.min(seg.slots / 4);
        let pos = self.position();
        if self.spin() == 0 || k < 64 || protocol::slot_ready(&seg.slot(pos).0.stamp, pos) {
            return false;
        }
        let stamp = &seg.slot(pos + k).0.stamp;
        let patience = Instant::now() + AHEAD_PATIENCE;
        let stop = deadline.map_or(patience, |d| d.min(patience));
        let mut i = 0u32;
        loop {
            if protocol::slot_ready(stamp, pos + k) {
                return true;
            }
            std::hint::spin_loop();
            i = i.wrapping_add(1);
            if !i.is_multiple_of(64) {
                continue;
            }
            let now = Instant::now();
            if now >= stop {
                // Two messages or more in the whole patience: a writer
                // streaming more slowly than it allows, not one message at
                // a time.
                if now >= patience && !protocol::slot_ready(&seg.slot(pos + 1).0.stamp, pos + 1) {
                    self.ahead_pause = AHEAD_PAUSE;
                }
                return false;
            }
        }
    }

    /// The usual wait: spin on the next message's slot, then sleep. The
    /// caller has shown its position ([`Self::wait`]).
    fn wait_here(&self, deadline: Option<Instant>) -> Result<bool> {
        let seg = self.seg();
        let h = seg.header();
        let pos = self.position();
        let spin = self.spin();
        // Poll the slot the next message goes to, not `next_seq`: the
        // slot's line travels to this reader once the message is in it,
        // while `next_seq`'s line would travel back and forth with every
        // message the writer publishes.
        let stamp = &seg.slot(pos).0.stamp;
        let mut i = 0u32;
        while i < spin {
            if protocol::slot_ready(stamp, pos) {
                return Ok(true);
            }
            std::hint::spin_loop();
            i = i.wrapping_add(1);
            if spin == u32::MAX && i.is_multiple_of(1 << 16) {
                // Busy-poll forever, but still honour the deadline, and
                // look at `next_seq` too: a slot that stays behind a
                // published message is corruption, which the caller's
                // next look reports.
                seg.check_layout()?;
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Ok(false);
                }
                if h.next_seq.load(Ordering::Acquire) > pos {
                    return Ok(true);
                }
                i = 0;
            }
        }
        seg.check_layout()?;
        let fence = || protocol::fence_for_writer(&h.publish_fence, writers_barrier);
        let ready = || h.next_seq.load(Ordering::SeqCst) > pos;
        let sleep = |seen, promised| -> Result<bool> {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left.is_some_and(|l| l.is_zero()) {
                return Ok(false);
            }
            // Without a deadline, still look up once a second: a writer
            // cannot wake a reader whose header page left the file.
            let l = left.unwrap_or(IDLE_CHECK).min(IDLE_CHECK);
            let l = if promised { l } else { l.min(UNPROMISED_SLEEP) };
            let r = futex_wait(&h.notify, seen, l);
            if r == Err(rustix::io::Errno::TIMEDOUT) && l == IDLE_CHECK {
                if let Some(e) = seg.truncation() {
                    return Err(e);
                }
            }
            Ok(true)
        };
        let alive = match protocol::reader_sleep(&h.waiters, &h.notify, fence, ready, sleep) {
            (_, Some(Err(e))) => return Err(e),
            (_, Some(Ok(alive))) => alive,
            (_, None) => true,
        };
        Ok(alive && deadline.is_none_or(|d| Instant::now() < d))
    }
}

/// Wait until at least one of `readers` has a message (or an overrun) to
/// deliver, sleeping on all their futexes at once with `futex_waitv`, not
/// spinning and with no limit of 32 channels. Fills `ready` with the indices
/// of the readers that have something; `Ok(false)` if `timeout` passed first.
pub fn wait_any(
    readers: &[&Reader],
    timeout: Option<Duration>,
    ready: &mut Vec<usize>,
) -> Result<bool> {
    use rustix::thread::futex::{waitv, Wait, WaitFlags, WaitvFlags};
    ready.clear();
    if readers.len() > MAX_WAIT_CHANNELS {
        return Err(ShmError::BadConfig {
            name: format!("{} channels", readers.len()),
            reason: format!("one wait_any watches at most {MAX_WAIT_CHANNELS} channels"),
        });
    }
    let scan = |ready: &mut Vec<usize>| {
        ready.extend(
            readers
                .iter()
                .enumerate()
                .filter(|(_, r)| r.has_data())
                .map(|(i, _)| i),
        );
        !ready.is_empty()
    };
    if scan(ready) {
        return Ok(true);
    }
    for r in readers {
        r.flush_release();
    }
    let mut deadline = Deadline::new(timeout);
    let until = deadline.instant();
    let mut waits = [Wait::new(); MAX_WAIT_CHANNELS];
    loop {
        // The steps of `protocol::reader_sleep`, spread over many channels:
        // register on each, note each `notify`, look, then sleep on all.
        for (w, r) in waits.iter_mut().zip(readers) {
            let h = r.seg().header();
            h.waiters.fetch_add(1, Ordering::SeqCst);
            let seen = h.notify.fetch_or(protocol::SLEEPING, Ordering::SeqCst);
            w.val = u64::from(seen | protocol::SLEEPING);
            w.uaddr = futex::WaitPtr::new(h.notify.as_ptr().cast());
            w.flags = WaitFlags::SIZE_U32;
        }
        // Between the stores of the bits and the loads of `next_seq` in
        // the scan (as `protocol::reader_sleep` does for one channel).
        std::sync::atomic::fence(Ordering::SeqCst);
        // One `membarrier` runs the barrier of every writer that
        // publishes without one.
        let mut fenced = None;
        let promised = readers.iter().all(|r| {
            let f = &r.seg().header().publish_fence;
            protocol::fence_for_writer(f, || *fenced.get_or_insert_with(writers_barrier))
        });
        let got = scan(ready);
        if !got {
            // futex_waitv takes an absolute time on the given clock.
            let mut left = until.map(|u| u.saturating_duration_since(Instant::now()));
            if !promised {
                left = Some(left.map_or(UNPROMISED_SLEEP, |l| l.min(UNPROMISED_SLEEP)));
            }
            let abs = left.map(|left| {
                let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
                let ns = now.tv_nsec as u64 + u64::from(left.subsec_nanos());
                rustix::time::Timespec {
                    tv_sec: now.tv_sec + left.as_secs() as i64 + (ns / 1_000_000_000) as i64,
                    tv_nsec: (ns % 1_000_000_000) as _,
                }
            });
            let _ = waitv(
                &waits[..readers.len()],
                WaitvFlags::empty(),
                abs.as_ref(),
                rustix::time::ClockId::Monotonic,
            );
        }
        for r in readers {
            r.seg().header().waiters.fetch_sub(1, Ordering::SeqCst);
        }
        if got || scan(ready) {
            return Ok(true);
        }
        if until.is_some_and(|u| Instant::now() >= u) {
            return Ok(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::AHEAD_PAUSE;
    use crate::{ChannelConfig, Policy, Reader, StartAt, Writer};
    use std::time::Duration;

    /// Removes the channel when dropped.
    struct Chan(String);
    impl Drop for Chan {
        fn drop(&mut self) {
            let _ = crate::remove(&self.0);
        }
    }

    #[test]
    fn a_lone_message_pauses_waiting_ahead_and_a_stream_arrives_whole() {
        let c = Chan(format!("unit-wait-ahead-{}", std::process::id()));
        let cfg = ChannelConfig {
            slots: 4096,
            max_message: 64,
            policy: Policy::Block,
        };
        let mut w = Writer::create(&c.0, cfg).unwrap();
        let mut r = Reader::attach(&c.0, StartAt::Oldest).unwrap();
        assert_eq!(r.ahead_pause, 0);
        // One message at a time: the wait ahead runs out of patience with
        // a single message written, and pauses.
        let w = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            w.publish(b"one").unwrap();
            w
        });
        let mut buf = Vec::new();
        let got = r.recv(&mut buf, Some(Duration::from_secs(10))).unwrap();
        assert_eq!((got.map(|g| g.seq), buf.as_slice()), (Some(0), &b"one"[..]));
        assert!(
            r.ahead_pause > AHEAD_PAUSE - 100,
            "waiting ahead did not pause: {}",
            r.ahead_pause
        );
        // A stream, with waiting ahead on again: every message, in order,
        // whether the reader waited ahead, by the slot or asleep.
        r.ahead_pause = 0;
        let mut w = w.join().unwrap();
        let n = 200_000u64;
        let t = std::thread::spawn(move || {
            for i in 1..=n {
                w.publish(&i.to_le_bytes()).unwrap();
            }
        });
        for i in 1..=n {
            let got = r.recv(&mut buf, Some(Duration::from_secs(10))).unwrap();
            assert_eq!(got.map(|g| (g.seq, g.lost)), Some((i, 0)));
            assert_eq!(buf, i.to_le_bytes());
        }
        t.join().unwrap();
    }

    /// A receive's deadline ends a wait ahead, which then does not pause:
    /// its patience did not run out.
    #[test]
    fn a_deadline_ends_waiting_ahead_without_pausing_it() {
        let c = Chan(format!("unit-wait-ahead-deadline-{}", std::process::id()));
        let cfg = ChannelConfig {
            slots: 4096,
            max_message: 64,
            policy: Policy::Block,
        };
        let _w = Writer::create(&c.0, cfg).unwrap();
        let mut r = Reader::attach(&c.0, StartAt::Oldest).unwrap();
        r.set_spin(u32::MAX);
        let got = r.recv(&mut Vec::new(), Some(Duration::from_micros(2)));
        assert!(matches!(got, Ok(None)), "{got:?}");
        assert_eq!(r.ahead_pause, 0, "the wait ahead ran to its patience");
    }
}
