//! What an shm:// PUSH sender counts in its live counters (`ptmp::meter`)
//! when its ring is full: a stall per message that had to wait, shown as
//! the wait begins, and the durable readers its ring gave up, with a real
//! reader process killed.

mod common;
use common::Chan;

use ptmp::meter::{self, Dir, Snapshot};
use ptmp::{Error, Receiver, Sender, TPSet};
use serde_json::json;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn set(count: u32) -> TPSet {
    TPSet {
        count,
        detid: 3,
        ..Default::default()
    }
}

/// The counters of the sender on `ep`.
fn sender(ep: &str) -> Snapshot {
    meter::snapshot(false)
        .into_iter()
        .find(|s| s.dir == Dir::Send && s.endpoints == [ep])
        .expect("the sender is registered")
}

fn push(c: &Chan, slots: usize, block_ms: u64) -> Sender {
    Sender::from_json(
        &json!({"socket": {"type": "PUSH", "bind": [c.ep()], "shm_slots": slots,
                           "shm_block_timeout_ms": block_ms}})
        .to_string(),
    )
    .unwrap()
}

fn pull(c: &Chan) -> Receiver {
    Receiver::from_json(&json!({"socket": {"type": "PULL", "connect": [c.ep()]}}).to_string())
        .unwrap()
}

/// A reader that stops reading fills a small ring: the send that finds it
/// full is one stall, however often it is tried again after timing out,
/// and a blocking send that has to wait is another, shown while it waits.
#[test]
#[cfg_attr(feature = "no-counters", ignore = "built without counters")]
fn a_full_ring_stalls_its_sender() {
    let c = Chan::new("full");
    let ep = c.ep();
    let mut tx = push(&c, 4, 50);
    let rx = pull(&c);
    for i in 0..4 {
        tx.send(&set(i)).unwrap();
    }
    assert_eq!(sender(&ep).stalls, 0, "four sets fit in four slots");
    for _ in 0..3 {
        let e = tx.send(&set(4)).unwrap_err();
        assert!(matches!(e, Error::Timeout { .. }), "{e}");
    }
    assert_eq!(sender(&ep).stalls, 1, "one set, tried three times");
    // In slices, as agents send: the same set, still one stall.
    tx.wait_in_slices();
    assert!(!tx.send_within(&set(4), Duration::ZERO).unwrap());
    assert_eq!(sender(&ep).stalls, 1);
    drop((tx, rx));
    // A blocking send waits until the reader makes room; the reader starts
    // only once it sees the stall counted, so the wait is certain, and the
    // count shows while the sender still waits.
    let c = Chan::new("wait");
    let ep = c.ep();
    let mut tx = push(&c, 4, 20_000);
    let mut rx = pull(&c);
    for i in 0..4 {
        tx.send(&set(i)).unwrap();
    }
    std::thread::scope(|sc| {
        let ep = ep.clone();
        let reader = sc.spawn(move || {
            let t0 = Instant::now();
            while sender(&ep).stalls < 1 {
                assert!(t0.elapsed() < Duration::from_secs(20), "no stall shown");
                std::thread::yield_now();
            }
            let mut t = TPSet::default();
            let mut got = vec![];
            while rx
                .recv_into(&mut t, Some(Duration::from_millis(500)))
                .unwrap()
            {
                got.push(t.count);
            }
            got
        });
        tx.send(&set(4)).expect("blocking send");
        assert_eq!(reader.join().unwrap(), [0, 1, 2, 3, 4]);
    });
    assert_eq!(sender(&ep).stalls, 1);
}

/// A reader that keeps up with a ring bigger than what is sent: no stall.
#[test]
#[cfg_attr(feature = "no-counters", ignore = "built without counters")]
fn a_ring_with_room_counts_no_stall() {
    let c = Chan::new("room");
    let mut tx = push(&c, 1024, 10_000);
    let mut rx = pull(&c);
    let h = std::thread::spawn(move || {
        let mut t = TPSet::default();
        for i in 0..500 {
            assert!(rx.recv_into(&mut t, Some(Duration::from_secs(20))).unwrap());
            assert_eq!(t.count, i);
        }
    });
    for i in 0..500 {
        tx.send(&set(i)).unwrap();
    }
    h.join().unwrap();
    let s = sender(&c.ep());
    assert_eq!((s.messages, s.stalls, s.readers_given_up), (500, 0, 0));
}

/// Runs only in a child process started by the test below: a durable
/// receiver that attaches and then hangs until it is killed.
#[test]
fn child_role() {
    let Ok(ep) = std::env::var("PTMP_STALLS_CHILD_EP") else {
        return;
    };
    let _rx = Receiver::from_json(
        &json!({"socket": {"type": "PULL", "connect": [ep],
                           "shm_reader_id": "g/sink/in", "shm_reader_grace_ms": 200}})
        .to_string(),
    )
    .unwrap();
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// A durable receiver killed with SIGKILL holds its sender back for its
/// grace time; then the ring gives it up, and the sender counts one reader
/// given up (and the stall it waited in).
#[test]
#[cfg_attr(feature = "no-counters", ignore = "built without counters")]
fn a_dead_durable_reader_given_up_is_counted() {
    let c = Chan::new("givenup");
    let mut tx = push(&c, 4, 20_000);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_role", "--test-threads", "1"])
        .env("PTMP_STALLS_CHILD_EP", c.ep())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !ptmp_shm::inspect(&c.0)
        .unwrap()
        .1
        .iter()
        .any(|r| r.durable && r.alive)
    {
        assert!(t0.elapsed() < Duration::from_secs(20), "no durable reader");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(sender(&c.ep()).readers_given_up, 0);
    // Four sets fill the ring; the fifth waits for the dead reader until
    // its grace time has passed.
    for i in 0..20 {
        tx.send(&set(i)).unwrap();
    }
    let s = sender(&c.ep());
    assert_eq!((s.readers_given_up, s.stalls), (1, 1), "{s:?}");
}
