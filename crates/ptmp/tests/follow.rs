//! A receiver connected by name whose peer moves: made again where the
//! peer is announced now, it first reads everything the old socket holds,
//! so nothing that reached this process is dropped with it. The names
//! come from a presence of this test's own (a table), installed once for
//! the process.

use ptmp::names::{Located, Presence};
use ptmp::{Receiver, Sender, SocketConfig, SocketType, TPSet};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// Names and where they are announced, set by the test.
type Table = Mutex<HashMap<(String, String), String>>;

/// The presence installed for this process: the test's table.
struct Fixed(&'static Table);

impl Presence for Fixed {
    fn resolve(&self, node: &str, port: &str) -> Result<Located, String> {
        self.current(node, port)
            .ok_or_else(|| format!("{node}/{port} is not announced"))
    }

    fn current(&self, node: &str, port: &str) -> Option<Located> {
        let t = self.0.lock().unwrap();
        t.get(&(node.to_string(), port.to_string()))
            .map(|a| Located {
                address: a.clone(),
                curve_key: None,
                signed: false,
            })
    }

    fn announce(&self, _: &str, _: &str, _: &str, _: Option<&str>) -> Result<(), String> {
        Err("this test announces by hand".into())
    }
}

/// Announce `node`'s `port` at `at` (the first call installs the table).
fn announce(node: &str, port: &str, at: &str) {
    static TABLE: std::sync::OnceLock<&'static Table> = std::sync::OnceLock::new();
    let t = TABLE.get_or_init(|| {
        let t: &'static Table = Box::leak(Box::default());
        assert!(ptmp::names::install(Box::new(Fixed(t))));
        t
    });
    t.lock()
        .unwrap()
        .insert((node.to_string(), port.to_string()), at.to_string());
}

/// A PUSH bound at a port of the kernel's choice; its address.
fn pusher() -> (Sender, String) {
    let tx = SocketConfig::builder(SocketType::Push)
        .bind("tcp://127.0.0.1:*")
        .linger(Some(Duration::from_secs(5)))
        .build()
        .and_then(Sender::new)
        .expect("sender");
    let at = tx.bound_endpoints()[0].clone();
    (tx, at)
}

fn set(count: u32) -> TPSet {
    TPSet {
        count,
        detid: 4,
        ..Default::default()
    }
}

#[test]
fn a_receiver_following_a_moved_peer_reads_all_the_old_socket_held() {
    let (mut a, at_a) = pusher();
    announce("mover", "out", &at_a);
    let cfg = SocketConfig::builder(SocketType::Pull)
        .connect("name://mover/out")
        .build()
        .expect("config");
    let mut rx = Receiver::following(&cfg).expect("receiver");
    // Nothing has moved yet.
    assert!(!rx.follow_moved().unwrap());
    // 500 sets reach the receiver's socket (the sender's finish waits
    // until the kernel has handed them over), none read yet.
    for i in 0..500 {
        a.send(&set(i)).unwrap();
    }
    let d = a.finish();
    assert!(!d.undelivered.any(), "{d:?}");
    // The peer comes back elsewhere: the receiver follows it.
    let (mut b, at_b) = pusher();
    announce("mover", "out", &at_b);
    assert!(rx.follow_moved().unwrap(), "the move is seen");
    for i in 500..600 {
        b.send(&set(i)).unwrap();
    }
    // Every set, the 500 the old socket held first, then the new peer's.
    let mut got = TPSet::default();
    for i in 0..600 {
        assert!(
            rx.recv_into(&mut got, Some(Duration::from_secs(10)))
                .unwrap(),
            "set {i} of 600"
        );
        assert_eq!(got.count, i);
    }
    assert_eq!(rx.received(), 600, "the counts go on across the move");
    assert!(!rx.recv_into(&mut got, Some(Duration::ZERO)).unwrap());
}

/// A receiver reads every set that reached it before its peer sent them
/// all and closed, whether it connected by name or by address. (By name,
/// libzmq's ZMQ_IMMEDIATE, once set on receivers too, dropped with the
/// ended connection the 450 of 500 not read yet.)
#[test]
fn what_arrived_before_the_peer_closed_is_read() {
    for by_name in [true, false] {
        let (mut a, at_a) = pusher();
        let target = if by_name {
            announce("closer", "out", &at_a);
            "name://closer/out".to_string()
        } else {
            at_a
        };
        let cfg = SocketConfig::builder(SocketType::Pull)
            .connect(&target)
            .build()
            .expect("config");
        let mut rx = Receiver::following(&cfg).expect("receiver");
        for i in 0..500 {
            a.send(&set(i)).unwrap();
        }
        let mut got = TPSet::default();
        assert!(rx
            .recv_into(&mut got, Some(Duration::from_secs(5)))
            .unwrap());
        let d = a.finish();
        assert!(!d.undelivered.any(), "{d:?}");
        // The receiver reads once the connection has ended.
        std::thread::sleep(Duration::from_millis(300));
        let mut n = 1;
        while rx
            .recv_into(&mut got, Some(Duration::from_millis(500)))
            .unwrap()
        {
            assert_eq!(got.count, n);
            n += 1;
        }
        assert_eq!(n, 500, "connected to {target}");
    }
}
