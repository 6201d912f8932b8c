//! The transport contract, one suite run against every transport: the
//! same cases over `inproc://`, `ipc://`, `tcp://` and `shm://`, written
//! once against the public `Sender`/`Receiver` and run per transport by the
//! macro at the end (as iceoryx2 runs one contract suite against each of
//! its implementations). What a transport may do its own way is said in
//! the case, not hidden by it: where it cannot know what was lost it says
//! `Unknown`, never `None`.
//!
//! A transport added to ptmp implements `Transmit` and `Receive`
//! (`crates/ptmp/src/transport.rs`) and gains a row in `contract!` below.

mod common;
use common::Chan;

use ptmp::{Error, Frames, Receiver, Sender, TPSet, TrigPrim, Undelivered};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const T: Option<Duration> = Some(Duration::from_secs(10));

/// One transport under test: where a sender and a receiver meet.
struct Transport {
    kind: &'static str,
    /// Kept for the test's life: an ipc socket's directory, an shm
    /// channel's segment (removed when dropped).
    _dir: tempfile::TempDir,
    _chan: Option<Chan>,
    addr: String,
}

impl Transport {
    fn new(kind: &'static str) -> Transport {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = tempfile::tempdir().unwrap();
        let mut chan = None;
        let addr = match kind {
            "inproc" => format!("inproc://contract-{n}"),
            "ipc" => format!("ipc://{}", dir.path().join(format!("c{n}")).display()),
            "tcp" => format!("tcp://127.0.0.1:{}", free_port()),
            "shm" => {
                let c = Chan::new("contract");
                let a = c.ep();
                chan = Some(c);
                a
            }
            _ => unreachable!("a transport of this suite"),
        };
        Transport {
            kind,
            _dir: dir,
            _chan: chan,
            addr,
        }
    }

    /// A socket config of `ty` that binds (or, `bind` false, connects) to
    /// this transport's address, with `extra` keys.
    fn config(&self, ty: &str, bind: bool, extra: Value) -> String {
        let mut s = json!({"type": ty});
        s[if bind { "bind" } else { "connect" }] = json!([self.addr]);
        if self.kind == "shm" {
            // Room for the large sets of these cases in each slot.
            s["shm_max_message"] = json!(64 * 1024);
        }
        for (k, v) in extra.as_object().into_iter().flatten() {
            s[k] = v.clone();
        }
        json!({ "socket": s }).to_string()
    }

    fn sender(&self, extra: Value) -> Sender {
        Sender::from_json(&self.config("PUSH", true, extra)).expect("sender")
    }

    fn receiver(&self, extra: Value) -> Receiver {
        Receiver::from_json(&self.config("PULL", false, extra)).expect("receiver")
    }

    /// A small queue's keys: a few messages of room on each side.
    fn small(&self, mut extra: Value) -> Value {
        let keys = if self.kind == "shm" {
            json!({"shm_slots": ptmp_shm::MIN_SLOTS})
        } else {
            json!({"hwm": 4, "sndhwm": 4})
        };
        for (k, v) in keys.as_object().into_iter().flatten() {
            extra[k] = v.clone();
        }
        extra
    }

    /// The key that bounds one message on this transport.
    fn size_key(&self) -> &'static str {
        if self.kind == "shm" {
            "shm_max_message"
        } else {
            "max_message"
        }
    }
}

/// A tcp port nothing listens on (bound once by the kernel's choice, then
/// let go).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Set number `count` with `ntps` TrigPrims, each field derived from both.
fn tpset(count: u32, ntps: usize) -> TPSet {
    TPSet {
        count,
        detid: 3,
        created: 1_000 + i64::from(count),
        tstart: u64::from(count) * 25,
        tspan: Some(25),
        tps: (0..ntps)
            .map(|i| TrigPrim {
                channel: i as u32,
                tstart: u64::from(count) * 25 + i as u64,
                adcsum: Some(count ^ i as u32),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// Every set arrives once, in order and whole; nothing is counted lost,
/// and the sender's report claims no loss.
fn in_order_once_and_whole(t: &Transport) {
    let n = 2_000u32;
    let mut tx = t.sender(json!({}));
    let mut rx = t.receiver(json!({}));
    let sender = std::thread::spawn(move || {
        for i in 0..n {
            tx.send(&tpset(i, (i % 40) as usize)).unwrap();
        }
        tx
    });
    let mut got = TPSet::default();
    for i in 0..n {
        assert!(rx.recv_into(&mut got, T).unwrap(), "set {i} of {n}");
        assert_eq!(got, tpset(i, (i % 40) as usize), "set {i}");
    }
    assert!(!rx.recv_into(&mut got, Some(Duration::ZERO)).unwrap());
    let d = sender.join().unwrap().finish();
    assert_eq!(
        (d.sent, rx.received(), rx.lost()),
        (u64::from(n), u64::from(n), 0)
    );
    assert!(!d.undelivered.any(), "{}: {:?}", t.kind, d);
}

/// A receive with nothing to take returns after its timeout, not before
/// and not much after; a zero timeout does not wait.
fn a_receive_waits_its_timeout(t: &Transport) {
    let _tx = t.sender(json!({}));
    let mut rx = t.receiver(json!({}));
    let mut got = TPSet::default();
    let t0 = Instant::now();
    assert!(!rx.recv_into(&mut got, Some(Duration::ZERO)).unwrap());
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    let t0 = Instant::now();
    assert!(!rx
        .recv_into(&mut got, Some(Duration::from_millis(150)))
        .unwrap());
    let took = t0.elapsed();
    assert!(took >= Duration::from_millis(140), "{}: {took:?}", t.kind);
    assert!(took < Duration::from_secs(5), "{}: {took:?}", t.kind);
}

/// Fill the link to a receiver that does not read, each send waiting up
/// to `wait` for room: the sets accepted, and how long the send that found
/// no room waited. (Over tcp the kernel's buffers grow while they fill, so
/// a link is full only once a whole wait found no room.)
fn fill(tx: &mut Sender, wait: Duration) -> (u32, Duration) {
    let mut i = 0;
    loop {
        let t0 = Instant::now();
        if !tx.send_within(&tpset(i, 1_000), wait).unwrap() {
            return (i, t0.elapsed());
        }
        i += 1;
        assert!(i < 100_000, "the link never filled");
    }
}

/// A sender (with `extra` keys, its timed sends waiting in slices) and a
/// receiver with small queues, the receiver's connection up: one set
/// sent and received (set 0).
fn small_link(t: &Transport, extra: Value) -> (Sender, Receiver) {
    let mut tx = t.sender(t.small(extra));
    tx.wait_in_slices();
    let mut rx = t.receiver(t.small(json!({})));
    let mut got = TPSet::default();
    tx.send(&tpset(0, 1)).unwrap();
    assert!(rx.recv_into(&mut got, T).unwrap());
    (tx, rx)
}

/// A send to a full link gives up within the caller's time, nothing
/// sent; once the receiver reads, everything accepted arrives in order
/// and sending goes on.
fn a_full_link_gives_up_in_time(t: &Transport) {
    let (mut tx, mut rx) = small_link(t, json!({}));
    let mut got = TPSet::default();
    let (accepted, took) = fill(&mut tx, Duration::from_millis(150));
    assert!(took >= Duration::from_millis(140), "{}: {took:?}", t.kind);
    assert!(took < Duration::from_secs(5), "{}: {took:?}", t.kind);
    assert_eq!(
        tx.sent(),
        u64::from(accepted) + 1,
        "{}: the refused set is not counted",
        t.kind
    );
    for i in 0..accepted {
        assert!(rx.recv_into(&mut got, T).unwrap(), "set {i} of {accepted}");
        assert_eq!(got.count, i);
    }
    tx.send(&tpset(accepted, 3)).unwrap();
    assert!(rx.recv_into(&mut got, T).unwrap());
    assert_eq!(got, tpset(accepted, 3));
}

/// A message larger than the transport's bound is refused whole, with an
/// error naming the bound's key, before anything is sent; the link goes
/// on.
fn an_oversize_message_is_refused_whole(t: &Transport) {
    let mut tx = t.sender(json!({ t.size_key(): 4096 }));
    let mut rx = t.receiver(json!({ t.size_key(): 4096 }));
    let err = tx.send(&tpset(1, 2_000)).unwrap_err();
    let text = err.to_string();
    assert!(text.contains(t.size_key()), "{}: {text}", t.kind);
    assert!(matches!(err, Error::Config { .. }), "{}: {err:?}", t.kind);
    tx.send(&tpset(2, 3)).unwrap();
    let mut got = TPSet::default();
    assert!(rx.recv_into(&mut got, T).unwrap());
    assert_eq!(got, tpset(2, 3), "{}: only the set that fits", t.kind);
    assert_eq!(tx.sent(), 1);
}

/// A message that is not a TPSet is taken, returned as a wire error and
/// counted; the next set arrives.
fn a_message_that_is_no_tpset_is_counted(t: &Transport) {
    let mut tx = t.sender(json!({}));
    let mut rx = t.receiver(json!({}));
    tx.send_raw(&[&ptmp::data::VERSION_FRAME[..], &[0xff, 0xff, 0xff][..]])
        .unwrap();
    tx.send(&tpset(7, 2)).unwrap();
    let mut got = TPSet::default();
    let err = rx.recv_into(&mut got, T).unwrap_err();
    assert!(matches!(err, Error::Wire(_)), "{}: {err:?}", t.kind);
    assert!(rx.recv_into(&mut got, T).unwrap());
    assert_eq!((got.count, rx.errors()), (7, 1), "{}", t.kind);
    // Raw frames pass untouched both ways.
    let frames: [&[u8]; 3] = [b"a", b"", &[0u8; 300]];
    tx.send_raw(&frames).unwrap();
    let mut f = Frames::new();
    assert!(rx.recv_raw_into(&mut f, T).unwrap());
    assert_eq!(f.iter().collect::<Vec<_>>(), frames.to_vec());
}

/// Sets sent before any receiver came either reach the first receiver
/// that comes or are reported undelivered: never lost while the report
/// says none was.
fn what_nobody_took_is_delivered_later_or_reported(t: &Transport) {
    let cfg = t.config("PUSH", false, json!({"linger_ms": 200}));
    let mut tx = Sender::from_json(&cfg).expect("sender");
    let mut k = 0;
    for i in 0..10 {
        if tx
            .send_within(&tpset(i, 2), Duration::from_millis(50))
            .unwrap()
        {
            k += 1;
        }
    }
    let t0 = Instant::now();
    let d = tx.finish();
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert_eq!(d.sent, k);
    let mut rx = Receiver::from_json(&t.config("PULL", true, json!({}))).expect("receiver");
    let mut got = TPSet::default();
    let mut r = 0;
    while rx
        .recv_into(&mut got, Some(Duration::from_millis(500)))
        .unwrap()
    {
        assert_eq!(u64::from(got.count), r, "{}: in order", t.kind);
        r += 1;
    }
    let reported = match d.undelivered {
        Undelivered::Exactly(n) | Undelivered::AtMost(n) => n >= k - r,
        Undelivered::Unknown => true,
        Undelivered::None => r == k,
    };
    assert!(reported, "{}: {k} sent, {r} arrived, report {d:?}", t.kind);
}

/// A sender whose receiver never reads ends within its linger when
/// finished, and says some may not have arrived.
fn a_stuck_link_finishes_within_its_linger(t: &Transport) {
    let (mut tx, rx) = small_link(t, json!({"linger_ms": 300}));
    let (accepted, _) = fill(&mut tx, Duration::from_millis(20));
    assert!(accepted > 0);
    let t0 = Instant::now();
    let d = tx.finish();
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(5), "{}: {took:?}", t.kind);
    assert!(
        !matches!(d.undelivered, Undelivered::None),
        "{}: {accepted} held by a receiver that never read, yet {d:?}",
        t.kind
    );
    drop(rx);
}

/// A receiver that goes away is replaced by a new one at the same place:
/// what is sent once the new one is there reaches it, in order, once.
fn a_new_receiver_takes_over(t: &Transport) {
    let mut tx = t.sender(json!({}));
    tx.wait_in_slices();
    let mut a = t.receiver(json!({}));
    let mut got = TPSet::default();
    for i in 0..10 {
        tx.send(&tpset(i, 2)).unwrap();
        assert!(a.recv_into(&mut got, T).unwrap());
        assert_eq!(got.count, i);
    }
    drop(a);
    let mut b = t.receiver(json!({}));
    // Probe until the new receiver hears: sets sent meanwhile may have
    // gone to the old connection, or wait.
    let mut i = 10;
    let t0 = Instant::now();
    let first = loop {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "{}: never heard",
            t.kind
        );
        if tx
            .send_within(&tpset(i, 2), Duration::from_millis(20))
            .unwrap()
        {
            i += 1;
        }
        if b.recv_into(&mut got, Some(Duration::from_millis(20)))
            .unwrap()
        {
            break got.count;
        }
    };
    // Then each set sent arrives, in order, once.
    let mut last = first;
    for j in i..i + 200 {
        tx.send(&tpset(j, 2)).unwrap();
        while last < j {
            assert!(
                b.recv_into(&mut got, T).unwrap(),
                "{}: after {last}",
                t.kind
            );
            assert_eq!(got.count, last + 1, "{}: in order, once", t.kind);
            last = got.count;
        }
    }
}

macro_rules! contract {
    ($($kind:ident),*) => {$(
        mod $kind {
            fn t() -> super::Transport {
                super::Transport::new(stringify!($kind))
            }
            #[test]
            fn in_order_once_and_whole() { super::in_order_once_and_whole(&t()) }
            #[test]
            fn a_receive_waits_its_timeout() { super::a_receive_waits_its_timeout(&t()) }
            #[test]
            fn a_full_link_gives_up_in_time() { super::a_full_link_gives_up_in_time(&t()) }
            #[test]
            fn an_oversize_message_is_refused_whole() { super::an_oversize_message_is_refused_whole(&t()) }
            #[test]
            fn a_message_that_is_no_tpset_is_counted() { super::a_message_that_is_no_tpset_is_counted(&t()) }
            #[test]
            fn what_nobody_took_is_delivered_later_or_reported() {
                super::what_nobody_took_is_delivered_later_or_reported(&t())
            }
            #[test]
            fn a_stuck_link_finishes_within_its_linger() { super::a_stuck_link_finishes_within_its_linger(&t()) }
            #[test]
            fn a_new_receiver_takes_over() { super::a_new_receiver_takes_over(&t()) }
        }
    )*};
}

contract!(inproc, ipc, tcp, shm);
