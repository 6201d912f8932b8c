//! # ptmp-shm: shared-memory rings
//!
//! One channel is one memory-mapped file (under `/dev/shm`, or
//! `$PTMP_SHM_DIR`) holding a header and a ring of fixed-size slots. One
//! writer publishes messages into consecutive slots; any number of readers
//! read them without copying (a [`View`] borrows the slot) or by copying out.
//! Readers block on a futex in the header, never by spinning unless asked.
//!
//! ## Invariants
//!
//! These hold at every instant, whatever process dies where, and every
//! `unsafe` block below relies only on them:
//!
//! 1. **Layout.** The file is exactly `header_size + slot_count * slot_stride`
//!    bytes; the header starts with [`MAGIC`] and [`LAYOUT_VERSION`];
//!    `slot_count` is a power of two of at least 2; `slot_stride` is a
//!    multiple of 64 and at least `SLOT_HEADER + max_message`. A file that
//!    breaks any of these is refused before anything else is read from it.
//! 2. **One writer.** Only the process recorded in `writer_pid` writes slots
//!    or `next_seq`. A writer takes the channel by a compare-and-swap of
//!    `writer_pid` from 0 (or from a PID that no longer exists).
//! 3. **Stamps (a per-slot seqlock).** Message number `s` lives in slot
//!    `s & (slot_count - 1)`. The slot's `stamp` is `2s + 1` while the writer
//!    fills it and `2s + 2` once it is complete; stamps of one slot only grow.
//!    A reader that sees `2s + 2` both before and after reading the payload
//!    has read message `s` whole: a torn or overwritten message always changes
//!    the stamp, so it is detected, never delivered. The payload itself is
//!    read as plain bytes while the writer may be writing them. Under
//!    Rust's memory model that read is a data race, whether the writer is
//!    another process or (`shm://` is legal inside one process) another
//!    thread of this one: the same seqlock read that crossbeam's
//!    `AtomicCell` makes (its `atomic_memcpy` notes) and that the proposed
//!    atomic memcpy (RFC 3301) would make sound. We accept it on the same
//!    terms: the bytes are `u8` (every bit pattern valid), they are read
//!    between a stamp load (Acquire) and a second one after an acquire
//!    fence ([`View::valid`], which a view's user calls after using the
//!    bytes, is that second load), and whatever such a read produced is
//!    thrown away when the second stamp differs. Those terms do not make
//!    it sound, only contained. A payload the writer copies with streaming
//!    stores (module `stream`), which are not ordered with other stores,
//!    is fenced before and after, so the odd stamp is visible before any of
//!    it and all of it before the even stamp.
//! 4. **Publication.** `next_seq` is the number of messages published; it is
//!    stored after the slot's final stamp, so every message below `next_seq`
//!    whose slot still carries its stamp is complete. A [`Policy::Block`]
//!    writer may complete several messages before one store covers them
//!    all ([`Loan::commit_deferred`], [`Writer::flush`]); readers may read
//!    such a message by its stamp before, and it publishes them before it
//!    waits for room, so readers and writer never wait for each other.
//! 5. **No reader holds anything the writer waits for**, except in
//!    [`Policy::Block`], and there only through its registry entry. Readers
//!    never write slots. Under [`Policy::Overwrite`] the writer never waits,
//!    so a reader killed at any point (even holding a [`View`]) costs nobody
//!    anything. Under [`Policy::Block`] each reader publishes in its registry
//!    entry the lowest sequence number it may still touch; the writer does not
//!    overwrite message `s - slots` while a live reader's entry is at or
//!    below it, and a reader whose PID no longer exists is dropped from the
//!    registry by the blocked writer, so a killed reader stalls nothing. A
//!    reader may show a position lower than the one it has reached (it
//!    writes its entry every few messages, at once while the writer waits,
//!    and in full before it sleeps): that only makes the writer wait more,
//!    never overwrite what a reader still reads. A *durable* reader (one
//!    attached under an identity, [`Reader::attach_durable`], recorded as
//!    a non-zero `ident` in its entry) shows only what it has committed
//!    (handed on), which is never more than it has read. When its PID no
//!    longer exists the blocked writer keeps its entry, counting it as
//!    live, for the grace time the entry names (from the moment the writer
//!    first finds it dead); then it sets the PID to 0, keeping `ident` and
//!    the position. A reader of the same identity takes the entry over by a
//!    compare-and-swap of its PID from the dead one (or 0) to its own and
//!    resumes at that position; one whose identity a live process holds is
//!    refused. An identity claimed with a token records the token's hash
//!    in the entry's `lock` before its `ident`; a claimant with another
//!    token (or none) is refused before it touches the entry, live holder
//!    or not, so only the identity's owner moves its position. A killed durable reader therefore stalls its writer for at
//!    most its grace time, and its successor misses nothing within it (a
//!    message the writer overwrote after giving up is an overrun: counted
//!    as lost). A writer killed
//!    mid-message leaves an odd stamp and an unchanged
//!    `next_seq`: readers see nothing new, and the next writer overwrites
//!    that slot with its own message number `next_seq`.
//! 6. **Wake-ups.** A reader about to sleep sets the low bit of the
//!    `notify` futex word (`protocol::SLEEPING`) and re-checks `next_seq`
//!    before sleeping on the value it set. After publishing, the writer
//!    loads `notify` and, only if the bit is set, clears it by adding one
//!    and wakes the sleepers; a publish finding the bit clear makes no
//!    system call. Both sides put a sequentially consistent point between
//!    their store and their load (the store-buffering pattern), so either
//!    the writer sees the bit or the reader sees the message: a wake-up
//!    cannot be lost. The writer's point is either a full barrier in its
//!    publish or, when the header's `publish_fence` says
//!    `FENCE_BY_READERS` (stored by the writer, sequentially consistent,
//!    before its first publish), the barrier a sleeping reader makes its
//!    CPU run with `membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)` after
//!    setting the bit (the writer's process registered for it). A writer
//!    may turn from `FENCE_BY_READERS` to `FENCE_FULL` (it does when its
//!    readers sleep often), never back: it stores the new word sequentially
//!    consistent before its next publish, so a reader that reads `FENCE_FULL`
//!    and skips the `membarrier` sees every publish made before the store,
//!    and every publish after it has the barrier. A reader
//!    whose `membarrier` the kernel refuses sleeps at most 1 ms at a time. A
//!    [`Policy::Block`] writer that finds the ring full spins briefly, then
//!    announces in `writer_needs` the position it waits for (a quarter of the
//!    ring past the one it strictly needs, never past the newest message) and
//!    sets `writer_waiting`; the release that carries a reader's position
//!    across `writer_needs` wakes it on `space` (once: the releases after it
//!    make no system call). The writer also sleeps at most 1 ms at a time, so
//!    no reader can hold it by not waking it.
//!    (Invariants 3 to 6 are the functions of [`protocol`], which
//!    `tests/loom.rs` model-checks.)
//! 7. **Truncation.** A new segment has every page reserved when it is
//!    created (`posix_fallocate`), so a full file system is an error then,
//!    not a SIGBUS later. Every mapping of a segment is registered with a
//!    process-wide SIGBUS handler (module `sigbus`) for as long as it is
//!    mapped; a page that leaves the file while mapped is replaced at its
//!    first touch by a private page of zeros and the mapping is marked
//!    truncated. Readers check the mark before delivering a message and the
//!    writer before and after each message, so a truncation is an error,
//!    never a death by signal.
//! 8. **Bounded loops.** Every loop over shared state ends: a reader that
//!    finds a state no writer can produce (a stamp of another slot, a
//!    `next_seq` going back or beyond [`MAX_SEQ`], header fields changed
//!    after opening, a `writer_pid` above [`PID_MAX_LIMIT`]) reports
//!    [`ShmError::Corrupt`] naming the field, and its deadline holds
//!    whatever the segment says. The writer treats registry entries no
//!    reader can have written the same way.
//! 9. **Ownership.** A segment is opened with `O_NOFOLLOW` (never through a
//!    symbolic link) and used only if it is a regular file owned by this
//!    user with mode 0600, or, when the channel's [`Access`] is
//!    [`Access::Group`], mode 0660 in one of this process's groups.
//!
//! ## Modules
//!
//! - `layout`: the segment's bytes (`#[repr(C)]` structs whose offsets are
//!   pinned by compile-time assertions), the limits on a channel's shape
//!   and its defaults, [`ChannelConfig`], [`Policy`].
//! - `name`: [`ChannelName`], the one rule for what a channel may be called.
//! - `segment`: where segments live ([`shm_dir`], [`segment_path`]), who may
//!   use them ([`Access`]), creating, opening, mapping and checking one,
//!   [`pid_alive`].
//! - `writer`: [`Writer`] and [`Loan`]: taking a channel, writing in place,
//!   committing, and a blocked writer's wait for slow readers.
//! - `reader`: [`Reader`], [`View`] and [`OwnedView`]: attaching, the reader
//!   registry, the seqlock read, overruns, a reader's wait (`reader/wait.rs`)
//!   and [`wait_any`].
//! - `wait`: the futex calls and wake-ups under readers and writers, the
//!   `membarrier` calls of invariant 6 and [`PublishFence`], [`Deadline`].
//! - `stream`: [`copy_into_slot`], a large message copied into its slot
//!   with streaming stores.
//! - `admin`: [`list`] and [`remove`].
//! - `error`: [`ShmError`].
//! - [`protocol`]: the synchronisation steps of invariants 3 to 6, generic
//!   over the atomic type so that `tests/loom.rs` model-checks the very code
//!   the ring runs.
//! - `sigbus`: the SIGBUS guard of invariant 7.

mod admin;
mod error;
mod layout;
mod name;
pub mod protocol;
mod reader;
mod segment;
mod sigbus;
mod stream;
mod wait;
mod writer;

pub use admin::{inspect, list, remove, ChannelInfo, ChannelState, ReaderState};
pub use error::{Result, ShmError};
pub use layout::{
    ChannelConfig, Policy, DEFAULT_MAX_MESSAGE, DEFAULT_SLOTS, HEADER_SIZE, LAYOUT_VERSION, MAGIC,
    MAX_MESSAGE_LIMIT, MAX_READERS, MAX_SEQ, MAX_SLOTS, MIN_SLOTS, PID_MAX_LIMIT, SLOT_HEADER,
};
pub use name::{ChannelName, MAX_NAME_LEN, NAME_RULE};
pub use reader::{
    keep_durable_places, reader_ident, reader_lock, wait_any, Durable, OwnedView, Reader, Received,
    StartAt, View, DEFAULT_READER_GRACE, DEFAULT_SPIN, MAX_IDENT_LEN, MAX_WAIT_CHANNELS,
};
pub use segment::{pid_alive, segment_path, shm_dir, shm_dir_free, Access, FILE_PREFIX};
pub use sigbus::MAX_MAPPINGS;
pub use stream::{copy_into_slot, stream_threshold};
pub use wait::{
    default_publish_fence, Deadline, PublishFence, FULL_FENCE_ENV, WAKES_TO_FULL, WAKE_WINDOW,
};
pub use writer::{Drained, Loan, Writer, DEFAULT_BLOCK_TIMEOUT};
