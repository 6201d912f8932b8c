//! Why a channel could not be used: one error type for the whole crate.

use std::path::{Path, PathBuf};

/// Why a channel could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ShmError {
    /// The name breaks the channel-name rule (see [`crate::ChannelName`]).
    #[error("shm channel name {name:?} is invalid: use {rule}")]
    BadName {
        /// The name as given.
        name: String,
        /// The rule it breaks, [`crate::NAME_RULE`].
        rule: &'static str,
    },
    /// The channel's shape is out of range, or differs from the existing
    /// segment's.
    #[error("shm channel {name}: {reason}")]
    BadConfig {
        /// The channel.
        name: String,
        /// What is wrong with the shape asked for.
        reason: String,
    },
    /// The file is not a ptmp segment this code can read.
    #[error("shm segment {path}: {reason}")]
    BadSegment {
        /// The segment file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The segment is not one this process may trust: a symbolic link, not
    /// a regular file, another user's, or open to more than the channel's
    /// [`crate::Access`] allows.
    #[error("shm segment {path} refused: {reason}")]
    Untrusted {
        /// The segment file.
        path: PathBuf,
        /// Why it is not trusted.
        reason: String,
    },
    /// The file system cannot hold a new segment of this size.
    #[error("shm directory {dir} has no room for a new segment: it needs {needed} bytes and {free} are free (Docker gives containers a 64 MiB /dev/shm: run the container with a larger --shm-size, make the ring smaller (fewer slots or a smaller largest message), use another transport, or set PTMP_SHM_DIR to a larger tmpfs)")]
    NoSpace {
        /// The directory of segments.
        dir: PathBuf,
        /// Bytes the segment needs.
        needed: u64,
        /// Bytes free for this user.
        free: u64,
    },
    /// Another live process already writes this channel.
    #[error("shm channel {name} already has a live writer (pid {pid})")]
    WriterBusy {
        /// The channel.
        name: String,
        /// The writer holding it.
        pid: u32,
    },
    /// A reader asked to attach under an identity that a live reader of
    /// the channel already holds.
    #[error("shm channel {name}: reader identity {ident:?} is already held by a live reader (pid {pid})")]
    ReaderBusy {
        /// The channel.
        name: String,
        /// The identity asked for.
        ident: String,
        /// The process holding it.
        pid: u32,
    },
    /// A reader asked to attach under an identity that was claimed with a
    /// token it does not have (a graph's reader, whose token is in the
    /// graph's private run directory).
    #[error("shm channel {name}: reader identity {ident:?} is locked by a token this reader does not have (it belongs to another run, such as a graph's process; attach under another identity)")]
    ReaderLocked {
        /// The channel.
        name: String,
        /// The identity asked for.
        ident: String,
    },
    /// No segment of that name exists.
    #[error("shm channel {name} does not exist ({path})")]
    NotFound {
        /// The channel.
        name: String,
        /// Where its segment was looked for.
        path: PathBuf,
    },
    /// The message does not fit in a slot.
    #[error("message of {len} bytes exceeds channel {name}'s maximum of {max}")]
    TooLarge {
        /// The channel.
        name: String,
        /// Size of the message offered.
        len: usize,
        /// The channel's largest message.
        max: usize,
    },
    /// A blocked writer waited its whole timeout for the slowest reader.
    #[error("shm channel {name}: timed out after {waited_ms} ms waiting for the slowest reader (pid {pid}, at message {pos}; pid 0: no reader) to free a slot")]
    Timeout {
        /// The channel.
        name: String,
        /// How long the writer waited.
        waited_ms: u64,
        /// The slowest reader (0: the first reader, not yet come).
        pid: u32,
        /// Where the slowest reader stands.
        pos: u64,
    },
    /// A [`crate::Policy::Block`] channel has no registry entry left for
    /// one more reader.
    #[error("shm channel {name}: all {entries} reader registry entries are taken")]
    RegistryFull {
        /// The channel.
        name: String,
        /// How many entries there are, [`crate::MAX_READERS`].
        entries: usize,
    },
    /// The segment holds a state no ptmp process can have written: another
    /// program (or a bug, or a bad disk) changed it under the channel.
    #[error("shm channel {name}: corrupt segment: {field}: {detail} (remove it with `ptmp shm rm {name}`)")]
    Corrupt {
        /// The channel.
        name: String,
        /// The field found in an impossible state.
        field: String,
        /// What it holds and why that is impossible.
        detail: String,
    },
    /// The segment file was cut short while mapped (invariant 7).
    #[error("shm channel {name}: segment {path} truncated while in use (size now {size}, needs {needs}): another program shortened it, or its file system had no memory for a page; recreate the channel")]
    Truncated {
        /// The channel.
        name: String,
        /// The segment file.
        path: PathBuf,
        /// The file's size now.
        size: u64,
        /// The size its mapping needs.
        needs: u64,
    },
    /// A system call on the segment failed.
    #[error("shm {op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file it was done to.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
}

/// The result of a channel operation.
pub type Result<T, E = ShmError> = std::result::Result<T, E>;

/// An [`ShmError::Io`] maker for `op` on `path`, for `map_err`.
pub(crate) fn io(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ShmError {
    let path = path.to_path_buf();
    move |source| ShmError::Io { op, path, source }
}
