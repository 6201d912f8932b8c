//! # ptmp-formats: messages in files
//!
//! Every file format ptmp reads or writes lives here, behind one interface,
//! so a tool that copies messages to or from a file (`ptmp cat`, the graph's
//! `czmqat` and `replay` nodes, the sink's output, Python and C) names a
//! path and gets the format its extension says:
//!
//! * [`Format`]: which format a path or a `--format` name means (`.mcap`
//!   MCAP, `.parquet` Parquet, anything else a czmqat dump), with a clear
//!   error for a format ptmp knows of but does not write yet (HDF5);
//! * [`open`], [`create`] and [`append`]: a [`Reader`] or a [`Writer`] of
//!   [`Record`]s for that format, whatever it is;
//! * [`dump`]: the czmqat dump format of PTMP (8-byte length + CZMQ's
//!   `zmsg_encode` body per message), the format ptmp has always written;
//!   it keeps any message's frames, and no channel or time;
//! * [`mcap`]: MCAP files of TPSets, one protobuf message each with the
//!   TPSet schema embedded, a channel per stream and the receive time, for
//!   Foxglove and the MCAP tools; a recording cut short reads up to its
//!   last whole chunk;
//! * [`parquet`]: Parquet tables of TPSets, one row per TrigPrim, for
//!   Pandas, Polars, DuckDB and Arrow;
//! * [`roll`]: a recording written as a numbered series of files, the
//!   next begun at a size or a time;
//! * [`info`]: what a file holds, read through once (`ptmp info`);
//! * [`table`]: TPSets as an Arrow table, a whole file as record batches
//!   or an Arrow IPC stream (Python's `ptmp.read`);
//! * [`rows`]: TPSets as table rows (one per TrigPrim, with its set's
//!   columns) and back: the one place a set becomes columns, for the
//!   columnar formats and for Python's tables.
//!
//! MCAP and Parquet hold TPSets only (a message of other frames is
//! refused, naming the record) and are not appended to.
//!
//! This crate depends on `ptmp-data` (the schema and the framing) and on no
//! transport: it never opens a socket or a ring.

mod append;
pub mod dump;
mod error;
mod format;
pub mod info;
pub mod mcap;
pub mod parquet;
mod record;
pub mod roll;
pub mod rows;
pub mod table;

pub use append::{append, numbered, Appended};
pub use error::{Error, Result};
pub use format::Format;
pub use record::{create, open, open_file, Reader, Record, Writer};
