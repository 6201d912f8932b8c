//! Parquet files of TPSets: a table of one row per TrigPrim, through the
//! `parquet` and `arrow` crates.
//!
//! The table's columns are those of [`crate::rows`] ([`COLUMNS`], in that
//! order: the set's number in the file, its fields, the TrigPrim's), then
//! [`EDGE`], the record's channel (a graph's edge, an endpoint; empty where
//! none was given), and [`LOG_TIME`], when it was received (nanoseconds
//! since the Unix epoch, empty where none was given). Their Arrow types
//! are those of the schema: `uint64` for ticks and numbers of sets,
//! `uint32` for the other counts, `int64` for `created`; a column of an
//! optional field is nullable, and the TrigPrim columns are empty in the
//! one row of a set without TrigPrims ([`column_types`] lists them all).
//! Pandas, Polars, DuckDB, Spark and Arrow read it as it is.
//!
//! Rows are buffered and written a row group at a time, of
//! [`ParquetOptions::row_group_rows`] rows (a set's rows may straddle two
//! groups), compressed with zstd. [`Writer::flush`] writes the rows
//! buffered as a (shorter) row group; [`Writer::finish`] writes the footer
//! that makes the file readable. A writer dropped without finishing
//! finishes the file as it goes; a writer killed before that leaves a file
//! without its footer, which no Parquet reader opens.
//!
//! A message that is not a PTMP TPSet message is refused, naming the
//! record. Reading ([`FileReader`]) gathers the rows back into sets
//! ([`crate::rows::Regroup`]) and gives each as PTMP's two frames, the set
//! encoded as [`ptmp_data::encode_tpset`] does (as every ptmp tool and
//! PTMP's C++ encode it, so those frames come back byte for byte), with
//! its channel and receive time. A Parquet file of other columns is
//! refused at opening, naming each column missing or of another type.
//!
//! Parquet files are not appended to: [`crate::append`] leaves one as it
//! is and writes the next numbered file beside it.

mod layout;
mod read;

pub(crate) use layout::layout;
pub use read::FileReader;

use crate::rows::{rows, TpRow, COLUMNS};
use crate::{Error, Format, Result, Writer};
use ::parquet::arrow::ArrowWriter;
use ::parquet::basic::{Compression, ZstdLevel};
use ::parquet::file::properties::WriterProperties;
use arrow_array::builder::{Int64Builder, StringBuilder, UInt32Builder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ptmp_data::{Frames, TPSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The column of each row's channel (the stream it was recorded from).
pub const EDGE: &str = "edge";

/// The column of each row's receive time, in nanoseconds since the epoch.
pub const LOG_TIME: &str = "log_time_ns";

/// Every column of a table of TPSets, in order: its name, Arrow type and
/// whether it may be empty (null).
pub fn column_types() -> [(&'static str, DataType, bool); 17] {
    use DataType::{Int64, UInt32, UInt64, Utf8};
    let c = COLUMNS;
    [
        (c[0], UInt64, false),
        (c[1], UInt32, false),
        (c[2], UInt32, false),
        (c[3], Int64, false),
        (c[4], UInt64, false),
        (c[5], UInt32, true),
        (c[6], UInt32, true),
        (c[7], UInt32, true),
        (c[8], UInt32, true),
        (c[9], UInt32, true),
        (c[10], UInt64, true),
        (c[11], UInt32, true),
        (c[12], UInt32, true),
        (c[13], UInt32, true),
        (c[14], UInt32, true),
        (EDGE, Utf8, false),
        (LOG_TIME, UInt64, true),
    ]
}

/// The Arrow schema of a table of TPSets ([`column_types`]).
pub fn schema() -> SchemaRef {
    let fields: Vec<Field> = column_types()
        .into_iter()
        .map(|(name, ty, nullable)| Field::new(name, ty, nullable))
        .collect();
    Arc::new(Schema::new(fields))
}

/// How [`FileWriter`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParquetOptions {
    /// Rows (TrigPrims) of each row group; at least 1.
    pub row_group_rows: usize,
}

impl Default for ParquetOptions {
    fn default() -> Self {
        ParquetOptions {
            row_group_rows: 65_536,
        }
    }
}

/// The rows buffered for the next row group, column by column.
#[derive(Default)]
struct Batch {
    set: UInt64Builder,
    count: UInt32Builder,
    detid: UInt32Builder,
    created: Int64Builder,
    set_tstart: UInt64Builder,
    set_tspan: UInt32Builder,
    chanbeg: UInt32Builder,
    chanend: UInt32Builder,
    totaladc: UInt32Builder,
    channel: UInt32Builder,
    tstart: UInt64Builder,
    tspan: UInt32Builder,
    adcsum: UInt32Builder,
    adcpeak: UInt32Builder,
    flags: UInt32Builder,
    edge: StringBuilder,
    log_time_ns: UInt64Builder,
    rows: usize,
}

impl Batch {
    fn push(&mut self, r: &TpRow, edge: &str, log_time_ns: Option<u64>) {
        self.set.append_value(r.set);
        self.count.append_value(r.count);
        self.detid.append_value(r.detid);
        self.created.append_value(r.created);
        self.set_tstart.append_value(r.set_tstart);
        self.set_tspan.append_option(r.set_tspan);
        self.chanbeg.append_option(r.chanbeg);
        self.chanend.append_option(r.chanend);
        self.totaladc.append_option(r.totaladc);
        self.channel.append_option(r.channel);
        self.tstart.append_option(r.tstart);
        self.tspan.append_option(r.tspan);
        self.adcsum.append_option(r.adcsum);
        self.adcpeak.append_option(r.adcpeak);
        self.flags.append_option(r.flags);
        self.edge.append_value(edge);
        self.log_time_ns.append_option(log_time_ns);
        self.rows += 1;
    }

    /// The rows buffered as a record batch of `schema`; empties the buffer.
    fn take(&mut self, schema: &SchemaRef) -> std::result::Result<RecordBatch, String> {
        let cols: Vec<ArrayRef> = vec![
            Arc::new(self.set.finish()),
            Arc::new(self.count.finish()),
            Arc::new(self.detid.finish()),
            Arc::new(self.created.finish()),
            Arc::new(self.set_tstart.finish()),
            Arc::new(self.set_tspan.finish()),
            Arc::new(self.chanbeg.finish()),
            Arc::new(self.chanend.finish()),
            Arc::new(self.totaladc.finish()),
            Arc::new(self.channel.finish()),
            Arc::new(self.tstart.finish()),
            Arc::new(self.tspan.finish()),
            Arc::new(self.adcsum.finish()),
            Arc::new(self.adcpeak.finish()),
            Arc::new(self.flags.finish()),
            Arc::new(self.edge.finish()),
            Arc::new(self.log_time_ns.finish()),
        ];
        self.rows = 0;
        RecordBatch::try_new(schema.clone(), cols).map_err(|e| e.to_string())
    }
}

/// A Parquet file of TPSets, written record by record.
pub struct FileWriter {
    /// `None` once finished.
    w: Option<ArrowWriter<File>>,
    schema: SchemaRef,
    batch: Batch,
    opts: ParquetOptions,
    path: PathBuf,
    records: u64,
    set: TPSet,
}

impl FileWriter {
    /// Create (or truncate) `path`, with [`ParquetOptions::default`].
    pub fn create(path: &Path) -> Result<Self> {
        Self::create_with(path, ParquetOptions::default())
    }

    /// Create (or truncate) `path`, written as `opts` say.
    pub fn create_with(path: &Path, opts: ParquetOptions) -> Result<Self> {
        let opts = ParquetOptions {
            row_group_rows: opts.row_group_rows.max(1),
        };
        let f = File::create(path).map_err(|source| Error::Io {
            path: path.into(),
            source,
        })?;
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_row_count(Some(opts.row_group_rows))
            .build();
        let schema = schema();
        let w = ArrowWriter::try_new(f, schema.clone(), Some(props))
            .map_err(|e| write_err(path, e.to_string()))?;
        Ok(FileWriter {
            w: Some(w),
            schema,
            batch: Batch::default(),
            opts,
            path: path.into(),
            records: 0,
            set: TPSet::default(),
        })
    }

    fn writer(&mut self) -> Result<&mut ArrowWriter<File>> {
        let path = &self.path;
        self.w
            .as_mut()
            .ok_or_else(|| write_err(path, "the file is finished".into()))
    }

    /// Buffer the rows of `set`, writing each row group as it fills.
    fn push_rows(&mut self, set: &TPSet, channel: &str, log_time_ns: Option<u64>) -> Result<()> {
        for r in rows(self.records, set) {
            self.batch.push(&r, channel, log_time_ns);
            if self.batch.rows >= self.opts.row_group_rows {
                self.write_group()?;
            }
        }
        Ok(())
    }

    /// Write the rows buffered as one row group.
    fn write_group(&mut self) -> Result<()> {
        if self.batch.rows == 0 {
            return Ok(());
        }
        let b = self
            .batch
            .take(&self.schema)
            .map_err(|e| write_err(&self.path, e))?;
        let path = self.path.clone();
        let w = self.writer()?;
        w.write(&b)
            .and_then(|()| w.flush())
            .map_err(|e| write_err(&path, e.to_string()))
    }
}

impl Writer for FileWriter {
    fn format(&self) -> Format {
        Format::Parquet
    }

    fn write(&mut self, channel: &str, log_time_ns: Option<u64>, frames: &Frames) -> Result<()> {
        if let Err(e) = ptmp_data::wire::decode_frames(frames, &mut self.set) {
            return Err(Error::Refused {
                path: self.path.clone(),
                what: format!(
                    "record {} is not a PTMP TPSet message ({e}); a Parquet file of ptmp holds TPSets only",
                    self.records
                ),
            });
        }
        self.writer()?;
        let set = std::mem::take(&mut self.set);
        let done = self.push_rows(&set, channel, log_time_ns);
        self.set = set;
        done?;
        self.records += 1;
        Ok(())
    }

    fn records(&self) -> u64 {
        self.records
    }

    fn flush(&mut self) -> Result<()> {
        self.write_group()?;
        let path = self.path.clone();
        self.writer()?
            .sync()
            .map_err(|source| Error::Io { path, source })
    }

    fn finish(mut self: Box<Self>) -> Result<u64> {
        self.write_group()?;
        let w = self.w.take().expect("not finished before");
        w.close()
            .map_err(|e| write_err(&self.path, e.to_string()))?;
        Ok(self.records)
    }
}

impl Drop for FileWriter {
    /// Finish the file, as well as can be: a file without its footer is
    /// unreadable.
    fn drop(&mut self) {
        if self.w.is_some() && self.write_group().is_ok() {
            if let Some(w) = self.w.take() {
                let _ = w.close();
            }
        }
    }
}

fn write_err(path: &Path, what: String) -> Error {
    Error::Io {
        path: path.into(),
        source: std::io::Error::other(format!("writing Parquet: {what}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_has_the_row_columns_then_edge_and_log_time() {
        let s = schema();
        let names: Vec<&str> = s.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(&names[..15], &COLUMNS[..]);
        assert_eq!(&names[15..], [EDGE, LOG_TIME]);
        let f = |n: &str| s.field_with_name(n).unwrap().clone();
        assert_eq!(f("tstart").data_type(), &DataType::UInt64);
        assert!(f("tstart").is_nullable() && !f("set_tstart").is_nullable());
        assert_eq!(f("created").data_type(), &DataType::Int64);
        assert_eq!(f(EDGE).data_type(), &DataType::Utf8);
    }
}
