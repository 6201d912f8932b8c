//! Model checks of the ring's synchronisation with loom: the functions of
//! `ptmp_shm::protocol`, which the ring itself runs on its mapped segment,
//! run here on loom's atomics under every interleaving and every outcome of
//! the weak memory model their orderings allow.
//!
//! Run with:
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p ptmp-shm --test loom --release`

#![cfg(loom)]

use loom::sync::atomic::{AtomicU32, AtomicU64};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;
use ptmp_shm::protocol::{self, Read};
use std::sync::atomic::Ordering;

/// A futex as the kernel gives it: `wait` sleeps only if the word still
/// holds the value seen, checked under the same lock `wake` takes, so a
/// change made before a wake is never slept through. No timeouts: a lost
/// wake-up leaves a thread asleep for ever, which loom reports as a
/// deadlock.
struct Futex {
    lock: Mutex<()>,
    cv: Condvar,
}

impl Futex {
    fn new() -> Self {
        Futex {
            lock: Mutex::new(()),
            cv: Condvar::new(),
        }
    }

    fn wait(&self, word: &AtomicU32, seen: u32) {
        let g = self.lock.lock().unwrap();
        if word.load(Ordering::SeqCst) == seen {
            drop(self.cv.wait(g).unwrap());
        }
    }

    fn wake(&self) {
        let _g = self.lock.lock().unwrap();
        self.cv.notify_all();
    }
}

/// Every interleaving, with no bound on preemptions: these models are small
/// enough to explore exhaustively in well under a second.
fn model(f: impl Fn() + Sync + Send + 'static) {
    loom::model::Builder::new().check(f);
}

/// For the models with three threads, whose every interleaving would take
/// minutes: at most three preemptions per execution, which loom's authors
/// find catches nearly every bug in practice, and which here still covers
/// each reader being preempted anywhere in its sleep.
fn model_bounded(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

/// A one-slot ring: message `s` fills the slot with two words, both
/// `word(s)`. The payload is two relaxed atomics, so loom sees every mix of
/// old and new words a reader could copy.
struct Slot {
    stamp: AtomicU64,
    len: AtomicU64,
    payload: [AtomicU64; 2],
    next_seq: AtomicU64,
}

fn word(seq: u64) -> u64 {
    100 + seq
}

#[test]
fn seqlock_never_delivers_a_torn_message() {
    model(|| {
        let slot = Arc::new(Slot {
            stamp: AtomicU64::new(0),
            len: AtomicU64::new(0),
            payload: [AtomicU64::new(0), AtomicU64::new(0)],
            next_seq: AtomicU64::new(0),
        });
        let w = slot.clone();
        let writer = thread::spawn(move || {
            // Messages 0 and 1 share the one slot: 1 overwrites 0.
            for seq in 0..2 {
                protocol::begin_write(&w.stamp, seq);
                for p in &w.payload {
                    p.store(word(seq), Ordering::Relaxed);
                }
                protocol::end_write(&w.stamp, &w.len, seq, 2);
                protocol::publish(&w.next_seq, seq);
            }
        });
        for seq in 0..2 {
            let got = protocol::read(&slot.stamp, &slot.len, seq, |n| {
                (
                    n,
                    slot.payload[0].load(Ordering::Relaxed),
                    slot.payload[1].load(Ordering::Relaxed),
                )
            });
            match got {
                Read::Got((n, a, b)) => {
                    assert_eq!(n, 2, "message {seq}: length of another message");
                    assert_eq!((a, b), (word(seq), word(seq)), "message {seq} torn");
                }
                Read::NotYet => {}
                Read::Overrun(s) => assert!(s > protocol::done_stamp(seq) - 1),
            }
        }
        writer.join().unwrap();
    });
}

#[test]
fn a_published_message_is_complete() {
    // Invariant 4: a reader that sees `next_seq` past a message and then
    // finds the message's final stamp reads it whole.
    model(|| {
        let slot = Arc::new(Slot {
            stamp: AtomicU64::new(0),
            len: AtomicU64::new(0),
            payload: [AtomicU64::new(0), AtomicU64::new(0)],
            next_seq: AtomicU64::new(0),
        });
        let w = slot.clone();
        let writer = thread::spawn(move || {
            protocol::begin_write(&w.stamp, 0);
            for p in &w.payload {
                p.store(word(0), Ordering::Relaxed);
            }
            protocol::end_write(&w.stamp, &w.len, 0, 2);
            protocol::publish(&w.next_seq, 0);
        });
        if slot.next_seq.load(Ordering::SeqCst) > 0 {
            let got = protocol::read(&slot.stamp, &slot.len, 0, |n| {
                (
                    n,
                    slot.payload[0].load(Ordering::Relaxed),
                    slot.payload[1].load(Ordering::Relaxed),
                )
            });
            assert_eq!(got, Read::Got((2, word(0), word(0))));
        }
        writer.join().unwrap();
    });
}

/// The header words of invariant 6.
struct Wakeup {
    next_seq: AtomicU64,
    waiters: AtomicU32,
    notify: AtomicU32,
    publish_fence: AtomicU32,
    futex: Futex,
}

impl Wakeup {
    /// The words as a writer that publishes with a full barrier
    /// (`light` false) or without one (`light` true) left them on taking
    /// the channel.
    fn new(light: bool) -> Arc<Wakeup> {
        let kind = if light {
            protocol::FENCE_BY_READERS
        } else {
            protocol::FENCE_FULL
        };
        let h = Wakeup {
            next_seq: AtomicU64::new(0),
            waiters: AtomicU32::new(0),
            notify: AtomicU32::new(0),
            publish_fence: AtomicU32::new(0),
            futex: Futex::new(),
        };
        protocol::announce_fence(&h.publish_fence, kind);
        Arc::new(h)
    }

    /// The writer's publish of message `seq` and its look for sleepers;
    /// `wake` runs before the futex wake when there are any.
    fn publish(&self, seq: u64, wake: impl FnOnce()) {
        if self.publish_fence.load(Ordering::Relaxed) == protocol::FENCE_FULL {
            protocol::publish(&self.next_seq, seq);
        } else {
            protocol::publish_light(&self.next_seq, seq);
        }
        let _ = protocol::notify_readers(&self.notify, |_| {
            wake();
            self.futex.wake()
        });
    }
}

/// A reader's wait for message `pos`, as `Reader::wait` runs it: look, and
/// sleep until something is published. Its `membarrier` is modelled by
/// what it guarantees: `light_fence` is a `SeqCst` fence on the model's
/// words, the barrier the call runs on the writer's CPU (see
/// `protocol::Word::light_fence`). A lost wake-up deadlocks, which loom
/// reports.
fn wait_for(h: &Wakeup, pos: u64) {
    while h.next_seq.load(Ordering::Acquire) <= pos {
        protocol::reader_sleep(
            &h.waiters,
            &h.notify,
            || protocol::fence_for_writer(&h.publish_fence, || true),
            || h.next_seq.load(Ordering::SeqCst) > pos,
            |seen, promised| {
                assert!(promised);
                h.futex.wait(&h.notify, seen)
            },
        );
    }
}

#[test]
fn a_sleeping_reader_is_woken_by_a_publish() {
    for light in [false, true] {
        model(move || {
            let h = Wakeup::new(light);
            let w = h.clone();
            let writer = thread::spawn(move || w.publish(0, || ()));
            wait_for(&h, 0);
            writer.join().unwrap();
        });
    }
}

#[test]
fn a_reader_that_sleeps_again_is_woken_by_the_next_publish() {
    // The first wake clears the sleeping bit; a reader that then sleeps for
    // the next message must set it again, or the writer would publish that
    // message without a wake-up.
    for light in [false, true] {
        model(move || {
            let h = Wakeup::new(light);
            let w = h.clone();
            let writer = thread::spawn(move || {
                for seq in 0..2 {
                    w.publish(seq, || ());
                }
            });
            wait_for(&h, 0);
            wait_for(&h, 1);
            writer.join().unwrap();
            // Nobody sleeps any more, whatever the interleaving was.
            assert_eq!(h.waiters.load(Ordering::SeqCst), 0);
        });
    }
}

#[test]
fn two_sleeping_readers_are_both_woken_by_one_publish() {
    // One wake clears the bit both set: it must reach both.
    for light in [false, true] {
        model_bounded(move || {
            let h = Wakeup::new(light);
            let r = h.clone();
            let other = thread::spawn(move || wait_for(&r, 0));
            let w = h.clone();
            let writer = thread::spawn(move || w.publish(0, || ()));
            wait_for(&h, 0);
            other.join().unwrap();
            writer.join().unwrap();
        });
    }
}

#[test]
fn a_writer_wakes_a_reader_once_per_sleep() {
    // The point of the sleeping bit: the reader sleeps (at most) once, for
    // message 0, and only polls for message 1; the writer's two publishes
    // make at most one wake-up between them, even when the second comes
    // while the reader is still waking from the first.
    for light in [false, true] {
        model(move || {
            let h = Wakeup::new(light);
            let wakes = Arc::new(AtomicU32::new(0));
            let (w, n) = (h.clone(), wakes.clone());
            let writer = thread::spawn(move || {
                for seq in 0..2 {
                    w.publish(seq, || {
                        n.fetch_add(1, Ordering::SeqCst);
                    });
                }
            });
            wait_for(&h, 0);
            while h.next_seq.load(Ordering::Acquire) < 2 {
                thread::yield_now();
            }
            writer.join().unwrap();
            assert!(wakes.load(Ordering::SeqCst) <= 1);
        });
    }
}

/// The header words and one registry position of invariant 5.
struct Space {
    pos: AtomicU64,
    waiting: AtomicU32,
    needs: AtomicU64,
    space: AtomicU32,
    futex: Futex,
}

#[test]
fn a_blocked_writer_is_woken_when_a_reader_frees_a_slot() {
    model(|| {
        let h = Arc::new(Space {
            pos: AtomicU64::new(0),
            waiting: AtomicU32::new(0),
            needs: AtomicU64::new(0),
            space: AtomicU32::new(0),
            futex: Futex::new(),
        });
        let r = h.clone();
        // The reader finishes message 0 of a one-slot ring.
        let reader = thread::spawn(move || {
            protocol::release(&r.pos, &r.waiting, &r.needs, &r.space, 1, |_| {
                r.futex.wake()
            });
        });
        // The writer wants to write message 1, which overwrites message 0:
        // it needs the reader at position 1 (`s + 1 - slots`, as the ring's
        // writer computes it) and sleeps until then; a lost wake-up
        // deadlocks.
        let need = 1;
        loop {
            let done = protocol::writer_wait_round(
                &h.needs,
                &h.waiting,
                &h.space,
                need,
                || (protocol::reader_pos(&h.pos) >= need).then_some(()),
                |seen| h.futex.wait(&h.space, seen),
            );
            if done.is_some() {
                break;
            }
        }
        protocol::writer_wait_end(&h.waiting);
        reader.join().unwrap();
    });
}

#[test]
fn a_blocked_writer_waiting_for_a_quarter_ring_is_woken() {
    // Hysteresis: the writer needs the reader at position 2 to write
    // message 3 of a two-slot ring, but announces that it waits for 3 (the
    // newest message, where a reader that reads everything ends up); the
    // reader releases one message at a time. The writer must neither sleep
    // for ever nor go on before position 2.
    model(|| {
        let h = Arc::new(Space {
            pos: AtomicU64::new(1),
            waiting: AtomicU32::new(0),
            needs: AtomicU64::new(0),
            space: AtomicU32::new(0),
            futex: Futex::new(),
        });
        let r = h.clone();
        let reader = thread::spawn(move || {
            for to in 2..=3 {
                protocol::release(&r.pos, &r.waiting, &r.needs, &r.space, to, |_| {
                    r.futex.wake()
                });
            }
        });
        let (exact, want) = (2, 3);
        loop {
            let done = protocol::writer_wait_round(
                &h.needs,
                &h.waiting,
                &h.space,
                want,
                || (protocol::reader_pos(&h.pos) >= exact).then_some(()),
                |seen| h.futex.wait(&h.space, seen),
            );
            if done.is_some() {
                break;
            }
        }
        assert!(protocol::reader_pos(&h.pos) >= exact);
        protocol::writer_wait_end(&h.waiting);
        reader.join().unwrap();
    });
}

#[test]
fn a_blocked_writer_behind_two_readers_is_woken_by_the_slower() {
    // Two readers each release position 1 of a one-slot ring; the writer
    // needs both there. Each wakes only as it crosses the position the
    // writer announced, so the faster one may wake the writer before the
    // slower has released: the writer must then wait again and be woken by
    // the slower one, never sleep for ever.
    model_bounded(|| {
        let h = Arc::new(Space {
            pos: AtomicU64::new(0),
            waiting: AtomicU32::new(0),
            needs: AtomicU64::new(0),
            space: AtomicU32::new(0),
            futex: Futex::new(),
        });
        let pos2 = Arc::new(AtomicU64::new(0));
        let r = h.clone();
        let a = thread::spawn(move || {
            protocol::release(&r.pos, &r.waiting, &r.needs, &r.space, 1, |_| {
                r.futex.wake()
            });
        });
        let (r, p2) = (h.clone(), pos2.clone());
        let b = thread::spawn(move || {
            protocol::release(&*p2, &r.waiting, &r.needs, &r.space, 1, |_| r.futex.wake());
        });
        let need = 1;
        loop {
            let done = protocol::writer_wait_round(
                &h.needs,
                &h.waiting,
                &h.space,
                need,
                || {
                    (protocol::reader_pos(&h.pos) >= need && protocol::reader_pos(&*pos2) >= need)
                        .then_some(())
                },
                |seen| h.futex.wait(&h.space, seen),
            );
            if done.is_some() {
                break;
            }
        }
        protocol::writer_wait_end(&h.waiting);
        a.join().unwrap();
        b.join().unwrap();
    });
}

#[test]
fn a_reader_that_shows_its_position_lazily_still_wakes_a_blocked_writer() {
    // The reader shows its position only every 4 messages unless the
    // writer waits, and in full before it sleeps (here: after reading
    // messages 0 and 1, with nothing more to read). The writer needs it at
    // position 2: whatever the interleaving, it must be woken.
    model(|| {
        let h = Arc::new(Space {
            pos: AtomicU64::new(0),
            waiting: AtomicU32::new(0),
            needs: AtomicU64::new(0),
            space: AtomicU32::new(0),
            futex: Futex::new(),
        });
        let r = h.clone();
        let reader = thread::spawn(move || {
            for to in 1..=2 {
                protocol::release_lazily(&r.pos, &r.waiting, &r.needs, &r.space, to, 4, |_| {
                    r.futex.wake()
                });
            }
            // Before sleeping: the whole position.
            if protocol::reader_pos(&r.pos) < 2 {
                protocol::release(&r.pos, &r.waiting, &r.needs, &r.space, 2, |_| {
                    r.futex.wake()
                });
            }
        });
        let need = 2;
        loop {
            let done = protocol::writer_wait_round(
                &h.needs,
                &h.waiting,
                &h.space,
                need,
                || (protocol::reader_pos(&h.pos) >= need).then_some(()),
                |seen| h.futex.wait(&h.space, seen),
            );
            if done.is_some() {
                break;
            }
        }
        protocol::writer_wait_end(&h.waiting);
        reader.join().unwrap();
    });
}

/// A durable reader died holding message 1 uncommitted (its entry: the
/// dead PID, position 1). The blocked writer, its grace time over, gives
/// the entry up while a successor takes it over. Exactly one of them wins:
/// if the successor does, the writer still sees the entry's position and
/// leaves message 1 in the ring, and the successor reads it whole; if the
/// writer does, it overwrites message 1 with 2, and the successor, taking
/// the freed entry, reads message 1 whole or finds an overrun (counted as
/// lost), never a torn or wrong message.
#[test]
fn a_dead_readers_entry_goes_to_its_successor_or_to_the_writer_never_both() {
    const DEAD: u32 = 7;
    const ME: u32 = 9;
    model(|| {
        // A one-slot ring holding message 1 whole.
        let ring = Arc::new(Slot {
            stamp: AtomicU64::new(protocol::done_stamp(1)),
            len: AtomicU64::new(2),
            payload: [AtomicU64::new(word(1)), AtomicU64::new(word(1))],
            next_seq: AtomicU64::new(2),
        });
        let entry = Arc::new((AtomicU32::new(DEAD), AtomicU64::new(1)));
        let (w, e) = (ring.clone(), entry.clone());
        let writer = thread::spawn(move || {
            if protocol::give_up_entry(&e.0, DEAD) {
                protocol::begin_write(&w.stamp, 2);
                for p in &w.payload {
                    p.store(word(2), Ordering::Relaxed);
                }
                protocol::end_write(&w.stamp, &w.len, 2, 2);
                protocol::publish(&w.next_seq, 2);
                true
            } else {
                // The successor holds the entry: message 2 would overwrite
                // message 1, which it has not committed, so the writer waits.
                assert!(protocol::reader_pos(&e.1) <= 1);
                false
            }
        });
        let took_dead = protocol::take_entry(&entry.0, &entry.1, DEAD, ME);
        let pos = match took_dead {
            Some(p) => p,
            None => protocol::take_entry(&entry.0, &entry.1, 0, ME).expect("given up: free"),
        };
        assert_eq!(pos, 1, "resumes at the first message not committed");
        let got = protocol::read(&ring.stamp, &ring.len, pos, |n| {
            (
                n,
                ring.payload[0].load(Ordering::Relaxed),
                ring.payload[1].load(Ordering::Relaxed),
            )
        });
        let wrote = writer.join().unwrap();
        assert!(
            !(took_dead.is_some() && wrote),
            "both the successor and the writer won the entry"
        );
        match got {
            Read::Got(m) => assert_eq!(m, (2, word(1), word(1)), "message 1 torn"),
            Read::NotYet | Read::Overrun(_) => {
                assert!(
                    wrote,
                    "message 1 left the ring while its successor held the entry"
                )
            }
        }
    });
}
