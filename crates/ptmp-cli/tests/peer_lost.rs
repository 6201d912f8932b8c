//! A receiver on another host lost mid-stream as a power cut loses it (its
//! cable pulled, then its process killed, so no reset ever reaches the
//! sender): the sets the sender had put into that connection are gone,
//! and `ptmp send` must not report them delivered. Hosts are network
//! namespaces on a bridge (`lan`).

mod common;
#[path = "lan/mod.rs"]
mod lan;

use common::{text, PTMP};
use lan::Lan;
use serde_json::Value;
use std::io::BufRead;
use std::time::{Duration, Instant};

#[test]
fn a_receiver_cut_off_mid_stream_is_not_reported_as_delivered() {
    let Some(lan) = Lan::make(2, "pl") else {
        common::missing_part(
            "a_receiver_cut_off_mid_stream_is_not_reported_as_delivered: network namespaces (needs root and iproute2)",
        );
        return;
    };
    let (a, b) = (&lan.hosts[0], &lan.hosts[1]);
    let cfg =
        r#"{"socket": {"type": "PUSH", "bind": ["tcp://10.232.0.1:5601"], "heartbeat_ms": 250}}"#;
    let send = lan::spawn_in(
        a,
        PTMP,
        &[
            "send", "--config", cfg, "-n", "100000", "-N", "2", "-r", "500", "--json",
        ],
    );
    let mut recv = lan::spawn_in(
        b,
        PTMP,
        &[
            "recv",
            "-v",
            "-p",
            "PULL",
            "-a",
            "connect",
            "-e",
            "tcp://10.232.0.1:5601",
            "-n",
            "100000",
        ],
    );
    // Sets flow: the receiver has printed a hundred.
    let lines = std::io::BufReader::new(recv.stdout.take().unwrap()).lines();
    let seen = std::thread::spawn(move || lines.map_while(Result::ok).take(100).count());
    let t0 = Instant::now();
    while !seen.is_finished() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no sets reached the receiver"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(seen.join().unwrap(), 100);
    // The cable first, then the process: the sender hears nothing.
    assert!(lan::ip(&["-n", &lan.switch, "link", "set", "s1", "down"]));
    recv.kill().unwrap();
    // Heartbeats drop the silent connection within three intervals; the
    // sender then waits for a receiver. Then it is stopped.
    std::thread::sleep(Duration::from_millis(2000));
    // SAFETY: kill(2) of the sender this test started.
    unsafe {
        libc::kill(send.id() as i32, libc::SIGINT);
    }
    let o = send.finish(Duration::from_secs(30), "ptmp send");
    let out = text(&o.stdout);
    let j: Value = serde_json::from_str(out.lines().last().unwrap_or(""))
        .unwrap_or_else(|_| panic!("no JSON summary:\n{out}\n{}", text(&o.stderr)));
    assert_eq!(j["undelivered_is"], "at_most", "{j}\n{}", text(&o.stderr));
    assert!(j["undelivered"].as_u64().unwrap_or(0) > 0, "{j}");
    let why = j["undelivered_why"].as_str().unwrap_or_default();
    assert!(
        why.contains("ended while sets were still being sent"),
        "{j}"
    );
    assert!(
        why.contains("10.232.0.1:5601"),
        "the endpoint is named: {j}"
    );
    assert_ne!(o.status.code(), Some(0), "{j}");
}
