//! The HTTP server's defences with short limits, against raw TCP clients:
//! an event stream nobody reads is closed once it stalls, a slow request
//! head is cut off, connections past the limit are refused with 503,
//! other methods get 405, and a non-loopback address is refused unless
//! allowed. The state here is made up (mostly a large one, so a stalled
//! stream fills the socket buffers quickly); the graph side is tested in
//! ptmp-cli's monitor_http tests. Clients from other addresses than
//! 127.0.0.1 bind other loopback addresses (all of 127/8 is loopback on
//! Linux).

use ptmp_monitor::state::{Gather, GraphState, SocketRow};
use ptmp_monitor::{start_with, Error, Options};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

struct Fake {
    n: u64,
    pad: usize,
}

impl Fake {
    /// A state of about 256 KiB.
    fn big() -> Box<Fake> {
        Fake::of(256 * 1024)
    }

    /// A state of about `pad` bytes.
    fn of(pad: usize) -> Box<Fake> {
        Box::new(Fake { n: 0, pad })
    }
}

impl Gather for Fake {
    fn gather(&mut self) -> (GraphState, Vec<SocketRow>) {
        self.n += 1;
        let state = GraphState {
            graph: "fake".into(),
            uptime_s: self.n as f64,
            // The bulk, where nothing reads it.
            host: "x".repeat(self.pad),
            ..Default::default()
        };
        (state, vec![])
    }
}

fn opts() -> Options {
    let mut o = Options::new("127.0.0.1:0".parse().unwrap());
    o.max_connections = 4;
    o.reserved_connections = 1;
    o.max_per_peer = 100;
    o.header_timeout = Duration::from_millis(500);
    o.write_timeout = Duration::from_secs(1);
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
    let m = start_with(Fake::big(), &opts()).unwrap();
    let addr = m.local_addr();
    let mut stuck = TcpStream::connect(addr).unwrap();
    stuck
        .write_all(b"GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    // Never read for a while: the buffers fill, the stream stalls.
    std::thread::sleep(Duration::from_secs(4));
    let r = request(
        addr,
        "GET /api/state HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 200"), "{}", &r[..r.len().min(200)]);
    // What the kernel buffered is still there to read, then the end.
    let got = read_to_close(&mut stuck, Duration::from_secs(20));
    let got = got.expect("the stalled event stream was never closed");
    assert!(String::from_utf8_lossy(&got[..got.len().min(300)]).contains("text/event-stream"));
}

#[test]
fn slow_head_cut_off_and_extra_connections_refused() {
    let m = start_with(Fake::big(), &opts()).unwrap();
    let addr = m.local_addr();
    let mut slow = TcpStream::connect(addr).unwrap();
    slow.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n")
        .unwrap();
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
    // Four general places and one reserved: a sixth connection is refused.
    let held: Vec<TcpStream> = (0..5).map(|_| TcpStream::connect(addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(200));
    let r = request(addr, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 503"), "{r:?}");
    drop(held);
    // The idle ones go (closed by us, or by the server's timeouts).
    let t0 = Instant::now();
    loop {
        let r = request(
            addr,
            "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
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
    let m = start_with(Fake::big(), &opts()).unwrap();
    let addr = m.local_addr();
    let r = request(
        addr,
        "POST /api/state HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 405"), "{r:?}");
    assert!(r.to_ascii_lowercase().contains("allow: get, head"), "{r:?}");
    let r = request(
        addr,
        "HEAD / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert!(
        r.starts_with("HTTP/1.1 200") && r.ends_with("\r\n\r\n"),
        "{r:?}"
    );
    let r = request(
        addr,
        "GET /../etc/passwd HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 404"), "{r:?}");
    drop(m);
    // Stopped: nothing listens any more.
    assert!(TcpStream::connect(addr).is_err());
    let mut o = opts();
    o.addr = "0.0.0.0:0".parse().unwrap();
    assert!(matches!(start_with(Fake::big(), &o), Err(Error::Remote(_))));
    o.allow_remote = true;
    let m = start_with(Fake::big(), &o).unwrap();
    assert!(m.local_addr().ip().is_unspecified());
}

/// A connection to `addr` from loopback address `from`, with a receive
/// buffer of `rcvbuf` bytes if given (asked before connecting, so that the
/// window offered is small from the start).
fn connect_from(from: &str, addr: SocketAddr, rcvbuf: Option<usize>) -> TcpStream {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    if let Some(n) = rcvbuf {
        s.set_recv_buffer_size(n).unwrap();
    }
    let local: SocketAddr = format!("{from}:0").parse().unwrap();
    s.bind(&local.into()).unwrap();
    s.connect(&addr.into()).unwrap();
    s.into()
}

/// GET `path` from loopback address `from`; the whole answer.
fn get_from(from: &str, addr: SocketAddr, path: &str) -> String {
    let mut s = connect_from(from, addr, None);
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let b = read_to_close(&mut s, Duration::from_secs(10)).expect("closed");
    String::from_utf8_lossy(&b).into_owned()
}

/// The value of sample `name` (with its labels, as written) in `/metrics`.
fn metric(addr: SocketAddr, from: &str, name: &str) -> Option<f64> {
    let r = get_from(from, addr, "/metrics");
    r.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

/// Read the head of an answer (up to its blank line), no more.
fn read_head(s: &mut TcpStream) -> String {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut b) {
            Ok(1) => head.push(b[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// An event stream whose client reads its head and then nothing more is
/// closed once its writes wait longer than the write timeout, what was
/// queued for it by then is bounded by the small send buffer (here the
/// client's receive buffer is small too), and the closing is counted in
/// `/metrics`. The state is modest (2 KiB every 50 ms): a socket whose
/// send buffer the kernel may grow to megabytes would take minutes to
/// fill.
#[test]
fn an_event_stream_nobody_reads_is_closed_with_little_queued_and_counted() {
    let mut o = opts();
    o.idle_timeout = Duration::from_secs(3600);
    let m = start_with(Fake::of(2048), &o).unwrap();
    let addr = m.local_addr();
    let mut stuck = connect_from("127.0.0.1", addr, Some(4096));
    stuck
        .write_all(b"GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let head = read_head(&mut stuck);
    assert!(head.contains("text/event-stream"), "{head:?}");
    let name = "ptmp_monitor_closed_total{reason=\"stalled\"}";
    let t0 = Instant::now();
    loop {
        if metric(addr, "127.0.0.2", name) == Some(1.0) {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "a stream nobody read was not closed as stalled within 60 s: {}",
            get_from("127.0.0.2", addr, "/metrics")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Everything that was queued for it, then the end.
    let rest = read_to_close(&mut stuck, Duration::from_secs(20)).expect("never closed");
    eprintln!(
        "closed as stalled after {:?}, {} bytes queued for it",
        t0.elapsed(),
        rest.len()
    );
    assert!(
        rest.len() < 512 * 1024,
        "{} bytes were queued for a client that did not read",
        rest.len()
    );
    assert!(String::from_utf8_lossy(&rest).contains("event: state"));
    // Nothing else was closed or refused.
    assert_eq!(
        metric(
            addr,
            "127.0.0.2",
            "ptmp_monitor_refused_total{reason=\"full\"}"
        ),
        Some(0.0)
    );
}

/// Slow request heads and event streams nobody reads, more of them than
/// there are places: one address's are refused past its share, and the
/// places kept for short requests still answer `/api/state` and
/// `/metrics` from elsewhere, every time, while an event stream asked for
/// on such a place is refused saying why.
#[test]
fn slow_and_idle_clients_do_not_lock_out_state_and_metrics() {
    let mut o = Options::new("127.0.0.1:0".parse().unwrap());
    // The limits as shipped, but every timeout long: the clients below
    // hold their places for the whole test, the worst case.
    o.header_timeout = Duration::from_secs(3600);
    o.write_timeout = Duration::from_secs(3600);
    o.idle_timeout = Duration::from_secs(3600);
    o.period = Duration::from_millis(100);
    let m = start_with(Fake::of(2048), &o).unwrap();
    let addr = m.local_addr();
    // 80 slow heads from one address: its share (16) gets in, partway
    // through a request head; the rest are refused at once.
    let mut slow = Vec::new();
    let mut refused = 0;
    for _ in 0..80 {
        let mut s = connect_from("127.0.0.1", addr, None);
        let _ = s.write_all(b"GET /api/state HTTP/1.1\r\nHost: localhost\r\nX-Slow: a");
        slow.push(s);
    }
    // Accepted in the order they connected: the first 16 hold places,
    // the rest are answered at once.
    for s in &mut slow[16..] {
        let b = read_to_close(s, Duration::from_secs(20)).expect("a refusal not closed");
        let t = String::from_utf8_lossy(&b);
        assert!(
            t.starts_with("HTTP/1.1 503") && t.contains("too many connections from 127.0.0.1"),
            "{t:?}"
        );
        refused += 1;
    }
    assert_eq!(refused, 64, "of 80 slow heads from one address");
    // 48 event streams from three more addresses, never read after their
    // head: every general place is taken now.
    let mut streams = Vec::new();
    for from in ["127.0.0.3", "127.0.0.4", "127.0.0.5"] {
        for _ in 0..16 {
            let mut s = connect_from(from, addr, Some(4096));
            s.write_all(b"GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n")
                .unwrap();
            let head = read_head(&mut s);
            assert!(head.starts_with("HTTP/1.1 200"), "{from}: {head:?}");
            streams.push(s);
        }
    }
    // Short requests from elsewhere are answered, each of them.
    for i in 0..20 {
        let r = get_from("127.0.0.2", addr, "/api/state");
        assert!(
            r.starts_with("HTTP/1.1 200"),
            "/api/state {i}: {:?}",
            &r[..r.len().min(300)]
        );
        let r = get_from("127.0.0.2", addr, "/metrics");
        assert!(
            r.starts_with("HTTP/1.1 200"),
            "/metrics {i}: {:?}",
            &r[..r.len().min(300)]
        );
    }
    let r = get_from("127.0.0.2", addr, "/events");
    assert!(
        r.starts_with("HTTP/1.1 503") && r.contains("connections for event streams are taken"),
        "{r:?}"
    );
    let all = |n: &str| metric(addr, "127.0.0.2", n);
    assert_eq!(
        all("ptmp_monitor_refused_total{reason=\"peer\"}"),
        Some(64.0)
    );
    assert_eq!(
        all("ptmp_monitor_refused_total{reason=\"events\"}"),
        Some(1.0)
    );
    assert_eq!(all("ptmp_monitor_connections{kind=\"events\"}"), Some(48.0));
    drop(streams);
    drop(slow);
}

/// One address may hold `max_per_peer` connections; the next is answered
/// 503 naming the address and the limit, while another address is
/// served, and once a connection goes the address is served again.
#[test]
fn connections_per_address_are_bounded_with_a_clear_refusal() {
    let mut o = opts();
    o.max_connections = 8;
    o.max_per_peer = 3;
    o.header_timeout = Duration::from_secs(3600);
    o.idle_timeout = Duration::from_secs(3600);
    let m = start_with(Fake::of(64), &o).unwrap();
    let addr = m.local_addr();
    let mut held: Vec<TcpStream> = (0..3)
        .map(|_| connect_from("127.0.0.1", addr, None))
        .collect();
    let r = get_from("127.0.0.1", addr, "/api/state");
    assert!(r.starts_with("HTTP/1.1 503"), "{r:?}");
    assert!(
        r.contains("too many connections from 127.0.0.1: it holds 3, at most 3 per address"),
        "{r:?}"
    );
    assert!(get_from("127.0.0.2", addr, "/api/state").starts_with("HTTP/1.1 200"));
    assert_eq!(
        metric(
            addr,
            "127.0.0.2",
            "ptmp_monitor_refused_total{reason=\"peer\"}"
        ),
        Some(1.0)
    );
    held.pop();
    let t0 = Instant::now();
    loop {
        let r = get_from("127.0.0.1", addr, "/api/state");
        if r.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "{r:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A page of another site that rebinds its name to 127.0.0.1 (DNS
/// rebinding) makes the browser send `Host: evil.example:PORT` from
/// loopback: every path, the page as well as the data, is answered 421
/// naming that host, while the names of this server are answered; an
/// HTTP/1.0 request without `Host` is answered, an HTTP/1.1 one is not.
#[test]
fn a_request_naming_another_host_is_refused_on_every_path() {
    let m = start_with(Fake::of(100), &opts()).unwrap();
    let addr = m.local_addr();
    let port = addr.port();
    let head = |path: &str, host: &str| {
        format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
    };
    for path in ["/", "/app.js", "/api/state", "/events", "/metrics", "/none"] {
        for host in [
            format!("evil.example:{port}"),
            "evil.example".to_string(),
            format!("localhost.evil.example:{port}"),
            format!("127.0.0.1.nip.io:{port}"),
            format!("10.11.12.13:{port}"),
        ] {
            let r = request(addr, &head(path, &host));
            assert!(r.starts_with("HTTP/1.1 421"), "{path} {host}: {r:?}");
            assert!(r.contains(&format!("{host:?}")), "{path} {host}: {r:?}");
            assert!(!r.contains("\"graph\""), "{path} {host}: {r:?}");
        }
    }
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "LocalHost".to_string(),
        format!("127.0.0.2:{port}"),
        format!("[::1]:{port}"),
    ] {
        let r = request(addr, &head("/api/state", &host));
        assert!(r.starts_with("HTTP/1.1 200"), "{host}: {r:?}");
        assert!(r.contains("\"graph\":\"fake\""), "{host}: {r:?}");
    }
    let r = request(addr, "GET /api/state HTTP/1.0\r\n\r\n");
    assert!(r.starts_with("HTTP/1.0 200"), "{r:?}");
    let r = request(addr, "GET /api/state HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 400"), "{r:?}");
    assert!(r.contains("no Host header"), "{r:?}");
    let r = request(addr, &head("/metrics", "localhost"));
    assert!(r.contains("ptmp_monitor_misdirected_total 31\n"), "{r:?}");

    // Names given besides are answered too.
    let mut o = opts();
    o.host_names = vec!["daq-monitor.example.org".into()];
    let m = start_with(Fake::of(100), &o).unwrap();
    let addr = m.local_addr();
    let r = request(addr, &head("/api/state", "DAQ-monitor.example.org:80"));
    assert!(r.starts_with("HTTP/1.1 200"), "{r:?}");
    let r = request(addr, &head("/api/state", "monitor.example.org"));
    assert!(r.starts_with("HTTP/1.1 421"), "{r:?}");
}
