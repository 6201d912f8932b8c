//! `ptmp run` pipelines as real processes: replay pacing and stats, the
//! documented window pipeline stopped without loss, and ttl and SIGINT
//! honoured at the end of the tick range and under a flood.

use ptmp_data::{encode_tpset, Frames, TPSet, VERSION_FRAME};
use ptmp_formats::dump::{DumpReader, DumpWriter};
use serde_json::{json, Value};
use std::time::Duration;

mod common;
use common::{finish, read_dump, s, sock, spawn, text, tp, write_json};

/// Replay paces by data time (checked from the `created` stamps it sets at
/// each send) and rewrites counts; stats emits PTMP's two-frame JSON
/// messages whose figures add up to what went in.
#[test]
fn replay_paces_and_stats_reports() {
    let d = tempfile::tempdir().unwrap();
    // 100 sets, 50,000 ticks apart: 1 ms apart at 50 ticks/us; the replay
    // runs at speed 25, so they should go out 2 ms apart (198 ms in all).
    let mut w = DumpWriter::new(std::fs::File::create(d.path().join("in.dump")).unwrap());
    let mut buf = Vec::new();
    for i in 0..100u32 {
        let set = TPSet {
            count: 1000 + i,
            detid: 3,
            created: 1,
            tstart: 50_000_000 + 50_000 * u64::from(i),
            tps: vec![tp(40 + i % 4, 50_000_000 + 50_000 * u64::from(i), 7)],
            ..Default::default()
        };
        buf.clear();
        encode_tpset(&set, &mut buf);
        w.write([&VERSION_FRAME[..], &buf[..]]).unwrap();
    }
    w.flush().unwrap();
    let f = |n: &str| s(&d.path().join(n));
    let cfg = json!({"ttl": 2.0, "snooze": 100, "proxies": [
        {"name": "src", "type": "czmqat", "data": {"ifile": f("in.dump"), "output": sock("PUSH", "bind", &["inproc://rp-a"])}},
        {"name": "rep", "type": "replay", "data": {"speed": 25, "rewrite_count": 1,
            "input": sock("PULL", "connect", &["inproc://rp-a"]), "output": sock("PUSH", "bind", &["inproc://rp-b"])}},
        {"name": "out", "type": "czmqat", "data": {"input": sock("PULL", "connect", &["inproc://rp-b"]), "ofile": f("paced.dump")}},
        {"name": "src2", "type": "czmqat", "data": {"ifile": f("in.dump"), "output": sock("PUSH", "bind", &["inproc://st-a"])}},
        {"name": "st", "type": "stats", "data": {"tick_per_us": 50, "topkey": "apa9", "link_integration_time": 300,
            "input": sock("PULL", "connect", &["inproc://st-a"]), "output": sock("PUSH", "bind", &["inproc://st-b"])}},
        {"name": "stout", "type": "czmqat", "data": {"input": sock("PULL", "connect", &["inproc://st-b"]), "ofile": f("stats.dump")}}
    ]});
    let p = write_json(d.path(), "rs.json", &cfg);
    let o = finish(spawn(&["run", &s(&p)]), Duration::from_secs(30));
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    let paced = read_dump(&d.path().join("paced.dump"));
    assert_eq!(paced.len(), 100);
    for (i, t) in paced.iter().enumerate() {
        assert_eq!(t.count, i as u32, "rewrite_count numbers from 0");
    }
    let span_us = paced[99].created - paced[0].created;
    // Paced: never faster than the data (2 ms apart at speed 25); the upper
    // bound is loose because this machine is shared.
    assert!(
        span_us >= 198_000 - 1_000,
        "replayed 100 sets in {span_us} us"
    );
    assert!(span_us < 1_500_000, "replayed 100 sets in {span_us} us");
    // Pacing is anchored at the first set, so set k is never sent before
    // 2 ms * k after it (a late one does not delay the rest).
    for (k, t) in paced.iter().enumerate() {
        let due = 2_000 * k as i64;
        assert!(t.created - paced[0].created >= due - 1_000, "set {k} early");
    }
    // Stats: frames ["1246973774", JSON]; the link messages' ntpsets add up
    // to 100 and every figure is a number.
    let mut r = DumpReader::new(std::fs::File::open(d.path().join("stats.dump")).unwrap());
    let mut fr = Frames::new();
    let (mut links, mut chans, mut ntpsets, mut ntps) = (0, 0, 0, 0);
    while r.read_into(&mut fr).unwrap() {
        assert_eq!(fr.len(), 2);
        assert_eq!(fr.get(0).unwrap(), b"1246973774");
        let v: Value = serde_json::from_slice(fr.get(1).unwrap()).unwrap();
        assert!(!fr.get(1).unwrap().windows(4).any(|w| w == b"null"), "{v}");
        // PTMP sends the link messages as {topkey: {"links": ...}} and the
        // channel messages under "ptmp": {"ptmp": {topkey: {"chans": ...}}}.
        let top = if v.get("ptmp").is_some() {
            &v["ptmp"]["apa9"]
        } else {
            &v["apa9"]
        };
        if let Some(l) = top.get("links") {
            links += 1;
            if let Some(x) = l.get("0x3") {
                ntpsets += x["counts"]["ntpsets"].as_u64().unwrap();
                assert_eq!(x["counts"]["ndropped"], 0);
            }
        } else {
            chans += 1;
            // PTMP keeps the count and sequence number next to the
            // channels.
            let chs = top["chans"].as_object().unwrap();
            assert_eq!(chs["nchans"].as_u64().unwrap() as usize + 2, chs.len());
            for (k, c) in chs.iter().filter(|(k, _)| k.starts_with("ch")) {
                assert!(
                    ["ch40", "ch41", "ch42", "ch43"].contains(&k.as_str()),
                    "{k}"
                );
                ntps += c["integ"]["ntps"].as_u64().unwrap();
            }
        }
    }
    assert!(links >= 1 && chans >= 1, "links {links} chans {chans}");
    assert_eq!((ntpsets, ntps), (100, 100));
}

/// The window -> zipper pipeline of docs/agents.md, written with the same
/// Jsonnet helpers, fed by two real publishers as the doc's SUB inputs
/// expect; the filter passes everything on to a dump file. Each window holds
/// its whole input (tbuf is 100 windows) until the run stops at `ttl`, so
/// every window reaches the zipper during the stop: once the first window
/// stage had flushed, the zipper's sync_time used to expire before the
/// second one was stopped, and the second's windows were dropped as tardy.
#[test]
fn stopping_the_documented_pipeline_loses_no_window() {
    use ptmp::Sender;
    let d = tempfile::tempdir().unwrap();
    let base = common::free_ports(2);
    let (p1, p2) = (base, base + 1);
    let p = d.path().join("pipeline.jsonnet");
    std::fs::write(
        &p,
        format!(
            r#"local ptmp = import "ptmp.libsonnet";
local ep(n) = "tcp://127.0.0.1:" + n;
ptmp.ptmper([
  ptmp.window("win1", ptmp.sub(ep({p1})), ptmp.push_bind("inproc://w1"), tspan=2500, tbuf=250000),
  ptmp.window("win2", ptmp.sub(ep({p2})), ptmp.push_bind("inproc://w2"), tspan=2500, tbuf=250000),
  ptmp.zipper("zip", ptmp.pull(["inproc://w1", "inproc://w2"]), ptmp.push_bind("inproc://z")),
  ptmp.filter("tcs", ptmp.pull("inproc://z"), ptmp.push_bind("inproc://f"), "pass", {{keep_detid: true}}),
  ptmp.czmqat("sink", input=ptmp.pull("inproc://f"), ofile="{dir}/out.dump"),
], ttl=4, snooze=100)
"#,
            dir = d.path().display()
        ),
    )
    .unwrap();
    let mut links: Vec<Sender> = [p1, p2]
        .iter()
        .map(|port| {
            Sender::from_json(&format!(
                r#"{{"socket":{{"type":"PUB","bind":["tcp://127.0.0.1:{port}"],"subscribers":1,"subscribers_timeout_ms":20000}}}}"#
            ))
            .unwrap()
        })
        .collect();
    let child = spawn(&["run", &s(&p)]);
    // 100 sets per link, one per window of 2500 ticks: 100 windows each,
    // all held by the windows until the stop.
    for i in 0..100u32 {
        for (l, tx) in links.iter_mut().enumerate() {
            let ts = 10_000_000 + 2500 * u64::from(i) + 100 * l as u64;
            let set = TPSet {
                count: i,
                detid: l as u32 + 1,
                created: 1,
                tstart: ts,
                tps: vec![tp(10 * l as u32, ts + 10, 10)],
                ..Default::default()
            };
            tx.send(&set).unwrap();
        }
    }
    let o = finish(child, Duration::from_secs(60));
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "stdout: {out}\nstderr: {err}");
    assert!(err.contains("ttl of 4 s reached"), "{err}");
    for w in [
        "win1 (window) in=100 out=100 ",
        "win2 (window) in=100 out=100 ",
    ] {
        assert!(out.contains(w), "{w} in:\n{out}");
    }
    assert!(
        out.contains("zip (zipper) in=200 out=200 tardy=0 tardy_dropped=0"),
        "{out}"
    );
    let got = read_dump(&d.path().join("out.dump"));
    assert_eq!(got.len(), 200, "{out}");
    let ts: Vec<u64> = got.iter().map(|t| t.tstart).collect();
    assert!(
        ts.windows(2).all(|w| w[0] <= w[1]),
        "in tstart order: {ts:?}"
    );
    for l in 0..2u32 {
        let n = got.iter().filter(|t| t.detid == l + 1).count();
        assert_eq!(n, 100, "link {l}");
    }
}

/// A run whose window gets a TrigPrim near the end of the tick range after
/// an early one: the window used to send one empty window per tspan across
/// the gap, forever, ignoring ttl and SIGINT. Now it sends two windows and
/// the run stops on ttl, or on SIGINT, within a bound.
#[test]
fn window_fed_the_end_of_the_tick_range_stops_on_ttl_and_sigint() {
    let d = tempfile::tempdir().unwrap();
    let dump = d.path().join("far.dump");
    let mut w = DumpWriter::new(std::fs::File::create(&dump).unwrap());
    let mut buf = Vec::new();
    for (i, t) in [1000u64, u64::MAX - 1, u64::MAX].iter().enumerate() {
        let set = TPSet {
            count: i as u32,
            detid: u32::MAX,
            created: i64::MAX,
            tstart: *t,
            tspan: Some(u32::MAX),
            tps: vec![tp(u32::MAX, *t, u32::MAX)],
            ..Default::default()
        };
        buf.clear();
        encode_tpset(&set, &mut buf);
        w.write([&VERSION_FRAME[..], &buf[..]]).unwrap();
    }
    w.flush().unwrap();
    for (tag, ttl) in [("ttl", 2.0), ("int", -1.0)] {
        let ofile = d.path().join(format!("{tag}.dump"));
        let cfg = json!({
            "name": "far", "ttl": ttl, "snooze": 100,
            "proxies": [
                {"name": "src", "type": "czmqat", "data": {"ifile": s(&dump),
                    "output": sock("PUSH", "bind", &[&format!("inproc://{tag}-s")])}},
                {"name": "win", "type": "window", "data": {"tspan": 10, "tbuf": 0,
                    "input": sock("PULL", "connect", &[&format!("inproc://{tag}-s")]),
                    "output": sock("PUSH", "bind", &[&format!("inproc://{tag}-w")])}},
                // At most 1000 copied: a flood of empty windows cannot fill
                // the disk even on the old code.
                {"name": "sink", "type": "czmqat", "data": {"number": 1000,
                    "input": sock("PULL", "connect", &[&format!("inproc://{tag}-w")]),
                    "ofile": s(&ofile)}},
            ]
        });
        let p = write_json(d.path(), &format!("{tag}.json"), &cfg);
        let child = spawn(&["run", &s(&p)]);
        if ttl < 0.0 {
            std::thread::sleep(Duration::from_millis(1500));
            // SAFETY: kill only sends a signal to a process this test started;
            // it reads and writes no memory of ours.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        }
        let o = finish(child, Duration::from_secs(20));
        let (out, err) = (text(&o.stdout), text(&o.stderr));
        assert!(o.status.success(), "stdout: {out}\nstderr: {err}");
        let why = if ttl < 0.0 {
            "stopping: interrupted"
        } else {
            "ttl of 2 s reached"
        };
        assert!(err.contains(why), "{err}");
        // 1000 alone; u64::MAX - 1 and u64::MAX together in the last window.
        assert!(
            out.contains("win (window) in=3 out=2 tps_in=3 tps_out=3"),
            "{out}"
        );
        let got = read_dump(&ofile);
        let w: Vec<(u64, usize)> = got.iter().map(|t| (t.tstart, t.tps.len())).collect();
        assert_eq!(w, vec![(1000, 1), (u64::MAX - u64::MAX % 10, 2)], "{tag}");
        assert!(got.iter().all(|t| t.detid == u32::MAX));
    }
}

/// A chain whose input never stops coming (a proxy, a window and a sink fed
/// flat out by this test) still stops on ttl, and on SIGINT, within a
/// bound: the proxy used to read on forever once stopped.
#[test]
fn ttl_and_sigint_are_honoured_under_a_flood() {
    use ptmp::Sender;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let d = tempfile::tempdir().unwrap();
    for (k, ttl) in [(0u16, 1.0), (1, -1.0)] {
        let port = common::free_port();
        let cfg = json!({
            "name": "flood", "ttl": ttl, "snooze": 100,
            "proxies": [
                {"name": "px", "type": "proxy", "data": {
                    "input": sock("PULL", "bind", &[&format!("tcp://127.0.0.1:{port}")]),
                    "output": sock("PUSH", "bind", &[&format!("inproc://f{k}-p")])}},
                {"name": "win", "type": "window", "data": {"tspan": 1000,
                    "input": sock("PULL", "connect", &[&format!("inproc://f{k}-p")]),
                    "output": sock("PUSH", "bind", &[&format!("inproc://f{k}-w")])}},
                {"name": "snk", "type": "sink", "data": {
                    "input": sock("PULL", "connect", &[&format!("inproc://f{k}-w")])}},
            ]
        });
        let p = write_json(d.path(), &format!("flood{k}.json"), &cfg);
        let child = spawn(&["run", &s(&p)]);
        let quit = Arc::new(AtomicBool::new(false));
        let q = quit.clone();
        let flood = std::thread::spawn(move || {
            let mut tx = Sender::from_json(&format!(
                r#"{{"socket":{{"type":"PUSH","connect":["tcp://127.0.0.1:{port}"]}}}}"#
            ))
            .unwrap();
            let mut i = 0u64;
            while !q.load(Ordering::Relaxed) {
                // Every TrigPrim a new window: the whole chain is busy.
                let set = TPSet {
                    count: i as u32,
                    detid: 1,
                    tstart: i * 1000,
                    tps: vec![tp(1, i * 1000, 1)],
                    ..Default::default()
                };
                let _ = tx.send_within(&set, Duration::from_millis(10));
                i += 1;
            }
        });
        if ttl < 0.0 {
            std::thread::sleep(Duration::from_millis(1500));
            // SAFETY: kill only sends a signal to a process this test started;
            // it reads and writes no memory of ours.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        }
        let o = finish(child, Duration::from_secs(30));
        quit.store(true, Ordering::Relaxed);
        flood.join().unwrap();
        let (out, err) = (text(&o.stdout), text(&o.stderr));
        assert!(o.status.success(), "stdout: {out}\nstderr: {err}");
        let why = if ttl < 0.0 {
            "stopping: interrupted"
        } else {
            "ttl of 1 s reached"
        };
        assert!(err.contains(why), "{err}");
        assert!(out.contains("snk (sink) received="), "{out}");
    }
}
