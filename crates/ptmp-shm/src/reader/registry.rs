//! The reader registry: durable readers' identities, their tokens, and
//! claiming, taking over and giving back registry entries (invariant 5).

use super::{Attachment, Reader, StartAt, DEFAULT_SPIN};
use crate::error::{Result, ShmError};
use crate::layout::MAX_READERS;

use crate::protocol;
use crate::segment::{pid_alive, Access, Segment};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Longest reader identity, in bytes.
pub const MAX_IDENT_LEN: usize = 255;

/// How long a blocked writer keeps the registry entry of a dead reader
/// that has an identity, by default: half the writer's default block
/// timeout, so a writer left alone gives the entry up before it gives up
/// itself.
pub const DEFAULT_READER_GRACE: Duration = Duration::from_secs(5);

/// The 64-bit number a reader identity is recorded under in the registry
/// (FNV-1a of its bytes; never 0, which marks a reader without identity).
pub fn reader_ident(id: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h.max(1)
}

/// The 64-bit number a reader token is recorded under in the registry
/// (FNV-1a, kept apart from [`reader_ident`]'s by a prefix; never 0,
/// which marks an identity without token).
pub fn reader_lock(token: &str) -> u64 {
    reader_ident(&format!("ptmp reader token\0{token}"))
}

/// A durable reader's identity and how long a writer keeps its entry once
/// its process died (see [`Reader::attach_durable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Durable<'a> {
    /// A name stable across restarts, e.g. `graph/node/port`: 1 to
    /// [`MAX_IDENT_LEN`] bytes, no NUL.
    pub id: &'a str,
    /// How long a blocked writer keeps the entry of this reader after its
    /// process died, counted from when the writer first finds it dead
    /// while it needs room (at most `u32::MAX` ms).
    pub grace: Duration,
    /// A secret that binds the identity to its owner (a graph's run): the
    /// entry records it, and a later claimant of the identity without the
    /// same token is refused ([`ShmError::ReaderLocked`]), so it cannot take
    /// over (and move) a dead reader's position while the owner restarts.
    pub token: Option<&'a str>,
}

/// Why [`Reader::take_over`] took no entry.
pub(super) enum Taken {
    /// A live process holds the identity.
    Busy(u32),
    /// The identity's entry was claimed with another token.
    Locked,
    /// The entry kept changing hands.
    Moving,
}

impl Reader {
    /// Attach to channel `name` as a durable reader under `durable.id`.
    ///
    /// The registry entry of a durable reader shows the lowest message it
    /// has not yet committed ([`Self::commit`]: handed on), not the lowest
    /// it has read, so under [`Policy::Block`](crate::Policy::Block) the writer never overwrites
    /// what the reader read but has not committed. When the reader's
    /// process dies, a blocked writer keeps its entry (and waits) for
    /// `durable.grace`, then gives it up. A reader attaching later under
    /// the same identity takes the entry over and resumes at the first
    /// message not committed; if the entry had been given up and the writer
    /// has overwritten that message meanwhile, the first receive counts
    /// what was lost ([`Self::lost`]). With no entry of that identity the
    /// reader starts at `start`. A live reader already holding the identity
    /// is [`ShmError::ReaderBusy`]; an identity whose entry was claimed with
    /// a token ([`Durable::token`]) other than this reader's is
    /// [`ShmError::ReaderLocked`], whether its holder lives or not.
    ///
    /// A durable reader must commit at least every ring's worth of
    /// messages: the writer waits for what is not committed.
    pub fn attach_durable(
        name: &str,
        durable: Durable<'_>,
        start: StartAt,
        access: Access,
    ) -> Result<Reader> {
        let id = durable.id;
        if id.is_empty() || id.len() > MAX_IDENT_LEN || id.contains('\0') {
            return Err(ShmError::BadConfig {
                name: name.into(),
                reason: format!(
                    "reader identity {id:?} must be 1 to {MAX_IDENT_LEN} bytes without NUL"
                ),
            });
        }
        let (seg, next) = Reader::open_segment(name, access)?;
        let ident = reader_ident(id);
        let lock = durable.token.map_or(0, reader_lock);
        let grace = durable.grace.as_millis().min(u32::MAX as u128) as u32;
        let busy = |pid| ShmError::ReaderBusy {
            name: name.into(),
            ident: id.into(),
            pid,
        };
        let locked = || ShmError::ReaderLocked {
            name: name.into(),
            ident: id.into(),
        };
        let (entry, pos) = match Self::take_over(&seg, ident, lock, grace) {
            Ok(Some(taken)) => taken,
            Ok(None) => {
                let pos = match start {
                    StartAt::Newest => next.saturating_sub(1),
                    StartAt::Next => next,
                    StartAt::Oldest => next.saturating_sub(seg.slots),
                };
                let Some(i) = Self::register_durable(&seg, pos, ident, lock, grace) else {
                    return Err(ShmError::RegistryFull {
                        name: name.into(),
                        entries: crate::layout::MAX_READERS,
                    });
                };
                // Two readers of one identity attaching at once both got a
                // fresh entry: each looks for the other after showing its
                // own, so at least one sees the other, and whoever sees one
                // backs out.
                if let Some(pid) = Self::holder(&seg, ident, Some(i)) {
                    Self::unregister(&seg, i);
                    return Err(busy(pid));
                }
                (i, pos)
            }
            Err(Taken::Busy(pid)) => return Err(busy(pid)),
            Err(Taken::Locked) => return Err(locked()),
            Err(Taken::Moving) => {
                return Err(seg.corrupt(
                    "reader registry",
                    format!("the entry of reader identity {id:?} keeps changing hands"),
                ))
            }
        };
        if pos > next {
            Self::unregister(&seg, entry);
            return Err(seg.corrupt(
                format!("reader registry entry {entry} position"),
                format!("{pos} (reader identity {id:?}) is beyond next_seq {next}"),
            ));
        }
        Ok(Reader {
            att: Arc::new(Attachment::new(seg, Some(entry), pos, true)),
            pos,
            lost_total: 0,
            spin: DEFAULT_SPIN,
            seen_next: next,
        })
    }

    /// Take over the registry entry of identity `ident` if one exists, no
    /// live process holds it and its lock is 0 or `lock`:
    /// `Ok(Some((entry, committed position)))`; `Ok(None)` when there is
    /// none; else why not.
    pub(super) fn take_over(
        seg: &Segment,
        ident: u64,
        lock: u64,
        grace: u32,
    ) -> std::result::Result<Option<(usize, u64)>, Taken> {
        let me = std::process::id();
        // Each round either takes an entry, ends, or follows another
        // process's change of one; bounded like the writer's take-over.
        for _ in 0..1000 {
            let Some(i) =
                (0..MAX_READERS).find(|&i| seg.entry(i).ident.load(Ordering::SeqCst) == ident)
            else {
                return Ok(None);
            };
            let e = seg.entry(i);
            // A locked identity is refused before anything is touched: the
            // entry, its position and its grace stay its owner's.
            let held = e.lock.load(Ordering::SeqCst);
            if held != 0 && held != lock {
                return Err(Taken::Locked);
            }
            let cur = e.pid.load(Ordering::SeqCst);
            if cur == me || (cur != 0 && pid_alive(cur)) {
                return Err(Taken::Busy(cur));
            }
            let Some(pos) = protocol::take_entry(&e.pid, &e.pos, cur, me) else {
                continue;
            };
            // Between the look and the take, the entry may have gone to a
            // reader of another identity (who then died): not ours.
            if e.ident.load(Ordering::SeqCst) != ident {
                Self::unregister(seg, i);
                continue;
            }
            let held = e.lock.load(Ordering::SeqCst);
            if held != 0 && held != lock {
                Self::unregister(seg, i);
                return Err(Taken::Locked);
            }
            e.lock.store(lock, Ordering::SeqCst);
            e.grace_ms.store(grace, Ordering::SeqCst);
            // The dead reader wrote its position last; it cannot change
            // now. A position the ring has left behind is found at the
            // first read (an overrun, counted as lost); one ahead of
            // `next_seq` is refused by the caller.
            return Ok(Some((i, pos)));
        }
        Err(Taken::Moving)
    }

    /// A live process other than the holder of entry `mine` holding an
    /// entry of identity `ident`, if any.
    pub(super) fn holder(seg: &Segment, ident: u64, mine: Option<usize>) -> Option<u32> {
        (0..MAX_READERS)
            .filter(|&i| Some(i) != mine)
            .map(|i| seg.entry(i))
            .filter(|e| e.ident.load(Ordering::SeqCst) == ident)
            .map(|e| e.pid.load(Ordering::SeqCst))
            .find(|&pid| pid != 0 && pid_alive(pid))
    }

    /// Give entry `i`, held by this process, back (keeping its identity).
    pub(super) fn unregister(seg: &Segment, i: usize) {
        let _ = seg.entry(i).pid.compare_exchange(
            std::process::id(),
            0,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
    }

    /// Whether entry `e`, whose PID is `cur`, may be claimed by a new
    /// reader: free, or left by a dead reader without identity (a dead
    /// reader with one keeps its entry for its successor). With `any`, a
    /// free entry that still names the identity of a reader that left is
    /// claimable too.
    pub(super) fn claimable(e: &crate::layout::ReaderEntry, cur: u32, any: bool) -> bool {
        let ident = e.ident.load(Ordering::SeqCst);
        match cur {
            0 => ident == 0 || any,
            pid => ident == 0 && !pid_alive(pid),
        }
    }

    /// Claim a registry entry with position `pos`, preferring entries no
    /// identity names; `after` runs once the entry is this reader's.
    pub(super) fn claim(
        seg: &Segment,
        pos: u64,
        after: impl Fn(&crate::layout::ReaderEntry),
    ) -> Option<usize> {
        let me = std::process::id();
        for any in [false, true] {
            for i in 0..MAX_READERS {
                let e = seg.entry(i);
                let cur = e.pid.load(Ordering::SeqCst);
                if !Self::claimable(e, cur, any) {
                    continue;
                }
                // Publish the position before the PID makes the entry live.
                e.pos.store(pos, Ordering::SeqCst);
                if e.pid
                    .compare_exchange(cur, me, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
                {
                    after(e);
                    return Some(i);
                }
            }
        }
        None
    }

    /// Claim a registry entry for a reader without identity.
    pub(super) fn register(seg: &Segment, pos: u64) -> Option<usize> {
        Self::claim(seg, pos, |e| {
            e.ident.store(0, Ordering::SeqCst);
            e.lock.store(0, Ordering::SeqCst);
        })
    }

    /// Claim a registry entry for a durable reader of identity `ident`.
    pub(super) fn register_durable(
        seg: &Segment,
        pos: u64,
        ident: u64,
        lock: u64,
        grace: u32,
    ) -> Option<usize> {
        Self::claim(seg, pos, |e| {
            e.grace_ms.store(grace, Ordering::SeqCst);
            // The lock before the identity: whoever finds the identity
            // finds its lock.
            e.lock.store(lock, Ordering::SeqCst);
            e.ident.store(ident, Ordering::SeqCst);
        })
    }
}
