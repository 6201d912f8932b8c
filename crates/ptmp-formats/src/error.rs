//! Why a file could not be opened, read or written.

use crate::dump::DumpError;
use std::path::PathBuf;

/// A file's error, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The path or the `--format` name asks for a format ptmp does not
    /// read or write (yet), or for something its format does not do
    /// (appending to an MCAP or a Parquet file); `what` says which and
    /// what ptmp offers.
    #[error("{path}: {what}")]
    Format {
        /// The file, or the `--format` value.
        path: PathBuf,
        /// Why no format fits.
        what: String,
    },
    /// Opening, reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file's bytes are not what its format says: where and what.
    #[error("{path}: {source}")]
    Dump {
        /// The file.
        path: PathBuf,
        /// The record, the byte and the problem.
        source: DumpError,
    },
    /// The file, from one of its records on, cannot be read: it is cut
    /// short (its writer was killed before finishing it), damaged, or
    /// holds something other than what ptmp reads from its format (an
    /// MCAP channel of another schema, a Parquet table of other columns).
    /// Every record before `record` has been returned.
    #[error("{path}: {what}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Records read before the problem (the number, from 0, of the
        /// first record not read).
        record: u64,
        /// What is wrong and where, in words.
        what: String,
    },
    /// A record the format cannot hold (a message of no frames, say).
    #[error("{path}: {what}")]
    Refused {
        /// The file.
        path: PathBuf,
        /// Why the record was refused; nothing of it was written.
        what: String,
    },
}

/// A result whose error names the file.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Byte of the file where a damaged record starts, when that is the
    /// error (`None` otherwise).
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::Dump { source, .. } => Some(source.offset()),
            _ => None,
        }
    }

    /// Number of the damaged record (from 0), when that is the error.
    pub fn record(&self) -> Option<u64> {
        match self {
            Error::Dump { source, .. } => Some(source.record()),
            Error::Unreadable { record, .. } => Some(*record),
            _ => None,
        }
    }
}
