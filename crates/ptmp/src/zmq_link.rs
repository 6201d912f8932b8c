//! The ZeroMQ transport, beside `shm.rs`'s rings and under the same
//! contract (`transport.rs`): [`ZmqTx`] sends a message given as its frames with the wait its
//! caller chose ([`Wait`]); [`ZmqRx`] receives one decoded as a TPSet or
//! copied as frames. Each holds its socket, its connection monitor (the
//! drain) and a CURVE server's admissions.

use crate::config::{SocketConfig, SocketType};
use crate::delivery::Undelivered;
use crate::drain::{Drain, Drained};
use crate::error::{Error, Result};
use crate::meter::SocketCounters;
use crate::socket::{build, timeout_ms, Role};
use crate::transport::{Receive, Transmit, Wait};
use ptmp_data::wire::decode_pair;
use ptmp_data::{Frames, TPSet, WireError, VERSION_FRAME};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A sending zmq socket.
pub(crate) struct ZmqTx {
    /// Its listeners' watch (`crate::fdguard`), ended before the socket
    /// closes (fields drop in this order).
    _guards: Vec<crate::fdguard::Guarded>,
    sock: zmq::Socket,
    drain: Option<Drain>,
    /// A CURVE server's admissions; dropped after the socket.
    admission: Option<crate::curve::Admission>,
    /// A CURVE server without a drain: its refusal counter (the socket
    /// must close before the counter's end of the monitor does).
    _watch: Option<crate::curve::watch::Watch>,
    /// Live counters ([`crate::meter`]).
    meter: Arc<SocketCounters>,
    /// The message being sent was already counted as a stall (by a
    /// timed send that found the queue full and gave up for now).
    stalled: bool,
    /// Subscribers seen so far (PUB only), net of unsubscriptions.
    subscribers: usize,
    /// The largest part a send takes (`max_message`).
    max_message: usize,
}

impl Drop for ZmqTx {
    fn drop(&mut self) {
        // The drain's or the watch's reader goes with this link: the
        // monitor stops first (`drain::stop_monitor` says why).
        if self.drain.is_some() || self._watch.is_some() {
            crate::drain::stop_monitor(&mut self.sock);
        }
    }
}

impl ZmqTx {
    /// Make the socket, bind and connect it; also the endpoints bound.
    pub(crate) fn open(
        cfg: &SocketConfig,
        meter: Arc<SocketCounters>,
    ) -> Result<(ZmqTx, Vec<String>)> {
        let b = build(cfg, Role::Send)?;
        if let Some(a) = &b.admission {
            meter.watch_curve(a.counts());
        }
        let tx = ZmqTx {
            _guards: b.guards,
            sock: b.sock,
            drain: b.drain,
            admission: b.admission,
            _watch: b.watch,
            meter,
            stalled: false,
            subscribers: 0,
            max_message: cfg.max_message(),
        };
        Ok((tx, b.bound))
    }

    /// The first frame as a blocking send sends it, counting a stall when
    /// the socket cannot take it at once. The first try does not wait;
    /// only when it fails does the blocking send follow. Both start alike
    /// in libzmq (commands pending, then the pipe's room), so a socket with
    /// room makes no more system calls than one blocking send would; a PUB
    /// never says it is full (it drops), so it never counts.
    #[inline]
    fn send_first(&mut self, frame: &[u8], flags: i32) -> Result<()> {
        // Built without counters, a plain blocking send, as before stalls
        // were counted: the cost of the first try is part of what the
        // counters cost.
        if !crate::meter::ENABLED {
            return self.sock.send(frame, flags).map_err(Error::zmq("send"));
        }
        match self.sock.send(frame, flags | zmq::DONTWAIT) {
            Ok(()) => Ok(()),
            Err(zmq::Error::EAGAIN) => {
                self.meter.add_stall();
                self.note_ended();
                self.sock.send(frame, flags).map_err(Error::zmq("send"))
            }
            Err(e) => Err(Error::zmq("send")(e)),
        }
    }

    /// At a send that found no room (not per message): note a connection
    /// that ended meanwhile, with what it held ([`Drain::ended_mid_stream`]).
    #[cold]
    fn note_ended(&mut self) {
        if let Some(d) = &mut self.drain {
            d.poll_while_sending();
        }
    }

    /// The first frame, waiting at most `timeout` for room.
    fn send_first_within(&mut self, frame: &[u8], flags: i32, timeout: Duration) -> Result<bool> {
        match self.sock.send(frame, flags | zmq::DONTWAIT) {
            Ok(()) => return Ok(true),
            Err(zmq::Error::EAGAIN) => {
                self.note_ended();
                // Once per message, however many calls it takes to get it
                // out.
                if !self.stalled {
                    self.stalled = true;
                    self.meter.add_stall();
                }
            }
            Err(e) => return Err(Error::zmq("send")(e)),
        }
        let ms = timeout.as_millis().min(i32::MAX as u128) as i64;
        // A signal ends the wait early: the caller checks why and may try
        // again.
        match self.sock.poll(zmq::POLLOUT, ms) {
            Ok(0) | Err(zmq::Error::EINTR) => return Ok(false),
            Ok(_) => {}
            Err(e) => return Err(Error::zmq("poll")(e)),
        }
        match self.sock.send(frame, flags | zmq::DONTWAIT) {
            Ok(()) => Ok(true),
            Err(zmq::Error::EAGAIN) => Ok(false),
            Err(e) => Err(Error::zmq("send")(e)),
        }
    }

    /// Wait until at least `k` subscriptions that match PTMP messages are
    /// in place (see [`crate::Sender::wait_for_subscribers`]); `what`
    /// describes the socket for the timeout's error.
    pub(crate) fn wait_for_subscribers(
        &mut self,
        k: usize,
        timeout: Duration,
        what: impl Fn() -> String,
    ) -> Result<usize> {
        let deadline = Instant::now() + timeout;
        let mut msg = zmq::Message::new();
        while self.subscribers < k {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::Timeout {
                    what: format!(
                        "{k} subscriber(s) on {} ({} subscribed)",
                        what(),
                        self.subscribers
                    ),
                    ms: timeout.as_millis() as u64,
                });
            }
            self.sock
                .set_rcvtimeo(left.as_millis().clamp(1, i32::MAX as u128) as i32)
                .map_err(Error::zmq("set rcvtimeo"))?;
            match self.sock.recv(&mut msg, 0) {
                Ok(()) => self.subscribers = after_subscription(self.subscribers, &msg),
                Err(zmq::Error::EAGAIN) => {}
                Err(e) => return Err(Error::zmq("recv subscription")(e)),
            }
        }
        Ok(self.subscribers)
    }
}

impl Transmit for ZmqTx {
    /// Send one message given as its frames. [`Wait::Block`] waits while a
    /// PAIR or PUSH socket is at its high-water mark (a PUB drops instead);
    /// [`Wait::Within`] gives up after its time, `Ok(false)` and nothing
    /// sent. A message held back is counted as one stall, however many
    /// calls it takes. A message with a part larger than `max_message` is
    /// refused whole, before any part is sent: a receiver with the same
    /// bound would drop the connection for it.
    fn send<'a, I>(&mut self, parts: I, wait: Wait) -> Result<bool>
    where
        I: ExactSizeIterator<Item = &'a [u8]> + Clone,
    {
        let max = self.max_message;
        if let Some(len) = parts.clone().map(<[u8]>::len).find(|&l| l > max) {
            return Err(Error::Config {
                key: "socket.max_message".into(),
                value: max.to_string(),
                reason: format!(
                    "a message part of {len} bytes is larger; a receiver with this bound would drop the connection for it: raise max_message on both ends"
                ),
            });
        }
        let n = parts.len();
        for (i, f) in parts.enumerate() {
            let more = if i + 1 < n { zmq::SNDMORE } else { 0 };
            if i > 0 {
                // The rest of a multipart message follows atomically.
                self.sock.send(f, more).map_err(Error::zmq("send"))?;
                continue;
            }
            let sent = match wait {
                Wait::Block => self.send_first(f, more).map(|()| true),
                Wait::Within(t) => self.send_first_within(f, more, t),
            }?;
            if !sent {
                return Ok(false);
            }
        }
        self.stalled = false;
        Ok(true)
    }

    /// The first connection this socket made that was refused at its
    /// handshake, "ENDPOINT: why".
    fn refused(&mut self) -> Option<String> {
        self.drain.as_mut().and_then(Drain::refusal)
    }

    /// A CURVE server's clients admitted and refused so far (monitor
    /// events read now).
    fn curve_admissions(&mut self) -> Option<(u64, u64)> {
        if let Some(d) = &mut self.drain {
            d.poll_events();
        }
        self.admission.as_ref().map(|a| a.counts().counts())
    }

    /// Wait, up to the config's linger, until what was sent has left this
    /// process, and say how much may not have (`sent` messages in all),
    /// with why when a peer never completed its handshake.
    fn undelivered(&mut self, cfg: &SocketConfig, sent: u64) -> (Undelivered, Option<String>) {
        let pubsub = matches!(cfg.socket_type(), SocketType::Pub | SocketType::XPub);
        let Some(d) = &mut self.drain else {
            return (Undelivered::Unknown, None);
        };
        if cfg.linger_ms() == 0 {
            return (Undelivered::Unknown, None);
        }
        let drained = d.wait(cfg.linger_ms(), !pubsub);
        let unshaken = d.unshaken().map(|at| {
            format!("the peer at {at} never completed the ZeroMQ handshake (it is not a ZeroMQ peer, or it expects CURVE keys this socket does not have)")
        });
        // A connection that ended mid-stream took what it held with it.
        if let (Some(at), false) = (d.ended_mid_stream(), pubsub) {
            let why = format!(
                "a connection at {at} ended while sets were still being sent (its peer reset it, or went silent and heartbeats dropped it): what it held then was lost with it"
            );
            return (Undelivered::AtMost(sent), Some(why));
        }
        let none_shook = || {
            unshaken.clone().or_else(|| {
                Some("no peer that connected completed the ZeroMQ handshake".to_string())
            })
        };
        match (drained, pubsub) {
            (Drained::NeverConnected, _) => (Undelivered::Exactly(sent), None),
            // Nothing is written to a peer before its handshake.
            (Drained::NoHandshake, _) => (Undelivered::Exactly(sent), none_shook()),
            (Drained::Pending { .. }, _) => (Undelivered::AtMost(sent), unshaken),
            // A PUB drops what it sends while nobody is connected.
            (Drained::Yes, true) if !d.ever_shook() => (Undelivered::Exactly(sent), none_shook()),
            (Drained::Yes, true) => (Undelivered::Unknown, None),
            // A connect endpoint never reached, or whose peer never
            // completed the handshake, keeps its share of a PUSH's round
            // robin queued in libzmq.
            (Drained::Yes, false) if d.shaken() < cfg.connect().len() => {
                (Undelivered::AtMost(sent), unshaken)
            }
            (Drained::Yes, false) => (Undelivered::None, None),
        }
    }
}

/// A receiving zmq socket and the two messages it receives into.
pub(crate) struct ZmqRx {
    /// As [`ZmqTx`]'s: dropped first.
    _guards: Vec<crate::fdguard::Guarded>,
    sock: zmq::Socket,
    m0: zmq::Message,
    m1: zmq::Message,
    timeout: i32,
    /// A CURVE server's admissions; dropped after the socket.
    admission: Option<crate::curve::Admission>,
    /// A CURVE client's connection monitor: hears of a refused handshake.
    monitor: Option<Box<crate::drain::Drain>>,
    /// A CURVE server's refusal counter; dropped after the socket.
    _watch: Option<crate::curve::watch::Watch>,
}

impl Drop for ZmqRx {
    fn drop(&mut self) {
        // As a sender's: a monitored socket's monitor stops before its
        // reader (a CURVE client's drain, a CURVE server's watch) is gone.
        if self.monitor.is_some() || self._watch.is_some() {
            crate::drain::stop_monitor(&mut self.sock);
        }
    }
}

impl ZmqRx {
    /// Make the socket, bind and connect it (subscribing, for SUB); also
    /// the endpoints bound.
    pub(crate) fn open(cfg: &SocketConfig) -> Result<(ZmqRx, Vec<String>)> {
        let b = build(cfg, Role::Recv)?;
        let rx = ZmqRx {
            _guards: b.guards,
            sock: b.sock,
            m0: zmq::Message::new(),
            m1: zmq::Message::new(),
            timeout: -1,
            admission: b.admission,
            monitor: b.drain.map(Box::new),
            _watch: b.watch,
        };
        Ok((rx, b.bound))
    }

    /// Count a CURVE server's admissions in `meter`.
    pub(crate) fn watch_curve(&self, meter: &SocketCounters) {
        if let Some(a) = &self.admission {
            meter.watch_curve(a.counts());
        }
    }

    /// Receive the first two frames of a message into m0/m1 and drain any
    /// more. Returns the frame count, 0 on timeout.
    fn recv_two(&mut self, timeout: Option<Duration>) -> Result<usize> {
        self.set_timeout(timeout)?;
        match self.sock.recv(&mut self.m0, 0) {
            Ok(()) => {}
            Err(zmq::Error::EAGAIN) => return Ok(0),
            Err(e) => return Err(Error::zmq("recv")(e)),
        }
        if !self.m0.get_more() {
            return Ok(1);
        }
        // The rest of a multipart message is already here: zmq delivers
        // messages atomically.
        self.sock
            .recv(&mut self.m1, 0)
            .map_err(Error::zmq("recv"))?;
        let mut n = 2;
        if self.m1.get_more() {
            let mut more = zmq::Message::new();
            loop {
                self.sock.recv(&mut more, 0).map_err(Error::zmq("recv"))?;
                n += 1;
                if !more.get_more() {
                    break;
                }
            }
        }
        Ok(n)
    }

    fn set_timeout(&mut self, timeout: Option<Duration>) -> Result<()> {
        let ms = timeout_ms(timeout);
        if ms != self.timeout {
            self.sock
                .set_rcvtimeo(ms)
                .map_err(Error::zmq("set rcvtimeo"))?;
            self.timeout = ms;
        }
        Ok(())
    }
}

impl Receive for ZmqRx {
    /// A CURVE server's clients admitted and refused so far.
    fn curve_admissions(&self) -> Option<(u64, u64)> {
        self.admission.as_ref().map(|a| a.counts().counts())
    }

    /// A CURVE client's first refused connection, "ENDPOINT: why".
    fn refused(&mut self) -> Option<String> {
        self.monitor.as_mut().and_then(|m| m.refusal())
    }

    /// Receive one message and decode it as a TPSet into `out`: `None` on
    /// timeout, else its bytes (both frames); a message that is not a PTMP
    /// message sets `bad`, as `ShmRx::recv_tpset` answers.
    fn recv_tpset(
        &mut self,
        out: &mut TPSet,
        timeout: Option<Duration>,
        bad: &mut Option<WireError>,
    ) -> Result<Option<usize>> {
        let n = self.recv_two(timeout)?;
        Ok(match n {
            0 => None,
            2 => {
                if let Err(e) = decode_pair(&self.m0, &self.m1, out) {
                    *bad = Some(e);
                }
                Some(self.m0.len() + self.m1.len())
            }
            n => {
                *bad = Some(WireError::FrameCount(n));
                Some(0)
            }
        })
    }

    /// Receive one message's frames (copied into `frames`); `Ok(false)`
    /// on timeout.
    fn recv_frames(&mut self, frames: &mut Frames, timeout: Option<Duration>) -> Result<bool> {
        self.set_timeout(timeout)?;
        frames.clear();
        loop {
            match self.sock.recv(&mut self.m0, 0) {
                Ok(()) => {}
                Err(zmq::Error::EAGAIN) if frames.is_empty() => return Ok(false),
                Err(e) => return Err(Error::zmq("recv")(e)),
            }
            frames.push(&self.m0);
            if !self.m0.get_more() {
                return Ok(true);
            }
        }
    }
}

/// The subscriber count after an XPUB subscription message. A subscription
/// delivers PTMP messages when its topic is a prefix of the version frame,
/// with which every PTMP message starts.
fn after_subscription(count: usize, msg: &[u8]) -> usize {
    let Some((&kind, topic)) = msg.split_first() else {
        return count;
    };
    if topic.len() > VERSION_FRAME.len() || topic != &VERSION_FRAME[..topic.len()] {
        return count;
    }
    match kind {
        1 => count + 1,
        0 => count.saturating_sub(1),
        _ => count,
    }
}
