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
    futex: Futex,
}

#[test]
fn a_sleeping_reader_is_woken_by_a_publish() {
    model(|| {
        let h = Arc::new(Wakeup {
            next_seq: AtomicU64::new(0),
            waiters: AtomicU32::new(0),
            notify: AtomicU32::new(0),
            futex: Futex::new(),
        });
        let w = h.clone();
        let writer = thread::spawn(move || {
            protocol::publish(&w.next_seq, 0);
            protocol::notify_readers(&w.waiters, &w.notify, |_| w.futex.wake());
        });
        // The reader's wait: look, and sleep until something is published.
        // Deadlocks (and loom fails) if a wake-up can be lost.
        let pos = 0;
        while h.next_seq.load(Ordering::Acquire) <= pos {
            protocol::reader_sleep(
                &h.waiters,
                &h.notify,
                || h.next_seq.load(Ordering::SeqCst) > pos,
                |seen| h.futex.wait(&h.notify, seen),
            );
        }
        writer.join().unwrap();
    });
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
