//! Segments: where they live, who may use them, and how one is created,
//! opened, mapped and checked (invariants 1, 7 and 9).

use crate::error::{io, Result, ShmError};
use crate::layout::{
    ChannelConfig, Fixed, Header, Policy, ReaderEntry, SlotHeader, FIXED_LEN, HEADER_SIZE,
    LAYOUT_VERSION, MAGIC, MAX_READERS, PID_MAX_LIMIT, REGISTRY_OFFSET, SLOT_HEADER,
};
use crate::name::ChannelName;
use crate::sigbus::{self, MAX_MAPPINGS};
use rustix::fs::OFlags;
use std::fs::{File, OpenOptions};
use std::mem::{offset_of, size_of};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

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
    if gid == rustix::process::getegid().as_raw() {
        return true;
    }
    rustix::process::getgroups().is_ok_and(|groups| groups.iter().any(|g| g.as_raw() == gid))
}

/// Check an opened segment's type, owner and mode against `access`
/// (invariant 9).
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
    let me = rustix::process::geteuid().as_raw();
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

/// Directory holding the segments.
pub fn shm_dir() -> PathBuf {
    std::env::var_os("PTMP_SHM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/dev/shm"))
}

/// Bytes a new segment may still take in [`shm_dir`] (what an
/// unprivileged user may allocate there), or why that cannot be told.
pub fn shm_dir_free() -> std::io::Result<u64> {
    let st = rustix::fs::statvfs(shm_dir())?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

/// File name prefix of ptmp segments in [`shm_dir`].
pub const FILE_PREFIX: &str = "ptmp.";

/// Path of channel `name` ([`ShmError::BadName`] if the name breaks the
/// rule of [`ChannelName`]).
pub fn segment_path(name: &str) -> Result<PathBuf> {
    Ok(ChannelName::new(name)?.path())
}

impl ChannelName {
    /// Where this channel's segment lives: `FILE_PREFIX` + name in
    /// [`shm_dir`].
    pub fn path(&self) -> PathBuf {
        shm_dir().join(format!("{FILE_PREFIX}{}", self.as_str()))
    }
}

/// Whether a process with this PID exists: a signal-0 probe, which sends
/// nothing. A process of another user exists too (the probe is refused
/// with `EPERM`). Invariants 2 and 5 use it to find dead writers and
/// readers.
pub fn pid_alive(pid: u32) -> bool {
    let Some(p) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    match rustix::process::test_kill_process(p) {
        Ok(()) => true,
        Err(e) => e == rustix::io::Errno::PERM,
    }
}

/// Give a new segment file its size with every page allocated now, so a
/// full file system is an error here, naming the size needed and the space
/// free, not a SIGBUS at the first write to a page that has no memory.
pub(crate) fn reserve(file: &File, path: &Path, total: u64) -> Result<()> {
    use std::os::fd::AsRawFd;
    // Growing a file past the process's file size limit (`ulimit -f`)
    // raises SIGXFSZ, which kills by default: refuse first.
    let lim = rustix::process::getrlimit(rustix::process::Resource::Fsize);
    if let Some(cur) = lim.current.filter(|&cur| total > cur) {
        return Err(io("reserve space for", path)(std::io::Error::other(format!(
            "the segment needs {total} bytes but this process may not write files beyond {cur} bytes (its file size limit, `ulimit -f`)"
        ))));
    }
    // posix_fallocate, not the fallocate system call rustix offers: where
    // the file system lacks fallocate, the C library reserves the pages by
    // writing them, which is what invariant 7 needs.
    // SAFETY: a valid open descriptor and a non-negative range; the call
    // only changes the file's size and allocation (invariant 7).
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
    rustix::fs::fstatvfs(file).map_or(0, |st| st.f_bavail.saturating_mul(st.f_frsize))
}

/// A mapped, validated segment.
pub(crate) struct Segment {
    /// The mapping's entry in the SIGBUS registry (invariant 7); declared
    /// first so it is dropped, and unregistered, before the map is unmapped.
    guard: sigbus::Guard,
    pub(crate) map: memmap2::MmapMut,
    /// The open segment, to tell its size now.
    pub(crate) file: File,
    pub(crate) path: PathBuf,
    pub(crate) name: String,
    pub(crate) slots: u64,
    pub(crate) stride: usize,
    pub(crate) max_message: usize,
    pub(crate) policy: Policy,
}

impl Segment {
    /// Registry entry `i` (below [`MAX_READERS`]).
    pub(crate) fn entry(&self, i: usize) -> &ReaderEntry {
        assert!(i < MAX_READERS);
        // SAFETY: the registry lies inside the header (invariant 1, checked
        // in `map_file`), entries are 64-byte aligned in a page-aligned map
        // and all their fields are atomic, so a shared reference is sound
        // whatever other processes do to them.
        unsafe {
            &*(self
                .map
                .as_ptr()
                .add(REGISTRY_OFFSET + i * size_of::<ReaderEntry>())
                as *const ReaderEntry)
        }
    }

    /// The header.
    pub(crate) fn header(&self) -> &Header {
        // SAFETY: the map is page-aligned and at least HEADER_SIZE long
        // (invariant 1, checked in `map_file`), Header fits in it, and every
        // field that changes after creation is atomic.
        unsafe { &*(self.map.as_ptr() as *const Header) }
    }

    /// The slot of message `seq`: its header and the start of its payload.
    pub(crate) fn slot(&self, seq: u64) -> (&SlotHeader, *mut u8) {
        let i = (seq & (self.slots - 1)) as usize;
        let off = HEADER_SIZE + i * self.stride;
        // SAFETY: i < slots, so the slot lies inside the map (invariant 1);
        // slot offsets are 64-byte aligned; the slot header is atomic.
        unsafe {
            let base = self.map.as_ptr().add(off) as *mut u8;
            (&*(base as *const SlotHeader), base.add(SLOT_HEADER))
        }
    }

    /// Map an existing file and check invariant 1. Never follows a
    /// symbolic link; refuses a file `access` does not trust.
    pub(crate) fn open(name: &str, path: PathBuf, access: Access) -> Result<Segment> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32)
            .open(&path)
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    ShmError::NotFound {
                        name: name.into(),
                        path: path.clone(),
                    }
                } else if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
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
        let mut h = [0u8; FIXED_LEN];
        h.copy_from_slice(&map[..FIXED_LEN]);
        let f = Fixed::read(&h);
        if f.magic != MAGIC {
            return Err(bad(format!(
                "bad magic {:02x?}: not a ptmp shared-memory segment",
                &f.magic
            )));
        }
        let version = f.version;
        if version != LAYOUT_VERSION {
            return Err(bad(format!(
                "layout version {version}, this ptmp reads version {LAYOUT_VERSION}"
            )));
        }
        let (hsize, slots, maxm, stride, total) = (
            f.header_size,
            f.slot_count,
            f.max_message,
            f.slot_stride,
            f.total_size,
        );
        let policy = match f.policy {
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

    /// Build a new segment in a temporary file, then link it into place, so
    /// no process ever sees a half-initialised header; opens whichever
    /// segment is at `path` afterwards (another writer's, if it was first).
    pub(crate) fn create(
        name: &str,
        path: &Path,
        cfg: ChannelConfig,
        access: Access,
    ) -> Result<Segment> {
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
            Fixed::new(&cfg).write(&mut map[..FIXED_LEN]);
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

    /// Whether a page of the mapping was found beyond the end of the file
    /// (invariant 7): one relaxed load.
    #[inline]
    pub(crate) fn truncated(&self) -> bool {
        self.guard.truncated()
    }

    /// The file's size now if it is shorter than the mapping, or the
    /// mapping met a page beyond its end.
    pub(crate) fn truncation(&self) -> Option<ShmError> {
        let size = self.file.metadata().map(|m| m.len()).unwrap_or(0);
        let needs = self.map.len() as u64;
        (self.truncated() || size < needs).then(|| ShmError::Truncated {
            name: self.name.clone(),
            path: self.path.clone(),
            size,
            needs,
        })
    }

    /// The truncation error, with the sizes as they are now.
    pub(crate) fn truncated_err(&self) -> ShmError {
        self.truncation().unwrap_or_else(|| ShmError::Truncated {
            name: self.name.clone(),
            path: self.path.clone(),
            size: self.map.len() as u64,
            needs: self.map.len() as u64,
        })
    }

    /// A corruption error, or the truncation that explains it.
    pub(crate) fn corrupt(&self, field: impl Into<String>, detail: String) -> ShmError {
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
    pub(crate) fn check_layout(&self) -> Result<()> {
        if self.truncated() {
            return Err(self.truncated_err());
        }
        let p = self.map.as_ptr();
        // SAFETY: the fields lie in the header (invariant 1) at the offsets
        // of `Header`, which also gives their alignment; they are read with
        // volatile loads because another process could write them (which is
        // exactly what this check looks for).
        let (magic, slots, maxm, stride, total) = unsafe {
            (
                std::ptr::read_volatile(p.add(offset_of!(Header, magic)) as *const [u8; 8]),
                std::ptr::read_volatile(p.add(offset_of!(Header, slot_count)) as *const u32),
                std::ptr::read_volatile(p.add(offset_of!(Header, max_message)) as *const u64),
                std::ptr::read_volatile(p.add(offset_of!(Header, slot_stride)) as *const u64),
                std::ptr::read_volatile(p.add(offset_of!(Header, total_size)) as *const u64),
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
}
