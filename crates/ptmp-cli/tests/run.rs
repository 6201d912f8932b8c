//! `ptmp run` (ptmper) as a real process: a multi-agent chain from dump
//! files through windows, a zipper, a monitor tap and filters to a dump
//! file; a C plugin engine; validation before start; SIGINT flushing what
//! the agents hold; Jsonnet configurations.

use ptmp_data::{encode_tpset, TPSet, TrigPrim, VERSION_FRAME};
use ptmp_formats::dump::DumpWriter;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

mod common;
use common::{finish, read_dump, s, sock, spawn, text, tp, write_json, PTMP};

/// Removes shm channels a test made, even when it fails.
struct ShmCleanup(Vec<String>);

impl Drop for ShmCleanup {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = ptmp_shm::remove(n);
        }
    }
}

/// A dump of `n` TPSets from link `detid`, one per 1000 ticks starting at
/// `t0`; every 10th set holds a cluster of 6 adjacent channels (adc 60
/// each), the others one lone TP (adc 10). Returns the cluster tstarts.
fn write_source(path: &Path, detid: u32, n: u32, t0: u64) -> Vec<u64> {
    let mut w = DumpWriter::new(std::fs::File::create(path).unwrap());
    let mut clusters = vec![];
    let mut buf = Vec::new();
    for i in 0..n {
        let ts = t0 + 1000 * u64::from(i);
        let tps: Vec<TrigPrim> = if i % 10 == 0 {
            clusters.push(ts);
            (0..6).map(|k| tp(100 * detid + k, ts + 10, 60)).collect()
        } else {
            vec![tp(100 * detid + 50 + i % 7 * 3, ts + 20, 10)]
        };
        let s = TPSet {
            count: i,
            detid,
            created: 1,
            tstart: ts,
            tps,
            ..Default::default()
        };
        buf.clear();
        encode_tpset(&s, &mut buf);
        w.write([&VERSION_FRAME[..], &buf[..]]).unwrap();
    }
    w.flush().unwrap();
    clusters
}

/// The chain: two file sources -> one window each -> zipper -> monitor tap
/// -> adjacency filter -> czmqat into a dump file, plus stats on a tap of
/// nothing (to prove an idle agent stops too).
fn chain_config(d: &Path, tag: &str, ttl: f64, sync_time: u64) -> Value {
    // The windows feed the zipper over shared memory in the "shm" variant:
    // one PULL reading two shm channels.
    let ep = |n: &str| {
        if tag.starts_with("shm") && n.starts_with('w') {
            format!("shm://{tag}-{n}")
        } else {
            format!("inproc://{tag}-{n}")
        }
    };
    json!({
        "name": "chain", "ttl": ttl, "snooze": 100,
        "proxies": [
            {"name": "src1", "type": "czmqat", "data": {
                "ifile": s(&d.join("link1.dump")), "output": sock("PUSH", "bind", &[&ep("s1")])}},
            {"name": "src2", "type": "czmqat", "data": {
                "ifile": s(&d.join("link2.dump")), "output": sock("PUSH", "bind", &[&ep("s2")])}},
            {"name": "win1", "type": "window", "data": {"tspan": 1000, "tbuf": 3000,
                "input": sock("PULL", "connect", &[&ep("s1")]), "output": sock("PUSH", "bind", &[&ep("w1")])}},
            {"name": "win2", "type": "window", "data": {"tspan": 1000, "tbuf": 3000, "sync_time": 10,
                "input": sock("PULL", "connect", &[&ep("s2")]), "output": sock("PUSH", "bind", &[&ep("w2")])}},
            {"name": "zip", "type": "zipper", "data": {"sync_time": sync_time, "tardy_policy": "drop",
                "input": sock("PULL", "connect", &[&ep("w1"), &ep("w2")]),
                "output": sock("PUSH", "bind", &[&ep("z")])}},
            {"name": "mon", "type": "monitor", "data": {"filename": s(&d.join("rows.txt")),
                "taps": [{"id": 7, "input": sock("PULL", "connect", &[&ep("z")]),
                          "output": sock("PUSH", "bind", &[&ep("z2")])}]}},
            {"name": "tcs", "type": "filter", "data": {"method": "pdune-adjacency-tc", "adjacency": 5,
                "input": sock("PULL", "connect", &[&ep("z2")]), "output": sock("PUSH", "bind", &[&ep("f")])}},
            {"name": "sink", "type": "czmqat", "data": {
                "input": sock("PULL", "connect", &[&ep("f")]), "ofile": s(&d.join("tcs.dump"))}},
            {"name": "idle-stats", "type": "stats", "data": {"tick_per_us": 50,
                "input": sock("PULL", "connect", &[&ep("nothing")]), "output": sock("PUSH", "bind", &[&ep("st")])}}
        ]
    })
}

fn check_chain_output(d: &Path, expect: &[(u32, u64)]) {
    let tcs = read_dump(&d.join("tcs.dump"));
    let mut got: Vec<(u32, u64)> = tcs.iter().map(|t| (t.chanbeg(), t.tstart)).collect();
    // The zipper orders by the windows' tstart (multiples of tspan 1000);
    // the two links' windows share tstarts, so ties may come either way.
    let windows: Vec<u64> = got.iter().map(|g| g.1 / 1000).collect();
    assert!(
        windows.windows(2).all(|w| w[0] <= w[1]),
        "zipper order: {got:?}"
    );
    got.sort_by_key(|g| (g.1, g.0));
    let mut expect = expect.to_vec();
    expect.sort_by_key(|g| (g.1, g.0));
    assert_eq!(got, expect, "trigger candidates (chanbeg, tstart)");
    for (i, t) in tcs.iter().enumerate() {
        assert_eq!(t.count, i as u32, "filter renumbers count");
        assert_eq!(t.tps.len(), 6);
        assert_eq!(t.totaladc(), 360);
        assert_eq!(t.chanend() - t.chanbeg(), 5);
    }
}

fn expected(c1: &[u64], c2: &[u64]) -> Vec<(u32, u64)> {
    let mut e: Vec<(u32, u64)> = c1
        .iter()
        .map(|t| (100, t + 10))
        .chain(c2.iter().map(|t| (200, t + 10)))
        .collect();
    e.sort_by_key(|x| x.1);
    e
}

#[test]
fn multi_agent_chain_runs_to_ttl_and_loses_nothing() {
    let d = tempfile::tempdir().unwrap();
    let c1 = write_source(&d.path().join("link1.dump"), 1, 200, 1_000_000);
    let c2 = write_source(&d.path().join("link2.dump"), 2, 200, 1_000_500);
    // The zipper waits for both links as long as the run lasts: a link's
    // thread may be held off the CPU for any time on a busy host, and a
    // short sync_time would then drop its sets as tardy (as configured).
    // What is still held at the ttl is flushed in order at the stop.
    let cfg = write_json(
        d.path(),
        "chain.json",
        &chain_config(d.path(), "ttl", 2.0, 60_000),
    );
    let o = finish(spawn(&["run", &s(&cfg)]), Duration::from_secs(60));
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "stdout: {out}\nstderr: {err}");
    assert!(err.contains("ttl of 2 s reached"), "{err}");
    check_chain_output(d.path(), &expected(&c1, &c2));
    // Each window saw 200 sets, 218 TPs (20 clusters of 6 + 180 lone),
    // none tardy; everything accepted went out.
    for w in [
        "win1 (window) in=200 out=",
        "tps_in=300 tps_out=300 tardy_tps=0",
        " tardy=0 ",
    ] {
        assert!(out.contains(w), "{w} in:\n{out}");
    }
    assert!(out.contains("sink (czmqat) copied=40"), "{out}");
    // The monitor wrote one row per set through the tap: PTMP's 10 columns.
    let rows = std::fs::read_to_string(d.path().join("rows.txt")).unwrap();
    // PTMP's header line first, then the rows.
    let (header, rows) = rows.split_once('\n').unwrap();
    assert_eq!(
        header,
        "tapid now nrecv nrecvtot count detid created tstart tspan ntps"
    );
    let zip_out: u64 = out
        .lines()
        .find(|l| l.starts_with("zip (zipper)"))
        .and_then(|l| l.split(' ').find_map(|w| w.strip_prefix("out=")))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(rows.lines().count() as u64, zip_out);
    let mut last_tstart = 0;
    for (i, r) in rows.lines().enumerate() {
        let f: Vec<&str> = r.split(' ').collect();
        assert_eq!(f.len(), 10, "{r}");
        assert_eq!(f[0], "7");
        assert_eq!(f[2], (i + 1).to_string());
        let ts: u64 = f[7].parse().unwrap();
        assert!(ts >= last_tstart, "zipper output in tstart order: {r}");
        last_tstart = ts;
    }
}

/// PTMP's order of agents does not decide what is lost at the start: a
/// merge listed before the four PUB sources it subscribes to (which
/// replay their files at once) gets every set, as it does listed after
/// them. Each PUB's first send waits for the subscribers the run gives it.
#[test]
fn a_merge_listed_before_its_pub_sources_loses_nothing_at_start() {
    for merge_first in [true, false] {
        let d = tempfile::tempdir().unwrap();
        let ep = |l: u32| format!("ipc://{}", d.path().join(format!("s{l}")).display());
        let sources = (1..=4).map(|l| {
            let f = d.path().join(format!("link{l}.dump"));
            write_source(&f, l, 200, 1_000_000 + 100 * u64::from(l));
            json!({"name": format!("src{l}"), "type": "czmqat", "data": {
                "ifile": s(&f), "output": sock("PUB", "bind", &[&ep(l)])}})
        });
        let eps: Vec<String> = (1..=4).map(ep).collect();
        let eps: Vec<&str> = eps.iter().map(String::as_str).collect();
        let zip = json!({"name": "zip", "type": "zipper", "data": {
            "sync_time": 60_000, "tardy_policy": "drop",
            "input": sock("SUB", "connect", &eps),
            "output": sock("PUSH", "bind", &["inproc://zipped"])}});
        let sink = json!({"name": "sink", "type": "czmqat", "data": {
            "input": sock("PULL", "connect", &["inproc://zipped"]),
            "ofile": s(&d.path().join("out.dump"))}});
        let mut proxies: Vec<Value> = sources.collect();
        if merge_first {
            proxies.insert(0, zip);
        } else {
            proxies.push(zip);
        }
        proxies.push(sink);
        let cfg = write_json(
            d.path(),
            "c.json",
            &json!({"name": "m", "ttl": 2.0, "snooze": 100, "proxies": proxies}),
        );
        let o = finish(spawn(&["run", &s(&cfg)]), Duration::from_secs(60));
        let (out, err) = (text(&o.stdout), text(&o.stderr));
        assert!(o.status.success(), "stdout: {out}\nstderr: {err}");
        let log = format!("{out}{err}");
        let got = read_dump(&d.path().join("out.dump"));
        assert_eq!(got.len(), 800, "merge listed first: {merge_first}\n{log}");
        assert!(
            log.contains("4 PUB output(s) wait for their subscribers"),
            "{log}"
        );
        for l in 1..=4 {
            let mine: Vec<u32> = got
                .iter()
                .filter(|t| t.detid == l)
                .map(|t| t.count)
                .collect();
            assert_eq!(mine, (0..200).collect::<Vec<u32>>(), "link {l}");
        }
    }
}

#[test]
fn sigint_flushes_what_agents_hold() {
    let d = tempfile::tempdir().unwrap();
    let c1 = write_source(&d.path().join("link1.dump"), 1, 100, 5_000_000);
    let c2 = write_source(&d.path().join("link2.dump"), 2, 100, 5_000_300);
    let tag = format!("shm{}", std::process::id());
    // ttl forever; a one-minute sync_time so the zipper would hold its
    // queue for long, and windows hold their last tbuf of data.
    let cfg = write_json(
        d.path(),
        "chain.json",
        &chain_config(d.path(), &tag, -1.0, 60_000),
    );
    let child = spawn(&["run", &s(&cfg)]);
    let pid = child.id() as libc::pid_t;
    let _cleanup = ShmCleanup(vec![format!("{tag}-w1"), format!("{tag}-w2")]);
    // Wait until the sources have read their files and the zipper has let
    // most windows through (the monitor writes a row per set it taps: 194
    // of the 200 windows pass before the stop, the windows holding the
    // rest); then interrupt.
    let rows = d.path().join("rows.txt");
    common::wait_for(Duration::from_secs(60), "rows through the tap", || {
        let n = std::fs::read_to_string(&rows).ok()?.lines().count();
        (n > 150).then_some(())
    });
    // Stray signals that end a process by default are ignored: the run
    // goes on and still stops cleanly below.
    for sig in [libc::SIGUSR2, libc::SIGALRM] {
        // SAFETY: as below.
        unsafe { libc::kill(pid, sig) };
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill only sends a signal to a process this test started;
    // it reads and writes no memory of ours.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let o = finish(child, Duration::from_secs(30));
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "stdout: {out}\nstderr: {err}");
    assert!(err.contains("stopping: interrupted"), "{err}");
    check_chain_output(d.path(), &expected(&c1, &c2));
    // The windows still held their last tbuf of data when interrupted: it
    // was flushed, not dropped, and reached the file above.
    let held: u64 = out
        .lines()
        .find(|l| l.starts_with("win1 (window)"))
        .and_then(|l| {
            l.split(' ')
                .find_map(|w| w.strip_prefix("flushed_tps_at_stop="))
        })
        .unwrap()
        .parse()
        .unwrap();
    assert!(held > 0, "{out}");
}

#[test]
fn invalid_config_names_agent_key_value_and_starts_nothing() {
    let d = tempfile::tempdir().unwrap();
    let out_file = d.path().join("never.dump");
    let good_sink = json!({"name": "sink", "type": "czmqat", "data": {
        "input": sock("PULL", "bind", &["inproc://x"]), "ofile": s(&out_file)}});
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"name": "w", "type": "window", "data": {"tspan": "1000",
            "input": sock("PULL", "connect", &["inproc://a"]), "output": sock("PUSH", "bind", &["inproc://b"])}}),
            "agent w: tspan = \"1000\": must be a non-negative integer",
        ),
        (
            json!({"name": "w", "type": "window", "data": {"tspan": 1_u64 << 63, "tbuf": 1_u64 << 63,
            "input": sock("PULL", "connect", &["inproc://a"]), "output": sock("PUSH", "bind", &["inproc://b"])}}),
            "agent w: tbuf = 9223372036854775808: tspan (9223372036854775808) + max(tspan, tbuf) overflows",
        ),
        (
            json!({"name": "z", "type": "zipper", "data": {"tardy_policy": "keep",
            "input": sock("PULL", "connect", &["inproc://a"]), "output": sock("PUSH", "bind", &["inproc://b"])}}),
            "agent z: tardy_policy = \"keep\": must be one of drop, send",
        ),
        (
            json!({"name": "q", "type": "zipperr", "data": {}}),
            "agent q: type = \"zipperr\": unknown agent type",
        ),
        (
            json!({"name": "f", "type": "filter", "data": {"engine": "nope",
            "input": sock("PULL", "connect", &["inproc://a"]), "output": sock("PUSH", "bind", &["inproc://b"])}}),
            "agent f: engine = \"nope\": no such engine",
        ),
        (
            json!({"name": "st", "type": "stats", "data": {"tick_per_us": 0,
            "input": sock("PULL", "connect", &["inproc://a"]), "output": sock("PUSH", "bind", &["inproc://b"])}}),
            "agent st: tick_per_us = 0: must be positive",
        ),
        (
            json!({"name": "st", "type": "stats", "data": {"tick_per_us": 1e-300,
            "input": sock("PULL", "connect", &["inproc://a"]), "output": sock("PUSH", "bind", &["inproc://b"])}}),
            "agent st: tick_per_us = 0.000000",
        ),
        (
            json!({"name": "r", "type": "replay", "data": {"speed": 5000, "rewrite_tstart": 1,
            "input": sock("PULL", "connect", &["inproc://a"]), "output": sock("PUSH", "bind", &["inproc://b"])}}),
            "agent r: speed = 5000: with rewrite_tstart, wall-clock microseconds * speed must fit",
        ),
        (
            json!({"name": "r", "type": "replay", "data": {"speed": 1e-300,
            "input": sock("PULL", "connect", &["inproc://a"]), "output": sock("PUSH", "bind", &["inproc://b"])}}),
            "agent r: speed = 0.000000",
        ),
        (
            json!({"name": "c", "type": "czmqat", "data": {"delayus": i64::MAX,
            "input": sock("PULL", "connect", &["inproc://a"]), "output": sock("PUSH", "bind", &["inproc://b"])}}),
            "agent c: delayus = 9223372036854775807: must be in",
        ),
        (
            json!({"name": "r", "type": "replay", "data": {
            "input": sock("PULL", "connect", &["tcp://127.0.0.1:0"]), "output": sock("PUSH", "bind", &["inproc://b"])}}),
            "agent r: input.socket.connect",
        ),
        (
            json!({"name": "m", "type": "window", "data": {
            "input": sock("PULL", "connect", &["inproc://a"]), "output": sock("PUSH", "bind", &["inproc://b"])}}),
            "agent m: tspan = (missing): required key",
        ),
        // A misspelt key is refused naming the key it misspells.
        (
            json!({"name": "w", "type": "window", "data": {"tspan": 1000, "tbuff": 5000,
            "input": sock("PULL", "connect", &["inproc://a"]), "output": sock("PUSH", "bind", &["inproc://b"])}}),
            "agent w: tbuff = 5000: unknown key; did you mean \"tbuf\"?",
        ),
        (
            json!({"name": "z", "type": "zipper", "data": {"sync_tme": 10,
            "input": sock("PULL", "connect", &["inproc://a"]), "output": sock("PUSH", "bind", &["inproc://b"])}}),
            "agent z: sync_tme = 10: unknown key; did you mean \"sync_time\"?",
        ),
    ];
    for (i, (bad, want)) in cases.into_iter().enumerate() {
        let cfg = write_json(
            d.path(),
            &format!("bad{i}.json"),
            &json!({"proxies": [good_sink.clone(), bad]}),
        );
        for check in [true, false] {
            let args: &[&str] = if check {
                &["run", "--check", &s(&cfg)]
            } else {
                &["run", &s(&cfg)]
            };
            let o = finish(spawn(args), Duration::from_secs(30));
            let err = text(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{err}");
            assert!(err.contains(want), "want {want:?} in: {err}");
        }
        assert!(
            !out_file.exists(),
            "nothing may start when the config is invalid"
        );
    }
    // Not JSON at all: the file is named.
    let p = d.path().join("junk.json");
    std::fs::write(&p, "{ proxies: [ }").unwrap();
    let o = finish(spawn(&["run", &s(&p)]), Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("junk.json"), "{}", text(&o.stderr));
}

#[test]
fn c_plugin_engine_runs_in_a_filter() {
    let d = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ptmp-agents");
    let so = d.path().join("libptmp-threshold.so");
    let st = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-I"])
        .arg(root.join("include"))
        .arg("-o")
        .arg(&so)
        .arg(root.join("examples/plugin/threshold.c"))
        .status()
        .expect("a C compiler (cc) is needed to build the example plugin");
    assert!(st.success());
    write_source(&d.path().join("link1.dump"), 1, 50, 0);
    let cfg = json!({
        "ttl": 1.5, "snooze": 100, "plugins": [s(&so)],
        "proxies": [
            {"name": "src", "type": "czmqat", "data": {
                "ifile": s(&d.path().join("link1.dump")), "output": sock("PUSH", "bind", &["inproc://p-s"])}},
            {"name": "thr", "type": "filter", "data": {"engine": "adc_threshold", "threshold": 50, "detid": 99,
                "input": sock("PULL", "connect", &["inproc://p-s"]), "output": sock("PUSH", "bind", &["inproc://p-f"])}},
            {"name": "sink", "type": "czmqat", "data": {
                "input": sock("PULL", "connect", &["inproc://p-f"]), "ofile": s(&d.path().join("out.dump"))}}
        ]
    });
    let p = write_json(d.path(), "plugin.json", &cfg);
    let o = finish(spawn(&["run", &s(&p)]), Duration::from_secs(30));
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    let got = read_dump(&d.path().join("out.dump"));
    // Only the 5 cluster sets have TPs with adc >= 50.
    assert_eq!(got.len(), 5, "{}", text(&o.stdout));
    for (i, t) in got.iter().enumerate() {
        assert_eq!(
            (t.count, t.detid, t.tps.len(), t.totaladc()),
            (i as u32, 99, 6, 360)
        );
        assert_eq!(t.tstart, 10_000 * i as u64 + 10);
        assert!(t.created > 1_600_000_000_000_000, "created set by ptmp");
    }
    // The engine refusing its config is an error naming the plugin, before
    // anything starts; so is a library that is not a plugin.
    let mut bad = cfg.clone();
    bad["proxies"][1]["data"]["threshold"] = json!("lots");
    let p = write_json(d.path(), "bad.json", &bad);
    let o = finish(spawn(&["run", &s(&p)]), Duration::from_secs(30));
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("engine refused the configuration of agent thr: threshold must be"),
        "{err}"
    );
    let mut bad = cfg.clone();
    bad["plugins"] = json!(["no-such-plugin"]);
    let p = write_json(d.path(), "bad2.json", &bad);
    let o = finish(spawn(&["run", &s(&p)]), Duration::from_secs(30));
    let err = text(&o.stderr);
    assert!(
        err.contains("plugin no-such-plugin: cannot load it (tried libno-such-plugin.so"),
        "{err}"
    );
    // PTMP_PLUGINS works as the plugins list does.
    let mut env_cfg = cfg.clone();
    env_cfg["plugins"] = json!([]);
    let p = write_json(d.path(), "env.json", &env_cfg);
    let o = Command::new(PTMP)
        .args(["run", "--check", &s(&p)])
        .env("PTMP_PLUGINS", format!(" {} ,", s(&so)))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("valid: 3 proxies"));
}

#[test]
fn jsonnet_config_with_the_ptmp_library() {
    let d = tempfile::tempdir().unwrap();
    let c1 = write_source(&d.path().join("link1.dump"), 1, 60, 0);
    let p = d.path().join("chain.jsonnet");
    std::fs::write(
        &p,
        format!(
            r#"local ptmp = import "ptmp.libsonnet";
local ep(n) = "inproc://j-" + n;
ptmp.ptmper([
  ptmp.czmqat("src", ifile="{dir}/link1.dump", output=ptmp.push_bind(ep("s"))),
  ptmp.window("win", ptmp.pull(ep("s")), ptmp.push_bind(ep("w")), tspan=std.parseInt(std.extVar("tspan"))),
  ptmp.composer("tail", [
    ptmp.filter("tcs", ptmp.pull(ep("w")), ptmp.push_bind(ep("f")), "adjacency"),
    ptmp.czmqat("sink", input=ptmp.pull(ep("f")), ofile="{dir}/tcs.dump"),
  ]),
], ttl=1.5, snooze=100)
"#,
            dir = d.path().display()
        ),
    )
    .unwrap();
    let o = Command::new(PTMP)
        .args(["run", "--check", "-V", "tspan=1000", &s(&p)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("valid: 3 proxies") && out.contains("tail (composer)"),
        "{out}"
    );
    let o = finish(
        spawn(&["run", "-V", "tspan=1000", &s(&p)]),
        Duration::from_secs(30),
    );
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    let tcs = read_dump(&d.path().join("tcs.dump"));
    let want: Vec<u64> = c1.iter().map(|t| t + 10).collect();
    assert_eq!(tcs.iter().map(|t| t.tstart).collect::<Vec<_>>(), want);
    // A missing extVar is a Jsonnet error naming the file.
    let o = Command::new(PTMP)
        .args(["run", "--check", &s(&p)])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("chain.jsonnet"),
        "{}",
        text(&o.stderr)
    );
}

/// A configuration shaped exactly as PTMP's generated protoDUNE trigger
/// candidate config (docs/examples/pdsp-tc-apa5.json in PTMP): windows with
/// SUB inputs carrying keys they do not use, a zipper, the
/// `pdune-adjacency-tc` filter named by PTMP's `method` key from the
/// `ptmp-tcs` plugin, a PUB output; here on loopback with two links.
#[test]
fn ptmp_generated_pdsp_config_runs_unmodified() {
    use ptmp::{Receiver, Sender};
    let d = tempfile::tempdir().unwrap();
    let base = common::free_ports(3);
    let (p1, p2, pout) = (base, base + 1, base + 2);
    let window = |link: u16, port: u16| {
        json!({
            "data": {
                "detid": -1,
                "input": {"socket": {"connect": [format!("tcp://127.0.0.1:{port}")], "hwm": 10000, "type": "SUB"}},
                "name": format!("tp-window-link{link:02}"),
                "output": {"socket": {"bind": [format!("inproc://tc-window-zipper-link{link:02}")], "hwm": 1000, "type": "PUSH"}},
                "sync_time": 10, "tardy_policy": "drop", "tbuf": 3000, "toffset": 0, "tspan": 1000
            },
            "name": format!("tc-window-link{link:02}"),
            "type": "window"
        })
    };
    let cfg = json!({
        "name": "apa-tcs", "ttl": 4, "plugins": ["ptmp-tcs"],
        "proxies": [
            window(0, p1), window(1, p2),
            {"data": {"detid": -1,
                "input": {"socket": {"connect": ["inproc://tc-window-zipper-link00", "inproc://tc-window-zipper-link01"], "hwm": 1000, "type": "PULL"}},
                "name": "zipper", "output": {"socket": {"bind": ["inproc://tc-zipper-tcfinder"], "hwm": 1000, "type": "PUSH"}},
                "sync_time": 10, "tardy_policy": "drop", "tbuf": 3000, "toffset": 0, "tspan": 1000},
             "name": "tc-zipper", "type": "zipper"},
            {"data": {"input": {"socket": {"connect": ["inproc://tc-zipper-tcfinder"], "hwm": 1000, "type": "PULL"}},
                "method": "pdune-adjacency-tc", "name": "adj-tcs",
                "output": {"socket": {"bind": [format!("tcp://127.0.0.1:{pout}")], "hwm": 10000, "type": "PUB"}}},
             "name": "tc-finder", "type": "filter"}
        ]
    });
    let p = write_json(d.path(), "pdsp.json", &cfg);
    let o = Command::new(PTMP)
        .args(["run", "--check", &s(&p)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let listing = text(&o.stdout);
    assert!(listing.contains("valid: 4 proxies"), "{listing}");
    assert!(
        listing.contains("tc-window-link00.sync_time"),
        "unused keys listed: {listing}"
    );

    // The links publish; the candidates come out of the filter's PUB.
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
    let mut tcs = Receiver::from_json(&format!(
        r#"{{"socket":{{"type":"SUB","connect":["tcp://127.0.0.1:{pout}"]}}}}"#
    ))
    .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    for i in 0..100u32 {
        for (l, tx) in links.iter_mut().enumerate() {
            let ts = 1_000_000 + 1000 * u64::from(i) + 100 * l as u64;
            let tps: Vec<TrigPrim> = if i % 10 == 0 {
                (0..6)
                    .map(|k| tp(500 * (l as u32 + 1) + k, ts + 10, 60))
                    .collect()
            } else {
                vec![tp(7, ts + 20, 10)]
            };
            let set = TPSet {
                count: i,
                detid: l as u32,
                created: 1,
                tstart: ts,
                tps,
                ..Default::default()
            };
            tx.send(&set).unwrap();
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut got = vec![];
    let t0 = Instant::now();
    while got.len() < 20 && t0.elapsed() < Duration::from_secs(10) {
        if let Some(t) = tcs.recv(Some(Duration::from_millis(200))).unwrap() {
            got.push((t.chanbeg(), t.tps.len()));
        }
    }
    let o = finish(child, Duration::from_secs(30));
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    // The last windows are flushed at stop, after which the PUB may or may
    // not still reach us; all the candidates before them must have arrived.
    assert!(
        got.len() >= 16,
        "got {} candidates: {got:?}\n{}",
        got.len(),
        text(&o.stdout)
    );
    assert!(
        got.iter().all(|g| g.1 == 6 && (g.0 == 500 || g.0 == 1000)),
        "{got:?}"
    );
}
