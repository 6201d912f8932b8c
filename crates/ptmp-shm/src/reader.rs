//! Readers of a channel and the views they hand out: attaching, the reader
//! registry, the seqlock read, overruns and resynchronisation.

mod registry;
mod wait;

pub use wait::{wait_any, MAX_WAIT_CHANNELS};

pub use registry::{reader_ident, reader_lock, Durable, DEFAULT_READER_GRACE, MAX_IDENT_LEN};

use crate::error::{Result, ShmError};
use crate::layout::{Policy, MAX_SEQ};
use crate::name::ChannelName;
use crate::protocol::{self, Read};
use crate::segment::{pid_alive, Access, Segment};
use crate::wait::{futex_wake, Deadline};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where a new reader starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartAt {
    /// The newest message already published, if any (then everything after).
    Newest,
    /// Only messages published after attaching.
    Next,
    /// The oldest message still in the ring.
    Oldest,
}

/// What a receive delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// Sequence number of the message.
    pub seq: u64,
    /// Messages skipped since the previous receive because the writer had
    /// overwritten them before this reader got to them.
    pub lost: u64,
}

/// One reader of a channel. Readers share nothing with each other; each
/// keeps its own position.
pub struct Reader {
    att: Arc<Attachment>,
    pos: u64,
    lost_total: u64,
    spin: u32,
    /// Highest `next_seq` seen: it must never go back.
    seen_next: u64,
}

/// A reader's hold on a channel: the mapping and its registry entry. The
/// reader and its [`OwnedView`]s share it, so the segment stays mapped and
/// the entry stays this reader's until the last of them is dropped.
pub(crate) struct Attachment {
    seg: Segment,
    /// This reader's registry entry, if it got one.
    entry: Option<usize>,
    /// Under [`Policy::Block`], the highest position released so far,
    /// which the registry entry may not show yet (see `release_below`).
    asked: AtomicU64,
    /// How far the registry entry may lag behind `asked` while the writer
    /// does not wait.
    every: u64,
    /// A reader with an identity: its entry moves only when it commits,
    /// not as it reads.
    durable: bool,
}

/// Most messages a [`Policy::Block`] reader releases before it tells the
/// writer (a sixteenth of the ring, if that is fewer).
const RELEASE_EVERY: u64 = 64;

impl Attachment {
    fn new(seg: Segment, entry: Option<usize>, pos: u64, durable: bool) -> Attachment {
        let every = (seg.slots / 16).clamp(1, RELEASE_EVERY);
        Attachment {
            seg,
            entry,
            asked: AtomicU64::new(pos),
            every,
            durable,
        }
    }

    /// A read, a view's drop or an overrun moved the reader to `pos`: tell
    /// the writer, unless the reader is durable (its entry shows what it
    /// committed, see [`Self::advance`]).
    #[inline]
    fn release_below(&self, pos: u64) {
        if !self.durable {
            self.advance(pos);
        }
    }

    /// Tell the writer this reader no longer needs messages below `pos`.
    ///
    /// Under [`Policy::Block`] the registry entry is written (a locked
    /// instruction, and a cache line the writer reads) only every `every`
    /// messages, or at once while the writer waits: a writer that does not
    /// wait has room anyway, since a lag of fewer than `every` is less than
    /// a ring. A stale entry only makes the writer more careful
    /// (invariant 5); [`Self::flush`] brings it up to date before the
    /// reader sleeps.
    #[inline]
    fn advance(&self, pos: u64) {
        let Some(i) = self.entry else { return };
        let e = self.seg.entry(i);
        if self.seg.policy == Policy::Block {
            let to = self.asked.fetch_max(pos, Ordering::Relaxed).max(pos);
            let h = self.seg.header();
            protocol::release_lazily(
                &e.pos,
                &h.writer_waiting,
                &h.writer_needs,
                &h.space,
                to,
                self.every,
                |w| futex_wake(w, 1),
            );
        } else {
            e.pos.store(pos, Ordering::Relaxed);
        }
    }

    /// Show the writer everything released so far (before sleeping).
    pub(crate) fn flush(&self) {
        let Some(i) = self.entry else { return };
        if self.seg.policy != Policy::Block {
            return;
        }
        let to = self.asked.load(Ordering::Relaxed);
        let e = self.seg.entry(i);
        if e.pos.load(Ordering::Relaxed) < to {
            let h = self.seg.header();
            protocol::release(
                &e.pos,
                &h.writer_waiting,
                &h.writer_needs,
                &h.space,
                to,
                |w| futex_wake(w, 1),
            );
        }
    }
}

/// Set by [`keep_durable_places`]: durable readers closed from then on
/// leave their entries as a crash would.
static KEEP_PLACES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// From now on, a durable reader of this process that closes keeps its
/// place in the ring as if its process had died: its entry keeps this
/// process's PID, so the writer goes on keeping what it has not committed
/// until the process is gone and then for the entry's grace time, and a
/// successor under the same identity resumes there. For a process told to
/// stop by someone other than its owner, which will be started again:
/// without it, what the writer sends between this process's exit and its
/// successor's start may be overwritten before the successor reads it.
pub fn keep_durable_places() {
    KEEP_PLACES.store(true, Ordering::SeqCst);
}

impl Drop for Attachment {
    fn drop(&mut self) {
        if let Some(i) = self.entry {
            // A durable reader leaving keeps its identity and shows all it
            // committed: a later reader of that identity resumes there.
            // The writer no longer waits for it (the PID goes to 0), unless
            // the process keeps its places (`keep_durable_places`).
            if self.durable {
                self.flush();
                if KEEP_PLACES.load(Ordering::SeqCst) {
                    return;
                }
            }
            let _ = self.seg.entry(i).pid.compare_exchange(
                std::process::id(),
                0,
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
            let h = self.seg.header();
            protocol::leave(&h.writer_waiting, &h.space, |w| futex_wake(w, 1));
        }
    }
}

/// Default busy-poll iterations before a reader sleeps on the futex (a few
/// microseconds): a message that comes within them costs no system call on
/// either side.
pub const DEFAULT_SPIN: u32 = 2000;

/// Outcome of one attempt at reading message `seq`.
enum Try {
    Got(usize),
    NotYet,
    /// The slot holds a later message: this stamp.
    Overrun(u64),
}

/// How long the `Option` receives pause on a broken segment when they
/// have no timeout to wait out.
const FAILED_PAUSE: Duration = Duration::from_millis(100);

/// Overruns one receive handles before it returns empty-handed.
const MAX_RESYNCS: usize = 64;

impl Reader {
    /// Attach to channel `name`.
    pub fn attach(name: &str, start: StartAt) -> Result<Reader> {
        Self::attach_with(name, start, Access::Private)
    }

    /// Open channel `name`'s segment, check its layout, and read its
    /// `next_seq`, refusing one beyond any possible message number.
    pub(super) fn open_segment(name: &str, access: Access) -> Result<(Segment, u64)> {
        let path = ChannelName::new(name)?.path();
        let seg = Segment::open(name, path, access)?;
        seg.check_layout()?;
        let next = seg.header().next_seq.load(Ordering::SeqCst);
        if next > MAX_SEQ {
            return Err(seg.corrupt(
                "next_seq",
                format!("{next} is beyond any possible message number ({MAX_SEQ})"),
            ));
        }
        Ok((seg, next))
    }

    /// As [`Self::attach`], with the given [`Access`].
    pub fn attach_with(name: &str, start: StartAt, access: Access) -> Result<Reader> {
        let (seg, next) = Reader::open_segment(name, access)?;
        let pos = match start {
            StartAt::Newest => next.saturating_sub(1),
            StartAt::Next => next,
            StartAt::Oldest => next.saturating_sub(seg.slots),
        };
        let entry = Self::register(&seg, pos);
        if entry.is_none() && seg.policy == Policy::Block {
            return Err(ShmError::RegistryFull {
                name: name.into(),
                entries: crate::layout::MAX_READERS,
            });
        }
        Ok(Reader {
            att: Arc::new(Attachment::new(seg, entry, pos, false)),
            pos,
            lost_total: 0,
            spin: DEFAULT_SPIN,
            seen_next: next,
        })
    }

    /// Whether this reader attached under an identity
    /// ([`Self::attach_durable`]).
    pub fn is_durable(&self) -> bool {
        self.att.durable
    }

    /// A durable reader: everything returned so far has been handed on, so
    /// a successor under the same identity need not see it again and the
    /// writer may overwrite it. Cheap (no system call; the registry entry
    /// is written every few messages, or at once while the writer waits,
    /// and in full before the reader sleeps): a reader killed just after a
    /// commit may show a position a few messages earlier, which its
    /// successor then receives again. Does nothing for a reader without
    /// identity, whose entry follows its reads.
    #[inline]
    pub fn commit(&self) {
        if self.att.durable {
            self.att.advance(self.pos);
        }
    }

    /// [`Self::commit`], shown in the registry entry at once (one locked
    /// instruction, no system call): a successor resumes exactly after the
    /// last message returned. For a sink that wrote what it received
    /// somewhere durable and must not write it twice.
    pub fn commit_now(&self) {
        if self.att.durable {
            self.att.advance(self.pos);
            self.att.flush();
        }
    }

    /// Show the writer every message released so far (before sleeping).
    pub(crate) fn flush_release(&self) {
        self.att.flush();
    }

    /// The mapped segment.
    #[inline]
    pub(crate) fn seg(&self) -> &Segment {
        &self.att.seg
    }

    /// Busy-poll iterations before sleeping.
    pub(crate) fn spin(&self) -> u32 {
        self.spin
    }

    /// The channel's name.
    pub fn name(&self) -> &str {
        &self.seg().name
    }

    /// Busy-poll this many iterations before sleeping on the futex;
    /// `u32::MAX` never sleeps (lowest latency, one core kept busy), 0 sleeps
    /// at once (no CPU while idle).
    pub fn set_spin(&mut self, iterations: u32) {
        self.spin = iterations;
    }

    /// The channel's overflow policy.
    pub fn policy(&self) -> Policy {
        self.seg().policy
    }

    /// The address and length of this reader's mapping of the channel, so
    /// a binding can show that a view points into shared memory (zero-copy).
    pub fn mapping(&self) -> (usize, usize) {
        (self.seg().map.as_ptr() as usize, self.seg().map.len())
    }

    /// Whether a receive would return at once (a message, or an overrun to
    /// report).
    pub fn has_data(&self) -> bool {
        self.seg().header().next_seq.load(Ordering::Acquire) > self.pos
    }

    /// Sequence number of the next message this reader will return.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Messages lost to overruns since attaching.
    pub fn lost(&self) -> u64 {
        self.lost_total
    }

    /// Number of messages published on the channel so far.
    pub fn published(&self) -> u64 {
        self.seg().header().next_seq.load(Ordering::SeqCst)
    }

    /// PID of the channel's writer, if one is attached and alive.
    pub fn writer(&self) -> Option<u32> {
        let pid = self.seg().header().writer_pid.load(Ordering::SeqCst);
        pid_alive(pid).then_some(pid)
    }

    /// Check message `seq`'s slot and, if it is complete, hand its bytes to
    /// `f`, then confirm the stamp did not move meanwhile.
    fn try_read<R>(&self, seq: u64, f: impl FnOnce(&[u8]) -> R) -> (Try, Option<R>) {
        let (sh, data) = self.seg().slot(seq);
        let max = self.seg().max_message;
        let read = |n: u64| {
            let len = (n as usize).min(max);
            // SAFETY: the bytes lie inside the slot (len <= max_message,
            // invariant 1). The writer (another process, or another thread
            // of this one) may be rewriting them concurrently: a data race
            // under Rust's model, contained as invariant 3 says; the stamp
            // check after `f` rejects whatever was read in that case.
            let bytes = unsafe { std::slice::from_raw_parts(data as *const u8, len) };
            if let Some(last) = bytes.last() {
                // Touch the message's last page before anything is handed
                // out: if it has left the file, the mapping is marked
                // truncated now (invariant 7) and the check below refuses the
                // message, even when `f` (a view) reads nothing yet. One load.
                // SAFETY: `last` is a valid reference into the slot (above,
                // invariant 1); a page beyond the file is guarded
                // (invariant 7).
                unsafe { std::ptr::read_volatile(last) };
            }
            (len, f(bytes))
        };
        match protocol::read(&sh.stamp, &sh.len, seq, read) {
            Read::NotYet => (Try::NotYet, None),
            Read::Overrun(s) => (Try::Overrun(s), None),
            // Some of what was read may be the zeros put over a page that
            // left the file (invariant 7): not a message.
            Read::Got(_) if self.seg().truncated() => (Try::NotYet, None),
            Read::Got((len, r)) => (Try::Got(len), Some(r)),
        }
    }

    /// Load `next_seq` and check it against invariant 4: it never goes
    /// back, and it stays below [`MAX_SEQ`].
    fn load_next(&mut self) -> Result<u64> {
        let n = self.seg().header().next_seq.load(Ordering::SeqCst);
        if n > MAX_SEQ {
            return Err(self.seg().corrupt(
                "next_seq",
                format!("{n} is beyond any possible message number ({MAX_SEQ})"),
            ));
        }
        if n < self.seen_next {
            return Err(self.seg().corrupt(
                "next_seq",
                format!("went back from {} to {n}", self.seen_next),
            ));
        }
        self.seen_next = n;
        Ok(n)
    }

    /// Whether `stamp` can be in the slot of message `seq`: 0 (never
    /// written) or the stamp of a message that lives in that slot
    /// (invariant 3).
    fn stamp_fits(&self, seq: u64, stamp: u64) -> bool {
        let m = self.seg().slots - 1;
        stamp == 0 || ((stamp - 1) / 2) & m == seq & m
    }

    fn bad_stamp(&self, seq: u64, stamp: u64, why: &str) -> ShmError {
        self.seg().corrupt(
            format!("slot {} stamp", seq & (self.seg().slots - 1)),
            format!(
                "{stamp} {why} (reading message {seq}, {} published)",
                self.seen_next
            ),
        )
    }

    /// Slow path after [`Try::NotYet`]: message `seq` is not complete in its
    /// slot, which is only possible while `next_seq <= seq` (invariant 4).
    fn check_not_yet(&mut self, seq: u64) -> Result<Try> {
        if self.seg().truncated() {
            return Err(self.seg().truncated_err());
        }
        let n = self.load_next()?;
        let stamp = self.seg().slot(seq).0.stamp.load(Ordering::Acquire);
        if !self.stamp_fits(seq, stamp) {
            return Err(self.bad_stamp(seq, stamp, "belongs to no message of this slot"));
        }
        let want = protocol::done_stamp(seq);
        if stamp > want {
            return Ok(Try::Overrun(stamp));
        }
        if stamp < want && seq < n {
            return Err(self.bad_stamp(
                seq,
                stamp,
                "is older than a message already published in this slot",
            ));
        }
        Ok(Try::NotYet)
    }

    /// Skip ahead after an overrun, once the stamp found proves to be a real
    /// later message of the slot: to half a ring behind the writer. Going
    /// to the oldest slot instead would be overwritten again at once by a
    /// writer that is faster than this reader, and the reader would spend
    /// its time resynchronising instead of reading.
    fn resync(&mut self, stamp: u64) -> Result<()> {
        if self.seg().truncated() {
            return Err(self.seg().truncated_err());
        }
        let seq = self.pos;
        let next = self.load_next()?;
        if stamp <= protocol::done_stamp(seq) {
            return Err(self.bad_stamp(seq, stamp, "went back while being read"));
        }
        if !self.stamp_fits(seq, stamp) {
            return Err(self.bad_stamp(seq, stamp, "belongs to no message of this slot"));
        }
        if (stamp - 1) / 2 > next {
            return Err(self.bad_stamp(seq, stamp, "names a message beyond next_seq"));
        }
        let to = next.saturating_sub(self.seg().slots / 2).max(seq + 1);
        self.lost_total += to - seq;
        self.pos = to;
        self.att.release_below(self.pos);
        Ok(())
    }

    /// Copy the next message into `buf` without waiting. `Ok(None)` when
    /// there is nothing new; an error if the segment is corrupt.
    pub fn try_recv(&mut self, buf: &mut Vec<u8>) -> Result<Option<Received>> {
        self.recv_once(buf, false)
    }

    /// One look at the ring for [`Self::try_recv`] and [`Self::recv`]. A
    /// `lazy` look that finds the next message not there yet returns
    /// without checking the slot against `next_seq`: a receive about to
    /// wait makes that check after its wait (a corrupt slot then shows at
    /// once), and leaving `next_seq` alone here keeps the reader off the
    /// header line the writer stores for every message.
    fn recv_once(&mut self, buf: &mut Vec<u8>, lazy: bool) -> Result<Option<Received>> {
        let lost0 = self.lost_total;
        // Each round either delivers, stops, or moves `pos` forward after a
        // checked overrun; the bound keeps an adversary who rewrites the ring
        // continuously from holding the caller here.
        for _ in 0..MAX_RESYNCS {
            let (t, _) = self.try_read(self.pos, |b| {
                buf.clear();
                buf.extend_from_slice(b);
            });
            match t {
                Try::Got(_) => {
                    let seq = self.pos;
                    self.pos += 1;
                    self.att.release_below(self.pos);
                    return Ok(Some(Received {
                        seq,
                        lost: self.lost_total - lost0,
                    }));
                }
                Try::NotYet if lazy => return Ok(None),
                Try::NotYet => match self.check_not_yet(self.pos)? {
                    Try::Overrun(s) => self.resync(s)?,
                    _ => return Ok(None),
                },
                Try::Overrun(s) => self.resync(s)?,
            }
        }
        Ok(None)
    }

    /// As [`Self::try_recv`], but `None` also when the segment is corrupt
    /// (then every later receive is `None` too; [`Self::try_recv`] says why).
    pub fn try_recv_into(&mut self, buf: &mut Vec<u8>) -> Option<Received> {
        self.try_recv(buf).ok().flatten()
    }

    /// Copy the next message into `buf`, waiting up to `timeout` (`None`:
    /// forever). `Ok(None)` on timeout; an error if the segment is corrupt.
    pub fn recv(
        &mut self,
        buf: &mut Vec<u8>,
        timeout: Option<Duration>,
    ) -> Result<Option<Received>> {
        let mut deadline = Deadline::new(timeout);
        let mut empty = 0u32;
        loop {
            // Only the first look of a receive that may wait is lazy:
            // every look after a wait checks, and so does a zero timeout's.
            let lazy = empty == 0 && !timeout.is_some_and(|t| t.is_zero());
            if let Some(r) = self.recv_once(buf, lazy)? {
                return Ok(Some(r));
            }
            // Woken with nothing to read more than once: whatever the ring
            // says, the deadline still holds.
            empty += 1;
            // A zero timeout only looks: no spin, no clock read, and no
            // announced sleep that would cost the writer a wake-up; but
            // what it has read is shown, as before a sleep.
            if timeout.is_some_and(|t| t.is_zero()) {
                self.att.flush();
                return Ok(None);
            }
            if empty > 1 && deadline.instant().is_some_and(|d| Instant::now() >= d) {
                return Ok(None);
            }
            if !self.wait(deadline.instant())? {
                return self.try_recv(buf);
            }
        }
    }

    /// As [`Self::recv`], but `None` also when the segment is corrupt (after
    /// the timeout, or 100 ms without one, so a caller that loops on `None`
    /// does not spin; [`Self::recv`] says what is wrong).
    pub fn recv_into(&mut self, buf: &mut Vec<u8>, timeout: Option<Duration>) -> Option<Received> {
        match self.recv(buf, timeout) {
            Ok(r) => r,
            Err(_) => {
                std::thread::sleep(timeout.unwrap_or(FAILED_PAUSE));
                None
            }
        }
    }

    /// Look at the next message in place, without copying, waiting up to
    /// `timeout`. The view must be checked with [`View::valid`] after use:
    /// if the writer overwrote the slot meanwhile, what was read is void.
    /// `Ok(None)` on timeout; an error if the segment is corrupt.
    #[inline(always)]
    pub fn view_checked(&mut self, timeout: Option<Duration>) -> Result<Option<View<'_>>> {
        // The common case, the next message complete at the first look,
        // is inlined into the caller: there the view stays in registers.
        // Returned from a call, it went through the stack and the caller
        // read it back in pieces of other widths than it was written in,
        // waiting each time for the stores to land (`perf annotate`).
        let first = match self.try_read(self.pos, |_| ()).0 {
            Try::Got(len) => return Ok(Some(self.take_view(len, 0))),
            t => t,
        };
        // Only numbers come back from the call, for the same reason.
        Ok(self
            .wait_complete(timeout, first)?
            .map(|(len, lost)| self.take_view(len, lost)))
    }

    /// The view of message `self.pos`, read complete with `len` bytes,
    /// `lost` lost just before it; moves past it.
    #[inline(always)]
    fn take_view(&mut self, len: usize, lost: u64) -> View<'_> {
        let seq = self.pos;
        self.pos += 1;
        let (_, data) = self.seg().slot(seq);
        View {
            att: &self.att,
            data,
            len,
            received: Received { seq, lost },
            _r: std::marker::PhantomData,
        }
    }

    /// [`Self::view_checked`] after its first look found `first`, not a
    /// complete message: waits for message `self.pos` to be complete, or
    /// the next one after an overrun; its length and how many were lost
    /// before it. The first round goes on from `first` rather than
    /// looking again: a reader polling faster than the writer fills its
    /// slots takes the slot's line away from the writer at every look.
    #[inline(never)]
    fn wait_complete(
        &mut self,
        timeout: Option<Duration>,
        first: Try,
    ) -> Result<Option<(usize, u64)>> {
        let mut deadline = Deadline::new(timeout);
        let lost0 = self.lost_total;
        let mut rounds = 0usize;
        let mut last_look = false;
        let mut first = Some(first);
        loop {
            rounds += 1;
            let t = match first.take() {
                Some(t) => t,
                None => self.try_read(self.pos, |_| ()).0,
            };
            let t = match t {
                // The first look is lazy, as in `recv`.
                Try::NotYet if rounds == 1 && !timeout.is_some_and(|t| t.is_zero()) => Try::NotYet,
                Try::NotYet => self.check_not_yet(self.pos)?,
                t => t,
            };
            match t {
                Try::Got(len) => return Ok(Some((len, self.lost_total - lost0))),
                Try::Overrun(s) => {
                    self.resync(s)?;
                    if last_look || rounds.is_multiple_of(MAX_RESYNCS) {
                        // Bounded, as in try_recv; then honour the deadline.
                        if last_look || deadline.instant().is_some_and(|d| Instant::now() >= d) {
                            return Ok(None);
                        }
                    }
                }
                Try::NotYet => {
                    // A zero timeout only looks, as in `recv` (and shows
                    // what it has read).
                    if timeout.is_some_and(|t| t.is_zero()) {
                        self.att.flush();
                        return Ok(None);
                    }
                    if last_look
                        || (rounds > 1 && deadline.instant().is_some_and(|d| Instant::now() >= d))
                    {
                        return Ok(None);
                    }
                    if !self.wait(deadline.instant())? {
                        // One last look after the deadline.
                        last_look = true;
                    }
                }
            }
        }
    }

    /// As [`Self::view_checked`], but `None` also when the segment is
    /// corrupt (then after the timeout, as [`Self::recv_into`]).
    pub fn view(&mut self, timeout: Option<Duration>) -> Option<View<'_>> {
        match self.view_checked(timeout) {
            Ok(v) => v,
            Err(_) => {
                std::thread::sleep(timeout.unwrap_or(FAILED_PAUSE));
                None
            }
        }
    }

    /// Copy message `seq` from the history into `buf`. `Ok(false)` if it is
    /// not published yet; an error if it has already left the ring.
    pub fn read_at(&self, seq: u64, buf: &mut Vec<u8>) -> std::result::Result<bool, u64> {
        if seq > MAX_SEQ {
            // No channel gets there (its stamp would not fit in 64 bits).
            return Ok(false);
        }
        let (t, _) = self.try_read(seq, |b| {
            buf.clear();
            buf.extend_from_slice(b);
        });
        match t {
            Try::Got(_) => Ok(true),
            Try::NotYet if seq >= self.published() => Ok(false),
            // Overwritten (or a dead writer's unfinished slot): report the
            // oldest sequence number that is still readable.
            _ => Err(self.published().saturating_sub(self.seg().slots - 1)),
        }
    }
}

/// A message read in place. Valid only if [`View::valid`] says so after the
/// bytes were used.
pub struct View<'r> {
    att: &'r Arc<Attachment>,
    data: *mut u8,
    len: usize,
    /// Which message this is, and how many were lost just before it.
    pub received: Received,
    _r: std::marker::PhantomData<&'r Reader>,
}

impl Drop for View<'_> {
    /// Under Policy::Block the slot stays reserved for this reader until
    /// the view is dropped.
    fn drop(&mut self) {
        self.att.release_below(self.received.seq + 1);
    }
}

impl View<'_> {
    /// The message bytes, in the shared segment.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the bytes lie inside the slot (invariant 1, as in
        // Reader::try_read) and the borrow of the reader keeps the mapping
        // alive. The writer may rewrite them meanwhile: a data race under
        // Rust's model, contained as invariant 3 says; `valid` detects it,
        // and a caller must check it after using the bytes.
        unsafe { std::slice::from_raw_parts(self.data as *const u8, self.len) }
    }

    /// True if the writer has not touched the slot since the view was taken:
    /// everything read through [`Self::bytes`] so far was the whole message.
    pub fn valid(&self) -> bool {
        still_valid(self.att, self.received.seq)
    }

    /// Keep this view past the borrow of its reader: the view then holds
    /// the mapping itself (see [`OwnedView`]).
    pub fn into_owned(self) -> OwnedView {
        let v = OwnedView {
            att: Arc::clone(self.att),
            data: self.data,
            len: self.len,
            received: self.received,
        };
        // The owned view takes over the release of the slot.
        std::mem::forget(self);
        v
    }
}

/// Whether message `seq` is still in its slot, and the mapping intact.
fn still_valid(att: &Attachment, seq: u64) -> bool {
    let (sh, _) = att.seg.slot(seq);
    protocol::still(&sh.stamp, seq).is_ok() && !att.seg.truncated()
}

/// A message read in place that owns its hold on the segment: it keeps the
/// mapping (and the reader's registry entry) alive by itself, so it may
/// outlive the borrow of its [`Reader`], and even the reader. For bindings
/// that cannot express a borrow, such as Python's.
///
/// As with [`View`], check [`OwnedView::valid`] after using the bytes.
/// Under [`Policy::Block`] the slot stays reserved for this reader until
/// the view is dropped, as long as the reader does not read on meanwhile:
/// a reader that moves past the view releases the slot, and the view's
/// [`OwnedView::valid`] then turns false once the writer reuses it.
pub struct OwnedView {
    att: Arc<Attachment>,
    data: *mut u8,
    len: usize,
    /// Which message this is, and how many were lost just before it.
    pub received: Received,
}

impl OwnedView {
    /// The message bytes, in the shared segment.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the bytes lie inside the slot (invariant 1), and the
        // mapping lives as long as `att`, which this view holds. The writer
        // may rewrite them meanwhile: a data race under Rust's model,
        // contained as invariant 3 says; `valid` detects it, and a caller
        // must check it after using the bytes.
        unsafe { std::slice::from_raw_parts(self.data as *const u8, self.len) }
    }

    /// True if the writer has not touched the slot since the view was taken:
    /// everything read through [`Self::bytes`] so far was the whole message.
    pub fn valid(&self) -> bool {
        still_valid(&self.att, self.received.seq)
    }
}

impl Drop for OwnedView {
    /// Release the slot, unless the reader has already read past it (a
    /// registry position never goes back).
    fn drop(&mut self) {
        // `release_below` keeps the released position from going back.
        self.att.release_below(self.received.seq + 1);
    }
}
