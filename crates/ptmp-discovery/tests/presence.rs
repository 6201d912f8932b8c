//! Presence between real processes, each test in a fresh network namespace
//! (so it neither depends on nor disturbs the host's interfaces): join and
//! leave (goodbye and kill -9), hostile announcements, duplicate names, and
//! two namespaces joined by a veth pair.
//!
//! This binary is its own test runner (no libtest harness): run plainly it
//! runs each test in a namespace by re-executing itself there; with
//! `PTMP_DISC_ROLE` set it is one of the processes a test starts. Needs
//! root and `ip` (iproute2); without them the tests fail, naming them, unless
//! `PTMP_ALLOW_MISSING_PARTS=1`.

use ptmp_discovery::{Config, Discovery, Event, NamedReceiver, SERVICE_TYPE};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[path = "presence/replay.rs"]
mod replay;

#[path = "presence/roles.rs"]
mod roles;
use roles::{role_announce, role_raw, role_sendann, role_watch};

// ---------------------------------------------------------------- helpers

struct Proc {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Proc {
    /// Starts this binary in `role` with `env`, optionally inside `netns`.
    fn start(netns: Option<&str>, role: &str, env: &[(&str, &str)]) -> Proc {
        let exe = std::env::current_exe().unwrap();
        let mut cmd = match netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        cmd.env("PTMP_DISC_ROLE", role)
            .env_remove("PTMP_DISC_IN_NS")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Proc { child, lines }
    }

    /// The first line containing `what`, within `limit`.
    fn expect(&self, what: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l.contains(what) => return l,
                Ok(_) => {}
                Err(_) => panic!("no line with {what:?} within {limit:?}"),
            }
        }
    }

    /// The first line that starts with one of `what`, within `limit`.
    fn expect_any(&self, what: &[&str], limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if what.iter().any(|w| l.starts_with(w)) => return l,
                Ok(_) => {}
                Err(_) => panic!("no line starting with any of {what:?} within {limit:?}"),
            }
        }
    }

    /// Closes stdin (a clean stop) and waits for the exit status.
    fn stop(mut self) -> std::process::ExitStatus {
        drop(self.child.stdin.take());
        self.child.wait().unwrap()
    }

    fn kill9(&mut self) {
        // SAFETY: kill(2) on the pid of a child we started and have not yet
        // waited for, so the pid cannot have been reused.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The next event that `keep` accepts, within `limit`.
fn next_event(
    rx: &mpsc::Receiver<Event>,
    limit: Duration,
    keep: impl Fn(&Event) -> bool,
) -> Option<Event> {
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(e) if keep(&e) => return Some(e),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
}

fn joined(e: &Event, name: &str) -> bool {
    matches!(e, Event::Joined(p) if p.name() == name)
}

fn left(e: &Event, name: &str) -> bool {
    matches!(e, Event::Left(p) if p.name() == name)
}

/// How long a join may take in these tests: the stated 3 s, doubled for a
/// busy shared machine.
const JOIN_LIMIT: Duration = Duration::from_secs(6);

// ---------------------------------------------------------------- tests

/// A node's port is listed with every TXT field right, and its clean exit
/// (goodbye packets) is seen as a leave.
fn join_and_clean_leave() {
    let d = Discovery::start(Config::default()).unwrap();
    let rx = d.subscribe();
    let t0 = Instant::now();
    let a = Proc::start(
        None,
        "announce",
        &[
            ("NODE", "apa1-tcs"),
            ("PORTS", "out=tcp://*:7001,in=tcp://127.0.0.1:7002"),
        ],
    );
    a.expect("announced", Duration::from_secs(10));
    let e = next_event(&rx, JOIN_LIMIT, |e| joined(e, "apa1-tcs/out")).expect("join seen");
    println!("join seen {:?} after start", t0.elapsed());
    let Event::Joined(p) = e else { unreachable!() };
    assert_eq!(p.pid, a.child.id());
    assert_eq!(p.transport, "tcp");
    assert_eq!(p.address, "tcp://*:7001");
    assert_eq!(p.endpoint(), "tcp://127.0.0.1:7001", "wildcard filled in");
    assert_eq!(p.group, "default");
    assert_eq!(p.host, ptmp_discovery::host_name());
    assert!(p.uptime() < Duration::from_secs(30));
    let q = d
        .resolve("apa1-tcs", "in", JOIN_LIMIT)
        .expect("second port resolves");
    assert_eq!(q.endpoint(), "tcp://127.0.0.1:7002");
    let err = d
        .resolve("apa1-tcs", "nope", Duration::from_millis(300))
        .unwrap_err()
        .to_string();
    assert!(err.contains("apa1-tcs/nope"), "{err}");

    let t1 = Instant::now();
    assert!(a.stop().success());
    // Both ports say goodbye; their leaves come in either order.
    let mut gone = Vec::new();
    while gone.len() < 2 {
        let e = next_event(&rx, Duration::from_secs(4), |e| matches!(e, Event::Left(_)))
            .expect("leave seen");
        let Event::Left(p) = e else { unreachable!() };
        gone.push(p.name());
    }
    gone.sort();
    assert_eq!(gone, ["apa1-tcs/in", "apa1-tcs/out"]);
    println!("clean leave seen {:?} after stop", t1.elapsed());
    assert!(d.peers().iter().all(|p| p.node != "apa1-tcs"));
}

/// A process killed with SIGKILL says no goodbye; the liveness check drops
/// it within the stated bound.
fn kill9_leave_within_bound() {
    let cfg = Config::default();
    let bound = cfg.leave_bound();
    let d = Discovery::start(cfg).unwrap();
    let rx = d.subscribe();
    let mut a = Proc::start(
        None,
        "announce",
        &[("NODE", "victim"), ("PORTS", "out=tcp://*:7003")],
    );
    next_event(&rx, JOIN_LIMIT, |e| joined(e, "victim/out")).expect("join seen");
    let t = Instant::now();
    a.kill9();
    // Twice the bound: the machine is shared and noisy.
    next_event(&rx, bound * 2, |e| left(e, "victim/out")).expect("leave after kill -9 seen");
    println!(
        "leave after kill -9 seen in {:?} (stated bound {bound:?})",
        t.elapsed()
    );
}

/// A node killed and started again at once (elsewhere: another port and
/// pid) gets its name back in the eyes of a peer that still listed the
/// dead one when the newcomer announced: the newcomer, held back as a
/// duplicate, takes the name when the dead holder is dropped.
fn a_newcomer_gets_a_dead_holders_name() {
    let cfg = Config::default();
    let bound = cfg.leave_bound();
    let d = Discovery::start(cfg).unwrap();
    let rx = d.subscribe();
    let mut old = Proc::start(
        None,
        "announce",
        &[("NODE", "mover"), ("PORTS", "out=tcp://*:7011")],
    );
    next_event(&rx, JOIN_LIMIT, |e| joined(e, "mover/out")).expect("first join seen");
    old.kill9();
    let t = Instant::now();
    let new = Proc::start(
        None,
        "announce",
        &[("NODE", "mover"), ("PORTS", "out=tcp://*:7012")],
    );
    let got = next_event(
        &rx,
        bound * 2 + JOIN_LIMIT,
        |e| matches!(e, Event::Joined(p) if p.name() == "mover/out" && p.address.ends_with(":7012")),
    );
    assert!(got.is_some(), "the newcomer never got the name");
    let p = d.resolve("mover", "out", Duration::ZERO).unwrap();
    assert_eq!(p.address, "tcp://*:7012");
    println!("name taken over {:?} after the kill", t.elapsed());
    drop(new);
}

/// Malformed, oversized, forged and other-group announcements are counted
/// and ignored; an honest one beside them is listed.
fn hostile_announcements_counted_and_ignored() {
    let secret = "s3cret";
    let cfg = Config {
        group: "exp1".into(),
        secret: Some(secret.as_bytes().to_vec()),
        ..Config::default()
    };
    let d = Discovery::start(cfg).unwrap();
    let rx = d.subscribe();
    let good = "v=1;group=exp1;node=bad;port=out;addr=tcp://*:1;transport=tcp;host=h;pid=9;start=1";
    // (instance name, TXT entries, extra environment of the raw role)
    type Case<'a> = (&'a str, String, Vec<(&'a str, &'a str)>);
    let cases: Vec<Case> = vec![
        // A pid that is not a number (correctly signed: only the content is bad).
        (
            "m1",
            good.replace("pid=9", "pid=abc"),
            vec![("SIGN_WITH", secret)],
        ),
        // A missing field.
        (
            "m2",
            good.replace(";host=h", ""),
            vec![("SIGN_WITH", secret)],
        ),
        // An unknown layout version.
        (
            "m3",
            good.replace("v=1", "v=99"),
            vec![("SIGN_WITH", secret)],
        ),
        // Signed with another secret.
        ("f1", good.to_string(), vec![("SIGN_WITH", "guess")]),
        // Signed with the secret an hour ago: a replay of an old one.
        (
            "f3",
            good.to_string(),
            vec![("SIGN_WITH", secret), ("AGE_S", "3600")],
        ),
        // Signed the way ptmp did before signatures had a version (and
        // covered neither the instance, the addresses nor the time).
        (
            "f4",
            good.to_string(),
            vec![("SIGN_WITH", secret), ("OLD_SIGNATURE", "1")],
        ),
        // Not signed at all.
        ("f2", good.to_string(), vec![]),
        // Over 1024 bytes of TXT in fields of 190 bytes.
        (
            "o1",
            good.to_string(),
            vec![("SIGN_WITH", secret), ("PAD", "7")],
        ),
        // Another experiment's group.
        (
            "g1",
            good.replace("exp1", "exp2"),
            vec![("SIGN_WITH", secret)],
        ),
    ];
    let mut procs = Vec::new();
    for (inst, txt, extra) in &cases {
        let mut env = vec![("INSTANCE", *inst), ("TXT", txt.as_str())];
        env.extend(extra.iter().copied());
        let p = Proc::start(None, "raw", &env);
        p.expect("registered", Duration::from_secs(10));
        procs.push(p);
    }
    let honest = Proc::start(
        None,
        "announce",
        &[
            ("NODE", "honest"),
            ("PORTS", "out=tcp://*:7004"),
            ("GROUP", "exp1"),
            ("SECRET", secret),
        ],
    );
    let Some(Event::Joined(honest_peer)) = next_event(&rx, JOIN_LIMIT, |e| joined(e, "honest/out"))
    else {
        panic!("honest join not seen")
    };
    let deadline = Instant::now() + Duration::from_secs(8);
    let want = |c: ptmp_discovery::Counters| {
        c.malformed >= 3 && c.forged >= 4 && c.oversized >= 1 && c.other_group >= 1
    };
    while !want(d.counters()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let c = d.counters();
    println!("counters {c:?}");
    assert!(want(c), "every hostile kind counted: {c:?}");
    let names: Vec<String> = d.peers().iter().map(|p| p.name()).collect();
    assert_eq!(names, ["honest/out"], "only the honest peer listed");

    // A forger reusing the honest peer's instance name (skipping the
    // probe that would have told it the name is taken) cannot evict it.
    let forged_before = d.counters().forged;
    let instance = honest_peer
        .instance
        .strip_suffix(&format!(".{SERVICE_TYPE}"))
        .unwrap()
        .to_string();
    let evil = good.replace("node=bad", "node=honest");
    let f = Proc::start(
        None,
        "raw",
        &[("INSTANCE", &instance), ("TXT", &evil), ("NOPROBE", "1")],
    );
    f.expect("registered", Duration::from_secs(10));
    let deadline = Instant::now() + Duration::from_secs(8);
    while d.counters().forged == forged_before {
        assert!(Instant::now() < deadline, "the forged update was not seen");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    let still: Vec<u32> = d.peers().iter().map(|p| p.pid).collect();
    assert_eq!(
        still,
        [honest.child.id()],
        "the honest peer is still listed"
    );
    drop(f);
    drop(procs);
    drop(honest);
}

/// A second process announcing a name already present is refused with
/// both locations; two announcing at the same moment end with one listed,
/// the junior withdrawing itself.
fn duplicate_name_refused() {
    let d = Discovery::start(Config::default()).unwrap();
    let rx = d.subscribe();
    let first = Proc::start(
        None,
        "announce",
        &[("NODE", "twin"), ("PORTS", "out=tcp://*:7005")],
    );
    next_event(&rx, JOIN_LIMIT, |e| joined(e, "twin/out")).expect("first seen");
    let mut second = Proc::start(
        None,
        "announce",
        &[("NODE", "twin"), ("PORTS", "out=tcp://*:7006")],
    );
    let line = second.expect("refused", Duration::from_secs(10));
    println!("{line}");
    assert!(
        line.contains("tcp://*:7005") && line.contains(&format!("pid {}", first.child.id())),
        "{line}"
    );
    assert!(
        line.contains("tcp://*:7006") && line.contains(&format!("pid {}", second.child.id())),
        "{line}"
    );
    assert_eq!(second.child.wait().unwrap().code(), Some(3));

    // A race: both skip the listening time and announce at once. With the
    // group's secret, the junior, shown the senior alive, withdraws.
    let d = Discovery::start(Config {
        secret: Some(b"s3cret".to_vec()),
        max_age: Duration::from_secs(24),
        ..Config::default()
    })
    .unwrap();
    let rx = d.subscribe();
    let env = |port: &'static str| {
        vec![
            ("NODE", "racer"),
            ("PORTS", port),
            ("SETTLE_MS", "0"),
            ("SECRET", "s3cret"),
            ("MAX_AGE_S", "24"),
        ]
    };
    let r1 = Proc::start(None, "announce", &env("out=tcp://*:7007"));
    let r2 = Proc::start(None, "announce", &env("out=tcp://*:7008"));
    let e = next_event(
        &rx,
        JOIN_LIMIT * 2,
        |e| matches!(e, Event::Duplicate { kept, .. } if kept.node == "racer"),
    )
    .expect("duplicate reported");
    let Event::Duplicate { kept, refused } = e else {
        unreachable!()
    };
    println!(
        "race: kept {} refused {}",
        kept.location(),
        refused.location()
    );
    let (junior, senior) = if refused.pid == r1.child.id() {
        (&r1, &r2)
    } else {
        (&r2, &r1)
    };
    assert_eq!(kept.pid, senior.child.id());
    let w = junior.expect_any(&["withdrawn:"], Duration::from_secs(10));
    assert!(
        w.contains(&kept.address) && w.contains(&refused.address),
        "{w}"
    );
    // The junior's goodbye leaves only the senior listed.
    let deadline = Instant::now() + Duration::from_secs(6);
    loop {
        let racers: Vec<u32> = d
            .peers()
            .iter()
            .filter(|p| p.node == "racer")
            .map(|p| p.pid)
            .collect();
        if racers == [senior.child.id()] {
            break;
        }
        assert!(Instant::now() < deadline, "still listed: {racers:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A receiver whose config names its peer (`name://src/out`) finds it,
/// follows it when it is killed and started again at another address, and
/// loses nothing that had reached it; a name that never appears is an
/// error after the timeout, naming it.
fn connect_by_name_follows_a_moved_peer() {
    let d = Discovery::start(Config::default()).unwrap();
    let err = NamedReceiver::new(
        &d,
        r#"{"socket": {"type": "PULL", "connect": ["name://ghost/out"]}}"#,
        Duration::from_millis(500),
    )
    .err()
    .expect("no such peer")
    .to_string();
    assert!(err.contains("ghost/out"), "{err}");

    let mut a = Proc::start(
        None,
        "sendann",
        &[("NODE", "src"), ("TCP", "7201"), ("FIRST", "0")],
    );
    let mut r = NamedReceiver::new(
        &d,
        r#"{"socket": {"type": "PULL", "connect": ["name://src/out"]}}"#,
        JOIN_LIMIT,
    )
    .unwrap();
    assert_eq!(r.peers()[0].endpoint(), "tcp://127.0.0.1:7201");
    let mut got = Vec::new();
    while got.len() < 10 {
        let t = r
            .recv(Some(Duration::from_secs(10)))
            .unwrap()
            .expect("from the first sender");
        got.push(t.count);
    }
    a.kill9();
    // Started again at once, elsewhere: it takes the name over from the
    // dead one, which does not answer.
    let b = Proc::start(
        None,
        "sendann",
        &[("NODE", "src"), ("TCP", "7202"), ("FIRST", "1000")],
    );
    b.expect("announced", Duration::from_secs(15));
    let mut from_b = Vec::new();
    while from_b.len() < 10 {
        let t = r
            .recv(Some(Duration::from_secs(15)))
            .unwrap()
            .expect("from the second sender");
        if t.count >= 1000 {
            from_b.push(t.count);
        } else {
            got.push(t.count);
        }
    }
    println!(
        "first sender: {} received before its death; second: {:?}",
        got.len(),
        &from_b[..3]
    );
    let want: Vec<u32> = (0..got.len() as u32).collect();
    assert_eq!(
        got, want,
        "what reached the receiver from the dead sender, in order, none lost"
    );
    assert_eq!(from_b, (1000..1010).collect::<Vec<u32>>());
    assert_eq!(r.moves(), 1);
    assert_eq!(r.peers()[0].pid, b.child.id());
    assert_eq!(r.peers()[0].endpoint(), "tcp://127.0.0.1:7202");
}

/// Past `max_peers` listed ports, further announcements are counted and
/// ignored (a flood of made-up names cannot exhaust memory).
fn a_full_table_ignores_newcomers() {
    let d = Discovery::start(Config {
        max_peers: 1,
        ..Config::default()
    })
    .unwrap();
    let rx = d.subscribe();
    let _a = Proc::start(
        None,
        "announce",
        &[("NODE", "one"), ("PORTS", "out=tcp://*:7301")],
    );
    next_event(&rx, JOIN_LIMIT, |e| joined(e, "one/out")).expect("first listed");
    let _b = Proc::start(
        None,
        "announce",
        &[("NODE", "two"), ("PORTS", "out=tcp://*:7302")],
    );
    let deadline = Instant::now() + JOIN_LIMIT;
    while d.counters().table_full == 0 {
        assert!(Instant::now() < deadline, "the second was not counted");
        std::thread::sleep(Duration::from_millis(100));
    }
    let names: Vec<String> = d.peers().iter().map(|p| p.name()).collect();
    assert_eq!(names, ["one/out"]);
}

// ------------------------------------------------------- namespaces, runner

fn sh(args: &[&str]) -> bool {
    Command::new(args[0])
        .args(&args[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// A network namespace with loopback up and multicast on, deleted on drop.
struct Netns(String);

impl Netns {
    fn new(tag: &str) -> Option<Netns> {
        let name = format!("ptmpd-{}-{tag}", std::process::id());
        if !sh(&["ip", "netns", "add", &name]) {
            return None;
        }
        let ns = Netns(name);
        let ok = sh(&["ip", "-n", &ns.0, "link", "set", "lo", "up"])
            && sh(&["ip", "-n", &ns.0, "link", "set", "lo", "multicast", "on"]);
        ok.then_some(ns)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        sh(&["ip", "netns", "del", &self.0]);
    }
}

/// Two namespaces joined by a veth pair (10.77.0.1 and 10.77.0.2): a
/// watcher in one sees the other's announcement with its veth address, and
/// its kill -9 as a leave.
fn across_two_namespaces() -> Result<(), String> {
    let (Some(a), Some(b)) = (Netns::new("a"), Netns::new("b")) else {
        return Err("skipped".into());
    };
    let va = format!("pva{}", std::process::id() % 100000);
    let vb = format!("pvb{}", std::process::id() % 100000);
    let ok = sh(&[
        "ip", "link", "add", &va, "netns", &a.0, "type", "veth", "peer", "name", &vb, "netns", &b.0,
    ]) && sh(&["ip", "-n", &a.0, "addr", "add", "10.77.0.1/24", "dev", &va])
        && sh(&["ip", "-n", &b.0, "addr", "add", "10.77.0.2/24", "dev", &vb])
        && sh(&[
            "ip",
            "-n",
            &a.0,
            "link",
            "set",
            &va,
            "up",
            "multicast",
            "on",
        ])
        && sh(&[
            "ip",
            "-n",
            &b.0,
            "link",
            "set",
            &vb,
            "up",
            "multicast",
            "on",
        ]);
    if !ok {
        return Err("skipped: cannot make a veth pair".into());
    }
    let watch = Proc::start(Some(&a.0), "watch", &[]);
    watch.expect("watching", Duration::from_secs(10));
    let mut ann = Proc::start(
        Some(&b.0),
        "announce",
        &[("NODE", "far"), ("PORTS", "out=tcp://*:7010")],
    );
    // Over a veth pair made a moment ago the first announcement can be
    // lost; a later announcement or query then brings the join, seconds
    // on: here it takes 5.8-5.9 s, against the 6 s of JOIN_LIMIT, which a
    // loaded machine overran once. The test is about the address and the
    // leave; this bound leaves room.
    let t = Instant::now();
    let j = watch.expect("joined far/out", JOIN_LIMIT * 3);
    println!("{j} (after {:?})", t.elapsed());
    assert!(j.contains("tcp://10.77.0.2:7010"), "the veth address: {j}");
    let t = Instant::now();
    ann.kill9();
    watch.expect("left far/out", Config::default().leave_bound() * 2);
    println!(
        "leave across namespaces after kill -9 seen in {:?}",
        t.elapsed()
    );
    Ok(())
}

const TESTS: &[(&str, fn())] = &[
    ("join_and_clean_leave", join_and_clean_leave),
    ("kill9_leave_within_bound", kill9_leave_within_bound),
    (
        "a_newcomer_gets_a_dead_holders_name",
        a_newcomer_gets_a_dead_holders_name,
    ),
    (
        "hostile_announcements_counted_and_ignored",
        hostile_announcements_counted_and_ignored,
    ),
    ("duplicate_name_refused", duplicate_name_refused),
    (
        "a_replayed_announcement_cannot_take_a_name",
        replay::a_replayed_announcement_cannot_take_a_name,
    ),
    (
        "a_replayed_twin_ends_nothing",
        replay::a_replayed_twin_ends_nothing,
    ),
    (
        "an_unsigned_race_ends_nothing",
        replay::an_unsigned_race_ends_nothing,
    ),
    (
        "signed_announcements_stay_fresh",
        replay::signed_announcements_stay_fresh,
    ),
    (
        "connect_by_name_follows_a_moved_peer",
        connect_by_name_follows_a_moved_peer,
    ),
    (
        "a_full_table_ignores_newcomers",
        a_full_table_ignores_newcomers,
    ),
];

fn main() {
    if let Ok(role) = std::env::var("PTMP_DISC_ROLE") {
        match role.as_str() {
            "announce" => role_announce(),
            "raw" => role_raw(),
            "watch" => role_watch(),
            "sendann" => role_sendann(),
            r => panic!("unknown role {r}"),
        }
        return;
    }
    if let Ok(name) = std::env::var("PTMP_DISC_IN_NS") {
        let f = TESTS
            .iter()
            .find(|(n, _)| *n == name)
            .expect("known test")
            .1;
        f();
        return;
    }
    // libtest-like arguments: a name filter (anything not starting with -).
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let selected = |n: &str| filter.is_empty() || filter.iter().any(|f| n.contains(f.as_str()));
    let mut failed = Vec::new();
    let exe = std::env::current_exe().unwrap();
    for (name, _) in TESTS.iter().filter(|(n, _)| selected(n)) {
        let Some(ns) = Netns::new("t") else {
            // A missing real part fails the run unless this run opted out
            // (the rule of tests/support/missing_part.rs).
            if std::env::var("PTMP_ALLOW_MISSING_PARTS").as_deref() == Ok("1") {
                println!("test {name} ... skipped: cannot make a network namespace (needs root and iproute2)");
            } else {
                println!("test {name} ... FAILED: cannot make a network namespace (needs root and iproute2; PTMP_ALLOW_MISSING_PARTS=1 skips)");
                failed.push(*name);
            }
            continue;
        };
        let t = Instant::now();
        let out = Command::new("ip")
            .args(["netns", "exec", &ns.0])
            .arg(&exe)
            .env("PTMP_DISC_IN_NS", name)
            .output()
            .unwrap();
        let ok = out.status.success();
        println!(
            "test {name} ... {} ({:.1?})",
            if ok { "ok" } else { "FAILED" },
            t.elapsed()
        );
        std::io::stdout().write_all(&out.stdout).unwrap();
        if !ok {
            std::io::stdout().write_all(&out.stderr).unwrap();
            failed.push(*name);
        }
    }
    if selected("across_two_namespaces") {
        let t = Instant::now();
        match std::panic::catch_unwind(across_two_namespaces) {
            Ok(Ok(())) => println!("test across_two_namespaces ... ok ({:.1?})", t.elapsed()),
            Ok(Err(why)) => println!("test across_two_namespaces ... {why}"),
            Err(_) => {
                println!("test across_two_namespaces ... FAILED");
                failed.push("across_two_namespaces");
            }
        }
    }
    if !failed.is_empty() {
        println!("failed: {failed:?}");
        std::process::exit(101);
    }
}
