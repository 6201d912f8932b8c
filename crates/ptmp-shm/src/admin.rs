//! Looking after the segment directory: listing channels and removing
//! them (`ptmp shm ls`, `ptmp shm rm`).

use crate::error::{io, Result, ShmError};
use crate::layout::{ChannelConfig, MAX_READERS};
use crate::name::ChannelName;
use crate::segment::{pid_alive, shm_dir, Access, Segment, FILE_PREFIX};
use crate::wait::PublishFence;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

/// A channel found in [`shm_dir`].
#[derive(Debug, Clone)]
pub struct ChannelInfo {
    /// The channel's name.
    pub name: String,
    /// Its segment file.
    pub path: PathBuf,
    /// The file's size.
    pub bytes: u64,
    /// Layout and state, or why the segment is unreadable.
    pub state: std::result::Result<ChannelState, String>,
    /// The segment was refused for who owns it or what it is (a link,
    /// another user's file, a wider mode): not a ptmp channel of this user's
    /// to clean up.
    pub untrusted: bool,
}

/// What a readable segment's header says.
#[derive(Debug, Clone, Copy)]
pub struct ChannelState {
    /// The channel's shape.
    pub config: ChannelConfig,
    /// Messages published so far.
    pub published: u64,
    /// The PID recorded as its writer (0: none).
    pub writer_pid: u32,
    /// Whether that process exists.
    pub writer_alive: bool,
    /// How the last writer to take the channel publishes (a full barrier
    /// per message, or none with readers that sleep running it).
    pub publish_fence: PublishFence,
}

impl ChannelState {
    /// What `seg`'s header says now.
    fn of(seg: &Segment) -> Self {
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
            publish_fence: PublishFence::from_word(h.publish_fence.load(Ordering::SeqCst)),
        }
    }
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
            .map(|seg| ChannelState::of(&seg))
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

/// One entry of a channel's reader registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReaderState {
    /// The PID holding the entry.
    pub pid: u32,
    /// Whether that process exists (a dead reader's entry stays until
    /// another reader takes it over).
    pub alive: bool,
    /// The next message the reader will read (for a durable reader, the
    /// first it has not committed): the writer's `published` minus this is
    /// how far the reader is behind.
    pub position: u64,
    /// Whether the reader attached under an identity
    /// ([`crate::Reader::attach_durable`]): its entry outlives its process
    /// for its grace time, and a successor resumes from it.
    pub durable: bool,
}

/// Channel `name`'s state and its registered readers, read in one look at
/// the header (for `ptmp top --shm`). The positions are read before the
/// published count, so a reader is never shown ahead of the writer.
pub fn inspect(name: &str) -> Result<(ChannelState, Vec<ReaderState>)> {
    let path = ChannelName::new(name)?.path();
    let seg = Segment::open(name, path, Access::Group)?;
    let mut readers = Vec::new();
    for i in 0..MAX_READERS {
        let e = seg.entry(i);
        let pid = e.pid.load(Ordering::SeqCst);
        if pid == 0 {
            continue;
        }
        readers.push(ReaderState {
            pid,
            alive: pid_alive(pid),
            position: e.pos.load(Ordering::SeqCst),
            durable: e.ident.load(Ordering::SeqCst) != 0,
        });
    }
    Ok((ChannelState::of(&seg), readers))
}

/// Remove channel `name`'s segment. Attached processes keep their mapping;
/// new ones no longer find it.
pub fn remove(name: &str) -> Result<()> {
    let path = ChannelName::new(name)?.path();
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
