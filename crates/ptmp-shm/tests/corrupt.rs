//! Shared memory changed under a live channel by someone else: every field
//! a reader or writer loops on is written with nonsense from outside (as
//! another program with access to the file could), and every receive must
//! end with a corruption error naming the field, or a timeout, in bounded
//! time: never a spin.

mod common;
use common::Chan;

use ptmp_shm::{
    segment_path, ChannelConfig, Policy, Reader, ShmError, StartAt, Writer, HEADER_SIZE,
};
use std::os::unix::fs::FileExt;
use std::sync::mpsc;
use std::time::Duration;

// Header offsets (see the Header struct in ptmp-shm).
const SLOT_COUNT: u64 = 16;
const MAX_MESSAGE: u64 = 24;
const SLOT_STRIDE: u64 = 32;
const WRITER_PID: u64 = 64;
const NEXT_SEQ: u64 = 128;
const REGISTRY: u64 = 4096;
/// Stride of the 256-byte channels below: 16 + 256 rounded up to 64.
const STRIDE: u64 = 320;

impl Chan {
    /// Write `bytes` at `off` in the segment file: the page cache is what
    /// every process maps, so this is what another program would do.
    fn poke(&self, off: u64, bytes: &[u8]) {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(segment_path(&self.0).unwrap())
            .unwrap();
        f.write_all_at(bytes, off).unwrap();
    }

    fn poke_u64(&self, off: u64, v: u64) {
        self.poke(off, &v.to_ne_bytes());
    }

    fn stamp_at(slot: u64) -> u64 {
        HEADER_SIZE as u64 + slot * STRIDE
    }
}

fn cfg(slots: usize, policy: Policy) -> ChannelConfig {
    ChannelConfig {
        slots,
        max_message: 256,
        policy,
    }
}

/// Run `f` on another thread and give up (failing the test) if it has not
/// returned within 20 s: the old code spun forever here.
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{what}: still running after 20 s (spinning on corrupt state)"))
}

/// A receive on a reader of channel `c` after `corrupt` ran: must be a
/// Corrupt error naming `field` and the channel.
fn expect_corrupt(c: &Chan, r: Reader, field: &'static str) {
    let name = c.0.clone();
    let got = bounded(field, move || {
        let mut r = r;
        let mut buf = Vec::new();
        let mut out = Vec::new();
        // Several receives: the error must be sticky, not a one-off.
        for _ in 0..3 {
            out.push(r.recv(&mut buf, Some(Duration::from_secs(3))));
        }
        out
    });
    for g in got {
        match g {
            Err(ShmError::Corrupt {
                name: n,
                field: f,
                detail,
            }) => {
                assert_eq!(n, name);
                assert!(
                    f.contains(field),
                    "field {f:?} ({detail}), expected {field}"
                );
                let e = ShmError::Corrupt {
                    name: n,
                    field: f,
                    detail,
                }
                .to_string();
                assert!(e.contains("corrupt") && e.contains(&name), "{e}");
            }
            other => panic!("expected a corruption error about {field}, got {other:?}"),
        }
    }
}

fn publish(w: &mut Writer, n: usize) {
    for i in 0..n {
        w.publish(format!("m{i}").as_bytes()).unwrap();
    }
}

#[test]
fn next_seq_beyond_the_stamps_is_corruption_not_a_spin() {
    let c = Chan::new("ahead");
    let mut w = Writer::create(&c.0, cfg(8, Policy::Overwrite)).unwrap();
    publish(&mut w, 3);
    let mut r = Reader::attach(&c.0, StartAt::Oldest).unwrap();
    let mut buf = Vec::new();
    for s in 0..3 {
        assert_eq!(r.try_recv(&mut buf).unwrap().unwrap().seq, s);
    }
    // Claims 1000 messages, but slot 3 was never written.
    c.poke_u64(NEXT_SEQ, 1000);
    expect_corrupt(&c, r, "stamp");
}

#[test]
fn a_busy_polling_reader_reports_corruption_too() {
    // A busy-polling reader watches the slot of its next message, not
    // `next_seq`: it must still learn that `next_seq` claims messages the
    // slots do not hold, on both paths, well within the timeout.
    let c = Chan::new("busy");
    let mut w = Writer::create(&c.0, cfg(8, Policy::Overwrite)).unwrap();
    publish(&mut w, 3);
    let mut r = Reader::attach(&c.0, StartAt::Next).unwrap();
    r.set_spin(u32::MAX);
    let mut v = Reader::attach(&c.0, StartAt::Next).unwrap();
    v.set_spin(u32::MAX);
    c.poke_u64(NEXT_SEQ, 1000);
    expect_corrupt(&c, r, "stamp");
    let e = bounded("busy view", move || {
        let t0 = std::time::Instant::now();
        let e = v.view_checked(Some(Duration::from_secs(10))).err();
        (e.map(|e| e.to_string()), t0.elapsed())
    });
    let (e, took) = (e.0.expect("an error"), e.1);
    assert!(e.contains("corrupt") && e.contains("stamp"), "{e}");
    assert!(took < Duration::from_secs(5), "reported after {took:?}");
}

#[test]
fn next_seq_going_back_is_corruption() {
    let c = Chan::new("back");
    let mut w = Writer::create(&c.0, cfg(8, Policy::Overwrite)).unwrap();
    publish(&mut w, 5);
    let mut r = Reader::attach(&c.0, StartAt::Next).unwrap();
    c.poke_u64(NEXT_SEQ, 2);
    let mut buf = Vec::new();
    let e = bounded("back", move || {
        r.recv(&mut buf, Some(Duration::from_secs(3)))
            .err()
            .map(|e| e.to_string())
    })
    .expect("an error");
    assert!(
        e.contains("next_seq") && e.contains("went back from 5 to 2"),
        "{e}"
    );
}

#[test]
fn next_seq_beyond_any_possible_message_is_refused_everywhere() {
    let c = Chan::new("huge");
    let mut w = Writer::create(&c.0, cfg(8, Policy::Overwrite)).unwrap();
    publish(&mut w, 2);
    let r = Reader::attach(&c.0, StartAt::Next).unwrap();
    c.poke_u64(NEXT_SEQ, u64::MAX - 3);
    expect_corrupt(&c, r, "next_seq");
    // A new reader and a new writer refuse it at once.
    let e = Reader::attach(&c.0, StartAt::Next)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("next_seq"), "{e}");
    drop(w);
    let e = Writer::create(&c.0, cfg(8, Policy::Overwrite))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("next_seq"), "{e}");
}

#[test]
fn a_stamp_of_another_slot_is_corruption() {
    let c = Chan::new("slot");
    let mut w = Writer::create(&c.0, cfg(8, Policy::Overwrite)).unwrap();
    publish(&mut w, 1);
    let r = Reader::attach(&c.0, StartAt::Oldest).unwrap();
    // Message 5 lives in slot 5, never in slot 0.
    c.poke_u64(Chan::stamp_at(0), 2 * 5 + 2);
    expect_corrupt(&c, r, "slot 0 stamp");
}

#[test]
fn stamps_beyond_next_seq_are_corruption_not_an_endless_resync() {
    let c = Chan::new("future");
    let mut w = Writer::create(&c.0, cfg(8, Policy::Overwrite)).unwrap();
    publish(&mut w, 4);
    let r = Reader::attach(&c.0, StartAt::Oldest).unwrap();
    // Every slot claims a message of its own slot far in the future.
    for i in 0..8 {
        c.poke_u64(Chan::stamp_at(i), 2 * (i + 8 * 1_000_000) + 2);
    }
    expect_corrupt(&c, r, "stamp");
}

#[test]
fn header_fields_changed_after_open_are_reported_by_a_waiting_reader() {
    for (off, val, field) in [
        (SLOT_COUNT, 4u64, "slot_count"),
        (MAX_MESSAGE, 1 << 20, "max_message"),
        (SLOT_STRIDE, 64, "slot_stride"),
        (WRITER_PID, u64::from(u32::MAX - 7), "writer_pid"),
    ] {
        let c = Chan::new("layout");
        let mut w = Writer::create(&c.0, cfg(8, Policy::Overwrite)).unwrap();
        publish(&mut w, 2);
        let r = Reader::attach(&c.0, StartAt::Next).unwrap();
        if off == SLOT_COUNT || off == WRITER_PID {
            // 32-bit fields.
            c.poke(off, &(val as u32).to_ne_bytes());
        } else {
            c.poke_u64(off, val);
        }
        expect_corrupt(&c, r, field);
        drop(w);
    }
}

#[test]
fn the_view_path_reports_corruption_too() {
    let c = Chan::new("view");
    let mut w = Writer::create(&c.0, cfg(8, Policy::Overwrite)).unwrap();
    publish(&mut w, 3);
    let mut r = Reader::attach(&c.0, StartAt::Next).unwrap();
    c.poke_u64(NEXT_SEQ, 40);
    let e = bounded("view", move || {
        r.view_checked(Some(Duration::from_secs(3)))
            .err()
            .map(|e| e.to_string())
    })
    .expect("an error");
    assert!(e.contains("corrupt") && e.contains("stamp"), "{e}");
}

#[test]
fn registry_garbage_is_an_error_for_a_blocked_writer() {
    // A PID no Linux process can have.
    let c = Chan::new("reg-pid");
    let mut w = Writer::create(&c.0, cfg(4, Policy::Block)).unwrap();
    w.set_block_timeout(Duration::from_secs(3));
    let r = Reader::attach(&c.0, StartAt::Next).unwrap();
    drop(r);
    c.poke(REGISTRY + 64 * 5, &(u32::MAX - 1).to_ne_bytes());
    let e = bounded("reg-pid", move || {
        let mut err = None;
        for i in 0..10 {
            if let Err(e) = w.publish(format!("m{i}").as_bytes()) {
                err = Some(e.to_string());
                break;
            }
        }
        err
    })
    .expect("an error");
    assert!(e.contains("reader registry entry 5 pid"), "{e}");

    // A live PID (this test's) at a position beyond anything written.
    let c = Chan::new("reg-pos");
    let mut w = Writer::create(&c.0, cfg(4, Policy::Block)).unwrap();
    w.set_block_timeout(Duration::from_secs(3));
    let r = Reader::attach(&c.0, StartAt::Next).unwrap();
    c.poke_u64(REGISTRY + 8, 1 << 40);
    let e = bounded("reg-pos", move || {
        let mut err = None;
        for i in 0..10 {
            if let Err(e) = w.publish(format!("m{i}").as_bytes()) {
                err = Some(e.to_string());
                break;
            }
        }
        err
    })
    .expect("an error");
    assert!(e.contains("reader registry entry 0 position"), "{e}");
    drop(r);
}

/// Random bytes over the header's moving fields and the slot stamps, many
/// times: whatever lands there, a receive ends (message, timeout or error)
/// and nothing panics.
#[test]
fn random_corruption_always_ends_in_bounded_time() {
    let c = Chan::new("random");
    let mut w = Writer::create(&c.0, cfg(8, Policy::Overwrite)).unwrap();
    publish(&mut w, 20);
    let name = c.0.clone();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let spots: Vec<u64> = [NEXT_SEQ, WRITER_PID]
        .into_iter()
        .chain((0..8).map(Chan::stamp_at))
        .collect();
    let mut outcomes = [0usize; 3];
    for round in 0..300 {
        let mut r = Reader::attach(&name, StartAt::Oldest)
            .or_else(|_| {
                // A previous round left nonsense that attach refuses: restore.
                c.poke_u64(NEXT_SEQ, 20);
                c.poke(WRITER_PID, &0u32.to_ne_bytes());
                Reader::attach(&name, StartAt::Oldest)
            })
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        for _ in 0..1 + next() % 3 {
            let at = spots[(next() % spots.len() as u64) as usize];
            let v = match next() % 4 {
                0 => next(),
                1 => next() % 64,
                2 => u64::MAX - next() % 4,
                _ => 2 * (next() % 64) + 2,
            };
            if at == WRITER_PID {
                c.poke(at, &(v as u32).to_ne_bytes());
            } else {
                c.poke_u64(at, v);
            }
        }
        let got = bounded("random", move || {
            let mut buf = Vec::new();
            let mut ends = Vec::new();
            for _ in 0..4 {
                let g = r.recv(&mut buf, Some(Duration::from_millis(20)));
                let stop = !matches!(g, Ok(Some(_)));
                ends.push(g.map(|o| o.is_some()).map_err(|e| e.to_string()));
                if stop {
                    break;
                }
            }
            ends
        });
        for g in got {
            outcomes[match g {
                Ok(true) => 0,
                Ok(false) => 1,
                Err(e) => {
                    assert!(e.contains("corrupt"), "{e}");
                    2
                }
            }] += 1;
        }
        // Put sane values back for the next round.
        c.poke_u64(NEXT_SEQ, 20);
        c.poke(WRITER_PID, &0u32.to_ne_bytes());
        for i in 0..8u64 {
            c.poke_u64(Chan::stamp_at(i), 2 * (12 + i) + 2);
        }
    }
    // The corruption was noticed, not just waited out.
    assert!(outcomes[2] > 50, "outcomes {outcomes:?}");
    drop(w);
}

#[test]
fn read_at_any_sequence_number_is_an_answer_not_a_panic() {
    let c = Chan::new("read-at");
    let mut w = Writer::create(&c.0, cfg(8, Policy::Overwrite)).unwrap();
    publish(&mut w, 3);
    let r = Reader::attach(&c.0, StartAt::Oldest).unwrap();
    let mut buf = Vec::new();
    assert_eq!(r.read_at(1, &mut buf), Ok(true));
    for seq in [3, u64::MAX / 2, u64::MAX - 1, u64::MAX] {
        assert_eq!(r.read_at(seq, &mut buf), Ok(false), "seq {seq}");
    }
}

/// The `Option` receives cannot say why, but they do not return at once
/// either: a caller looping on them waits out its timeout, not a spin.
#[test]
fn option_receives_on_a_corrupt_segment_wait_out_their_timeout() {
    let c = Chan::new("option");
    let mut w = Writer::create(&c.0, cfg(8, Policy::Overwrite)).unwrap();
    publish(&mut w, 2);
    let mut r = Reader::attach(&c.0, StartAt::Next).unwrap();
    c.poke_u64(NEXT_SEQ, 50);
    let mut buf = Vec::new();
    let t = Duration::from_millis(200);
    let t0 = std::time::Instant::now();
    assert!(r.recv_into(&mut buf, Some(t)).is_none());
    assert!(r.view(Some(t)).is_none());
    assert!(r.try_recv_into(&mut buf).is_none());
    assert!(t0.elapsed() >= 2 * t, "returned after {:?}", t0.elapsed());
    assert!(r.recv(&mut buf, Some(t)).is_err());
}
