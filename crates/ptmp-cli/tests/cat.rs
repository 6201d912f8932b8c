//! `ptmp cat` (czmqat) as real processes: dump files to text and sockets,
//! sockets to dump files, truncated and corrupt files, bad arguments.

use ptmp_data::{encode_tpset, TPSet, TrigPrim, VERSION_FRAME};
use ptmp_formats::dump::DumpWriter;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{free_port, spawn, text, PTMP};

fn run(args: &[&str]) -> Output {
    let mut c = Command::new(PTMP)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while c.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = c.kill();
            panic!("ptmp {args:?} did not finish");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    c.wait_with_output().unwrap()
}

fn tpset(count: u32, ntps: u32) -> TPSet {
    TPSet {
        count,
        detid: 4,
        created: 1_700_000_000_000_000 + i64::from(count),
        tstart: 1000 * u64::from(count),
        tspan: Some(25),
        tps: (0..ntps)
            .map(|c| TrigPrim {
                channel: c,
                tstart: 1000 * u64::from(count) + u64::from(c),
                adcsum: Some(7),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// A dump file of three TPSets and one 1-frame garbage record; returns the
/// bytes and each record's start offset.
fn sample_dump() -> (Vec<u8>, Vec<u64>) {
    let mut w = DumpWriter::new(Vec::new());
    let mut buf = Vec::new();
    for i in 0..3 {
        encode_tpset(&tpset(i, i + 1), &mut buf);
        w.write([&VERSION_FRAME[..], &buf[..]]).unwrap();
    }
    w.write([&b"garbage"[..]]).unwrap();
    let bytes = w.into_inner();
    // Each record's start: walk the 8-byte lengths.
    let mut starts = Vec::new();
    let mut off = 0usize;
    while off < bytes.len() {
        starts.push(off as u64);
        off += 8 + u64::from_le_bytes(bytes[off..off + 8].try_into().unwrap()) as usize;
    }
    (bytes, starts)
}

#[test]
fn file_to_text() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("in.dump");
    let (bytes, starts) = sample_dump();
    std::fs::write(&f, &bytes).unwrap();
    let out = run(&["cat", "--ifile", f.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines.len(), 4, "{s}");
    for i in 0..3 {
        assert!(
            lines[i].starts_with(&format!("#{i} @{} TPSet count={i} detid=4", starts[i])),
            "{}",
            lines[i]
        );
        assert!(
            lines[i].ends_with(&format!("ntps={}", i + 1)),
            "{}",
            lines[i]
        );
    }
    assert!(
        lines[3].contains("not a TPSet") && lines[3].contains("1 frame"),
        "{}",
        lines[3]
    );
    assert!(text(&out.stderr).contains("1 of them not TPSets"));
    let out = run(&["cat", "--ifile", f.to_str().unwrap(), "--tps"]);
    let s = text(&out.stdout);
    assert_eq!(
        s.lines().filter(|l| l.starts_with("    channel=")).count(),
        1 + 2 + 3,
        "{s}"
    );
    assert!(s.contains("    channel=2 tstart=2002 adcsum=7"), "{s}");
}

#[test]
fn truncated_file_reports_offset_after_delivering_earlier_records() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, starts) = sample_dump();
    // Cut in the middle of record 2 (the third).
    let cut = starts[2] as usize + 12;
    let f = dir.path().join("cut.dump");
    std::fs::write(&f, &bytes[..cut]).unwrap();
    let out = run(&["cat", "--ifile", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let e = text(&out.stderr);
    assert!(
        e.contains(&format!("byte {}", starts[2])) && e.contains("truncated"),
        "{e}"
    );
    let s = text(&out.stdout);
    assert_eq!(s.lines().count(), 2, "{s}");
    // And to a dump file: the two good records are written, byte for byte.
    let o = dir.path().join("out.dump");
    let out = run(&[
        "cat",
        "--ifile",
        f.to_str().unwrap(),
        "--ofile",
        o.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read(&o).unwrap(), &bytes[..starts[2] as usize]);
}

#[test]
fn corrupt_frame_length_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = Vec::new();
    b.extend(4u64.to_le_bytes());
    b.extend([9u8, 1, 2, 3]); // a frame claiming 9 bytes in a 4-byte record
    let f = dir.path().join("bad.dump");
    std::fs::write(&f, &b).unwrap();
    let out = run(&["cat", "--ifile", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let e = text(&out.stderr);
    assert!(e.contains("corrupt in record 0 at byte 8"), "{e}");
}

#[test]
fn hand_made_czmqat_file_with_a_long_frame() {
    // 8-byte LE length, then zmsg_encode: 4-byte frame (short form), then a
    // 300-byte frame in the long form: 0xFF and a 4-byte big-endian length.
    let mut payload = Vec::new();
    encode_tpset(&tpset(77, 30), &mut payload);
    assert!(
        payload.len() >= 255,
        "needs the long form: {}",
        payload.len()
    );
    let mut rec = vec![4u8, 0, 0, 0, 0, 0xff];
    rec.extend((payload.len() as u32).to_be_bytes());
    rec.extend(&payload);
    let mut file = (rec.len() as u64).to_le_bytes().to_vec();
    file.extend(&rec);
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("czmqat.dump");
    std::fs::write(&f, &file).unwrap();
    let out = run(&["cat", "--ifile", f.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("#0 @0 TPSet count=77 detid=4"),
        "{}",
        text(&out.stdout)
    );
    assert!(text(&out.stdout).contains("ntps=30"));
}

/// A larger dump: 2000 messages, some with many TPs.
fn big_dump() -> Vec<u8> {
    let mut w = DumpWriter::new(Vec::new());
    let mut buf = Vec::new();
    for i in 0..2000 {
        encode_tpset(&tpset(i, i % 30), &mut buf);
        w.write([&VERSION_FRAME[..], &buf[..]]).unwrap();
    }
    w.into_inner()
}

#[test]
fn file_to_socket_to_file_is_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = big_dump();
    let fin = dir.path().join("in.dump");
    std::fs::write(&fin, &bytes).unwrap();
    for ep in [
        format!("tcp://127.0.0.1:{}", free_port()),
        format!("ipc://{}", dir.path().join("cat.ipc").display()),
    ] {
        let fout = dir.path().join("out.dump");
        let rx = Command::new(PTMP)
            .args([
                "cat",
                "--isock",
                &format!("PULL,bind,{ep}"),
                "--ofile",
                fout.to_str().unwrap(),
            ])
            .args(["-n", "2000", "-T", "10000"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let tx = run(&[
            "cat",
            "--ifile",
            fin.to_str().unwrap(),
            "--osock",
            &format!("PUSH,connect,{ep}"),
        ]);
        assert!(tx.status.success(), "{}", text(&tx.stderr));
        let out = rx.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(std::fs::read(&fout).unwrap(), bytes, "{ep}");
    }
}

#[test]
fn socket_to_socket_over_shm_passes_every_message_on() {
    // File -> shm ring A -> cat relaying A to ring B -> file: the relay
    // passes each message from slot to slot (`Receiver::forward`).
    let dir = tempfile::tempdir().unwrap();
    let bytes = big_dump();
    let fin = dir.path().join("in.dump");
    std::fs::write(&fin, &bytes).unwrap();
    let fout = dir.path().join("out.dump");
    let (a, b) = (
        format!("ptmp-cat-relay-a-{}", std::process::id()),
        format!("ptmp-cat-relay-b-{}", std::process::id()),
    );
    // Rings that hold the whole run, so a reader that attaches late
    // still finds the first message.
    let push = |name: &str| {
        format!(
            r#"{{"socket":{{"type":"PUSH","bind":["shm://{name}"],"shm_slots":4096,"shm_max_message":2048}}}}"#
        )
    };
    let end = spawn(&[
        "cat",
        "--isock",
        &format!("PULL,connect,shm://{b}"),
        "--ofile",
        fout.to_str().unwrap(),
        "-n",
        "2000",
        "-T",
        "10000",
    ]);
    let relay = spawn(&[
        "cat",
        "--isock",
        &format!("PULL,connect,shm://{a}"),
        "--osock",
        &push(&b),
        "-n",
        "2000",
        "-T",
        "10000",
    ]);
    let tx = run(&[
        "cat",
        "--ifile",
        fin.to_str().unwrap(),
        "--osock",
        &push(&a),
    ]);
    assert!(tx.status.success(), "{}", text(&tx.stderr));
    let r = relay.wait_with_output().unwrap();
    assert!(r.status.success(), "relay: {}", text(&r.stderr));
    let out = end.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    for name in [&a, &b] {
        assert!(run(&["shm", "rm", name]).status.success());
    }
    assert_eq!(std::fs::read(&fout).unwrap(), bytes);
}

#[test]
fn bad_arguments_exit_2_and_name_the_value() {
    let cases: &[(&[&str], &str)] = &[
        (&["cat"], "--ifile"),
        (
            &["cat", "--ifile", "x", "--isock", "PULL,bind,tcp://*:5"],
            "--isock",
        ),
        (&["cat", "--isock", "PULLY,bind,tcp://*:5"], "PULLY"),
        (
            &["cat", "--isock", "PULL,bind,tcp://nohost"],
            "tcp://nohost",
        ),
        (&["cat", "--isock", "PULL,sideways,tcp://*:5"], "sideways"),
        (&["cat", "--isock", "PULL"], "TYPE,bind|connect,ENDPOINT"),
        (&["cat", "--isock", "PUSH,bind,tcp://*:5"], "cannot receive"),
        (
            &[
                "cat",
                "--ifile",
                "x",
                "--osock",
                "PULL,connect,tcp://127.0.0.1:5",
            ],
            "cannot send",
        ),
        (
            &["cat", "--isock", "{\"socket\":{\"type\":\"PULL\"}}"],
            "no endpoint",
        ),
        (
            &[
                "cat",
                "--ifile",
                "x",
                "--ofile",
                "y",
                "--osock",
                "PUSH,bind,tcp://*:5",
            ],
            "--osock",
        ),
        // A format ptmp knows of but does not write: refused by name
        // before the socket is bound.
        (
            &[
                "cat",
                "--isock",
                "PULL,bind,tcp://127.0.0.1:5",
                "--ofile",
                "run.h5",
            ],
            "--ofile run.h5: ptmp does not read or write HDF5 files yet",
        ),
        (
            &["cat", "--ifile", "tps.hdf5"],
            "--ifile tps.hdf5: ptmp does not read or write HDF5 files yet",
        ),
    ];
    for (args, needle) in cases {
        let out = run(args);
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(needle), "{args:?}: {needle:?} not in {e}");
    }
    let out = run(&["cat", "--ifile", "/nonexistent/file.dump"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("/nonexistent/file.dump"));
}

/// `ptmp cat FILE | head`: the reader closes the pipe after a few lines; cat
/// stops quietly with status 0 instead of failing on the closed pipe.
#[test]
fn text_into_a_pipe_closed_by_its_reader_ends_quietly() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("big.dump");
    let mut w = DumpWriter::new(Vec::new());
    let mut buf = Vec::new();
    // Far more text than a pipe and the output buffer hold (about 4 MB).
    for i in 0..10_000 {
        encode_tpset(&tpset(i, 10), &mut buf);
        w.write([&VERSION_FRAME[..], &buf[..]]).unwrap();
    }
    std::fs::write(&f, w.into_inner()).unwrap();
    let mut c = Command::new(PTMP)
        .args(["cat", "--ifile", f.to_str().unwrap(), "--tps"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(c.stdout.take().unwrap());
    let mut line = String::new();
    for _ in 0..3 {
        line.clear();
        out.read_line(&mut line).unwrap();
    }
    assert!(line.starts_with("    channel="), "{line}");
    drop(out); // as `head -n 3` does
    let t0 = Instant::now();
    while c.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = c.kill();
            panic!("ptmp cat did not end after its reader closed the pipe");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let o = c.wait_with_output().unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("error"), "{err}");
    assert!(!err.to_lowercase().contains("broken pipe"), "{err}");
}
