//! The ring's synchronisation steps, each a small function generic over the
//! atomic word it works on.
//!
//! The ring uses them on the `std` atomics of a mapped segment; the model
//! test (`tests/loom.rs`, built with `--cfg loom`) runs the very same
//! functions on `loom` atomics and explores every interleaving and every
//! weak-memory outcome the orderings allow. Nothing else in the crate
//! touches a stamp, `next_seq`, `notify`, `waiters`, `publish_fence`,
//! `space`, `writer_waiting`, `writer_needs` or a registry position, or hands a
//! durable reader's registry entry from a dead process to its successor,
//! in a way that matters to another process. Using a channel needs none of this module.
//!
//! Futex calls are passed in as closures, so the model can put a
//! lock-and-condition-variable futex in their place.

use std::sync::atomic::Ordering;

/// An atomic word the protocol can run on: the `std` atomics, or the model
/// checker's.
pub trait Word: Sync {
    /// The value held.
    type Value: Copy + Ord;
    /// Atomic load.
    fn load(&self, order: Ordering) -> Self::Value;
    /// Atomic store.
    fn store(&self, v: Self::Value, order: Ordering);
    /// Atomic add, returning the value before.
    fn fetch_add(&self, v: Self::Value, order: Ordering) -> Self::Value;
    /// Atomic subtract, returning the value before.
    fn fetch_sub(&self, v: Self::Value, order: Ordering) -> Self::Value;
    /// Atomic bitwise or, returning the value before.
    fn fetch_or(&self, v: Self::Value, order: Ordering) -> Self::Value;
    /// Atomic exchange, returning the value before.
    fn swap(&self, v: Self::Value, order: Ordering) -> Self::Value;
    /// Atomic compare-and-swap (strong, the same order on success and
    /// failure): whether the word held `current` and now holds `new`.
    fn cas(&self, current: Self::Value, new: Self::Value, order: Ordering) -> bool;
    /// A memory fence of the same family as this word's atomics.
    fn fence(order: Ordering);
    /// Where a side stores one word and then loads another that the other
    /// side stores (the store-buffering pattern of invariants 5 and 6):
    /// make the sequentially consistent accesses around this point one
    /// total order. Nothing to do for the `std` atomics, whose `SeqCst`
    /// accesses already are totally ordered; the model checker treats
    /// `SeqCst` accesses as acquire/release only (a documented limit of
    /// loom), so its words put the `SeqCst` fence that gives the same order
    /// here.
    fn seq_cst_point();
    /// The writer's side of an asymmetric fence ([`publish_light`]): for
    /// the `std` atomics only a compiler barrier, which keeps the store
    /// of `next_seq` before the load of `notify` in program order; the
    /// readers' `membarrier` call makes a full barrier of it on the
    /// writer's CPU whenever one of them is about to sleep. The model
    /// checker cannot run `membarrier`, so its words put the `SeqCst`
    /// fence here that the pair amounts to.
    fn light_fence();
}

macro_rules! word {
    ($atomic:ty, $value:ty, $fence:path, $point:expr, $light:expr) => {
        impl Word for $atomic {
            type Value = $value;
            #[inline]
            fn load(&self, order: Ordering) -> $value {
                <$atomic>::load(self, order)
            }
            #[inline]
            fn store(&self, v: $value, order: Ordering) {
                <$atomic>::store(self, v, order)
            }
            #[inline]
            fn fetch_add(&self, v: $value, order: Ordering) -> $value {
                <$atomic>::fetch_add(self, v, order)
            }
            #[inline]
            fn fetch_sub(&self, v: $value, order: Ordering) -> $value {
                <$atomic>::fetch_sub(self, v, order)
            }
            #[inline]
            fn fetch_or(&self, v: $value, order: Ordering) -> $value {
                <$atomic>::fetch_or(self, v, order)
            }
            #[inline]
            fn swap(&self, v: $value, order: Ordering) -> $value {
                <$atomic>::swap(self, v, order)
            }
            #[inline]
            fn cas(&self, current: $value, new: $value, order: Ordering) -> bool {
                <$atomic>::compare_exchange(self, current, new, order, order).is_ok()
            }
            #[inline]
            fn fence(order: Ordering) {
                $fence(order)
            }
            #[inline]
            fn seq_cst_point() {
                $point
            }
            #[inline]
            fn light_fence() {
                $light
            }
        }
    };
}

word!(
    std::sync::atomic::AtomicU32,
    u32,
    std::sync::atomic::fence,
    (),
    std::sync::atomic::compiler_fence(Ordering::SeqCst)
);
word!(
    std::sync::atomic::AtomicU64,
    u64,
    std::sync::atomic::fence,
    (),
    std::sync::atomic::compiler_fence(Ordering::SeqCst)
);
#[cfg(loom)]
word!(
    loom::sync::atomic::AtomicU32,
    u32,
    loom::sync::atomic::fence,
    loom::sync::atomic::fence(Ordering::SeqCst),
    loom::sync::atomic::fence(Ordering::SeqCst)
);
#[cfg(loom)]
word!(
    loom::sync::atomic::AtomicU64,
    u64,
    loom::sync::atomic::fence,
    loom::sync::atomic::fence(Ordering::SeqCst),
    loom::sync::atomic::fence(Ordering::SeqCst)
);

/// The stamp of message `seq` once it is complete (invariant 3).
#[inline]
pub fn done_stamp(seq: u64) -> u64 {
    2 * seq + 2
}

/// Writer, before touching message `seq`'s slot: mark it odd (being
/// written). The release fence keeps the payload writes that follow from
/// being seen before the odd stamp (invariant 3).
#[inline]
pub fn begin_write<W: Word<Value = u64>>(stamp: &W, seq: u64) {
    stamp.store(2 * seq + 1, Ordering::Relaxed);
    W::fence(Ordering::Release);
}

/// Writer, once the payload is in place: store its length, then the even
/// stamp, with release so a reader that sees the stamp sees the payload.
#[inline]
pub fn end_write<W: Word<Value = u64>>(stamp: &W, len: &W, seq: u64, n: u64) {
    len.store(n, Ordering::Relaxed);
    stamp.store(done_stamp(seq), Ordering::Release);
}

/// Writer, after [`end_write`]: publish that `seq + 1` messages exist
/// (invariant 4).
#[inline]
pub fn publish<W: Word<Value = u64>>(next_seq: &W, seq: u64) {
    next_seq.store(seq + 1, Ordering::SeqCst);
}

/// The header's `publish_fence` when the writer publishes with
/// [`publish`]: a full barrier per message, so readers sleep without
/// further ado (invariant 6).
pub const FENCE_FULL: u32 = 0;

/// The header's `publish_fence` when the writer publishes with
/// [`publish_light`]: a reader about to sleep must first make the
/// writer's CPU run a full barrier (`membarrier`), or sleep only briefly
/// (invariant 6).
pub const FENCE_BY_READERS: u32 = 1;

/// Writer whose readers fence for it (the header's `publish_fence` is
/// [`FENCE_BY_READERS`], stored before its first publish): publish that
/// `seq + 1` messages exist with a release store, no barrier. Then the
/// store may still wait in this CPU's store buffer when the writer looks
/// at `notify` ([`notify_readers`]); a reader about to sleep calls
/// `membarrier`, which runs a full barrier on this CPU, so either this
/// look comes after that barrier and sees the reader's bit, or the store
/// left the buffer before the call returned and the reader's look sees it.
#[inline]
pub fn publish_light<W: Word<Value = u64>>(next_seq: &W, seq: u64) {
    next_seq.store(seq + 1, Ordering::Release);
    W::light_fence();
}

/// Writer taking the channel, before its first publish: record in the
/// header's `publish_fence` how it will publish ([`FENCE_FULL`] or
/// [`FENCE_BY_READERS`]). Sequentially consistent, like the writer's look
/// at `notify` after each publish: a reader that read the previous
/// writer's [`FENCE_FULL`] and skipped the `membarrier` had set its bit
/// before that read, so this writer's looks, all after this store, see
/// the bit.
#[inline]
pub fn announce_fence<W: Word<Value = u32>>(publish_fence: &W, kind: u32) {
    publish_fence.store(kind, Ordering::SeqCst);
}

/// Reader about to sleep, its bit set: whether a publish is now sure to
/// wake it. True at once if the writer publishes with a full barrier;
/// otherwise `membarrier` runs the writer's barrier for it, and the answer
/// is whether the kernel did that.
#[inline]
pub fn fence_for_writer<W: Word<Value = u32>>(
    publish_fence: &W,
    membarrier: impl FnOnce() -> bool,
) -> bool {
    publish_fence.load(Ordering::SeqCst) == FENCE_FULL || membarrier()
}

/// What a reader found in a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read<R> {
    /// The message, whole, and what the read closure made of it.
    Got(R),
    /// The message is not complete in the slot yet.
    NotYet,
    /// The slot holds a later message (or was rewritten while being read):
    /// this stamp.
    Overrun(u64),
}

/// Reader: read message `seq` out of its slot with the seqlock. `read`
/// gets the recorded length and reads the payload; its result is returned
/// only if the stamp was `seq`'s final stamp both before and after, so a
/// torn message is never accepted (invariant 3).
#[inline]
pub fn read<W: Word<Value = u64>, R>(
    stamp: &W,
    len: &W,
    seq: u64,
    read: impl FnOnce(u64) -> R,
) -> Read<R> {
    let want = done_stamp(seq);
    let s1 = stamp.load(Ordering::Acquire);
    if s1 < want {
        return Read::NotYet;
    }
    if s1 > want {
        return Read::Overrun(s1);
    }
    let r = read(len.load(Ordering::Relaxed));
    match still(stamp, seq) {
        Ok(()) => Read::Got(r),
        Err(s2) => Read::Overrun(s2),
    }
}

/// Reader waiting for message `seq`: whether its slot shows something to
/// look at (the message complete, or a later one). A hint only, for a
/// reader that polls: what it finds is then read with [`read`]. Polling
/// the slot instead of `next_seq` keeps a busy reader off the header line
/// the writer stores for every message; the slot's line must travel to
/// the reader anyway.
#[inline]
pub fn slot_ready<W: Word<Value = u64>>(stamp: &W, seq: u64) -> bool {
    stamp.load(Ordering::Acquire) >= done_stamp(seq)
}

/// Reader, after reading message `seq`'s payload: whether its slot still
/// holds it (its stamp, if not). The acquire fence orders the payload reads
/// before the stamp load, so a rewrite that began during them shows.
#[inline]
pub fn still<W: Word<Value = u64>>(stamp: &W, seq: u64) -> Result<(), u64> {
    W::fence(Ordering::Acquire);
    let s2 = stamp.load(Ordering::Relaxed);
    if s2 == done_stamp(seq) {
        Ok(())
    } else {
        Err(s2)
    }
}

/// The low bit of the `notify` futex word: set by a reader about to sleep,
/// cleared by the writer when it wakes the sleepers. The other 31 bits count
/// wake-ups, so every wake changes the word and a sleep on the value seen
/// before it returns at once.
pub const SLEEPING: u32 = 1;

/// Writer, after [`publish`]: wake sleeping readers if there are any
/// (invariant 6). `wake` is the futex wake on `notify`. Only the first
/// publish after a reader announced its sleep makes the system call: the
/// wake clears [`SLEEPING`], so a writer running ahead of readers that are
/// still waking up does not call the kernel again for every message.
/// Returns whether it woke anyone.
#[inline]
pub fn notify_readers<W: Word<Value = u32>>(notify: &W, wake: impl FnOnce(&W)) -> bool {
    // Between the store of `next_seq` and the load of `notify`: either this
    // load sees a reader's SLEEPING bit, or that reader's look at
    // `next_seq` (after setting the bit) sees this message.
    W::seq_cst_point();
    if notify.load(Ordering::SeqCst) & SLEEPING != 0 {
        // Only the writer clears the bit (invariant 2), so it is still set:
        // adding one clears it and counts the wake-up in one step.
        notify.fetch_add(1, Ordering::SeqCst);
        wake(notify);
        return true;
    }
    false
}

/// Reader with nothing to read: announce the sleep (count in `waiters`,
/// set [`SLEEPING`] in `notify`), make the writer's barrier with `fence`
/// if it publishes without one, then look once more with `ready`, and
/// only if still nothing call `sleep` with the `notify` value set (the
/// futex wait sleeps only while `notify` still holds it) and `fence`'s
/// answer: whether a publish is now sure to wake this reader. Returns
/// `ready`'s answer and `sleep`'s result. Invariant 6: a publish after
/// the bit was set wakes, and changes `notify` first, so the sleep
/// returns at once; a publish before it is seen by the look. No wake-up
/// is lost, unless `fence` answered false (a writer that publishes with
/// [`publish_light`] and a `membarrier` the kernel refused): then `sleep`
/// must not sleep long.
#[inline]
pub fn reader_sleep<W: Word<Value = u32>, T>(
    waiters: &W,
    notify: &W,
    fence: impl FnOnce() -> bool,
    ready: impl FnOnce() -> bool,
    sleep: impl FnOnce(u32, bool) -> T,
) -> (bool, Option<T>) {
    // `waiters` only tells an observer (`ptmp shm inspect`, a debugger)
    // how many sleep; the writer looks at the bit.
    waiters.fetch_add(1, Ordering::SeqCst);
    let seen = notify.fetch_or(SLEEPING, Ordering::SeqCst) | SLEEPING;
    // Between the store of the bit and the load of `next_seq`.
    W::seq_cst_point();
    let promised = fence();
    let ready = ready();
    let slept = (!ready).then(|| sleep(seen, promised));
    waiters.fetch_sub(1, Ordering::SeqCst);
    (ready, slept)
}

/// A registry position, as the writer reads it when deciding whether it
/// may overwrite (invariant 5).
#[inline]
pub fn reader_pos<W: Word<Value = u64>>(pos: &W) -> u64 {
    pos.load(Ordering::SeqCst)
}

/// Blocked writer, one round of its wait (invariant 5): announce what it
/// needs (`need`: the position every reader must reach), then look with
/// `check`; if that settles the wait, return its result, else `sleep` with
/// the `space` value seen before the look. A reader that frees the space
/// after the look changes `space` first, so the sleep returns at once.
#[inline]
pub fn writer_wait_round<W32, W64, T>(
    needs: &W64,
    waiting: &W32,
    space: &W32,
    need: u64,
    check: impl FnOnce() -> Option<T>,
    sleep: impl FnOnce(u32),
) -> Option<T>
where
    W32: Word<Value = u32>,
    W64: Word<Value = u64>,
{
    needs.store(need, Ordering::SeqCst);
    waiting.store(1, Ordering::SeqCst);
    // Between the store of `writer_waiting` and the loads of `space` and
    // the registry.
    W32::seq_cst_point();
    let seen = space.load(Ordering::SeqCst);
    let done = check();
    if done.is_none() {
        sleep(seen);
    }
    done
}

/// Blocked writer, when its wait is over: no longer ask readers for
/// wake-ups.
#[inline]
pub fn writer_wait_end<W: Word<Value = u32>>(waiting: &W) {
    waiting.store(0, Ordering::SeqCst);
}

/// Reader under [`crate::Policy::Block`]: tell the writer it no longer
/// needs messages below `to`, and wake the writer if it waits for that.
/// Only the release that carries this reader's position across
/// `writer_needs` wakes, not every release at or past it: while the writer
/// is still waking up, the reader goes on releasing without a system call
/// per message. (A writer that still lacks room announces again, and each
/// reader that then crosses the new position wakes it once.) `wake` is the
/// futex wake on `space`.
#[inline]
pub fn release<W32, W64>(
    pos: &W64,
    waiting: &W32,
    needs: &W64,
    space: &W32,
    to: u64,
    wake: impl FnOnce(&W32),
) where
    W32: Word<Value = u32>,
    W64: Word<Value = u64>,
{
    let before = pos.swap(to, Ordering::SeqCst);
    // Between the store of the position and the load of `writer_waiting`.
    W32::seq_cst_point();
    if waiting.load(Ordering::SeqCst) != 0 {
        let need = needs.load(Ordering::SeqCst);
        if before < need && to >= need {
            space.fetch_add(1, Ordering::SeqCst);
            wake(space);
        }
    }
}

/// Reader under [`crate::Policy::Block`], per message: [`release`] only
/// when `to` is `every` or more past the position the entry shows, or the
/// writer waits; otherwise leave the entry as it is (no locked instruction,
/// no cache line the writer reads). A lower position shown only makes the
/// writer wait more (invariant 5); the reader calls [`release`] with its
/// whole position before it sleeps, and a writer that waits is seen at the
/// next message.
#[inline]
pub fn release_lazily<W32, W64>(
    pos: &W64,
    waiting: &W32,
    needs: &W64,
    space: &W32,
    to: u64,
    every: u64,
    wake: impl FnOnce(&W32),
) where
    W32: Word<Value = u32>,
    W64: Word<Value = u64>,
{
    let shown = pos.load(Ordering::Relaxed);
    if to <= shown || (to < shown + every && waiting.load(Ordering::Relaxed) == 0) {
        return;
    }
    release(pos, waiting, needs, space, to, wake);
}

/// A reader leaving a [`crate::Policy::Block`] channel: if the writer
/// waits, wake it, so it looks at the registry again.
#[inline]
pub fn leave<W: Word<Value = u32>>(waiting: &W, space: &W, wake: impl FnOnce(&W)) {
    // Between the release of the registry entry and the load of
    // `writer_waiting`.
    W::seq_cst_point();
    if waiting.load(Ordering::SeqCst) != 0 {
        space.fetch_add(1, Ordering::SeqCst);
        wake(space);
    }
}

/// A durable reader's successor taking over its registry entry (invariant
/// 5): the entry's PID goes from `from` (the dead reader's, or 0 once the
/// writer gave the entry up) to `me`, and only then is the position read:
/// the first message the dead reader had not committed. `None` when
/// another process changed the PID first. While the entry was still the
/// dead reader's, the writer counted it as live, so that message is still
/// in the ring; if the writer gave it up first, this take starts from 0
/// and a message overwritten meanwhile shows as an overrun.
#[inline]
pub fn take_entry<W32, W64>(pid: &W32, pos: &W64, from: u32, me: u32) -> Option<u64>
where
    W32: Word<Value = u32>,
    W64: Word<Value = u64>,
{
    pid.cas(from, me, Ordering::SeqCst)
        .then(|| pos.load(Ordering::SeqCst))
}

/// Blocked writer, once a dead durable reader's grace time is over (or at
/// once for a reader without identity): drop the entry by moving its PID
/// from `dead` to 0. False when a successor took the entry first: then the
/// writer goes on respecting its position.
#[inline]
pub fn give_up_entry<W: Word<Value = u32>>(pid: &W, dead: u32) -> bool {
    pid.cas(dead, 0, Ordering::SeqCst)
}
