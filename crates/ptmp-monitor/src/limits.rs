//! Who may hold a connection, and for how long.
//!
//! * [`Gate`] hands out places: `max_connections` general ones (any
//!   request, event streams included) and `reserved_connections` more kept
//!   for one short request each (the page, `/api/state`, `/metrics`), so
//!   that event streams, however many, never lock Prometheus or a person
//!   out; and no address holds more than `max_per_peer` of them at once,
//!   nor more than a quarter of the reserved ones (at least one).
//! * [`Watched`] wraps a connection's socket and notes since when a write
//!   has been waiting for room: a client that stopped reading (its socket's
//!   small send buffer full) is found by that and closed.
//! * [`Counters`] counts what was refused and closed, and why, for
//!   `/metrics`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// What the server did with connections, since it started.
#[derive(Default)]
pub(crate) struct Counters {
    /// Connections open now.
    pub open: AtomicU64,
    /// Event streams open now.
    pub streams: AtomicU64,
    /// Refused because every place was taken.
    pub refused_full: AtomicU64,
    /// Refused because their address held its share already.
    pub refused_peer: AtomicU64,
    /// An event stream asked for on a reserved place, refused.
    pub refused_stream: AtomicU64,
    /// A remote request for data without the monitor's token (401).
    pub refused_token: AtomicU64,
    /// A request naming another host than this server (421), or none
    /// in HTTP/1.1 (400).
    pub refused_host: AtomicU64,
    /// Closed because the client did not take what was written to it
    /// within the write timeout.
    pub closed_stalled: AtomicU64,
    /// Closed because no complete request head came in time.
    pub closed_head: AtomicU64,
    /// Closed because nothing happened for the idle timeout, or no next
    /// request came in the head's time on a kept-alive connection.
    pub closed_idle: AtomicU64,
}

impl Counters {
    /// The counters in Prometheus's text format, appended to `out`.
    pub fn render(&self, out: &mut String) {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let _ = write!(
            out,
            "# HELP ptmp_monitor_connections Connections the monitor serves now (kind=\"events\": event streams among them).\n\
             # TYPE ptmp_monitor_connections gauge\n\
             ptmp_monitor_connections{{kind=\"all\"}} {}\n\
             ptmp_monitor_connections{{kind=\"events\"}} {}\n\
             # HELP ptmp_monitor_refused_total Connections or requests the monitor refused with 503: every place taken (full), too many from one address (peer), an event stream on a place kept for short requests (events).\n\
             # TYPE ptmp_monitor_refused_total counter\n\
             ptmp_monitor_refused_total{{reason=\"full\"}} {}\n\
             ptmp_monitor_refused_total{{reason=\"peer\"}} {}\n\
             ptmp_monitor_refused_total{{reason=\"events\"}} {}\n\
             # HELP ptmp_monitor_unauthorized_total Requests for data from another host without the monitor's token, answered 401.\n\
             # TYPE ptmp_monitor_unauthorized_total counter\n\
             ptmp_monitor_unauthorized_total {}\n\
             # HELP ptmp_monitor_misdirected_total Requests whose Host header named another server than this one (a page of another site rebinding its name to this address), answered 421, or that had no Host header in HTTP/1.1, answered 400.\n\
             # TYPE ptmp_monitor_misdirected_total counter\n\
             ptmp_monitor_misdirected_total {}\n\
             # HELP ptmp_monitor_closed_total Connections the monitor closed: a client that did not read what was sent to it (stalled), no complete first request head in time (head), nothing happening, or no next request on a kept-alive connection (idle).\n\
             # TYPE ptmp_monitor_closed_total counter\n\
             ptmp_monitor_closed_total{{reason=\"stalled\"}} {}\n\
             ptmp_monitor_closed_total{{reason=\"head\"}} {}\n\
             ptmp_monitor_closed_total{{reason=\"idle\"}} {}\n",
            g(&self.open),
            g(&self.streams),
            g(&self.refused_full),
            g(&self.refused_peer),
            g(&self.refused_stream),
            g(&self.refused_token),
            g(&self.refused_host),
            g(&self.closed_stalled),
            g(&self.closed_head),
            g(&self.closed_idle),
        );
    }
}

/// Places per client address: all of them, and the reserved ones among
/// them.
type Peers = Arc<Mutex<HashMap<IpAddr, (usize, usize)>>>;

/// The places connections are served in.
pub(crate) struct Gate {
    general: Arc<Semaphore>,
    reserved: Arc<Semaphore>,
    peers: Peers,
    per_peer: usize,
    /// Reserved places one address may hold.
    reserved_per_peer: usize,
}

/// What a new connection gets.
pub(crate) enum Admit {
    /// A general place: any request, event streams too.
    General(Place),
    /// A reserved place: one short request, then the connection closes.
    Reserved(Place),
    /// Every place is taken.
    Full,
    /// Its address holds this many places already.
    Peer(usize),
}

/// A place held; given back when dropped.
pub(crate) struct Place {
    _permit: OwnedSemaphorePermit,
    peer: IpAddr,
    reserved: bool,
    peers: Peers,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut m = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = m.get_mut(&self.peer) {
            n.0 -= 1;
            n.1 -= usize::from(self.reserved);
            if n.0 == 0 {
                m.remove(&self.peer);
            }
        }
    }
}

impl Gate {
    pub fn new(general: usize, reserved: usize, per_peer: usize) -> Gate {
        Gate {
            general: Arc::new(Semaphore::new(general.max(1))),
            reserved: Arc::new(Semaphore::new(reserved)),
            peers: Arc::default(),
            per_peer: per_peer.max(1),
            reserved_per_peer: (reserved / 4).max(1),
        }
    }

    /// A place for a connection from `peer`, if there is one.
    pub fn admit(&self, peer: IpAddr) -> Admit {
        let peer = peer.to_canonical();
        let mut m = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        let (held, held_reserved) = m.get(&peer).copied().unwrap_or((0, 0));
        if held >= self.per_peer {
            return Admit::Peer(held);
        }
        let (permit, reserved) = match self.general.clone().try_acquire_owned() {
            Ok(p) => (p, false),
            // One address cannot take every place kept for short requests.
            Err(_) if held_reserved >= self.reserved_per_peer => return Admit::Full,
            Err(_) => match self.reserved.clone().try_acquire_owned() {
                Ok(p) => (p, true),
                Err(_) => return Admit::Full,
            },
        };
        let n = m.entry(peer).or_insert((0, 0));
        n.0 += 1;
        n.1 += usize::from(reserved);
        let place = Place {
            _permit: permit,
            peer,
            reserved,
            peers: self.peers.clone(),
        };
        if reserved {
            Admit::Reserved(place)
        } else {
            Admit::General(place)
        }
    }
}

/// Milliseconds since `t0`.
pub(crate) fn millis(t0: Instant) -> u64 {
    t0.elapsed().as_millis() as u64
}

/// What [`Watched`] notes about its writes, shared with the connection's
/// watchdog.
pub(crate) struct WriteWatch {
    t0: Instant,
    /// When a write began waiting for room, in milliseconds since `t0`
    /// plus one; 0 while no write waits.
    blocked_since: AtomicU64,
    /// When the last write or request made progress (milliseconds since
    /// `t0`).
    pub progress: AtomicU64,
    /// Requests received on the connection.
    pub requests: AtomicU64,
}

impl WriteWatch {
    pub fn new(t0: Instant) -> WriteWatch {
        WriteWatch {
            t0,
            blocked_since: AtomicU64::new(0),
            progress: AtomicU64::new(millis(t0)),
            requests: AtomicU64::new(0),
        }
    }

    /// How long a write has been waiting for room, in milliseconds (0 if
    /// none waits).
    pub fn blocked_ms(&self) -> u64 {
        match self.blocked_since.load(Ordering::Relaxed) {
            0 => 0,
            s => millis(self.t0).saturating_sub(s - 1),
        }
    }

    /// Milliseconds since the last progress.
    pub fn idle_ms(&self) -> u64 {
        millis(self.t0).saturating_sub(self.progress.load(Ordering::Relaxed))
    }

    /// A request arrived.
    pub fn request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.touch();
    }

    /// Something was done.
    fn touch(&self) {
        self.progress.store(millis(self.t0), Ordering::Relaxed);
    }

    fn note<T>(&self, r: &Poll<io::Result<T>>) {
        match r {
            Poll::Pending => {
                if self.blocked_since.load(Ordering::Relaxed) == 0 {
                    self.blocked_since
                        .store(millis(self.t0) + 1, Ordering::Relaxed);
                }
            }
            Poll::Ready(Ok(_)) => {
                self.blocked_since.store(0, Ordering::Relaxed);
                self.touch();
            }
            Poll::Ready(Err(_)) => {}
        }
    }
}

/// A connection's socket, its writes watched.
pub(crate) struct Watched {
    pub inner: TcpStream,
    pub watch: Arc<WriteWatch>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch.note(&r);
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch.note(&r);
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// At most this many refused connections are given time to read their
/// 503 at once; past that they are closed straight away.
const LINGERING: usize = 64;

/// Answer `stream` 503 with `why` and close it. The request the client
/// may have sent is read and thrown away for up to a second first, so
/// that closing does not reset the connection before the client reads the
/// answer; a bounded number of refusals linger like this at once.
pub(crate) fn refuse(stream: TcpStream, why: String, lingering: &Arc<Semaphore>) {
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nretry-after: 2\r\nconnection: close\r\n\r\n{why}",
        why.len()
    );
    // A fresh socket has room for this much: it goes at once or never.
    let _ = stream.try_write(head.as_bytes());
    let Ok(permit) = lingering.clone().try_acquire_owned() else {
        return;
    };
    tokio::spawn(async move {
        let _permit = permit;
        let mut stream = stream;
        let _ = tokio::io::AsyncWriteExt::shutdown(&mut stream).await;
        let mut buf = [0u8; 4096];
        let _ = tokio::time::timeout(std::time::Duration::from_secs(1), async {
            loop {
                match tokio::io::AsyncReadExt::read(&mut stream, &mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        })
        .await;
    });
}

/// A new linger bound for [`refuse`].
pub(crate) fn lingering() -> Arc<Semaphore> {
    Arc::new(Semaphore::new(LINGERING))
}
