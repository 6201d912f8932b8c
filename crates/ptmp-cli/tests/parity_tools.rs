//! `ptmp run` as a real process on configurations PTMP users bring along:
//! the stats messages and the monitor's rows file in PTMP's exact shape,
//! czmqat as a counting sink or a counting file reader, stats_graphite
//! writing Graphite's plaintext protocol to a TCP listener standing in for
//! carbon, and Jsonnet code given with `--ext-code` / `--tla-code`.

use ptmp_data::{encode_tpset, Frames, TPSet, TrigPrim, VERSION_FRAME};
use ptmp_formats::dump::{DumpReader, DumpWriter};
use serde_json::{json, Value};
use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

mod common;
use common::{finish, s, sock, spawn, text, write_json};

/// Run `ptmp ARGS`, killing it after `limit`.
fn ptmp(args: &[&str], limit: Duration) -> Output {
    finish(spawn(args), limit)
}

fn ok(o: &Output, what: &str) -> String {
    let all = text(&o.stdout) + &text(&o.stderr);
    assert!(o.status.success(), "{what} failed ({:?})\n{all}", o.status);
    all
}

/// A dump of `n` TPSets alternating between links 1 and 2, each with two
/// TPs on channels 10+detid and 20+detid, data times near now.
fn write_tpsets(path: &Path, n: u32) {
    let mut w = DumpWriter::new(std::fs::File::create(path).unwrap());
    let now = ptmp_data::now_us();
    let mut buf = Vec::new();
    for i in 0..n {
        let detid = 1 + i % 2;
        let ts = now as u64 * 50 + 1000 * u64::from(i);
        let tp = |ch: u32| TrigPrim {
            channel: ch,
            tstart: ts,
            tspan: Some(100),
            adcsum: Some(30),
            adcpeak: Some(10),
            flags: Some(0),
        };
        let set = TPSet {
            count: i / 2,
            detid,
            created: now,
            tstart: ts,
            tps: vec![tp(10 + detid), tp(20 + detid)],
            ..Default::default()
        };
        buf.clear();
        encode_tpset(&set, &mut buf);
        w.write([&VERSION_FRAME[..], &buf[..]]).unwrap();
    }
    w.flush().unwrap();
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(|s| s.as_str())
        .collect();
    k.sort_unstable();
    k
}

/// Check one link entry of a stats message, key by key as TPStats writes.
fn check_link(l: &Value, detid: u64) {
    assert_eq!(
        keys(l),
        ["adc", "counts", "detid", "latency", "now", "rates", "time"],
        "{l}"
    );
    assert_eq!(l["detid"], detid);
    assert!(l["now"].is_i64(), "{l}");
    assert_eq!(keys(&l["time"]), ["created", "data", "received"]);
    assert_eq!(
        keys(&l["counts"]),
        ["nbytes", "nchannels", "ndropped", "ntps", "ntpsets"]
    );
    assert_eq!(keys(&l["rates"]), ["byteps", "dropped", "tps", "tpsets"]);
    assert_eq!(keys(&l["adc"]), ["mean", "rate", "tps", "tpsets"]);
    assert_eq!(keys(&l["latency"]), ["data", "trans"]);
    for k in ["data", "trans"] {
        assert_eq!(keys(&l["latency"][k]), ["max", "mean", "min", "rms"]);
    }
    assert_eq!(l["counts"]["nchannels"], 2);
    assert_eq!(l["counts"]["ndropped"], 0);
    assert_eq!(l["adc"]["mean"], 30.0);
}

/// A file -> monitor tap -> stats -> dump file pipeline: every stats
/// message is PTMP's two frames with PTMP's JSON, and the rows file has
/// PTMP's header and one 10-column row per set.
#[test]
fn stats_and_monitor_outputs_have_ptmps_shape() {
    let d = tempfile::tempdir().unwrap();
    write_tpsets(&d.path().join("in.dump"), 40);
    let cfg = json!({
        "ttl": 2, "snooze": 100,
        "proxies": [
            {"name": "src", "type": "czmqat", "data": {"ifile": s(&d.path().join("in.dump")),
                "output": sock("PUSH", "bind", &["inproc://pt-src"])}},
            {"name": "mon", "type": "monitor", "data": {"filename": s(&d.path().join("rows.txt")),
                "taps": [{"id": 3, "input": sock("PULL", "connect", &["inproc://pt-src"]),
                          "output": sock("PUSH", "bind", &["inproc://pt-tap"])}]}},
            {"name": "st", "type": "stats", "data": {"tick_per_us": 50,
                "link_integration_time": 300, "chan_integration_time": 500,
                "input": sock("PULL", "connect", &["inproc://pt-tap"]),
                "output": sock("PUSH", "bind", &["inproc://pt-st"])}},
            {"name": "keep", "type": "czmqat", "data": {
                "input": sock("PULL", "connect", &["inproc://pt-st"]),
                "ofile": s(&d.path().join("stats.dump"))}}
        ]
    });
    let f = write_json(d.path(), "c.json", &cfg);
    let out = ok(&ptmp(&["run", &s(&f)], Duration::from_secs(30)), "run");
    assert!(out.contains("mon (monitor) tap3=40 total=40"), "{out}");

    // The rows file, read by column name as PTMP's plotting does.
    let rows = std::fs::read_to_string(d.path().join("rows.txt")).unwrap();
    let mut lines = rows.lines();
    let header: Vec<&str> = lines.next().unwrap().split(' ').collect();
    assert_eq!(
        header,
        [
            "tapid", "now", "nrecv", "nrecvtot", "count", "detid", "created", "tstart", "tspan",
            "ntps"
        ]
    );
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let mut n = 0;
    for (i, l) in lines.enumerate() {
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(f.len(), header.len(), "{l}");
        assert_eq!(f[col("tapid")], "3");
        assert_eq!(f[col("nrecv")], (i + 1).to_string());
        assert_eq!(f[col("detid")], (1 + i % 2).to_string());
        assert_eq!(f[col("ntps")], "2");
        n += 1;
    }
    assert_eq!(n, 40);

    // The stats messages: frame 1 the JSON type tag as text, frame 2 JSON.
    let mut r = DumpReader::new(std::fs::File::open(d.path().join("stats.dump")).unwrap());
    let mut fr = Frames::new();
    let (mut ntpsets, mut nchan_msgs, mut link_seq, mut chan_seq) = (0u64, 0, 0u64, 0u64);
    while r.read_into(&mut fr).unwrap() {
        assert_eq!(fr.len(), 2);
        assert_eq!(fr.get(0).unwrap(), b"1246973774");
        let v: Value = serde_json::from_slice(fr.get(1).unwrap()).unwrap();
        // TPStats wraps its channel messages in "ptmp", not its link ones.
        let v = if keys(&v) == ["ptmp"] {
            v["ptmp"].clone()
        } else {
            v
        };
        assert_eq!(keys(&v), ["tpsets"], "default topkey: {v}");
        let top = &v["tpsets"];
        let k = keys(top);
        assert_eq!(k.len(), 1, "one of links or chans: {v}");
        if k[0] == "links" {
            let links = &top["links"];
            assert_eq!(links["seqno"], link_seq);
            link_seq += 1;
            let nl = links["nlinks"].as_u64().unwrap();
            assert_eq!(keys(links).len() as u64, nl + 2, "{links}");
            for detid in 1..=2u64 {
                if let Some(l) = links.get(format!("0x{detid:x}")) {
                    check_link(l, detid);
                    ntpsets += l["counts"]["ntpsets"].as_u64().unwrap();
                }
            }
        } else {
            assert_eq!(k[0], "chans");
            let chans = &top["chans"];
            assert_eq!(chans["seqno"], chan_seq);
            chan_seq += 1;
            let nc = chans["nchans"].as_u64().unwrap();
            assert_eq!(keys(chans).len() as u64, nc + 2, "{chans}");
            for (name, c) in chans.as_object().unwrap() {
                if !name.starts_with("ch") {
                    continue;
                }
                nchan_msgs += 1;
                assert_eq!(keys(c), ["avg", "chan", "inst", "integ"]);
                assert_eq!(format!("ch{}", c["chan"]), *name);
                assert_eq!(keys(&c["integ"]), ["adcpeak", "adcsum", "ntps", "span_us"]);
                assert_eq!(keys(&c["avg"]), ["adcpeak", "adcsum", "ntps", "occupancy"]);
                assert_eq!(keys(&c["inst"]), ["adcpeak", "adcsum", "ntps"]);
            }
        }
    }
    assert_eq!(ntpsets, 40, "every set counted once in the link messages");
    assert!(nchan_msgs >= 4, "the four channels appear");
    assert!(link_seq >= 1 && chan_seq >= 1);
}

/// czmqat with only an input (a counting sink) and with only an ifile (a
/// counting reader) run, as in PTMP; the sink's `metrics` go out as PTMP's
/// JSON metric messages, kept in a dump file by a third czmqat.
#[test]
fn czmqat_sink_only_and_reader_only_run() {
    let d = tempfile::tempdir().unwrap();
    write_tpsets(&d.path().join("in.dump"), 25);
    let inf = s(&d.path().join("in.dump"));
    let cfg = json!({
        "ttl": 1.5, "snooze": 100,
        "proxies": [
            {"name": "reader", "type": "czmqat", "data": {"ifile": inf}},
            {"name": "src", "type": "czmqat", "data": {"ifile": inf,
                "output": sock("PUSH", "bind", &["inproc://pt-sink"])}},
            {"name": "sink", "type": "czmqat", "data": {
                "input": sock("PULL", "connect", &["inproc://pt-sink"]),
                "metrics": {"socket": {"type": "PUSH", "bind": ["inproc://pt-metrics"]},
                            "period": 200, "prefix": "apa5.sink"}}},
            {"name": "keep", "type": "czmqat", "data": {
                "input": sock("PULL", "connect", &["inproc://pt-metrics"]),
                "ofile": s(&d.path().join("metrics.dump"))}}
        ]
    });
    let f = write_json(d.path(), "c.json", &cfg);
    let out = ok(&ptmp(&["run", &s(&f)], Duration::from_secs(30)), "run");
    assert!(out.contains("reader (czmqat) copied=25"), "{out}");
    assert!(out.contains("sink (czmqat) copied=25"), "{out}");
    assert!(!out.contains("warning"), "{out}");
    // PTMP's JSON metric: the type tag, then {"ptmp": {prefix...: figures}}.
    let mut r = DumpReader::new(std::fs::File::open(d.path().join("metrics.dump")).unwrap());
    let mut fr = Frames::new();
    let (mut n, mut nin) = (0, 0);
    while r.read_into(&mut fr).unwrap() {
        assert_eq!(fr.len(), 2);
        assert_eq!(fr.get(0).unwrap(), b"1246973774");
        let v: Value = serde_json::from_slice(fr.get(1).unwrap()).unwrap();
        assert_eq!(keys(&v), ["ptmp"], "{v}");
        assert_eq!(keys(&v["ptmp"]), ["apa5"], "{v}");
        assert_eq!(keys(&v["ptmp"]["apa5"]), ["sink"], "{v}");
        let m = &v["ptmp"]["apa5"]["sink"];
        // PTMP's ReactorApp metric tree.
        assert_eq!(keys(m), ["in", "lost", "out", "waits"], "{v}");
        assert_eq!(keys(&m["in"]), ["counts", "latency", "rates"], "{v}");
        assert_eq!(keys(&m["in"]["rates"]), ["tps", "tpsets"], "{v}");
        assert_eq!(m["out"]["counts"]["tpsets"], 0, "a sink sends nothing");
        nin += m["in"]["counts"]["tpsets"].as_u64().unwrap();
        n += 1;
    }
    assert!(n >= 2, "a message every 200 ms over 1.5 s: {n}");
    assert_eq!(nin, 25);
}

/// stats -> stats_graphite -> a TCP listener standing in for carbon:
/// lines `path value timestamp`, paths as the stats' keys joined by dots.
#[test]
fn stats_graphite_writes_plaintext_lines_to_carbon() {
    let d = tempfile::tempdir().unwrap();
    write_tpsets(&d.path().join("in.dump"), 30);
    let carbon = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = carbon.local_addr().unwrap().port();
    // Two connections: stats_graphite's and the stats agent's GLOT metrics.
    let reader = std::thread::spawn(move || {
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (mut conn, _) = carbon.accept().unwrap();
                std::thread::spawn(move || {
                    conn.set_read_timeout(Some(Duration::from_secs(20)))
                        .unwrap();
                    let mut got = String::new();
                    let _ = conn.read_to_string(&mut got);
                    got
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap())
            .collect::<String>()
    });
    let carbon_ep = format!("tcp://127.0.0.1:{port}");
    let cfg = json!({
        "ttl": 2, "snooze": 100,
        "proxies": [
            {"name": "src", "type": "czmqat", "data": {"ifile": s(&d.path().join("in.dump")),
                "output": sock("PUSH", "bind", &["inproc://pg-src"])}},
            {"name": "st", "type": "stats", "data": {"tick_per_us": 50,
                "link_integration_time": 300, "chan_integration_time": 500,
                "metrics": {"socket": {"type": "STREAM", "connect": [&carbon_ep]},
                            "proto": "GLOT", "prefix": "apa5", "period": 200},
                "input": sock("PULL", "connect", &["inproc://pg-src"]),
                "output": sock("PUB", "bind", &["inproc://pg-st"])}},
            {"name": "glot", "type": "stats_graphite", "data": {
                "input": sock("SUB", "connect", &["inproc://pg-st"]),
                "output": sock("STREAM", "connect", &[&carbon_ep])}}
        ]
    });
    let f = write_json(d.path(), "c.json", &cfg);
    let out = ok(&ptmp(&["run", &s(&f)], Duration::from_secs(30)), "run");
    assert!(out.contains("glot (stats_graphite)"), "{out}");
    let got = reader.join().unwrap();
    let now_s = ptmp_data::now_us() / 1_000_000;
    let (mut ntpsets, mut metric_in) = (0.0, 0.0);
    let mut paths = std::collections::BTreeSet::new();
    for l in got.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(f.len(), 3, "path value timestamp: {l:?}");
        let v: f64 = f[1].parse().unwrap_or_else(|_| panic!("value: {l}"));
        let ts: i64 = f[2].parse().unwrap_or_else(|_| panic!("timestamp: {l}"));
        assert!((now_s - ts).abs() < 3600, "a timestamp near now: {l}");
        if f[0].starts_with("ptmp.apa5.") {
            // The stats agent's own metrics, GLOT: sets it took in.
            if f[0] == "ptmp.apa5.in.counts.tpsets" {
                metric_in += v;
            }
            paths.insert(f[0].to_string());
            continue;
        }
        assert!(
            f[0].starts_with("tpsets.links.") || f[0].starts_with("ptmp.tpsets.chans."),
            "{l}"
        );
        if f[0].ends_with(".counts.ntpsets") {
            ntpsets += v;
        }
        paths.insert(f[0].to_string());
    }
    assert_eq!(ntpsets, 30.0, "{got}");
    assert_eq!(metric_in, 30.0, "{got}");
    assert!(paths.contains("ptmp.apa5.out.rates.tpsets"), "{paths:?}");
    for p in [
        "tpsets.links.0x1.rates.tps",
        "tpsets.links.0x2.latency.trans.mean",
        "ptmp.tpsets.chans.ch11.integ.ntps",
    ] {
        assert!(paths.contains(p), "{p} in {paths:?}");
    }
    assert!(
        paths.iter().any(|p| p.ends_with("links.nlinks")),
        "{paths:?}"
    );
}

/// A generator in PTMP's style: input files as an ext-code list, the
/// number of sets to copy as a tla-code number.
#[test]
fn ext_code_and_tla_code_give_lists_and_numbers() {
    let d = tempfile::tempdir().unwrap();
    write_tpsets(&d.path().join("a.dump"), 10);
    write_tpsets(&d.path().join("b.dump"), 10);
    let gen = d.path().join("gen.jsonnet");
    std::fs::write(
        &gen,
        r#"function(number=1) {
  ttl: -1,
  proxies: [
    {name: "r%d" % i, type: "czmqat", data: {ifile: std.extVar("input")[i], number: number}}
    for i in std.range(0, std.length(std.extVar("input")) - 1)
  ],
}"#,
    )
    .unwrap();
    let list = format!(
        "[{:?}, {:?}]",
        s(&d.path().join("a.dump")),
        s(&d.path().join("b.dump"))
    );
    let ext = format!("input={list}");
    let o = ptmp(
        &[
            "run",
            &s(&gen),
            "--ext-code",
            &ext,
            "--tla-code",
            "number=4",
        ],
        Duration::from_secs(30),
    );
    let out = ok(&o, "run --ext-code --tla-code");
    assert!(out.contains("r0 (czmqat) copied=4"), "{out}");
    assert!(out.contains("r1 (czmqat) copied=4"), "{out}");

    // Code that does not parse: one line naming the argument.
    let o = ptmp(
        &["run", &s(&gen), "--ext-code", "input=[1,", "--check"],
        Duration::from_secs(30),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let e = text(&o.stderr);
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    assert!(e.contains("external variable input"), "{e}");
    let o = ptmp(
        &[
            "run",
            &s(&gen),
            "--ext-code",
            &ext,
            "--tla-code",
            "number=four",
            "--check",
        ],
        Duration::from_secs(30),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let e = text(&o.stderr);
    assert!(e.contains("top-level argument number"), "{e}");

    // The same list as a string (-V) is text, not a list: warned about.
    let o = ptmp(
        &["run", &s(&gen), "-V", &ext, "--check"],
        Duration::from_secs(30),
    );
    let e = text(&o.stderr);
    assert!(
        e.contains("warning: -V input=[") && e.contains("--ext-code input=["),
        "{e}"
    );
}
