//! Sleeping and waking, below readers and writers: the futex calls, the
//! wake-up after a publish (invariant 6), the `membarrier` calls that let
//! a writer publish without a barrier of its own, and [`Deadline`]s. A
//! reader's own wait is `reader/wait.rs`.

use crate::protocol;
use crate::segment::Segment;
use rustix::thread::{futex, membarrier, membarrier_query, MembarrierCommand, MembarrierQuery};
use std::sync::atomic::AtomicU32;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Longest a reader sleeps at a time when a publish is not sure to wake
/// it: its writer publishes without a barrier and this process may not
/// call `membarrier` (a seccomp filter, say).
pub(crate) const UNPROMISED_SLEEP: Duration = Duration::from_millis(1);

/// Wake-ups of its readers, within [`WAKE_WINDOW`] messages, that turn a
/// [`PublishFence::ByReaders`] writer to [`PublishFence::Full`]. Each
/// wake-up follows a reader's `membarrier`, which in the VM that
/// docs/benchmarks.md measures cost the reader about 9 us and
/// interrupted the writer's CPU for 5-10 us, against some 20 ns for a
/// barrier per message.
pub const WAKES_TO_FULL: u32 = 8;

/// The span, in messages, over which [`WAKES_TO_FULL`] wake-ups are
/// counted.
pub const WAKE_WINDOW: u64 = 4096;

/// The environment variable that keeps this process's writers on a full
/// barrier per publish, so that no reader ever interrupts their CPU.
pub const FULL_FENCE_ENV: &str = "PTMP_SHM_FULL_FENCE";

/// How a writer publishes each message (invariant 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublishFence {
    /// A full barrier per message (a locked instruction on x86). Readers
    /// sleep without further ado.
    Full,
    /// A release store, no barrier; a reader about to sleep first makes
    /// the writer's CPU run a barrier with `membarrier` (an interrupt of
    /// a few microseconds), which the writer's process has registered
    /// for. The default where the kernel offers it. A writer whose readers
    /// go to sleep often (it woke them [`WAKES_TO_FULL`] times within
    /// [`WAKE_WINDOW`] messages) turns to [`PublishFence::Full`] for the
    /// rest of its life: a barrier per message then costs far less than
    /// the readers' `membarrier` calls.
    ByReaders,
}

impl PublishFence {
    /// The header's `publish_fence` value for this kind.
    pub(crate) fn word(self) -> u32 {
        match self {
            PublishFence::Full => protocol::FENCE_FULL,
            PublishFence::ByReaders => protocol::FENCE_BY_READERS,
        }
    }

    /// The kind a header's `publish_fence` value stands for, read as a
    /// reader reads it: anything but [`protocol::FENCE_FULL`] makes the
    /// reader run the barrier itself.
    pub(crate) fn from_word(word: u32) -> Self {
        if word == protocol::FENCE_FULL {
            PublishFence::Full
        } else {
            PublishFence::ByReaders
        }
    }

    /// A short name for listings: `full` or `by-readers`.
    pub fn label(self) -> &'static str {
        match self {
            PublishFence::Full => "full",
            PublishFence::ByReaders => "by-readers",
        }
    }
}

/// How this process's writers publish by default: [`PublishFence::ByReaders`]
/// if the kernel offers `membarrier`'s global expedited command and this
/// process registered for it, unless [`FULL_FENCE_ENV`] is set to anything
/// but `0`. Decided once per process (again in a forked child, whose
/// registration is its own).
pub fn default_publish_fence() -> PublishFence {
    static KIND: Mutex<Option<(u32, PublishFence)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut k = KIND.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((p, kind)) = *k {
        if p == pid {
            return kind;
        }
    }
    let kind = if std::env::var_os(FULL_FENCE_ENV).is_some_and(|v| v != "0") {
        PublishFence::Full
    } else {
        let q = membarrier_query();
        let offered = q.contains(MembarrierQuery::GLOBAL_EXPEDITED)
            && q.contains(MembarrierQuery::REGISTER_GLOBAL_EXPEDITED);
        if offered && membarrier(MembarrierCommand::RegisterGlobalExpedited).is_ok() {
            PublishFence::ByReaders
        } else {
            PublishFence::Full
        }
    };
    *k = Some((pid, kind));
    kind
}

/// A reader about to sleep on a writer that publishes without a barrier:
/// run a full barrier on every CPU running a registered process (the
/// writer's among them). False if the kernel refused.
pub(crate) fn writers_barrier() -> bool {
    membarrier(MembarrierCommand::GlobalExpedited).is_ok()
}

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
/// Returns whether it woke anyone.
pub(crate) fn notify_readers(seg: &Segment) -> bool {
    let h = seg.header();
    protocol::notify_readers(&h.notify, |w| futex_wake(w, i32::MAX as u32))
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
