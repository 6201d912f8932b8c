//! The targets: one per kind of input ptmp accepts.

use crate::mutate::varint;
use crate::{Corpus, Target};
use ptmp_data::zmsg::{zmsg_encode, zmsg_frames};
use ptmp_data::{decode_tpset, encode_tpset, Frames, TPSet, TrigPrim, VERSION_FRAME};
use ptmp_formats::dump::{DumpReader, DumpWriter};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Every target, in the order runs report them.
pub const ALL: &[Target] = &[
    Target {
        name: "tpset",
        what: "TPSet protobuf decoder (decode, re-encode, decode again)",
        corpus: tpset_corpus,
        check: tpset_check,
    },
    Target {
        name: "wire",
        what: "two-frame PTMP messages (frame count, version, payload)",
        corpus: wire_corpus,
        check: wire_check,
    },
    Target {
        name: "dump",
        what: "czmqat dump-file reader",
        corpus: dump_corpus,
        check: dump_check,
    },
    Target {
        name: "socket-config",
        what: "socket configuration (JSON text)",
        corpus: socket_corpus,
        check: socket_check,
    },
    Target {
        name: "run-config",
        what: "ptmper configuration: every agent's settings (JSON text)",
        corpus: run_corpus,
        check: run_check,
    },
    Target {
        name: "graph-config",
        what: "graph configuration: nodes, edges, placement, plan (JSON text)",
        corpus: graph_corpus,
        check: graph_check,
    },
    Target {
        name: "jsonnet",
        what: "Jsonnet configuration text (evaluation bounded in depth and time)",
        corpus: jsonnet_corpus,
        check: jsonnet_check,
    },
    Target {
        name: "shm-segment",
        what: "shared-memory segment: header, registry and slots, read by a reader",
        corpus: shm_corpus,
        check: shm_check,
    },
    Target {
        name: "agents",
        what: "every agent fed messages with extreme fields and bad bytes, then stopped",
        corpus: agents_corpus,
        check: agents_check,
    },
];

/// The target called `name`.
pub fn by_name(name: &str) -> Option<&'static Target> {
    ALL.iter().find(|t| t.name == name)
}

/// TPSets at the edges of every field.
pub fn edge_tpsets() -> Vec<TPSet> {
    let tp = |channel: u32, tstart: u64, tspan: u32, adc: u32| TrigPrim {
        channel,
        tstart,
        tspan: Some(tspan),
        adcsum: Some(adc),
        adcpeak: Some(adc / 2),
        flags: Some(0),
    };
    let base = TPSet {
        count: 1,
        detid: 2,
        created: 1_700_000_000_000_000,
        tstart: 1000,
        tspan: Some(50),
        chanbeg: Some(7),
        chanend: Some(9),
        totaladc: Some(300),
        tps: vec![tp(7, 1000, 10, 100), tp(9, 1040, 10, 200)],
    };
    vec![
        TPSet {
            count: 0,
            detid: 0,
            created: 0,
            tstart: 0,
            ..Default::default()
        },
        base.clone(),
        TPSet {
            count: u32::MAX,
            detid: u32::MAX,
            created: i64::MAX,
            tstart: u64::MAX - 1,
            tspan: Some(u32::MAX),
            tps: vec![tp(u32::MAX, u64::MAX - 1, u32::MAX, u32::MAX)],
            ..base.clone()
        },
        TPSet {
            created: i64::MIN,
            tstart: u64::MAX,
            tps: vec![tp(0, u64::MAX, u32::MAX, 0), tp(1, 0, 0, 1)],
            ..base.clone()
        },
        TPSet {
            tstart: 1 << 63,
            tps: (0..40)
                .map(|i| tp(i, (1 << 63) + i as u64 * 1000, 5, i))
                .collect(),
            ..base
        },
    ]
}

fn encode(s: &TPSet) -> Vec<u8> {
    let mut b = Vec::new();
    encode_tpset(s, &mut b);
    b
}

fn tpset_corpus() -> Corpus {
    let mut c: Vec<Vec<u8>> = edge_tpsets().iter().map(encode).collect();
    // Unknown fields of every wire type that protobuf skips, after a
    // valid set: varint, 64-bit, length-delimited, a group, 32-bit.
    let mut extra = encode(&edge_tpsets()[1]);
    for (field, wire) in [(20u64, 0u64), (21, 1), (22, 2), (23, 3), (24, 5)] {
        varint(field << 3 | wire, &mut extra);
        match wire {
            0 => varint(u64::MAX, &mut extra),
            1 => extra.extend_from_slice(&[1; 8]),
            2 => extra.extend_from_slice(&[3, 1, 2, 3]),
            3 => {
                varint(25 << 3, &mut extra);
                varint(5, &mut extra);
                varint(field << 3 | 4, &mut extra);
            }
            _ => extra.extend_from_slice(&[1; 4]),
        }
    }
    c.push(extra);
    Corpus::Bytes(c)
}

fn tpset_check(input: &[u8]) -> Result<(), String> {
    if let Ok(s) = decode_tpset(input) {
        let again = encode(&s);
        match decode_tpset(&again) {
            Ok(t) if t == s => {}
            Ok(t) => {
                return Err(format!(
                    "re-encoded set decodes differently: {s:?} vs {t:?}"
                ))
            }
            Err(e) => return Err(format!("a decoded set re-encodes to bytes it refuses: {e}")),
        }
    }
    Ok(())
}

fn wire_corpus() -> Corpus {
    let mut c = Vec::new();
    for s in edge_tpsets() {
        let mut m = Vec::new();
        zmsg_encode([&VERSION_FRAME[..], &encode(&s)], &mut m);
        c.push(m);
    }
    Corpus::Bytes(c)
}

fn wire_check(input: &[u8]) -> Result<(), String> {
    // The input is a czmq-encoded message: its frames are what a socket
    // would deliver; bytes that do not parse as frames are one frame.
    let frames: Vec<&[u8]> = match zmsg_frames(input).collect::<Result<Vec<_>, _>>() {
        Ok(f) => f,
        Err(_) => vec![input],
    };
    let mut out = TPSet::default();
    let r = ptmp_data::wire::decode_message(&frames, &mut out);
    if r.is_ok() && frames.len() != 2 {
        return Err(format!("accepted a message of {} frames", frames.len()));
    }
    Ok(())
}

fn dump_bytes(sets: &[TPSet]) -> Vec<u8> {
    let mut w = DumpWriter::new(Vec::new());
    for s in sets {
        w.write([&VERSION_FRAME[..], &encode(s)])
            .expect("writing to memory");
    }
    w.into_inner()
}

fn dump_corpus() -> Corpus {
    let sets = edge_tpsets();
    let big = TPSet {
        tps: (0..300)
            .map(|i| TrigPrim {
                channel: i,
                tstart: i as u64,
                ..Default::default()
            })
            .collect(),
        ..sets[1].clone()
    };
    Corpus::Bytes(vec![
        dump_bytes(&sets),
        dump_bytes(&sets[1..2]),
        dump_bytes(&[big]),
        Vec::new(),
    ])
}

fn dump_check(input: &[u8]) -> Result<(), String> {
    let mut r = DumpReader::new(input);
    let mut f = Frames::new();
    // Each record takes at least its 8-byte length: more records than
    // that would mean the reader invents them.
    let most = input.len() as u64 / 8 + 1;
    let mut n = 0u64;
    while let Ok(true) = r.read_into(&mut f) {
        n += 1;
        if n > most {
            return Err(format!("{n} records read from {} bytes", input.len()));
        }
        if f.total_bytes() > input.len() {
            return Err(format!(
                "a record of {} bytes from a {}-byte file",
                f.total_bytes(),
                input.len()
            ));
        }
    }
    Ok(())
}

fn sock(t: &str, attach: &str, ep: &str) -> Value {
    json!({"socket": {"type": t, attach: [ep]}})
}

fn socket_corpus() -> Corpus {
    Corpus::Json(vec![
        json!({"socket": {"type": "PUSH", "bind": ["tcp://127.0.0.1:5678"], "hwm": 1000}}),
        json!({"socket": {"type": "SUB", "connect": ["tcp://daq01:7000", "ipc:///tmp/x"],
            "hwm": 1000, "sndhwm": 10, "rcvhwm": 10, "linger_ms": 2000, "subscribe": [""],
            "subscribers": 0, "subscribers_timeout_ms": 10000}}),
        json!({"socket": {"type": "PUB", "bind": ["shm://frames"], "shm_slots": 8,
            "shm_max_message": 6220800}}),
        json!({"socket": {"type": "pull", "connect": ["shm://frames"], "shm_block_timeout_ms": 10}}),
        json!({"socket": {"type": "PAIR", "bind": ["inproc://a"]}}),
    ])
}

fn socket_check(input: &[u8]) -> Result<(), String> {
    let Ok(text) = std::str::from_utf8(input) else {
        return Ok(());
    };
    if let Ok(c) = ptmp::SocketConfig::from_json(text) {
        // What was accepted describes itself in a form accepted again.
        let back = c.to_json();
        if let Err(e) = ptmp::SocketConfig::from_value(&back) {
            return Err(format!("accepted config re-reads as invalid: {e} ({back})"));
        }
    }
    Ok(())
}

fn run_corpus() -> Corpus {
    let io = |n: &str| {
        (
            sock("PULL", "connect", &format!("inproc://{n}-in")),
            sock("PUSH", "bind", &format!("inproc://{n}-out")),
        )
    };
    let (i1, o1) = io("w");
    let (i2, o2) = io("z");
    let (i3, o3) = io("s");
    let (i4, o4) = io("f");
    let (i5, o5) = io("t");
    Corpus::Json(vec![
        json!({"name": "all", "ttl": 1, "snooze": 100, "pause": 0, "reprieve": 10, "verbose": 0,
            "proxies": [
            {"name": "win", "type": "window", "data": {"tspan": 1000, "tbuf": 3000, "toffset": 0,
                "detid": -1, "input": i1, "output": o1}},
            {"name": "zip", "type": "zipper", "data": {"sync_time": 10, "tardy": 1000,
                "tardy_policy": "drop", "input": i2, "output": o2}},
            {"name": "srt", "type": "sorted", "data": {"tardy": 1000, "input": i3, "output": o3}},
            {"name": "flt", "type": "filter", "data": {"engine": "adc_threshold", "threshold": 50,
                "detid": 99, "input": i4, "output": o4}},
            {"name": "sts", "type": "stats", "data": {"input": i5, "output": o5, "tick_per_us": 50}},
        ]}),
        json!({"proxies": [
            {"name": "rep", "type": "replay", "data": {"speed": 50.0, "rewrite_count": 1,
                "input": sock("PULL", "connect", "inproc://r-in"),
                "output": sock("PUSH", "bind", "inproc://r-out")}},
            {"name": "cat", "type": "czmqat", "data": {"number": 10,
                "input": sock("PULL", "connect", "inproc://c-in"),
                "output": sock("PUSH", "bind", "inproc://c-out")}},
            {"name": "src", "type": "source", "data": {"count": 100, "rate": 1000,
                "output": sock("PUSH", "bind", "inproc://src")}},
        ]}),
    ])
}

fn run_check(input: &[u8]) -> Result<(), String> {
    if let Ok(v) = serde_json::from_slice::<Value>(input) {
        let _ = ptmp_agents::ptmper::RunConfig::parse(&v);
    }
    Ok(())
}

fn graph_corpus() -> Corpus {
    Corpus::Json(vec![
        json!({"name": "chain",
            "nodes": [
                {"name": "src", "type": "source", "data": {"count": 100}},
                {"name": "w", "type": "worker"},
                {"name": "z", "type": "zipper", "data": {"sync_time": 10}},
                {"name": "snk", "type": "sink"}],
            "edges": [
                {"from": "src.out", "to": "w.in", "pattern": "pushpull", "hwm": 100},
                {"from": "w.out", "to": "z.in", "pattern": "pubsub", "transport": "shm"},
                {"from": "z.out", "to": "snk.in", "pattern": "pair"}],
            "processes": [{"name": "p1", "host": "h1", "nodes": ["src", "w"]}],
            "hosts": [{"name": "h1", "address": "127.0.0.1"}],
            "port_base": 7000,
            "restart": {"max": 3, "backoff_ms": 100}}),
        json!({"nodes": [
                {"name": "a", "type": "source"}, {"name": "b", "type": "source"},
                {"name": "c", "type": "sink"}, {"name": "d", "type": "sink"}],
            "edges": [
                {"from": "a.out", "to": ["c.in", "d.in"], "pattern": "pushpull"},
                {"from": ["b.out"], "to": "c.in", "pattern": "pubsub",
                    "address": "tcp://127.0.0.1:7100"}]}),
    ])
}

fn graph_check(input: &[u8]) -> Result<(), String> {
    if let Ok(v) = serde_json::from_slice::<Value>(input) {
        let dir = std::env::temp_dir().join("ptmp-fuzz-graph");
        let _ = ptmp_graph::load(&v, "fuzz", Some(&dir));
    }
    Ok(())
}

fn jsonnet_corpus() -> Corpus {
    let texts = [
        "{ proxies: [ { name: 'w', type: 'window', data: { tspan: 1000 } } ] }",
        "local f(x) = if x == 0 then [] else [x] + f(x - 1); { a: f(20), b: std.length('xyz') }",
        "function(c1=2) { nodes: [ { name: 'n%d' % i, type: 'source' } for i in std.range(1, c1) ] }",
        "{ a: { b: { c: [1, 2, 3] } } , d: std.foldl(function(x, y) x + y, std.range(1, 100), 0) }",
        "local o = { x: 1, y: self.x + 1 }; o { z: super.y * 2 }",
        "local f(x) = f(x + 1); f(0)",
        "std.foldl(function(a, b) a + b, std.range(1, 100000000), 0)",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
    ];
    Corpus::Bytes(texts.iter().map(|t| t.as_bytes().to_vec()).collect())
}

static CASE: AtomicU64 = AtomicU64::new(0);

fn jsonnet_check(input: &[u8]) -> Result<(), String> {
    // A directory of its own for each case, removed after it: cases may
    // run in several threads at once, and nothing is left behind.
    let dir = std::env::temp_dir().join(format!(
        "ptmp-fuzz-jsonnet-{}-{}",
        std::process::id(),
        CASE.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let path = dir.join("case.jsonnet");
    let written = std::fs::write(&path, input);
    let opts = ptmp_agents::jsonnet::Options {
        timeout: Some(Duration::from_secs(2)),
        ..Default::default()
    };
    let t0 = Instant::now();
    let r = written
        .map_err(|e| format!("writing {}: {e}", path.display()))
        .map(|()| ptmp_agents::jsonnet::load(&path, &opts));
    let _ = std::fs::remove_dir_all(&dir);
    let r = r?;
    // What evaluates must also be a configuration text parses the same.
    if let Ok(v) = r {
        let _ = ptmp_agents::ptmper::RunConfig::parse(&v);
    }
    if t0.elapsed() > Duration::from_secs(8) {
        return Err(format!(
            "evaluation took {:?} past a 2 s limit",
            t0.elapsed()
        ));
    }
    Ok(())
}

/// This process's directory for shm segments, once made.
static SHM_DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// A directory for this process's shm segments (set once: the reader and
/// writer find segments through `PTMP_SHM_DIR`), removed when the process
/// exits.
fn shm_dir() -> std::path::PathBuf {
    SHM_DIR
        .get_or_init(|| {
            let d = std::env::temp_dir().join(format!("ptmp-fuzz-shm-{}", std::process::id()));
            let _ = std::fs::create_dir_all(&d);
            std::env::set_var("PTMP_SHM_DIR", &d);
            // SAFETY: atexit only records a function pointer; the function
            // is `extern "C"`, takes nothing and cannot unwind.
            unsafe { libc::atexit(remove_shm_dir) };
            d
        })
        .clone()
}

/// At exit: remove the directory [`shm_dir`] made, with any segment a
/// case left in it.
extern "C" fn remove_shm_dir() {
    if let Some(d) = SHM_DIR.get() {
        let _ = std::fs::remove_dir_all(d);
    }
}

fn shm_corpus() -> Corpus {
    shm_dir();
    let mut c = Vec::new();
    for (k, (slots, max, n)) in [(4usize, 64usize, 3u64), (8, 200, 11), (2, 16, 0)]
        .iter()
        .enumerate()
    {
        let name = format!("fuzz-corpus-{k}");
        let cfg = ptmp_shm::ChannelConfig {
            slots: *slots,
            max_message: *max,
            policy: ptmp_shm::Policy::default(),
        };
        let mut w = ptmp_shm::Writer::create(&name, cfg).expect("create a corpus channel");
        for i in 0..*n {
            let msg = vec![i as u8; (i as usize * 7) % max];
            w.publish(&msg).expect("publish to a corpus channel");
        }
        let path = ptmp_shm::segment_path(&name).expect("a valid corpus channel name");
        let bytes = std::fs::read(&path).expect("read a corpus segment");
        drop(w);
        let _ = std::fs::remove_file(&path);
        c.push(bytes);
    }
    Corpus::FixedBytes(c)
}

fn shm_check(input: &[u8]) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    shm_dir();
    let name = format!("fuzz-{}", CASE.fetch_add(1, Ordering::Relaxed));
    let path = ptmp_shm::segment_path(&name).map_err(|e| e.to_string())?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| format!("creating {}: {e}", path.display()))?;
    f.write_all(input)
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
    drop(f);
    let r = read_segment(&name);
    let _ = std::fs::remove_file(&path);
    r
}

fn read_segment(name: &str) -> Result<(), String> {
    let Ok(mut r) = ptmp_shm::Reader::attach(name, ptmp_shm::StartAt::Oldest) else {
        return Ok(());
    };
    let mut buf = Vec::new();
    let t0 = Instant::now();
    for _ in 0..64 {
        let _ = r.try_recv_into(&mut buf);
    }
    let _ = r.recv_into(&mut buf, Some(Duration::from_millis(5)));
    for seq in [0, 1, 2, u64::MAX / 2, u64::MAX] {
        let _ = r.read_at(seq, &mut buf);
    }
    let _ = r.has_data();
    let _ = r.lost();
    if t0.elapsed() > Duration::from_secs(3) {
        return Err(format!(
            "reads of a damaged segment took {:?} (the reader's timeout was 5 ms)",
            t0.elapsed()
        ));
    }
    Ok(())
}

/// The agent kinds fed by the agents target, each with its settings.
fn agent_specs() -> Vec<(&'static str, Value)> {
    vec![
        ("window", json!({"tspan": 1000, "tbuf": 3000})),
        ("zipper", json!({"sync_time": 5, "tardy_policy": "drop"})),
        ("sorted", json!({"tardy": 100})),
        ("stats", json!({"tick_per_us": 50})),
        ("filter", json!({"engine": "pass", "detid": 7})),
        ("worker", json!({})),
        ("replay", json!({"speed": 1000000.0, "rewrite_count": 1})),
        ("czmqat", json!({})),
        ("monitor", json!({})),
    ]
}

fn agents_corpus() -> Corpus {
    // First byte: which agent; the rest: a dump file of the messages it is fed.
    let sets = edge_tpsets();
    let mut c = Vec::new();
    for k in 0..agent_specs().len() {
        let mut b = vec![k as u8];
        b.extend(dump_bytes(&sets));
        c.push(b);
        let mut b = vec![k as u8];
        let mut rev = sets.clone();
        rev.reverse();
        b.extend(dump_bytes(&rev));
        c.push(b);
    }
    Corpus::Bytes(c)
}

fn agents_check(input: &[u8]) -> Result<(), String> {
    let Some((&k, dump)) = input.split_first() else {
        return Ok(());
    };
    let specs = agent_specs();
    let (kind, mut data) = specs[k as usize % specs.len()].clone();
    let n = CASE.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id();
    let ein = format!("inproc://fuzz-{pid}-{n}-in");
    let eout = format!("inproc://fuzz-{pid}-{n}-out");
    if kind == "monitor" {
        // A monitor forwards through taps and writes a row per message.
        let rows = std::env::temp_dir().join(format!("ptmp-fuzz-monitor-{pid}.txt"));
        data["filename"] = json!(rows.display().to_string());
        data["taps"] = json!([{"id": 1, "input": sock("PULL", "bind", &ein),
            "output": sock("PUSH", "bind", &eout)}]);
    } else {
        data["input"] = sock("PULL", "bind", &ein);
        data["output"] = sock("PUSH", "bind", &eout);
    }
    let cfg = json!({"proxies": [{"name": "fuzzed", "type": kind, "data": data}]});
    let rc = ptmp_agents::ptmper::RunConfig::parse(&cfg)
        .map_err(|e| format!("the {kind} config itself was refused: {e}"))?;
    let agents = rc.proxies[0]
        .build()
        .map_err(|e| format!("building the {kind} agent: {e}"))?;
    let ctl = ptmp_agents::Ctl::new(false);
    let running = ptmp_agents::Running::start(agents, &ctl).map_err(|e| e.to_string())?;
    let mut tx = ptmp::Sender::from_json(&sock("PUSH", "connect", &ein).to_string())
        .map_err(|e| format!("fuzz sender: {e}"))?;
    let mut rx = ptmp::Receiver::from_json(&sock("PULL", "connect", &eout).to_string())
        .map_err(|e| format!("fuzz receiver: {e}"))?;
    let mut sent = 0u64;
    let mut f = Frames::new();
    let mut reader = DumpReader::new(dump);
    while let Ok(true) = reader.read_into(&mut f) {
        if !tx
            .send_frames_within(&f, Duration::from_millis(200))
            .unwrap_or(false)
        {
            break;
        }
        sent += 1;
    }
    // Read what comes out until it goes quiet; a flood (more than a
    // window per input set, and then some) is a failure.
    let most = 64 + 8 * sent;
    let mut got = 0u64;
    while let Ok(true) = rx.recv_raw_into(&mut f, Some(Duration::from_millis(30))) {
        got += 1;
        if got > most {
            break;
        }
    }
    let reports = running.stop();
    // Messages flushed at stop count too.
    while let Ok(true) = rx.recv_raw_into(&mut f, Some(Duration::from_millis(1))) {
        got += 1;
        if got > most {
            break;
        }
    }
    if got > most {
        return Err(format!(
            "the {kind} agent sent over {most} messages for {sent} in"
        ));
    }
    if kind == "monitor" {
        let _ =
            std::fs::remove_file(std::env::temp_dir().join(format!("ptmp-fuzz-monitor-{pid}.txt")));
    }
    for (name, r) in reports {
        if let Err(e) = r {
            return Err(format!("the {kind} agent {name} failed: {e}"));
        }
    }
    Ok(())
}
