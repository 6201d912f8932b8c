//! Reading a Parquet table of TPSets back into PTMP messages.

use super::column_types;
use crate::rows::{Regroup, TpRow};
use crate::{Error, Format, Reader, Record, Result};
use ::parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use ::parquet::arrow::ProjectionMask;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, Int64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_schema::Schema;
use ptmp_data::TPSet;
use std::fs::File;
use std::path::{Path, PathBuf};

/// Rows read from the file at a time.
const BATCH_ROWS: usize = 8192;

/// A Parquet table of TPSets read set by set, in row order.
pub struct FileReader {
    batches: ParquetRecordBatchReader,
    path: PathBuf,
    /// The batch being read, and its next row.
    cols: Option<Cols>,
    next: usize,
    regroup: Regroup,
    /// The channel and receive time of the set being gathered.
    open: Option<(String, Option<u64>)>,
    /// A whole set, not yet returned.
    ready: Option<(TPSet, String, Option<u64>)>,
    rows: u64,
    records: u64,
    done: bool,
    buf: Vec<u8>,
}

impl FileReader {
    /// Open `path`.
    pub fn open(path: &Path) -> Result<Self> {
        let f = File::open(path).map_err(|source| Error::Io {
            path: path.into(),
            source,
        })?;
        Self::from_file(f, path)
    }

    /// Read `file` as the Parquet file at `path`. Its schema is checked
    /// first: every column ptmp writes must be there, of its type.
    pub fn from_file(file: File, path: &Path) -> Result<Self> {
        let bad = |what: String| Error::Unreadable {
            path: path.into(),
            record: 0,
            what,
        };
        let b = ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| bad(format!("not a Parquet file ptmp can read (a Parquet file is readable once its writer has finished it: its footer comes last): {e}")))?;
        let roots = check_schema(b.schema()).map_err(bad)?;
        let mask = ProjectionMask::roots(b.parquet_schema(), roots);
        let batches = b
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(|e| bad(format!("cannot read its rows: {e}")))?;
        Ok(FileReader {
            batches,
            path: path.into(),
            cols: None,
            next: 0,
            regroup: Regroup::new(),
            open: None,
            ready: None,
            rows: 0,
            records: 0,
            done: false,
            buf: Vec::new(),
        })
    }

    fn unreadable(&mut self, what: String) -> Error {
        self.done = true;
        Error::Unreadable {
            path: self.path.clone(),
            record: self.records,
            what,
        }
    }

    /// Take one row, read the next batch, or end the rows.
    fn step(&mut self) -> Result<()> {
        if let Some(c) = self.cols.take().filter(|c| self.next < c.len) {
            let (row, edge, log) = c.row(self.next);
            self.next += 1;
            let taken = self.take_row(&row, edge, log);
            self.cols = Some(c);
            return taken;
        }
        match self.batches.next() {
            Some(Ok(b)) => {
                let cols = Cols::of(&b).map_err(|e| self.unreadable(e))?;
                self.cols = Some(cols);
                self.next = 0;
            }
            Some(Err(e)) => {
                let what = format!("rows from row {} on cannot be read: {e}", self.rows);
                return Err(self.unreadable(what));
            }
            None => {
                self.done = true;
                if let Some((_, s)) = std::mem::take(&mut self.regroup).finish() {
                    let (edge, log) = self.open.take().unwrap_or_default();
                    self.ready = Some((s, edge, log));
                }
            }
        }
        Ok(())
    }

    fn take_row(&mut self, row: &TpRow, edge: &str, log: Option<u64>) -> Result<()> {
        let n = self.rows;
        self.rows += 1;
        match self.regroup.push(row) {
            Err(e) => Err(self.unreadable(e.to_string())),
            Ok(Some((_, s))) => {
                let (e, l) = self.open.replace((edge.into(), log)).unwrap_or_default();
                self.ready = Some((s, e, l));
                Ok(())
            }
            Ok(None) => match &self.open {
                None => {
                    self.open = Some((edge.into(), log));
                    Ok(())
                }
                Some((e, l)) if *e == edge && *l == log => Ok(()),
                Some(_) => Err(self.unreadable(format!(
                    "row {n}: its edge or log_time_ns differs from those of the rows before it in its set"
                ))),
            },
        }
    }
}

impl Reader for FileReader {
    fn format(&self) -> Format {
        Format::Parquet
    }

    fn read_into(&mut self, rec: &mut Record) -> Result<bool> {
        loop {
            if let Some((s, edge, log)) = self.ready.take() {
                self.buf.clear();
                ptmp_data::encode_tpset(&s, &mut self.buf);
                rec.frames.clear();
                rec.frames.push(&ptmp_data::VERSION_FRAME);
                rec.frames.push(&self.buf);
                rec.channel = edge;
                rec.log_time_ns = log;
                self.records += 1;
                return Ok(true);
            }
            if self.done {
                return Ok(false);
            }
            self.step()?;
        }
    }

    fn records(&self) -> u64 {
        self.records
    }
}

/// The indices of ptmp's columns in `schema`, or what is missing or of
/// another type, every problem named.
fn check_schema(schema: &Schema) -> std::result::Result<Vec<usize>, String> {
    let mut roots = Vec::new();
    let mut wrong = Vec::new();
    for (name, ty, _) in column_types() {
        match schema.index_of(name) {
            Err(_) => wrong.push(format!("no column `{name}` ({ty})")),
            Ok(i) if schema.field(i).data_type() != &ty => wrong.push(format!(
                "column `{name}` is {}, not {ty}",
                schema.field(i).data_type()
            )),
            Ok(i) => roots.push(i),
        }
    }
    if wrong.is_empty() {
        Ok(roots)
    } else {
        Err(format!(
            "not a table of TPSets as ptmp writes them: {}",
            wrong.join("; ")
        ))
    }
}

/// One batch's columns, typed.
struct Cols {
    len: usize,
    u64s: [UInt64Array; 2],
    u32s: [UInt32Array; 2],
    created: Int64Array,
    opt_u32s: [UInt32Array; 9],
    tstart: UInt64Array,
    edge: StringArray,
    log: UInt64Array,
}

impl Cols {
    /// The columns of `b`, whose schema [`check_schema`] has passed; a
    /// column that must not be empty and is, is named.
    fn of(b: &RecordBatch) -> std::result::Result<Cols, String> {
        let get = |name: &str| -> std::result::Result<&dyn Array, String> {
            let a = b
                .column_by_name(name)
                .ok_or_else(|| format!("no column `{name}`"))?;
            let required = column_types()
                .iter()
                .any(|(n, _, null)| *n == name && !null);
            if required && a.null_count() > 0 {
                return Err(format!("column `{name}` has empty (null) values"));
            }
            Ok(a.as_ref())
        };
        let u64s = |n: &str| get(n).map(|a| a.as_primitive::<UInt64Type>().clone());
        let u32s = |n: &str| get(n).map(|a| a.as_primitive::<UInt32Type>().clone());
        Ok(Cols {
            len: b.num_rows(),
            u64s: [u64s("set")?, u64s("set_tstart")?],
            u32s: [u32s("count")?, u32s("detid")?],
            created: get("created")?.as_primitive::<Int64Type>().clone(),
            opt_u32s: [
                u32s("set_tspan")?,
                u32s("chanbeg")?,
                u32s("chanend")?,
                u32s("totaladc")?,
                u32s("channel")?,
                u32s("tspan")?,
                u32s("adcsum")?,
                u32s("adcpeak")?,
                u32s("flags")?,
            ],
            tstart: u64s("tstart")?,
            edge: get(super::EDGE)?.as_string::<i32>().clone(),
            log: u64s(super::LOG_TIME)?,
        })
    }

    /// Row `i`: its [`TpRow`], channel and receive time.
    fn row(&self, i: usize) -> (TpRow, &str, Option<u64>) {
        let o = |a: &UInt32Array| a.is_valid(i).then(|| a.value(i));
        let [set_tspan, chanbeg, chanend, totaladc, channel, tspan, adcsum, adcpeak, flags] =
            &self.opt_u32s;
        let row = TpRow {
            set: self.u64s[0].value(i),
            count: self.u32s[0].value(i),
            detid: self.u32s[1].value(i),
            created: self.created.value(i),
            set_tstart: self.u64s[1].value(i),
            set_tspan: o(set_tspan),
            chanbeg: o(chanbeg),
            chanend: o(chanend),
            totaladc: o(totaladc),
            channel: o(channel),
            tstart: self.tstart.is_valid(i).then(|| self.tstart.value(i)),
            tspan: o(tspan),
            adcsum: o(adcsum),
            adcpeak: o(adcpeak),
            flags: o(flags),
        };
        let log = self.log.is_valid(i).then(|| self.log.value(i));
        (row, self.edge.value(i), log)
    }
}
