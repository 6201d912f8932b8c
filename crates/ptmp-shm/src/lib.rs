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
//!    the stamp, so it is detected, never delivered.
//! 4. **Publication.** `next_seq` is the number of messages published; it is
//!    stored after the slot's final stamp, so every message below `next_seq`
//!    whose slot still carries its stamp is complete.
//! 5. **No reader holds anything the writer waits for**, except in
//!    [`Policy::Block`], and there only through its registry entry. Readers
//!    never write slots. Under [`Policy::Overwrite`] the writer never waits,
//!    so a reader killed at any point (even holding a [`View`]) costs nobody
//!    anything. Under [`Policy::Block`] each reader publishes in its registry
//!    entry the lowest sequence number it may still touch; the writer does not
//!    overwrite message `s - slots` while a live reader's entry is at or
//!    below it, and a reader whose PID no longer exists is dropped from the
//!    registry by the blocked writer, so a killed reader stalls nothing. A writer killed mid-message leaves an odd stamp and an
//!    unchanged `next_seq`: readers see nothing new, and the next writer
//!    overwrites that slot with its own message number `next_seq`.
//! 6. **Wake-ups.** After publishing, the writer bumps the `notify` futex word
//!    and wakes sleepers when `waiters` is non-zero; a reader registers in
//!    `waiters` and re-checks `next_seq` before sleeping. Both sides use
//!    sequentially consistent operations, so a wake-up cannot be lost.
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

mod sigbus;

pub use sigbus::MAX_MAPPINGS;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// First bytes of every ptmp shared-memory channel.
pub const MAGIC: [u8; 8] = *b"PTMPSHM\0";
/// The layout version this code reads and writes.
pub const LAYOUT_VERSION: u32 = 3;
/// Bytes reserved for the header: one page of fields, one page of reader
/// registry.
pub const HEADER_SIZE: usize = 8192;
/// Readers a channel can register (the registry's size).
pub const MAX_READERS: usize = 64;
const REGISTRY_OFFSET: usize = 4096;
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

/// Why a channel could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ShmError {
    #[error("shm channel name {0:?} is invalid: use 1-200 letters, digits, '.', '_' or '-'")]
    BadName(String),
    #[error("shm channel {name}: {reason}")]
    BadConfig { name: String, reason: String },
    #[error("shm segment {path}: {reason}")]
    BadSegment { path: PathBuf, reason: String },
    /// The segment is not one this process may trust: a symbolic link, not
    /// a regular file, another user's, or open to more than the channel's
    /// [`Access`] allows.
    #[error("shm segment {path} refused: {reason}")]
    Untrusted { path: PathBuf, reason: String },
    #[error("shm directory {dir} has no room for a new segment: it needs {needed} bytes and {free} are free (Docker gives containers a 64 MiB /dev/shm unless run with --shm-size; or set PTMP_SHM_DIR, or make the ring smaller)")]
    NoSpace {
        dir: PathBuf,
        needed: u64,
        free: u64,
    },
    #[error("shm channel {name} already has a live writer (pid {pid})")]
    WriterBusy { name: String, pid: u32 },
    #[error("shm channel {name} does not exist ({path})")]
    NotFound { name: String, path: PathBuf },
    #[error("message of {len} bytes exceeds channel {name}'s maximum of {max}")]
    TooLarge {
        name: String,
        len: usize,
        max: usize,
    },
    #[error("shm channel {name}: timed out after {waited_ms} ms waiting for the slowest reader (pid {pid}, at message {pos}; pid 0: no reader) to free a slot")]
    Timeout {
        name: String,
        waited_ms: u64,
        pid: u32,
        pos: u64,
    },
    #[error("shm channel {name}: all {MAX_READERS} reader registry entries are taken")]
    RegistryFull { name: String },
    /// The segment holds a state no ptmp process can have written: another
    /// program (or a bug, or a bad disk) changed it under the channel.
    #[error("shm channel {name}: corrupt segment: {field}: {detail} (remove it with `ptmp shm rm {name}`)")]
    Corrupt {
        name: String,
        field: String,
        detail: String,
    },
    /// The segment file was cut short while mapped (invariant 7).
    #[error("shm channel {name}: segment {path} truncated while in use (size now {size}, needs {needs}): another program shortened it, or its file system had no memory for a page; recreate the channel")]
    Truncated {
        name: String,
        path: PathBuf,
        size: u64,
        needs: u64,
    },
    #[error("shm {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

pub type Result<T, E = ShmError> = std::result::Result<T, E>;

/// Who may use a channel's segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Access {
    /// Only the user who created it: the file must be owned by this
    /// process's effective user and have mode 0600.
    #[default]
    Private,
    /// Shared with a group: segments are created with mode 0660, and a
    /// segment of another user is accepted if its mode is 0660 and its group
    /// is one of this process's groups. Any member of the group can then
    /// read, write or corrupt the channel: use it only among trusted users.
    Group,
}

impl Access {
    /// The mode new segments get.
    pub fn mode(self) -> u32 {
        match self {
            Access::Private => 0o600,
            Access::Group => 0o660,
        }
    }
}

/// Whether this process is in group `gid` (effective or supplementary).
fn in_group(gid: u32) -> bool {
    // SAFETY: getegid has no preconditions (used for invariant 9).
    if gid == unsafe { libc::getegid() } {
        return true;
    }
    let mut groups = [0 as libc::gid_t; 256];
    // SAFETY: the buffer holds `groups.len()` entries, as passed
    // (invariant 9).
    let n = unsafe { libc::getgroups(groups.len() as libc::c_int, groups.as_mut_ptr()) };
    n > 0 && groups[..n as usize].contains(&gid)
}

/// Check an opened segment's type, owner and mode against `access`.
fn check_trust(path: &Path, meta: &std::fs::Metadata, access: Access) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let refuse = |reason: String| ShmError::Untrusted {
        path: path.to_path_buf(),
        reason,
    };
    if !meta.file_type().is_file() {
        return Err(refuse(
            "not a regular file (ptmp segments are plain files)".into(),
        ));
    }
    // SAFETY: geteuid has no preconditions (invariant 9).
    let me = unsafe { libc::geteuid() };
    let (uid, gid, mode) = (meta.uid(), meta.gid(), meta.mode() & 0o7777);
    let ok = match access {
        Access::Private => uid == me && mode == 0o600,
        Access::Group => {
            (uid == me && (mode == 0o600 || mode == 0o660)) || (mode == 0o660 && in_group(gid))
        }
    };
    if ok {
        return Ok(());
    }
    let expected = match access {
        Access::Private => format!(
            "owner uid {me} and mode 0600 (to share a channel with a group, set the socket config key \"shm_mode\": \"group\")"
        ),
        Access::Group => format!("owner uid {me}, or mode 0660 and a group of this process"),
    };
    Err(refuse(format!(
        "owner uid {uid}, group {gid}, mode {mode:04o}; expected {expected}"
    )))
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

impl Default for ChannelConfig {
    /// Small messages: 1024 slots of up to 1 KiB (about 1 MiB).
    fn default() -> Self {
        ChannelConfig {
            slots: 1024,
            max_message: 1024,
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

    fn stride(&self) -> usize {
        (SLOT_HEADER + self.max_message).div_ceil(64) * 64
    }

    fn total(&self) -> usize {
        HEADER_SIZE + self.slots * self.stride()
    }

    fn check(&self, name: &str) -> Result<()> {
        let bad = |reason: String| ShmError::BadConfig {
            name: name.into(),
            reason,
        };
        if self.slots < 2 || !self.slots.is_power_of_two() || self.slots > 1 << 24 {
            return Err(bad(format!(
                "slots = {}: must be a power of two from 2 to 16777216",
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

/// The header at the start of a segment. Every field a second process may
/// change concurrently is atomic; the rest are written once, at creation,
/// before the file is given its final name.
#[repr(C)]
struct Header {
    magic: [u8; 8],
    version: u32,
    header_size: u32,
    slot_count: u32,
    policy: u32,
    max_message: u64,
    slot_stride: u64,
    total_size: u64,
    _pad1: [u8; 16],
    // Cache line 1: ownership.
    writer_pid: AtomicU32,
    writer_epoch: AtomicU32,
    _pad2: [u8; 56],
    // Cache line 2: publication.
    next_seq: AtomicU64,
    _pad3: [u8; 56],
    // Cache line 3: wake-ups.
    notify: AtomicU32,
    waiters: AtomicU32,
    _pad4: [u8; 56],
    // Cache line 4: a blocked writer waiting for readers (Policy::Block).
    space: AtomicU32,
    writer_waiting: AtomicU32,
    /// The position every reader must reach before the waiting writer can go on.
    writer_needs: AtomicU64,
    _pad5: [u8; 48],
}

const _: () = assert!(std::mem::size_of::<Header>() <= REGISTRY_OFFSET);

/// One reader's registry entry, on a cache line of its own.
#[repr(C)]
struct ReaderEntry {
    /// PID of the process holding the entry; 0 when free.
    pid: AtomicU32,
    _pad: u32,
    /// Lowest sequence number the reader may still touch.
    pos: AtomicU64,
    _pad2: [u8; 48],
}

const _: () = assert!(std::mem::size_of::<ReaderEntry>() == 64);
const _: () = assert!(REGISTRY_OFFSET + MAX_READERS * 64 == HEADER_SIZE);

#[repr(C)]
struct SlotHeader {
    stamp: AtomicU64,
    len: AtomicU64,
}

const _: () = assert!(std::mem::size_of::<SlotHeader>() == SLOT_HEADER);

/// Directory holding the segments.
pub fn shm_dir() -> PathBuf {
    std::env::var_os("PTMP_SHM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/dev/shm"))
}

/// File name prefix of ptmp segments in [`shm_dir`].
pub const FILE_PREFIX: &str = "ptmp.";

/// Path of channel `name`.
pub fn segment_path(name: &str) -> Result<PathBuf> {
    let ok = !name.is_empty()
        && name.len() <= 200
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if !ok {
        return Err(ShmError::BadName(name.into()));
    }
    Ok(shm_dir().join(format!("{FILE_PREFIX}{name}")))
}

fn io(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ShmError {
    let path = path.to_path_buf();
    move |source| ShmError::Io { op, path, source }
}

/// Whether a process with this PID exists (signal 0 probes without sending).
pub fn pid_alive(pid: u32) -> bool {
    if pid == 0 || pid > i32::MAX as u32 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for existence and permission
    // (invariants 2 and 5 use it to find dead writers and readers).
    let rc = unsafe { libc::kill(pid as libc::pid_t, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Give a new segment file its size with every page allocated now, so a
/// full file system is an error here, naming the size needed and the space
/// free, not a SIGBUS at the first write to a page that has no memory.
fn reserve(file: &File, path: &Path, total: u64) -> Result<()> {
    use std::os::fd::AsRawFd;
    // Growing a file past the process's file size limit (`ulimit -f`)
    // raises SIGXFSZ, which kills by default: refuse first.
    // SAFETY: an all-zero rlimit is a valid value to be overwritten
    // (invariant 7).
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: a pointer to an rlimit we own (invariant 7).
    if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut lim) } == 0
        && lim.rlim_cur != libc::RLIM_INFINITY
        && total > lim.rlim_cur as u64
    {
        return Err(io("reserve space for", path)(std::io::Error::other(format!(
            "the segment needs {total} bytes but this process may not write files beyond {} bytes (its file size limit, `ulimit -f`)",
            lim.rlim_cur
        ))));
    }
    // SAFETY: a valid open descriptor and a non-negative range (invariant 7).
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, total as libc::off_t) };
    match rc {
        0 => Ok(()),
        libc::EOPNOTSUPP | libc::EINVAL => {
            // A file system without fallocate: size it the plain way.
            file.set_len(total).map_err(io("resize", path))
        }
        libc::ENOSPC | libc::EFBIG => {
            let dir = path.parent().unwrap_or(Path::new("/"));
            let free = free_space(file);
            Err(ShmError::NoSpace {
                dir: dir.to_path_buf(),
                needed: total,
                free,
            })
        }
        e => Err(io("reserve space for", path)(
            std::io::Error::from_raw_os_error(e),
        )),
    }
}

/// Bytes an unprivileged user may still allocate on `file`'s file system.
fn free_space(file: &File) -> u64 {
    use std::os::fd::AsRawFd;
    // SAFETY: an all-zero statvfs is a valid value to be overwritten
    // (invariant 7 reports the space free).
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and a pointer to a statvfs we own
    // (invariant 7).
    if unsafe { libc::fstatvfs(file.as_raw_fd(), &mut st) } != 0 {
        return 0;
    }
    (st.f_bavail as u64).saturating_mul(st.f_frsize as u64)
}

/// A mapped, validated segment.
struct Segment {
    /// The mapping's entry in the SIGBUS registry (invariant 7); declared
    /// first so it is dropped, and unregistered, before the map is unmapped.
    guard: sigbus::Guard,
    map: memmap2::MmapMut,
    /// The open segment, to tell its size now.
    file: File,
    path: PathBuf,
    name: String,
    slots: u64,
    stride: usize,
    max_message: usize,
    policy: Policy,
}

impl Segment {
    fn entry(&self, i: usize) -> &ReaderEntry {
        assert!(i < MAX_READERS);
        // SAFETY: the registry lies inside the header (invariant 1), entries
        // are 64-byte aligned and all their fields are atomic.
        unsafe { &*(self.map.as_ptr().add(REGISTRY_OFFSET + i * 64) as *const ReaderEntry) }
    }

    fn header(&self) -> &Header {
        // SAFETY: the map is page-aligned and at least HEADER_SIZE long
        // (invariant 1, checked in `validate`), Header fits in it, and every
        // field that changes after creation is atomic.
        unsafe { &*(self.map.as_ptr() as *const Header) }
    }

    fn slot(&self, seq: u64) -> (&SlotHeader, *mut u8) {
        let i = (seq & (self.slots - 1)) as usize;
        let off = HEADER_SIZE + i * self.stride;
        // SAFETY: i < slots, so the slot lies inside the map (invariant 1);
        // slot offsets are 64-byte aligned; the header is atomic.
        unsafe {
            let base = self.map.as_ptr().add(off) as *mut u8;
            (&*(base as *const SlotHeader), base.add(SLOT_HEADER))
        }
    }

    /// Map an existing file and check invariant 1. Never follows a
    /// symbolic link; refuses a file `access` does not trust.
    fn open(name: &str, path: PathBuf, access: Access) -> Result<Segment> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    ShmError::NotFound {
                        name: name.into(),
                        path: path.clone(),
                    }
                } else if e.raw_os_error() == Some(libc::ELOOP) {
                    ShmError::Untrusted {
                        path: path.clone(),
                        reason: "it is a symbolic link; ptmp never follows links at segment paths"
                            .into(),
                    }
                } else {
                    io("open", &path)(e)
                }
            })?;
        let meta = file.metadata().map_err(io("stat", &path))?;
        check_trust(&path, &meta, access)?;
        Self::map_file(name, path, file)
    }

    fn map_file(name: &str, path: PathBuf, file: File) -> Result<Segment> {
        let bad = |reason: String| ShmError::BadSegment {
            path: path.clone(),
            reason,
        };
        let len = file.metadata().map_err(io("stat", &path))?.len();
        if len < HEADER_SIZE as u64 {
            return Err(bad(format!(
                "file is {len} bytes, shorter than the {HEADER_SIZE}-byte header: truncated or not a ptmp segment"
            )));
        }
        // SAFETY: the file is a regular file of a trusted owner we opened
        // read-write without following links (invariant 9); the map is
        // shared with other processes by design, and registered with the
        // SIGBUS guard before anything is read from it (invariant 7).
        let map = unsafe { memmap2::MmapMut::map_mut(&file) }.map_err(io("mmap", &path))?;
        // Registered before the first read: the file may be cut short at any
        // moment from now on (invariant 7).
        let guard = sigbus::register(map.as_ptr() as usize, map.len()).ok_or_else(|| {
            bad(format!(
                "cannot guard the mapping against truncation: more than {MAX_MAPPINGS} segments mapped in this process, or no SIGBUS handler"
            ))
        })?;
        let mut h = [0u8; 64];
        h.copy_from_slice(&map[..64]);
        if h[..8] != MAGIC {
            return Err(bad(format!(
                "bad magic {:02x?}: not a ptmp shared-memory segment",
                &h[..8]
            )));
        }
        let u32_at = |o: usize| u32::from_ne_bytes(h[o..o + 4].try_into().expect("4"));
        let u64_at = |o: usize| u64::from_ne_bytes(h[o..o + 8].try_into().expect("8"));
        let version = u32_at(8);
        if version != LAYOUT_VERSION {
            return Err(bad(format!(
                "layout version {version}, this ptmp reads version {LAYOUT_VERSION}"
            )));
        }
        let (hsize, slots, maxm, stride, total) =
            (u32_at(12), u32_at(16), u64_at(24), u64_at(32), u64_at(40));
        let policy = match u32_at(20) {
            0 => Policy::Overwrite,
            1 => Policy::Block,
            p => return Err(bad(format!("corrupt header: unknown overflow policy {p}"))),
        };
        let cfg = ChannelConfig {
            slots: slots as usize,
            max_message: maxm as usize,
            policy,
        };
        if hsize as usize != HEADER_SIZE {
            return Err(bad(format!("header size {hsize}, expected {HEADER_SIZE}")));
        }
        cfg.check(name)
            .map_err(|e| bad(format!("corrupt header: {e}")))?;
        if stride != cfg.stride() as u64 || total != cfg.total() as u64 {
            return Err(bad(format!(
                "corrupt header: slot stride {stride} / total size {total} do not match {slots} slots of {maxm} bytes"
            )));
        }
        if len != total {
            return Err(bad(format!(
                "file is {len} bytes but its header describes {total}: truncated or corrupt"
            )));
        }
        Ok(Segment {
            guard,
            map,
            file,
            path,
            name: name.into(),
            slots: slots as u64,
            stride: stride as usize,
            max_message: maxm as usize,
            policy,
        })
    }

    /// Whether a page of the mapping was found beyond the end of the file
    /// (invariant 7): one relaxed load.
    #[inline]
    fn truncated(&self) -> bool {
        self.guard.truncated()
    }

    /// The file's size now if it is shorter than the mapping, or the
    /// mapping met a page beyond its end.
    fn truncation(&self) -> Option<ShmError> {
        let size = self.file.metadata().map(|m| m.len()).unwrap_or(0);
        let needs = self.map.len() as u64;
        (self.truncated() || size < needs).then(|| ShmError::Truncated {
            name: self.name.clone(),
            path: self.path.clone(),
            size,
            needs,
        })
    }

    fn truncated_err(&self) -> ShmError {
        self.truncation().unwrap_or_else(|| ShmError::Truncated {
            name: self.name.clone(),
            path: self.path.clone(),
            size: self.map.len() as u64,
            needs: self.map.len() as u64,
        })
    }

    /// A corruption error, or the truncation that explains it.
    fn corrupt(&self, field: impl Into<String>, detail: String) -> ShmError {
        if let Some(t) = self.truncation() {
            return t;
        }
        ShmError::Corrupt {
            name: self.name.clone(),
            field: field.into(),
            detail,
        }
    }

    /// Check that the fields fixed at creation still hold what `open` found
    /// (invariant 1), and that `writer_pid` is a possible PID. Called on slow
    /// paths only (before sleeping, after an overrun), never per message.
    fn check_layout(&self) -> Result<()> {
        if self.truncated() {
            return Err(self.truncated_err());
        }
        let p = self.map.as_ptr();
        // SAFETY: offsets 0..48 lie in the header (invariant 1); the bytes
        // are read with volatile loads because another process could write
        // them (which is exactly what this check looks for); alignment is
        // that of the Header fields.
        let (magic, slots, maxm, stride, total) = unsafe {
            (
                std::ptr::read_volatile(p as *const [u8; 8]),
                std::ptr::read_volatile(p.add(16) as *const u32),
                std::ptr::read_volatile(p.add(24) as *const u64),
                std::ptr::read_volatile(p.add(32) as *const u64),
                std::ptr::read_volatile(p.add(40) as *const u64),
            )
        };
        if magic != MAGIC {
            return Err(self.corrupt("magic", format!("now {magic:02x?}")));
        }
        let fields = [
            ("slot_count", u64::from(slots), self.slots),
            ("max_message", maxm, self.max_message as u64),
            ("slot_stride", stride, self.stride as u64),
            ("total_size", total, self.map.len() as u64),
        ];
        for (field, now, was) in fields {
            if now != was {
                return Err(self.corrupt(
                    field,
                    format!("changed from {was} to {now} while the channel was open"),
                ));
            }
        }
        let pid = self.header().writer_pid.load(Ordering::Relaxed);
        if pid > PID_MAX_LIMIT {
            return Err(self.corrupt(
                "writer_pid",
                format!("{pid} is above the largest Linux PID {PID_MAX_LIMIT}"),
            ));
        }
        Ok(())
    }

    fn wake(&self) {
        let h = self.header();
        if h.waiters.load(Ordering::SeqCst) > 0 {
            h.notify.fetch_add(1, Ordering::SeqCst);
            let _ = rustix::thread::futex::wake(
                &h.notify,
                rustix::thread::futex::Flags::empty(),
                i32::MAX as u32,
            );
        }
    }
}

/// The single writer of a channel.
pub struct Writer {
    seg: Segment,
    seq: u64,
    pid: u32,
    /// Policy::Block: the lowest position a reader may still need. Until a
    /// first reader registers it stays where this writer started, so the
    /// first `slots` messages wait in the ring for that reader (as a zmq PUSH
    /// queues until its peer connects); once readers have come and all gone,
    /// nobody needs anything and the writer no longer waits, so a reader that
    /// dies never stalls it.
    min_pos: u64,
    /// Whether any reader has been seen registered.
    had_reader: bool,
    block_timeout: Duration,
}

/// Default bound on a blocked writer's wait for its slowest reader.
pub const DEFAULT_BLOCK_TIMEOUT: Duration = Duration::from_secs(10);

impl Writer {
    /// Create channel `name` with `cfg`, or take over an existing one whose
    /// writer is gone (its layout must match `cfg`).
    pub fn create(name: &str, cfg: ChannelConfig) -> Result<Writer> {
        Self::create_with(name, cfg, Access::Private)
    }

    /// As [`Self::create`], with the given [`Access`].
    pub fn create_with(name: &str, cfg: ChannelConfig, access: Access) -> Result<Writer> {
        cfg.check(name)?;
        let path = segment_path(name)?;
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
            Err(ShmError::NotFound { .. }) => Self::create_new(name, &path, cfg, access)?,
            Err(e) => return Err(e),
        };
        Self::take(seg)
    }

    /// Build a new segment in a temporary file, then link it into place, so
    /// no process ever sees a half-initialised header.
    fn create_new(name: &str, path: &Path, cfg: ChannelConfig, access: Access) -> Result<Segment> {
        let dir = path.parent().expect("segment path has a directory");
        let tmp = dir.join(format!(".{FILE_PREFIX}{name}.{}.tmp", std::process::id()));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(access.mode())
            .open(&tmp)
            .map_err(io("create", &tmp))?;
        let r = (|| {
            // The mode asked for, whatever the umask.
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(access.mode()))
                .map_err(io("chmod", &tmp))?;
            reserve(&file, &tmp, cfg.total() as u64)?;
            // SAFETY: as in map_file; nobody else knows this file yet, and
            // its pages were all reserved just above (invariant 7).
            let mut map = unsafe { memmap2::MmapMut::map_mut(&file) }.map_err(io("mmap", &tmp))?;
            map[..8].copy_from_slice(&MAGIC);
            map[8..12].copy_from_slice(&LAYOUT_VERSION.to_ne_bytes());
            map[12..16].copy_from_slice(&(HEADER_SIZE as u32).to_ne_bytes());
            map[16..20].copy_from_slice(&(cfg.slots as u32).to_ne_bytes());
            map[20..24].copy_from_slice(&(cfg.policy as u32).to_ne_bytes());
            map[24..32].copy_from_slice(&(cfg.max_message as u64).to_ne_bytes());
            map[32..40].copy_from_slice(&(cfg.stride() as u64).to_ne_bytes());
            map[40..48].copy_from_slice(&(cfg.total() as u64).to_ne_bytes());
            map.flush().map_err(io("flush", &tmp))?;
            // link() fails if another writer created the channel meanwhile.
            std::fs::hard_link(&tmp, path).map_err(io("publish", path))
        })();
        let _ = std::fs::remove_file(&tmp);
        match r {
            Ok(()) => Segment::open(name, path.to_path_buf(), access),
            Err(ShmError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::AlreadyExists =>
            {
                Segment::open(name, path.to_path_buf(), access)
            }
            Err(e) => Err(e),
        }
    }

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
        Ok(Writer {
            seg,
            seq,
            pid,
            min_pos: seq,
            had_reader: false,
            block_timeout: DEFAULT_BLOCK_TIMEOUT,
        })
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
    /// of readers whose process is gone when `reap` is set. An entry no
    /// reader can have written (a PID above [`PID_MAX_LIMIT`], a position
    /// beyond the message being written) is corruption.
    fn slowest(&self, reap: bool) -> Result<Option<(u64, u32)>> {
        let mut min: Option<(u64, u32)> = None;
        for i in 0..MAX_READERS {
            let e = self.seg.entry(i);
            let pid = e.pid.load(Ordering::SeqCst);
            if pid == 0 {
                continue;
            }
            if pid > PID_MAX_LIMIT {
                return Err(self.seg.corrupt(
                    format!("reader registry entry {i} pid"),
                    format!("{pid} is above the largest Linux PID {PID_MAX_LIMIT}"),
                ));
            }
            if reap && !pid_alive(pid) {
                let _ = e
                    .pid
                    .compare_exchange(pid, 0, Ordering::SeqCst, Ordering::SeqCst);
                continue;
            }
            let pos = e.pos.load(Ordering::SeqCst);
            if pos > self.seq {
                return Err(self.seg.corrupt(
                    format!("reader registry entry {i} position"),
                    format!(
                        "{pos} (pid {pid}) is beyond message {}, the next to be written",
                        self.seq
                    ),
                ));
            }
            if min.is_none_or(|(m, _)| pos < m) {
                min = Some((pos, pid));
            }
        }
        Ok(min)
    }

    /// Policy::Block: wait until no live reader still needs the message that
    /// writing `s` would overwrite (`s - slots`).
    fn wait_for_space(&mut self, s: u64) -> Result<()> {
        if s < self.min_pos + self.seg.slots || self.room(s, false)?.is_ok() {
            return Ok(());
        }
        self.seg.check_layout()?;
        let t0 = Instant::now();
        let r = loop {
            let seen = {
                let h = self.seg.header();
                h.writer_needs
                    .store((s + 1).saturating_sub(self.seg.slots), Ordering::SeqCst);
                h.writer_waiting.store(1, Ordering::SeqCst);
                h.space.load(Ordering::SeqCst)
            };
            let (pos, pid) = match self.room(s, true) {
                Err(e) => break Err(e),
                Ok(Ok(())) => break Ok(()),
                Ok(Err(slowest)) => slowest,
            };
            let waited = t0.elapsed();
            if waited >= self.block_timeout {
                break Err(ShmError::Timeout {
                    name: self.seg.name.clone(),
                    waited_ms: waited.as_millis() as u64,
                    pid,
                    pos,
                });
            }
            // Sleep until a reader advances, or 1 ms to look for dead ones.
            let ts = rustix::time::Timespec {
                tv_sec: 0,
                tv_nsec: 1_000_000,
            };
            let _ = rustix::thread::futex::wait(
                &self.seg.header().space,
                rustix::thread::futex::Flags::empty(),
                seen,
                Some(&ts),
            );
        };
        self.seg.header().writer_waiting.store(0, Ordering::SeqCst);
        r
    }

    /// Whether message `s` may be written now (updating the cached floor);
    /// if not, the position and PID of what holds it back (PID 0: the first
    /// reader, not yet come).
    fn room(&mut self, s: u64, reap: bool) -> Result<std::result::Result<(), (u64, u32)>> {
        let m = self.slowest(reap)?;
        self.had_reader |= m.is_some();
        let need = match m {
            Some((p, _)) => p,
            None if self.had_reader => s,
            None => self.min_pos,
        };
        // need <= s (checked in `slowest`), so this cannot overflow.
        Ok(if s < need + self.seg.slots {
            self.min_pos = need;
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
        loan.copy_from_slice(bytes);
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
    pub fn loan(&mut self, len: usize) -> Result<Loan<'_>> {
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
            self.wait_for_space(s)?;
        }
        let (sh, data) = self.seg.slot(s);
        sh.stamp.store(2 * s + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        Ok(Loan { w: self, data, len })
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
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
    /// Publish the message; returns its sequence number.
    pub fn commit(self) -> u64 {
        let s = self.w.seq;
        let (sh, _) = self.w.seg.slot(s);
        sh.len.store(self.len as u64, Ordering::Relaxed);
        sh.stamp.store(2 * s + 2, Ordering::Release);
        self.w.seq = s + 1;
        self.w.seg.header().next_seq.store(s + 1, Ordering::SeqCst);
        self.w.seg.wake();
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
        // max_message <= stride - SLOT_HEADER); only this writer writes it.
        unsafe { std::slice::from_raw_parts(self.data, self.len) }
    }
}

impl std::ops::DerefMut for Loan<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref, and the loan borrows the writer mutably.
        unsafe { std::slice::from_raw_parts_mut(self.data, self.len) }
    }
}

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
    seg: Segment,
    pos: u64,
    lost_total: u64,
    spin: u32,
    /// This reader's registry entry, if it got one.
    entry: Option<usize>,
    /// Highest `next_seq` seen: it must never go back.
    seen_next: u64,
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

/// Longest a reader sleeps without checking that its segment is intact.
const IDLE_CHECK: Duration = Duration::from_secs(1);

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

    /// As [`Self::attach`], with the given [`Access`].
    pub fn attach_with(name: &str, start: StartAt, access: Access) -> Result<Reader> {
        let path = segment_path(name)?;
        let seg = Segment::open(name, path, access)?;
        seg.check_layout()?;
        let next = seg.header().next_seq.load(Ordering::SeqCst);
        if next > MAX_SEQ {
            return Err(seg.corrupt(
                "next_seq",
                format!("{next} is beyond any possible message number ({MAX_SEQ})"),
            ));
        }
        let pos = match start {
            StartAt::Newest => next.saturating_sub(1),
            StartAt::Next => next,
            StartAt::Oldest => next.saturating_sub(seg.slots),
        };
        let entry = Self::register(&seg, pos);
        if entry.is_none() && seg.policy == Policy::Block {
            return Err(ShmError::RegistryFull { name: name.into() });
        }
        Ok(Reader {
            seg,
            pos,
            lost_total: 0,
            spin: DEFAULT_SPIN,
            entry,
            seen_next: next,
        })
    }

    /// Claim a registry entry: a free one, or one whose process is gone.
    fn register(seg: &Segment, pos: u64) -> Option<usize> {
        let me = std::process::id();
        for i in 0..MAX_READERS {
            let e = seg.entry(i);
            let cur = e.pid.load(Ordering::SeqCst);
            if cur != 0 && pid_alive(cur) {
                continue;
            }
            // Publish the position before the PID makes the entry live.
            e.pos.store(pos, Ordering::SeqCst);
            if e.pid
                .compare_exchange(cur, me, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return Some(i);
            }
        }
        None
    }

    /// Tell the writer this reader no longer needs messages below `pos`.
    #[inline]
    fn release_below(seg: &Segment, entry: Option<usize>, pos: u64) {
        let Some(i) = entry else { return };
        let e = seg.entry(i);
        if seg.policy == Policy::Block {
            e.pos.store(pos, Ordering::SeqCst);
            let h = seg.header();
            // Wake the writer only when this reader has freed what it waits
            // for, not on every message.
            if h.writer_waiting.load(Ordering::SeqCst) != 0
                && pos >= h.writer_needs.load(Ordering::SeqCst)
            {
                h.space.fetch_add(1, Ordering::SeqCst);
                let _ =
                    rustix::thread::futex::wake(&h.space, rustix::thread::futex::Flags::empty(), 1);
            }
        } else {
            e.pos.store(pos, Ordering::Relaxed);
        }
    }

    pub fn name(&self) -> &str {
        &self.seg.name
    }

    /// Busy-poll this many iterations before sleeping on the futex;
    /// `u32::MAX` never sleeps (lowest latency, one core kept busy), 0 sleeps
    /// at once (no CPU while idle).
    pub fn set_spin(&mut self, iterations: u32) {
        self.spin = iterations;
    }

    /// The channel's overflow policy.
    pub fn policy(&self) -> Policy {
        self.seg.policy
    }

    /// The address and length of this reader's mapping of the channel, so
    /// a binding can show that a view points into shared memory (zero-copy).
    pub fn mapping(&self) -> (usize, usize) {
        (self.seg.map.as_ptr() as usize, self.seg.map.len())
    }

    /// Whether a receive would return at once (a message, or an overrun to
    /// report).
    pub fn has_data(&self) -> bool {
        self.seg.header().next_seq.load(Ordering::Acquire) > self.pos
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
        self.seg.header().next_seq.load(Ordering::SeqCst)
    }

    /// PID of the channel's writer, if one is attached and alive.
    pub fn writer(&self) -> Option<u32> {
        let pid = self.seg.header().writer_pid.load(Ordering::SeqCst);
        pid_alive(pid).then_some(pid)
    }

    /// Check message `seq`'s slot and, if it is complete, hand its bytes to
    /// `f`, then confirm the stamp did not move meanwhile.
    fn try_read<R>(&self, seq: u64, f: impl FnOnce(&[u8]) -> R) -> (Try, Option<R>) {
        let (sh, data) = self.seg.slot(seq);
        let want = 2 * seq + 2;
        let s1 = sh.stamp.load(Ordering::Acquire);
        if s1 < want {
            return (Try::NotYet, None);
        }
        if s1 > want {
            return (Try::Overrun(s1), None);
        }
        let len = (sh.len.load(Ordering::Relaxed) as usize).min(self.seg.max_message);
        // SAFETY: the bytes lie inside the slot. The writer may be rewriting
        // them concurrently (another process, outside Rust's model); the
        // stamp check below rejects whatever was read in that case
        // (invariant 3).
        let bytes = unsafe { std::slice::from_raw_parts(data as *const u8, len) };
        if let Some(last) = bytes.last() {
            // Touch the message's last page before anything is handed out:
            // if it has left the file, the mapping is marked truncated now
            // (invariant 7) and the check below refuses the message, even
            // when `f` (a view) reads nothing yet. One load.
            // SAFETY: `last` is a valid reference into the slot (above,
            // invariant 1); a page beyond the file is guarded (invariant 7).
            unsafe { std::ptr::read_volatile(last) };
        }
        let r = f(bytes);
        fence(Ordering::Acquire);
        let s2 = sh.stamp.load(Ordering::Relaxed);
        if s2 != want {
            return (Try::Overrun(s2), None);
        }
        if self.seg.truncated() {
            // Some of what was read may be the zeros put over a page that
            // left the file (invariant 7): not a message.
            return (Try::NotYet, None);
        }
        (Try::Got(len), Some(r))
    }

    /// Load `next_seq` and check it against invariant 4: it never goes
    /// back, and it stays below [`MAX_SEQ`].
    fn load_next(&mut self) -> Result<u64> {
        let n = self.seg.header().next_seq.load(Ordering::SeqCst);
        if n > MAX_SEQ {
            return Err(self.seg.corrupt(
                "next_seq",
                format!("{n} is beyond any possible message number ({MAX_SEQ})"),
            ));
        }
        if n < self.seen_next {
            return Err(self.seg.corrupt(
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
        let m = self.seg.slots - 1;
        stamp == 0 || ((stamp - 1) / 2) & m == seq & m
    }

    fn bad_stamp(&self, seq: u64, stamp: u64, why: &str) -> ShmError {
        self.seg.corrupt(
            format!("slot {} stamp", seq & (self.seg.slots - 1)),
            format!(
                "{stamp} {why} (reading message {seq}, {} published)",
                self.seen_next
            ),
        )
    }

    /// Slow path after [`Try::NotYet`]: message `seq` is not complete in its
    /// slot, which is only possible while `next_seq <= seq` (invariant 4).
    fn check_not_yet(&mut self, seq: u64) -> Result<Try> {
        if self.seg.truncated() {
            return Err(self.seg.truncated_err());
        }
        let n = self.load_next()?;
        let stamp = self.seg.slot(seq).0.stamp.load(Ordering::Acquire);
        if !self.stamp_fits(seq, stamp) {
            return Err(self.bad_stamp(seq, stamp, "belongs to no message of this slot"));
        }
        let want = 2 * seq + 2;
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
        if self.seg.truncated() {
            return Err(self.seg.truncated_err());
        }
        let seq = self.pos;
        let next = self.load_next()?;
        if stamp <= 2 * seq + 2 {
            return Err(self.bad_stamp(seq, stamp, "went back while being read"));
        }
        if !self.stamp_fits(seq, stamp) {
            return Err(self.bad_stamp(seq, stamp, "belongs to no message of this slot"));
        }
        if (stamp - 1) / 2 > next {
            return Err(self.bad_stamp(seq, stamp, "names a message beyond next_seq"));
        }
        let to = next.saturating_sub(self.seg.slots / 2).max(seq + 1);
        self.lost_total += to - seq;
        self.pos = to;
        Self::release_below(&self.seg, self.entry, self.pos);
        Ok(())
    }

    /// Copy the next message into `buf` without waiting. `Ok(None)` when
    /// there is nothing new; an error if the segment is corrupt.
    pub fn try_recv(&mut self, buf: &mut Vec<u8>) -> Result<Option<Received>> {
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
                    Self::release_below(&self.seg, self.entry, self.pos);
                    return Ok(Some(Received {
                        seq,
                        lost: self.lost_total - lost0,
                    }));
                }
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
            if let Some(r) = self.try_recv(buf)? {
                return Ok(Some(r));
            }
            // Woken with nothing to read more than once: whatever the ring
            // says, the deadline still holds.
            empty += 1;
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
    pub fn view_checked(&mut self, timeout: Option<Duration>) -> Result<Option<View<'_>>> {
        let mut deadline = Deadline::new(timeout);
        let lost0 = self.lost_total;
        let mut rounds = 0usize;
        let mut last_look = false;
        loop {
            rounds += 1;
            let (t, _) = self.try_read(self.pos, |_| ());
            let t = match t {
                Try::NotYet => self.check_not_yet(self.pos)?,
                t => t,
            };
            match t {
                Try::Got(len) => {
                    let seq = self.pos;
                    self.pos += 1;
                    let (sh, data) = self.seg.slot(seq);
                    return Ok(Some(View {
                        seg: &self.seg,
                        entry: self.entry,
                        stamp: &sh.stamp,
                        want: 2 * seq + 2,
                        data,
                        len,
                        received: Received {
                            seq,
                            lost: self.lost_total - lost0,
                        },
                        _r: std::marker::PhantomData,
                    }));
                }
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
            _ => Err(self.published().saturating_sub(self.seg.slots - 1)),
        }
    }

    /// Sleep on the channel's futex until something is published or the
    /// deadline passes; false when the deadline has passed. Checks the
    /// header before sleeping, so a corrupt segment is reported, not slept
    /// or spun on.
    fn wait(&self, deadline: Option<Instant>) -> Result<bool> {
        let h = self.seg.header();
        let mut i = 0u32;
        while i < self.spin {
            if h.next_seq.load(Ordering::Acquire) > self.pos {
                return Ok(true);
            }
            std::hint::spin_loop();
            i = i.wrapping_add(1);
            if self.spin == u32::MAX && i.is_multiple_of(1 << 16) {
                // Busy-poll forever, but still honour the deadline.
                self.seg.check_layout()?;
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Ok(false);
                }
                i = 0;
            }
        }
        self.seg.check_layout()?;
        h.waiters.fetch_add(1, Ordering::SeqCst);
        let seen = h.notify.load(Ordering::SeqCst);
        let ready = h.next_seq.load(Ordering::SeqCst) > self.pos;
        let mut alive = true;
        if !ready {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left.is_some_and(|l| l.is_zero()) {
                alive = false;
            } else {
                // Without a deadline, still look up once a second: a writer
                // cannot wake a reader whose header page left the file.
                let l = left.unwrap_or(IDLE_CHECK).min(IDLE_CHECK);
                let ts = rustix::time::Timespec {
                    tv_sec: l.as_secs() as _,
                    tv_nsec: l.subsec_nanos() as _,
                };
                let r = rustix::thread::futex::wait(
                    &h.notify,
                    rustix::thread::futex::Flags::empty(),
                    seen,
                    Some(&ts),
                );
                if r == Err(rustix::io::Errno::TIMEDOUT) && l == IDLE_CHECK {
                    if let Some(e) = self.seg.truncation() {
                        h.waiters.fetch_sub(1, Ordering::SeqCst);
                        return Err(e);
                    }
                }
            }
        }
        h.waiters.fetch_sub(1, Ordering::SeqCst);
        Ok(alive && deadline.is_none_or(|d| Instant::now() < d))
    }
}

/// Most channels one [`wait_any`] call can watch (the kernel's futex_waitv
/// limit).
pub const MAX_WAIT_CHANNELS: usize = 128;

/// Wait until at least one of `readers` has a message (or an overrun) to
/// deliver, sleeping on all their futexes at once with `futex_waitv`, not
/// spinning and with no limit of 32 channels. Fills `ready` with the indices
/// of the readers that have something; `Ok(false)` if `timeout` passed first.
pub fn wait_any(
    readers: &[&Reader],
    timeout: Option<Duration>,
    ready: &mut Vec<usize>,
) -> Result<bool> {
    use rustix::thread::futex::{waitv, Wait, WaitFlags, WaitvFlags};
    ready.clear();
    if readers.len() > MAX_WAIT_CHANNELS {
        return Err(ShmError::BadConfig {
            name: format!("{} channels", readers.len()),
            reason: format!("one wait_any watches at most {MAX_WAIT_CHANNELS} channels"),
        });
    }
    let scan = |ready: &mut Vec<usize>| {
        ready.extend(
            readers
                .iter()
                .enumerate()
                .filter(|(_, r)| r.has_data())
                .map(|(i, _)| i),
        );
        !ready.is_empty()
    };
    if scan(ready) {
        return Ok(true);
    }
    let mut deadline = Deadline::new(timeout);
    let until = deadline.instant();
    let mut waits = [Wait::new(); MAX_WAIT_CHANNELS];
    loop {
        for (w, r) in waits.iter_mut().zip(readers) {
            let h = r.seg.header();
            h.waiters.fetch_add(1, Ordering::SeqCst);
            w.val = u64::from(h.notify.load(Ordering::SeqCst));
            w.uaddr = rustix::thread::futex::WaitPtr::new(h.notify.as_ptr().cast());
            w.flags = WaitFlags::SIZE_U32;
        }
        let got = scan(ready);
        if !got {
            // futex_waitv takes an absolute time on the given clock.
            let abs = until.map(|u| {
                let left = u.saturating_duration_since(Instant::now());
                let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
                let ns = now.tv_nsec as u64 + u64::from(left.subsec_nanos());
                rustix::time::Timespec {
                    tv_sec: now.tv_sec + left.as_secs() as i64 + (ns / 1_000_000_000) as i64,
                    tv_nsec: (ns % 1_000_000_000) as _,
                }
            });
            let _ = waitv(
                &waits[..readers.len()],
                WaitvFlags::empty(),
                abs.as_ref(),
                rustix::time::ClockId::Monotonic,
            );
        }
        for r in readers {
            r.seg.header().waiters.fetch_sub(1, Ordering::SeqCst);
        }
        if got || scan(ready) {
            return Ok(true);
        }
        if until.is_some_and(|u| Instant::now() >= u) {
            return Ok(false);
        }
    }
}

/// A deadline read from the clock only when first needed, so a receive
/// that finds its message at once costs no clock read.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    timeout: Option<Duration>,
    at: Option<Option<Instant>>,
}

impl Deadline {
    /// `None`: no deadline (wait forever).
    pub fn new(timeout: Option<Duration>) -> Self {
        Deadline { timeout, at: None }
    }

    /// The instant, fixed at the first call.
    pub fn instant(&mut self) -> Option<Instant> {
        let t = self.timeout;
        *self.at.get_or_insert_with(|| t.map(|t| Instant::now() + t))
    }

    /// Time left (`None`: no limit).
    pub fn remaining(&mut self) -> Option<Duration> {
        self.instant()
            .map(|d| d.saturating_duration_since(Instant::now()))
    }
}

/// A message read in place. Valid only if [`View::valid`] says so after the
/// bytes were used.
pub struct View<'r> {
    seg: &'r Segment,
    entry: Option<usize>,
    stamp: &'r AtomicU64,
    want: u64,
    data: *mut u8,
    len: usize,
    pub received: Received,
    _r: std::marker::PhantomData<&'r Reader>,
}

impl Drop for View<'_> {
    /// Under Policy::Block the slot stays reserved for this reader until
    /// the view is dropped.
    fn drop(&mut self) {
        Reader::release_below(self.seg, self.entry, self.received.seq + 1);
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        if let Some(i) = self.entry {
            let _ = self.seg.entry(i).pid.compare_exchange(
                std::process::id(),
                0,
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
            let h = self.seg.header();
            if h.writer_waiting.load(Ordering::SeqCst) != 0 {
                h.space.fetch_add(1, Ordering::SeqCst);
                let _ =
                    rustix::thread::futex::wake(&h.space, rustix::thread::futex::Flags::empty(), 1);
            }
        }
    }
}

impl View<'_> {
    /// The message bytes, in the shared segment.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: see Reader::try_read; validity is established by `valid`.
        unsafe { std::slice::from_raw_parts(self.data as *const u8, self.len) }
    }

    /// True if the writer has not touched the slot since the view was taken:
    /// everything read through [`Self::bytes`] so far was the whole message.
    pub fn valid(&self) -> bool {
        fence(Ordering::Acquire);
        self.stamp.load(Ordering::Relaxed) == self.want && !self.seg.truncated()
    }
}

/// A channel found in [`shm_dir`].
#[derive(Debug, Clone)]
pub struct ChannelInfo {
    pub name: String,
    pub path: PathBuf,
    pub bytes: u64,
    /// Layout and state, or why the segment is unreadable.
    pub state: std::result::Result<ChannelState, String>,
    /// The segment was refused for who owns it or what it is (a link,
    /// another user's file, a wider mode): not a ptmp channel of this user's
    /// to clean up.
    pub untrusted: bool,
}

#[derive(Debug, Clone, Copy)]
pub struct ChannelState {
    pub config: ChannelConfig,
    pub published: u64,
    pub writer_pid: u32,
    pub writer_alive: bool,
}

/// List the channels in [`shm_dir`].
pub fn list() -> Result<Vec<ChannelInfo>> {
    let dir = shm_dir();
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).map_err(io("list", &dir))? {
        let e = e.map_err(io("list", &dir))?;
        let fname = e.file_name().to_string_lossy().into_owned();
        let Some(name) = fname.strip_prefix(FILE_PREFIX) else {
            continue;
        };
        let path = e.path();
        let bytes = e.metadata().map(|m| m.len()).unwrap_or(0);
        let seg = Segment::open(name, path.clone(), Access::Group);
        let untrusted = matches!(seg, Err(ShmError::Untrusted { .. }));
        let state = seg
            .map(|seg| {
                let h = seg.header();
                let pid = h.writer_pid.load(Ordering::SeqCst);
                ChannelState {
                    config: ChannelConfig {
                        slots: seg.slots as usize,
                        max_message: seg.max_message,
                        policy: seg.policy,
                    },
                    published: h.next_seq.load(Ordering::SeqCst),
                    writer_pid: pid,
                    writer_alive: pid_alive(pid),
                }
            })
            .map_err(|e| e.to_string());
        out.push(ChannelInfo {
            name: name.into(),
            path,
            bytes,
            state,
            untrusted,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Remove channel `name`'s segment. Attached processes keep their mapping;
/// new ones no longer find it.
pub fn remove(name: &str) -> Result<()> {
    let path = segment_path(name)?;
    std::fs::remove_file(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            ShmError::NotFound {
                name: name.into(),
                path: path.clone(),
            }
        } else {
            io("remove", &path)(e)
        }
    })
}
