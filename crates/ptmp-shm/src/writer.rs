//! The single writer of a channel: taking the channel, loaning a slot,
//! committing it, and (under [`Policy::Block`]) waiting for slow readers.

use crate::admin::ReaderState;
use crate::error::{Result, ShmError};
use crate::layout::{ChannelConfig, Policy, MAX_READERS, MAX_SEQ, PID_MAX_LIMIT};
use crate::name::ChannelName;
use crate::protocol;
use crate::segment::{pid_alive, reserve, Access, Segment};
use crate::wait::{default_publish_fence, futex_wait, notify_readers, PublishFence};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The single writer of a channel.
pub struct Writer {
    seg: Segment,
    seq: u64,
    /// `next_seq` as this writer last stored it: below `seq` while
    /// messages committed with [`Loan::commit_deferred`] wait for
    /// [`Writer::flush`].
    published: u64,
    pid: u32,
    floor: Floor,
    block_timeout: Duration,
    /// Durable readers found dead, and what became of their entries.
    dead: DeadReaders,
    /// Messages whose loan found the ring full and had to wait.
    stalls: u64,
    /// The number of the last message counted in `stalls`: a loan that
    /// timed out and is asked again for the same message is not counted
    /// twice.
    stalled_seq: Option<u64>,
    /// Called once for each stall as it begins (see [`Writer::on_stall`]).
    on_stall: Option<Box<dyn Fn() + Send + Sync>>,
    /// How each publish orders itself before the look at `notify`; the
    /// header's `publish_fence` says the same to readers.
    fence: PublishFence,
    /// Wake-ups of sleeping readers counted since message `wake_window.0`
    /// (see [`crate::WAKES_TO_FULL`]).
    wake_window: (u64, u32),
}

/// What a [`Policy::Block`] writer knows of durable readers whose process
/// died: per registry entry, the dead PID and when this writer first found
/// it dead while it needed room (the start of the entry's grace time).
struct DeadReaders {
    since: Vec<Option<(u32, Instant)>>,
    /// Entries given up after their grace time.
    given_up: u64,
    /// The lowest position among the durable entries given up: from there
    /// on their readers received nothing of this writer's.
    given_up_at: Option<u64>,
}

impl DeadReaders {
    /// Whether the dead reader `pid` of entry `i`, kept for `grace`, has
    /// been waited for long enough.
    fn expired(&mut self, i: usize, pid: u32, grace: Duration) -> bool {
        let now = Instant::now();
        let since = match self.since[i] {
            Some((p, t)) if p == pid => t,
            _ => {
                self.since[i] = Some((pid, now));
                now
            }
        };
        now.duration_since(since) >= grace
    }
}

/// What a [`Policy::Block`] writer remembers of its readers.
struct Floor {
    /// The lowest position a reader may still need. Until a first reader
    /// registers it stays where this writer started, so the first `slots`
    /// messages wait in the ring for that reader (as a zmq PUSH queues until
    /// its peer connects); once readers have come and all gone, nobody needs
    /// anything and the writer no longer waits, so a reader that dies never
    /// stalls it.
    min_pos: u64,
    /// Whether any reader has been seen registered.
    had_reader: bool,
}

/// What [`Writer::drain`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    /// The number the next message will get: every message below it was
    /// published.
    pub next_seq: u64,
    /// The slowest reader the ring keeps, if it had not passed (a durable
    /// reader: committed) every message: its `position` is the first it
    /// had not.
    pub behind: Option<ReaderState>,
    /// The lowest position of the durable readers this writer gave up
    /// (their process dead past their grace time, no successor come), if
    /// any: from there on they received nothing from this writer.
    pub given_up_at: Option<u64>,
}

/// Default bound on a blocked writer's wait for its slowest reader.
pub const DEFAULT_BLOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a blocked writer sleeps at most before it looks for readers
/// that died without waking it.
const REAP_PAUSE: Duration = Duration::from_millis(1);

/// A blocked writer's spin before it sleeps: this many looks at the
/// registry, [`WRITER_SPIN_PAUSES`] CPU pause instructions apart (some tens
/// of microseconds in all).
const WRITER_SPIN_ROUNDS: u32 = 64;

/// CPU pause instructions between two looks of a spinning writer.
const WRITER_SPIN_PAUSES: u32 = 32;

impl Writer {
    /// Create channel `name` with `cfg`, or take over an existing one whose
    /// writer is gone (its layout must match `cfg`).
    pub fn create(name: &str, cfg: ChannelConfig) -> Result<Writer> {
        Self::create_with(name, cfg, Access::Private)
    }

    /// As [`Self::create`], with the given [`Access`].
    pub fn create_with(name: &str, cfg: ChannelConfig, access: Access) -> Result<Writer> {
        cfg.check(name)?;
        let path = ChannelName::new(name)?.path();
        let seg = match Segment::open(name, path.clone(), access) {
            Ok(seg) => {
                if seg.slots as usize != cfg.slots
                    || seg.max_message != cfg.max_message
                    || seg.policy != cfg.policy
                {
                    return Err(ShmError::BadConfig {
                        name: name.into(),
                        reason: format!(
                            "exists with {} slots of {} bytes ({:?}), asked for {} of {} ({:?}) (remove it with `ptmp shm rm {name}`)",
                            seg.slots, seg.max_message, seg.policy, cfg.slots, cfg.max_message, cfg.policy
                        ),
                    });
                }
                // A segment made without its pages reserved (by an older
                // ptmp, or copied in sparse): reserve them now, so a full file
                // system is an error here and not a SIGBUS mid-message
                // (invariant 7). Allocated pages are left as they are.
                reserve(&seg.file, &seg.path, seg.map.len() as u64)?;
                seg
            }
            Err(ShmError::NotFound { .. }) => Segment::create(name, &path, cfg, access)?,
            Err(e) => return Err(e),
        };
        Self::take(seg)
    }

    /// Become the channel's one writer (invariant 2).
    fn take(seg: Segment) -> Result<Writer> {
        let pid = std::process::id();
        let h = seg.header();
        seg.check_layout()?;
        let mut cur = h.writer_pid.load(Ordering::SeqCst);
        // Each failed compare-and-swap means another process changed the
        // field; a bounded number of rounds keeps a hostile one from holding
        // this writer forever.
        let mut rounds = 0;
        loop {
            rounds += 1;
            if rounds > 1000 {
                return Err(seg.corrupt(
                    "writer_pid",
                    format!("keeps changing (now {cur}) while a writer takes the channel"),
                ));
            }
            if cur != 0 && cur != pid && pid_alive(cur) {
                return Err(ShmError::WriterBusy {
                    name: seg.name.clone(),
                    pid: cur,
                });
            }
            if cur == pid {
                // A second writer in this very process is as wrong as one elsewhere.
                return Err(ShmError::WriterBusy {
                    name: seg.name.clone(),
                    pid: cur,
                });
            }
            match h
                .writer_pid
                .compare_exchange(cur, pid, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => break,
                Err(now) => cur = now,
            }
        }
        h.writer_epoch.fetch_add(1, Ordering::SeqCst);
        let fence = default_publish_fence();
        protocol::announce_fence(&h.publish_fence, fence.word());
        let seq = h.next_seq.load(Ordering::SeqCst);
        if seq > MAX_SEQ {
            let _ = h
                .writer_pid
                .compare_exchange(pid, 0, Ordering::SeqCst, Ordering::SeqCst);
            return Err(seg.corrupt(
                "next_seq",
                format!("{seq} is beyond any possible message number ({MAX_SEQ})"),
            ));
        }
        // A writer taking over a ring that readers are registered on (its
        // predecessor died or left) starts from the slowest of them, not
        // from `next_seq`: what they have not read yet is theirs, and the
        // first slots of this writer must not overwrite it.
        let first = match seg.policy {
            Policy::Block => Self::slowest(&seg, seq, None)?,
            Policy::Overwrite => None,
        };
        Ok(Writer {
            seg,
            seq,
            published: seq,
            pid,
            floor: Floor {
                min_pos: first.map_or(seq, |(p, _)| p),
                had_reader: first.is_some(),
            },
            block_timeout: DEFAULT_BLOCK_TIMEOUT,
            dead: DeadReaders {
                since: vec![None; MAX_READERS],
                given_up: 0,
                given_up_at: None,
            },
            stalls: 0,
            stalled_seq: None,
            on_stall: None,
            fence,
            wake_window: (seq, 0),
        })
    }

    /// How this writer publishes each message (see [`PublishFence`]).
    pub fn publish_fence(&self) -> PublishFence {
        self.fence
    }

    /// Publish every later message with a full barrier, so that readers
    /// going to sleep never interrupt this writer's CPU (for a writer on
    /// a core kept free of interrupts); [`crate::FULL_FENCE_ENV`] does the
    /// same for every writer of the process. The barrier costs each
    /// message a locked instruction.
    pub fn use_full_fence(&mut self) {
        self.fence = PublishFence::Full;
        protocol::announce_fence(&self.seg.header().publish_fence, self.fence.word());
    }

    /// After a publish up to message `seq` that woke sleeping readers:
    /// count it, and turn to a full barrier per message once readers of
    /// a [`PublishFence::ByReaders`] writer sleep often.
    #[cold]
    fn woke_readers(&mut self, seq: u64) {
        if self.fence != PublishFence::ByReaders {
            return;
        }
        let (since, wakes) = &mut self.wake_window;
        if seq.saturating_sub(*since) >= crate::WAKE_WINDOW {
            (*since, *wakes) = (seq, 0);
        }
        *wakes += 1;
        if *wakes >= crate::WAKES_TO_FULL {
            self.use_full_fence();
        }
    }

    /// Store `next_seq = seq + 1` as this writer's fence says.
    #[inline]
    fn publish_seq(&self, seq: u64) {
        let next = &self.seg.header().next_seq;
        match self.fence {
            PublishFence::Full => protocol::publish(next, seq),
            PublishFence::ByReaders => protocol::publish_light(next, seq),
        }
    }

    /// Durable readers ([`crate::Reader::attach_durable`]) whose entries
    /// this writer gave up after their process died and no successor came
    /// within their grace time. Their successors, if they come, count what
    /// they lost.
    pub fn readers_given_up(&self) -> u64 {
        self.dead.given_up
    }

    /// Messages whose [`Self::loan`] found the ring full (under
    /// [`Policy::Block`], the slowest reader a whole ring behind, or no
    /// reader yet come for a ring of messages) and had to wait, each
    /// counted once however many loans it took (one that timed out and
    /// is asked again is the same message). Counted only on that slow
    /// path: a loan that finds room costs nothing more. Zero under
    /// [`Policy::Overwrite`], which never waits.
    pub fn stalls(&self) -> u64 {
        self.stalls
    }

    /// Call `f` each time a message starts to wait for room, before it
    /// waits (once for each stall counted in [`Self::stalls`]), so a
    /// sender's live counters show a wait while it lasts. It runs on the
    /// writer's thread, only on that slow path.
    pub fn on_stall(&mut self, f: impl Fn() + Send + Sync + 'static) {
        self.on_stall = Some(Box::new(f));
    }

    /// Channel name.
    pub fn name(&self) -> &str {
        &self.seg.name
    }

    /// The segment file.
    pub fn path(&self) -> &Path {
        &self.seg.path
    }

    /// Largest message this channel carries.
    pub fn max_message(&self) -> usize {
        self.seg.max_message
    }

    /// Sequence number the next message will get.
    pub fn next_seq(&self) -> u64 {
        self.seq
    }

    /// The channel's overflow policy.
    pub fn policy(&self) -> Policy {
        self.seg.policy
    }

    /// Under [`Policy::Block`], how long a publish may wait for the slowest
    /// reader before failing with [`ShmError::Timeout`].
    pub fn set_block_timeout(&mut self, t: Duration) {
        self.block_timeout = t;
    }

    /// The slowest live registered reader's position, dropping the entries
    /// of readers whose process is gone when `reap` is set (a durable
    /// reader's only once its grace time has passed: until then it counts
    /// as live, so its successor finds every message it did not commit). An
    /// entry no reader can have written (a PID above [`PID_MAX_LIMIT`], a
    /// position beyond the message being written) is corruption.
    fn slowest(
        seg: &Segment,
        seq: u64,
        reap: Option<&mut DeadReaders>,
    ) -> Result<Option<(u64, u32)>> {
        let mut reap = reap;
        let mut min: Option<(u64, u32)> = None;
        for i in 0..MAX_READERS {
            let e = seg.entry(i);
            let pid = e.pid.load(Ordering::SeqCst);
            if pid == 0 {
                continue;
            }
            if pid > PID_MAX_LIMIT {
                return Err(seg.corrupt(
                    format!("reader registry entry {i} pid"),
                    format!("{pid} is above the largest Linux PID {PID_MAX_LIMIT}"),
                ));
            }
            if let Some(dead) = reap.as_deref_mut() {
                if !pid_alive(pid) {
                    let keep = e.ident.load(Ordering::SeqCst) != 0 && {
                        let grace = e.grace_ms.load(Ordering::SeqCst);
                        !dead.expired(i, pid, Duration::from_millis(grace as u64))
                    };
                    if !keep {
                        // A durable reader's entry keeps its identity and
                        // position (PID 0): a late successor learns what
                        // it lost.
                        if protocol::give_up_entry(&e.pid, pid)
                            && e.ident.load(Ordering::SeqCst) != 0
                        {
                            dead.given_up += 1;
                            let pos = protocol::reader_pos(&e.pos).min(seq);
                            dead.given_up_at = Some(dead.given_up_at.map_or(pos, |p| p.min(pos)));
                        }
                        continue;
                    }
                }
            }
            let pos = protocol::reader_pos(&e.pos);
            if pos > seq {
                return Err(seg.corrupt(
                    format!("reader registry entry {i} position"),
                    format!(
                        "{pos} (pid {pid}) is beyond message {}, the next to be written",
                        seq
                    ),
                ));
            }
            if min.is_none_or(|(m, _)| pos < m) {
                min = Some((pos, pid));
            }
        }
        Ok(min)
    }

    /// Publish everything committed, then wait up to `within` until every
    /// reader the ring keeps (live, or durable and dead within its grace
    /// time) has passed every message written (a durable reader: has
    /// committed it), looking every millisecond; say who had not. For a
    /// writer about to end that wants to know whether what it wrote
    /// reached its readers. Readers that left, and dead ones without an
    /// identity, are not waited for; a durable reader dead past its grace
    /// time is given up, as a blocked writer does, and counted in
    /// [`Drained::given_up_at`].
    pub fn drain(&mut self, within: Duration) -> Result<Drained> {
        self.flush();
        let t0 = Instant::now();
        loop {
            let (seg, seq) = (&self.seg, self.seq);
            let behind = Self::slowest(seg, seq, Some(&mut self.dead))?.filter(|&(p, _)| p < seq);
            let waited = t0.elapsed();
            if behind.is_none() || waited >= within {
                let behind = behind.map(|(position, pid)| ReaderState {
                    pid,
                    alive: pid_alive(pid),
                    position,
                    durable: (0..MAX_READERS).any(|i| {
                        let e = seg.entry(i);
                        e.pid.load(Ordering::SeqCst) == pid
                            && protocol::reader_pos(&e.pos) == position
                            && e.ident.load(Ordering::SeqCst) != 0
                    }),
                });
                return Ok(Drained {
                    next_seq: seq,
                    behind,
                    given_up_at: self.dead.given_up_at,
                });
            }
            std::thread::sleep(REAP_PAUSE.min(within - waited));
        }
    }

    /// Policy::Block: wait until no live reader still needs the message that
    /// writing `s` would overwrite (`s - slots`).
    ///
    /// A full ring is met with hysteresis: the writer spins briefly, then
    /// sleeps until the slowest reader has freed a quarter of the ring (or
    /// 1 ms has passed), not one slot, so a writer faster than its reader
    /// costs one wake-up per quarter ring instead of one per message, and
    /// the messages that follow find room from the cached floor without
    /// looking at the registry.
    fn wait_for_space(&mut self, s: u64, timeout: Duration) -> Result<()> {
        let (seg, floor) = (&self.seg, &mut self.floor);
        let dead = &mut self.dead;
        if s < floor.min_pos + seg.slots || Self::room(seg, floor, s, None)?.is_ok() {
            return Ok(());
        }
        // The ring is full: this message waits, if only for the spin.
        if self.stalled_seq != Some(s) {
            self.stalled_seq = Some(s);
            self.stalls += 1;
            if let Some(f) = &self.on_stall {
                f();
            }
        }
        seg.check_layout()?;
        // The position every reader must reach for `s` to be written, and
        // the one the writer would rather wait for (never beyond `s`, which
        // every reader reaches once it has read all that is published).
        let exact = (s + 1).saturating_sub(seg.slots);
        let want = (exact + Self::hysteresis(seg.slots)).min(s);
        // A reader busy on another core frees slots within microseconds:
        // spin a little before asking the kernel for anything.
        for _ in 0..WRITER_SPIN_ROUNDS {
            for _ in 0..WRITER_SPIN_PAUSES {
                std::hint::spin_loop();
            }
            if Self::slowest(seg, s, None)?.is_none_or(|(p, _)| p >= want) {
                break;
            }
        }
        if Self::room(seg, floor, s, None)?.is_ok() {
            return Ok(());
        }
        let t0 = Instant::now();
        let h = seg.header();
        let (needs, waiting, space) = (&h.writer_needs, &h.writer_waiting, &h.space);
        let timed_out = std::cell::Cell::new(false);
        let r = loop {
            // Look for readers that died without waking this writer only
            // after a sleep ran out, not after every wake-up: each look is a
            // system call per registered reader.
            let reap = timed_out.get().then_some(&mut *dead);
            let check = || match Self::room(seg, floor, s, reap) {
                Err(e) => Some(Err(e)),
                Ok(Ok(())) => Some(Ok(())),
                Ok(Err((pos, pid))) => {
                    let waited = t0.elapsed();
                    (waited >= timeout).then(|| {
                        Err(ShmError::Timeout {
                            name: seg.name.clone(),
                            waited_ms: waited.as_millis() as u64,
                            pid,
                            pos,
                        })
                    })
                }
            };
            // Sleep until a reader reaches `want`, or 1 ms to look for dead
            // ones.
            let sleep = |seen| {
                let r = futex_wait(space, seen, REAP_PAUSE);
                timed_out.set(r == Err(rustix::io::Errno::TIMEDOUT));
            };
            if let Some(r) = protocol::writer_wait_round(needs, waiting, space, want, check, sleep)
            {
                break r;
            }
        };
        protocol::writer_wait_end(waiting);
        r
    }

    /// How many slots past the one it needs a blocked writer waits for: a
    /// quarter of the ring, at least one.
    fn hysteresis(slots: u64) -> u64 {
        (slots / 4).max(1)
    }

    /// Whether message `s` may be written now (updating the cached floor);
    /// if not, the position and PID of what holds it back (PID 0: the first
    /// reader, not yet come).
    fn room(
        seg: &Segment,
        floor: &mut Floor,
        s: u64,
        reap: Option<&mut DeadReaders>,
    ) -> Result<std::result::Result<(), (u64, u32)>> {
        let m = Self::slowest(seg, s, reap)?;
        floor.had_reader |= m.is_some();
        let need = match m {
            Some((p, _)) => p,
            None if floor.had_reader => s,
            None => floor.min_pos,
        };
        // need <= s (checked in `slowest`), so this cannot overflow.
        Ok(if s < need + seg.slots {
            floor.min_pos = need;
            Ok(())
        } else {
            Err(m.unwrap_or((need, 0)))
        })
    }

    /// Copy `bytes` into the next slot and publish it; returns its sequence
    /// number. Under [`Policy::Overwrite`] it never waits; under
    /// [`Policy::Block`] it may wait for the slowest reader.
    pub fn publish(&mut self, bytes: &[u8]) -> Result<u64> {
        let mut loan = self.loan(bytes.len())?;
        loan.copy_in(bytes);
        let s = loan.commit();
        self.check()?;
        Ok(s)
    }

    /// An error if the segment was truncated under this writer (invariant
    /// 7): then what was committed since went nowhere. One relaxed load.
    pub fn check(&self) -> Result<()> {
        if self.seg.truncated() {
            return Err(self.seg.truncated_err());
        }
        Ok(())
    }

    /// Borrow the next slot to write a message of `len` bytes in place
    /// (zero-copy); nothing is visible to readers until [`Loan::commit`].
    /// On a full [`Policy::Block`] ring it waits up to the block timeout
    /// ([`Self::set_block_timeout`]).
    pub fn loan(&mut self, len: usize) -> Result<Loan<'_>> {
        self.loan_within(len, self.block_timeout)
    }

    /// [`Self::loan`] waiting at most `timeout` for room on a full
    /// [`Policy::Block`] ring (then [`ShmError::Timeout`]), whatever the
    /// block timeout: the wait is chosen per call.
    #[inline]
    pub fn loan_within(&mut self, len: usize, timeout: Duration) -> Result<Loan<'_>> {
        let s = self.claim(len, timeout)?;
        // The slot is marked being written here, in a function small
        // enough to be inlined, so that the caller's writes follow at
        // once: a reader polling for this message watches the stamp's
        // line, and each store made after it has looked must fetch the
        // line back.
        let (sh, data) = self.seg.slot(s);
        protocol::begin_write(&sh.stamp, s);
        Ok(Loan { w: self, data, len })
    }

    /// What must hold before a message of `len` bytes is written into the
    /// next slot: its size within the channel's, the segment intact, and
    /// (under [`Policy::Block`]) room, waited for up to `timeout`. Returns
    /// the message's sequence number; the slot is not touched.
    fn claim(&mut self, len: usize, timeout: Duration) -> Result<u64> {
        if len > self.seg.max_message {
            return Err(ShmError::TooLarge {
                name: self.seg.name.clone(),
                len,
                max: self.seg.max_message,
            });
        }
        if self.seg.truncated() {
            return Err(self.seg.truncated_err());
        }
        let s = self.seq;
        if self.seg.policy == Policy::Block {
            // Readers cannot read what is not published, so a writer that
            // holds deferred messages publishes them before it waits for
            // readers to make room; otherwise both would wait for ever.
            if self.published < s
                && s >= self.floor.min_pos + self.seg.slots
                && Self::room(&self.seg, &mut self.floor, s, None)?.is_err()
            {
                self.flush();
            }
            self.wait_for_space(s, timeout)?;
        }
        Ok(s)
    }
}

impl Writer {
    /// Publish every message committed with [`Loan::commit_deferred`] and
    /// not yet published: one store of `next_seq` and at most one wake-up
    /// for all of them. Does nothing when none wait.
    pub fn flush(&mut self) {
        let s = self.seq;
        if self.published < s {
            self.publish_seq(s - 1);
            if notify_readers(&self.seg) {
                self.woke_readers(s - 1);
            }
            self.published = s;
        }
    }

    /// How many committed messages wait for [`Self::flush`].
    pub fn deferred(&self) -> u64 {
        self.seq - self.published
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // What was committed is published, as if each commit had been
        // immediate.
        self.flush();
        let _ = self.seg.header().writer_pid.compare_exchange(
            self.pid,
            0,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
    }
}

/// A slot being written in place.
pub struct Loan<'a> {
    w: &'a mut Writer,
    data: *mut u8,
    len: usize,
}

impl Loan<'_> {
    /// Shorten the message to its first `len` bytes, as `Vec::truncate`
    /// does (nothing when it is no longer): for a writer that loaned room
    /// for the most it could write, an encoder's bound, and wrote less.
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Copy `bytes` into the start of the loan, with streaming stores when
    /// it is large ([`crate::copy_into_slot`]): how a message made
    /// elsewhere is best copied into its slot. Panics, as
    /// `copy_from_slice` does, when the loan is shorter.
    #[inline]
    pub fn copy_in(&mut self, bytes: &[u8]) {
        crate::copy_into_slot(self, bytes);
    }

    /// Publish the message; returns its sequence number.
    pub fn commit(self) -> u64 {
        let s = self.w.seq;
        let seg = &self.w.seg;
        let (sh, _) = seg.slot(s);
        protocol::end_write(&sh.stamp, &sh.len, s, self.len as u64);
        self.w.publish_seq(s);
        if notify_readers(seg) {
            self.w.woke_readers(s);
        }
        self.w.seq = s + 1;
        self.w.published = s + 1;
        std::mem::forget(self);
        s
    }

    /// Complete the message but leave `next_seq` and the wake-up of
    /// sleeping readers to [`Writer::flush`], a later [`Loan::commit`], or
    /// the writer's drop, which publish all deferred messages at once: a
    /// batch then costs one store of `next_seq` (a full barrier) and at most
    /// one wake-up instead of one each. The message is complete, so a
    /// reader that polls the ring may read it before then; one that sleeps
    /// is woken by the flush. Under [`Policy::Overwrite`] it is [`Loan::commit`]: a reader
    /// lapped by unpublished messages could not tell them from corruption.
    /// Returns the message's sequence number.
    pub fn commit_deferred(self) -> u64 {
        if self.w.seg.policy == Policy::Overwrite {
            return self.commit();
        }
        let s = self.w.seq;
        let (sh, _) = self.w.seg.slot(s);
        protocol::end_write(&sh.stamp, &sh.len, s, self.len as u64);
        self.w.seq = s + 1;
        std::mem::forget(self);
        s
    }
}

impl Drop for Loan<'_> {
    /// A loan dropped without commit publishes nothing; the slot keeps its
    /// odd stamp until the next message overwrites it.
    fn drop(&mut self) {}
}

impl std::ops::Deref for Loan<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: data..data+len lies in this writer's slot (len <=
        // max_message <= stride - SLOT_HEADER, invariant 1); only this
        // writer writes it (invariant 2), and readers only read it under
        // the stamp check (invariant 3).
        unsafe { std::slice::from_raw_parts(self.data, self.len) }
    }
}

impl std::ops::DerefMut for Loan<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref (invariants 1 to 3), and the loan borrows the
        // writer mutably, so no other reference of this process aliases it.
        unsafe { std::slice::from_raw_parts_mut(self.data, self.len) }
    }
}
