//! MCAP files of TPSets: what is written, as MCAP tools see it; records
//! back as written; files cut short as a killed recorder leaves them.

mod common;

use common::{frames, numbered, read_all, record, write_all};
use proptest::prelude::*;
use ptmp_data::Frames;
use ptmp_formats::mcap::{Chunks, FileWriter, McapOptions, SCHEMA_NAME, TPSET_DESCRIPTOR};
use ptmp_formats::{append, create, open, Error, Format, Record, Writer};
use std::path::Path;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn records_come_back_as_they_were_written(
        recs in proptest::collection::vec(record(6), 0..40),
        small in any::<bool>(),
    ) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("run.mcap");
        let opts = McapOptions { chunk_bytes: if small { 200 } else { 1 << 20 }, ..McapOptions::default() };
        let w = Box::new(FileWriter::create_with(&p, opts).unwrap());
        prop_assert_eq!(write_all(w, &recs), recs.len() as u64);
        let mut r = open(&p, None).unwrap();
        prop_assert_eq!(r.format(), Format::Mcap);
        let (got, err) = read_all(&mut *r);
        prop_assert!(err.is_none(), "{:?}", err);
        prop_assert_eq!(got.len(), recs.len());
        for (g, (c, t, s)) in got.iter().zip(&recs) {
            let topic = if c.is_empty() { "tpsets" } else { c.as_str() };
            prop_assert_eq!(&g.channel, topic);
            if let Some(t) = t {
                prop_assert_eq!(g.log_time_ns, Some(*t));
            }
            prop_assert!(g.log_time_ns.is_some());
            prop_assert_eq!(&g.frames, &frames(s));
        }
        prop_assert_eq!(r.records(), recs.len() as u64);
    }
}

/// `n` numbered sets on two channels, log time `i`, one flush per `every`.
fn recording(p: &Path, n: u32, opts: McapOptions, every: u32) -> Box<dyn Writer> {
    let mut w: Box<dyn Writer> = Box::new(FileWriter::create_with(p, opts).unwrap());
    for i in 0..n {
        let c = if i % 3 == 0 { "apa2" } else { "apa1" };
        w.write(c, Some(u64::from(i)), &frames(&numbered(i, i % 5)))
            .unwrap();
        if (i + 1) % every == 0 {
            w.flush().unwrap();
        }
    }
    w
}

#[test]
fn mcap_tools_see_channels_schema_chunks_and_summary() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("run.mcap");
    let opts = McapOptions {
        chunk_bytes: 4096,
        ..McapOptions::default()
    };
    assert_eq!(recording(&p, 300, opts, u32::MAX).finish().unwrap(), 300);
    let bytes = std::fs::read(&p).unwrap();
    let s = mcap::Summary::read(&bytes).unwrap().expect("a summary");
    let mut topics: Vec<&str> = s.channels.values().map(|c| c.topic.as_str()).collect();
    topics.sort();
    assert_eq!(topics, ["apa1", "apa2"]);
    for c in s.channels.values() {
        assert_eq!(c.message_encoding, "protobuf");
        let sc = c.schema.as_ref().unwrap();
        assert_eq!(
            (sc.name.as_str(), sc.encoding.as_str()),
            (SCHEMA_NAME, "protobuf")
        );
        assert_eq!(&sc.data[..], TPSET_DESCRIPTOR);
    }
    assert_eq!(s.stats.as_ref().unwrap().message_count, 300);
    assert!(s.chunk_indexes.len() > 3, "{}", s.chunk_indexes.len());
    assert!(s.chunk_indexes.iter().all(|c| c.compression == "zstd"));
    assert!(s
        .chunk_indexes
        .iter()
        .all(|c| !c.message_index_offsets.is_empty()));

    // The messages, decoded with the schema the file carries, by a
    // protobuf library that knows nothing of ptmp.
    let pool = prost_reflect::DescriptorPool::decode(TPSET_DESCRIPTOR).unwrap();
    let desc = pool.get_message_by_name(SCHEMA_NAME).unwrap();
    let msgs = mcap::MessageStream::new(&bytes).unwrap();
    for (i, m) in msgs.enumerate() {
        let m = m.unwrap();
        let i = i as u32;
        let want = numbered(i, i % 5);
        let v = prost_reflect::DynamicMessage::decode(desc.clone(), &m.data[..]).unwrap();
        assert_eq!(v.get_field_by_name("count").unwrap().as_u32(), Some(i));
        assert_eq!(
            v.get_field_by_name("tstart").unwrap().as_u64(),
            Some(want.tstart)
        );
        let tps = v.get_field_by_name("tps").unwrap();
        assert_eq!(tps.as_list().unwrap().len(), want.tps.len());
        assert_eq!((m.log_time, m.sequence), (u64::from(i), i));
        assert_eq!(m.publish_time, want.created as u64 * 1000);
    }
}

#[test]
fn lz4_and_uncompressed_chunks_read_back_too() {
    for chunks in [Chunks::Lz4, Chunks::Uncompressed] {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("run.mcap");
        let opts = McapOptions {
            chunks,
            chunk_bytes: 2048,
        };
        recording(&p, 50, opts, u32::MAX).finish().unwrap();
        let (got, err) = read_all(&mut *open(&p, None).unwrap());
        assert!(err.is_none(), "{chunks:?}: {err:?}");
        assert_eq!(got.len(), 50);
        assert_eq!(got[49].frames, frames(&numbered(49, 4)));
    }
}

#[test]
fn a_message_that_is_not_a_tpset_is_refused_by_record() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("run.mcap");
    let mut w = create(&p, None).unwrap();
    assert_eq!(w.format(), Format::Mcap);
    w.write("a", None, &frames(&numbered(0, 1))).unwrap();
    for bad in [
        Frames::from_slices(&[b"hello"]),
        Frames::from_slices(&[&[1u8, 0, 0, 0][..], b""]),
        Frames::from_slices(&[&ptmp_data::VERSION_FRAME[..], b"\x08"]),
    ] {
        let e = w.write("a", None, &bad).unwrap_err();
        assert!(matches!(e, Error::Refused { .. }), "{e}");
        let e = e.to_string();
        assert!(e.contains("run.mcap") && e.contains("record 1"), "{e}");
        assert!(e.contains("not a PTMP TPSet message"), "{e}");
    }
    w.write("a", None, &frames(&numbered(1, 0))).unwrap();
    assert_eq!(w.finish().unwrap(), 2);
    let (got, err) = read_all(&mut *open(&p, None).unwrap());
    assert!(err.is_none());
    assert_eq!(got.len(), 2);
}

/// Messages in whole chunks before byte `cut`: the chunk index of the
/// whole file says where each chunk (and its message index) ends; log
/// time `i` is message `i`.
fn whole_before(bytes: &[u8], cut: u64) -> u64 {
    let s = mcap::Summary::read(bytes).unwrap().unwrap();
    s.chunk_indexes
        .iter()
        .filter(|c| c.chunk_start_offset + c.chunk_length + c.message_index_length <= cut)
        .map(|c| c.message_end_time + 1)
        .max()
        .unwrap_or(0)
}

#[test]
fn a_file_cut_short_gives_its_whole_chunks_then_names_the_damage() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("run.mcap");
    let opts = McapOptions {
        chunk_bytes: 1024,
        ..McapOptions::default()
    };
    recording(&p, 200, opts, u32::MAX).finish().unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let want: Vec<Record> = read_all(&mut *open(&p, None).unwrap()).0;
    assert_eq!(want.len(), 200);
    let cut_path = d.path().join("cut.mcap");
    let len = bytes.len() as u64;
    let cuts = (0..len)
        .step_by(97)
        .chain([len - 1, len - 8, len - 9, 8, 9]);
    for cut in cuts {
        std::fs::write(&cut_path, &bytes[..cut as usize]).unwrap();
        let r = open(&cut_path, None);
        let Ok(mut r) = r else {
            let e = r.err().unwrap().to_string();
            assert!(cut < 8, "{cut}: {e}");
            assert!(
                e.contains("cut.mcap") && e.contains("not an MCAP file"),
                "{e}"
            );
            continue;
        };
        let (got, err) = read_all(&mut *r);
        let e = err.unwrap_or_else(|| panic!("cut at {cut} of {len}: no error"));
        assert!(matches!(e, Error::Unreadable { .. }), "{e}");
        assert_eq!(e.record(), Some(got.len() as u64));
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("{}: ", cut_path.display())),
            "{text}"
        );
        let n = got.len();
        assert!(
            text.contains(&format!("cut short after {n} records")),
            "{text}"
        );
        assert!(got[..] == want[..got.len()], "cut at {cut}: not a prefix");
        assert!(
            got.len() as u64 >= whole_before(&bytes, cut),
            "cut at {cut}"
        );
        assert!(!r.read_into(&mut Record::default()).unwrap());
    }
}

#[test]
fn a_damaged_byte_is_an_error_after_the_records_before_it_never_a_panic() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("run.mcap");
    let opts = McapOptions {
        chunk_bytes: 1024,
        ..McapOptions::default()
    };
    recording(&p, 60, opts, u32::MAX).finish().unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let want: Vec<Record> = read_all(&mut *open(&p, None).unwrap()).0;
    let bad = d.path().join("bad.mcap");
    let mut errors = 0;
    for at in (8..bytes.len() - 8).step_by(13) {
        let mut b = bytes.clone();
        b[at] ^= 0x5a;
        std::fs::write(&bad, &b).unwrap();
        let (got, err) = read_all(&mut *open(&bad, None).unwrap());
        assert!(got[..] == want[..got.len()], "byte {at}: not a prefix");
        match err {
            Some(e) => {
                errors += 1;
                assert_eq!(e.record(), Some(got.len() as u64));
                let e = e.to_string();
                assert!(e.contains("bad.mcap: MCAP file damaged after"), "{e}");
            }
            None => assert_eq!(got.len(), want.len(), "byte {at}"),
        }
    }
    assert!(errors > 0);
}

#[test]
fn a_recorder_killed_after_flushing_leaves_what_it_flushed() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("killed.mcap");
    let opts = McapOptions {
        chunk_bytes: 1 << 20,
        ..McapOptions::default()
    };
    let w = recording(&p, 95, opts, 10);
    // Killed: nothing more reaches the file, no summary is written.
    std::mem::forget(w);
    let (got, err) = read_all(&mut *open(&p, None).unwrap());
    assert_eq!(got.len(), 90);
    assert_eq!(got[89].frames, frames(&numbered(89, 4)));
    let e = err.unwrap().to_string();
    assert!(
        e.contains("killed.mcap") && e.contains("cut short after 90 records"),
        "{e}"
    );
}

/// Going on after an MCAP file (a sink restarted in a graph) leaves it
/// as it is and writes the next numbered file, having shown every record
/// already written; one cut short by a killed writer is read to its last
/// whole chunk and said so.
#[test]
fn going_on_after_mcap_files_writes_the_next_one_beside_them() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("run.mcap");
    recording(&p, 3, McapOptions::default(), u32::MAX)
        .finish()
        .unwrap();
    let before = std::fs::read(&p).unwrap();
    let mut seen = Vec::new();
    let a = append(&p, None, &mut |f| seen.push(f.clone())).unwrap();
    assert_eq!(a.path, d.path().join("run.1.mcap"));
    assert_eq!((a.records, seen.len()), (3, 3));
    assert_eq!(seen[2], frames(&numbered(2, 2)));
    assert!(
        a.passed_over[0].contains("MCAP files are not appended to"),
        "{:?}",
        a.passed_over
    );
    let mut w = a.writer;
    w.write("x", Some(1), &frames(&numbered(3, 1))).unwrap();
    w.finish().unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), before);
    let (got, err) = read_all(&mut *open(&d.path().join("run.1.mcap"), None).unwrap());
    assert!(err.is_none());
    assert_eq!(got.len(), 1);
    // The next time on, both are read and the third file is written; a
    // second one cut short (here to its first bytes) is kept as it is.
    let cut = std::fs::read(d.path().join("run.1.mcap")).unwrap();
    std::fs::write(d.path().join("run.1.mcap"), &cut[..12]).unwrap();
    let a = append(&p, None, &mut |_| {}).unwrap();
    assert_eq!(a.path, d.path().join("run.2.mcap"));
    assert_eq!(a.records, 3);
    assert!(
        a.passed_over[1].contains("kept as it is"),
        "{:?}",
        a.passed_over
    );
}

#[test]
fn other_files_and_other_schemas_are_named() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("dump.mcap");
    let mut w = create(&p, Some(Format::Dump)).unwrap();
    w.write("", None, &frames(&numbered(0, 1))).unwrap();
    w.finish().unwrap();
    let e = open(&p, None).err().unwrap().to_string();
    assert!(e.contains("dump.mcap: not an MCAP file"), "{e}");

    let p = d.path().join("json.mcap");
    let mut m =
        mcap::Writer::new(std::io::BufWriter::new(std::fs::File::create(&p).unwrap())).unwrap();
    let c = m
        .add_channel(0, "/pose", "json", &Default::default())
        .unwrap();
    let h = mcap::records::MessageHeader {
        channel_id: c,
        sequence: 0,
        log_time: 1,
        publish_time: 1,
    };
    m.write_to_known_channel(&h, b"{}").unwrap();
    m.finish().unwrap();
    drop(m);
    let (got, err) = read_all(&mut *open(&p, None).unwrap());
    assert!(got.is_empty());
    let e = err.unwrap().to_string();
    assert!(
        e.contains("json.mcap: record 0") && e.contains("\"/pose\""),
        "{e}"
    );
    assert!(e.contains("ptmp reads ptmp.data.TPSet messages"), "{e}");
}
