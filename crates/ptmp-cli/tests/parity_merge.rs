//! `ptmp run` with PTMP-shaped configurations of the merges, the filter and
//! the replay, checked against what PTMP itself does with them: sorted takes
//! one stream per input socket; the filter stamps its outputs; a zipper may
//! carry both `tardy` and `sync_time`; and stopping two window chains that
//! feed a zipper or a sorted by SIGINT loses none of the windows they flush.

use ptmp::{Sender, TPSet, TrigPrim};
use ptmp_data::{decode_tpset, encode_tpset, Frames, VERSION_FRAME};
use ptmp_formats::dump::{DumpReader, DumpWriter};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

mod common;
use common::{finish, s, sock, spawn, text, write_json, PTMP};

fn read_dump(path: &Path) -> Vec<TPSet> {
    let mut r = DumpReader::new(std::fs::File::open(path).unwrap());
    let mut f = Frames::new();
    let mut out = vec![];
    while r.read_into(&mut f).unwrap() {
        out.push(decode_tpset(f.get(1).unwrap()).unwrap());
    }
    out
}

/// The value of counter `key` on the report line of agent `agent`.
fn counter(out: &str, agent: &str, key: &str) -> u64 {
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("{agent} (")))
        .unwrap_or_else(|| panic!("no report of {agent} in:\n{out}"));
    line.split(' ')
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key} in {line}"))
        .parse()
        .unwrap()
}

fn set(count: u32, detid: u32, tstart: u64, channel: u32) -> TPSet {
    TPSet {
        count,
        detid,
        created: 1,
        tstart,
        tps: vec![TrigPrim {
            channel,
            tstart,
            tspan: Some(10),
            adcsum: Some(10),
            adcpeak: Some(5),
            flags: Some(0),
        }],
        ..Default::default()
    }
}

fn interrupt(c: &Child) {
    // SAFETY: kill only sends a signal to a process this test started; it
    // reads and writes no memory of ours.
    unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGINT) };
}

/// PTMP's sorted: one stream per input socket. Two inputs carry the same
/// detid, input 1 running 10 ms (500,000 ticks at 50 MHz) ahead of input
/// 0: all 4,000 sets come out in tstart order, none tardy, and where the
/// two inputs have equal tstarts, input 0's set goes first.
#[test]
fn sorted_merges_two_same_detid_inputs_one_ahead() {
    let d = tempfile::tempdir().unwrap();
    let ep = |n: &str| format!("ipc://{}", d.path().join(n).display());
    let (in0, in1, out) = (ep("in0"), ep("in1"), ep("out"));
    let cfg = json!({
        "name": "sorted-parity", "ttl": -1, "snooze": 100,
        "proxies": [
            {"name": "srt", "type": "sorted", "data": {"tardy": 1000, "tardy_policy": "drop",
                "input": sock("PULL", "bind", &[&in0, &in1]),
                "output": sock("PUSH", "bind", &[&out])}},
            {"name": "sink", "type": "czmqat", "data": {
                "input": sock("PULL", "connect", &[&out]),
                "ofile": s(&d.path().join("sorted.dump"))}}
        ]
    });
    let p = write_json(d.path(), "sorted.json", &cfg);
    let child = spawn(&["run", &s(&p)]);
    let conn = |e: &str| {
        Sender::from_json(&format!(
            r#"{{"socket":{{"type":"PUSH","connect":["{e}"]}}}}"#
        ))
        .unwrap()
    };
    let (mut tx0, mut tx1) = (conn(&in0), conn(&in1));
    // Both connections up before the first set, so neither link's first
    // sets arrive late.
    std::thread::sleep(Duration::from_millis(200));
    let (n, ahead) = (2000u32, 500_000u64);
    let t = |i: u32| 10_000_000 + 1000 * u64::from(i);
    // Input 0 is heard from first: were input 1, which is ahead, heard
    // before input 0 ever was, its first set would go at once and input
    // 0's first set would be tardy (in PTMP as here).
    tx0.send(&set(0, 7, t(0), 0)).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    for i in 0..n {
        if i > 0 {
            tx0.send(&set(i, 7, t(i), 0)).unwrap();
        }
        tx1.send(&set(i, 7, t(i) + ahead, 1)).unwrap();
    }
    // Input 0 ends first; input 1's last 500 sets go once input 0 has been
    // silent for `tardy`.
    std::thread::sleep(Duration::from_millis(2500));
    interrupt(&child);
    let o = finish(child, Duration::from_secs(30));
    let (stdout, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "stdout: {stdout}\nstderr: {err}");
    assert_eq!(counter(&stdout, "srt", "in"), 4000, "{stdout}");
    assert_eq!(counter(&stdout, "srt", "out"), 4000, "{stdout}");
    assert_eq!(counter(&stdout, "srt", "tardy"), 0, "{stdout}");
    assert!(
        stdout.contains("input 0 (detid 7): received 2000 sent 2000 tardy 0"),
        "{stdout}"
    );
    assert!(
        stdout.contains("input 1 (detid 7): received 2000 sent 2000 tardy 0"),
        "{stdout}"
    );
    let got = read_dump(&d.path().join("sorted.dump"));
    assert_eq!(got.len(), 4000);
    let key: Vec<(u64, u32)> = got.iter().map(|x| (x.tstart, x.tps[0].channel)).collect();
    assert!(
        key.windows(2).all(|w| w[0] <= w[1]),
        "tstart order, ties by input order"
    );
    let ties = key.windows(2).filter(|w| w[0].0 == w[1].0).count();
    assert_eq!(ties, 1500, "every shared tstart came out as a pair");
    for input in 0..2 {
        assert_eq!(key.iter().filter(|k| k.1 == input).count(), 2000);
    }
}

/// A PTMP-shaped chain: a zipper configured with both `tardy` and
/// `sync_time` (PTMP's own configurations do this) is accepted, and a
/// `dummy_filter` behind it stamps every output with the first input's
/// detid and a fresh `created`, numbering them from 0.
#[test]
fn zipper_with_tardy_and_sync_time_and_ptmp_filter_stamping() {
    let d = tempfile::tempdir().unwrap();
    let ep = |n: &str| format!("ipc://{}", d.path().join(n).display());
    let (in0, in1) = (ep("in0"), ep("in1"));
    let cfg = json!({
        "name": "zip-parity", "ttl": -1, "snooze": 100,
        "proxies": [
            {"name": "zip", "type": "zipper", "data": {"tardy": 50, "sync_time": 250000,
                "input": sock("PULL", "bind", &[&in0, &in1]),
                "output": sock("PUSH", "bind", &["inproc://z"])}},
            {"name": "flt", "type": "filter", "data": {"engine": "dummy_filter",
                "input": sock("PULL", "connect", &["inproc://z"]),
                "output": sock("PUSH", "bind", &["inproc://f"])}},
            {"name": "sink", "type": "czmqat", "data": {
                "input": sock("PULL", "connect", &["inproc://f"]),
                "ofile": s(&d.path().join("zip.dump"))}}
        ]
    });
    let p = write_json(d.path(), "zip.json", &cfg);
    let check = Command::new(PTMP)
        .args(["run", &s(&p), "--check"])
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", text(&check.stderr));
    assert!(
        text(&check.stderr).contains("tardy = 50 and sync_time = 250000"),
        "a warning names both: {}",
        text(&check.stderr)
    );
    let t0 = ptmp_data::now_us();
    let child = spawn(&["run", &s(&p)]);
    // Let the zipper bind its inputs before the senders connect.
    std::thread::sleep(Duration::from_millis(1000));
    let conn = |e: &str| {
        Sender::from_json(&format!(
            r#"{{"socket":{{"type":"PUSH","connect":["{e}"]}}}}"#
        ))
        .unwrap()
    };
    let (mut tx0, mut tx1) = (conn(&in0), conn(&in1));
    // Both connections up before the first set, so neither link's first
    // sets arrive late.
    std::thread::sleep(Duration::from_millis(200));
    for i in 0..100u32 {
        tx0.send(&set(i, 11, 5_000_000 + 1000 * u64::from(i), 0))
            .unwrap();
        tx1.send(&set(i, 12, 5_000_500 + 1000 * u64::from(i), 1))
            .unwrap();
        std::thread::sleep(Duration::from_micros(200));
    }
    std::thread::sleep(Duration::from_millis(1000));
    interrupt(&child);
    let o = finish(child, Duration::from_secs(30));
    let (stdout, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "stdout: {stdout}\nstderr: {err}");
    assert_eq!(counter(&stdout, "zip", "out"), 200, "{stdout}");
    let got = read_dump(&d.path().join("zip.dump"));
    assert_eq!(got.len(), 200, "{stdout}");
    let first = got[0].detid;
    assert!(first == 11 || first == 12);
    for (i, x) in got.iter().enumerate() {
        assert_eq!(x.count, i as u32);
        assert_eq!(x.detid, first, "one detid for the whole output, as PTMP");
        assert!(x.created >= t0, "created is fresh, not the input's 1");
    }
}

/// A dump of `n` sets of link `detid`, one per 100 ticks from `t0`, each
/// with one TrigPrim on channel `channel`.
fn write_link(path: &Path, detid: u32, channel: u32, n: u32, t0: u64) {
    let mut w = DumpWriter::new(std::fs::File::create(path).unwrap());
    let mut buf = Vec::new();
    for i in 0..n {
        let x = set(i, detid, t0 + 100 * u64::from(i), channel);
        buf.clear();
        encode_tpset(&x, &mut buf);
        w.write([&VERSION_FRAME[..], &buf[..]]).unwrap();
    }
    w.flush().unwrap();
}

/// Two chains, file source -> window, into a merge of type `merge` with
/// `merge_data`, into a file sink; interrupted by SIGINT while the sources
/// are still reading their files. The windows' `tbuf` is longer than the
/// data, so each holds every window it made until the stop and flushes them
/// all then, one window stage after the other: the merge gets one input's
/// whole stream tens of milliseconds before the other's, longer than its
/// `sync_time` or `tardy` of 10 ms. Every window the two windows flushed
/// reaches the file, in tstart order, none tardy.
fn two_chains_stopped_mid_stream(merge: &str, merge_data: Value) {
    let d = tempfile::tempdir().unwrap();
    let tag = format!("{merge}{}", std::process::id());
    let ep = |n: &str| format!("inproc://{tag}-{n}");
    // 5000 sets of 100 ticks a link, one read per 400 us: about 2 s of
    // reading, interrupted after about 1 s.
    let n = 5000;
    write_link(&d.path().join("l1.dump"), 1, 10, n, 1_000_000);
    write_link(&d.path().join("l2.dump"), 2, 20, n, 1_000_050);
    let mut data = merge_data;
    data["input"] = sock("PULL", "connect", &[&ep("w1"), &ep("w2")]);
    data["output"] = sock("PUSH", "bind", &[&ep("m")]);
    let src = |name: &str, file: &str, output: &str| {
        json!({"name": name, "type": "czmqat", "data": {"ifile": s(&d.path().join(file)),
            "delayus": 400, "output": sock("PUSH", "bind", &[output])}})
    };
    let win = |name: &str, input: &str, output: &str| {
        json!({"name": name, "type": "window", "data": {"tspan": 1000, "tbuf": 10_000_000,
            "detid": -1, "input": sock("PULL", "connect", &[input]),
            "output": sock("PUSH", "bind", &[output])}})
    };
    let cfg = json!({
        "name": "two-chains", "ttl": -1, "snooze": 100,
        "proxies": [
            src("src1", "l1.dump", &ep("s1")),
            src("src2", "l2.dump", &ep("s2")),
            win("win1", &ep("s1"), &ep("w1")),
            win("win2", &ep("s2"), &ep("w2")),
            {"name": "merge", "type": merge, "data": data},
            {"name": "sink", "type": "czmqat", "data": {
                "input": sock("PULL", "connect", &[&ep("m")]),
                "ofile": s(&d.path().join("out.dump"))}}
        ]
    });
    let p = write_json(d.path(), "chains.json", &cfg);
    let child = spawn(&["run", &s(&p)]);
    std::thread::sleep(Duration::from_millis(1000));
    interrupt(&child);
    let o = finish(child, Duration::from_secs(30));
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "stdout: {out}\nstderr: {err}");
    assert!(err.contains("stopping: interrupted"), "{err}");
    // Mid-stream: the sources had not read their whole files.
    let (c1, c2) = (
        counter(&out, "src1", "copied"),
        counter(&out, "src2", "copied"),
    );
    assert!(
        c1 < u64::from(n) && c2 < u64::from(n),
        "not mid-stream:\n{out}"
    );
    let (w1, w2) = (counter(&out, "win1", "out"), counter(&out, "win2", "out"));
    assert!(w1 > 0 && w2 > 0, "{out}");
    // The windows held everything they made until the stop: all of it
    // was flushed then.
    assert_eq!(counter(&out, "win1", "flushed_tps_at_stop"), c1, "{out}");
    assert_eq!(counter(&out, "win2", "flushed_tps_at_stop"), c2, "{out}");
    assert_eq!(counter(&out, "merge", "in"), w1 + w2, "{out}");
    assert_eq!(counter(&out, "merge", "tardy"), 0, "{out}");
    assert_eq!(counter(&out, "merge", "tardy_dropped"), 0, "{out}");
    assert_eq!(counter(&out, "merge", "out"), w1 + w2, "{out}");
    assert_eq!(counter(&out, "sink", "copied"), w1 + w2, "{out}");
    let got = read_dump(&d.path().join("out.dump"));
    assert_eq!(got.len() as u64, w1 + w2);
    assert!(
        got.windows(2).all(|w| w[0].tstart <= w[1].tstart),
        "tstart order"
    );
    for (l, w) in [(1, w1), (2, w2)] {
        assert_eq!(got.iter().filter(|x| x.detid == l).count() as u64, w);
    }
}

#[test]
fn zipper_fed_by_two_window_chains_loses_nothing_on_sigint() {
    two_chains_stopped_mid_stream("zipper", json!({"sync_time": 10, "tardy_policy": "drop"}));
}

#[test]
fn sorted_fed_by_two_window_chains_loses_nothing_on_sigint() {
    two_chains_stopped_mid_stream("sorted", json!({"tardy": 10, "tardy_policy": "drop"}));
}
