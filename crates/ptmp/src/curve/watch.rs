//! Clients a CURVE server turns away before its ZAP handler hears of them.
//!
//! The ZAP handler (`zap.rs`) sees only clients that complete a CURVE
//! handshake. A plaintext ZeroMQ client, a client with the wrong server
//! key, and a peer that sends bytes that are not ZeroMQ at all fail the
//! handshake earlier; libzmq tells of them only through the socket's
//! monitor. [`Refusals`] reads those events and counts each connection
//! that ended without completing its handshake in the server's `refused`
//! counter, beside the keys the handler refused.
//!
//! A sender owns its socket's monitor already (the drain, `drain.rs`),
//! which feeds its events here; a receiver has [`Watch`], a thread that
//! reads them as they come.

use super::Admitted;
use crate::error::{Error, Result};
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub(crate) const EVENT_CONNECTED: u16 = 0x0001;
pub(crate) const EVENT_ACCEPTED: u16 = 0x0020;
pub(crate) const EVENT_DISCONNECTED: u16 = 0x0200;
pub(crate) const EVENT_MONITOR_STOPPED: u16 = 0x0400;
// A connection whose handshake failed (libzmq 4.3's monitor): the peer
// closed it mid-handshake or never finished it (no detail), it spoke the
// protocol wrong or with another security mechanism (a plaintext client
// to a CURVE server, a CURVE client with the wrong server key), or the
// server's ZAP handler refused it (the value is the ZAP status code, 400).
pub(crate) const EVENT_HANDSHAKE_FAILED_NO_DETAIL: u16 = 0x0800;
pub(crate) const EVENT_HANDSHAKE_SUCCEEDED: u16 = 0x1000;
pub(crate) const EVENT_HANDSHAKE_FAILED_PROTOCOL: u16 = 0x2000;
pub(crate) const EVENT_HANDSHAKE_FAILED_AUTH: u16 = 0x4000;

/// The events both the drain and [`Watch`] ask for.
pub(crate) const EVENTS: u16 = EVENT_CONNECTED
    | EVENT_ACCEPTED
    | EVENT_DISCONNECTED
    | EVENT_HANDSHAKE_FAILED_NO_DETAIL
    | EVENT_HANDSHAKE_SUCCEEDED
    | EVENT_HANDSHAKE_FAILED_PROTOCOL
    | EVENT_HANDSHAKE_FAILED_AUTH;

/// A CURVE server's handshake accounting, fed its socket's monitor events.
pub(crate) struct Refusals {
    counts: Arc<Admitted>,
    /// Connections made that have not yet completed or failed their
    /// handshake.
    handshaking: u64,
    /// The previous event was a failed handshake: the disconnection that
    /// follows is that connection's, already counted.
    failed_last: bool,
}

impl Refusals {
    pub(crate) fn new(counts: Arc<Admitted>) -> Refusals {
        Refusals {
            counts,
            handshaking: 0,
            failed_last: false,
        }
    }

    /// Account for one monitor event.
    pub(crate) fn on(&mut self, event: u16) {
        let failed = std::mem::replace(&mut self.failed_last, false);
        let refuse = || self.counts.refused.fetch_add(1, Ordering::Relaxed);
        match event {
            EVENT_CONNECTED | EVENT_ACCEPTED => self.handshaking += 1,
            EVENT_HANDSHAKE_SUCCEEDED => self.handshaking = self.handshaking.saturating_sub(1),
            // Counted by the ZAP handler, which refused the key.
            EVENT_HANDSHAKE_FAILED_AUTH => {
                self.handshaking = self.handshaking.saturating_sub(1);
                self.failed_last = true;
            }
            EVENT_HANDSHAKE_FAILED_PROTOCOL | EVENT_HANDSHAKE_FAILED_NO_DETAIL => {
                refuse();
                self.handshaking = self.handshaking.saturating_sub(1);
                self.failed_last = true;
            }
            // libzmq closes a peer that greets in ZMTP 1.0 or 2.0 (as any
            // stream of bytes that is not ZeroMQ does) without a failure
            // event: a connection lost while one was still in its
            // handshake is such a refusal. (Events name no connection, so
            // an admitted client leaving while another's handshake is in
            // flight would be taken for one; handshakes last a round trip
            // or two.)
            EVENT_DISCONNECTED if !failed && self.handshaking > 0 => {
                self.handshaking -= 1;
                refuse();
            }
            _ => {}
        }
    }
}

/// Split one monitor event's first frame into its event and value.
pub(crate) fn event_of(frame: &[u8]) -> Option<(u16, i32)> {
    (frame.len() >= 6).then(|| {
        (
            u16::from_ne_bytes([frame[0], frame[1]]),
            i32::from_ne_bytes([frame[2], frame[3], frame[4], frame[5]]),
        )
    })
}

/// A unique inproc address for a monitor.
pub(crate) fn monitor_address(what: &str) -> String {
    use std::sync::atomic::AtomicUsize;
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "inproc://ptmp-{what}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A thread reading a CURVE server socket's monitor into [`Refusals`];
/// dropping it stops the thread.
pub(crate) struct Watch {
    stop: Option<zmq::Socket>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watch {
    /// Watch `sock` (before it binds or connects), counting in `counts`.
    pub(crate) fn start(
        ctx: &zmq::Context,
        sock: &zmq::Socket,
        counts: Arc<Admitted>,
    ) -> Result<Watch> {
        let z = || Error::zmq("curve monitor");
        let addr = monitor_address("curve-watch");
        // Not EVENT_MONITOR_STOPPED: libzmq sends it from zmq_close with
        // a blocking send, which waits for ever when this watch (dropped
        // first on an error path) no longer reads.
        sock.monitor(&addr, i32::from(EVENTS)).map_err(z())?;
        let mon = ctx.socket(zmq::PAIR).map_err(z())?;
        mon.set_linger(0).map_err(z())?;
        // Unbounded, as the drain's: libzmq's I/O thread writes each event
        // with a blocking send, so a full queue would stop that thread.
        mon.set_rcvhwm(0).map_err(z())?;
        mon.connect(&addr).map_err(z())?;
        let stop_addr = monitor_address("curve-watch-stop");
        let stop_rx = ctx.socket(zmq::PAIR).map_err(z())?;
        stop_rx.set_linger(0).map_err(z())?;
        stop_rx.bind(&stop_addr).map_err(z())?;
        let stop = ctx.socket(zmq::PAIR).map_err(z())?;
        stop.set_linger(0).map_err(z())?;
        stop.connect(&stop_addr).map_err(z())?;
        let mut refusals = Refusals::new(counts);
        let thread = std::thread::Builder::new()
            .name("ptmp-curve-watch".into())
            .spawn(move || read_events(&mon, &stop_rx, &mut refusals))
            .map_err(|e| {
                Error::config(
                    "socket.curve",
                    "(monitor)",
                    format!("cannot start the CURVE refusal counter's thread: {e}"),
                )
            })?;
        Ok(Watch {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

fn read_events(mon: &zmq::Socket, stop: &zmq::Socket, refusals: &mut Refusals) {
    let mut m = zmq::Message::new();
    loop {
        let mut items = [
            mon.as_poll_item(zmq::POLLIN),
            stop.as_poll_item(zmq::POLLIN),
        ];
        match zmq::poll(&mut items, -1) {
            Ok(_) | Err(zmq::Error::EINTR) => {}
            Err(_) => return,
        }
        if items[1].is_readable() {
            return;
        }
        while mon.recv(&mut m, zmq::DONTWAIT).is_ok() {
            let ev = event_of(&m);
            // The second frame names the endpoint.
            while m.get_more() && mon.recv(&mut m, zmq::DONTWAIT).is_ok() {}
            match ev {
                Some((EVENT_MONITOR_STOPPED, _)) => return,
                Some((e, _)) => refusals.on(e),
                None => {}
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            // Without waiting: a thread that has already returned reads
            // nothing, and a PAIR whose peer is gone would block for ever.
            let _ = s.send("", zmq::DONTWAIT);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused_after(events: &[u16]) -> u64 {
        let counts = Arc::new(Admitted::default());
        let mut r = Refusals::new(counts.clone());
        for &e in events {
            r.on(e);
        }
        counts.counts().1
    }

    #[test]
    fn failed_and_silent_handshakes_are_refusals() {
        // An admitted client that later leaves.
        let ok = [
            EVENT_ACCEPTED,
            EVENT_HANDSHAKE_SUCCEEDED,
            EVENT_DISCONNECTED,
        ];
        assert_eq!(refused_after(&ok), 0);
        // A plaintext client: a protocol failure, then its close.
        let plain = [
            EVENT_ACCEPTED,
            EVENT_HANDSHAKE_FAILED_PROTOCOL,
            EVENT_DISCONNECTED,
        ];
        assert_eq!(refused_after(&plain), 1);
        // Bytes that are not ZeroMQ: closed without a failure event.
        assert_eq!(refused_after(&[EVENT_ACCEPTED, EVENT_DISCONNECTED]), 1);
        // A key the handler refused is its count, not this one's.
        let key = [
            EVENT_ACCEPTED,
            EVENT_HANDSHAKE_FAILED_AUTH,
            EVENT_DISCONNECTED,
        ];
        assert_eq!(refused_after(&key), 0);
        // A mix: one admitted, still connected, and two refused.
        let mix = [
            EVENT_ACCEPTED,
            EVENT_HANDSHAKE_SUCCEEDED,
            EVENT_ACCEPTED,
            EVENT_DISCONNECTED,
            EVENT_ACCEPTED,
            EVENT_HANDSHAKE_FAILED_NO_DETAIL,
            EVENT_DISCONNECTED,
        ];
        assert_eq!(refused_after(&mix), 2);
    }
}
