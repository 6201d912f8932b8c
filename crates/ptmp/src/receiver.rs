//! Receiving TPSets (and raw frames): one front over the transports of
//! `transport.rs` (a zmq socket or `shm://` rings), which receive through
//! the same two methods of its `Receive` contract, one decoding a TPSet,
//! one copying frames.

use crate::config::SocketConfig;
use crate::error::{Error, Result};
use crate::link::Rx;
use crate::transport::Receive;
use ptmp_data::{Frames, TPSet, WireError};
use std::time::Duration;

mod forward;

/// How long a receiver left behind by a move ([`Receiver::follow_moved`])
/// is waited on once it first looks empty, for what its connection still
/// held to be read (libzmq reads a connection on its own thread).
const RETIRED_SETTLE: Duration = Duration::from_millis(50);

/// Receives PTMP messages on a PAIR, SUB or PULL socket.
///
/// `recv_into` decodes into the caller's [`TPSet`]: over zmq through two
/// messages the receiver keeps, over shm:// straight from the ring slot, so
/// the receive path allocates nothing per message once the set's `tps` has
/// grown (libzmq itself allocates for frames over 33 bytes). A message that
/// is not a valid PTMP message is returned as [`Error::Wire`], counted in
/// [`Self::errors`], and the receiver goes on.
pub struct Receiver {
    link: Rx,
    cfg: SocketConfig,
    received: u64,
    errors: u64,
    bound: Vec<String>,
    /// Live counters, readable from other threads ([`crate::meter`]).
    meter: std::sync::Arc<crate::meter::SocketCounters>,
    /// A message taken by [`Self::forward`] whose send failed: the next
    /// forward sends it first.
    held: Option<Frames>,
    /// Where a zmq message is received for [`Self::recv_raw_with`] and
    /// [`Self::forward`].
    scratch: Frames,
    /// The receiver this one replaced when its named peer moved
    /// ([`Self::follow_moved`]): read first, without waiting, until it is
    /// empty, so nothing that reached it is dropped.
    retired: Option<Box<Receiver>>,
}

impl Receiver {
    /// Open a receiver: bind and connect its endpoints (subscribing, for
    /// SUB). Fails with [`Error::Config`] when the type cannot receive
    /// (only PAIR, SUB and PULL can), [`Error::Bind`] or [`Error::Connect`]
    /// when an endpoint cannot be attached.
    pub fn new(cfg: SocketConfig) -> Result<Self> {
        if !cfg.socket_type().can_recv() {
            return Err(Error::config(
                "socket.type",
                format!("{:?}", cfg.socket_type().name()),
                "a receiver needs a PAIR, SUB or PULL socket",
            ));
        }
        let meter = crate::meter::register(
            crate::meter::Dir::Recv,
            cfg.endpoints().map(|(_, e)| e.address.clone()).collect(),
        );
        let (link, bound) = Rx::open(&cfg, &meter)?;
        Ok(Receiver {
            meter,
            link,
            cfg,
            received: 0,
            errors: 0,
            bound,
            held: None,
            scratch: Frames::new(),
            retired: None,
        })
    }

    /// A CURVE client: the first of its connections whose security
    /// handshake failed, as "ENDPOINT: why" (the server refused its key,
    /// or it holds the wrong server key); nothing will arrive there, as
    /// libzmq 4.3 does not retry. `None` for any other receiver.
    pub fn refused(&mut self) -> Option<String> {
        self.link.refused()
    }

    /// A CURVE server: the clients it admitted and those it refused so
    /// far, `(admitted, refused)`. Refused are the keys not on its
    /// allow-list and the connections that failed or ended in the
    /// handshake (plaintext clients, a wrong server key, bytes that are
    /// not ZeroMQ), counted as they happen. `None` for any other receiver.
    pub fn curve_admissions(&self) -> Option<(u64, u64)> {
        self.link.curve_admissions()
    }

    /// Parse a JSON config text (`{"socket": {...}}`) and open a receiver
    /// on it: [`SocketConfig::from_json`], then [`Receiver::new`].
    pub fn from_json(config: &str) -> Result<Self> {
        Self::new(SocketConfig::from_json(config)?)
    }

    /// The configuration this receiver was made from.
    pub fn config(&self) -> &SocketConfig {
        &self.cfg
    }

    /// Open a receiver whose names (`name://NODE/PORT`) it connects to are
    /// resolved first ([`SocketConfig::resolve_names`]), so that it can
    /// follow a named peer that moves ([`Self::follow_moved`]).
    pub fn following(cfg: &SocketConfig) -> Result<Self> {
        Self::new(cfg.resolve_names()?)
    }

    /// After a wait that found nothing: when a peer this receiver connects
    /// to by name is announced elsewhere now (it died and came back on
    /// another host, port or process), make the receiver again connected
    /// there; `true` when it did. The old socket is kept and read first,
    /// without waiting, until it is empty: what reached it (from the peer
    /// before it moved, or from another that did not) is received, not
    /// dropped with it. The counts ([`Self::received`], [`Self::errors`])
    /// go on. `false` when nothing moved, for a receiver that binds (a
    /// bound port stays where it is), and for one not made by
    /// [`Self::following`]. A process that never used names pays one
    /// atomic load.
    pub fn follow_moved(&mut self) -> Result<bool> {
        if !self.cfg.bind().is_empty() {
            return Ok(false);
        }
        let Some(fresh) = self.cfg.moved() else {
            return Ok(false);
        };
        let mut new = Receiver::new(fresh)?;
        new.received = self.received;
        new.errors = self.errors;
        // A message a forward took and could not send yet goes first.
        new.held = self.held.take();
        let old = std::mem::replace(self, new);
        self.retired = Some(Box::new(old));
        Ok(true)
    }

    /// The next message the retired receiver (see [`Self::follow_moved`])
    /// still holds, through `take` with the wait it is given: `Some` with
    /// what `take` gave (a malformed message as its error), `None` once it
    /// is empty or broken, and then it is let go. Empty means it found
    /// nothing at once and nothing in [`RETIRED_SETTLE`] more, so what its
    /// connection's kernel buffer still held when it was retired is read
    /// too. Counted here as received.
    #[cold]
    fn take_retired<T>(
        &mut self,
        mut take: impl FnMut(&mut Receiver, Option<Duration>) -> Result<Option<T>>,
    ) -> Option<Result<T>> {
        let old = self.retired.as_mut()?;
        let (received, errors) = (old.received, old.errors);
        let got = match take(old, Some(Duration::ZERO)) {
            Ok(None) => take(old, Some(RETIRED_SETTLE)),
            got => got,
        };
        let counted = (old.received - received, old.errors - errors);
        self.received += counted.0;
        self.errors += counted.1;
        match got {
            Ok(Some(v)) => Some(Ok(v)),
            Err(e @ Error::Wire(_)) => Some(Err(e)),
            Ok(None) | Err(_) => {
                self.retired = None;
                None
            }
        }
    }

    /// Endpoints bound, with wildcards resolved.
    pub fn bound_endpoints(&self) -> &[String] {
        &self.bound
    }

    /// Valid messages received so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Malformed messages received (and skipped) so far.
    pub fn errors(&self) -> u64 {
        self.errors
    }

    /// Messages known to be lost before they could be received: over shm://,
    /// those the writer overwrote before this receiver read them. (Over zmq
    /// a PUB drops silently; compare counts to find out.)
    pub fn lost(&self) -> u64 {
        self.link.lost()
    }

    /// Over shm://: how many times a receive polls its rings before it
    /// sleeps on the futex ([`ptmp_shm::DEFAULT_SPIN`] unless set);
    /// `u32::MAX` never sleeps (a true busy-poll: lowest latency, one core
    /// kept busy), 0 sleeps at once. Also for rings attached later. Does
    /// nothing over zmq.
    pub fn set_shm_spin(&mut self, polls: u32) {
        if let Rx::Shm(rx) = &mut self.link {
            rx.set_spin(polls);
        }
    }

    /// Say that every message returned so far has been handed on
    /// (forwarded, written, or otherwise done with), so it need not be
    /// delivered again after a crash.
    ///
    /// It matters for a receiver with an identity in its shm:// rings
    /// (`shm_reader_id`, see
    /// [`SocketConfigBuilder::shm_reader_id`](crate::SocketConfigBuilder::shm_reader_id)):
    /// the ring then holds every message this receiver returned but did not
    /// commit, and when its process dies a receiver opened under the same
    /// identity (within the writer's grace time) resumes at the first
    /// message not committed, so nothing that reached the ring is lost.
    /// Commit after handing on, never before: a crash between the two then
    /// delivers the message again (receivers of counted streams drop such
    /// repeats by number), never loses it. A receiver with an identity must
    /// commit at least once a ring (`shm_slots` messages): its writer waits
    /// for what is not committed.
    ///
    /// Cheap enough for every message: no system call, and the ring is
    /// told every few messages (at once when its writer waits, and before
    /// the receiver sleeps), so a crash may deliver those few again. Does
    /// nothing for other receivers, whose place follows what they read.
    #[inline]
    pub fn commit(&self) {
        if let Rx::Shm(rx) = &self.link {
            rx.commit();
        }
    }

    /// [`Self::commit`], shown in the rings at once (a locked instruction
    /// per channel, no system call), so a successor starts exactly after
    /// the last message returned: for the end of a stream that writes what
    /// it receives somewhere and must not write it twice.
    pub fn commit_now(&self) {
        if let Rx::Shm(rx) = &self.link {
            rx.commit_now();
        }
    }

    /// Receive one TPSet; `Ok(None)` when `timeout` passes first
    /// (`None` waits forever), as PTMP's `TPReceiver` returns false.
    pub fn recv(&mut self, timeout: Option<Duration>) -> Result<Option<TPSet>> {
        let mut t = TPSet::default();
        Ok(self.recv_into(&mut t, timeout)?.then_some(t))
    }

    /// Receive one TPSet into `out`, reusing its storage. `Ok(false)` on
    /// timeout.
    pub fn recv_into(&mut self, out: &mut TPSet, timeout: Option<Duration>) -> Result<bool> {
        if self.retired.is_some() {
            let take = |old: &mut Receiver, t| Ok(old.recv_into(out, t)?.then_some(()));
            if let Some(r) = self.take_retired(take) {
                return r.map(|()| true);
            }
        }
        let mut bad = None;
        let got = self.link.recv_tpset(out, timeout, &mut bad)?;
        let Some(bytes) = got else {
            return Ok(false);
        };
        if let Some(e) = bad {
            return Err(self.malformed(e));
        }
        self.received += 1;
        self.meter.add(bytes);
        if self.meter.sample_due() {
            self.meter.sample(out.created, self.lost());
        }
        Ok(true)
    }

    /// Count a message that was not a TPSet; the error to return.
    #[cold]
    fn malformed(&mut self, e: WireError) -> Error {
        self.errors += 1;
        self.meter.add_error();
        Error::Wire(e)
    }

    /// Receive up to `out.len()` TPSets in one call, decoding into the
    /// sets of `out` (their storage reused): waits up to `timeout` for the
    /// first (`None`: forever), then takes only what has already arrived.
    /// Returns how many were filled, from the front; 0 on timeout or when
    /// `out` is empty. An error ends the batch: it is returned when it comes
    /// first; after some sets, those are returned (a malformed message is
    /// counted in [`Self::errors`], a persistent error is the next call's).
    pub fn recv_batch(&mut self, out: &mut [TPSet], timeout: Option<Duration>) -> Result<usize> {
        let Some((first, rest)) = out.split_first_mut() else {
            return Ok(0);
        };
        if !self.recv_into(first, timeout)? {
            return Ok(0);
        }
        let mut n = 1;
        for set in rest {
            match self.recv_into(set, Some(Duration::ZERO)) {
                Ok(true) => n += 1,
                // What came is returned; an error that persists (a broken
                // socket or segment) is the next call's.
                Ok(false) | Err(_) => break,
            }
        }
        Ok(n)
    }

    /// Receive one message as raw frames into `frames`, schema-blind.
    /// `Ok(false)` on timeout.
    pub fn recv_raw_into(
        &mut self,
        frames: &mut Frames,
        timeout: Option<Duration>,
    ) -> Result<bool> {
        if self.retired.is_some() {
            let take = |old: &mut Receiver, t| Ok(old.recv_raw_into(frames, t)?.then_some(()));
            if let Some(r) = self.take_retired(take) {
                return r.map(|()| true);
            }
        }
        let got = self.link.recv_frames(frames, timeout)?;
        if got {
            self.received += 1;
            self.meter.add(frames.total_bytes());
        }
        Ok(got)
    }
}
