//! Large messages, which the writer copies into their slots with streaming
//! stores: whole or not delivered under overwrite, all of them in order
//! under back-pressure.

mod common;
use common::Chan;

use ptmp_shm::{stream_threshold, ChannelConfig, Policy, Reader, StartAt, Writer};
use std::time::Duration;

/// A message of `len` bytes, every byte the low byte of `seq`.
fn fill(seq: u64, buf: &mut Vec<u8>, len: usize) {
    buf.clear();
    buf.resize(len, seq as u8);
}

/// Every byte of `b` is the same: that of message `seq`. (Comparing the
/// message with itself shifted by one keeps this a `memcmp`.)
fn whole(b: &[u8], seq: u64) -> bool {
    b.first() == Some(&(seq as u8)) && b[1..] == b[..b.len() - 1]
}

fn config(policy: Policy, len: usize) -> ChannelConfig {
    ChannelConfig {
        slots: 2,
        max_message: len,
        policy,
    }
}

/// A writer streaming into a ring of two slots as fast as it can, against
/// two readers copying each message out that wait, after each message,
/// until the writer has lapped them: they are overrun and read slots being
/// rewritten, and every message they deliver is one message whole. (The
/// readers watch the writer's sequence number rather than sleep, so they
/// are lapped however long the writer takes to fill a message: the
/// messages are an eighth of the L3, tens of megabytes on some hosts.)
#[test]
fn streamed_messages_are_delivered_whole_or_counted_lost() {
    let len = stream_threshold() + 4096 + 17;
    let c = Chan::new("stream-overwrite");
    let n = 40u64;
    let mut w = Writer::create(&c.0, config(Policy::Overwrite, len)).unwrap();
    let readers: Vec<_> = (0..2)
        .map(|k| {
            let mut r = Reader::attach(&c.0, StartAt::Next).unwrap();
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut got = 0u64;
                while r.position() < n {
                    let Some(g) = r.recv_into(&mut buf, Some(Duration::from_secs(60))) else {
                        panic!("reader {k} stalled at {}", r.position());
                    };
                    assert_eq!(buf.len(), len, "reader {k}, message {}", g.seq);
                    assert!(whole(&buf, g.seq), "reader {k}: message {} torn", g.seq);
                    got += 1;
                    // Wait until the writer has written two more messages
                    // into the two slots after the next one: that one is
                    // gone when this reader asks for it.
                    let lapped = (g.seq + 4).min(n);
                    let t0 = std::time::Instant::now();
                    while r.published() < lapped {
                        assert!(
                            t0.elapsed() < Duration::from_secs(120),
                            "reader {k}: the writer stopped at {}",
                            r.published()
                        );
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                (got, r.lost())
            })
        })
        .collect();
    let mut m = Vec::new();
    for s in 0..n {
        fill(s, &mut m, len);
        w.publish(&m).unwrap();
    }
    for h in readers {
        let (got, lost) = h.join().unwrap();
        assert_eq!(got + lost, n, "every message received or counted lost");
        assert!(got > 0);
        assert!(lost > 0, "the readers were overrun (what this test is for)");
    }
}

/// Under back-pressure every streamed message arrives, in order, whole,
/// whether written with `Loan::copy_in` or `Writer::publish`, and read in
/// place or copied out.
#[test]
fn streamed_messages_all_arrive_under_back_pressure() {
    let len = stream_threshold() + 100;
    let c = Chan::new("stream-block");
    let n = 60u64;
    let mut w = Writer::create(&c.0, config(Policy::Block, len)).unwrap();
    let mut r = Reader::attach(&c.0, StartAt::Next).unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        for s in 0..n {
            if s % 2 == 0 {
                let v = r.view_checked(Some(Duration::from_secs(10))).unwrap();
                let v = v.expect("a message within 10 s");
                assert_eq!(v.received.seq, s);
                assert!(whole(v.bytes(), s), "message {s} read in place");
                assert!(v.valid());
            } else {
                let g = r.recv_into(&mut buf, Some(Duration::from_secs(10)));
                assert_eq!(g.expect("a message within 10 s").seq, s);
                assert!(whole(&buf, s), "message {s} copied out");
            }
        }
        r.lost()
    });
    let mut m = Vec::new();
    for s in 0..n {
        fill(s, &mut m, len);
        if s % 3 == 0 {
            let mut loan = w.loan(len).unwrap();
            loan.copy_in(&m);
            assert_eq!(loan.commit(), s);
        } else {
            assert_eq!(w.publish(&m).unwrap(), s);
        }
    }
    assert_eq!(
        reader.join().unwrap(),
        0,
        "nothing lost under back-pressure"
    );
}

/// A view held while the writer streams two more messages into the ring
/// of two slots, the second into the view's own slot, is reported void.
#[test]
fn a_view_overwritten_by_a_streamed_message_is_void() {
    let len = stream_threshold() + 1;
    let c = Chan::new("stream-void");
    let mut w = Writer::create(&c.0, config(Policy::Overwrite, len)).unwrap();
    let mut r = Reader::attach(&c.0, StartAt::Next).unwrap();
    let mut m = Vec::new();
    fill(0, &mut m, len);
    w.publish(&m).unwrap();
    let v = r
        .view_checked(Some(Duration::ZERO))
        .unwrap()
        .expect("message 0");
    assert!(whole(v.bytes(), 0) && v.valid());
    fill(1, &mut m, len);
    w.publish(&m).unwrap();
    assert!(v.valid(), "message 1 went to the other slot");
    fill(2, &mut m, len);
    w.publish(&m).unwrap();
    assert!(whole(v.bytes(), 2), "the slot holds message 2 now");
    assert!(!v.valid(), "and the view of message 0 says so");
}
