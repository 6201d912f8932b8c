//! stats -> stats_graphite -> a real carbon receiver (Debian's
//! graphite-carbon: `carbon-cache`, run in the foreground with a config of
//! its own in a temporary directory), then the whisper files carbon wrote
//! read back with `whisper-fetch`: the metric paths PTMP's TPStatsGraphite
//! would produce, under the configured prefix, holding the figures of the
//! TPSets that went in, at the data time of the sets.
//!
//! Where carbon cannot run (not installed, or it does not start), the same
//! figures are checked on a plain TCP listener that reads Graphite's
//! plaintext protocol line by line; the test prints which of the two ran.

use ptmp_data::{encode_tpset, TPSet, TrigPrim, VERSION_FRAME};
use ptmp_formats::dump::DumpWriter;
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{free_port, PTMP};

const PREFIX: &str = "ptmptest.apa5";
const CARBON: &str = "/usr/bin/carbon-cache";
const WHISPER_FETCH: &str = "/usr/bin/whisper-fetch";

/// 30 sets, detids 1 and 2 in turn (15 each, counts without gaps), two
/// TPs each on channels 10+detid and 20+detid, all with tstart in the
/// current second of a 50 MHz data clock. Returns that second.
fn write_tpsets(path: &Path) -> i64 {
    let mut w = DumpWriter::new(std::fs::File::create(path).unwrap());
    let now_s = ptmp_data::now_us() / 1_000_000;
    let mut buf = Vec::new();
    for i in 0..30u32 {
        let detid = 1 + i % 2;
        // 20 µs apart from the start of the second: all in that second.
        let ts = now_s as u64 * 1_000_000 * 50 + 1000 * u64::from(i);
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
            created: ptmp_data::now_us(),
            tstart: ts,
            tps: vec![tp(10 + detid), tp(20 + detid)],
            ..Default::default()
        };
        buf.clear();
        encode_tpset(&set, &mut buf);
        w.write([&VERSION_FRAME[..], &buf[..]]).unwrap();
    }
    w.flush().unwrap();
    now_s
}

/// What carbon must hold: path under the prefix, value, and whether its
/// timestamp is the sets' data second (the link's `now`) rather than the
/// time the message was made.
fn expected() -> Vec<(&'static str, f64, bool)> {
    vec![
        ("tpsets.links.0x1.detid", 1.0, true),
        ("tpsets.links.0x2.detid", 2.0, true),
        ("tpsets.links.0x1.counts.ntpsets", 15.0, true),
        ("tpsets.links.0x2.counts.ntpsets", 15.0, true),
        ("tpsets.links.0x1.counts.ntps", 30.0, true),
        ("tpsets.links.0x2.counts.nchannels", 2.0, true),
        ("tpsets.links.0x1.counts.ndropped", 0.0, true),
        ("tpsets.links.0x2.adc.mean", 30.0, true),
        ("tpsets.links.nlinks", 2.0, false),
        ("ptmp.tpsets.chans.ch11.integ.ntps", 15.0, false),
        ("ptmp.tpsets.chans.ch22.integ.adcsum", 450.0, false),
        ("ptmp.tpsets.chans.nchans", 4.0, false),
    ]
}

/// Run czmqat (the dump) -> stats -> stats_graphite (STREAM to
/// 127.0.0.1:`port`) for two seconds. The stats windows are longer than
/// the run, so each link and channel is reported once, by the flush at
/// the end: one value per metric path, which carbon keeps as it is.
fn run_chain(dir: &Path, port: u16) {
    let dump = dir.join("in.dump");
    let sock = |t: &str, attach: &str, ep: &str| json!({"socket": {"type": t, attach: [ep]}});
    let cfg = json!({
        "ttl": 2, "snooze": 100,
        "proxies": [
            {"name": "src", "type": "czmqat", "data": {"ifile": dump,
                "output": sock("PUSH", "bind", "inproc://gc-src")}},
            {"name": "st", "type": "stats", "data": {"tick_per_us": 50,
                "link_integration_time": 60000, "chan_integration_time": 60000,
                "input": sock("PULL", "connect", "inproc://gc-src"),
                "output": sock("PUB", "bind", "inproc://gc-st")}},
            {"name": "glot", "type": "stats_graphite", "data": {
                "prefix": PREFIX,
                "input": sock("SUB", "connect", "inproc://gc-st"),
                "output": sock("STREAM", "connect", &format!("tcp://127.0.0.1:{port}"))}}
        ]
    });
    let f = dir.join("chain.json");
    std::fs::write(&f, cfg.to_string()).unwrap();
    let out = Command::new(PTMP).arg("run").arg(&f).output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "ptmp run: {text}");
    // Every stats message went out to the receiver, none left unsent.
    let line = text
        .lines()
        .find(|l| l.contains("glot (stats_graphite)"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("in=2 sent=2 ") && line.contains("unsent=0"),
        "{line}"
    );
}

/// carbon-cache in the foreground; stopped when dropped.
struct Carbon {
    child: Child,
    data: PathBuf,
    log: PathBuf,
}

impl Drop for Carbon {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own unreaped child: its pid cannot have
        // been reused.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let t = Instant::now();
        while self.child.try_wait().ok().flatten().is_none() {
            if t.elapsed() > Duration::from_secs(10) {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Start carbon-cache with its whole state in `dir` and a one-second
/// retention; its line receiver's port once it accepts connections, or
/// why it could not start.
fn start_carbon(dir: &Path) -> Result<(Carbon, u16), String> {
    if !Path::new(CARBON).exists() || !Path::new(WHISPER_FETCH).exists() {
        return Err(format!(
            "{CARBON} or {WHISPER_FETCH} is missing (Debian package graphite-carbon)"
        ));
    }
    let storage = dir.join("storage");
    let data = storage.join("whisper");
    for d in ["storage/whisper", "storage/lists", "log", "pid"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    let (line, pickle, query) = (free_port(), free_port(), free_port());
    let conf = format!(
        "[cache]\n\
         STORAGE_DIR = {storage}\n\
         LOCAL_DATA_DIR = {data}\n\
         WHITELISTS_DIR = {storage}/lists\n\
         LOG_DIR = {log}\n\
         PID_DIR = {pid}\n\
         USER =\n\
         ENABLE_LOGROTATION = False\n\
         MAX_CACHE_SIZE = inf\n\
         MAX_UPDATES_PER_SECOND = inf\n\
         MAX_CREATES_PER_MINUTE = inf\n\
         WHISPER_AUTOFLUSH = True\n\
         LINE_RECEIVER_INTERFACE = 127.0.0.1\n\
         LINE_RECEIVER_PORT = {line}\n\
         ENABLE_UDP_LISTENER = False\n\
         PICKLE_RECEIVER_INTERFACE = 127.0.0.1\n\
         PICKLE_RECEIVER_PORT = {pickle}\n\
         CACHE_QUERY_INTERFACE = 127.0.0.1\n\
         CACHE_QUERY_PORT = {query}\n\
         LOG_LISTENER_CONN_SUCCESS = False\n",
        storage = storage.display(),
        data = data.display(),
        log = dir.join("log").display(),
        pid = dir.join("pid").display(),
    );
    std::fs::write(dir.join("carbon.conf"), conf).unwrap();
    // Every metric: one point per second, kept an hour.
    std::fs::write(
        dir.join("storage-schemas.conf"),
        "[everything]\npattern = .*\nretentions = 1s:1h\n",
    )
    .unwrap();
    let log = dir.join("carbon.out");
    let child = Command::new(CARBON)
        .arg(format!("--config={}", dir.join("carbon.conf").display()))
        .args(["--nodaemon", "start"])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(dir.join("carbon.err")).unwrap())
        .spawn()
        .map_err(|e| format!("cannot start {CARBON}: {e}"))?;
    let mut c = Carbon {
        child,
        data,
        log: log.clone(),
    };
    let t = Instant::now();
    loop {
        if TcpStream::connect(("127.0.0.1", line)).is_ok() {
            return Ok((c, line));
        }
        if let Ok(Some(s)) = c.child.try_wait() {
            return Err(format!(
                "carbon-cache exited ({s}) before listening: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            ));
        }
        if t.elapsed() > Duration::from_secs(30) {
            return Err("carbon-cache did not listen within 30 s".into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The points (timestamp, value) of a whisper file that hold a value.
fn whisper_points(file: &Path) -> Vec<(i64, f64)> {
    let out = Command::new(WHISPER_FETCH)
        .arg(file)
        .output()
        .expect("run whisper-fetch");
    assert!(
        out.status.success(),
        "whisper-fetch {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (t, v) = l.split_once('\t')?;
            Some((t.trim().parse().ok()?, v.trim().parse().ok()?))
        })
        .collect()
}

#[test]
fn stats_graphite_feeds_carbon_with_ptmp_metric_paths() {
    let d = tempfile::tempdir().unwrap();
    let data_s = write_tpsets(&d.path().join("in.dump"));
    let start_s = ptmp_data::now_us() / 1_000_000;
    match start_carbon(&d.path().join("carbon")) {
        Ok((carbon, port)) => {
            eprintln!("graphite: testing against a real carbon-cache on port {port}, reading its whisper files with whisper-fetch");
            run_chain(d.path(), port);
            let end_s = ptmp_data::now_us() / 1_000_000;
            let file = |path: &str| {
                carbon
                    .data
                    .join(format!("{PREFIX}.{path}").replace('.', "/") + ".wsp")
            };
            // Carbon writes its cache out in the background: wait for every
            // file to hold its one point.
            let t = Instant::now();
            for (path, want, at_data_time) in expected() {
                let f = file(path);
                let points = loop {
                    let p = if f.exists() {
                        whisper_points(&f)
                    } else {
                        vec![]
                    };
                    if !p.is_empty() {
                        break p;
                    }
                    assert!(
                        t.elapsed() < Duration::from_secs(30),
                        "no point in {} after 30 s; carbon's log:\n{}",
                        f.display(),
                        std::fs::read_to_string(&carbon.log).unwrap_or_default()
                    );
                    std::thread::sleep(Duration::from_millis(200));
                };
                assert_eq!(
                    points.len(),
                    1,
                    "{path}: one message, one point: {points:?}"
                );
                let (ts, v) = points[0];
                assert_eq!(v, want, "{path} at {ts}");
                if at_data_time {
                    assert_eq!(ts, data_s, "{path}: stamped with the sets' data time");
                } else {
                    assert!(
                        (start_s..=end_s + 1).contains(&ts),
                        "{path}: stamped {ts}, sent between {start_s} and {end_s}"
                    );
                }
            }
            // Nothing outside the prefix came from us: carbon's own
            // metrics live under `carbon`, ours all under the prefix.
            let top: Vec<String> = std::fs::read_dir(&carbon.data)
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != "carbon")
                .collect();
            assert_eq!(top, [PREFIX.split('.').next().unwrap()], "{top:?}");
        }
        Err(why) => {
            common::missing_part(&format!("graphite: carbon cannot run here ({why})"));
            eprintln!("graphite: testing against a plaintext listener instead, line by line");
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            let reader = std::thread::spawn(move || {
                let (mut conn, _) = listener.accept().unwrap();
                conn.set_read_timeout(Some(Duration::from_secs(20)))
                    .unwrap();
                let mut got = String::new();
                let _ = conn.read_to_string(&mut got);
                got
            });
            run_chain(d.path(), port);
            let got = reader.join().unwrap();
            let end_s = ptmp_data::now_us() / 1_000_000;
            let mut seen: BTreeMap<String, Vec<(f64, i64)>> = BTreeMap::new();
            assert!(got.ends_with('\n'), "every line ends: {got:?}");
            for l in got.lines() {
                let f: Vec<&str> = l.split(' ').collect();
                assert_eq!(f.len(), 3, "path value timestamp: {l:?}");
                let path = f[0]
                    .strip_prefix(&format!("{PREFIX}."))
                    .unwrap_or_else(|| panic!("under the prefix: {l:?}"));
                assert!(
                    !path.is_empty() && path.split('.').all(|p| !p.is_empty()),
                    "{l:?}"
                );
                let v: f64 = f[1].parse().unwrap_or_else(|_| panic!("value: {l:?}"));
                let ts: i64 = f[2].parse().unwrap_or_else(|_| panic!("timestamp: {l:?}"));
                seen.entry(path.to_string()).or_default().push((v, ts));
            }
            for (path, want, at_data_time) in expected() {
                let p = seen.get(path).unwrap_or_else(|| panic!("{path} in {got}"));
                assert_eq!(p.len(), 1, "{path}: {p:?}");
                assert_eq!(p[0].0, want, "{path}");
                if at_data_time {
                    assert_eq!(p[0].1, data_s, "{path}");
                } else {
                    assert!((start_s..=end_s).contains(&p[0].1), "{path}: {p:?}");
                }
            }
        }
    }
}
