//! Durable readers: a reader attached under an identity keeps its place in
//! the ring across its own death (kill -9 of a real process), the writer
//! waits for it within its grace time, a successor resumes at the first
//! message not committed, and two live readers of one identity are refused.

mod common;
use common::Chan;

use ptmp_shm::{
    inspect, ChannelConfig, Durable, Policy, Reader, ShmError, StartAt, Writer, MAX_IDENT_LEN,
};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn blocking(slots: usize) -> ChannelConfig {
    ChannelConfig {
        slots,
        max_message: 64,
        policy: Policy::Block,
    }
}

fn durable(id: &str, grace_ms: u64) -> Durable<'_> {
    Durable {
        id,
        grace: Duration::from_millis(grace_ms),
        token: None,
    }
}

fn attach(name: &str, id: &str, grace_ms: u64) -> Result<Reader, ShmError> {
    Reader::attach_durable(
        name,
        durable(id, grace_ms),
        StartAt::Oldest,
        ptmp_shm::Access::Private,
    )
}

/// The message carrying number `s`.
fn msg(s: u64) -> [u8; 8] {
    s.to_le_bytes()
}

fn num(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().unwrap())
}

/// Child-process roles, selected by environment variables when this test
/// binary is re-run by the tests below.
#[test]
fn child_role() {
    let Ok(role) = std::env::var("PTMP_SHM_DURABLE_ROLE") else {
        return;
    };
    let name = std::env::var("PTMP_SHM_DURABLE_CHAN").unwrap();
    let grace: u64 = std::env::var("PTMP_SHM_DURABLE_GRACE")
        .unwrap()
        .parse()
        .unwrap();
    match role.as_str() {
        "read-5-commit-3" => {
            // Reads five messages, commits the first three, then hangs on
            // to the other two until it is killed.
            let mut r = attach(&name, "g/w/in", grace).unwrap();
            let mut buf = Vec::new();
            for want in 0..5 {
                let got = r.recv(&mut buf, None).unwrap().unwrap();
                assert_eq!(got.seq, want);
                if want == 2 {
                    r.commit_now();
                }
            }
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        _ => unreachable!(),
    }
}

fn spawn_child(role: &str, chan: &str, grace_ms: u64) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_role",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("PTMP_SHM_DURABLE_ROLE", role)
        .env("PTMP_SHM_DURABLE_CHAN", chan)
        .env("PTMP_SHM_DURABLE_GRACE", grace_ms.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Wait (up to 20 s) until the channel's registry shows a durable reader
/// at `pos`.
fn wait_for_durable_at(name: &str, pos: u64) {
    let t0 = Instant::now();
    loop {
        let (_, readers) = inspect(name).unwrap();
        if readers.iter().any(|r| r.durable && r.position == pos) {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no durable reader at {pos}: {readers:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Kill -9 of a durable reader that had read five messages and committed
/// three: the writer keeps the other two (and everything after them) for
/// the successor, which gets every message from the fourth on, none lost.
#[test]
fn a_killed_durable_reader_is_resumed_by_its_successor_without_loss() {
    let c = Chan::new("resume");
    let mut w = Writer::create(&c.0, blocking(8)).unwrap();
    w.set_block_timeout(Duration::from_secs(60));
    for s in 0..5 {
        w.publish(&msg(s)).unwrap();
    }
    let mut child = spawn_child("read-5-commit-3", &c.0, 60_000);
    wait_for_durable_at(&c.0, 3);
    child.kill().unwrap();
    child.wait().unwrap();
    // The writer fills the ring up to the dead reader's committed position
    // and waits there for its successor.
    let filler = std::thread::spawn(move || {
        for s in 5..200 {
            w.publish(&msg(s)).unwrap();
        }
        w
    });
    let t0 = Instant::now();
    while inspect(&c.0).unwrap().0.published < 11 && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(100));
    let (state, readers) = inspect(&c.0).unwrap();
    assert_eq!(state.published, 11, "3 committed + 8 slots: {readers:?}");
    assert!(!filler.is_finished(), "the writer waits for the successor");
    assert!(readers
        .iter()
        .any(|r| r.durable && !r.alive && r.position == 3));

    let mut r = attach(&c.0, "g/w/in", 60_000).unwrap();
    assert!(r.is_durable());
    assert_eq!(r.position(), 3);
    let mut buf = Vec::new();
    for want in 3..200 {
        let got = r.recv(&mut buf, Some(Duration::from_secs(20))).unwrap();
        let got = got.unwrap_or_else(|| panic!("message {want} never came"));
        assert_eq!((got.seq, got.lost, num(&buf)), (want, 0, want));
        r.commit();
    }
    assert_eq!(r.lost(), 0);
    let w = filler.join().unwrap();
    assert_eq!(w.next_seq(), 200);
    assert_eq!(w.readers_given_up(), 0);
}

/// Past its grace time the writer gives a dead durable reader up and goes
/// on; a successor that comes later counts exactly what it missed.
#[test]
fn past_its_grace_a_dead_reader_is_given_up_and_its_successor_counts_the_loss() {
    let c = Chan::new("grace");
    let mut w = Writer::create(&c.0, blocking(8)).unwrap();
    w.set_block_timeout(Duration::from_secs(60));
    for s in 0..5 {
        w.publish(&msg(s)).unwrap();
    }
    let mut child = spawn_child("read-5-commit-3", &c.0, 200);
    wait_for_durable_at(&c.0, 3);
    child.kill().unwrap();
    child.wait().unwrap();
    // 200 messages on 8 slots: the writer waits about 200 ms for the dead
    // reader, then gives its entry up and writes the rest.
    for s in 5..200 {
        w.publish(&msg(s)).unwrap();
    }
    assert_eq!(w.readers_given_up(), 1);
    let (_, readers) = inspect(&c.0).unwrap();
    assert!(readers.is_empty(), "entry released: {readers:?}");

    let mut r = attach(&c.0, "g/w/in", 200).unwrap();
    assert_eq!(r.position(), 3, "resumes at its committed position");
    let mut buf = Vec::new();
    let mut got = 0u64;
    let mut last = None;
    while let Some(rc) = r.recv(&mut buf, Some(Duration::ZERO)).unwrap() {
        assert_eq!(num(&buf), rc.seq);
        assert!(last.is_none_or(|l| rc.seq > l));
        last = Some(rc.seq);
        got += 1;
    }
    assert_eq!(last, Some(199));
    assert!(r.lost() > 0);
    assert_eq!(got + r.lost(), 200 - 3, "each message read or counted lost");
}

/// A second live reader under one identity is refused, naming the identity
/// and the holder; once the first leaves, a new one resumes where it
/// committed, and readers without identity do not take its entry.
#[test]
fn one_identity_one_live_reader_and_a_clean_leave_keeps_the_position() {
    let c = Chan::new("busy");
    let mut w = Writer::create(&c.0, blocking(8)).unwrap();
    w.set_block_timeout(Duration::from_millis(200));
    for s in 0..6 {
        w.publish(&msg(s)).unwrap();
    }
    let mut r1 = attach(&c.0, "g/sink/in", 1000).unwrap();
    let e = attach(&c.0, "g/sink/in", 1000).err().expect("refused");
    let text = e.to_string();
    assert!(
        matches!(&e, ShmError::ReaderBusy { pid, ident, .. }
            if *pid == std::process::id() && ident == "g/sink/in"),
        "{e}"
    );
    assert!(text.contains("\"g/sink/in\"") && text.contains(&std::process::id().to_string()));
    // Another identity is another reader.
    let other = attach(&c.0, "g/other/in", 1000).unwrap();
    drop(other);

    let mut buf = Vec::new();
    for want in 0..6 {
        assert_eq!(r1.recv(&mut buf, None).unwrap().unwrap().seq, want);
        if want == 3 {
            r1.commit();
        }
    }
    // Read but not committed: 4 and 5 are still held, so the writer (8
    // slots, committed 4) can write up to message 11 and no further.
    for s in 6..12 {
        w.publish(&msg(s)).unwrap();
    }
    let e = w.publish(&msg(12)).unwrap_err();
    assert!(matches!(e, ShmError::Timeout { pos: 4, .. }), "{e}");
    drop(r1);
    // Readers without identity take free entries, not the one kept.
    let plain: Vec<Reader> = (0..3)
        .map(|_| Reader::attach(&c.0, StartAt::Next).unwrap())
        .collect();
    drop(plain);
    let mut r2 = attach(&c.0, "g/sink/in", 1000).unwrap();
    assert_eq!(r2.position(), 4);
    assert_eq!(r2.recv(&mut buf, None).unwrap().unwrap().seq, 4);
    r2.commit_now();
    w.publish(&msg(12)).unwrap();
}

/// An identity claimed with a token is its owner's: a claimant without the
/// token, or with another, is refused naming the identity, whether the
/// owner is attached or gone, and moves nothing; the owner, attaching
/// again with its token, resumes where it committed.
#[test]
fn an_identity_claimed_with_a_token_refuses_claimants_without_it() {
    let c = Chan::new("token");
    let mut w = Writer::create(&c.0, blocking(8)).unwrap();
    w.set_block_timeout(Duration::from_millis(200));
    for s in 0..6 {
        w.publish(&msg(s)).unwrap();
    }
    let with = |token| Durable {
        token,
        ..durable("g/sink/in", 1000)
    };
    let open = |d| Reader::attach_durable(&c.0, d, StartAt::Oldest, ptmp_shm::Access::Private);
    let mut owner = open(with(Some("secret-a"))).unwrap();
    let mut buf = Vec::new();
    for want in 0..3 {
        assert_eq!(owner.recv(&mut buf, None).unwrap().unwrap().seq, want);
    }
    owner.commit_now();
    let locked = |r: Result<Reader, ShmError>| match r {
        Err(e @ ShmError::ReaderLocked { .. }) => {
            assert!(e.to_string().contains("\"g/sink/in\""), "{e}");
            assert!(e.to_string().contains("locked"), "{e}");
        }
        Err(e) => panic!("refused for another reason: {e}"),
        Ok(r) => panic!("let in at position {}", r.position()),
    };
    // While the owner is attached, and after it left: refused either way.
    locked(open(with(None)));
    locked(open(with(Some("secret-b"))));
    // The refusals moved nothing: the writer still waits for message 3.
    for s in 6..11 {
        w.publish(&msg(s)).unwrap();
    }
    let e = w.publish(&msg(11)).unwrap_err();
    assert!(matches!(e, ShmError::Timeout { pos: 3, .. }), "{e}");
    drop(owner);
    locked(open(with(None)));
    locked(open(with(Some("secret-b"))));
    let mut back = open(with(Some("secret-a"))).unwrap();
    assert_eq!(back.position(), 3);
    assert_eq!(back.recv(&mut buf, None).unwrap().unwrap().seq, 3);
    // Another identity, without a token, is another reader as before.
    drop(
        open(Durable {
            token: None,
            ..durable("g/other/in", 1000)
        })
        .unwrap(),
    );
}

/// Identities that cannot be recorded are refused, naming the identity.
#[test]
fn bad_identities_are_refused() {
    let c = Chan::new("badid");
    let _w = Writer::create(&c.0, blocking(8)).unwrap();
    let long = "x".repeat(MAX_IDENT_LEN + 1);
    for bad in ["", "a\0b", long.as_str()] {
        let e = attach(&c.0, bad, 10).err().expect("refused").to_string();
        assert!(e.contains("reader identity") && e.contains("bytes"), "{e}");
    }
    attach(&c.0, &"x".repeat(MAX_IDENT_LEN), 10).unwrap();
}
