//! TPSets as an Arrow table: the columns of [`crate::rows`] plus each
//! row's channel and receive time, their Arrow types, and a whole file
//! read into record batches or an Arrow IPC stream (Python's `ptmp.read`
//! gives it to pyarrow as it is, with no object per TrigPrim).

use crate::rows::{rows, TpRow, COLUMNS};
use crate::{Error, Format, Record, Result};
use arrow_array::builder::{Int64Builder, StringBuilder, UInt32Builder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use std::path::Path;
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

/// Rows buffered column by column, until they are taken as a record
/// batch (a Parquet row group, a piece of a table read into Python).
#[derive(Default)]
pub(crate) struct Batch {
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
    pub(crate) rows: usize,
}

impl Batch {
    pub(crate) fn push(&mut self, r: &TpRow, edge: &str, log_time_ns: Option<u64>) {
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
    pub(crate) fn take(&mut self, schema: &SchemaRef) -> std::result::Result<RecordBatch, String> {
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

/// Rows of each record batch [`read_batches`] makes.
pub const BATCH_ROWS: usize = 65_536;

/// Every record of `path` (in the format `given`, or its extension's) as
/// record batches of [`schema`], [`BATCH_ROWS`] rows each (the last
/// shorter). A record that is not a TPSet, or damage in the file, is an
/// error naming it.
pub fn read_batches(path: &Path, given: Option<Format>) -> Result<Vec<RecordBatch>> {
    let mut r = crate::open(path, given)?;
    let schema = schema();
    let mut batch = Batch::default();
    let mut out = Vec::new();
    let mut rec = Record::default();
    let mut set = ptmp_data::TPSet::default();
    let bad = |what: String| Error::Unreadable {
        path: path.into(),
        record: 0,
        what,
    };
    while r.read_into(&mut rec)? {
        let n = r.records() - 1;
        if let Err(e) = ptmp_data::wire::decode_frames(&rec.frames, &mut set) {
            return Err(Error::Unreadable {
                path: path.into(),
                record: n,
                what: format!(
                    "record {n} is not a PTMP TPSet message ({e}); a table holds TPSets only"
                ),
            });
        }
        for row in rows(n, &set) {
            batch.push(&row, &rec.channel, rec.log_time_ns);
        }
        if batch.rows >= BATCH_ROWS {
            out.push(batch.take(&schema).map_err(bad)?);
        }
    }
    if batch.rows > 0 || out.is_empty() {
        out.push(batch.take(&schema).map_err(bad)?);
    }
    Ok(out)
}

/// [`read_batches`] as one Arrow IPC stream (schema, then each batch), the
/// form pyarrow and every Arrow library read without a copy per value.
pub fn arrow_ipc(path: &Path, given: Option<Format>) -> Result<Vec<u8>> {
    let batches = read_batches(path, given)?;
    let bad = |e: arrow_schema::ArrowError| Error::Unreadable {
        path: path.into(),
        record: 0,
        what: format!("writing the Arrow stream: {e}"),
    };
    let mut out = Vec::new();
    let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut out, &schema()).map_err(bad)?;
    for b in &batches {
        w.write(b).map_err(bad)?;
    }
    w.finish().map_err(bad)?;
    drop(w);
    Ok(out)
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
