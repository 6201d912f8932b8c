//! The bytes of a segment: the header, the reader registry and the slots,
//! the limits on a channel's shape, and its defaults.
//!
//! The file format is the `#[repr(C)]` structs below. Every offset the code
//! uses is taken from them with `offset_of!`, and the assertions next to
//! each struct pin those offsets, so a change to a struct that would move a
//! field of the format fails to compile instead of silently changing it.

use crate::error::{Result, ShmError};
use std::mem::{offset_of, size_of};
use std::sync::atomic::{AtomicU32, AtomicU64};

/// First bytes of every ptmp shared-memory channel.
pub const MAGIC: [u8; 8] = *b"PTMPSHM\0";
/// The layout version this code reads and writes.
pub const LAYOUT_VERSION: u32 = 7;
/// Bytes reserved for the header: one page of fields, one page of reader
/// registry.
pub const HEADER_SIZE: usize = 8192;
/// Readers a channel can register (the registry's size).
pub const MAX_READERS: usize = 64;
/// Where the reader registry starts: the header's second page.
pub(crate) const REGISTRY_OFFSET: usize = 4096;
/// Largest message number a channel may reach: stamps hold `2s + 2`, which
/// must fit in 64 bits. A `next_seq` above it cannot have been written by a
/// writer (at a billion messages a second it takes 146 years to get there).
pub const MAX_SEQ: u64 = 1 << 62;
/// Highest process ID Linux hands out (`PID_MAX_LIMIT` on 64-bit kernels).
pub const PID_MAX_LIMIT: u32 = 1 << 22;
/// Bytes at the start of each slot before the payload.
pub const SLOT_HEADER: usize = 16;
/// Largest `max_message` accepted (1 GiB).
pub const MAX_MESSAGE_LIMIT: usize = 1 << 30;
/// Fewest slots a ring may have.
pub const MIN_SLOTS: usize = 2;
/// Most slots a ring may have.
pub const MAX_SLOTS: usize = 1 << 24;
/// Slots of [`ChannelConfig::default`].
pub const DEFAULT_SLOTS: usize = 1024;
/// Largest message of [`ChannelConfig::default`].
pub const DEFAULT_MAX_MESSAGE: usize = 1024;

/// The header at the start of a segment. Every field a second process may
/// change concurrently is atomic; the rest are written once, at creation,
/// before the file is given its final name.
#[repr(C)]
pub(crate) struct Header {
    pub(crate) magic: [u8; 8],
    pub(crate) version: u32,
    pub(crate) header_size: u32,
    pub(crate) slot_count: u32,
    pub(crate) policy: u32,
    pub(crate) max_message: u64,
    pub(crate) slot_stride: u64,
    pub(crate) total_size: u64,
    _pad1: [u8; 16],
    // Cache line 1: ownership.
    pub(crate) writer_pid: AtomicU32,
    pub(crate) writer_epoch: AtomicU32,
    /// How the current writer publishes: [`crate::protocol::FENCE_FULL`]
    /// or [`crate::protocol::FENCE_BY_READERS`] (invariant 6).
    pub(crate) publish_fence: AtomicU32,
    _pad2: [u8; 52],
    // Cache line 2: publication.
    pub(crate) next_seq: AtomicU64,
    _pad3: [u8; 56],
    // Cache line 3: wake-ups.
    pub(crate) notify: AtomicU32,
    pub(crate) waiters: AtomicU32,
    _pad4: [u8; 56],
    // Cache line 4: a blocked writer waiting for readers (Policy::Block).
    pub(crate) space: AtomicU32,
    pub(crate) writer_waiting: AtomicU32,
    /// The position every reader must reach before the waiting writer can go on.
    pub(crate) writer_needs: AtomicU64,
    _pad5: [u8; 48],
}

// The on-disk format (layout version 7). Changing any of these is a new
// layout version.
const _: () = assert!(offset_of!(Header, magic) == 0);
const _: () = assert!(offset_of!(Header, version) == 8);
const _: () = assert!(offset_of!(Header, header_size) == 12);
const _: () = assert!(offset_of!(Header, slot_count) == 16);
const _: () = assert!(offset_of!(Header, policy) == 20);
const _: () = assert!(offset_of!(Header, max_message) == 24);
const _: () = assert!(offset_of!(Header, slot_stride) == 32);
const _: () = assert!(offset_of!(Header, total_size) == 40);
const _: () = assert!(offset_of!(Header, writer_pid) == 64);
const _: () = assert!(offset_of!(Header, writer_epoch) == 68);
const _: () = assert!(offset_of!(Header, publish_fence) == 72);
const _: () = assert!(offset_of!(Header, next_seq) == 128);
const _: () = assert!(offset_of!(Header, notify) == 192);
const _: () = assert!(offset_of!(Header, waiters) == 196);
const _: () = assert!(offset_of!(Header, space) == 256);
const _: () = assert!(offset_of!(Header, writer_waiting) == 260);
const _: () = assert!(offset_of!(Header, writer_needs) == 264);
const _: () = assert!(size_of::<Header>() == 320);
const _: () = assert!(size_of::<Header>() <= REGISTRY_OFFSET);

/// Bytes of the fields written once, at creation: everything before
/// `writer_pid`.
pub(crate) const FIXED_LEN: usize = offset_of!(Header, writer_pid);

/// One reader's registry entry, on a cache line of its own.
#[repr(C)]
pub(crate) struct ReaderEntry {
    /// PID of the process holding the entry; 0 when free (or, with an
    /// `ident`, kept for the identity's next reader).
    pub(crate) pid: AtomicU32,
    /// For a reader with an identity: how long, in milliseconds, a blocked
    /// writer keeps the entry after the reader's process died, waiting for
    /// a successor of the same identity to take it over.
    pub(crate) grace_ms: AtomicU32,
    /// Lowest sequence number the reader may still touch; for a reader with
    /// an identity, the lowest it has not yet committed (handed on).
    pub(crate) pos: AtomicU64,
    /// The reader's identity ([`crate::reader_ident`] of its name); 0 for
    /// a reader without one.
    pub(crate) ident: AtomicU64,
    /// For a reader with an identity claimed with a token: the token's
    /// hash ([`crate::reader_lock`]); 0 for none. A claimant of the
    /// identity with another token, or none, is refused.
    pub(crate) lock: AtomicU64,
    _pad2: [u8; 32],
}

const _: () = assert!(offset_of!(ReaderEntry, pid) == 0);
const _: () = assert!(offset_of!(ReaderEntry, grace_ms) == 4);
const _: () = assert!(offset_of!(ReaderEntry, pos) == 8);
const _: () = assert!(offset_of!(ReaderEntry, ident) == 16);
const _: () = assert!(offset_of!(ReaderEntry, lock) == 24);
const _: () = assert!(size_of::<ReaderEntry>() == 64);
const _: () = assert!(REGISTRY_OFFSET + MAX_READERS * size_of::<ReaderEntry>() == HEADER_SIZE);

/// The start of a slot: its seqlock stamp (invariant 3) and message length.
#[repr(C)]
pub(crate) struct SlotHeader {
    pub(crate) stamp: AtomicU64,
    pub(crate) len: AtomicU64,
}

const _: () = assert!(offset_of!(SlotHeader, stamp) == 0);
const _: () = assert!(offset_of!(SlotHeader, len) == 8);
const _: () = assert!(size_of::<SlotHeader>() == SLOT_HEADER);

/// The header fields fixed at creation, as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fixed {
    pub(crate) magic: [u8; 8],
    pub(crate) version: u32,
    pub(crate) header_size: u32,
    pub(crate) slot_count: u32,
    pub(crate) policy: u32,
    pub(crate) max_message: u64,
    pub(crate) slot_stride: u64,
    pub(crate) total_size: u64,
}

impl Fixed {
    /// The fields a new segment of shape `cfg` gets.
    pub(crate) fn new(cfg: &ChannelConfig) -> Fixed {
        Fixed {
            magic: MAGIC,
            version: LAYOUT_VERSION,
            header_size: HEADER_SIZE as u32,
            slot_count: cfg.slots as u32,
            policy: cfg.policy as u32,
            max_message: cfg.max_message as u64,
            slot_stride: cfg.stride() as u64,
            total_size: cfg.total() as u64,
        }
    }

    /// Decode the first [`FIXED_LEN`] bytes of a header.
    pub(crate) fn read(h: &[u8; FIXED_LEN]) -> Fixed {
        let u32_at = |o: usize| u32::from_ne_bytes(h[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_ne_bytes(h[o..o + 8].try_into().expect("8 bytes"));
        Fixed {
            magic: h[..8].try_into().expect("8 bytes"),
            version: u32_at(offset_of!(Header, version)),
            header_size: u32_at(offset_of!(Header, header_size)),
            slot_count: u32_at(offset_of!(Header, slot_count)),
            policy: u32_at(offset_of!(Header, policy)),
            max_message: u64_at(offset_of!(Header, max_message)),
            slot_stride: u64_at(offset_of!(Header, slot_stride)),
            total_size: u64_at(offset_of!(Header, total_size)),
        }
    }

    /// Encode into the first [`FIXED_LEN`] bytes of a header.
    pub(crate) fn write(&self, h: &mut [u8]) {
        let mut put = |o: usize, b: &[u8]| h[o..o + b.len()].copy_from_slice(b);
        put(offset_of!(Header, magic), &self.magic);
        put(offset_of!(Header, version), &self.version.to_ne_bytes());
        put(
            offset_of!(Header, header_size),
            &self.header_size.to_ne_bytes(),
        );
        put(
            offset_of!(Header, slot_count),
            &self.slot_count.to_ne_bytes(),
        );
        put(offset_of!(Header, policy), &self.policy.to_ne_bytes());
        put(
            offset_of!(Header, max_message),
            &self.max_message.to_ne_bytes(),
        );
        put(
            offset_of!(Header, slot_stride),
            &self.slot_stride.to_ne_bytes(),
        );
        put(
            offset_of!(Header, total_size),
            &self.total_size.to_ne_bytes(),
        );
    }
}

/// The shape of a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelConfig {
    /// Slots in the ring (a power of two, at least 2): how many recent
    /// messages stay readable as history.
    pub slots: usize,
    /// Largest message in bytes.
    pub max_message: usize,
    /// What the writer does when a reader is a whole ring behind.
    pub policy: Policy,
}

/// Overflow policy of a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// Publish-subscribe: the writer never waits; a lapped reader learns how
    /// many messages it lost and resynchronises.
    #[default]
    Overwrite,
    /// Lossless: the writer waits (up to its timeout) while the slowest live
    /// reader is a whole ring behind. Every reader gets every message.
    Block,
}

impl Policy {
    /// Its name in listings: `overwrite` or `block`.
    pub fn label(self) -> &'static str {
        match self {
            Policy::Overwrite => "overwrite",
            Policy::Block => "block",
        }
    }
}

impl Default for ChannelConfig {
    /// Small messages: 1024 slots of up to 1 KiB (about 1 MiB).
    fn default() -> Self {
        ChannelConfig {
            slots: DEFAULT_SLOTS,
            max_message: DEFAULT_MAX_MESSAGE,
            policy: Policy::Overwrite,
        }
    }
}

impl ChannelConfig {
    /// Camera frames: 8 slots of 1920x1080x3 bytes (about 50 MiB).
    pub fn images() -> Self {
        ChannelConfig {
            slots: 8,
            max_message: 6_220_800,
            policy: Policy::Overwrite,
        }
    }

    /// Bytes from one slot to the next: the slot header and the largest
    /// message, rounded up to a cache line.
    pub(crate) fn stride(&self) -> usize {
        (SLOT_HEADER + self.max_message).div_ceil(64) * 64
    }

    /// Bytes of the whole segment file.
    pub(crate) fn total(&self) -> usize {
        HEADER_SIZE + self.slots * self.stride()
    }

    /// Bytes a channel of this shape takes in the shm directory: its
    /// header and every slot, all reserved when the writer creates it.
    pub fn segment_bytes(&self) -> usize {
        self.total()
    }

    /// Check the shape against the limits (invariant 1).
    pub(crate) fn check(&self, name: &str) -> Result<()> {
        let bad = |reason: String| ShmError::BadConfig {
            name: name.into(),
            reason,
        };
        if self.slots < MIN_SLOTS || !self.slots.is_power_of_two() || self.slots > MAX_SLOTS {
            return Err(bad(format!(
                "slots = {}: must be a power of two from {MIN_SLOTS} to {MAX_SLOTS}",
                self.slots
            )));
        }
        if self.max_message == 0 || self.max_message > MAX_MESSAGE_LIMIT {
            return Err(bad(format!(
                "max_message = {}: must be from 1 to {MAX_MESSAGE_LIMIT} bytes",
                self.max_message
            )));
        }
        Ok(())
    }
}
