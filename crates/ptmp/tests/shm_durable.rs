//! Receivers with an identity in their shm:// rings: they resume where
//! they committed, one identity has one live receiver, and the identity
//! keys are checked like every other key.

mod common;
use common::Chan;

use ptmp::{Error, Receiver, Sender, SocketConfig, SocketType, TPSet};
use serde_json::json;
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(5));

fn pull(c: &Chan, id: &str) -> ptmp::Result<Receiver> {
    Receiver::from_json(
        &json!({"socket": {"type": "PULL", "connect": [c.ep()],
                           "shm_reader_id": id, "shm_reader_grace_ms": 2000}})
        .to_string(),
    )
}

fn set(count: u32) -> TPSet {
    TPSet {
        count,
        detid: 1,
        ..Default::default()
    }
}

#[test]
fn a_receiver_resumes_where_it_committed_and_one_identity_has_one_receiver() {
    let c = Chan::new("resume");
    let mut tx = Sender::from_json(
        &json!({"socket": {"type": "PUSH", "bind": [c.ep()], "shm_slots": 8,
                           "shm_block_timeout_ms": 300}})
        .to_string(),
    )
    .unwrap();
    let mut rx = pull(&c, "g/w/in").unwrap();
    let e = pull(&c, "g/w/in")
        .err()
        .expect("second live receiver refused");
    // A reader connects to a ring: refused, it says so.
    assert!(matches!(e, Error::Connect { .. }), "{e}");
    let text = e.to_string();
    assert!(text.starts_with("cannot connect shm://"), "{text}");
    assert!(
        text.contains("\"g/w/in\"") && text.contains(&std::process::id().to_string()),
        "{text}"
    );
    for n in 0..6 {
        tx.send(&set(n)).unwrap();
    }
    for n in 0..6 {
        assert_eq!(rx.recv(T).unwrap().unwrap().count, n);
        if n == 2 {
            rx.commit_now();
        }
    }
    // 4 and 5 were returned but not committed: the ring keeps them (8
    // slots from 3: messages up to 10 fit, the twelfth waits).
    for n in 6..11 {
        tx.send(&set(n)).unwrap();
    }
    let e = tx.send(&set(11)).unwrap_err();
    assert!(matches!(e, Error::Timeout { .. }), "{e}");
    drop(rx);
    let mut rx = pull(&c, "g/w/in").unwrap();
    for n in 3..11 {
        assert_eq!(rx.recv(T).unwrap().unwrap().count, n);
        rx.commit();
    }
    tx.send(&set(11)).unwrap();
    assert_eq!(rx.recv(T).unwrap().unwrap().count, 11);
    assert_eq!(rx.lost(), 0);
    // Without an identity, commit changes nothing: the receiver starts at
    // the oldest set in the ring and reads on.
    let mut plain =
        Receiver::from_json(&json!({"socket": {"type": "PULL", "connect": [c.ep()]}}).to_string())
            .unwrap();
    plain.commit();
    tx.send(&set(12)).unwrap();
    let mut got = Vec::new();
    while let Some(s) = plain.recv(Some(Duration::from_millis(200))).unwrap() {
        got.push(s.count);
        plain.commit();
    }
    // (The writer, which had room, may overwrite the oldest before this
    // late receiver reads them: those are counted as lost.)
    assert_eq!(got.last(), Some(&12));
    assert!(got.windows(2).all(|w| w[1] == w[0] + 1), "{got:?}");
    assert_eq!(
        got.len() as u64 + plain.lost(),
        9,
        "from the oldest, 4, to 12"
    );
}

#[test]
fn shm_receivers_count_bytes() {
    let c = Chan::new("bytes");
    let mut tx =
        Sender::from_json(&json!({"socket": {"type": "PUSH", "bind": [c.ep()]}}).to_string())
            .unwrap();
    let mut rx = pull(&c, "bytes/in").unwrap();
    for n in 0..10 {
        tx.send(&set(n)).unwrap();
    }
    for _ in 0..10 {
        rx.recv(T).unwrap().unwrap();
    }
    let ep = c.ep();
    let snap = ptmp::meter::snapshot(false);
    let mine: Vec<_> = snap
        .iter()
        .filter(|s| s.endpoints == [ep.clone()])
        .collect();
    let rx_row = mine
        .iter()
        .find(|s| s.dir == ptmp::meter::Dir::Recv)
        .unwrap();
    assert_eq!(rx_row.messages, 10);
    // Each message: the 4-byte version frame and the encoded set.
    let mut enc = Vec::new();
    ptmp::data::codec::encode_tpset(&set(1), &mut enc);
    let one = 4 + enc.len() as u64;
    assert!(
        rx_row.bytes >= 10 * (one - 1) && rx_row.bytes <= 10 * (one + 1),
        "{rx_row:?}"
    );
}

#[test]
fn identity_keys_are_checked_and_read_back() {
    let c = SocketConfig::from_json(
        r#"{"socket": {"type": "PULL", "connect": "shm://x", "shm_reader_id": "g/n/in", "shm_reader_grace_ms": 30000}}"#,
    )
    .unwrap();
    assert_eq!(c.shm_reader_id(), Some("g/n/in"));
    assert_eq!(c.shm_reader_grace(), Duration::from_secs(30));
    assert_eq!(
        SocketConfig::from_json(&c.to_json().to_string()).unwrap(),
        c
    );
    let built = SocketConfig::builder(SocketType::Pull)
        .connect("shm://x")
        .shm_reader_id("g/n/in")
        .shm_reader_grace(Duration::from_secs(30))
        .build()
        .unwrap();
    assert_eq!(built, c);
    for (bad, want) in [
        (
            r#"{"socket": {"type": "PUSH", "bind": "shm://x", "shm_reader_id": "a"}}"#,
            "socket.shm_reader_id = \"a\": only a receiver",
        ),
        (
            r#"{"socket": {"type": "PULL", "connect": "shm://x", "shm_reader_id": ""}}"#,
            "socket.shm_reader_id = \"\": must be 1 to 255 bytes",
        ),
        (
            r#"{"socket": {"type": "PULL", "connect": "shm://x", "shm_reader_id": 7}}"#,
            "socket.shm_reader_id",
        ),
        (
            r#"{"socket": {"type": "PULL", "connect": "shm://x", "shm_reader_grace_ms": -1}}"#,
            "socket.shm_reader_grace_ms = -1",
        ),
    ] {
        let e = SocketConfig::from_json(bad).unwrap_err().to_string();
        assert!(e.contains(want), "{bad}: {e}");
    }
}

fn push(c: &Chan, linger_ms: u64) -> Sender {
    Sender::from_json(
        &json!({"socket": {"type": "PUSH", "bind": [c.ep()], "shm_slots": 16,
                           "linger_ms": linger_ms}})
        .to_string(),
    )
    .unwrap()
}

#[test]
fn a_sender_counts_what_a_durable_receiver_has_not_committed_as_undelivered() {
    // Every set read, the first four committed: the six others are still
    // the receiver's to hand on, so the ring keeps them and the sender
    // cannot call them delivered.
    let c = Chan::new("uncommitted");
    let mut tx = push(&c, 200);
    let mut rx = pull(&c, "g/w/slow").unwrap();
    for n in 0..10 {
        tx.send(&set(n)).unwrap();
    }
    for n in 0..10 {
        assert_eq!(rx.recv(T).unwrap().unwrap().count, n);
        if n == 3 {
            rx.commit_now();
        }
    }
    let d = tx.finish();
    assert_eq!(d.sent, 10);
    assert_eq!(d.undelivered, ptmp::Undelivered::AtMost(6), "{d:?}");
    let why = d.reason.unwrap_or_default();
    assert!(
        why.contains(&c.ep())
            && why.contains(&format!("durable reader (pid {})", std::process::id()))
            && why.ends_with("has not committed 6"),
        "{why}"
    );
    // Senders dropped without a finish neither wait nor report.
    for n in 10..13 {
        let mut tx = push(&c, 10_000);
        tx.send(&set(n)).unwrap();
    }
    // The receiver reads on and commits from another thread while the
    // last sender finishes, which waits for that.
    let mut tx = push(&c, 10_000);
    tx.send(&set(13)).unwrap();
    let t = std::thread::spawn(move || {
        let mut got = Vec::new();
        while let Some(s) = rx.recv(T).unwrap() {
            got.push(s.count);
            rx.commit();
            if s.count == 13 {
                break;
            }
        }
        rx.commit_now();
        got
    });
    let d = tx.finish();
    assert_eq!(d.undelivered, ptmp::Undelivered::None, "{d:?}");
    assert_eq!(d.reason, None);
    assert_eq!(t.join().unwrap(), (10..14).collect::<Vec<_>>());
}
