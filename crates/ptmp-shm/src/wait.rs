//! Sleeping and waking, below readers and writers: the futex calls, the
//! wake-up after a publish (invariant 6) and [`Deadline`]s. A reader's
//! own wait is `reader/wait.rs`.

use crate::protocol;
use crate::segment::Segment;
use rustix::thread::futex;
use std::sync::atomic::AtomicU32;
use std::time::{Duration, Instant};

/// Wake up to `n` processes sleeping on `word`.
pub(crate) fn futex_wake(word: &AtomicU32, n: u32) {
    // A failed wake has nobody to report to: the sleepers' timeouts bound
    // what it costs.
    let _ = futex::wake(word, futex::Flags::empty(), n);
}

/// Sleep on `word` while it holds `seen`, for at most `t`.
pub(crate) fn futex_wait(word: &AtomicU32, seen: u32, t: Duration) -> rustix::io::Result<()> {
    let ts = rustix::time::Timespec {
        tv_sec: t.as_secs() as _,
        tv_nsec: t.subsec_nanos() as _,
    };
    futex::wait(word, futex::Flags::empty(), seen, Some(&ts))
}

/// After a publish: wake the channel's sleeping readers, if any
/// (invariant 6).
pub(crate) fn notify_readers(seg: &Segment) {
    let h = seg.header();
    protocol::notify_readers(&h.notify, |w| futex_wake(w, i32::MAX as u32));
}

/// A deadline read from the clock only when first needed, so a receive
/// that finds its message at once costs no clock read.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    timeout: Option<Duration>,
    at: Option<Option<Instant>>,
}

impl Deadline {
    /// `None`: no deadline (wait forever).
    pub fn new(timeout: Option<Duration>) -> Self {
        Deadline { timeout, at: None }
    }

    /// The instant, fixed at the first call.
    pub fn instant(&mut self) -> Option<Instant> {
        let t = self.timeout;
        *self.at.get_or_insert_with(|| t.map(|t| Instant::now() + t))
    }

    /// Time left (`None`: no limit).
    pub fn remaining(&mut self) -> Option<Duration> {
        self.instant()
            .map(|d| d.saturating_duration_since(Instant::now()))
    }
}
