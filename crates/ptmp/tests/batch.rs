//! Sending and receiving many TPSets per call, over shm:// and zmq.

use ptmp::{Error, Receiver, Sender, TPSet, TrigPrim};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(5));

/// A channel or endpoint name unique to this test run.
fn unique(tag: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "ptmp-batch-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn tpset(count: u32) -> TPSet {
    TPSet {
        count,
        detid: 3,
        created: 11,
        tstart: u64::from(count) * 25,
        tps: (0..count % 4)
            .map(|c| TrigPrim {
                channel: c,
                tstart: 5,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// A PUSH/PULL pair on `bind` (the sender binds; the receiver connects to
/// what it bound).
fn pair(bind: &str) -> (Sender, Receiver) {
    let tx = Sender::from_json(
        &json!({"socket": {"type": "PUSH", "bind": [bind], "shm_slots": 64}}).to_string(),
    )
    .unwrap();
    let ep = tx
        .bound_endpoints()
        .first()
        .cloned()
        .unwrap_or(bind.to_string());
    let rx = Receiver::from_json(&json!({"socket": {"type": "PULL", "connect": [ep]}}).to_string())
        .unwrap();
    (tx, rx)
}

/// Send `n` sets in batches of 50 from a thread while receiving them in
/// batches of up to 16: every set arrives, whole and in order, and the
/// receiver reuses the sets it was given.
fn batches_arrive_in_order(bind: &str) {
    let (mut tx, mut rx) = pair(bind);
    let n = 1000u32;
    let sender = std::thread::spawn(move || {
        let all: Vec<TPSet> = (0..n).map(tpset).collect();
        for chunk in all.chunks(50) {
            tx.send_batch(chunk).unwrap();
        }
        assert_eq!(tx.sent(), u64::from(n));
        tx
    });
    let mut out = vec![TPSet::default(); 16];
    let mut next = 0u32;
    let mut calls = 0;
    while next < n {
        let got = rx.recv_batch(&mut out, T).unwrap();
        assert!(got > 0, "timed out at {next}");
        assert!(got <= out.len());
        for s in &out[..got] {
            assert_eq!(s, &tpset(next));
            next += 1;
        }
        calls += 1;
    }
    assert_eq!(rx.received(), u64::from(n));
    assert!(calls <= n as usize);
    // Nothing more: a batch call then times out with nothing filled.
    assert_eq!(
        rx.recv_batch(&mut out, Some(Duration::from_millis(50)))
            .unwrap(),
        0
    );
    drop(sender.join().unwrap());
}

#[test]
fn batches_over_shm() {
    let name = unique("order");
    batches_arrive_in_order(&format!("shm://{name}"));
    let _ = ptmp_shm::remove(&name);
}

#[test]
fn batches_over_tcp() {
    batches_arrive_in_order("tcp://127.0.0.1:*");
}

#[test]
fn batches_over_ipc() {
    let p = std::env::temp_dir().join(format!("{}.ipc", unique("ipc")));
    batches_arrive_in_order(&format!("ipc://{}", p.display()));
    let _ = std::fs::remove_file(p);
}

#[test]
fn a_batch_takes_what_has_arrived_without_waiting_for_more() {
    let name = unique("some");
    let (mut tx, mut rx) = pair(&format!("shm://{name}"));
    tx.send_batch(&[tpset(0), tpset(1), tpset(2)]).unwrap();
    let mut out = vec![TPSet::default(); 10];
    // Three are there: the call returns them at once rather than waiting
    // the whole timeout for ten.
    let t0 = std::time::Instant::now();
    assert_eq!(
        rx.recv_batch(&mut out, Some(Duration::from_secs(60)))
            .unwrap(),
        3
    );
    assert!(t0.elapsed() < Duration::from_secs(60));
    assert_eq!(&out[..3], &[tpset(0), tpset(1), tpset(2)]);
    // An empty batch asks for nothing.
    assert_eq!(rx.recv_batch(&mut [], T).unwrap(), 0);
    drop(tx);
    drop(rx);
    let _ = ptmp_shm::remove(&name);
}

#[test]
fn a_malformed_message_ends_a_batch() {
    let (mut tx, mut rx) = pair("tcp://127.0.0.1:*");
    tx.send(&tpset(0)).unwrap();
    tx.send_raw(&[&[0u8, 0, 0, 0][..], &b"not a tpset"[..]])
        .unwrap();
    tx.send(&tpset(2)).unwrap();
    let mut out = vec![TPSet::default(); 8];
    // The good set before it comes back; the bad one is counted.
    let mut got = 0;
    while got == 0 {
        got = rx.recv_batch(&mut out, T).unwrap();
    }
    assert_eq!(got, 1);
    assert_eq!(out[0], tpset(0));
    // The bad one may have been met by that call or comes first now.
    if rx.errors() == 0 {
        assert!(matches!(rx.recv_batch(&mut out, T), Err(Error::Wire(_))));
    }
    assert_eq!(rx.errors(), 1);
    assert_eq!(rx.recv_batch(&mut out, T).unwrap(), 1);
    assert_eq!(out[0], tpset(2));
}
