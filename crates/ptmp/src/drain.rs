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

//!
//! The same monitor tells which connections completed the ZeroMQ
//! handshake. Nothing is written to a peer before that, so messages sent
//! while no connection ever completed one (a tcp listener that is not
//! ZeroMQ, a CURVE server this socket holds no keys for) never left,
//! whatever the kernel's queues say.

use crate::curve::watch::{
    event_of, monitor_address, Refusals, EVENTS, EVENT_ACCEPTED, EVENT_CONNECTED,
    EVENT_DISCONNECTED, EVENT_HANDSHAKE_FAILED_AUTH, EVENT_HANDSHAKE_FAILED_NO_DETAIL,
    EVENT_HANDSHAKE_FAILED_PROTOCOL, EVENT_HANDSHAKE_SUCCEEDED,
};
use std::time::{Duration, Instant};

/// libzmq's `ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH`.
const PROTOCOL_ERROR_MECHANISM_MISMATCH: i32 = 0x1100_0002;

/// How long every connection's send queue must stay empty to count as drained.
const QUIET_CHECKS: u32 = 5;
const CHECK_EVERY: Duration = Duration::from_millis(2);

pub(crate) struct Drain {
    mon: zmq::Socket,
    fds: Vec<i32>,
    /// Whether any connection was ever made.
    connected: bool,
    /// Whether any connection ever completed its handshake.
    shook: bool,
    /// Endpoints an outgoing connection was made to.
    reached: Vec<Vec<u8>>,
    /// Endpoints an outgoing connection completed its handshake with.
    shaken: Vec<Vec<u8>>,
    /// The first failed handshake of an outgoing connection: what failed,
    /// with where.
    refusal: Option<String>,
    /// This socket is a CURVE client.
    curve_client: bool,
    /// A CURVE server: the clients it turns away at the handshake.
    server: Option<Refusals>,
    /// The events are read while the socket is still sending (see
    /// [`Drain::poll_while_sending`]).
    sending: bool,
    /// The first connection seen to end while the socket was still
    /// sending, by its endpoint: what it held was lost with it.
    ended_mid_stream: Option<String>,
    /// Connections that completed their handshake and ended since, and
    /// the endpoint of the last one.
    ended: (u64, Option<String>),
    /// Endpoints with a connection that completed its handshake and has
    /// not ended.
    live: Vec<Vec<u8>>,
    m: zmq::Message,
}

/// Stop `sock`'s monitor, in this thread and at once. Call before the
/// monitored socket and its [`Drain`] are dropped when the socket lives in
/// a shared context: libzmq goes on reporting a closing socket's events
/// (its connections ending) from its I/O thread with a blocking send, and
/// with the reading end already gone that send would wait for ever,
/// stopping that thread and with it every other socket of the context.
pub(crate) fn stop_monitor(sock: &mut zmq::Socket) {
    // SAFETY: `sock` is a live socket; a null endpoint asks libzmq to stop
    // the monitor (documented for zmq_socket_monitor), taking nothing else.
    unsafe { zmq_sys::zmq_socket_monitor(sock.as_mut_ptr(), std::ptr::null(), 0) };
}

impl Drain {
    /// Start monitoring `sock`. Call before it binds or connects. A CURVE
    /// server passes its admission counters, where the clients it refuses
    /// at the handshake are counted.
    pub(crate) fn attach(
        ctx: &zmq::Context,
        sock: &zmq::Socket,
        curve_client: bool,
        server: Option<std::sync::Arc<crate::curve::Admitted>>,
    ) -> zmq::Result<Drain> {
        let addr = monitor_address("drain");
        sock.monitor(&addr, i32::from(EVENTS))?;
        let mon = ctx.socket(zmq::PAIR)?;
        mon.set_linger(0)?;
        // libzmq writes each event from its I/O thread with a blocking
        // send: were this queue bounded and full, that thread (the one
        // every socket of the context shares) would stop. No bound here;
        // the events are read at every turn of the socket's owner.
        mon.set_rcvhwm(0)?;
        mon.connect(&addr)?;
        Ok(Drain {
            mon,
            fds: Vec::new(),
            connected: false,
            shook: false,
            reached: Vec::new(),
            shaken: Vec::new(),
            refusal: None,
            curve_client,
            server: server.map(Refusals::new),
            sending: false,
            ended_mid_stream: None,
            ended: (0, None),
            live: Vec::new(),
            m: zmq::Message::new(),
        })
    }

    /// Whether any connection ever completed its handshake (events read
    /// so far).
    pub(crate) fn ever_shook(&self) -> bool {
        self.shook
    }

    /// How many distinct endpoints an outgoing connection completed its
    /// handshake with.
    pub(crate) fn shaken(&self) -> usize {
        self.shaken.len()
    }

    /// An endpoint connected to whose handshake never completed, if any.
    pub(crate) fn unshaken(&self) -> Option<String> {
        self.reached
            .iter()
            .find(|e| !self.shaken.contains(*e))
            .map(|e| String::from_utf8_lossy(e).into_owned())
    }

    /// Read the monitor events that have arrived while the socket is still
    /// sending (a send that found no room): a connection that ended by
    /// then (its peer reset it, or went silent and heartbeats dropped it)
    /// ended mid-stream, and what libzmq and the kernel held for it is
    /// gone; no peer read it ([`Self::ended_mid_stream`]).
    pub(crate) fn poll_while_sending(&mut self) {
        self.sending = true;
        self.poll_events();
        self.sending = false;
    }

    /// The endpoint of the first connection seen to end while the socket
    /// was still sending.
    pub(crate) fn ended_mid_stream(&self) -> Option<&str> {
        self.ended_mid_stream.as_deref()
    }

    /// How many connections that were up (their handshake done) have
    /// ended so far (events read now), and the endpoint of the last one.
    pub(crate) fn ended(&mut self) -> (u64, Option<&str>) {
        self.poll_events();
        (self.ended.0, self.ended.1.as_deref())
    }

    /// The monitor's socket, to wait on beside the socket it watches:
    /// readable when there are events to read.
    pub(crate) fn events_item(&self) -> zmq::PollItem<'_> {
        self.mon.as_poll_item(zmq::POLLIN)
    }

    /// Read the monitor events that have arrived.
    pub(crate) fn poll_events(&mut self) {
        while self.mon.recv(&mut self.m, zmq::DONTWAIT).is_ok() {
            let ev = event_of(&self.m);
            let mut endpoint = None;
            // The second frame names the endpoint.
            while self.m.get_more() && self.mon.recv(&mut self.m, zmq::DONTWAIT).is_ok() {
                let Some((e, v)) = ev else { continue };
                if e == EVENT_DISCONNECTED {
                    endpoint = Some(String::from_utf8_lossy(&self.m).into_owned());
                    // Only a connection that was up ends: libzmq also says
                    // so of one that failed on its way up.
                    if let Some(i) = self.live.iter().position(|x| x[..] == self.m[..]) {
                        self.live.swap_remove(i);
                        self.ended = (self.ended.0 + 1, endpoint.clone());
                    }
                }
                if e == EVENT_HANDSHAKE_SUCCEEDED {
                    self.live.push(self.m.to_vec());
                }
                let known = |list: &[Vec<u8>], m: &[u8]| list.iter().any(|x| x[..] == *m);
                let outgoing = known(&self.reached, &self.m[..]);
                if e == EVENT_CONNECTED && !outgoing {
                    self.reached.push(self.m.to_vec());
                }
                if e == EVENT_HANDSHAKE_SUCCEEDED && outgoing && !known(&self.shaken, &self.m[..]) {
                    self.shaken.push(self.m.to_vec());
                }
                // Only a connection this socket made is refused to it.
                if outgoing && self.server.is_none() && self.refusal.is_none() {
                    let at = String::from_utf8_lossy(&self.m);
                    self.refusal =
                        refusal(e, v, self.curve_client).map(|why| format!("{at}: {why}"));
                }
            }
            let Some((e, fd)) = ev else { continue };
            if let Some(s) = &mut self.server {
                s.on(e);
            }
            match e {
                EVENT_CONNECTED | EVENT_ACCEPTED => {
                    self.fds.push(fd);
                    self.connected = true;
                }
                EVENT_HANDSHAKE_SUCCEEDED => self.shook = true,
                EVENT_DISCONNECTED => {
                    let watched = self.fds.contains(&fd);
                    if self.sending && watched && self.ended_mid_stream.is_none() {
                        self.ended_mid_stream = Some(endpoint.unwrap_or_default());
                    }
                    self.fds.retain(|&f| f != fd)
                }
                _ => {}
            }
        }
    }

    /// The first failed handshake of a connection this socket made, seen
    /// so far (events read now), as "ENDPOINT: what failed".
    pub(crate) fn refusal(&mut self) -> Option<String> {
        self.poll_events();
        self.refusal.clone()
    }

    /// Wait until every connection's send queue has drained, for at most
    /// `linger_ms` (-1: no limit). With `need_connection`, also wait for a
    /// connection that completed its handshake, and for every connection
    /// made to complete one (until then libzmq holds the messages queued
    /// for it); a connection this socket made that was refused ends that
    /// wait. A connection that is lost is dropped from the watch: what its
    /// peer had not read is gone with it, and libzmq requeues nothing.
    ///
    /// Returns how the wait ended.
    pub(crate) fn wait(&mut self, linger_ms: i32, need_connection: bool) -> Drained {
        let deadline =
            (linger_ms >= 0).then(|| Instant::now() + Duration::from_millis(linger_ms as u64));
        let mut quiet = 0;
        loop {
            self.poll_events();
            let pending: usize = self.fds.iter().map(|&fd| outq(fd)).sum();
            let ready = !need_connection
                || self.refusal.is_some()
                || (self.shook && self.unshaken().is_none());
            if pending == 0 && ready {
                quiet += 1;
                if quiet >= QUIET_CHECKS {
                    return Drained::Yes;
                }
            } else {
                quiet = 0;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return if !self.connected {
                    Drained::NeverConnected
                } else if !self.shook {
                    Drained::NoHandshake
                } else {
                    Drained::Pending { bytes: pending }
                };
            }
            std::thread::sleep(CHECK_EVERY);
        }
    }
}

/// What a failed handshake event of a connection this socket made says,
/// in words; `None` for other events. A plain socket's connection that
/// closed mid-handshake is tried again by libzmq, so only a CURVE
/// client's (a wrong server key looks so) is a refusal.
fn refusal(event: u16, value: i32, curve_client: bool) -> Option<String> {
    match event {
        EVENT_HANDSHAKE_FAILED_AUTH => Some(format!(
            "the server refused this client's key (CURVE; ZAP status {value})"
        )),
        EVENT_HANDSHAKE_FAILED_PROTOCOL | EVENT_HANDSHAKE_FAILED_NO_DETAIL if curve_client => Some(
            "the security handshake failed (CURVE: a wrong server key, or a peer that does not use CURVE)"
                .into(),
        ),
        EVENT_HANDSHAKE_FAILED_PROTOCOL if value == PROTOCOL_ERROR_MECHANISM_MISMATCH => Some(
            "the ZeroMQ handshake failed: the peer uses another security mechanism (a CURVE server needs this socket to have CURVE keys)"
                .into(),
        ),
        EVENT_HANDSHAKE_FAILED_PROTOCOL => Some(format!(
            "the ZeroMQ handshake failed (protocol error {value:#x}: a socket type that cannot talk to this one, or a peer speaking ZeroMQ wrong)"
        )),
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
    /// Connections were made, but none completed the ZeroMQ handshake:
    /// nothing sent left the process either.
    NoHandshake,
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
