//! MCAP files (<https://mcap.dev>) of TPSets, through the `mcap` crate.
//!
//! An MCAP file written here holds TPSets only, one MCAP message each:
//!
//! * one MCAP channel per channel string given to [`Writer::write`] (a
//!   graph's edge, an endpoint), its topic that string, or
//!   [`DEFAULT_TOPIC`] for an empty one; message encoding `protobuf`;
//! * one schema, [`SCHEMA_NAME`] (`ptmp.data.TPSet`), encoding
//!   `protobuf`, its data [`TPSET_DESCRIPTOR`]: a serialized
//!   `FileDescriptorSet` of PTMP's `ptmp.proto`, so any MCAP tool
//!   (Foxglove, the `mcap` command, Python's `mcap-protobuf-support`)
//!   decodes the messages without ptmp;
//! * a message's data is the TPSet's protobuf bytes (the second of PTMP's
//!   two frames; the version frame is not stored and is made again on
//!   reading), its log time the time it was received (`log_time_ns`, or
//!   the time it is written when none is given), its publish time the
//!   set's own time (`created`, microseconds, in nanoseconds; the log time
//!   when `created` is not after the epoch), its sequence the set's
//!   `count`;
//! * chunks compressed with zstd (lz4 or none by [`McapOptions`]), each
//!   followed by its message index, and at [`Writer::finish`] a summary
//!   (schemas, channels, statistics, chunk index) so readers can seek.
//!
//! A message that is not a PTMP TPSet message is refused, naming the
//! record. [`Writer::flush`] closes the chunk being written, so a reader
//! (or a recording killed after it) has every record written so far.
//!
//! Reading ([`FileReader`]) goes through the file from its start, chunk by
//! chunk, without the summary: a file cut short (a recorder killed with
//! SIGKILL, no summary, its last chunk partial) gives every record of its
//! whole chunks, then an [`Error::Unreadable`] naming the file and what is
//! missing. Each chunk's CRC is checked before any of its records is
//! returned. Records come back as written: the channel is the topic, the
//! log time is kept, and the frames are PTMP's version frame and the
//! protobuf bytes exactly as written.
//!
//! MCAP files are not appended to: [`crate::append`] leaves one as it
//! is and writes the next numbered file beside it.

mod layout;
mod read;

pub(crate) use layout::layout;
pub use read::FileReader;

use crate::{Error, Format, Result, Writer};
use ::mcap::records::MessageHeader;
use ptmp_data::{Frames, TPSet};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// The schema name of every message ptmp writes: the TPSet's fully
/// qualified protobuf name.
pub const SCHEMA_NAME: &str = "ptmp.data.TPSet";

/// The schema encoding and the message encoding ptmp writes and reads.
pub const ENCODING: &str = "protobuf";

/// The topic of records written with an empty channel.
pub const DEFAULT_TOPIC: &str = "tpsets";

/// PTMP's `ptmp.proto` as a serialized protobuf `FileDescriptorSet`: the
/// schema data every MCAP file ptmp writes embeds.
pub const TPSET_DESCRIPTOR: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/ptmp.fds"));

/// How an MCAP file's chunks are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Chunks {
    /// zstd, at its default level: small files, fast enough to record.
    #[default]
    Zstd,
    /// lz4: faster, larger.
    Lz4,
    /// Not compressed.
    Uncompressed,
}

/// How [`FileWriter`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McapOptions {
    /// The chunks' compression.
    pub chunks: Chunks,
    /// A chunk is closed (compressed and written, with its message index)
    /// once it holds this many bytes of messages.
    pub chunk_bytes: u64,
}

impl Default for McapOptions {
    fn default() -> Self {
        McapOptions {
            chunks: Chunks::Zstd,
            chunk_bytes: 1 << 20,
        }
    }
}

/// An MCAP file of TPSets, written record by record.
pub struct FileWriter {
    w: ::mcap::Writer<BufWriter<File>>,
    path: PathBuf,
    schema: u16,
    channels: HashMap<String, u16>,
    records: u64,
    set: TPSet,
}

impl FileWriter {
    /// Create (or truncate) `path`, with [`McapOptions::default`].
    pub fn create(path: &Path) -> Result<Self> {
        Self::create_with(path, McapOptions::default())
    }

    /// Create (or truncate) `path`, written as `opts` say.
    pub fn create_with(path: &Path, opts: McapOptions) -> Result<Self> {
        let f = File::create(path).map_err(|source| Error::Io {
            path: path.into(),
            source,
        })?;
        let compression = match opts.chunks {
            Chunks::Zstd => Some(::mcap::Compression::Zstd),
            Chunks::Lz4 => Some(::mcap::Compression::Lz4),
            Chunks::Uncompressed => None,
        };
        // One thread: the recorder's own compresses each chunk as it is
        // closed, and no pool of compression threads is kept per file.
        let mut w = ::mcap::WriteOptions::new()
            .compression(compression)
            .chunk_size(Some(opts.chunk_bytes.max(1)))
            .compression_threads(0)
            .create(BufWriter::new(f))
            .map_err(|e| mcap_err(path, e))?;
        let schema = w
            .add_schema(SCHEMA_NAME, ENCODING, TPSET_DESCRIPTOR)
            .map_err(|e| mcap_err(path, e))?;
        Ok(FileWriter {
            w,
            path: path.into(),
            schema,
            channels: HashMap::new(),
            records: 0,
            set: TPSet::default(),
        })
    }

    /// The MCAP channel of `channel`, added the first time it is seen.
    fn channel_id(&mut self, channel: &str) -> Result<u16> {
        if let Some(&id) = self.channels.get(channel) {
            return Ok(id);
        }
        let topic = if channel.is_empty() {
            DEFAULT_TOPIC
        } else {
            channel
        };
        let id = self
            .w
            .add_channel(self.schema, topic, ENCODING, &BTreeMap::new())
            .map_err(|e| mcap_err(&self.path, e))?;
        self.channels.insert(channel.to_owned(), id);
        Ok(id)
    }
}

impl Writer for FileWriter {
    fn format(&self) -> Format {
        Format::Mcap
    }

    fn write(&mut self, channel: &str, log_time_ns: Option<u64>, frames: &Frames) -> Result<()> {
        if let Err(e) = ptmp_data::wire::decode_frames(frames, &mut self.set) {
            return Err(Error::Refused {
                path: self.path.clone(),
                what: format!(
                    "record {} is not a PTMP TPSet message ({e}); an MCAP file of ptmp holds TPSets only",
                    self.records
                ),
            });
        }
        let channel_id = self.channel_id(channel)?;
        let log_time = log_time_ns.unwrap_or_else(now_ns);
        let header = MessageHeader {
            channel_id,
            sequence: self.set.count,
            log_time,
            publish_time: created_ns(self.set.created).unwrap_or(log_time),
        };
        let payload = frames.get(1).expect("a TPSet message has two frames");
        self.w
            .write_to_known_channel(&header, payload)
            .map_err(|e| mcap_err(&self.path, e))?;
        self.records += 1;
        Ok(())
    }

    fn records(&self) -> u64 {
        self.records
    }

    fn flush(&mut self) -> Result<()> {
        self.w.flush().map_err(|e| mcap_err(&self.path, e))
    }

    fn finish(self: Box<Self>) -> Result<u64> {
        let FileWriter {
            mut w,
            path,
            records,
            ..
        } = *self;
        w.finish().map_err(|e| mcap_err(&path, e))?;
        w.into_inner()
            .into_inner()
            .map_err(|e| Error::Io {
                path,
                source: e.into_error(),
            })
            .map(|_| records)
    }
}

/// A set's `created` (microseconds since the epoch) in nanoseconds, when
/// it is after the epoch and fits.
pub fn created_ns(created_us: i64) -> Option<u64> {
    u64::try_from(created_us)
        .ok()
        .filter(|&us| us > 0)
        .and_then(|us| us.checked_mul(1000))
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// An error of the `mcap` crate while writing `path`.
fn mcap_err(path: &Path, e: ::mcap::McapError) -> Error {
    let path = path.into();
    match e {
        ::mcap::McapError::Io(source) => Error::Io { path, source },
        ::mcap::McapError::TooManyChannels => Error::Refused {
            path,
            what: "an MCAP file holds at most 65,535 channels".into(),
        },
        e => Error::Io {
            path,
            source: std::io::Error::other(format!("writing MCAP: {e}")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_becomes_nanoseconds_when_it_can() {
        assert_eq!(
            created_ns(1_700_000_000_000_000),
            Some(1_700_000_000_000_000_000)
        );
        assert_eq!(created_ns(0), None);
        assert_eq!(created_ns(-5), None);
        assert_eq!(created_ns(i64::MAX), None);
    }

    #[test]
    fn the_descriptor_holds_ptmp_proto() {
        let d = TPSET_DESCRIPTOR;
        let has = |s: &[u8]| d.windows(s.len()).any(|w| w == s);
        assert!(has(b"ptmp.proto") && has(b"ptmp.data") && has(b"TPSet"));
        assert!(has(b"TrigPrim") && has(b"tstart"));
    }
}
