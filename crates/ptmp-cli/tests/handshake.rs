//! Peers that never complete the ZeroMQ handshake, as real processes: a
//! sender whose only peer is a tcp listener that is not ZeroMQ, or a CURVE
//! server it has no keys for, reports its sets undelivered instead of
//! success; a CURVE `ptmp recv` counts the plaintext and garbage clients
//! it turns away; a plain edge still reports nothing undelivered.

use serde_json::json;
use std::io::{Read, Write};
use std::time::Duration;

mod common;
use common::free_port;
use common::proc::{last_json, run, wait_listening, Proc};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn send(ep: &str, n: &str) -> std::process::Output {
    run(&[
        "send", "-n", n, "-p", "PUSH", "-a", "connect", "-e", ep, "--linger", "1s", "--json",
    ])
}

/// A tcp listener that takes every connection and reads it to its end,
/// answering nothing.
fn mute_listener() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let ep = format!("tcp://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    ep
}

#[test]
fn a_listener_that_never_answers_gets_nothing_and_says_so() {
    let ep = mute_listener();
    let o = send(&ep, "100");
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{e}");
    assert!(!e.contains("undelivered: 0"), "{e}");
    assert!(e.contains("never completed the ZeroMQ handshake"), "{e}");
    assert!(e.contains(&ep), "{e}");
    let j = last_json(&o);
    assert_eq!(j["undelivered"], json!(100), "{j}");
}

#[test]
fn a_plain_edge_still_delivers_everything() {
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let rx = Proc::spawn(&[
        "recv", "-n", "100", "-p", "PULL", "-a", "bind", "-e", &ep, "-T", "20s", "--json",
    ]);
    wait_listening(&ep);
    let o = send(&ep, "100");
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert!(e.contains("undelivered: 0"), "{e}");
    let out = rx.finish(Duration::from_secs(30));
    assert_eq!(last_json(&out)["received"], json!(100));
}

/// recv is a CURVE server: a sender without keys is refused (and says its
/// sets were not delivered), and it, a client sending text and one
/// sending bytes that begin like a ZeroMQ greeting are counted refused;
/// the listed client that follows is admitted.
#[test]
fn a_curve_server_counts_the_clients_it_turns_away() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().to_str().unwrap();
    for name in ["server", "alice"] {
        let o = run(&["keys", "new", name, "--dir", dir]);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let f = |n: &str| d.path().join(n).display().to_string();
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let rx = Proc::spawn(&[
        "recv",
        "-n",
        "1",
        "-p",
        "PULL",
        "-a",
        "bind",
        "-e",
        &ep,
        "-T",
        "60s",
        "--json",
        "--curve-secret",
        &f("server.key_secret"),
        "--curve-allow",
        &f("alice.key"),
    ]);
    wait_listening(&ep);
    let o = send(&ep, "100");
    let e = text(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{e}");
    assert!(!e.contains("undelivered: 0"), "{e}");
    let addr = ep.strip_prefix("tcp://").unwrap();
    for garbage in [
        &b"GET / HTTP/1.0\r\n\r\n"[..],
        &[0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 9, 9, 9, 9][..],
    ] {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        // The server may close (and reset) the connection at its first
        // byte: errors of writing, shutting and reading end the client.
        let _ = s.write_all(garbage);
        // Say no more, and read until the server closes the connection.
        let _ = s.shutdown(std::net::Shutdown::Write);
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut buf = [0u8; 256];
        while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
    }
    // Then alice, listed, sends the one set that ends the receiver.
    let o = run(&[
        "send",
        "-n",
        "1",
        "-p",
        "PUSH",
        "-a",
        "connect",
        "-e",
        &ep,
        "--curve-secret",
        &f("alice.key_secret"),
        "--curve-server-key",
        &f("server.key"),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = rx.finish(Duration::from_secs(60));
    let (so, se) = (text(&out.stdout), text(&out.stderr));
    let j = last_json(&out);
    assert_eq!(j["received"], json!(1), "{j}");
    // The plaintext sender and the two garbage clients at least (the
    // test's own probe for the port counts too).
    let refused = j["curve_refused"].as_u64().unwrap_or(0);
    assert!(refused >= 3, "{j}\n{se}");
    assert_eq!(j["curve_admitted"], json!(1), "{j}");
    assert!(
        so.contains(&format!("CURVE: admitted 1 client(s), refused {refused}")),
        "{so}"
    );
    assert!(se.contains("refused a client"), "{se}");
}
