//! One interface for every format: a [`Reader`] gives [`Record`]s, a
//! [`Writer`] takes them, and [`open`] and [`create`] choose the format
//! from the path (or a [`Format`] given by hand).
//!
//! A record is one message: its frames, and where the format keeps them,
//! the channel it came from and when it was received. A format that keeps
//! less (a czmqat dump keeps the frames only) reads back an empty channel
//! and no time; a format that keeps more says so in its own module.

use crate::{dump, mcap, parquet, Format, Result};
use ptmp_data::Frames;
use std::path::Path;

/// One message read from a file.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Record {
    /// The message's frames: for a TPSet, PTMP's version frame and its
    /// protobuf bytes.
    pub frames: Frames,
    /// The stream it was recorded from (a graph's edge, an endpoint);
    /// empty where the format keeps none.
    pub channel: String,
    /// When it was received, in nanoseconds since the Unix epoch; `None`
    /// where the format keeps no time.
    pub log_time_ns: Option<u64>,
}

/// Reads the records of one file, in the order they were written.
pub trait Reader: Send {
    /// The file's format.
    fn format(&self) -> Format;

    /// Read the next record into `rec`, reusing its buffers: `Ok(false)`
    /// at the end of the file. After an error (a damaged record, named by
    /// number and byte), every earlier record has been returned and every
    /// later call returns `Ok(false)`.
    fn read_into(&mut self, rec: &mut Record) -> Result<bool>;

    /// Records returned so far.
    fn records(&self) -> u64;

    /// Byte of the file where the next record starts, where the format
    /// can tell (a compressed or columnar one cannot).
    fn position(&self) -> Option<u64> {
        None
    }
}

/// Writes records into one file.
pub trait Writer: Send {
    /// The file's format.
    fn format(&self) -> Format;

    /// Write one message. `channel` and `log_time_ns` are kept where the
    /// format keeps them and dropped where it does not. A record the
    /// format cannot hold (no frames) is refused and nothing of it is
    /// written.
    fn write(&mut self, channel: &str, log_time_ns: Option<u64>, frames: &Frames) -> Result<()>;

    /// Records written so far.
    fn records(&self) -> u64;

    /// Hand what is written so far to the system, so a reader sees every
    /// record written until now.
    fn flush(&mut self) -> Result<()>;

    /// Flush and close the file, writing whatever the format keeps at its
    /// end; returns the records written. Dropping a writer without
    /// finishing leaves a file readable up to its last whole record.
    fn finish(self: Box<Self>) -> Result<u64>;
}

/// Open `path` for reading, in the format `given`, or the one its
/// extension says ([`Format::of`]).
pub fn open(path: &Path, given: Option<Format>) -> Result<Box<dyn Reader>> {
    match Format::of(path, given)? {
        Format::Dump => Ok(Box::new(dump::FileReader::open(path)?)),
        Format::Mcap => Ok(Box::new(mcap::FileReader::open(path)?)),
        Format::Parquet => Ok(Box::new(parquet::FileReader::open(path)?)),
    }
}

/// Read `file`, already open at its start, as the file at `path` in the
/// format `given` or its extension's: for a caller that opens files its
/// own way (refusing a FIFO without waiting on it, say).
pub fn open_file(
    file: std::fs::File,
    path: &Path,
    given: Option<Format>,
) -> Result<Box<dyn Reader>> {
    match Format::of(path, given)? {
        Format::Dump => Ok(Box::new(dump::FileReader::from_file(file, path))),
        Format::Mcap => Ok(Box::new(mcap::FileReader::from_file(file, path)?)),
        Format::Parquet => Ok(Box::new(parquet::FileReader::from_file(file, path)?)),
    }
}

/// Create (or truncate) `path` for writing, in the format `given`, or the
/// one its extension says ([`Format::of`]).
pub fn create(path: &Path, given: Option<Format>) -> Result<Box<dyn Writer>> {
    match Format::of(path, given)? {
        Format::Dump => Ok(Box::new(dump::FileWriter::create(path)?)),
        Format::Mcap => Ok(Box::new(mcap::FileWriter::create(path)?)),
        Format::Parquet => Ok(Box::new(parquet::FileWriter::create(path)?)),
    }
}
