//! Raw TCP clients of the monitor's HTTP server that come from chosen
//! loopback addresses and hold on to their connections.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A connection to `addr` from loopback address `from` (all of 127/8 is
/// loopback on Linux), with a small receive buffer when `small`.
pub fn connect_from(from: &str, addr: SocketAddr, small: bool) -> Option<TcpStream> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).ok()?;
    if small {
        s.set_recv_buffer_size(4096).ok()?;
    }
    let local: SocketAddr = format!("{from}:0").parse().unwrap();
    s.bind(&local.into()).ok()?;
    s.connect_timeout(&addr.into(), Duration::from_secs(5))
        .ok()?;
    Some(s.into())
}

/// Clients that hold places and never finish with them, from `from`:
/// `n` connections kept open, each opened again when the server closes it
/// (or refuses it), until `stop`. Event streams read no further than their
/// head when `events`, else request heads sent a byte every 200 ms and
/// never finished.
pub fn hog(
    from: &'static str,
    addr: SocketAddr,
    n: usize,
    events: bool,
    stop: Arc<AtomicBool>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut held: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
        while !stop.load(Ordering::Relaxed) {
            for slot in held.iter_mut() {
                let alive = slot.as_mut().is_some_and(|s| {
                    // Closed (or refused and closed) shows as a read of 0
                    // or an error; nothing to read yet as WouldBlock.
                    let _ = s.set_nonblocking(true);
                    let mut b = [0u8; 1];
                    let open = match s.peek(&mut b) {
                        Ok(0) | Err(_) if !events => false,
                        Ok(0) => false,
                        Err(e) => e.kind() == std::io::ErrorKind::WouldBlock,
                        Ok(_) => true,
                    };
                    let _ = s.set_nonblocking(false);
                    open && (events || s.write_all(b"a").is_ok())
                });
                if !alive {
                    *slot = connect_from(from, addr, events).and_then(|mut s| {
                        let head: &[u8] = if events {
                            b"GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n"
                        } else {
                            b"GET /api/state HTTP/1.1\r\nHost: localhost\r\nX-Slow: "
                        };
                        s.write_all(head).ok().map(|_| s)
                    });
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    })
}
