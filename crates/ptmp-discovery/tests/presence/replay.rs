//! Replays of genuine announcements: captured from multicast DNS by a
//! plain browser (what anyone on the link can do), then registered again
//! by another process with an address record or an instance name of its
//! own. Part of the `presence` test binary (see there for how it runs).

use super::{joined, left, next_event, Proc, JOIN_LIMIT};
use ptmp_discovery::{Config, Discovery, Error, Event, NamedReceiver, SERVICE_TYPE};
use std::time::{Duration, Instant};

/// A browser of `_ptmp._tcp` that keeps every TXT record it hears, as an
/// attacker on the link would.
struct Tap {
    _daemon: mdns_sd::ServiceDaemon,
    rx: mdns_sd::Receiver<mdns_sd::ServiceEvent>,
}

impl Tap {
    fn start() -> Tap {
        let daemon = mdns_sd::ServiceDaemon::new().unwrap();
        daemon.disable_interface(mdns_sd::IfKind::IPv6).unwrap();
        let rx = daemon.browse(SERVICE_TYPE).unwrap();
        Tap {
            _daemon: daemon,
            rx,
        }
    }

    /// The instance name (`NODE/PORT#TAG`) and TXT entries (`k=v;k=v`,
    /// signature included) of the first announcement of `name` heard.
    fn capture(&self, name: &str) -> (String, String) {
        let deadline = Instant::now() + JOIN_LIMIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let e = self.rx.recv_timeout(left).expect("the announcement heard");
            let mdns_sd::ServiceEvent::ServiceResolved(s) = e else {
                continue;
            };
            if !s.fullname.starts_with(&format!("{name}#")) {
                continue;
            }
            let label = s
                .fullname
                .strip_suffix(&format!(".{SERVICE_TYPE}"))
                .unwrap()
                .to_string();
            let txt: Vec<String> = s
                .txt_properties
                .iter()
                .map(|p| format!("{}={}", p.key(), p.val_str()))
                .collect();
            return (label, txt.join(";"));
        }
    }
}

fn until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < deadline, "{what} not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// With a group secret, a signed announcement captured from `legit/out`
/// and replayed after its node left, its address record pointing at the
/// replayer (which serves its own PUSH on the same port), is refused as
/// forged: a receiver connecting by name never reaches the replayer.
pub fn a_replayed_announcement_cannot_take_a_name() {
    let secret = "s3cret";
    let cfg = Config {
        group: "exp1".into(),
        secret: Some(secret.as_bytes().to_vec()),
        ..Config::default()
    };
    let d = Discovery::start(cfg).unwrap();
    let rx = d.subscribe();
    let tap = Tap::start();
    let env = [("GROUP", "exp1"), ("SECRET", secret)];
    let mut legit_env = vec![
        ("NODE", "legit"),
        ("TCP", "7401"),
        ("ANNOUNCE_AS", "tcp://*:7401"),
        ("FIRST", "0"),
    ];
    legit_env.extend(env);
    let legit = Proc::start(None, "sendann", &legit_env);
    legit.expect("announced", Duration::from_secs(15));
    let (label, txt) = tap.capture("legit/out");
    println!("captured {label}: {txt}");
    let p = d
        .resolve("legit", "out", JOIN_LIMIT)
        .expect("the genuine one");
    assert_eq!(p.endpoint(), "tcp://127.0.0.1:7401");
    // Its node leaves cleanly (goodbye).
    assert!(legit.stop().success());
    next_event(&rx, Duration::from_secs(6), |e| left(e, "legit/out")).expect("leave seen");

    // The replayer's own sender on the same port of another address, and
    // the captured record, unchanged, with an address record of its own:
    // once under the same instance name, once under a new one.
    let _evil_tx = Proc::start(
        None,
        "sendann",
        &[("HOST", "127.0.0.2"), ("TCP", "7401"), ("FIRST", "1000000")],
    );
    for (n, instance) in [label.clone(), label.replace('#', "#0")].iter().enumerate() {
        let forged = d.counters().forged;
        let evil = Proc::start(
            None,
            "raw",
            &[
                ("INSTANCE", instance),
                ("TXT", &txt),
                ("ADDRS", "127.0.0.2"),
                ("NOPROBE", "1"),
            ],
        );
        evil.expect("registered", Duration::from_secs(10));
        // Either it is refused (counted), or it takes the name.
        until("the replay seen", JOIN_LIMIT * 2, || {
            d.counters().forged > forged || d.resolve("legit", "out", Duration::ZERO).is_ok()
        });
        if let Ok(p) = d.resolve("legit", "out", Duration::ZERO) {
            panic!("replay {n} took the name: listed at {}", p.endpoint());
        }
        println!("replay {n} refused: {:?}", d.counters());
        // A receiver by name finds nothing, and so receives nothing.
        let r = NamedReceiver::new(
            &d,
            r#"{"socket": {"type": "PULL", "connect": ["name://legit/out"]}}"#,
            Duration::from_secs(2),
        );
        assert!(matches!(r.err(), Some(Error::NotFound { .. })));
        drop(evil);
    }
}

/// A signed (or unsigned) announcement replayed as a twin (the same
/// record under a smaller instance tag, which would make it the senior)
/// ends nothing: the genuine announcer sees a record of itself that it did
/// not make, counts it as forged and stays announced; with the secret, the
/// others refuse the twin too.
pub fn a_replayed_twin_ends_nothing() {
    for secret in [Some("s3cret"), None] {
        let cfg = Config {
            group: "exp2".into(),
            secret: secret.map(|s| s.as_bytes().to_vec()),
            ..Config::default()
        };
        let d = Discovery::start(cfg).unwrap();
        let rx = d.subscribe();
        let tap = Tap::start();
        let mut env = vec![
            ("NODE", "legit"),
            ("PORTS", "out=tcp://*:7402"),
            ("GROUP", "exp2"),
        ];
        env.extend(secret.map(|s| ("SECRET", s)));
        let mut legit = Proc::start(None, "announce", &env);
        legit.expect("announced", Duration::from_secs(15));
        let Some(Event::Joined(genuine)) = next_event(&rx, JOIN_LIMIT, |e| joined(e, "legit/out"))
        else {
            panic!("join not seen")
        };
        let (label, txt) = tap.capture("legit/out");
        let (node_port, _tag) = label.split_once('#').unwrap();
        let twin = format!("{node_port}#00000000");
        let forged = d.counters().forged;
        let evil = Proc::start(None, "raw", &[("INSTANCE", &twin), ("TXT", &txt)]);
        evil.expect("registered", Duration::from_secs(10));
        // The announcer's verdict: a forgery counted, or its withdrawal.
        let line = legit.expect_any(&["forged", "withdrawn"], JOIN_LIMIT * 2);
        println!("secret {}: announcer says {line:?}", secret.is_some());
        assert!(line.starts_with("forged"), "{line}");
        assert!(legit.child.try_wait().unwrap().is_none(), "still running");
        if secret.is_some() {
            until("the twin refused here", JOIN_LIMIT, || {
                d.counters().forged > forged
            });
            let listed: Vec<String> = d.peers().iter().map(|p| p.instance.clone()).collect();
            assert_eq!(listed, std::slice::from_ref(&genuine.instance));
        }
        drop(evil);
        assert!(legit.stop().success());
    }
}

/// Without a secret a rival claim cannot be told from a forged one, so it
/// ends nothing: two processes announcing one name at once both stay
/// announced, everyone lists the senior, and the junior takes the name
/// when the senior leaves.
pub fn an_unsigned_race_ends_nothing() {
    let d = Discovery::start(Config::default()).unwrap();
    let rx = d.subscribe();
    let env = |port: &'static str| vec![("NODE", "racer"), ("PORTS", port), ("SETTLE_MS", "0")];
    let r1 = Proc::start(None, "announce", &env("out=tcp://*:7407"));
    let r2 = Proc::start(None, "announce", &env("out=tcp://*:7408"));
    let e = next_event(
        &rx,
        JOIN_LIMIT * 2,
        |e| matches!(e, Event::Duplicate { kept, .. } if kept.node == "racer"),
    )
    .expect("duplicate reported");
    let Event::Duplicate { kept, refused } = e else {
        unreachable!()
    };
    let (junior, senior) = if refused.pid == r1.child.id() {
        (r1, r2)
    } else {
        (r2, r1)
    };
    assert_eq!(kept.pid, senior.child.id());
    // The junior saw the conflict too, and stayed announced.
    let seen = junior.expect("duplicate kept", Duration::from_secs(10));
    assert!(seen.ends_with(" announced"), "{seen}");
    let listed = d.resolve("racer", "out", Duration::ZERO).unwrap();
    assert_eq!(listed.pid, senior.child.id());
    assert!(senior.stop().success());
    let got = next_event(
        &rx,
        JOIN_LIMIT,
        |e| matches!(e, Event::Joined(p) if p.name() == "racer/out"),
    );
    let Some(Event::Joined(p)) = got else {
        panic!("the junior did not take the name")
    };
    assert_eq!(p.pid, junior.child.id());
    drop(junior);
}

/// Signed announcements are signed again while they run: with a
/// freshness window of 24 s (signed again every 3 s), a node stays listed
/// longer than the window, its signing time moving on.
pub fn signed_announcements_stay_fresh() {
    let cfg = Config {
        secret: Some(b"s3cret".to_vec()),
        max_age: Duration::from_secs(24),
        ..Config::default()
    };
    let d = Discovery::start(cfg).unwrap();
    let rx = d.subscribe();
    let a = Proc::start(
        None,
        "announce",
        &[
            ("NODE", "fresh"),
            ("PORTS", "out=tcp://*:7409"),
            ("SECRET", "s3cret"),
            ("MAX_AGE_S", "24"),
        ],
    );
    let Some(Event::Joined(p)) = next_event(&rx, JOIN_LIMIT, |e| joined(e, "fresh/out")) else {
        panic!("join not seen")
    };
    let first = p.signed_at.expect("signed");
    let gone = next_event(&rx, Duration::from_secs(30), |e| left(e, "fresh/out"));
    assert!(gone.is_none(), "dropped while alive: {gone:?}");
    let now = d.resolve("fresh", "out", Duration::ZERO).unwrap();
    let last = now.signed_at.unwrap();
    println!("signed at {first}, then at {last}");
    assert!(last > first + 24, "signed again: {first} then {last}");
    assert!(a.stop().success());
}
