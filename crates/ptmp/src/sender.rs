//! Sending TPSets (and raw frames): one front over the transports of
//! `transport.rs` (a zmq socket or an `shm://` ring), each sending a
//! message given as its frames with the wait the call chose, through its
//! `Transmit` contract.

use crate::config::{SocketConfig, SocketType};
use crate::delivery::{Delivery, Undelivered};
use crate::error::{Error, Result};
use crate::link::Tx;
use crate::shm::ShmTx;
use crate::transport::{Transmit, Wait};
use ptmp_data::{encode_tpset, Frames, TPSet, VERSION_FRAME};
use std::time::Duration;

/// Sends PTMP messages on a PAIR, PUB or PUSH socket.
///
/// `send` encodes into a buffer the sender keeps, so it allocates nothing per
/// message. Dropping a sender waits up to the config's linger for queued
/// messages to reach their peers (see the `drain` module).
pub struct Sender {
    link: Tx,
    cfg: SocketConfig,
    buf: Vec<u8>,
    sent: u64,
    bound: Vec<String>,
    /// The configured subscribers have been waited for (PUB), or none are.
    waited: bool,
    /// Set once [`Sender::finish`] has waited for delivery.
    finished: bool,
    /// shm:// only: `send_within` waits no longer than its timeout for a
    /// full ring (see [`Sender::wait_in_slices`]).
    slices: bool,
    /// Live counters, readable from other threads ([`crate::meter`]).
    meter: std::sync::Arc<crate::meter::SocketCounters>,
}

impl Sender {
    /// Open a sender: bind and connect its endpoints. Fails with
    /// [`Error::Config`] when the type cannot send (only PAIR, PUB and PUSH
    /// can), [`Error::Bind`] or [`Error::Connect`] when an endpoint cannot
    /// be attached.
    pub fn new(cfg: SocketConfig) -> Result<Self> {
        if !cfg.socket_type().can_send() {
            return Err(Error::config(
                "socket.type",
                format!("{:?}", cfg.socket_type().name()),
                "a sender needs a PAIR, PUB or PUSH socket",
            ));
        }
        let meter = crate::meter::register(
            crate::meter::Dir::Send,
            cfg.endpoints().map(|(_, e)| e.address.clone()).collect(),
        );
        let (link, bound) = Tx::open(&cfg, &meter)?;
        Ok(Sender {
            meter,
            link,
            waited: cfg.subscribers() == 0,
            cfg,
            buf: Vec::with_capacity(256),
            sent: 0,
            bound,
            finished: false,
            slices: false,
        })
    }

    /// Parse a JSON config text (`{"socket": {...}}`) and open a sender on
    /// it: [`SocketConfig::from_json`], then [`Sender::new`].
    pub fn from_json(config: &str) -> Result<Self> {
        Self::new(SocketConfig::from_json(config)?)
    }

    /// The configuration this sender was made from.
    pub fn config(&self) -> &SocketConfig {
        &self.cfg
    }

    /// Open a sender whose names (`name://NODE/PORT`) it connects to are
    /// resolved first ([`SocketConfig::resolve_names`]), so that it can
    /// follow a named peer that moves ([`Self::follow_moved`]).
    pub fn following(cfg: &SocketConfig) -> Result<Self> {
        Self::new(cfg.resolve_names()?)
    }

    /// After a send that found no room: when a peer this sender connects
    /// to by name is announced elsewhere now (a socket connecting by name
    /// queues only on live connections, so a dead peer leaves no room),
    /// make the sender again connected there, waiting as this one did
    /// ([`Self::wait_in_slices`]). The old one is let go on a thread of
    /// its own, where it delivers what it still can within its linger;
    /// what it held for the dead peer is lost with that peer. `false` when
    /// nothing moved, for a sender that binds, and for one not made by
    /// [`Self::following`].
    pub fn follow_moved(&mut self) -> Result<bool> {
        if !self.cfg.bind().is_empty() {
            return Ok(false);
        }
        let Some(fresh) = self.cfg.moved() else {
            return Ok(false);
        };
        let mut new = Sender::new(fresh)?;
        if self.slices {
            new.wait_in_slices();
        }
        let old = std::mem::replace(self, new);
        let _ = std::thread::Builder::new()
            .name("ptmp-retired-sender".into())
            .spawn(move || drop(old));
        Ok(true)
    }

    /// Endpoints bound, with wildcards (`tcp://127.0.0.1:*`) resolved.
    pub fn bound_endpoints(&self) -> &[String] {
        &self.bound
    }

    /// Messages sent so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Send one TPSet as `[version 0, payload]`.
    ///
    /// Blocks while a PAIR or PUSH socket is at its high-water mark, or an
    /// shm:// PUSH's ring is full (each such wait is counted as a stall in
    /// [`crate::meter`]); a PUB
    /// socket drops instead, as ZeroMQ does. The first send of a PUB configured
    /// with `subscribers: K` first waits for them (see [`Self::wait_for_subscribers`]).
    pub fn send(&mut self, tpset: &TPSet) -> Result<()> {
        self.send_set(tpset, Wait::Block).map(|_| ())
    }

    /// Send `tpset` as `[version 0, payload]` with the wait `wait`: over
    /// shm:// encoded straight into the ring's slot, otherwise into the
    /// kept buffer first.
    fn send_set(&mut self, tpset: &TPSet, wait: Wait) -> Result<bool> {
        if let Tx::Shm(tx) = &mut self.link {
            if self.waited {
                let wait = if self.slices { wait } else { Wait::Block };
                if let Some((sent, bytes)) = tx.send_tpset(tpset, wait)? {
                    if sent {
                        self.sent += 1;
                        self.meter.add(bytes);
                    }
                    return Ok(sent);
                }
            }
        }
        encode_tpset(tpset, &mut self.buf);
        let buf = std::mem::take(&mut self.buf);
        let r = self.send_parts([&VERSION_FRAME[..], &buf[..]].into_iter(), wait);
        self.buf = buf;
        r
    }

    /// Send many TPSets in one call, in order, each as [`Self::send`]
    /// sends it (blocking at a high-water mark, PUB waiting for its
    /// subscribers first). On an error the sets before the failing one have
    /// been sent, and [`Self::sent`] counts them. Over shm:// each set goes
    /// straight into its ring slot, with no system call unless a reader
    /// sleeps; the call saves a caller (a Python loop, an agent draining a
    /// queue) one round trip per set.
    pub fn send_batch(&mut self, tpsets: &[TPSet]) -> Result<()> {
        if !matches!(self.link, Tx::Shm(_)) {
            for t in tpsets {
                self.send(t)?;
            }
            return Ok(());
        }
        if !self.waited {
            self.wait_configured()?;
        }
        let Tx::Shm(tx) = &mut self.link else {
            return Ok(());
        };
        // Over shm:// the whole batch is published with one store and at
        // most one wake-up (a PUSH channel; a PUB publishes each at once).
        let (buf, sent, meter) = (&mut self.buf, &mut self.sent, &self.meter);
        let r = tpsets.iter().try_for_each(|t| {
            // Encoded in its slot, or, when a slot may be too small for
            // the most it could take, first into the buffer.
            let bytes = match tx.send_tpset_deferred(t)? {
                Some(bytes) => bytes,
                None => {
                    encode_tpset(t, buf);
                    tx.send_deferred([&VERSION_FRAME[..], &buf[..]].into_iter())?;
                    VERSION_FRAME.len() + buf.len()
                }
            };
            *sent += 1;
            meter.add(bytes);
            Ok(())
        });
        // What was written before an error is sent too.
        tx.flush();
        r
    }

    /// Send one TPSet, waiting at most `timeout` for room: `Ok(false)`, and
    /// nothing sent, when a PUSH or PAIR socket stayed at its high-water mark
    /// (or without any peer) that long. Agents use it so a stop request is
    /// noticed even when nobody downstream reads. (An shm:// PUSH waits
    /// up to its [`ShmSettings::block_timeout`](crate::ShmSettings) instead,
    /// unless [`Self::wait_in_slices`] was called.)
    pub fn send_within(&mut self, tpset: &TPSet, timeout: Duration) -> Result<bool> {
        self.send_set(tpset, Wait::Within(timeout))
    }

    /// [`Self::send_within`] for a message given as its frames.
    pub fn send_frames_within(&mut self, frames: &Frames, timeout: Duration) -> Result<bool> {
        self.send_parts(frames.iter(), Wait::Within(timeout))
    }

    /// Send one message given as its frames through whichever transport
    /// this sender has, waiting as `wait` says; `Ok(false)` when it gave
    /// up, nothing sent. Over shm:// a timed wait is kept only after
    /// [`Self::wait_in_slices`]; otherwise the ring's block timeout bounds
    /// every send.
    fn send_parts<'a, I>(&mut self, parts: I, wait: Wait) -> Result<bool>
    where
        I: ExactSizeIterator<Item = &'a [u8]> + Clone,
    {
        if !self.waited {
            self.wait_configured()?;
        }
        let bytes: usize = parts.clone().map(<[u8]>::len).sum();
        // Over shm:// a timed wait is kept only after `wait_in_slices`.
        let wait = match self.link {
            Tx::Shm(_) if !self.slices => Wait::Block,
            _ => wait,
        };
        let sent = self.link.send(parts, wait)?;
        if sent {
            self.sent += 1;
            self.meter.add(bytes);
        }
        Ok(sent)
    }

    /// Make [`Self::send_within`] and [`Self::send_frames_within`] over
    /// shm:// wait at most their timeout for a full ring too, returning
    /// `Ok(false)` like a zmq socket at its high-water mark, so a caller can
    /// look for a signal between slices. The block timeout still bounds the
    /// whole wait for one message: it counts from the first call that found
    /// the ring full, and once it has passed the call fails as a single
    /// blocking send would. Calling this again also forgets a wait left
    /// unfinished (a caller that gave up on a message).
    pub fn wait_in_slices(&mut self) {
        self.slices = true;
        if let Tx::Shm(tx) = &mut self.link {
            tx.forget_wait();
        }
    }

    /// Send a message given as its frames, schema-blind (for cat and proxies).
    pub fn send_raw<F: AsRef<[u8]>>(&mut self, frames: &[F]) -> Result<()> {
        self.send_parts(frames.iter().map(|f| f.as_ref()), Wait::Block)
            .map(|_| ())
    }

    /// Send a message held in a [`Frames`] buffer, schema-blind.
    pub fn send_frames(&mut self, frames: &Frames) -> Result<()> {
        self.send_parts(frames.iter(), Wait::Block).map(|_| ())
    }

    /// This sender's ring, once any wait for subscribers the config asks
    /// for is done; `None` over zmq. For [`crate::Receiver::forward`],
    /// which then reports what it sent with [`Self::count_sent`].
    pub(crate) fn shm_ring(&mut self) -> Result<Option<&mut ShmTx>> {
        if !self.waited {
            self.wait_configured()?;
        }
        Ok(match &mut self.link {
            Tx::Shm(tx) => Some(tx),
            Tx::Zmq(_) => None,
        })
    }

    /// How a send with at most `timeout` of waiting waits for room: in
    /// slices of it after [`Self::wait_in_slices`], else for as long as
    /// the block timeout allows.
    pub(crate) fn wait_for(&self, timeout: Option<Duration>) -> Wait {
        match timeout {
            Some(t) if self.slices => Wait::Within(t),
            _ => Wait::Block,
        }
    }

    /// Send `frames` waiting as [`Self::wait_for`] says; `Ok(false)` when
    /// no room came within the slice, nothing sent.
    pub(crate) fn send_frames_waiting(&mut self, frames: &Frames, wait: Wait) -> Result<bool> {
        self.send_parts(frames.iter(), wait)
    }

    /// Count a message of `bytes` sent through [`Self::shm_ring`].
    pub(crate) fn count_sent(&mut self, bytes: usize) {
        self.sent += 1;
        self.meter.add(bytes);
    }

    /// Wait for the config's `subscribers`, bounded by its
    /// subscribers timeout; the first send does this by itself, call it
    /// earlier to keep the wait out of a timed or paced loop. Returns the
    /// number of subscribers seen.
    pub fn wait_configured(&mut self) -> Result<usize> {
        let (k, t) = (self.cfg.subscribers(), self.cfg.subscribers_timeout());
        let n = self.wait_for_subscribers(k, t)?;
        self.waited = true;
        Ok(n)
    }

    /// Wait until at least `k` subscriptions that match PTMP messages are in
    /// place (each SUB subscribing to "" counts once), or fail with
    /// [`Error::Timeout`] after `timeout`. Returns the number seen.
    ///
    /// The PUB socket is an XPUB in verbose mode, so every subscription
    /// message reaches us; by the time we read it libzmq has already added it
    /// to the socket's filter, so the next send reaches that subscriber. This
    /// closes the slow-joiner gap instead of sleeping and hoping.
    pub fn wait_for_subscribers(&mut self, k: usize, timeout: Duration) -> Result<usize> {
        if !matches!(self.cfg.socket_type(), SocketType::Pub | SocketType::XPub) {
            return Err(Error::config(
                "socket.subscribers",
                k.to_string(),
                format!(
                    "only a PUB socket waits for subscribers, this one is {}",
                    self.cfg.socket_type()
                ),
            ));
        }
        let Tx::Zmq(tx) = &mut self.link else {
            return Err(Error::config(
                "socket.subscribers",
                k.to_string(),
                "waiting for subscribers is not available over shm:// yet",
            ));
        };
        let cfg = &self.cfg;
        tx.wait_for_subscribers(k, timeout, || cfg.describe())
    }
}

impl Sender {
    /// The first connection this sender made whose handshake failed, as
    /// "ENDPOINT: why": a CURVE client the server refused or that holds
    /// the wrong server key, or a sender without keys reaching a CURVE
    /// server. libzmq 4.3 does not retry such a connection and queues what
    /// is sent to it, so a sender that sees this should say so and stop.
    /// `None` for an shm:// sender.
    pub fn refused(&mut self) -> Option<String> {
        self.link.refused()
    }

    /// A CURVE server: the clients it admitted and those it refused so
    /// far, `(admitted, refused)`. Refused are the keys not on its
    /// allow-list and the connections that failed or ended in the
    /// handshake (plaintext clients, a wrong server key, bytes that are
    /// not ZeroMQ). `None` for any other sender.
    pub fn curve_admissions(&mut self) -> Option<(u64, u64)> {
        self.link.curve_admissions()
    }

    /// Wait, up to the config's linger, until what was sent has left this process,
    /// and report what may not have: the count is exact when no peer ever
    /// connected (nothing left), "at most" when the linger ran out with data
    /// still queued, and unknown where it is not tracked (see
    /// [`Undelivered`]). Dropping a sender does the same wait without the
    /// report. libzmq's own queues are flushed when the sender is dropped
    /// afterwards.
    ///
    /// Over a PUSH/PAIR shm:// ring a message has left when every reader
    /// the ring keeps has passed it, or, for a reader with an identity,
    /// committed it ([`crate::Receiver::commit`]): what the slowest of them
    /// (live, or dead within its grace time), or one given up after its
    /// grace time, still had not when the linger ran out is "at most N",
    /// with the reason in [`Delivery::reason`]. No reader ever come is
    /// none undelivered: the ring keeps the messages for the first one.
    /// Dropping such a sender does not wait.
    pub fn finish(mut self) -> Delivery {
        self.settle(true)
    }

    fn settle(&mut self, report: bool) -> Delivery {
        self.finished = true;
        let sent = self.sent;
        let mut reason = None;
        let undelivered = match &mut self.link {
            _ if sent == 0 => Undelivered::None,
            // Written into the shared ring, which outlives this process.
            Tx::Shm(_) if !report => Undelivered::None,
            link => {
                let (u, why) = link.undelivered(&self.cfg, sent);
                reason = why;
                u
            }
        };
        let refused = self.refused();
        // A connection refused at its handshake counts as made, then lost:
        // what was queued for it never left.
        let undelivered = match undelivered {
            Undelivered::None | Undelivered::Unknown if refused.is_some() => {
                Undelivered::AtMost(sent)
            }
            u => u,
        };
        Delivery {
            sent,
            undelivered,
            refused,
            reason,
        }
    }
}

impl Drop for Sender {
    /// Wait, up to the config's linger, until what was sent has left this process:
    /// first the kernel queues of the connections (see the `drain` module),
    /// then libzmq's own queues as its context terminates.
    fn drop(&mut self) {
        if !self.finished {
            self.settle(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter;
    use crate::Receiver;

    fn stalls(addr: &str) -> u64 {
        meter::snapshot(false)
            .into_iter()
            .find(|s| s.dir == meter::Dir::Send && s.endpoints == [addr])
            .map(|s| s.stalls)
            .expect("the sender is registered")
    }

    fn pair(addr: &str, hwm: i32) -> (Receiver, Sender) {
        let rx = SocketConfig::builder(SocketType::Pull)
            .bind(addr)
            .hwm(hwm)
            .build()
            .and_then(Receiver::new)
            .expect("receiver");
        let tx = SocketConfig::builder(SocketType::Push)
            .connect(addr)
            .hwm(hwm)
            .sndhwm(hwm)
            .linger(Some(Duration::ZERO))
            .build()
            .and_then(Sender::new)
            .expect("sender");
        (rx, tx)
    }

    /// A PUSH whose receiver does not read fills its queue: the send that
    /// finds it full is one stall, however often it is tried again, and a
    /// blocking send that has to wait is another.
    #[test]
    #[cfg_attr(feature = "no-counters", ignore = "built without counters")]
    fn a_full_queue_is_a_stall() {
        let addr = "inproc://sender-test-stall";
        let (mut rx, mut tx) = pair(addr, 4);
        let t = TPSet::default();
        let mut queued = 0;
        while tx.send_within(&t, Duration::from_millis(1)).expect("send") {
            queued += 1;
            assert!(queued < 10_000, "a queue of 4 + 4 never filled");
        }
        assert_eq!(stalls(addr), 1, "{queued} queued, then full");
        assert!(!tx.send_within(&t, Duration::ZERO).expect("send"));
        assert_eq!(stalls(addr), 1, "the same message tried again");
        // A blocking send waits until the reader makes room: the reader
        // starts only once it sees that stall counted, so the wait is
        // certain, not a matter of timing.
        std::thread::scope(|sc| {
            let reader = sc.spawn(move || {
                while stalls(addr) < 2 {
                    std::thread::yield_now();
                }
                let mut t = TPSet::default();
                for i in 0..=queued {
                    let got = rx.recv_into(&mut t, Some(Duration::from_secs(20)));
                    assert!(got.expect("recv"), "message {i} of {}", queued + 1);
                }
                rx.recv_into(&mut t, Some(Duration::ZERO)).expect("recv")
            });
            tx.send(&t).expect("blocking send");
            assert!(!reader.join().expect("reader"), "no more than was sent");
        });
        assert_eq!(stalls(addr), 2);
    }

    /// Sends that always find room count no stall, nor does a PUB (it
    /// drops rather than wait) or a receiver.
    #[test]
    fn room_is_no_stall() {
        let addr = "inproc://sender-test-room";
        let (mut rx, mut tx) = pair(addr, 100);
        let t = TPSet::default();
        for _ in 0..20 {
            tx.send(&t).expect("send");
            tx.send_raw(&[&VERSION_FRAME[..], &[][..]])
                .expect("send raw");
            assert!(tx.send_within(&t, Duration::ZERO).expect("send"));
        }
        let mut got = 0;
        let mut f = Frames::default();
        while rx
            .recv_raw_into(&mut f, Some(Duration::from_millis(100)))
            .expect("recv")
        {
            got += 1;
        }
        assert_eq!(got, 60);
        assert_eq!(stalls(addr), 0);
        let paddr = "inproc://sender-test-pub";
        let mut p = SocketConfig::builder(SocketType::Pub)
            .bind(paddr)
            .hwm(2)
            .sndhwm(2)
            .linger(Some(Duration::ZERO))
            .build()
            .and_then(Sender::new)
            .expect("pub");
        for _ in 0..50 {
            p.send(&t).expect("a PUB drops, it does not wait");
        }
        assert_eq!(stalls(paddr), 0);
        assert!(meter::snapshot(false)
            .iter()
            .filter(|s| s.dir == meter::Dir::Recv)
            .all(|s| s.stalls == 0));
    }
}
