//! Making "send N and exit" lose nothing over tcp and ipc.
//!
//! libzmq's linger only guarantees that a closing socket's *pipe* empties
//! into its connection engine. The engine batches encoded messages (8 KB)
//! before writing them to the kernel; when the peer is backpressured the
//! batch waits, and when the pipe's end is reached the session, and with it
//! the engine and its unwritten batch, is destroyed. A sender that exits at
//! once thus loses its last few hundred messages (seen here over ipc).
//!
//! The remedy watches the real connections. A socket monitor reports the
//! file descriptor of every connection as it is made or lost. Before the
//! socket closes, [`Drain::wait`] polls each connection's kernel send queue
//! (`SIOCOUTQ`: bytes the peer has not yet consumed on a Unix socket, bytes
//! not yet acknowledged on TCP) until it has stayed empty for a while, which
//! means libzmq had nothing left to write either; only then does the close
//! proceed. The wait is bounded by the socket's linger.

use std::time::{Duration, Instant};

const EVENT_CONNECTED: u16 = 0x0001;
const EVENT_ACCEPTED: u16 = 0x0020;
const EVENT_DISCONNECTED: u16 = 0x0200;
// A connection whose security handshake failed (libzmq 4.3's monitor):
// the peer closed it without a word, it spoke the protocol wrong (a CURVE
// client with the wrong server key meets this), or the server's ZAP
// handler refused it (the value is the ZAP status code, 400).
const EVENT_HANDSHAKE_FAILED_NO_DETAIL: u16 = 0x0800;
const EVENT_HANDSHAKE_FAILED_PROTOCOL: u16 = 0x2000;
const EVENT_HANDSHAKE_FAILED_AUTH: u16 = 0x4000;

/// How long every connection's send queue must stay empty to count as drained.
const QUIET_CHECKS: u32 = 5;
const CHECK_EVERY: Duration = Duration::from_millis(2);

pub(crate) struct Drain {
    mon: zmq::Socket,
    fds: Vec<i32>,
    /// Whether any connection was ever made.
    connected: bool,
    /// Endpoints an outgoing connection was made to.
    reached: Vec<Vec<u8>>,
    /// The first failed security handshake: what failed, with where.
    refusal: Option<String>,
    m: zmq::Message,
}

impl Drain {
    /// Start monitoring `sock`. Call before it binds or connects.
    pub(crate) fn attach(ctx: &zmq::Context, sock: &zmq::Socket) -> zmq::Result<Drain> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let addr = format!(
            "inproc://ptmp-drain-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        sock.monitor(
            &addr,
            i32::from(
                EVENT_CONNECTED
                    | EVENT_ACCEPTED
                    | EVENT_DISCONNECTED
                    | EVENT_HANDSHAKE_FAILED_NO_DETAIL
                    | EVENT_HANDSHAKE_FAILED_PROTOCOL
                    | EVENT_HANDSHAKE_FAILED_AUTH,
            ),
        )?;
        let mon = ctx.socket(zmq::PAIR)?;
        mon.set_linger(0)?;
        mon.connect(&addr)?;
        Ok(Drain {
            mon,
            fds: Vec::new(),
            connected: false,
            reached: Vec::new(),
            refusal: None,
            m: zmq::Message::new(),
        })
    }

    /// Whether any connection was ever made (events read so far).
    pub(crate) fn ever_connected(&self) -> bool {
        self.connected
    }

    /// How many distinct endpoints an outgoing connection reached.
    pub(crate) fn connects(&self) -> usize {
        self.reached.len()
    }

    /// Read the monitor events that have arrived.
    fn poll_events(&mut self) {
        while self.mon.recv(&mut self.m, zmq::DONTWAIT).is_ok() {
            let ev = (self.m.len() >= 6).then(|| {
                (
                    u16::from_ne_bytes([self.m[0], self.m[1]]),
                    i32::from_ne_bytes([self.m[2], self.m[3], self.m[4], self.m[5]]),
                )
            });
            // The second frame names the endpoint.
            while self.m.get_more() && self.mon.recv(&mut self.m, zmq::DONTWAIT).is_ok() {
                if matches!(ev, Some((EVENT_CONNECTED, _)))
                    && !self.reached.iter().any(|e| e[..] == self.m[..])
                {
                    self.reached.push(self.m.to_vec());
                }
                if let (Some((e, v)), None) = (ev, &self.refusal) {
                    let at = String::from_utf8_lossy(&self.m);
                    self.refusal = refusal(e, v).map(|why| format!("{at}: {why}"));
                }
            }
            match ev {
                Some((EVENT_CONNECTED | EVENT_ACCEPTED, fd)) => {
                    self.fds.push(fd);
                    self.connected = true;
                }
                Some((EVENT_DISCONNECTED, fd)) => self.fds.retain(|&f| f != fd),
                _ => {}
            }
        }
    }

    /// The first failed security handshake seen so far (events read now),
    /// as "ENDPOINT: what failed".
    pub(crate) fn refusal(&mut self) -> Option<String> {
        self.poll_events();
        self.refusal.clone()
    }

    /// Wait until every connection's send queue has drained, for at most
    /// `linger_ms` (-1: no limit). With `need_connection`, also wait for a
    /// first connection (messages queued before any peer connected). A
    /// connection that is lost is dropped from the watch: what its peer had
    /// not read is gone with it, and libzmq requeues nothing.
    ///
    /// Returns how the wait ended.
    pub(crate) fn wait(&mut self, linger_ms: i32, need_connection: bool) -> Drained {
        let deadline =
            (linger_ms >= 0).then(|| Instant::now() + Duration::from_millis(linger_ms as u64));
        let mut quiet = 0;
        loop {
            self.poll_events();
            let pending: usize = self.fds.iter().map(|&fd| outq(fd)).sum();
            if pending == 0 && (!need_connection || self.connected) {
                quiet += 1;
                if quiet >= QUIET_CHECKS {
                    return Drained::Yes;
                }
            } else {
                quiet = 0;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return if self.connected {
                    Drained::Pending { bytes: pending }
                } else {
                    Drained::NeverConnected
                };
            }
            std::thread::sleep(CHECK_EVERY);
        }
    }
}

/// What a failed handshake event says, in words; `None` for other events.
fn refusal(event: u16, value: i32) -> Option<String> {
    match event {
        EVENT_HANDSHAKE_FAILED_AUTH => Some(format!(
            "the server refused this client's key (CURVE; ZAP status {value})"
        )),
        EVENT_HANDSHAKE_FAILED_PROTOCOL | EVENT_HANDSHAKE_FAILED_NO_DETAIL => Some(
            "the security handshake failed (CURVE: a wrong server key, or a peer that does not use CURVE)"
                .into(),
        ),
        _ => None,
    }
}

/// How [`Drain::wait`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Drained {
    /// Every connection's send queue stayed empty.
    Yes,
    /// No connection was ever made: nothing sent left the process.
    NeverConnected,
    /// The linger ran out with this many bytes still in kernel send queues
    /// (0 when the data still sat in libzmq's own queues).
    Pending { bytes: usize },
}

/// Bytes in a connection's kernel send queue (0 if it cannot be read).
fn outq(fd: i32) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: TIOCOUTQ (= SIOCOUTQ) writes one int; on a closed or foreign
    // descriptor it fails and we treat the queue as empty.
    let rc = unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut n) };
    if rc == 0 && n > 0 {
        n as usize
    } else {
        0
    }
}
