//! # ptmp-formats: messages in files
//!
//! Every file format ptmp reads or writes lives here, behind one interface,
//! so a tool that copies messages to or from a file (`ptmp cat`, the graph's
//! `czmqat` and `replay` nodes, the sink's output, Python and C) names a
//! path and gets the format its extension says:
//!
//! * [`Format`]: which format a path or a `--format` name means, with a
//!   clear error for a format ptmp knows of but does not write yet;
//! * [`open`], [`create`] and [`append`]: a [`Reader`] or a [`Writer`] of
//!   [`Record`]s for that format, whatever it is;
//! * [`dump`]: the czmqat dump format of PTMP (8-byte length + CZMQ's
//!   `zmsg_encode` body per message), the format ptmp has always written;
//! * [`rows`]: TPSets as table rows (one per TrigPrim, with its set's
//!   columns) and back: the one place a set becomes columns, for the
//!   columnar formats and for Python's tables.
//!
//! This crate depends on `ptmp-data` (the schema and the framing) and on no
//! transport: it never opens a socket or a ring.

pub mod dump;
mod error;
mod format;
mod record;
pub mod rows;

pub use error::{Error, Result};
pub use format::Format;
pub use record::{append, create, open, open_file, Appended, Reader, Record, Writer};
