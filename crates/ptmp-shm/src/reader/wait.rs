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

impl Reader {
    /// Sleep on the channel's futex until something is published or the
    /// deadline passes; false when the deadline has passed. Checks the
    /// header before sleeping, so a corrupt segment is reported, not slept
    /// or spun on.
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> Result<bool> {
        let seg = self.seg();
        let h = seg.header();
        let pos = self.position();
        let spin = self.spin();
        // Nothing to read: a writer must not wait on a position this
        // reader has passed but not yet shown.
        self.flush_release();
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
