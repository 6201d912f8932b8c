//! The HTTP server's defences with short limits, against raw TCP clients:
//! an event stream nobody reads is closed once it stalls, a slow request
//! head is cut off, connections past the limit are refused with 503,
//! other methods get 405, and a non-loopback address is refused unless
//! allowed. The state here is made up (a large one, so a stalled stream
//! fills the socket buffers quickly); the graph side is tested in
//! ptmp-cli's monitor_http tests.

use ptmp_monitor::state::{Gather, SocketRow};
use ptmp_monitor::{start_with, Error, Options};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

struct Fake {
    n: u64,
}

impl Gather for Fake {
    fn gather(&mut self) -> (Value, Vec<SocketRow>) {
        self.n += 1;
        let state = json!({"graph": "fake", "uptime_s": self.n, "nodes": [], "edges": [],
                           "processes": [], "pad": "x".repeat(256 * 1024)});
        (state, vec![])
    }
}

fn opts() -> Options {
    let mut o = Options::new("127.0.0.1:0".parse().unwrap());
    o.max_connections = 4;
    o.header_timeout = Duration::from_millis(500);
    o.idle_timeout = Duration::from_secs(1);
    o.period = Duration::from_millis(50);
    o
}

/// Read until the peer closes; None when it has not within `limit`.
fn read_to_close(s: &mut TcpStream, limit: Duration) -> Option<Vec<u8>> {
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let t0 = Instant::now();
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    while t0.elapsed() < limit {
        match s.read(&mut buf) {
            Ok(0) => return Some(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return Some(out),
        }
    }
    None
}

fn request(addr: SocketAddr, head: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let b = read_to_close(&mut s, Duration::from_secs(10)).expect("closed");
    String::from_utf8_lossy(&b).into_owned()
}

#[test]
fn stalled_event_stream_is_closed_and_others_are_served() {
    let m = start_with(Box::new(Fake { n: 0 }), &opts()).unwrap();
    let addr = m.local_addr();
    let mut stuck = TcpStream::connect(addr).unwrap();
    stuck
        .write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    // Never read for a while: the buffers fill, the stream stalls.
    std::thread::sleep(Duration::from_secs(4));
    let r = request(
        addr,
        "GET /api/state HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 200"), "{}", &r[..r.len().min(200)]);
    // What the kernel buffered is still there to read, then the end.
    let got = read_to_close(&mut stuck, Duration::from_secs(20));
    let got = got.expect("the stalled event stream was never closed");
    assert!(String::from_utf8_lossy(&got[..got.len().min(300)]).contains("text/event-stream"));
}

#[test]
fn slow_head_cut_off_and_extra_connections_refused() {
    let m = start_with(Box::new(Fake { n: 0 }), &opts()).unwrap();
    let addr = m.local_addr();
    let mut slow = TcpStream::connect(addr).unwrap();
    slow.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap();
    let t0 = Instant::now();
    let mut cut = false;
    while t0.elapsed() < Duration::from_secs(10) {
        if slow.write_all(b"X-A: b\r\n").is_err()
            || read_to_close(&mut slow, Duration::from_millis(200)).is_some()
        {
            cut = true;
            break;
        }
    }
    assert!(cut, "a slow head was never cut off");
    let held: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(200));
    let r = request(addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 503"), "{r:?}");
    drop(held);
    // The idle ones go (closed by us, or by the server's timeouts).
    let t0 = Instant::now();
    loop {
        let r = request(
            addr,
            "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        );
        if r.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "{r:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn methods_paths_and_addresses() {
    let m = start_with(Box::new(Fake { n: 0 }), &opts()).unwrap();
    let addr = m.local_addr();
    let r = request(
        addr,
        "POST /api/state HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 405"), "{r:?}");
    assert!(r.to_ascii_lowercase().contains("allow: get, head"), "{r:?}");
    let r = request(
        addr,
        "HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(
        r.starts_with("HTTP/1.1 200") && r.ends_with("\r\n\r\n"),
        "{r:?}"
    );
    let r = request(
        addr,
        "GET /../etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 404"), "{r:?}");
    drop(m);
    // Stopped: nothing listens any more.
    assert!(TcpStream::connect(addr).is_err());
    let mut o = opts();
    o.addr = "0.0.0.0:0".parse().unwrap();
    assert!(matches!(
        start_with(Box::new(Fake { n: 0 }), &o),
        Err(Error::Remote(_))
    ));
    o.allow_remote = true;
    let m = start_with(Box::new(Fake { n: 0 }), &o).unwrap();
    assert!(m.local_addr().ip().is_unspecified());
}
