//! The shared-memory ring: history, overruns, torn-read detection, futex
//! wake-ups, bad segments, and crashes of real processes.

mod common;
use common::Chan;

use ptmp_shm::{segment_path, ChannelConfig, Policy, Reader, ShmError, StartAt, Writer};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn small(slots: usize) -> ChannelConfig {
    ChannelConfig {
        slots,
        max_message: 256,
        policy: Policy::Overwrite,
    }
}

fn blocking(slots: usize) -> ChannelConfig {
    ChannelConfig {
        policy: Policy::Block,
        ..small(slots)
    }
}

/// A self-checking message: seq, length, pseudo-random body, checksum.
fn make_msg(seq: u64, buf: &mut Vec<u8>, max: usize) {
    let len = 16 + (seq as usize * 7919) % (max - 24);
    buf.clear();
    buf.extend_from_slice(&seq.to_le_bytes());
    let mut x = seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for _ in 0..len - 16 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf.push(x as u8);
    }
    let sum: u64 = buf.iter().map(|&b| u64::from(b)).sum();
    buf.extend_from_slice(&sum.to_le_bytes());
}

/// Check a message made by `make_msg`; returns its seq.
fn check_msg(b: &[u8]) -> u64 {
    assert!(b.len() >= 16, "short message {}", b.len());
    let (body, sum) = b.split_at(b.len() - 8);
    let want: u64 = body.iter().map(|&x| u64::from(x)).sum();
    assert_eq!(
        u64::from_le_bytes(sum.try_into().unwrap()),
        want,
        "checksum"
    );
    let seq = u64::from_le_bytes(body[..8].try_into().unwrap());
    let mut again = Vec::new();
    make_msg(seq, &mut again, 256);
    assert_eq!(b, &again[..], "body of {seq}");
    seq
}

#[test]
fn round_trip_history_and_start_positions() {
    let c = Chan::new("rt");
    let mut w = Writer::create(&c.0, small(8)).unwrap();
    let mut r_next = Reader::attach(&c.0, StartAt::Next).unwrap();
    for i in 0..5u8 {
        assert_eq!(w.publish(&[i; 10]).unwrap(), u64::from(i));
    }
    let mut buf = Vec::new();
    for i in 0..5u8 {
        let got = r_next.try_recv_into(&mut buf).unwrap();
        assert_eq!(
            (got.seq, got.lost, &buf[..]),
            (u64::from(i), 0, &[i; 10][..])
        );
    }
    assert!(r_next.try_recv_into(&mut buf).is_none());
    // A late joiner starts at the newest message.
    let mut late = Reader::attach(&c.0, StartAt::Newest).unwrap();
    assert_eq!(late.try_recv_into(&mut buf).unwrap().seq, 4);
    // History: any of the last messages by sequence number.
    for s in 0..5 {
        assert_eq!(late.read_at(s, &mut buf), Ok(true));
        assert_eq!(buf, vec![s as u8; 10]);
    }
    assert_eq!(late.read_at(5, &mut buf), Ok(false));
    for i in 5..20u8 {
        w.publish(&[i; 3]).unwrap();
    }
    // 20 published in 8 slots: 0..=12 are gone.
    assert!(late.read_at(3, &mut buf).is_err());
    assert_eq!(late.read_at(19, &mut buf), Ok(true));
    let oldest = Reader::attach(&c.0, StartAt::Oldest).unwrap();
    assert_eq!(oldest.position(), 12);
    // Empty and maximum-size messages; too large is an error naming sizes.
    w.publish(&[]).unwrap();
    w.publish(&[7; 256]).unwrap();
    let e = w.publish(&[0; 257]).unwrap_err().to_string();
    assert!(e.contains("257") && e.contains("256"), "{e}");
}

#[test]
fn overrun_reports_loss_and_resynchronises() {
    let c = Chan::new("over");
    let mut w = Writer::create(&c.0, small(16)).unwrap();
    let mut r = Reader::attach(&c.0, StartAt::Next).unwrap();
    let mut m = Vec::new();
    for s in 0..100 {
        make_msg(s, &mut m, 256);
        w.publish(&m).unwrap();
    }
    let mut buf = Vec::new();
    let first = r.try_recv_into(&mut buf).unwrap();
    assert!(first.lost >= 100 - 16, "{first:?}");
    assert_eq!(check_msg(&buf), first.seq);
    assert_eq!(first.seq, first.lost);
    let mut last = first.seq;
    while let Some(g) = r.try_recv_into(&mut buf) {
        assert_eq!(g.seq, last + 1);
        assert_eq!(g.lost, 0);
        assert_eq!(check_msg(&buf), g.seq);
        last = g.seq;
    }
    assert_eq!(last, 99);
    assert_eq!(r.lost() + (99 - first.seq + 1), 100);
}

#[test]
fn loaned_slot_is_written_in_place_and_invisible_until_commit() {
    let c = Chan::new("loan");
    let mut w = Writer::create(&c.0, small(4)).unwrap();
    let mut r = Reader::attach(&c.0, StartAt::Next).unwrap();
    let mut buf = Vec::new();
    {
        let mut l = w.loan(5).unwrap();
        l.copy_from_slice(b"hello");
        assert!(
            r.try_recv_into(&mut buf).is_none(),
            "not visible before commit"
        );
        assert_eq!(l.commit(), 0);
    }
    assert_eq!(r.try_recv_into(&mut buf).unwrap().seq, 0);
    assert_eq!(buf, b"hello");
    // A dropped loan publishes nothing.
    drop(w.loan(3).unwrap());
    assert!(r.try_recv_into(&mut buf).is_none());
    w.publish(b"next").unwrap();
    assert_eq!(r.try_recv_into(&mut buf).unwrap().seq, 1);
}

#[test]
fn a_loan_shortened_before_commit_delivers_only_what_was_kept() {
    let c = Chan::new("trunc");
    let mut w = Writer::create(&c.0, small(4)).unwrap();
    let mut r = Reader::attach(&c.0, StartAt::Next).unwrap();
    let mut buf = Vec::new();
    let mut l = w.loan(200).unwrap();
    l[..5].copy_from_slice(b"short");
    l.truncate(5);
    assert_eq!(l.len(), 5);
    // Longer than it now is: no change, as `Vec::truncate`.
    l.truncate(100);
    assert_eq!(l.len(), 5);
    l.commit();
    r.try_recv_into(&mut buf).unwrap();
    assert_eq!(buf, b"short");
}

#[test]
fn a_view_overwritten_while_held_is_reported_invalid() {
    let c = Chan::new("view");
    let mut w = Writer::create(&c.0, small(4)).unwrap();
    let mut r = Reader::attach(&c.0, StartAt::Next).unwrap();
    w.publish(b"first").unwrap();
    {
        let v = r.view(Some(Duration::ZERO)).unwrap();
        assert_eq!(v.bytes(), b"first");
        assert!(v.valid());
    }
    w.publish(b"second").unwrap();
    let v = r.view(Some(Duration::ZERO)).unwrap();
    assert_eq!(v.received.seq, 1);
    assert!(v.valid());
    // The writer laps the ring while the view is held: it must not pass.
    let mut w2 = w;
    for _ in 0..4 {
        w2.publish(b"overwrite").unwrap();
    }
    assert!(!v.valid());
}

#[test]
fn an_owned_view_outlives_its_reader() {
    let c = Chan::new("owned");
    let mut w = Writer::create(
        &c.0,
        ChannelConfig {
            policy: Policy::Block,
            ..small(2)
        },
    )
    .unwrap();
    let mut r = Reader::attach(&c.0, StartAt::Next).unwrap();
    w.publish(b"kept").unwrap();
    let v = r
        .view_checked(Some(Duration::ZERO))
        .unwrap()
        .unwrap()
        .into_owned();
    // The view holds the mapping and the reader's registry entry: the
    // reader may go, the bytes stay readable and the slot reserved.
    drop(r);
    assert_eq!(v.bytes(), b"kept");
    assert_eq!(v.received.seq, 0);
    assert!(v.valid());
    w.set_block_timeout(Duration::from_millis(50));
    w.publish(b"one").unwrap();
    assert!(matches!(w.publish(b"two"), Err(ShmError::Timeout { .. })));
    assert!(v.valid());
    // Dropping the view gives the slot and the entry back.
    drop(v);
    w.publish(b"two").unwrap();
}

#[test]
fn concurrent_readers_never_accept_a_torn_message() {
    // A fast writer in a small ring against three readers: overruns and
    // torn reads happen constantly; every delivered message must check out.
    let c = Chan::new("stress");
    let n = 200_000u64;
    let mut w = Writer::create(&c.0, small(8)).unwrap();
    let readers: Vec<_> = (0..3)
        .map(|k| {
            let name = c.0.clone();
            let mut r = Reader::attach(&name, StartAt::Next).unwrap();
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let (mut got, mut last) = (0u64, None::<u64>);
                while r.position() < n {
                    let Some(g) = r.recv_into(&mut buf, Some(Duration::from_secs(5))) else {
                        panic!("reader {k} stalled at {}", r.position());
                    };
                    assert_eq!(check_msg(&buf), g.seq);
                    if let Some(l) = last {
                        assert_eq!(g.seq, l + 1 + g.lost, "reader {k}: order and loss agree");
                    }
                    last = Some(g.seq);
                    got += 1;
                }
                (got, r.lost())
            })
        })
        .collect();
    let mut m = Vec::new();
    for s in 0..n {
        make_msg(s, &mut m, 256);
        w.publish(&m).unwrap();
    }
    for h in readers {
        let (got, lost) = h.join().unwrap();
        assert_eq!(
            got + lost,
            n,
            "every message is either received or counted lost"
        );
        assert!(got > 0);
    }
}

#[test]
fn a_blocked_reader_is_woken_by_the_futex() {
    let c = Chan::new("wake");
    let mut w = Writer::create(&c.0, small(4)).unwrap();
    let name = c.0.clone();
    let h = std::thread::spawn(move || {
        let mut r = Reader::attach(&name, StartAt::Next).unwrap();
        let mut buf = Vec::new();
        let t0 = Instant::now();
        let g = r.recv_into(&mut buf, Some(Duration::from_secs(10)));
        (g.map(|g| g.seq), buf, t0.elapsed())
    });
    std::thread::sleep(Duration::from_millis(200));
    w.publish(b"wake up").unwrap();
    let (seq, buf, waited) = h.join().unwrap();
    assert_eq!(seq, Some(0));
    assert_eq!(buf, b"wake up");
    assert!(
        waited < Duration::from_secs(5),
        "woken, not timed out: {waited:?}"
    );
    // And a timeout returns None after about the timeout.
    let mut r = Reader::attach(&c.0, StartAt::Next).unwrap();
    let t0 = Instant::now();
    assert!(r
        .recv_into(&mut Vec::new(), Some(Duration::from_millis(100)))
        .is_none());
    assert!(t0.elapsed() >= Duration::from_millis(100));
}

#[test]
fn bad_segments_are_refused_with_a_clear_error() {
    let c = Chan::new("bad");
    let path = segment_path(&c.0).unwrap();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (vec![1, 2, 3], "-byte header: truncated"),
        (vec![0u8; 8192], "bad magic"),
        (
            {
                let mut v = vec![0u8; 8192];
                v[..8].copy_from_slice(b"PTMPSHM\0");
                v[8..12].copy_from_slice(&99u32.to_ne_bytes());
                v
            },
            "layout version 99",
        ),
    ];
    for (bytes, want) in cases {
        std::fs::write(&path, &bytes).unwrap();
        // Private, as ptmp makes them, so the content is what is refused.
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        let e = Reader::attach(&c.0, StartAt::Next).err().unwrap();
        assert!(matches!(e, ShmError::BadSegment { .. }), "{e}");
        assert!(
            e.to_string().contains(want) && e.to_string().contains(&c.0),
            "{e}"
        );
        assert!(Writer::create(&c.0, small(4)).is_err());
    }
    std::fs::remove_file(&path).unwrap();
    // A valid segment cut short.
    drop(Writer::create(&c.0, small(4)).unwrap());
    let full = std::fs::read(&path).unwrap();
    std::fs::write(&path, &full[..full.len() - 64]).unwrap();
    let e = Reader::attach(&c.0, StartAt::Next)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("truncated"), "{e}");
    // Corrupt slot count in the header.
    let mut bad = full.clone();
    bad[16..20].copy_from_slice(&3u32.to_ne_bytes());
    std::fs::write(&path, &bad).unwrap();
    let e = Reader::attach(&c.0, StartAt::Next)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("corrupt header") && e.contains("slots = 3"),
        "{e}"
    );
    // Names and configs.
    assert!(matches!(
        Reader::attach("a/b", StartAt::Next),
        Err(ShmError::BadName { .. })
    ));
    assert!(matches!(
        Reader::attach("nope-does-not-exist-xyz", StartAt::Next),
        Err(ShmError::NotFound { .. })
    ));
    let e = Writer::create(
        "x",
        ChannelConfig {
            slots: 3,
            max_message: 8,
            policy: Policy::Overwrite,
        },
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("slots = 3"), "{e}");
}

#[test]
fn segments_are_private_and_restart_continues_the_sequence() {
    use std::os::unix::fs::PermissionsExt;
    let c = Chan::new("restart");
    let mut w = Writer::create(&c.0, small(4)).unwrap();
    let mode = std::fs::metadata(w.path()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    w.publish(b"a").unwrap();
    // One writer at a time.
    let e = Writer::create(&c.0, small(4)).err().unwrap();
    assert!(matches!(e, ShmError::WriterBusy { .. }), "{e}");
    drop(w);
    // A new writer re-attaches and continues where the last one stopped.
    let mut w = Writer::create(&c.0, small(4)).unwrap();
    assert_eq!(w.next_seq(), 1);
    assert_eq!(w.publish(b"b").unwrap(), 1);
    // Layout mismatch is refused.
    drop(w);
    let e = Writer::create(&c.0, small(8)).err().unwrap().to_string();
    assert!(e.contains("exists with 4 slots"), "{e}");
}

/// Child-process roles, selected by environment variables when this test
/// binary is re-run by the tests below.
#[test]
fn child_role() {
    let Ok(role) = std::env::var("PTMP_SHM_TEST_ROLE") else {
        return;
    };
    let name = std::env::var("PTMP_SHM_TEST_CHAN").unwrap();
    match role.as_str() {
        "writer" => {
            let mut w = Writer::create(&name, small(64)).unwrap();
            let mut m = Vec::new();
            loop {
                let s = w.next_seq();
                make_msg(s, &mut m, 256);
                w.publish(&m).unwrap();
                if s.is_multiple_of(64) {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        }
        "die-mid-message" => {
            // Publish five, then die by SIGKILL halfway through writing the sixth.
            let mut w = Writer::create(&name, small(8)).unwrap();
            let mut m = Vec::new();
            for s in 0..5 {
                make_msg(s, &mut m, 256);
                w.publish(&m).unwrap();
            }
            make_msg(5, &mut m, 256);
            let mut loan = w.loan(m.len()).unwrap();
            loan[..m.len() / 2].copy_from_slice(&m[..m.len() / 2]);
            // SAFETY: sending SIGKILL to ourselves; nothing runs after it.
            unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            unreachable!();
        }
        "stuck-reader" => {
            // Registers, reads one message, then never reads again.
            let mut r = Reader::attach(&name, StartAt::Next).unwrap();
            let mut buf = Vec::new();
            let _ = r.recv_into(&mut buf, None);
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        "reader" => {
            let mut r = Reader::attach(&name, StartAt::Next).unwrap();
            let mut buf = Vec::new();
            loop {
                if let Some(v) = r.view(None) {
                    // Hold the view a while, as a slow consumer would.
                    std::thread::sleep(Duration::from_millis(1));
                    let _ = v.valid();
                }
                let _ = r.try_recv_into(&mut buf);
            }
        }
        _ => unreachable!(),
    }
}

/// Wait (up to 60 s) until process `pid` is registered as a reader of
/// channel `chan`: how long a child takes to start and attach depends on
/// the host.
fn wait_registered(chan: &str, pid: u32) {
    let t0 = Instant::now();
    while !ptmp_shm::inspect(chan)
        .unwrap()
        .1
        .iter()
        .any(|r| r.pid == pid && r.alive)
    {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "reader {pid} never attached"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn spawn_child(role: &str, chan: &str) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_role",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("PTMP_SHM_TEST_ROLE", role)
        .env("PTMP_SHM_TEST_CHAN", chan)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn kill_9_of_the_writer_mid_stream_then_a_new_writer_takes_over() {
    let c = Chan::new("killw");
    let mut child = spawn_child("writer", &c.0);
    let t0 = Instant::now();
    let mut r = loop {
        if let Ok(r) = Reader::attach(&c.0, StartAt::Next) {
            break r;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "writer never created the channel"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut buf = Vec::new();
    let mut got = 0;
    while got < 2000 {
        let g = r
            .recv_into(&mut buf, Some(Duration::from_secs(10)))
            .expect("writer's messages");
        assert_eq!(check_msg(&buf), g.seq);
        got += 1;
    }
    assert!(r.writer().is_some());
    child.kill().unwrap(); // SIGKILL, possibly mid-message
    child.wait().unwrap();
    assert_eq!(r.writer(), None, "the reader can tell the writer is gone");
    // Drain what was completely published; nothing torn is ever delivered.
    while let Some(g) = r.try_recv_into(&mut buf) {
        assert_eq!(check_msg(&buf), g.seq);
    }
    // A new writer takes over the dead one's channel and the reader continues.
    let mut w = Writer::create(&c.0, small(64)).unwrap();
    let mut m = Vec::new();
    let first = w.next_seq();
    for _ in 0..10 {
        make_msg(w.next_seq(), &mut m, 256);
        w.publish(&m).unwrap();
    }
    for k in 0..10 {
        let g = r
            .recv_into(&mut buf, Some(Duration::from_secs(5)))
            .expect("new writer's messages");
        assert_eq!(check_msg(&buf), g.seq);
        assert_eq!(g.seq, first + k);
    }
}

#[test]
fn kill_9_of_a_reader_holding_a_view_never_stalls_the_writer() {
    let c = Chan::new("killr");
    let mut w = Writer::create(&c.0, small(16)).unwrap();
    let mut child = spawn_child("reader", &c.0);
    wait_registered(&c.0, child.id());
    let mut m = Vec::new();
    for _ in 0..1000 {
        make_msg(w.next_seq(), &mut m, 256);
        w.publish(&m).unwrap();
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let t0 = Instant::now();
    for _ in 0..100_000 {
        make_msg(w.next_seq(), &mut m, 256);
        w.publish(&m).unwrap();
    }
    // 100k publishes need no reader at all: the writer never waited.
    assert!(t0.elapsed() < Duration::from_secs(20));
    assert_eq!(w.next_seq(), 101_000);
}

#[test]
fn block_policy_loses_nothing_to_sixteen_slow_readers() {
    let c = Chan::new("block");
    let n = 3000u64;
    let mut w = Writer::create(&c.0, blocking(8)).unwrap();
    let readers: Vec<_> = (0..16)
        .map(|k| {
            let mut r = Reader::attach(&c.0, StartAt::Next).unwrap();
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                for s in 0..n {
                    // Alternate copy-out and in-place views; some readers are slow.
                    if s % 2 == 0 {
                        let g = r
                            .recv_into(&mut buf, Some(Duration::from_secs(10)))
                            .expect("message");
                        assert_eq!((g.seq, g.lost), (s, 0), "reader {k}");
                        assert_eq!(check_msg(&buf), s);
                    } else {
                        let v = r.view(Some(Duration::from_secs(10))).expect("message");
                        assert_eq!((v.received.seq, v.received.lost), (s, 0), "reader {k}");
                        assert_eq!(check_msg(v.bytes()), s);
                        assert!(v.valid(), "a blocking writer never overwrites a held view");
                    }
                    if k % 4 == 0 && s % 500 == 0 {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
                r.lost()
            })
        })
        .collect();
    let mut m = Vec::new();
    for s in 0..n {
        make_msg(s, &mut m, 256);
        w.publish(&m).unwrap();
    }
    for h in readers {
        assert_eq!(h.join().unwrap(), 0);
    }
}

#[test]
fn block_policy_times_out_on_a_reader_that_stops_reading() {
    let c = Chan::new("stuck");
    let mut w = Writer::create(&c.0, blocking(4)).unwrap();
    w.set_block_timeout(Duration::from_millis(200));
    let _r = Reader::attach(&c.0, StartAt::Next).unwrap();
    for _ in 0..4 {
        w.publish(b"fits").unwrap();
    }
    let t0 = Instant::now();
    let e = w.publish(b"no room").unwrap_err();
    assert!(t0.elapsed() >= Duration::from_millis(200));
    assert!(matches!(e, ShmError::Timeout { pos: 0, .. }), "{e}");
    assert!(e.to_string().contains("slowest reader"), "{e}");
    // Dropping the reader frees the writer.
    drop(_r);
    w.publish(b"now it fits").unwrap();
}

#[test]
fn block_policy_drops_a_reader_killed_with_9() {
    let c = Chan::new("blockkill");
    let mut w = Writer::create(&c.0, blocking(8)).unwrap();
    w.set_block_timeout(Duration::from_secs(20));
    let mut child = spawn_child("stuck-reader", &c.0);
    // Once the child is registered the writer waits for it: with 8 slots
    // the 9th message after its position cannot be written until it moves
    // (it reads message 0 and stops).
    wait_registered(&c.0, child.id());
    let mut m = Vec::new();
    make_msg(0, &mut m, 256);
    w.publish(&m).unwrap();
    // The ring fills; the stuck reader would block the writer for 20 s.
    let filler = std::thread::spawn(move || {
        let mut m = Vec::new();
        for _ in 0..100 {
            make_msg(w.next_seq(), &mut m, 256);
            w.publish(&m).unwrap();
        }
        w
    });
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !filler.is_finished(),
        "the writer must be waiting for the stuck reader"
    );
    let killed = Instant::now();
    child.kill().unwrap();
    child.wait().unwrap();
    let w = filler.join().unwrap();
    assert_eq!(w.next_seq(), 101);
    assert!(
        killed.elapsed() < Duration::from_secs(5),
        "dead reader dropped promptly"
    );
}

#[test]
fn registry_holds_many_readers_and_refuses_when_full_in_block_mode() {
    let c = Chan::new("registry");
    let _w = Writer::create(&c.0, blocking(4)).unwrap();
    let rs: Vec<Reader> = (0..ptmp_shm::MAX_READERS)
        .map(|_| Reader::attach(&c.0, StartAt::Next).unwrap())
        .collect();
    let e = Reader::attach(&c.0, StartAt::Next).err().unwrap();
    assert!(matches!(e, ShmError::RegistryFull { .. }), "{e}");
    drop(rs);
    Reader::attach(&c.0, StartAt::Next).unwrap();
}

#[test]
fn block_policy_keeps_the_first_ring_for_the_first_reader() {
    let c = Chan::new("first");
    let mut w = Writer::create(&c.0, blocking(4)).unwrap();
    w.set_block_timeout(Duration::from_millis(100));
    for i in 0..4u8 {
        w.publish(&[i]).unwrap();
    }
    // No reader yet: the fifth would overwrite unread messages.
    let e = w.publish(&[4]).unwrap_err();
    assert!(matches!(e, ShmError::Timeout { pid: 0, .. }), "{e}");
    let mut r = Reader::attach(&c.0, StartAt::Oldest).unwrap();
    let mut buf = Vec::new();
    for i in 0..4u8 {
        assert_eq!(r.try_recv_into(&mut buf).unwrap().seq, u64::from(i));
        assert_eq!(buf, [i]);
    }
    w.publish(&[4]).unwrap();
    assert_eq!(r.try_recv_into(&mut buf).unwrap().seq, 4);
}

#[test]
fn one_thread_waits_on_a_hundred_channels() {
    let chans: Vec<Chan> = (0..100).map(|_| Chan::new("many")).collect();
    let mut writers: Vec<Writer> = chans
        .iter()
        .map(|c| Writer::create(&c.0, small(4)).unwrap())
        .collect();
    let readers: Vec<Reader> = chans
        .iter()
        .map(|c| Reader::attach(&c.0, StartAt::Next).unwrap())
        .collect();
    let refs: Vec<&Reader> = readers.iter().collect();
    let mut ready = Vec::new();
    // Nothing yet: times out.
    let t0 = Instant::now();
    assert!(!ptmp_shm::wait_any(&refs, Some(Duration::from_millis(100)), &mut ready).unwrap());
    assert!(ready.is_empty() && t0.elapsed() >= Duration::from_millis(100));
    // A message on channel 73 from another thread wakes the waiter.
    let mut w73 = writers.swap_remove(73);
    let h = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        w73.publish(b"seventy-three").unwrap();
        w73
    });
    let t0 = Instant::now();
    assert!(ptmp_shm::wait_any(&refs, Some(Duration::from_secs(10)), &mut ready).unwrap());
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "woken, not timed out"
    );
    assert_eq!(ready, vec![73]);
    let _w73 = h.join().unwrap();
    // Already ready: returns at once with every ready channel.
    writers[5].publish(b"five").unwrap();
    assert!(ptmp_shm::wait_any(&refs, Some(Duration::ZERO), &mut ready).unwrap());
    assert_eq!(ready, vec![5, 73]);
    // Too many channels for one call is an error, not undefined behaviour.
    let many: Vec<&Reader> = (0..129).map(|i| &readers[i % 100]).collect();
    assert!(ptmp_shm::wait_any(&many, Some(Duration::ZERO), &mut ready).is_err());
}

#[test]
fn a_writer_killed_halfway_through_a_message_publishes_none_of_it() {
    let c = Chan::new("midmsg");
    let mut child = spawn_child("die-mid-message", &c.0);
    let status = child.wait().unwrap();
    assert!(!status.success(), "the child killed itself");
    let mut r = Reader::attach(&c.0, StartAt::Oldest).unwrap();
    assert_eq!(r.writer(), None, "the reader can tell the writer is gone");
    assert_eq!(r.published(), 5);
    let mut buf = Vec::new();
    for s in 0..5 {
        let g = r.try_recv_into(&mut buf).unwrap();
        assert_eq!((g.seq, check_msg(&buf)), (s, s));
    }
    // The half-written sixth is never delivered, nor is it history.
    assert!(r.try_recv_into(&mut buf).is_none());
    assert_eq!(r.read_at(5, &mut buf), Ok(false));
    // A new writer takes over; its first message is number 5, whole.
    let mut w = Writer::create(&c.0, small(8)).unwrap();
    let mut m = Vec::new();
    make_msg(5, &mut m, 256);
    assert_eq!(w.publish(&m).unwrap(), 5);
    let g = r.recv_into(&mut buf, Some(Duration::from_secs(5))).unwrap();
    assert_eq!((g.seq, g.lost, check_msg(&buf)), (5, 0, 5));
}

/// Deferred commits advance `next_seq` only at a flush, a later immediate
/// commit, or the writer's drop, all at once; the messages themselves are
/// complete, so a polling reader may read them before.
#[test]
fn deferred_commits_appear_together_at_flush() {
    let c = Chan::new("defer");
    let mut w = Writer::create(&c.0, blocking(8)).unwrap();
    let mut r = Reader::attach(&c.0, StartAt::Next).unwrap();
    let mut buf = Vec::new();
    for i in 0..3u8 {
        let mut l = w.loan(1).unwrap();
        l[0] = i;
        assert_eq!(l.commit_deferred(), u64::from(i));
    }
    assert_eq!(w.deferred(), 3);
    assert_eq!(r.published(), 0, "next_seq moved before the flush");
    w.flush();
    assert_eq!(r.published(), 3);
    assert_eq!(w.deferred(), 0);
    for i in 0..3u8 {
        assert_eq!(r.try_recv_into(&mut buf).unwrap().seq, u64::from(i));
        assert_eq!(buf, [i]);
    }
    // An immediate commit publishes the deferred ones before it.
    w.loan(1).unwrap().commit_deferred();
    w.publish(b"x").unwrap();
    assert_eq!(r.try_recv_into(&mut buf).unwrap().seq, 3);
    assert_eq!(r.try_recv_into(&mut buf).unwrap().seq, 4);
    // Dropping the writer publishes what it held back.
    w.loan(1).unwrap().commit_deferred();
    drop(w);
    assert_eq!(r.try_recv_into(&mut buf).unwrap().seq, 5);
}

/// A batch longer than the ring cannot deadlock: a writer that needs room
/// publishes what it deferred before it waits for the reader, so a reader
/// on another thread receives every message, in order.
#[test]
fn a_deferred_batch_longer_than_the_ring_flows() {
    let c = Chan::new("defer-long");
    let mut w = Writer::create(&c.0, blocking(8)).unwrap();
    w.set_block_timeout(Duration::from_secs(20));
    let mut r = Reader::attach(&c.0, StartAt::Next).unwrap();
    let n = 1000u64;
    let t = std::thread::spawn(move || {
        let mut buf = Vec::new();
        for want in 0..n {
            let got = r
                .recv_into(&mut buf, Some(Duration::from_secs(20)))
                .expect("a deferred message was never published");
            assert_eq!(got.seq, want);
            assert_eq!(check_msg(&buf), want);
        }
    });
    let mut m = Vec::new();
    for s in 0..n {
        make_msg(s, &mut m, 256);
        let mut l = w.loan(m.len()).unwrap();
        l.copy_from_slice(&m);
        l.commit_deferred();
    }
    w.flush();
    t.join().unwrap();
}

/// On an overwriting channel a deferred commit is an immediate one.
#[test]
fn deferred_commit_on_a_pub_channel_publishes_at_once() {
    let c = Chan::new("defer-pub");
    let mut w = Writer::create(&c.0, small(8)).unwrap();
    let mut r = Reader::attach(&c.0, StartAt::Next).unwrap();
    let mut buf = Vec::new();
    w.loan(1).unwrap().commit_deferred();
    assert_eq!(w.deferred(), 0);
    assert_eq!(r.try_recv_into(&mut buf).unwrap().seq, 0);
}

/// A blocking writer counts a stall for each message that found the ring
/// full and had to wait, once however often that message is tried again;
/// a ring with room, and an overwriting ring, count none.
#[test]
fn a_full_ring_is_one_stall_per_message() {
    let c = Chan::new("stalls");
    let mut w = Writer::create(&c.0, blocking(4)).unwrap();
    let seen = std::sync::Arc::new(AtomicUsize::new(0));
    let s2 = seen.clone();
    w.on_stall(move || {
        s2.fetch_add(1, Ordering::Relaxed);
    });
    let r = Reader::attach(&c.0, StartAt::Next).unwrap();
    for s in 0..4u8 {
        w.publish(&[s]).unwrap();
    }
    assert_eq!(w.stalls(), 0, "four messages fit in four slots");
    // The reader reads nothing: the fifth message waits and times out,
    // however often it is asked for.
    w.set_block_timeout(Duration::from_millis(20));
    for _ in 0..3 {
        assert!(matches!(w.publish(b"x"), Err(ShmError::Timeout { .. })));
    }
    assert_eq!(w.stalls(), 1, "one message, tried three times");
    // With the reader gone nobody needs the ring: the message goes at once.
    drop(r);
    w.publish(b"x").unwrap();
    assert_eq!(w.stalls(), 1);
    // A new reader starts at the next message: four more fit.
    let r = Reader::attach(&c.0, StartAt::Next).unwrap();
    for s in 0..4u8 {
        w.publish(&[s]).unwrap();
    }
    assert_eq!(w.stalls(), 1);
    assert!(matches!(w.publish(b"y"), Err(ShmError::Timeout { .. })));
    assert_eq!(w.stalls(), 2, "a second message that found the ring full");
    assert_eq!(seen.load(Ordering::Relaxed), 2, "called once per stall");
    drop(r);

    // A big ring the writer never fills.
    let big = Chan::new("nostalls");
    let mut w = Writer::create(&big.0, blocking(1024)).unwrap();
    let _r = Reader::attach(&big.0, StartAt::Next).unwrap();
    for s in 0..1000u32 {
        w.publish(&s.to_le_bytes()).unwrap();
    }
    assert_eq!(w.stalls(), 0);

    // An overwriting ring laps its reader without waiting.
    let lap = Chan::new("lapstalls");
    let mut w = Writer::create(&lap.0, small(4)).unwrap();
    let _r = Reader::attach(&lap.0, StartAt::Next).unwrap();
    for s in 0..100u32 {
        w.publish(&s.to_le_bytes()).unwrap();
    }
    assert_eq!(w.stalls(), 0);
}

#[test]
fn a_writer_taking_over_keeps_what_registered_readers_have_not_read() {
    let c = Chan::new("takeover");
    let mut w = Writer::create(&c.0, blocking(4)).unwrap();
    let mut r = Reader::attach(&c.0, StartAt::Oldest).unwrap();
    for i in 0..4u8 {
        w.publish(&[i]).unwrap();
    }
    // The writer goes (as a restarted source's predecessor does) while the
    // reader has read nothing; the next writer must wait for it, not
    // overwrite message 0 with its first.
    drop(w);
    let mut w = Writer::create(&c.0, blocking(4)).unwrap();
    w.set_block_timeout(Duration::from_millis(100));
    let e = w.publish(&[4]).unwrap_err();
    assert!(matches!(e, ShmError::Timeout { pos: 0, .. }), "{e}");
    let mut buf = Vec::new();
    for i in 0..4u8 {
        let got = r.try_recv_into(&mut buf).unwrap();
        assert_eq!((got.seq, got.lost), (u64::from(i), 0));
        assert_eq!(buf, [i]);
    }
    w.publish(&[4]).unwrap();
    assert_eq!(r.try_recv_into(&mut buf).unwrap().seq, 4);
    assert_eq!(r.lost(), 0);
}
