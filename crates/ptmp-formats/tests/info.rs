//! `info::summarize` against files of every format written here, whole,
//! cut short and holding what is not a TPSet.

mod common;

use common::{frames, numbered};
use ptmp_data::Frames;
use ptmp_formats::info::{summarize, Span};
use ptmp_formats::{create, Format, Writer};
use std::path::Path;

/// 30 numbered sets (i % 4 TrigPrims each) on two channels, receive time
/// 1000 + i; returns the TrigPrims written.
fn write_sets(p: &Path) -> u64 {
    let mut w: Box<dyn Writer> = create(p, None).unwrap();
    let mut tps = 0;
    for i in 0..30u32 {
        let c = if i % 3 == 0 { "apa2" } else { "apa1" };
        let mut s = numbered(i, i % 4);
        s.detid = 1 + i % 2;
        tps += u64::from(i % 4);
        w.write(c, Some(1000 + u64::from(i)), &frames(&s)).unwrap();
    }
    assert_eq!(w.finish().unwrap(), 30);
    tps
}

fn detail<'a>(s: &'a ptmp_formats::info::Summary, name: &str) -> &'a str {
    s.details
        .iter()
        .find(|d| d.name == name)
        .map(|d| d.value.as_str())
        .unwrap_or_else(|| panic!("no {name:?} in {:?}", s.details))
}

#[test]
fn every_format_counts_the_same_sets_trigprims_and_times() {
    let d = tempfile::tempdir().unwrap();
    for name in ["run.mcap", "run.parquet", "run.dump"] {
        let p = d.path().join(name);
        let tps = write_sets(&p);
        let s = summarize(&p, None).unwrap();
        assert_eq!(s.bytes, std::fs::metadata(&p).unwrap().len(), "{name}");
        assert_eq!(
            (s.records, s.tpsets, s.trigprims, s.other),
            (30, 30, tps, 0),
            "{name}"
        );
        assert_eq!(s.detids, vec![1, 2], "{name}");
        assert_eq!(
            s.tstart,
            Some(Span {
                min: 0,
                max: 29 * 50_000
            }),
            "{name}"
        );
        assert_eq!(s.damaged, None, "{name}");
        if s.format == Format::Dump {
            // A dump keeps neither channel nor time.
            assert_eq!(s.channels.len(), 1);
            assert_eq!(s.channels[0].name, "");
            assert_eq!(s.log_time_ns, None);
            assert!(detail(&s, "keeps").contains("no channel"));
            continue;
        }
        assert_eq!(
            s.log_time_ns,
            Some(Span {
                min: 1000,
                max: 1029
            }),
            "{name}"
        );
        let names: Vec<_> = s
            .channels
            .iter()
            .map(|c| (c.name.as_str(), c.records))
            .collect();
        assert_eq!(names, vec![("apa1", 20), ("apa2", 10)], "{name}");
        let apa2 = &s.channels[1];
        assert_eq!(
            apa2.tstart,
            Some(Span {
                min: 0,
                max: 27 * 50_000
            })
        );
        assert_eq!(
            apa2.log_time_ns,
            Some(Span {
                min: 1000,
                max: 1027
            })
        );
    }
    let m = summarize(&d.path().join("run.mcap"), None).unwrap();
    assert!(
        detail(&m, "summary").starts_with("yes: "),
        "{:?}",
        m.details
    );
    assert!(
        detail(&m, "compression").starts_with("zstd: "),
        "{:?}",
        m.details
    );
    assert_eq!(detail(&m, "messages"), "30 (the writer's statistics)");
    let q = summarize(&d.path().join("run.parquet"), None).unwrap();
    let rows = 8 + q.trigprims; // each of the 8 sets without TrigPrims is one row
    assert_eq!(detail(&q, "rows"), rows.to_string());
    assert_eq!(detail(&q, "row groups"), "1");
    assert!(
        detail(&q, "compression").starts_with("ZSTD"),
        "{:?}",
        q.details
    );
}

#[test]
fn a_cut_short_recording_is_summarized_up_to_its_damage() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("cut.mcap");
    let mut w = ptmp_formats::mcap::FileWriter::create_with(
        &p,
        ptmp_formats::mcap::McapOptions {
            chunk_bytes: 1024,
            ..Default::default()
        },
    )
    .unwrap();
    for i in 0..200 {
        w.write("apa1", Some(i.into()), &frames(&numbered(i, 3)))
            .unwrap();
    }
    w.flush().unwrap();
    // What a recorder killed now leaves: no summary, no end.
    let bytes = std::fs::read(&p).unwrap();
    std::mem::forget(w);
    let cut = d.path().join("cut2.mcap");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let s = summarize(&cut, None).unwrap();
    assert!(s.records > 0 && s.records < 200, "{}", s.records);
    let why = s.damaged.as_deref().expect("damage is told");
    assert!(why.contains("cut short"), "{why}");
    assert!(detail(&s, "summary").starts_with("none"), "{:?}", s.details);
}

#[test]
fn a_dump_of_other_messages_counts_them_apart() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("mixed.dump");
    let mut w = create(&p, None).unwrap();
    w.write("", None, &frames(&numbered(1, 2))).unwrap();
    w.write("", None, &Frames::from_slices(&[b"hello", b"world"]))
        .unwrap();
    w.finish().unwrap();
    let s = summarize(&p, None).unwrap();
    assert_eq!((s.records, s.tpsets, s.trigprims, s.other), (2, 1, 2, 1));
}

#[test]
fn a_file_that_is_not_there_or_not_its_format_is_an_error_naming_it() {
    let d = tempfile::tempdir().unwrap();
    let e = summarize(&d.path().join("none.mcap"), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("none.mcap"), "{e}");
    let p = d.path().join("text.parquet");
    std::fs::write(&p, "not parquet").unwrap();
    let e = summarize(&p, None).unwrap_err().to_string();
    assert!(e.contains("text.parquet"), "{e}");
}
