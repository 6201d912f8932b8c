//! Parquet tables of TPSets: the table as Arrow sees it, row groups, sets
//! back as written, and tables of other columns refused by name.

mod common;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use common::{frames, numbered, read_all, record, write_all};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::Compression;
use proptest::prelude::*;
use ptmp_data::Frames;
use ptmp_formats::parquet::{FileWriter, ParquetOptions};
use ptmp_formats::{append, create, open, Error, Format, Record, Writer};
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn sets_come_back_as_they_were_written(
        recs in proptest::collection::vec(record(6), 0..30),
        group in 1usize..8,
    ) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("tps.parquet");
        let opts = ParquetOptions { row_group_rows: group };
        let w = Box::new(FileWriter::create_with(&p, opts).unwrap());
        prop_assert_eq!(write_all(w, &recs), recs.len() as u64);
        let mut r = open(&p, None).unwrap();
        prop_assert_eq!(r.format(), Format::Parquet);
        let (got, err) = read_all(&mut *r);
        prop_assert!(err.is_none(), "{:?}", err);
        let want: Vec<Record> = recs
            .iter()
            .map(|(c, t, s)| Record { frames: frames(s), channel: c.clone(), log_time_ns: *t })
            .collect();
        prop_assert_eq!(got, want);
        prop_assert_eq!(r.records(), recs.len() as u64);
    }
}

fn row_groups(p: &Path) -> Vec<i64> {
    let b = ParquetRecordBatchReaderBuilder::try_new(File::open(p).unwrap()).unwrap();
    let groups = b.metadata().row_groups();
    groups.iter().map(|g| g.num_rows()).collect()
}

#[test]
fn rows_go_in_row_groups_of_the_size_asked_and_flush_ends_one() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("tps.parquet");
    let opts = ParquetOptions { row_group_rows: 4 };
    let mut w: Box<dyn Writer> = Box::new(FileWriter::create_with(&p, opts).unwrap());
    assert_eq!(w.format(), Format::Parquet);
    // 3 + 3 rows, a flush, then 3 + 0 (one row) + 3 rows.
    w.write("a", Some(1), &frames(&numbered(0, 3))).unwrap();
    w.write("a", Some(2), &frames(&numbered(1, 3))).unwrap();
    w.flush().unwrap();
    for (i, n) in [(2, 3), (3, 0), (4, 3)] {
        w.write("b", None, &frames(&numbered(i, n))).unwrap();
    }
    assert_eq!(w.finish().unwrap(), 5);
    assert_eq!(row_groups(&p), [4, 2, 4, 3]);

    let b = ParquetRecordBatchReaderBuilder::try_new(File::open(&p).unwrap()).unwrap();
    let s = b.schema().clone();
    let ty = |n: &str| s.field_with_name(n).unwrap().data_type().clone();
    assert_eq!(ty("tstart"), DataType::UInt64);
    assert_eq!(ty("set"), DataType::UInt64);
    assert_eq!(ty("channel"), DataType::UInt32);
    assert_eq!(ty("created"), DataType::Int64);
    assert_eq!(ty("edge"), DataType::Utf8);
    assert_eq!(ty("log_time_ns"), DataType::UInt64);
    let rows: usize = b.build().unwrap().map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(rows, 13);
    let meta = ParquetRecordBatchReaderBuilder::try_new(File::open(&p).unwrap()).unwrap();
    let col = meta.metadata().row_group(0).column(0).compression();
    assert!(matches!(col, Compression::ZSTD(_)), "{col:?}");
}

#[test]
fn a_dropped_writer_finishes_its_file() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("tps.parquet");
    let mut w = create(&p, None).unwrap();
    w.write("", Some(5), &frames(&numbered(0, 2))).unwrap();
    drop(w);
    let (got, err) = read_all(&mut *open(&p, None).unwrap());
    assert!(err.is_none(), "{err:?}");
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].channel.as_str(), got[0].log_time_ns), ("", Some(5)));
}

#[test]
fn a_message_that_is_not_a_tpset_is_refused_by_record() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("tps.parquet");
    let mut w = create(&p, None).unwrap();
    w.write("", None, &frames(&numbered(0, 1))).unwrap();
    let e = w
        .write("", None, &Frames::from_slices(&[b"x"]))
        .unwrap_err();
    assert!(matches!(e, Error::Refused { .. }), "{e}");
    let e = e.to_string();
    assert!(
        e.contains("tps.parquet: record 1 is not a PTMP TPSet message"),
        "{e}"
    );
    assert_eq!(w.finish().unwrap(), 1);
}

#[test]
fn a_table_of_other_columns_is_refused_naming_them() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("other.parquet");
    let schema = Arc::new(Schema::new(vec![
        Field::new("set", DataType::UInt64, false),
        Field::new("tstart", DataType::Int64, true),
    ]));
    let cols: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from(vec![0u64, 1])),
        Arc::new(Int64Array::from(vec![Some(5i64), None])),
    ];
    let b = RecordBatch::try_new(schema.clone(), cols).unwrap();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(File::create(&p).unwrap(), schema, None).unwrap();
    w.write(&b).unwrap();
    w.close().unwrap();
    let e = open(&p, None).err().unwrap();
    assert!(matches!(e, Error::Unreadable { .. }), "{e}");
    let e = e.to_string();
    assert!(e.starts_with(&format!("{}: ", p.display())), "{e}");
    assert!(e.contains("not a table of TPSets"), "{e}");
    assert!(e.contains("column `tstart` is Int64, not UInt64"), "{e}");
    assert!(
        e.contains("no column `edge`") && e.contains("no column `count`"),
        "{e}"
    );
    assert!(!e.contains("`set`"), "{e}");

    let p = d.path().join("dump.parquet");
    let mut w = create(&p, Some(Format::Dump)).unwrap();
    w.write("", None, &frames(&numbered(0, 1))).unwrap();
    w.finish().unwrap();
    let e = open(&p, None).err().unwrap().to_string();
    assert!(e.contains("dump.parquet: not a Parquet file"), "{e}");
}

/// Going on after a Parquet file leaves it as it is and writes the next
/// numbered file; a missing one is simply created.
#[test]
fn going_on_after_parquet_files_writes_the_next_one_beside_them() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("tps.parquet");
    let a = append(&p, None, &mut |_| {}).unwrap();
    assert_eq!((a.path.clone(), a.records), (p.clone(), 0));
    let mut w = a.writer;
    w.write("a", Some(7), &frames(&numbered(0, 2))).unwrap();
    w.finish().unwrap();
    let mut n = 0;
    let a = append(&p, None, &mut |_| n += 1).unwrap();
    assert_eq!(
        (a.path.clone(), a.records, n),
        (d.path().join("tps.1.parquet"), 1, 1)
    );
    assert!(
        a.passed_over[0].contains("Parquet files are not appended to"),
        "{:?}",
        a.passed_over
    );
    a.writer.finish().unwrap();
    assert!(open(&d.path().join("tps.1.parquet"), None).is_ok());
}

#[test]
fn a_file_cut_short_is_named_not_read() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("tps.parquet");
    let mut w = create(&p, None).unwrap();
    for i in 0..50 {
        w.write("a", Some(u64::from(i)), &frames(&numbered(i, i % 4)))
            .unwrap();
    }
    w.finish().unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let cut = d.path().join("cut.parquet");
    for at in (0..bytes.len()).step_by(bytes.len() / 23) {
        std::fs::write(&cut, &bytes[..at]).unwrap();
        let e = open(&cut, None).err().unwrap().to_string();
        assert!(
            e.contains("cut.parquet: not a Parquet file ptmp can read"),
            "{e}"
        );
    }
}
