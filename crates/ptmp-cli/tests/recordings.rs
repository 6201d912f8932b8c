//! `ptmp record`, `replay`, `convert` and `info` as a user runs them: real
//! processes over ipc, files of every format, a recorder stopped cleanly
//! and one killed without warning, and the mistakes refused by name.

mod common;

use common::{finish, spawn, text, PTMP};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(60);

fn ptmp(args: &[&str]) -> std::process::Output {
    Command::new(PTMP).args(args).output().unwrap()
}

fn info(p: &Path) -> (Value, std::process::Output) {
    let o = ptmp(&["info", "--json", p.to_str().unwrap()]);
    let j = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} {}", text(&o.stdout), text(&o.stderr)));
    (j, o)
}

fn ipc(d: &Path, name: &str) -> String {
    format!("ipc://{}", d.join(name).display())
}

/// Record 300 sets of 4 TrigPrims sent by `ptmp send` over ipc into
/// `file`, with `extra` recorder options; the recorder's JSON summary.
fn record_300(d: &Path, file: &Path, extra: &[&str]) -> Value {
    let ep = ipc(d, "in");
    let mut args = vec![
        "record",
        "-o",
        file.to_str().unwrap(),
        "-p",
        "PULL",
        "-a",
        "bind",
    ];
    args.extend_from_slice(&["-e", &ep, "-n", "300", "--json"]);
    args.extend_from_slice(extra);
    let rec = spawn(&args);
    let tx = spawn(&[
        "send", "-n", "300", "-N", "4", "-p", "PUSH", "-a", "connect", "-e", &ep,
    ]);
    let o = finish(rec, LIMIT);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(finish(tx, LIMIT).status.success());
    let out = text(&o.stdout);
    serde_json::from_str(out.lines().last().unwrap()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn recorded_converted_and_replayed_every_set_comes_back() {
    let d = tempfile::tempdir().unwrap();
    let ep = ipc(d.path(), "in");
    let mcap = d.path().join("run.mcap");
    let summary = record_300(d.path(), &mcap, &[]);
    assert_eq!(
        (summary["kept"].as_u64(), summary["lost"].as_u64()),
        (Some(300), Some(0)),
        "{summary}"
    );

    let (j, o) = info(&mcap);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(j["format"], "mcap");
    assert_eq!(
        (j["tpsets"].as_u64(), j["trigprims"].as_u64()),
        (Some(300), Some(1200))
    );
    assert_eq!(j["channels"][0]["name"], ep.as_str(), "{j}");
    assert!(j["log_time_ns"]["min"].as_u64().unwrap() > 1_700_000_000_000_000_000);
    assert!(
        j["details"]["summary"].as_str().unwrap().starts_with("yes"),
        "{j}"
    );

    // MCAP -> Parquet -> dump, each holding the same sets.
    let pq = d.path().join("run.parquet");
    let dump = d.path().join("run.dump");
    for (from, to) in [(&mcap, &pq), (&pq, &dump)] {
        let o = ptmp(&["convert", from.to_str().unwrap(), to.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains("300 of 300 records"),
            "{}",
            text(&o.stderr)
        );
    }
    let (p, _) = info(&pq);
    assert_eq!(
        (p["tpsets"].as_u64(), p["channels"][0]["name"].as_str()),
        (Some(300), Some(ep.as_str()))
    );
    assert_eq!(
        p["log_time_ns"], j["log_time_ns"],
        "receive times survive Parquet"
    );
    assert_eq!(p["tstart"], j["tstart"]);
    let (dj, _) = info(&dump);
    assert_eq!(
        (dj["tpsets"].as_u64(), dj["trigprims"].as_u64()),
        (Some(300), Some(1200))
    );

    // The dump replayed as fast as it goes into a receiver: nothing lost.
    let out_ep = ipc(d.path(), "out");
    let rx = spawn(&[
        "recv", "-n", "300", "-p", "PULL", "-a", "bind", "-e", &out_ep, "-T", "20000",
    ]);
    let rp = ptmp(&[
        "replay",
        dump.to_str().unwrap(),
        "--fast",
        "-p",
        "PUSH",
        "-a",
        "connect",
        "-e",
        &out_ep,
    ]);
    assert!(rp.status.success(), "{}", text(&rp.stderr));
    assert!(
        text(&rp.stderr).contains("sent 300 messages"),
        "{}",
        text(&rp.stderr)
    );
    let o = finish(rx, LIMIT);
    let said = text(&o.stdout);
    assert!(
        o.status.success() && said.contains("received 300 of 300 TPSets, lost 0"),
        "{said}"
    );
}

/// A file of `n` sets `gap_ticks` apart in data time and `gap_ns` apart
/// in receive time.
fn spaced(p: &Path, n: u32, gap_ticks: u64, gap_ns: u64) {
    let mut w = ptmp_formats::create(p, None).unwrap();
    for i in 0..n {
        let s = ptmp_data::TPSet {
            count: i,
            tstart: u64::from(i) * gap_ticks,
            ..Default::default()
        };
        let mut buf = Vec::new();
        ptmp_data::encode_tpset(&s, &mut buf);
        let f = ptmp::Frames::from_slices(&[&ptmp_data::VERSION_FRAME[..], &buf[..]]);
        w.write(
            "a",
            Some(1_800_000_000_000_000_000 + u64::from(i) * gap_ns),
            &f,
        )
        .unwrap();
    }
    w.finish().unwrap();
}

/// Seconds `ptmp replay FILE ARGS` took to send into a receiver.
fn replay_secs(d: &Path, file: &Path, extra: &[&str]) -> f64 {
    let ep = ipc(d, "paced");
    let rx = spawn(&[
        "recv", "-n", "11", "-p", "PULL", "-a", "bind", "-e", &ep, "-T", "20000",
    ]);
    let mut args = vec![
        "replay",
        file.to_str().unwrap(),
        "-p",
        "PUSH",
        "-a",
        "connect",
        "-e",
        &ep,
    ];
    args.extend_from_slice(extra);
    let t0 = Instant::now();
    let o = ptmp(&args);
    let secs = t0.elapsed().as_secs_f64();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(finish(rx, LIMIT).status.success());
    secs
}

#[test]
fn replay_paces_by_data_time_or_receive_time_at_a_speed() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("spaced.mcap");
    // 11 sets 40 ms apart in data time (50 MHz) and 80 ms apart received.
    spaced(&f, 11, 2_000_000, 80_000_000);
    // Waits are lower bounds: a busy machine only makes them longer.
    let data = replay_secs(d.path(), &f, &[]);
    assert!(
        data >= 0.4,
        "paced by data time: 10 gaps of 40 ms took {data} s"
    );
    let log = replay_secs(d.path(), &f, &["--by", "log", "--speed", "2"]);
    assert!(
        log >= 0.4,
        "paced by receive time at 2x: 10 gaps of 40 ms took {log} s"
    );
    let mhz = replay_secs(d.path(), &f, &["--clock-mhz", "25"]);
    assert!(mhz >= 0.8, "at 25 MHz the gaps are 80 ms: took {mhz} s");
}

#[test]
fn a_recorder_killed_leaves_a_file_read_up_to_its_last_chunk_and_one_stopped_a_whole_one() {
    let d = tempfile::tempdir().unwrap();
    for (name, signal) in [("killed.mcap", "KILL"), ("stopped.mcap", "TERM")] {
        let ep = ipc(d.path(), &format!("{name}.sock"));
        let f = d.path().join(name);
        let rec = spawn(&[
            "record",
            "-o",
            f.to_str().unwrap(),
            "-p",
            "PULL",
            "-a",
            "bind",
            "-e",
            &ep,
            "--flush-every",
            "20",
        ]);
        let tx = spawn(&[
            "send", "-n", "1000000", "-r", "2000", "-N", "2", "-p", "PUSH", "-a", "connect", "-e",
            &ep,
        ]);
        // Wait until chunks have reached the file.
        common::wait_for(LIMIT, "a flushed chunk", || {
            (std::fs::metadata(&f).map(|m| m.len()).unwrap_or(0) > 4096).then_some(())
        });
        std::thread::sleep(Duration::from_millis(200));
        let ok = Command::new("kill")
            .args([&format!("-{signal}"), &rec.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
        let o = finish(rec, LIMIT);
        let mut tx = tx;
        let _ = tx.kill();
        let _ = tx.wait();
        let (j, io) = info(&f);
        let records = j["tpsets"].as_u64().unwrap();
        assert!(records > 0, "{name}: {j}");
        if signal == "KILL" {
            assert!(!io.status.success(), "a cut-short file is told as damaged");
            assert!(j["damaged"].as_str().unwrap().contains("cut short"), "{j}");
            assert!(
                j["details"]["summary"]
                    .as_str()
                    .unwrap()
                    .starts_with("none"),
                "{j}"
            );
        } else {
            assert!(o.status.success(), "{}", text(&o.stderr));
            let said = text(&o.stdout);
            assert!(
                said.contains(&format!("recorded {records} messages")),
                "{said} vs {j}"
            );
            assert!(said.contains("ended by signal"), "{said}");
            assert_eq!(j["damaged"], Value::Null, "{j}");
            assert!(io.status.success());
        }
    }
}

#[test]
fn mistakes_are_refused_by_name() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("a.mcap");
    spaced(&f, 3, 1, 1);
    let s = f.to_str().unwrap();
    let refused = |args: &[&str], says: &str| {
        let o = ptmp(args);
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(says), "{args:?}: {e}");
    };
    refused(
        &["convert", s, s, "--force"],
        "the output is the input file",
    );
    let dump = d.path().join("a.dump");
    assert!(ptmp(&["convert", s, dump.to_str().unwrap()])
        .status
        .success());
    refused(
        &["convert", s, dump.to_str().unwrap()],
        "exists; give --force",
    );
    refused(
        &["convert", s, d.path().join("a.h5").to_str().unwrap()],
        "HDF5",
    );
    refused(
        &[
            "replay",
            dump.to_str().unwrap(),
            "--by",
            "log",
            "-p",
            "PUSH",
            "-e",
            "ipc:///tmp/x",
        ],
        "keeps no receive time",
    );
    refused(
        &[
            "replay",
            s,
            "--speed",
            "0",
            "-p",
            "PUSH",
            "-e",
            "ipc:///tmp/x",
        ],
        "--speed 0",
    );
    refused(
        &[
            "record",
            "-o",
            f.to_str().unwrap(),
            "-p",
            "PULL",
            "-e",
            "ipc:///tmp/x",
        ],
        "exists",
    );
    refused(
        &[
            "record",
            "-o",
            d.path().join("b.mcap").to_str().unwrap(),
            "-p",
            "PUSH",
            "-e",
            "ipc:///tmp/x",
        ],
        "cannot receive",
    );
    let o = ptmp(&["info", d.path().join("none.mcap").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("none.mcap"), "{}", text(&o.stderr));
    let junk = d.path().join("junk.parquet");
    std::fs::write(&junk, b"PAR1 not really").unwrap();
    let o = ptmp(&["info", junk.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("junk.parquet"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn recording_an_shm_pub_ring_counts_every_set_kept_or_overwritten() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("ring.mcap");
    let name = format!("rec{}", std::process::id());
    let ep = format!("shm://{name}");
    let rec = spawn(&[
        "record",
        "-o",
        f.to_str().unwrap(),
        "-p",
        "SUB",
        "-a",
        "connect",
        "-e",
        &ep,
        "-T",
        "3s",
        "--json",
    ]);
    std::thread::sleep(Duration::from_millis(300));
    // A small ring and a fast writer: the recorder may fall behind, and the
    // writer never waits for it.
    let cfg = format!(r#"{{"socket":{{"type":"PUB","bind":["{ep}"],"shm_slots":16}}}}"#);
    let tx = ptmp(&[
        "send", "-n", "100000", "-N", "10", "--config", &cfg, "-B", "300ms",
    ]);
    assert!(tx.status.success(), "{}", text(&tx.stderr));
    let o = finish(rec, LIMIT);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let j: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    let (kept, over) = (
        j["kept"].as_u64().unwrap(),
        j["overwritten"].as_u64().unwrap(),
    );
    assert_eq!(kept + over, 100_000, "{out}");
    let (i, _) = info(&f);
    assert_eq!(i["tpsets"].as_u64(), Some(kept), "{i}");
}

#[test]
fn a_recording_rolls_into_a_numbered_series_of_whole_files() {
    let d = tempfile::tempdir().unwrap();
    let ep = ipc(d.path(), "in");
    let f = d.path().join("roll.mcap");
    let j = record_300(d.path(), &f, &["--roll-size", "4KiB"]);
    let out = j.to_string();
    let files: Vec<String> = j["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert!(files.len() >= 3, "{out}");
    assert_eq!(files[1], d.path().join("roll.1.mcap").display().to_string());
    let mut total = 0;
    for f in &files {
        let (i, io) = info(Path::new(f));
        assert!(io.status.success(), "{f}: every file is whole: {i}");
        total += i["tpsets"].as_u64().unwrap();
    }
    assert_eq!(total, 300);
    // The series is there: a second recording is refused without --force.
    let o = ptmp(&[
        "record",
        "-o",
        f.to_str().unwrap(),
        "-p",
        "PULL",
        "-e",
        &ep,
        "--roll-every",
        "1m",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

#[test]
fn plot_draws_the_four_pictures_of_a_recording() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("p.mcap");
    let mut w = ptmp_formats::create(&f, None).unwrap();
    for i in 0..200u32 {
        let tps = (0..5)
            .map(|k| ptmp_data::TrigPrim {
                channel: 100 * (i % 2) + k,
                tstart: u64::from(i) * 50_000 + u64::from(k),
                tspan: Some(10 + k),
                adcsum: Some(100 * k),
                ..Default::default()
            })
            .collect();
        let s = ptmp_data::TPSet {
            count: i,
            detid: i % 2,
            tstart: u64::from(i) * 50_000,
            tps,
            ..Default::default()
        };
        let mut buf = Vec::new();
        ptmp_data::encode_tpset(&s, &mut buf);
        w.write(
            "a",
            None,
            &ptmp::Frames::from_slices(&[&ptmp_data::VERSION_FRAME[..], &buf[..]]),
        )
        .unwrap();
    }
    w.finish().unwrap();
    let svg = d.path().join("p.svg");
    let o = ptmp(&[
        "plot",
        f.to_str().unwrap(),
        "-o",
        svg.to_str().unwrap(),
        "--max-points",
        "250",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
    for caption in [
        "TrigPrims: channel against time (every 4th of 1000)",
        "ADC sum of each TrigPrim (1000 values)",
        "Time over threshold of each TrigPrim (1000 values)",
        "TPSets per second by detector id",
        "detid 0",
        "detid 1",
    ] {
        assert!(s.contains(caption), "no {caption:?} in the picture");
    }
    assert_eq!(
        s.matches("<circle").count(),
        250,
        "every 4th TrigPrim is a point"
    );
    // What it cannot draw is refused by name.
    let o = ptmp(&[
        "plot",
        f.to_str().unwrap(),
        "-o",
        d.path().join("p.png").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("writes SVG"),
        "{}",
        text(&o.stderr)
    );
    let empty = d.path().join("empty.dump");
    std::fs::write(&empty, b"").unwrap();
    let o = ptmp(&["plot", empty.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("holds no TPSets"),
        "{}",
        text(&o.stderr)
    );
}
