//! `max_message`: the largest message part a zmq socket carries. A part
//! of exactly the bound passes; a sender refuses one byte more itself,
//! sending nothing of it; bad values are refused naming the key.

use ptmp::{Frames, Receiver, Sender, SocketConfig, SocketType, DEFAULT_MAX_MESSAGE};
use std::time::Duration;

const MAX: usize = 100_000;

/// One test at a time: each holds messages of up to 16 MiB.
static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one() -> std::sync::MutexGuard<'static, ()> {
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}
const LONG: Option<Duration> = Some(Duration::from_secs(30));

fn receiver(max: Option<usize>) -> (Receiver, String) {
    let mut b = SocketConfig::builder(SocketType::Pull).bind("tcp://127.0.0.1:*");
    if let Some(m) = max {
        b = b.max_message(m);
    }
    let rx = Receiver::new(b.build().unwrap()).unwrap();
    let ep = rx.bound_endpoints()[0].clone();
    (rx, ep)
}

/// The next message's frames, waiting a long time for it.
fn next(rx: &mut Receiver, what: &str) -> Vec<Vec<u8>> {
    let mut f = Frames::new();
    assert!(
        rx.recv_raw_into(&mut f, LONG).unwrap(),
        "{what} never arrived"
    );
    f.to_vecs()
}

fn sender(ep: &str, max: Option<usize>) -> Sender {
    let mut b = SocketConfig::builder(SocketType::Push).connect(ep);
    if let Some(m) = max {
        b = b.max_message(m);
    }
    Sender::new(b.build().unwrap()).unwrap()
}

#[test]
fn a_sender_refuses_a_part_over_its_bound_and_sends_nothing_of_it() {
    let _one = one();
    let (mut rx, ep) = receiver(Some(MAX));
    let mut tx = sender(&ep, Some(MAX));
    let e = tx
        .send_raw(&[&b"head"[..], &vec![1u8; MAX + 1][..]])
        .expect_err("a part over max_message is refused")
        .to_string();
    assert!(e.contains("socket.max_message"), "{e}");
    assert!(e.contains(&(MAX + 1).to_string()), "{e}");
    tx.send_raw(&[&b"head"[..], &vec![2u8; MAX][..]]).unwrap();
    let got = next(&mut rx, "the part of MAX bytes");
    assert_eq!(got.len(), 2, "nothing of the refused message went out");
    assert_eq!(got[1], vec![2u8; MAX]);
    assert_eq!(tx.sent(), 1);
}

#[test]
fn the_default_bound_carries_camera_frames_and_stops_above_16_mib() {
    let _one = one();
    assert_eq!(DEFAULT_MAX_MESSAGE, 16 << 20);
    let (mut rx, ep) = receiver(None);
    let mut tx = sender(&ep, None);
    let e = tx
        .send_raw(&[vec![0u8; DEFAULT_MAX_MESSAGE + 1]])
        .expect_err("a part over the default bound is refused")
        .to_string();
    assert!(e.contains("socket.max_message"), "{e}");
    for len in [6_220_800, DEFAULT_MAX_MESSAGE] {
        tx.send_raw(&[vec![7u8; len]]).unwrap();
        let got = next(&mut rx, "the frame");
        assert_eq!(got[0].len(), len);
    }
}

#[test]
fn bad_values_are_refused_naming_the_key_and_good_ones_read_back() {
    let _one = one();
    for bad in ["0", "-1", "1.5", "\"16M\"", "9223372036854775808"] {
        let text = format!(
            r#"{{"socket":{{"type":"PULL","bind":"tcp://127.0.0.1:*","max_message":{bad}}}}}"#
        );
        let e = SocketConfig::from_json(&text).expect_err(bad).to_string();
        assert!(e.contains("socket.max_message"), "{bad}: {e}");
    }
    let e = SocketConfig::builder(SocketType::Pull)
        .bind("tcp://127.0.0.1:*")
        .max_message(0)
        .build()
        .unwrap_err()
        .to_string();
    assert!(e.contains("socket.max_message = 0"), "{e}");
    let c = SocketConfig::builder(SocketType::Pull)
        .bind("tcp://127.0.0.1:*")
        .max_message(1 << 30)
        .build()
        .unwrap();
    assert_eq!(c.max_message(), 1 << 30);
    let back = SocketConfig::from_value(&c.to_json()).unwrap();
    assert_eq!(back, c);
    let d = SocketConfig::from_json(r#"{"socket":{"type":"PULL","bind":"tcp://127.0.0.1:*"}}"#)
        .unwrap();
    assert_eq!(d.max_message(), DEFAULT_MAX_MESSAGE);
    assert!(d.to_json()["socket"].get("max_message").is_none());
}

/// A PUSH peer speaking ZMTP 3.0 by hand (NULL mechanism), so what it
/// sends is bounded by no ptmp or libzmq setting: greeting, the
/// receiver's greeting read, READY, then one single-frame message of
/// `payload`.
fn raw_push(ep: &str, payload: &[u8]) -> std::net::TcpStream {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(ep.strip_prefix("tcp://").unwrap()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut g = vec![0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0x7F, 3, 0];
    g.extend_from_slice(b"NULL");
    g.extend_from_slice(&[0u8; 16 + 1 + 31]);
    c.write_all(&g).unwrap();
    let mut theirs = [0u8; 64];
    c.read_exact(&mut theirs).unwrap();
    let mut m = b"\x05READY\x0bSocket-Type".to_vec();
    m.extend_from_slice(&4u32.to_be_bytes());
    m.extend_from_slice(b"PUSH");
    let mut f = vec![0x04, m.len() as u8];
    f.extend_from_slice(&m);
    f.push(0x02);
    f.extend_from_slice(&(payload.len() as u64).to_be_bytes());
    c.write_all(&f).unwrap();
    // A receiver that refuses the part may close before all of it is
    // written: what it delivered, or did not, is the test.
    let _ = c.write_all(payload);
    c
}

/// Whether the peer closed `c` within a generous time (what it still
/// sends, its READY, is read and dropped).
fn closed_by_peer(c: &mut std::net::TcpStream) -> bool {
    use std::io::Read;
    let mut buf = [0u8; 4096];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn a_part_of_the_bound_passes_and_one_byte_more_is_dropped_with_its_connection() {
    let _one = one();
    let (mut rx, ep) = receiver(Some(MAX));
    let mut over = raw_push(&ep, &vec![0xBB; MAX + 1]);
    assert!(
        closed_by_peer(&mut over),
        "a peer sending a part of {} bytes to a socket bounded at {MAX} kept its connection",
        MAX + 1
    );
    let _under = raw_push(&ep, &vec![0xAA; MAX]);
    let got = next(&mut rx, "the part of MAX bytes");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].len(), MAX, "the part over the bound was delivered");
    assert!(got[0].iter().all(|&b| b == 0xAA));
}
