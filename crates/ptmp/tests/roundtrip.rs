//! Round trips for every pattern x transport, bad messages, bad endpoints,
//! the slow-joiner remedy, and allocation-free reuse, over real sockets.

use ptmp::{Error, Frames, Receiver, Sender, TPSet, TrigPrim, WireError};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(5));

fn unique(prefix: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn tpset(count: u32, ntps: usize) -> TPSet {
    TPSet {
        count,
        detid: 7,
        created: ptmp::data::now_us(),
        tstart: 1000 + u64::from(count) * 25,
        tspan: Some(25),
        tps: (0..ntps)
            .map(|i| TrigPrim {
                channel: i as u32,
                tstart: 1000 + u64::from(count) * 25 + i as u64,
                adcsum: Some(i as u32 * 3),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// Bind address for a transport, unique per call.
fn bind_addr(transport: &str, dir: &tempfile::TempDir) -> String {
    match transport {
        "inproc" => format!("inproc://{}", unique("rt")),
        "ipc" => format!("ipc://{}", dir.path().join(unique("s")).display()),
        "tcp" => "tcp://127.0.0.1:*".into(),
        _ => unreachable!(),
    }
}

fn pair_of(pattern: &str, transport: &str, dir: &tempfile::TempDir) -> (Sender, Receiver) {
    let (st, rt) = match pattern {
        "pair" => ("PAIR", "PAIR"),
        "pubsub" => ("PUB", "SUB"),
        "pushpull" => ("PUSH", "PULL"),
        _ => unreachable!(),
    };
    let mut scfg = json!({"socket": {"type": st, "bind": [bind_addr(transport, dir)]}});
    if st == "PUB" {
        scfg["socket"]["subscribers"] = json!(1);
    }
    let tx = Sender::from_json(&scfg.to_string()).unwrap();
    let ep = tx.bound_endpoints()[0].clone();
    let rx =
        Receiver::from_json(&json!({"socket": {"type": rt, "connect": [ep]}}).to_string()).unwrap();
    (tx, rx)
}

#[test]
fn every_pattern_over_every_transport() {
    let dir = tempfile::tempdir().unwrap();
    for pattern in ["pair", "pubsub", "pushpull"] {
        for transport in ["inproc", "ipc", "tcp"] {
            let (mut tx, mut rx) = pair_of(pattern, transport, &dir);
            let n = 200u32;
            let sent: Vec<TPSet> = (0..n).map(|i| tpset(i, (i % 5) as usize)).collect();
            let h = std::thread::spawn(move || {
                for t in &sent {
                    tx.send(t).unwrap();
                }
                sent
            });
            let mut got = Vec::new();
            let mut t = TPSet::default();
            while got.len() < n as usize {
                assert!(
                    rx.recv_into(&mut t, T).unwrap(),
                    "{pattern}/{transport}: timed out after {} messages",
                    got.len()
                );
                got.push(t.clone());
            }
            let sent = h.join().unwrap();
            assert_eq!(got, sent, "{pattern}/{transport}");
            assert_eq!(rx.received(), u64::from(n));
            assert_eq!(rx.errors(), 0);
            // Nothing more: a short timeout gives None, not an error.
            assert!(rx.recv(Some(Duration::from_millis(20))).unwrap().is_none());
        }
    }
}

#[test]
fn inproc_between_independent_senders_and_receivers() {
    let name = format!("inproc://{}", unique("multi"));
    let mut rx =
        Receiver::from_json(&json!({"socket": {"type": "PULL", "bind": [name]}}).to_string())
            .unwrap();
    let handles: Vec<_> = (0..3)
        .map(|d| {
            let name = name.clone();
            std::thread::spawn(move || {
                let mut tx = Sender::from_json(
                    &json!({"socket": {"type": "push", "connect": name}}).to_string(),
                )
                .unwrap();
                for i in 0..100 {
                    let mut t = tpset(i, 1);
                    t.detid = d;
                    tx.send(&t).unwrap();
                }
            })
        })
        .collect();
    let mut per = [0u32; 3];
    for _ in 0..300 {
        let t = rx.recv(T).unwrap().expect("message");
        assert_eq!(t.count, per[t.detid as usize], "per-sender order");
        per[t.detid as usize] += 1;
    }
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(per, [100, 100, 100]);
}

#[test]
fn malformed_messages_are_counted_and_receiving_continues() {
    let name = format!("inproc://{}", unique("bad"));
    let mut rx =
        Receiver::from_json(&json!({"socket": {"type": "PULL", "bind": [name]}}).to_string())
            .unwrap();
    let mut tx =
        Sender::from_json(&json!({"socket": {"type": "PUSH", "connect": [name]}}).to_string())
            .unwrap();
    let mut good = Vec::new();
    ptmp::data::encode_tpset(&tpset(1, 2), &mut good);
    let cases: Vec<(Vec<Vec<u8>>, WireError)> = vec![
        (vec![good.clone()], WireError::FrameCount(1)),
        (
            vec![vec![0; 4], good.clone(), b"x".to_vec()],
            WireError::FrameCount(3),
        ),
        (vec![vec![0; 2], good.clone()], WireError::VersionSize(2)),
        (
            vec![2i32.to_ne_bytes().to_vec(), good.clone()],
            WireError::Version(2),
        ),
    ];
    for (frames, _) in &cases {
        tx.send_raw(frames).unwrap();
    }
    tx.send_raw(&[vec![0u8; 4], vec![0x08, 0x01]]).unwrap(); // missing required fields
    tx.send(&tpset(9, 3)).unwrap();
    for (_, want) in &cases {
        match rx.recv(T) {
            Err(Error::Wire(e)) => assert_eq!(&e, want),
            other => panic!("expected {want:?}, got {other:?}"),
        }
    }
    match rx.recv(T) {
        Err(Error::Wire(WireError::Payload(e))) => {
            assert!(e.to_string().contains("missing required"), "{e}")
        }
        other => panic!("expected a payload error, got {other:?}"),
    }
    let t = rx
        .recv(T)
        .unwrap()
        .expect("the good message after the bad ones");
    assert_eq!(t, tpset(9, 3).clone_with_created(t.created));
    assert_eq!(rx.errors(), 5);
    assert_eq!(rx.received(), 1);
}

trait WithCreated {
    fn clone_with_created(&self, c: i64) -> TPSet;
}
impl WithCreated for TPSet {
    fn clone_with_created(&self, c: i64) -> TPSet {
        TPSet {
            created: c,
            ..self.clone()
        }
    }
}

#[test]
fn raw_frames_pass_untouched() {
    let name = format!("inproc://{}", unique("raw"));
    let mut rx =
        Receiver::from_json(&json!({"socket": {"type": "PULL", "bind": [name]}}).to_string())
            .unwrap();
    let mut tx =
        Sender::from_json(&json!({"socket": {"type": "PUSH", "connect": [name]}}).to_string())
            .unwrap();
    let msgs: Vec<Vec<Vec<u8>>> = vec![
        vec![b"one".to_vec()],
        vec![vec![], vec![1; 300], b"three".to_vec()],
    ];
    for m in &msgs {
        tx.send_raw(m).unwrap();
    }
    let mut f = Frames::new();
    for m in &msgs {
        assert!(rx.recv_raw_into(&mut f, T).unwrap());
        assert_eq!(&f.to_vecs(), m);
    }
    assert!(!rx
        .recv_raw_into(&mut f, Some(Duration::from_millis(10)))
        .unwrap());
}

#[test]
fn recv_into_reuses_the_callers_storage() {
    let name = format!("inproc://{}", unique("reuse"));
    let mut rx =
        Receiver::from_json(&json!({"socket": {"type": "PULL", "bind": [name]}}).to_string())
            .unwrap();
    let mut tx =
        Sender::from_json(&json!({"socket": {"type": "PUSH", "connect": [name]}}).to_string())
            .unwrap();
    let mut t = TPSet::default();
    tx.send(&tpset(0, 50)).unwrap();
    assert!(rx.recv_into(&mut t, T).unwrap());
    let (ptr, cap) = (t.tps.as_ptr(), t.tps.capacity());
    for i in 1..100 {
        tx.send(&tpset(i, (i % 50) as usize)).unwrap();
        assert!(rx.recv_into(&mut t, T).unwrap());
        assert_eq!(t.count, i);
        assert_eq!(t.tps.len(), (i % 50) as usize);
    }
    assert_eq!((t.tps.as_ptr(), t.tps.capacity()), (ptr, cap));
}

#[test]
fn address_in_use_names_the_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let a =
        Receiver::from_json(r#"{"socket":{"type":"PULL","bind":["tcp://127.0.0.1:*"]}}"#).unwrap();
    let ep = a.bound_endpoints()[0].clone();
    let ipc = format!("ipc://{}", dir.path().join("busy").display());
    let inproc = format!("inproc://{}", unique("busy"));
    let _b = Receiver::from_json(&json!({"socket": {"type": "PULL", "bind": [ipc]}}).to_string())
        .unwrap();
    let _c =
        Receiver::from_json(&json!({"socket": {"type": "PULL", "bind": [inproc]}}).to_string())
            .unwrap();
    for ep in [ep, ipc, inproc] {
        let e = Sender::from_json(&json!({"socket": {"type": "PUSH", "bind": [ep]}}).to_string())
            .err()
            .expect("second bind must fail");
        let s = e.to_string();
        assert!(
            matches!(e, Error::Bind { .. }) && s.contains(&ep) && s.contains("in use"),
            "{s}"
        );
    }
}

#[test]
fn wrong_direction_and_unavailable_transport_are_config_errors() {
    let e = Sender::from_json(r#"{"socket":{"type":"PULL","bind":["tcp://127.0.0.1:*"]}}"#)
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("socket.type") && e.to_string().contains("PULL"),
        "{e}"
    );
    let e = Receiver::from_json(r#"{"socket":{"type":"PUB","bind":["tcp://127.0.0.1:*"]}}"#)
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("socket.type") && e.to_string().contains("PUB"),
        "{e}"
    );
    let e = Receiver::from_json(
        r#"{"socket":{"type":"SUB","connect":["tcp://no-such-host.invalid:5"]}}"#,
    )
    .err();
    // libzmq resolves connect hosts lazily: a bad host is not an error at connect.
    assert!(e.is_none());
    let e = Sender::from_json(r#"{"socket":{"type":"PUSH","bind":["tcp://203.0.113.77:5"]}}"#)
        .err()
        .unwrap();
    assert!(e.to_string().contains("203.0.113.77"), "{e}");
}

#[test]
fn pub_waits_for_subscribers_and_loses_nothing() {
    // Subscribers connect on other threads after a delay; the PUB sends at
    // once. With subscribers:2 every message, the first included, reaches
    // both. Repeated to give the race a chance to show.
    for round in 0..5 {
        let tx_cfg =
            json!({"socket": {"type": "PUB", "bind": ["tcp://127.0.0.1:*"], "subscribers": 2}});
        let mut tx = Sender::from_json(&tx_cfg.to_string()).unwrap();
        let ep = tx.bound_endpoints()[0].clone();
        let subs: Vec<_> = (0..2)
            .map(|i| {
                let ep = ep.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(20 * i + 5 * round));
                    let mut rx = Receiver::from_json(
                        &json!({"socket": {"type": "SUB", "connect": [ep]}}).to_string(),
                    )
                    .unwrap();
                    let mut counts = Vec::new();
                    while let Some(t) = rx.recv(Some(Duration::from_millis(500))).unwrap() {
                        counts.push(t.count);
                    }
                    counts
                })
            })
            .collect();
        for i in 0..500 {
            tx.send(&tpset(i, 0)).unwrap();
        }
        for s in subs {
            let counts = s.join().unwrap();
            assert_eq!(counts, (0..500).collect::<Vec<_>>(), "round {round}");
        }
    }
}

#[test]
fn pub_subscriber_wait_times_out_with_a_clear_error() {
    let mut tx = Sender::from_json(
        r#"{"socket":{"type":"PUB","bind":["tcp://127.0.0.1:*"],"subscribers":1,"subscribers_timeout_ms":100}}"#,
    )
    .unwrap();
    let e = tx.send(&tpset(0, 0)).err().unwrap();
    assert!(matches!(e, Error::Timeout { ms: 100, .. }), "{e}");
    assert!(e.to_string().contains("1 subscriber"), "{e}");
}

#[test]
fn sub_prefix_filters() {
    // A SUB subscribed to a prefix that no PTMP message starts with gets nothing.
    let name = format!("inproc://{}", unique("flt"));
    let mut tx =
        Sender::from_json(&json!({"socket": {"type": "PUB", "bind": [name]}}).to_string()).unwrap();
    let mut rx_all =
        Receiver::from_json(&json!({"socket": {"type": "SUB", "connect": [name]}}).to_string())
            .unwrap();
    let mut rx_none = Receiver::from_json(
        &json!({"socket": {"type": "SUB", "connect": [name], "subscribe": ["\u{1}"]}}).to_string(),
    )
    .unwrap();
    assert_eq!(tx.wait_for_subscribers(1, T.unwrap()).unwrap(), 1);
    // The SUB with prefix "\x01" does not count as a subscriber of PTMP messages.
    assert!(tx
        .wait_for_subscribers(2, Duration::from_millis(300))
        .is_err());
    for i in 0..10 {
        tx.send(&tpset(i, 0)).unwrap();
    }
    for i in 0..10 {
        assert_eq!(rx_all.recv(T).unwrap().unwrap().count, i);
    }
    assert!(rx_none
        .recv(Some(Duration::from_millis(50)))
        .unwrap()
        .is_none());
}

#[test]
fn a_nul_in_an_endpoint_is_a_config_error_not_a_panic() {
    for (stype, attach) in [("PUSH", "connect"), ("PUB", "bind"), ("PAIR", "bind")] {
        for ep in [
            "tcp://127.0.0.1\u{0}:5000",
            "ipc:///tmp/a\u{0}b",
            "inproc://a\u{0}b",
        ] {
            let cfg = json!({"socket": {"type": stype, attach: [ep]}}).to_string();
            let e = Sender::from_json(&cfg).err().expect("refused");
            assert!(matches!(e, Error::Config { .. }), "{e}");
            let e = e.to_string();
            assert!(
                e.contains(&format!("socket.{attach}[0]")) && e.contains("NUL byte"),
                "{e}"
            );
        }
    }
    let cfg = json!({"socket": {"type": "PULL", "bind": "tcp://a\u{0}b:1"}}).to_string();
    assert!(Receiver::from_json(&cfg).is_err());
}

#[test]
fn finish_counts_what_no_peer_received() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ep = format!("tcp://127.0.0.1:{port}");
    let cfg = json!({"socket": {"type": "PUSH", "connect": [&ep], "linger_ms": 200}}).to_string();
    let mut tx = Sender::from_json(&cfg).unwrap();
    for c in 0..5 {
        tx.send(&tpset(c, 2)).unwrap();
    }
    let d = tx.finish();
    assert_eq!((d.sent, d.undelivered), (5, ptmp::Undelivered::Exactly(5)));
    assert!(d.undelivered.any());
    // With a peer: all delivered.
    let mut rx =
        Receiver::from_json(&json!({"socket": {"type": "PULL", "bind": [&ep]}}).to_string())
            .unwrap();
    let mut tx = Sender::from_json(&cfg).unwrap();
    for c in 0..5 {
        tx.send(&tpset(c, 2)).unwrap();
    }
    let d = tx.finish();
    assert_eq!((d.sent, d.undelivered), (5, ptmp::Undelivered::None));
    for c in 0..5 {
        assert_eq!(rx.recv(T).unwrap().unwrap().count, c);
    }
    // A PUB nobody ever connected to dropped everything.
    let pubcfg = json!({"socket": {"type": "PUB", "bind": ["tcp://127.0.0.1:*"]}}).to_string();
    let mut tx = Sender::from_json(&pubcfg).unwrap();
    tx.send(&tpset(0, 1)).unwrap();
    assert_eq!(tx.finish().undelivered, ptmp::Undelivered::Exactly(1));
    // Nothing sent: nothing lost.
    let tx = Sender::from_json(&cfg).unwrap();
    assert_eq!(tx.finish().undelivered, ptmp::Undelivered::None);
}
