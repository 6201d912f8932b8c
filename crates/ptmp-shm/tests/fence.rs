//! How a writer publishes: with a full barrier per message, or with none,
//! its readers running that barrier with `membarrier` before they sleep
//! (invariant 6). Readers that sleep for every message are woken by
//! writers of either kind in another process.

mod common;

use common::Chan;
use ptmp_shm::{
    default_publish_fence, inspect, ChannelConfig, Policy, PublishFence, Reader, StartAt, Writer,
    FULL_FENCE_ENV, WAKES_TO_FULL, WAKE_WINDOW,
};
use rustix::thread::{membarrier_query, MembarrierQuery};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Round trips in each ping-pong: each one puts both readers to sleep.
const ROUND_TRIPS: u64 = 300;

fn cfg() -> ChannelConfig {
    ChannelConfig {
        slots: 8,
        max_message: 64,
        policy: Policy::Overwrite,
    }
}

/// What this process's writers should use, from the kernel's own answer
/// and the environment.
fn expected() -> PublishFence {
    let q = membarrier_query();
    let offered = q.contains(MembarrierQuery::GLOBAL_EXPEDITED)
        && q.contains(MembarrierQuery::REGISTER_GLOBAL_EXPEDITED);
    let forced = std::env::var_os(FULL_FENCE_ENV).is_some_and(|v| v != "0");
    if offered && !forced {
        PublishFence::ByReaders
    } else {
        PublishFence::Full
    }
}

/// Attach to `name`, waiting (up to 20 s) for its writer to create it.
fn attach_when_there(name: &str) -> Reader {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        match Reader::attach(name, StartAt::Oldest) {
            Ok(mut r) => {
                // Sleep at once whenever nothing is there: every message
                // of the ping-pong then comes to a sleeping reader.
                r.set_spin(0);
                return r;
            }
            Err(e) if Instant::now() > until => panic!("{name}: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// Child-process roles, selected by environment variables when this test
/// binary is re-run by the tests below.
#[test]
fn child_role() {
    let Ok(role) = std::env::var("PTMP_SHM_FENCE_ROLE") else {
        return;
    };
    match role.as_str() {
        // Print how a writer of this process publishes.
        "report" => {
            let c = Chan::new("report");
            let w = Writer::create(&c.0, cfg()).unwrap();
            println!("fence={:?}", w.publish_fence());
        }
        // Echo every message of channel `in` into channel `out`.
        "echo" => {
            let input = std::env::var("PTMP_SHM_FENCE_IN").unwrap();
            let output = std::env::var("PTMP_SHM_FENCE_OUT").unwrap();
            let mut w = Writer::create(&output, cfg()).unwrap();
            println!("fence={:?}", w.publish_fence());
            let mut r = attach_when_there(&input);
            let mut buf = Vec::new();
            for want in 0..ROUND_TRIPS {
                let got = r.recv(&mut buf, Some(Duration::from_secs(30))).unwrap();
                assert_eq!(got.map(|g| g.seq), Some(want));
                w.publish(&buf).unwrap();
            }
            println!("after={:?}", w.publish_fence());
        }
        _ => unreachable!(),
    }
}

fn child(role: &str, envs: &[(&str, &str)]) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "--exact",
        "child_role",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env("PTMP_SHM_FENCE_ROLE", role)
    .env_remove(FULL_FENCE_ENV)
    .stderr(Stdio::inherit());
    for (k, v) in envs {
        c.env(k, v);
    }
    c
}

fn reported(out: &[u8]) -> String {
    reported_as(out, "fence=")
}

fn reported_as(out: &[u8], key: &str) -> String {
    let text = String::from_utf8_lossy(out);
    // The test harness prints its own words on the same line.
    text.split_whitespace()
        .find_map(|w| w.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} reported in {text:?}"))
        .to_string()
}

#[test]
fn a_writer_publishes_as_the_kernel_and_the_environment_allow() {
    let c = Chan::new("kind");
    let mut w = Writer::create(&c.0, cfg()).unwrap();
    assert_eq!(w.publish_fence(), expected());
    assert_eq!(default_publish_fence(), expected());
    // The header says so too (`ptmp shm ls` shows it).
    assert_eq!(inspect(&c.0).unwrap().0.publish_fence, expected());
    w.use_full_fence();
    assert_eq!(w.publish_fence(), PublishFence::Full);
    assert_eq!(inspect(&c.0).unwrap().0.publish_fence, PublishFence::Full);
    // A later writer of the same process decides again, from the process.
    drop(w);
    let w = Writer::create(&c.0, cfg()).unwrap();
    assert_eq!(w.publish_fence(), expected());
}

#[test]
fn the_environment_keeps_a_process_on_full_barriers() {
    let out = child("report", &[(FULL_FENCE_ENV, "1")]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(reported(&out.stdout), "Full");
    // "0" is not a request.
    let out = child("report", &[(FULL_FENCE_ENV, "0")]).output().unwrap();
    assert!(out.status.success());
    let q = membarrier_query();
    let want = if q.contains(MembarrierQuery::GLOBAL_EXPEDITED) {
        "ByReaders"
    } else {
        "Full"
    };
    assert_eq!(reported(&out.stdout), want);
}

/// A ping-pong with an echo in another process, both readers sleeping for
/// every message: each of the `ROUND_TRIPS` messages comes back, in order,
/// and none waits for a reader to look again by itself. Writers that
/// began without a barrier end with one: their readers slept for every
/// message.
fn ping_pong(full_here: bool, child_env: &[(&str, &str)], child_fence: &str) {
    let (a, b) = (Chan::new("ping"), Chan::new("pong"));
    let mut w = Writer::create(&a.0, cfg()).unwrap();
    if full_here {
        w.use_full_fence();
    }
    let mut envs = vec![
        ("PTMP_SHM_FENCE_IN", a.0.as_str()),
        ("PTMP_SHM_FENCE_OUT", b.0.as_str()),
    ];
    envs.extend_from_slice(child_env);
    let echo = child("echo", &envs).stdout(Stdio::piped()).spawn().unwrap();
    let mut r = attach_when_there(&b.0);
    let mut buf = Vec::new();
    let mut slowest = Duration::ZERO;
    for i in 0..ROUND_TRIPS {
        // Give the echo's reader time to fall asleep before the publish.
        std::thread::sleep(Duration::from_micros(200));
        let t = Instant::now();
        w.publish(&i.to_le_bytes()).unwrap();
        let got = r.recv(&mut buf, Some(Duration::from_secs(30))).unwrap();
        // The first round trip includes the echo's start.
        if i > 0 {
            slowest = slowest.max(t.elapsed());
        }
        assert_eq!(got.map(|g| g.seq), Some(i), "round trip {i}");
        assert_eq!(buf, i.to_le_bytes());
    }
    let out = echo.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(reported(&out.stdout), child_fence);
    assert_eq!(reported_as(&out.stdout, "after="), "Full");
    assert_eq!(w.publish_fence(), PublishFence::Full);
    // A reader whose wake-up is lost sleeps until it looks again by
    // itself, a second later.
    assert!(
        slowest < Duration::from_secs(1),
        "a round trip took {slowest:?}: a wake-up was lost"
    );
}

#[test]
fn sleeping_readers_are_woken_by_writers_without_a_barrier() {
    let want = format!("{:?}", expected());
    ping_pong(false, &[], &want);
}

#[test]
fn sleeping_readers_are_woken_by_writers_with_a_full_barrier() {
    ping_pong(true, &[(FULL_FENCE_ENV, "1")], "Full");
}

/// A writer whose reader sleeps for every message turns to a full barrier
/// after `WAKES_TO_FULL` wake-ups (not before: a publish wakes at most
/// once), and the header says so; every message still arrives.
#[test]
fn a_writer_whose_reader_sleeps_often_turns_to_a_full_barrier() {
    if expected() != PublishFence::ByReaders {
        return; // Nothing to turn from.
    }
    let c = Chan::new("turn");
    let mut w = Writer::create(&c.0, cfg()).unwrap();
    let mut r = Reader::attach(&c.0, StartAt::Next).unwrap();
    r.set_spin(0);
    const END: u64 = u64::MAX;
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        for i in 0.. {
            let got = r.recv(&mut buf, Some(Duration::from_secs(30))).unwrap();
            assert_eq!(got.map(|g| g.seq), Some(i));
            if buf[..] == END.to_le_bytes() {
                return i;
            }
        }
        unreachable!()
    });
    // Publish, pausing before each message so that the reader is most
    // likely asleep when it comes, until the writer turns: a busy host may
    // keep the reader awake for some of them, so how many that takes is
    // not fixed (but the wake-ups must come within one window).
    let mut turned_at = None;
    let mut i = 0;
    while turned_at.is_none() && i + 1 < WAKE_WINDOW {
        std::thread::sleep(Duration::from_millis(5));
        w.publish(&i.to_le_bytes()).unwrap();
        i += 1;
        if w.publish_fence() == PublishFence::Full {
            turned_at = Some(i);
        }
    }
    w.publish(&END.to_le_bytes()).unwrap();
    assert_eq!(reader.join().unwrap(), i, "every message arrived");
    let turned_at = turned_at.expect("the writer kept publishing without a barrier");
    assert!(
        turned_at >= u64::from(WAKES_TO_FULL),
        "turned after {turned_at} messages"
    );
    assert_eq!(inspect(&c.0).unwrap().0.publish_fence, PublishFence::Full);
}

/// A writer streaming to a reader that never sleeps keeps publishing
/// without a barrier.
#[test]
fn a_writer_whose_reader_keeps_up_awake_keeps_its_fence() {
    let c = Chan::new("keep");
    let mut w = Writer::create(
        &c.0,
        ChannelConfig {
            slots: 1024,
            policy: Policy::Block,
            ..cfg()
        },
    )
    .unwrap();
    let mut r = Reader::attach(&c.0, StartAt::Next).unwrap();
    r.set_spin(u32::MAX);
    let n = 4 * WAKE_WINDOW;
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        for i in 0..n {
            let got = r.recv(&mut buf, Some(Duration::from_secs(30))).unwrap();
            assert_eq!(got.map(|g| g.seq), Some(i));
        }
    });
    for i in 0..n {
        w.publish(&i.to_le_bytes()).unwrap();
    }
    reader.join().unwrap();
    assert_eq!(w.publish_fence(), expected());
}
