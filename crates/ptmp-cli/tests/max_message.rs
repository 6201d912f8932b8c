//! A client without keys cannot make a `ptmp recv` hold what it likes:
//! frames announcing 4 GiB are refused at their header (the socket's
//! `max_message`, 16 MiB by default), their connections dropped, and the
//! receiver's memory stays where it was while a real sender still gets
//! through.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

mod common;
use common::proc::{last_json, wait_listening, Proc};
use common::{free_port, text, PTMP};

/// Resident memory of process `pid`, in bytes.
fn rss(pid: u32) -> u64 {
    let st = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb = st
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .unwrap();
    kb * 1024
}

/// A PUSH peer speaking ZMTP 3.0 by hand (NULL mechanism): greeting, the
/// receiver's greeting read, READY, then the header of one frame of 4 GiB
/// and as much of its body as the receiver takes, up to 256 MiB. Returns
/// how many body bytes went out before the receiver closed.
fn announce_4_gib(port: u16) -> u64 {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut g = vec![0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0x7F, 3, 0];
    g.extend_from_slice(b"NULL");
    g.extend_from_slice(&[0u8; 48]);
    c.write_all(&g).unwrap();
    let mut theirs = [0u8; 64];
    c.read_exact(&mut theirs).unwrap();
    let mut ready = b"\x05READY\x0bSocket-Type".to_vec();
    ready.extend_from_slice(&4u32.to_be_bytes());
    ready.extend_from_slice(b"PUSH");
    let mut f = vec![0x04, ready.len() as u8];
    f.extend_from_slice(&ready);
    f.push(0x02);
    f.extend_from_slice(&(4u64 << 30).to_be_bytes());
    c.write_all(&f).unwrap();
    let chunk = vec![0x5Au8; 1 << 20];
    let mut sent = 0u64;
    while sent < 256 << 20 {
        match c.write(&chunk) {
            Ok(n) => sent += n as u64,
            Err(_) => break,
        }
    }
    sent
}

#[test]
fn frames_announcing_gigabytes_are_refused_at_the_header() {
    let port = free_port();
    let ep = format!("tcp://127.0.0.1:{port}");
    let rx = Proc::spawn(&[
        "recv", "-n", "5", "-p", "PULL", "-a", "bind", "-e", &ep, "-T", "-1", "--json",
    ]);
    let pid = rx.0.as_ref().unwrap().id();
    wait_listening(&ep);
    let before = rss(pid);
    // Four at once, as several connections would multiply what one holds.
    let peers: Vec<_> = (0..4)
        .map(|_| std::thread::spawn(move || announce_4_gib(port)))
        .collect();
    let sent: Vec<u64> = peers.into_iter().map(|p| p.join().unwrap()).collect();
    for s in &sent {
        assert!(
            *s < 256 << 20,
            "a peer wrote 256 MiB of a 4 GiB frame and was never dropped: {sent:?}"
        );
    }
    let after = rss(pid);
    assert!(
        after < before + (32 << 20),
        "the receiver grew from {before} to {after} bytes"
    );
    // The receiver still serves a real sender.
    let send = std::process::Command::new(PTMP)
        .args(["send", "-n", "5", "-p", "PUSH", "-a", "connect", "-e", &ep])
        .output()
        .unwrap();
    assert!(send.status.success(), "{}", text(&send.stderr));
    let out = rx.finish(Duration::from_secs(60));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(last_json(&out)["received"], 5);
}
