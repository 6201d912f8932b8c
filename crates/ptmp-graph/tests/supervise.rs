//! The supervisor through the library alone, with real part processes:
//! this test binary is also the part command (`supervise part PLAN`), so
//! neither the `ptmp` command nor Python is needed.
//!
//! * A finite graph over two processes ends by itself, every set once and
//!   in order in the sink's file.
//! * A part killed (SIGKILL) is restarted by the supervisor; its source
//!   goes on counting, and the sink's file holds no number twice.

use ptmp::data::{decode_tpset, Frames};
use ptmp_formats::dump::DumpReader;
use ptmp_graph::{part, status, supervise};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A test: its name and its body, given a directory of its own.
type Test = (&'static str, fn(&Path));

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("part") {
        std::process::exit(run_part(Path::new(&args[2])));
    }
    // Each run its own user directory, where the graph locks go.
    let d = tempfile::tempdir().unwrap();
    std::env::set_var("XDG_RUNTIME_DIR", d.path());
    let tests: [Test; 2] = [
        (
            "a_finite_graph_ends_with_every_set_once",
            a_finite_graph_ends_with_every_set_once,
        ),
        (
            "a_killed_part_is_restarted_and_counts_on",
            a_killed_part_is_restarted_and_counts_on,
        ),
    ];
    let only = args.iter().skip(1).find(|a| !a.starts_with('-'));
    for (name, t) in tests {
        if only.is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        eprintln!("test {name} ...");
        let dir = tempfile::tempdir_in(d.path()).unwrap();
        t(dir.path());
        eprintln!("test {name} ... ok");
    }
}

/// One part, as `ptmp graph part` runs it: until SIGINT or SIGTERM, or
/// until its nodes end.
fn run_part(plan: &Path) -> i32 {
    let pp = match part::PartPlan::read(plan) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return part::EXIT_CONFIG;
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).unwrap();
    }
    let mut log = std::io::stderr();
    part::run(&pp, &|| stop.load(Ordering::Relaxed), &mut log)
}

/// A source (with `count` sets, or endless) feeding a sink writing `out`,
/// each in a process of its own.
fn graph(name: &str, out: &Path, count: Option<u64>) -> Value {
    let mut src = json!({"rate": 2000, "tps": 1, "detid": 3});
    if let Some(n) = count {
        src["count"] = json!(n);
    }
    json!({
        "name": name,
        "nodes": [
            {"name": "src", "type": "source", "data": src},
            {"name": "snk", "type": "sink", "data": {"ofile": out.to_str().unwrap()}}
        ],
        "edges": [{"from": "src.out", "to": "snk.in", "pattern": "pushpull"}],
        "processes": [
            {"name": "front", "nodes": ["src"]},
            {"name": "back", "nodes": ["snk"]}
        ]
    })
}

fn options() -> supervise::Options {
    supervise::Options {
        part_command: vec![std::env::current_exe().unwrap().into(), "part".into()],
        stop_timeout: Duration::from_secs(10),
        ..Default::default()
    }
}

/// The count of every set in dump file `f`, in file order.
fn counts(f: &Path) -> Vec<u64> {
    let Ok(file) = std::fs::File::open(f) else {
        return vec![];
    };
    let mut r = DumpReader::new(std::io::BufReader::new(file));
    let mut fr = Frames::new();
    let mut v = Vec::new();
    while let Ok(true) = r.read_into(&mut fr) {
        v.push(decode_tpset(fr.get(1).unwrap()).unwrap().count as u64);
    }
    v
}

fn a_finite_graph_ends_with_every_set_once(dir: &Path) {
    let out = dir.join("finite.dump");
    let (g, plan) = ptmp_graph::load(
        &graph("libfinite", &out, Some(800)),
        "g",
        Some(&dir.join("run")),
    )
    .unwrap();
    let mut log = Vec::new();
    let o = supervise::run(&g, &plan, &options(), &|| false, &|| false, &mut log).unwrap();
    let log = String::from_utf8_lossy(&log);
    assert!(o.ok, "{o:?}\n{log}");
    assert_eq!(o.reason, "finished", "{log}");
    assert_eq!(counts(&out), (0..800).collect::<Vec<_>>(), "{log}");
    assert!(o.restarts.iter().all(|(_, n)| *n == 0), "{o:?}");
}

fn a_killed_part_is_restarted_and_counts_on(dir: &Path) {
    let out = dir.join("endless.dump");
    let run_dir = dir.join("run");
    let (g, plan) =
        ptmp_graph::load(&graph("libendless", &out, None), "g", Some(&run_dir)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let sup = std::thread::spawn(move || {
        let mut log = Vec::new();
        let o = supervise::run(
            &g,
            &plan,
            &options(),
            &|| s.load(Ordering::Relaxed),
            &|| false,
            &mut log,
        );
        (o, String::from_utf8_lossy(&log).into_owned())
    });
    let grows = |what: &str, by: usize| {
        let before = counts(&out).len();
        let t0 = Instant::now();
        while counts(&out).len() < before + by {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "no sets after {what}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    grows("the start", 500);
    let front = status::read_all(&run_dir)
        .into_iter()
        .find(|s| s.process == "front")
        .map(|s| s.pid)
        .expect("front's status");
    supervise::send_signal(front as i32, rustix::process::Signal::KILL);
    grows("the restart", 1000);
    stop.store(true, Ordering::Relaxed);
    let (o, log) = sup.join().unwrap();
    let o = o.unwrap();
    assert_eq!(o.reason, "interrupted", "{log}");
    assert!(o.ok, "{o:?}\n{log}");
    let restarts: Vec<(String, u32)> = o.restarts.clone();
    assert!(
        restarts.contains(&("front".to_string(), 1)),
        "{restarts:?}\n{log}"
    );
    let got = counts(&out);
    assert!(
        got.windows(2).all(|w| w[0] < w[1]),
        "a set twice or out of order:\n{log}"
    );
    // The source went on from where its last status said it was (at most
    // a quarter second old: 500 sets at 2000/s), not from 0, so the sink
    // dropped few numbers as repeats.
    let dropped = status::read_all(&run_dir)
        .into_iter()
        .filter(|s| s.process == "back")
        .flat_map(|s| s.reports.unwrap_or_default())
        .find_map(|r| r.counter("repeats_dropped"))
        .expect("the sink's final report");
    assert!(
        dropped <= 600,
        "{dropped} repeats dropped: the source began again at 0?\n{log}"
    );
}
