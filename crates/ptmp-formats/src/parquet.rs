//! Parquet files of TPSets: a table of one row per TrigPrim, through the
//! `parquet` and `arrow` crates.
//!
//! The table's columns are those of [`crate::rows`] ([`crate::rows::COLUMNS`], in that
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

pub use crate::table::{column_types, schema, EDGE, LOG_TIME};
pub(crate) use layout::layout;
pub use read::FileReader;

use crate::table::Batch;

use crate::rows::rows;
use crate::{Error, Format, Result, Writer};
use ::parquet::arrow::ArrowWriter;
use ::parquet::basic::{Compression, ZstdLevel};
use ::parquet::file::properties::WriterProperties;
use arrow_schema::SchemaRef;
use ptmp_data::{Frames, TPSet};
use std::fs::File;
use std::path::{Path, PathBuf};

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
