//! Reading a message where it lies (`Receiver::recv_raw_with`) and
//! passing it on (`Receiver::forward`), over shm:// and zmq.

mod common;
use common::Chan;

use ptmp::{Error, Frames, Receiver, Sender, TPSet};
use serde_json::{json, Value};
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(5));
const SHORT: Option<Duration> = Some(Duration::from_millis(20));

fn sender(sock: Value) -> Sender {
    Sender::from_json(&json!({ "socket": sock }).to_string()).unwrap()
}

fn receiver(sock: Value) -> Receiver {
    Receiver::from_json(&json!({ "socket": sock }).to_string()).unwrap()
}

/// Messages of every form a ring holds: several frames, long and empty
/// frames, one short frame, a frame of exactly 255 bytes.
fn messages() -> Vec<Vec<Vec<u8>>> {
    vec![
        vec![b"a".to_vec(), vec![7; 1000], vec![]],
        vec![b"only".to_vec()],
        vec![vec![]],
        vec![vec![3; 255]],
        vec![vec![1; 254], vec![2; 300]],
    ]
}

fn send_all(tx: &mut Sender, msgs: &[Vec<Vec<u8>>]) {
    for m in msgs {
        tx.send_raw(m).unwrap();
    }
}

fn expect_all(rx: &mut Receiver, msgs: &[Vec<Vec<u8>>], what: &str) {
    let mut f = Frames::new();
    for (i, m) in msgs.iter().enumerate() {
        assert!(rx.recv_raw_into(&mut f, T).unwrap(), "{what}: message {i}");
        assert_eq!(&f.to_vecs(), m, "{what}: message {i}");
    }
    assert!(!rx.recv_raw_into(&mut f, SHORT).unwrap(), "{what}: extra");
}

#[test]
fn a_forward_moves_every_message_as_it_came() {
    let (a, b) = (Chan::new("fwd-a"), Chan::new("fwd-b"));
    let mut tx = sender(json!({"type": "PUSH", "bind": [a.ep()], "shm_max_message": 2048}));
    let mut mid = receiver(json!({"type": "PULL", "connect": [a.ep()]}));
    let mut on = sender(json!({"type": "PUSH", "bind": [b.ep()], "shm_max_message": 2048}));
    let mut end = receiver(json!({"type": "PULL", "connect": [b.ep()]}));
    let msgs = messages();
    send_all(&mut tx, &msgs);
    let set = TPSet {
        count: 9,
        detid: 4,
        created: 1 << 50,
        tstart: 1 << 60,
        ..Default::default()
    };
    tx.send(&set).unwrap();
    for i in 0..=msgs.len() {
        assert!(mid.forward(&mut on, T).unwrap(), "message {i}");
    }
    assert!(!mid.forward(&mut on, SHORT).unwrap(), "nothing more came");
    let n = msgs.len() as u64 + 1;
    assert_eq!((mid.received(), on.sent()), (n, n));
    let mut f = Frames::new();
    for (i, m) in msgs.iter().enumerate() {
        assert!(end.recv_raw_into(&mut f, T).unwrap(), "message {i}");
        assert_eq!(&f.to_vecs(), m, "message {i}");
    }
    assert_eq!(end.recv(T).unwrap(), Some(set), "a TPSet decodes after");
}

#[test]
fn a_forward_between_transports_goes_through_its_buffer() {
    // zmq in, shm out.
    let b = Chan::new("fwd-zs");
    let mut tx = sender(json!({"type": "PUSH", "bind": ["tcp://127.0.0.1:*"]}));
    let ep = tx.bound_endpoints()[0].clone();
    let mut mid = receiver(json!({"type": "PULL", "connect": [ep]}));
    let mut on = sender(json!({"type": "PUSH", "bind": [b.ep()], "shm_max_message": 2048}));
    let mut end = receiver(json!({"type": "PULL", "connect": [b.ep()]}));
    let msgs = messages();
    send_all(&mut tx, &msgs);
    for i in 0..msgs.len() {
        assert!(mid.forward(&mut on, T).unwrap(), "zmq to shm: message {i}");
    }
    expect_all(&mut end, &msgs, "zmq to shm");

    // shm in, zmq out.
    let a = Chan::new("fwd-sz");
    let mut tx = sender(json!({"type": "PUSH", "bind": [a.ep()], "shm_max_message": 2048}));
    let mut mid = receiver(json!({"type": "PULL", "connect": [a.ep()]}));
    let mut on = sender(json!({"type": "PUSH", "bind": ["tcp://127.0.0.1:*"]}));
    let ep = on.bound_endpoints()[0].clone();
    let mut end = receiver(json!({"type": "PULL", "connect": [ep]}));
    send_all(&mut tx, &msgs);
    for i in 0..msgs.len() {
        assert!(mid.forward(&mut on, T).unwrap(), "shm to zmq: message {i}");
    }
    expect_all(&mut end, &msgs, "shm to zmq");
    assert_eq!(mid.received(), msgs.len() as u64);
}

#[test]
fn a_forward_passes_on_only_what_its_receiver_subscribes_to() {
    let (a, b) = (Chan::new("fwd-sub-a"), Chan::new("fwd-sub-b"));
    let mut tx = sender(json!({"type": "PUB", "bind": [a.ep()]}));
    let mut mid = receiver(json!({"type": "SUB", "connect": [a.ep()], "subscribe": ["keep"]}));
    let mut on = sender(json!({"type": "PUSH", "bind": [b.ep()]}));
    let mut end = receiver(json!({"type": "PULL", "connect": [b.ep()]}));
    let msgs: Vec<Vec<Vec<u8>>> = ["drop 1", "keep 1", "drop 2", "keep 2"]
        .iter()
        .map(|s| vec![s.as_bytes().to_vec(), b"body".to_vec()])
        .collect();
    send_all(&mut tx, &msgs);
    assert!(mid.forward(&mut on, T).unwrap());
    assert!(mid.forward(&mut on, T).unwrap());
    assert!(!mid.forward(&mut on, SHORT).unwrap());
    expect_all(&mut end, &[msgs[1].clone(), msgs[3].clone()], "subscribed");
}

#[test]
fn a_forward_that_cannot_send_keeps_the_message() {
    let (a, b) = (Chan::new("fwd-keep-a"), Chan::new("fwd-keep-b"));
    let mut tx = sender(json!({"type": "PUSH", "bind": [a.ep()]}));
    let mut mid = receiver(json!({"type": "PULL", "connect": [a.ep()]}));
    let mut on = sender(json!({"type": "PUSH", "bind": [b.ep()], "shm_slots": 4,
        "shm_block_timeout_ms": 30}));
    let mut end = receiver(json!({"type": "PULL", "connect": [b.ep()]}));
    let msgs: Vec<Vec<Vec<u8>>> = (0u8..8).map(|i| vec![vec![i; 10]]).collect();
    send_all(&mut tx, &msgs);
    for i in 0..4 {
        assert!(mid.forward(&mut on, T).unwrap(), "message {i}");
    }
    // The next ring is full: the fifth is taken, its send times out, and
    // it is kept.
    match mid.forward(&mut on, T) {
        Err(Error::Timeout { .. }) => {}
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert_eq!((mid.received(), on.sent()), (5, 4));
    // Room for one: the kept message goes first, nothing is received.
    let mut f = Frames::new();
    assert!(end.recv_raw_into(&mut f, T).unwrap());
    assert!(mid.forward(&mut on, T).unwrap());
    assert_eq!((mid.received(), on.sent()), (5, 5));
    let mut got = vec![f.to_vecs()];
    for _ in 5..8 {
        assert!(end.recv_raw_into(&mut f, T).unwrap());
        got.push(f.to_vecs());
        assert!(mid.forward(&mut on, T).unwrap());
    }
    for _ in 0..4 {
        assert!(end.recv_raw_into(&mut f, T).unwrap());
        got.push(f.to_vecs());
    }
    assert_eq!(got, msgs, "every message once, in order");

    // A sender that waits in slices: no room within the slice returns
    // false, and the message is kept for the next call.
    let c = Chan::new("fwd-slices");
    let mut on = sender(json!({"type": "PUSH", "bind": [c.ep()], "shm_slots": 4}));
    let mut end = receiver(json!({"type": "PULL", "connect": [c.ep()]}));
    on.wait_in_slices();
    let more: Vec<Vec<Vec<u8>>> = (8u8..14).map(|i| vec![vec![i; 10]]).collect();
    send_all(&mut tx, &more);
    for i in 0..4 {
        assert!(mid.forward(&mut on, T).unwrap(), "message {i}");
    }
    assert!(!mid.forward(&mut on, SHORT).unwrap(), "no room");
    assert!(!mid.forward(&mut on, SHORT).unwrap(), "still none");
    assert_eq!((mid.received(), on.sent()), (13, 4));
    let mut got = Vec::new();
    for _ in 0..2 {
        assert!(end.recv_raw_into(&mut f, T).unwrap());
        got.push(f.to_vecs());
    }
    assert!(mid.forward(&mut on, T).unwrap(), "the kept one");
    assert!(mid.forward(&mut on, T).unwrap(), "the last");
    assert!(!mid.forward(&mut on, SHORT).unwrap(), "nothing more came");
    for _ in 0..4 {
        assert!(end.recv_raw_into(&mut f, T).unwrap());
        got.push(f.to_vecs());
    }
    assert_eq!(got, more, "every message once, in order");

    // A message larger than the next ring's slots is refused by name, and
    // kept: each try says so again.
    let c = Chan::new("fwd-small");
    let mut small = sender(json!({"type": "PUSH", "bind": [c.ep()], "shm_max_message": 64}));
    tx.send_raw(&[vec![5u8; 100]]).unwrap();
    for _ in 0..2 {
        let e = mid.forward(&mut small, T).unwrap_err().to_string();
        assert!(e.contains("shm_max_message") && e.contains("64"), "{e}");
    }
    assert_eq!(mid.received(), 15);
    // Taken back, it is not sent again; the next message goes through.
    assert!(mid.holding());
    let kept = mid.take_held().unwrap();
    assert_eq!(kept.to_vecs(), vec![vec![5u8; 100]]);
    assert!(!mid.holding() && mid.take_held().is_none());
    tx.send_raw(&[&b"fits"[..]]).unwrap();
    let mut small_end = receiver(json!({"type": "PULL", "connect": [c.ep()]}));
    assert!(mid.forward(&mut small, T).unwrap());
    expect_all(
        &mut small_end,
        &[vec![b"fits".to_vec()]],
        "after the kept one",
    );
}

#[test]
fn a_view_reads_frames_where_they_lie() {
    let a = Chan::new("view");
    let mut tx = sender(json!({"type": "PUSH", "bind": [a.ep()], "shm_max_message": 2048}));
    let mut rx = receiver(json!({"type": "PULL", "connect": [a.ep()]}));
    let msgs = messages();
    send_all(&mut tx, &msgs);
    for (i, m) in msgs.iter().enumerate() {
        let got = rx.recv_raw_with(T, |v| {
            assert_eq!(v.len(), m.len());
            assert_eq!(v.get(m.len()), None);
            assert_eq!(v.total_bytes(), m.iter().map(Vec::len).sum::<usize>());
            v.iter().map(<[u8]>::to_vec).collect::<Vec<_>>()
        });
        assert_eq!(got.unwrap().as_ref(), Some(m), "message {i}");
    }
    assert_eq!(rx.recv_raw_with(SHORT, |v| v.len()).unwrap(), None);
    assert_eq!(rx.received(), msgs.len() as u64);

    // Over zmq the same closure sees the same frames.
    let mut tx = sender(json!({"type": "PUSH", "bind": ["tcp://127.0.0.1:*"]}));
    let ep = tx.bound_endpoints()[0].clone();
    let mut rx = receiver(json!({"type": "PULL", "connect": [ep]}));
    send_all(&mut tx, &msgs);
    for m in &msgs {
        let got = rx.recv_raw_with(T, |v| {
            let mut f = Frames::new();
            v.copy_to(&mut f);
            f.to_vecs()
        });
        assert_eq!(got.unwrap().as_ref(), Some(m));
    }
    assert_eq!(rx.recv_raw_with(SHORT, |v| v.len()).unwrap(), None);
}

#[test]
fn bytes_from_a_writer_outside_ptmp_are_one_frame() {
    let a = Chan::new("view-raw");
    let cfg = ptmp_shm::ChannelConfig {
        slots: 8,
        max_message: 64,
        policy: ptmp_shm::Policy::Block,
    };
    let mut w = ptmp_shm::Writer::create(&a.0, cfg).unwrap();
    let mut rx = receiver(json!({"type": "PULL", "connect": [a.ep()]}));
    let b = Chan::new("view-raw-on");
    let mut on = sender(json!({"type": "PUSH", "bind": [b.ep()]}));
    let mut end = receiver(json!({"type": "PULL", "connect": [b.ep()]}));
    // A length byte claiming more than follows: not in zmsg form.
    let odd = [200u8, 1, 2, 3];
    w.publish(&odd).unwrap();
    w.publish(&odd).unwrap();
    let got = rx.recv_raw_with(T, |v| (v.len(), v.get(0).map(<[u8]>::to_vec)));
    assert_eq!(got.unwrap(), Some((1, Some(odd.to_vec()))));
    assert!(rx.forward(&mut on, T).unwrap());
    expect_all(&mut end, &[vec![odd.to_vec()]], "forwarded as one frame");
}

/// Frames of megabytes, which the sender and a forward copy into their
/// slots with streaming stores, arrive whole: sent as frames, forwarded,
/// and forwarded as the one frame of a writer outside ptmp.
#[test]
fn frames_of_megabytes_are_sent_and_forwarded_whole() {
    let big = ptmp_shm::stream_threshold() + 3;
    let frame = |seed: u8| {
        (0..big)
            .map(|i| (i % 251) as u8 ^ seed)
            .collect::<Vec<u8>>()
    };
    let ring = |c: &Chan, bind: bool| {
        let end = if bind { "bind" } else { "connect" };
        let t = if bind { "PUSH" } else { "PULL" };
        json!({"type": t, end: [c.ep()], "shm_slots": 4, "shm_max_message": big + 16})
    };
    let (a, b) = (Chan::new("big-a"), Chan::new("big-b"));
    let mut tx = sender(ring(&a, true));
    let mut mid = receiver(ring(&a, false));
    let mut on = sender(ring(&b, true));
    let mut end = receiver(ring(&b, false));
    let msgs = vec![vec![b"head".to_vec(), frame(1)], vec![frame(2)]];
    send_all(&mut tx, &msgs);
    for i in 0..msgs.len() {
        assert!(mid.forward(&mut on, T).unwrap(), "message {i}");
    }
    expect_all(&mut end, &msgs, "sent and forwarded");

    let c = Chan::new("big-raw");
    let cfg = ptmp_shm::ChannelConfig {
        slots: 2,
        max_message: big,
        policy: ptmp_shm::Policy::Block,
    };
    let mut w = ptmp_shm::Writer::create(&c.0, cfg).unwrap();
    let mut rx = receiver(json!({"type": "PULL", "connect": [c.ep()]}));
    // Not in zmsg form (its first byte claims a frame of 3 bytes, and
    // more follow), so forwarded as one frame.
    let mut raw = frame(3);
    raw[0] = 3;
    w.publish(&raw).unwrap();
    assert!(rx.forward(&mut on, T).unwrap());
    expect_all(&mut end, &[vec![raw]], "forwarded as one frame");
}

/// A message whose bytes all equal its first: what a torn read breaks.
fn whole(frame: &[u8]) -> bool {
    frame.iter().all(|b| *b == frame[0])
}

#[test]
fn a_lapped_receiver_never_forwards_or_returns_a_torn_message() {
    let (a, b) = (Chan::new("torn-a"), Chan::new("torn-b"));
    let mut tx = sender(json!({"type": "PUB", "bind": [a.ep()], "shm_slots": 2,
        "shm_max_message": 1100}));
    let mut mid = receiver(json!({"type": "SUB", "connect": [a.ep()]}));
    let mut on = sender(json!({"type": "PUSH", "bind": [b.ep()], "shm_slots": 1024,
        "shm_max_message": 1100}));
    let mut end = receiver(json!({"type": "PULL", "connect": [b.ep()]}));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s = stop.clone();
    // The writer laps the two-slot ring as fast as it can.
    let h = std::thread::spawn(move || {
        let mut i = 0u8;
        while !s.load(std::sync::atomic::Ordering::Relaxed) {
            tx.send_raw(&[vec![i; 1024]]).unwrap();
            i = i.wrapping_add(1);
        }
    });
    let (mut viewed, mut forwarded) = (0, 0);
    let t0 = std::time::Instant::now();
    while t0.elapsed() < Duration::from_millis(300) || forwarded < 100 {
        if let Some(ok) = mid
            .recv_raw_with(T, |v| v.get(0).is_some_and(whole))
            .unwrap()
        {
            assert!(ok, "a view returned a torn message");
            viewed += 1;
        }
        if mid.forward(&mut on, T).unwrap() {
            forwarded += 1;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "too slow");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    h.join().unwrap();
    assert!(viewed > 0);
    let mut f = Frames::new();
    for i in 0..forwarded {
        assert!(end.recv_raw_into(&mut f, T).unwrap(), "message {i}");
        assert_eq!(f.len(), 1);
        assert!(whole(f.get(0).unwrap()), "forwarded message {i} is torn");
    }
}
