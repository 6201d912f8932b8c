//! The `shm://NAME` transport behind the same Sender/Receiver front.
//!
//! A message travels as one ring entry holding the CZMQ `zmsg_encode` form of
//! its frames (a length byte, or 0xFF and 4 big-endian bytes, before each
//! frame), the same framing as dump files. Senders write it straight into a
//! loaned slot; receivers parse and decode it in place from a view of the
//! slot and only then check that the slot was not overwritten meanwhile, so
//! the receive path copies nothing.
//!
//! Semantics: PUB/SUB makes an overwriting channel (the writer never waits;
//! a reader that falls a ring behind learns how many it lost). PUSH/PULL
//! makes a blocking channel: the writer waits, up to `shm_block_timeout_ms`,
//! while the slowest live reader is a whole ring behind, so nothing is lost.
//! Unlike zmq's PUSH, which deals messages out round-robin, every PULL
//! reader of a channel receives every message (with one PULL, the same).
//!
//! A receiver with `shm_reader_id` reads as a durable reader of ptmp-shm:
//! its place in each ring is what it committed (`Receiver::commit`), a
//! writer keeps that place for `shm_reader_grace_ms` after the receiver's
//! process died, and a receiver opened under the same identity resumes
//! there.

use crate::config::{SocketConfig, SocketType};
use crate::error::{Error, Result};
use crate::meter::SocketCounters;
use crate::transport::{Receive, Transmit, Wait};
use ptmp_data::wire::decode_pair;
use ptmp_data::zmsg::{zmsg_frames, zmsg_len, zmsg_write_with};
use ptmp_data::{encode_tpset_into, tpset_max_len, Frames, TPSet, WireError, VERSION_FRAME};
use ptmp_shm::{
    ChannelConfig, ChannelName, Deadline, Durable, Policy, Reader, ShmError, StartAt, Writer,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod finish;
mod forward;
pub(crate) use forward::Forwarded;

/// Turn a ring error into ours, naming the key and channel: a writer's
/// (key `socket.bind`) failures are `cannot bind`, a reader's (key
/// `socket.connect`) `cannot connect`. A ring that does not fit in the shm
/// directory is a configuration error ([`Error::Config`]): no retry fits
/// it until the ring or the directory changes, and the error says how.
/// Nothing is allocated until there is an error: it runs on every
/// message's path.
fn shm_err<'a>(key: &'a str, name: &'a str) -> impl FnOnce(ShmError) -> Error + 'a {
    move |e| {
        match e {
        ShmError::BadConfig { .. } | ShmError::BadName { .. } => {
            Error::config(key, format!("\"shm://{name}\""), e.to_string())
        }
        ShmError::NoSpace { .. } => Error::config(
            key,
            format!("\"shm://{name}\""),
            format!(
                "{e}; for this socket: a smaller shm_slots or shm_max_message, or an ipc:// or tcp:// address (in a graph, \"transport\": \"ipc\" on the edge)"
            ),
        ),
        ShmError::Timeout { waited_ms, .. } => Error::Timeout {
            what: e.to_string(),
            ms: waited_ms,
        },
        other if key.ends_with("bind") => Error::Bind {
            endpoint: format!("shm://{name}"),
            reason: other.to_string(),
        },
        other => Error::Connect {
            endpoint: format!("shm://{name}"),
            reason: other.to_string(),
        },
    }
    }
}

/// [`shm_err`] for a channel already open (a send, a receive, a wait):
/// what is not a configuration error or a timeout is the ring's own error
/// ([`Error::Shm`]), not a failure to bind or connect.
fn shm_io_err<'a>(key: &'a str, name: &'a str) -> impl FnOnce(ShmError) -> Error + 'a {
    move |e| match e {
        ShmError::BadConfig { .. }
        | ShmError::BadName { .. }
        | ShmError::NoSpace { .. }
        | ShmError::Timeout { .. } => shm_err(key, name)(e),
        source => Error::Shm {
            endpoint: format!("shm://{name}"),
            source,
        },
    }
}

/// The shm channels named by `cfg`, if it uses shm; checks the rules. A
/// sender has one channel; a receiver may list several (all shm://), which
/// it reads fairly, as a zmq PULL or SUB connected to several peers does.
pub(crate) fn channel(
    cfg: &SocketConfig,
    sending: bool,
) -> Result<Option<(String, Vec<String>, Policy)>> {
    let shm: Vec<_> = cfg
        .endpoints()
        .filter(|(_, e)| e.transport == crate::config::Transport::Shm)
        .collect();
    let Some((attach, ep)) = shm.first() else {
        return Ok(None);
    };
    let key = format!("socket.{}", attach.name());
    let n = cfg.endpoints().count();
    if n != shm.len() {
        return Err(Error::config(
            key,
            format!("{:?}", ep.address),
            "mixing shm:// with other transports in one socket is not supported",
        ));
    }
    if sending && n != 1 {
        return Err(Error::config(
            key,
            format!("{:?}", ep.address),
            "an shm:// sender has exactly one endpoint (its channel)",
        ));
    }
    if shm.len() > ptmp_shm::MAX_WAIT_CHANNELS {
        return Err(Error::config(
            key,
            format!("{:?}", ep.address),
            format!(
                "an shm:// receiver reads at most {} channels",
                ptmp_shm::MAX_WAIT_CHANNELS
            ),
        ));
    }
    let policy = match (cfg.socket_type(), sending) {
        (SocketType::Pub, true) | (SocketType::Sub, false) => Policy::Overwrite,
        (SocketType::Push, true) | (SocketType::Pull, false) => Policy::Block,
        _ => {
            return Err(Error::config(
                "socket.type",
                format!("{:?}", cfg.socket_type().name()),
                format!(
                    "over shm:// a {} is {} (PAIR and other types are not available over shm)",
                    if sending { "sender" } else { "receiver" },
                    if sending {
                        "PUB or PUSH"
                    } else {
                        "SUB or PULL"
                    }
                ),
            ))
        }
    };
    if sending && cfg.subscribers() > 0 {
        return Err(Error::config(
            "socket.subscribers",
            cfg.subscribers().to_string(),
            "waiting for subscribers is not available over shm:// yet (readers can read the ring's history instead)",
        ));
    }
    // The channel-name rule is ptmp-shm's; an endpoint built without
    // parsing is held to it here too.
    let names = shm
        .iter()
        .map(|(_, e)| {
            let name = &e.address["shm://".len()..];
            ChannelName::new(name)
                .map(|n| n.to_string())
                .map_err(shm_err(&key, name))
        })
        .collect::<Result<_>>()?;
    Ok(Some((key, names, policy)))
}

impl crate::config::ShmSettings {
    /// Bytes a ring of these settings takes in the shm directory (all
    /// reserved when its writer creates it).
    pub fn ring_bytes(&self) -> usize {
        ChannelConfig {
            slots: self.slots,
            max_message: self.max_message,
            policy: Policy::Block,
        }
        .segment_bytes()
    }
}

pub(crate) struct ShmTx {
    w: Writer,
    name: String,
    /// The longest wait for room for one message (the socket's
    /// `shm_block_timeout_ms`), however many timed calls it takes.
    block_timeout: Duration,
    /// When a full ring first held back the message being sent by timed
    /// calls ([`Wait::Within`]).
    held_since: Option<Instant>,
    /// The sender's live counters (the writer counts its stalls into them
    /// itself, as each begins).
    meter: Arc<SocketCounters>,
    /// The writer's readers given up already carried into `meter`.
    given_up: u64,
    /// The number this sender's first message got (see `finish`).
    first_seq: u64,
}

impl ShmTx {
    pub(crate) fn open(
        cfg: &SocketConfig,
        key: &str,
        name: &str,
        policy: Policy,
        meter: Arc<SocketCounters>,
    ) -> Result<ShmTx> {
        let cc = ChannelConfig {
            slots: cfg.shm().slots,
            max_message: cfg.shm().max_message,
            policy,
        };
        let mut w = Writer::create_with(name, cc, cfg.shm().mode).map_err(shm_err(key, name))?;
        w.set_block_timeout(cfg.shm().block_timeout);
        // Counted as the wait begins, so a sender held back shows it while
        // it waits, as a zmq sender does.
        let m = meter.clone();
        w.on_stall(move || m.add_stall());
        let first_seq = w.next_seq();
        Ok(ShmTx {
            w,
            name: name.to_string(),
            block_timeout: cfg.shm().block_timeout,
            held_since: None,
            meter,
            given_up: 0,
            first_seq,
        })
    }

    /// Carry the readers the writer gave up since the last call into the
    /// meter: a load and compare of the writer's own field per message;
    /// the count changes only where a loan waited for room.
    #[inline]
    fn carry(&mut self) {
        let n = self.w.readers_given_up();
        if n != self.given_up {
            self.meter.add_readers_given_up(n - self.given_up);
            self.given_up = n;
        }
    }

    /// [`Self::send`] of a message of one frame shorter than 255 bytes:
    /// its length byte and its bytes, written into the slot with nothing
    /// else in between.
    ///
    /// A reader busy-polling for the next message watches the first line
    /// of the slot it goes to, the line on which the writer marks the
    /// slot being written and then complete. When the writer takes longer
    /// between the two than the reader between two looks, the reader takes
    /// the line away mid-message and each store after that fetches it
    /// back. Walking the frames in general in that time made an echoed
    /// 64-byte round trip 0.34-0.35 us at the median; written this way it
    /// is 0.29-0.30 us (`ptmp bench latency --round-trip --processes`,
    /// cores sharing an L3).
    fn send_short(&mut self, frame: &[u8], wait: Wait) -> Result<bool> {
        let len = frame.len() + 1;
        let write = |out: &mut [u8]| {
            out[0] = frame.len() as u8;
            out[1..len].copy_from_slice(frame);
            Some(len)
        };
        self.send_msg(len, write, wait)
    }

    /// Send `tpset` as `[version 0, payload]`, encoded straight into the
    /// loaned slot, waiting as [`Self::send`] does; with the bytes of its
    /// two frames, as a zmq sender counts them. `Ok(None)`, nothing sent,
    /// when the most a set of this many TrigPrims can take does not fit
    /// the channel's slots: the caller encodes it first and sends the
    /// frames, which fails with the exact size if the set is too large.
    pub(crate) fn send_tpset(
        &mut self,
        tpset: &TPSet,
        wait: Wait,
    ) -> Result<Option<(bool, usize)>> {
        let Some(len) = self.tpset_room(tpset) else {
            return Ok(None);
        };
        let mut bytes = 0;
        let sent = self.send_msg(len, |out| Some(zmsg_tpset(tpset, out, &mut bytes)), wait)?;
        Ok(Some((sent, bytes)))
    }

    /// [`Self::send_tpset`] for one set of a batch, published as
    /// [`Self::send_deferred`] publishes.
    pub(crate) fn send_tpset_deferred(&mut self, tpset: &TPSet) -> Result<Option<usize>> {
        let Some(len) = self.tpset_room(tpset) else {
            return Ok(None);
        };
        let mut bytes = 0;
        let total = self.block_timeout;
        let write = |out: &mut [u8]| Some(zmsg_tpset(tpset, out, &mut bytes));
        self.publish_mapped(len, write, Commit::Deferred, total, Some)?;
        Ok(Some(bytes))
    }

    /// The room to loan for `tpset` in zmsg form, if it fits a slot.
    #[inline]
    fn tpset_room(&self, tpset: &TPSet) -> Option<usize> {
        tpset_zmsg_bound(tpset.tps.len()).filter(|n| *n <= self.w.max_message())
    }

    /// Send one message of at most `len` bytes, written into its slot by
    /// `write` (which returns how many it wrote, or `None` to publish
    /// nothing), waiting as [`Self::send`] says.
    fn send_msg(
        &mut self,
        len: usize,
        write: impl FnOnce(&mut [u8]) -> Option<usize>,
        wait: Wait,
    ) -> Result<bool> {
        let total = self.block_timeout;
        let r = match wait {
            Wait::Block => self.publish_mapped(len, write, Commit::Now, total, Some),
            Wait::Within(slice) => {
                let since = *self.held_since.get_or_insert_with(Instant::now);
                let left = total.saturating_sub(since.elapsed()).min(slice);
                self.publish_mapped(len, write, Commit::Now, left, |e| match e {
                    ShmError::Timeout { .. } if since.elapsed() < total => None,
                    ShmError::Timeout { name, pid, pos, .. } => Some(ShmError::Timeout {
                        name,
                        waited_ms: since.elapsed().as_millis() as u64,
                        pid,
                        pos,
                    }),
                    e => Some(e),
                })
            }
        };
        if !matches!(r, Ok(false)) {
            self.held_since = None;
        }
        r
    }

    /// Forget a timed wait left unfinished (a caller gave up on its message).
    pub(crate) fn forget_wait(&mut self) {
        self.held_since = None;
    }

    /// Write one message of a batch: on a lossless (PUSH) channel readers
    /// see it at the next [`Self::flush`] (or sooner, if the ring fills);
    /// on a PUB channel at once.
    pub(crate) fn send_deferred<'a, I>(&mut self, frames: I) -> Result<()>
    where
        I: Iterator<Item = &'a [u8]> + Clone,
    {
        let total = self.block_timeout;
        let len = zmsg_len(frames.clone());
        let write = |out: &mut [u8]| Some(write_frames(frames, out));
        self.publish_mapped(len, write, Commit::Deferred, total, Some)
            .map(|_| ())
    }

    /// Publish what [`Self::send_deferred`] wrote.
    pub(crate) fn flush(&mut self) {
        self.w.flush();
    }

    /// Publish one message of at most `len` bytes, written by `write`
    /// into the loaned slot (the slot is then shortened to what it wrote);
    /// `Ok(false)`, nothing published, when `keep` turns the loan's error
    /// into None or when `write` returns None (the loan is then dropped:
    /// the slot is taken by the next message).
    fn publish_mapped(
        &mut self,
        len: usize,
        write: impl FnOnce(&mut [u8]) -> Option<usize>,
        commit: Commit,
        timeout: Duration,
        keep: impl FnOnce(ShmError) -> Option<ShmError>,
    ) -> Result<bool> {
        if len > self.w.max_message() {
            return Err(Error::Config {
                key: "socket.shm_max_message".into(),
                value: format!("\"shm://{}\"", self.name),
                reason: format!(
                    "a message of {len} bytes exceeds the channel's maximum of {}",
                    self.w.max_message()
                ),
            });
        }
        let written = self.w.loan_within(len, timeout).map(|mut loan| {
            let n = write(&mut loan)?;
            loan.truncate(n);
            Some(match commit {
                Commit::Deferred => loan.commit_deferred(),
                Commit::Now => loan.commit(),
            })
        });
        // Also after a loan that failed: it may have given readers up
        // before it did.
        self.carry();
        match written {
            Err(e) => {
                return match keep(e) {
                    Some(e) => Err(shm_io_err("socket.bind", &self.name)(e)),
                    None => Ok(false),
                }
            }
            Ok(None) => return Ok(false),
            Ok(Some(_)) => {}
        }
        // A segment truncated under the writer: what was committed went
        // nowhere, so say so (one relaxed load).
        self.w
            .check()
            .map_err(shm_io_err("socket.bind", &self.name))?;
        Ok(true)
    }
}

/// Write `frames` in `zmsg_encode` form at the start of `out`, a loaned
/// slot, a large frame with streaming stores ([`ptmp_shm::copy_into_slot`]);
/// returns the bytes written.
pub(crate) fn write_frames<'a>(
    frames: impl IntoIterator<Item = &'a [u8]>,
    out: &mut [u8],
) -> usize {
    zmsg_write_with(frames, out, ptmp_shm::copy_into_slot)
}

/// The most bytes [`zmsg_tpset`] writes for a set of `ntps` TrigPrims.
fn tpset_zmsg_bound(ntps: usize) -> Option<usize> {
    // The version frame and its length byte, then the payload's length
    // (one byte, or 0xFF and four) before the payload.
    tpset_max_len(ntps)?.checked_add(1 + VERSION_FRAME.len() + 5)
}

/// Write `[version 0, tpset]` in `zmsg_encode` form at the start of `out`,
/// which holds [`tpset_zmsg_bound`] bytes, encoding the set in place; set
/// `bytes` to the two frames' length and return the bytes written (0, a
/// message readers refuse, if `out` were short).
#[inline]
fn zmsg_tpset(tpset: &TPSet, out: &mut [u8], bytes: &mut usize) -> usize {
    const V: usize = VERSION_FRAME.len();
    let Some(max) = tpset_max_len(tpset.tps.len()) else {
        return 0;
    };
    if out.len() < V + 6 {
        return 0;
    }
    out[0] = V as u8;
    out[1..=V].copy_from_slice(&VERSION_FRAME);
    // A payload that may reach 255 bytes gets room for the long length
    // form, and moves back if it turned out shorter.
    let at = if max < 255 { V + 2 } else { V + 6 };
    let Some(n) = encode_tpset_into(tpset, &mut out[at..]) else {
        return 0;
    };
    *bytes = V + n;
    if n < 255 {
        out[V + 1] = n as u8;
        if at != V + 2 {
            out.copy_within(at..at + n, V + 2);
        }
        V + 2 + n
    } else {
        out[V + 1] = 0xff;
        out[V + 2..V + 6].copy_from_slice(&(n as u32).to_be_bytes());
        V + 6 + n
    }
}

/// When readers may see a written message.
#[derive(Clone, Copy)]
enum Commit {
    /// At once.
    Now,
    /// At the writer's next flush (the end of a batch).
    Deferred,
}

fn describe(p: Policy) -> &'static str {
    match p {
        Policy::Overwrite => "publish-subscribe (PUB/SUB)",
        Policy::Block => "lossless (PUSH/PULL)",
    }
}

/// Split a `zmsg_encode` buffer into frames without copying; `None` if it
/// is malformed. Calls `f` for each frame; returns the frame count.
fn for_frames<'a>(b: &'a [u8], mut f: impl FnMut(usize, &'a [u8])) -> Option<usize> {
    let mut n = 0;
    for frame in zmsg_frames(b) {
        f(n, frame.ok()?);
        n += 1;
    }
    Some(n)
}

/// The number of frames of a `zmsg_encode` buffer (`None` if it is not
/// one) and its first two: a message of two short frames, a TPSet's form
/// up to 254 bytes, is split without walking the frames one by one.
#[inline]
fn two_frames(b: &[u8]) -> (Option<usize>, &[u8], &[u8]) {
    if let Some((&l0, rest)) = b.split_first() {
        let l0 = usize::from(l0);
        if l0 < 255 && rest.len() > l0 {
            let (f0, rest) = rest.split_at(l0);
            if let Some((&l1, f1)) = rest.split_first() {
                if l1 < 255 && f1.len() == usize::from(l1) {
                    return (Some(2), f0, f1);
                }
            }
        }
    }
    let (mut f0, mut f1): (&[u8], &[u8]) = (&[], &[]);
    let n = for_frames(b, |i, f| match i {
        0 => f0 = f,
        1 => f1 = f,
        _ => {}
    });
    (n, f0, f1)
}

impl Transmit for ShmTx {
    /// Send one message given as its frames. [`Wait::Block`] waits for
    /// room up to the block timeout (then the timeout error);
    /// [`Wait::Within`] at most its time, `Ok(false)` and nothing written
    /// while a full ring has held this message back for less than the
    /// block timeout in all, counted from the first call that found it
    /// full, and the timeout error, naming that whole wait, after.
    fn send<'a, I>(&mut self, frames: I, wait: Wait) -> Result<bool>
    where
        I: ExactSizeIterator<Item = &'a [u8]> + Clone,
    {
        let mut first = frames.clone();
        if let (Some(f), None) = (first.next(), first.next()) {
            if f.len() < 255 {
                return self.send_short(f, wait);
            }
        }
        let len = zmsg_len(frames.clone());
        self.send_msg(len, |out| Some(write_frames(frames, out)), wait)
    }

    fn undelivered(
        &mut self,
        cfg: &SocketConfig,
        sent: u64,
    ) -> (crate::delivery::Undelivered, Option<String>) {
        self.drain_undelivered(cfg.linger(), sent)
    }
}

/// A receiver of one or more shm channels.
pub(crate) struct ShmRx {
    chans: Vec<Chan>,
    next: usize,
    ready: Vec<usize>,
}

impl ShmRx {
    /// Polls before the futex for every channel, attached now or later.
    pub(crate) fn set_spin(&mut self, polls: u32) {
        for c in &mut self.chans {
            c.spin = Some(polls);
            if let Some(r) = &mut c.reader {
                r.set_spin(polls);
            }
        }
    }

    pub(crate) fn open(
        cfg: &SocketConfig,
        key: &str,
        names: &[String],
        policy: Policy,
    ) -> Result<ShmRx> {
        let chans = names
            .iter()
            .map(|n| Chan::open(cfg, key, n, policy))
            .collect::<Result<Vec<_>>>()?;
        Ok(ShmRx {
            chans,
            next: 0,
            ready: Vec::new(),
        })
    }

    /// Everything returned so far has been handed on (see
    /// [`crate::Receiver::commit`]): no system call, nothing for channels
    /// read without an identity.
    #[inline]
    pub(crate) fn commit(&self) {
        for c in &self.chans {
            if let Some(r) = &c.reader {
                r.commit();
            }
        }
    }

    /// [`Self::commit`], shown in the rings at once.
    pub(crate) fn commit_now(&self) {
        for c in &self.chans {
            if let Some(r) = &c.reader {
                r.commit_now();
            }
        }
    }

    /// Poll every channel once, starting after the last one served, with
    /// `f`; then sleep on all of them (futex_waitv) until one has data.
    fn serve<T>(
        &mut self,
        timeout: Option<Duration>,
        mut f: impl FnMut(&mut Chan, Option<Duration>) -> Result<Option<T>>,
    ) -> Result<Option<T>> {
        let n = self.chans.len();
        if n == 1 {
            return f(&mut self.chans[0], timeout);
        }
        let mut deadline = Deadline::new(timeout);
        loop {
            for k in 0..n {
                let i = (self.next + k) % n;
                // Skip an empty channel without spinning on it.
                if self.chans[i].reader.as_ref().is_some_and(|r| !r.has_data()) {
                    continue;
                }
                if let Some(v) = f(&mut self.chans[i], Some(Duration::ZERO))? {
                    self.next = (i + 1) % n;
                    return Ok(Some(v));
                }
            }
            let left = deadline.remaining();
            if left == Some(Duration::ZERO) {
                return Ok(None);
            }
            let readers: Vec<&Reader> = self
                .chans
                .iter()
                .filter_map(|c| c.reader.as_ref())
                .collect();
            if readers.len() == n {
                let wait = left.map(|l| l.min(Duration::from_millis(100)));
                ptmp_shm::wait_any(&readers, wait, &mut self.ready)
                    .map_err(shm_io_err(&self.chans[0].key, &self.chans[0].name))?;
            } else {
                // A channel not created yet: poll for it, as a zmq connect
                // waits for its peer.
                std::thread::sleep(left.unwrap_or(Duration::MAX).min(Duration::from_millis(5)));
            }
        }
    }
}

impl Receive for ShmRx {
    fn lost(&self) -> u64 {
        self.chans.iter().map(Chan::lost).sum()
    }

    /// Receive a TPSet, decoding it in place from a ring: the message's
    /// length in bytes, `None` on timeout. A message that is not a TPSet
    /// leaves why in `bad`.
    fn recv_tpset(
        &mut self,
        out: &mut TPSet,
        timeout: Option<Duration>,
        bad: &mut Option<WireError>,
    ) -> Result<Option<usize>> {
        self.serve(timeout, |c, t| c.recv_tpset(out, t, bad))
    }

    /// Receive one message's frames (copied into `frames`).
    fn recv_frames(&mut self, frames: &mut Frames, timeout: Option<Duration>) -> Result<bool> {
        Ok(self
            .serve(timeout, |c, t| Ok(c.recv_frames(frames, t)?.then_some(())))?
            .is_some())
    }
}

/// Whether a message whose first frame is `first` matches a subscription
/// (`everything`: the empty prefix is among them).
#[inline]
fn wants(everything: bool, subscribe: &[Vec<u8>], first: &[u8]) -> bool {
    everything || subscribe.iter().any(|p| first.starts_with(p))
}

/// One channel of a receiver.
struct Chan {
    name: String,
    policy: Policy,
    key: String,
    reader: Option<Reader>,
    /// Where to start once attached: a receiver created before its channel
    /// existed takes everything from the first message (nothing can have
    /// been published before it subscribed), one that joins a live channel
    /// takes what comes next.
    start: StartAt,
    subscribe: Vec<Vec<u8>>,
    /// Whether `subscribe` holds the empty prefix (everything, the default
    /// and a PULL's case): then no message's first frame is compared.
    everything: bool,
    /// Who may own the segment (the `shm_mode` key).
    access: ptmp_shm::Access,
    /// The receiver's identity in the ring and its grace time, if it has
    /// one (the `shm_reader_id` and `shm_reader_grace_ms` keys).
    /// and the token binding it to its owner (`shm_reader_token`).
    ident: Option<(String, Duration, Option<String>)>,
    /// Messages seen overwritten while being read (counted as lost).
    torn: u64,
    /// Polls before the futex, when set ([`ShmRx::set_spin`]).
    spin: Option<u32>,
}

impl Chan {
    fn open(cfg: &SocketConfig, key: &str, name: &str, policy: Policy) -> Result<Chan> {
        let mut rx = Chan {
            name: name.into(),
            policy,
            key: key.into(),
            reader: None,
            start: StartAt::Next,
            subscribe: cfg.subscribe().to_vec(),
            everything: cfg.subscribe().iter().any(|p| p.is_empty()),
            access: cfg.shm().mode,
            ident: cfg.shm_reader_id().map(|id| {
                let token = cfg.shm_reader_token().map(str::to_string);
                (id.to_string(), cfg.shm_reader_grace(), token)
            }),
            torn: 0,
            spin: None,
        };
        // Attach now if the channel exists; otherwise on first receive, as a
        // zmq connect waits for its peer.
        // A lossless channel keeps what no reader has taken yet: start there.
        if policy == Policy::Block || !rx.attach()? {
            rx.start = StartAt::Oldest;
        }
        rx.attach()?;
        Ok(rx)
    }

    fn attach(&mut self) -> Result<bool> {
        if self.reader.is_some() {
            return Ok(true);
        }
        let r = match &self.ident {
            None => Reader::attach_with(&self.name, self.start, self.access),
            Some((id, grace, token)) => Reader::attach_durable(
                &self.name,
                Durable {
                    id,
                    grace: *grace,
                    token: token.as_deref(),
                },
                self.start,
                self.access,
            ),
        };
        match r {
            Ok(r) if r.policy() != self.policy => Err(Error::Connect {
                endpoint: format!("shm://{}", self.name),
                reason: format!(
                    "the channel is {} but this receiver is {}",
                    describe(r.policy()),
                    describe(self.policy)
                ),
            }),
            Ok(mut r) => {
                if let Some(n) = self.spin {
                    r.set_spin(n);
                }
                self.reader = Some(r);
                Ok(true)
            }
            Err(ShmError::NotFound { .. }) => Ok(false),
            Err(e) => Err(shm_err(&self.key, &self.name)(e)),
        }
    }

    /// Messages lost to overruns (the reader fell a whole ring behind).
    fn lost(&self) -> u64 {
        self.reader.as_ref().map_or(0, |r| r.lost()) + self.torn
    }

    /// Wait for the channel to exist; false on timeout.
    #[inline]
    fn wait_attached(&mut self, deadline: &mut Deadline) -> Result<bool> {
        if self.reader.is_some() {
            return Ok(true);
        }
        while !self.attach()? {
            if deadline.instant().is_some_and(|d| Instant::now() >= d) {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(true)
    }

    /// Receive a TPSet, decoding it in place from the ring, and the
    /// message's length. `Ok(None)` on timeout; a malformed message sets
    /// `bad`.
    ///
    /// The answer is kept to one number on purpose: returned as a nested
    /// enum with the decode's error inside, it was copied from one stack
    /// slot to another in pieces of other widths than it was written in,
    /// and each copy waited for the stores before it (a fifth of a
    /// receive's time, `perf annotate` on `Receiver::recv_into`).
    fn recv_tpset(
        &mut self,
        out: &mut TPSet,
        timeout: Option<Duration>,
        bad: &mut Option<WireError>,
    ) -> Result<Option<usize>> {
        let mut deadline = Deadline::new(timeout);
        if !self.wait_attached(&mut deadline)? {
            return Ok(None);
        }
        let mut left = timeout;
        loop {
            let reader = self.reader.as_mut().expect("attached");
            let view = reader
                .view_checked(left)
                .map_err(shm_io_err(&self.key, &self.name))?;
            let Some(view) = view else {
                return Ok(None);
            };
            let (n, f0, f1) = two_frames(view.bytes());
            let r = match n {
                Some(2) => decode_pair(f0, f1, out),
                Some(n) => Err(WireError::FrameCount(n)),
                None => Err(WireError::FrameCount(0)),
            };
            let wanted = n.is_none() || wants(self.everything, &self.subscribe, f0);
            if !view.valid() {
                self.torn += 1;
            } else if wanted {
                if let Err(e) = r {
                    *bad = Some(e);
                }
                // Bytes as a zmq receiver counts them: both frames.
                return Ok(Some(f0.len() + f1.len()));
            }
            left = deadline.remaining();
        }
    }

    /// Receive one message's frames (copied into `frames`).
    fn recv_frames(&mut self, frames: &mut Frames, timeout: Option<Duration>) -> Result<bool> {
        let mut deadline = Deadline::new(timeout);
        if !self.wait_attached(&mut deadline)? {
            return Ok(false);
        }
        let mut left = timeout;
        loop {
            let reader = self.reader.as_mut().expect("attached");
            let view = reader
                .view_checked(left)
                .map_err(shm_io_err(&self.key, &self.name))?;
            let Some(view) = view else {
                return Ok(false);
            };
            frames.clear();
            let ok = for_frames(view.bytes(), |_, f| frames.push(f)).is_some();
            if !view.valid() {
                self.torn += 1;
                left = deadline.remaining();
                continue;
            }
            if !ok {
                // Not zmsg framing: hand over the bytes as one frame.
                frames.clear();
                frames.push(view.bytes());
                if !view.valid() {
                    self.torn += 1;
                    left = deadline.remaining();
                    continue;
                }
            }
            let first = frames.get(0).unwrap_or(&[]);
            if wants(self.everything, &self.subscribe, first) {
                return Ok(true);
            }
            left = deadline.remaining();
        }
    }
}
