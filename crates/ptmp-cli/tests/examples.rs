//! The files in examples/ run as their header comments say, and give the
//! output the comments promise: each test here follows one recipe with
//! real `ptmp` processes, in a fresh directory, bounded in time.
//! Also `ptmp send --clock`: sources on a shared data clock.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

mod common;
use common::{finish_as, read_dump, text, PTMP};

/// Every file in examples/ and the test that runs it; a new example
/// without a test here fails `every_example_has_a_test`.
const TESTED: &[(&str, &str)] = &[
    ("butterfly.jsonnet", "butterfly_example_runs"),
    ("chain-graph.jsonnet", "chain_graph_example_runs_the_chain"),
    ("chain.jsonnet", "chain_example_zips_two_clocked_senders"),
    ("monitor.jsonnet", "monitor_example_taps_every_set"),
    ("replay.jsonnet", "replay_example_replays_a_dump"),
    ("shm-fanout.sh", "shm_fanout_example_feeds_three_readers"),
];

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

fn spawn_in(dir: &Path, args: &[&str]) -> Child {
    Command::new(PTMP)
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn ok(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what} failed ({:?})\nstdout: {}\nstderr: {}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// The last line of `ptmp recv --json` as JSON.
fn recv_summary(o: &Output) -> serde_json::Value {
    let out = text(&o.stdout);
    let last = out.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {out}"))
}

const LIMIT: Duration = Duration::from_secs(20);

#[test]
fn every_example_has_a_test() {
    let mut names: Vec<String> = std::fs::read_dir(example(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let tested: Vec<String> = TESTED.iter().map(|(f, _)| f.to_string()).collect();
    assert_eq!(names, tested, "examples/ and the tests here differ");
    // Each recipe starts in the file's header comment.
    for (f, _) in TESTED {
        let s = std::fs::read_to_string(example(f)).unwrap();
        assert!(s.contains("ptmp "), "{f}: no command in its header comment");
    }
}

#[test]
fn butterfly_example_runs() {
    let d = tempfile::tempdir().unwrap();
    let f = example("butterfly.jsonnet");
    let f = f.to_str().unwrap();
    let run_dir = d.path().join("run").display().to_string();
    let o = finish_as(
        spawn_in(
            d.path(),
            &[
                "graph",
                "run",
                f,
                "--tla-code",
                "c1=2",
                "--tla-code",
                "c2=2",
                "--tla-code",
                "t1=5",
                "--tla-code",
                "t2=5",
                "--tla-code",
                "n=40",
                "--tla-code",
                "port_base=17340",
                "--tla-str",
                "placement=thread",
                "--run-dir",
                &run_dir,
            ],
        ),
        LIMIT,
        "ptmp graph run butterfly",
    );
    ok(&o, "ptmp graph run butterfly");
}

/// The chain as a graph: `ptmp graph check` accepts it and `ptmp graph
/// run` (bounded by a ttl) ends when its sources have sent; every
/// TrigPrim the two sources sent reaches the sink's dump, in tstart order,
/// both links interleaved, none tardy.
#[test]
fn chain_graph_example_runs_the_chain() {
    let d = tempfile::tempdir().unwrap();
    let f = example("chain-graph.jsonnet");
    let f = f.to_str().unwrap();
    let o = finish_as(spawn_in(d.path(), &["graph", "check", f]), LIMIT, "check");
    ok(&o, "ptmp graph check chain-graph.jsonnet");
    assert!(text(&o.stdout).contains("valid"), "{}", text(&o.stdout));
    let run_dir = d.path().join("run").display().to_string();
    let n = 500;
    let o = finish_as(
        spawn_in(
            d.path(),
            &[
                "graph",
                "run",
                f,
                "--tla-code",
                &format!("n={n}"),
                // A 5 s zipper wait (the example's default is 1 s): on a
                // loaded test machine one link's process can fall a second
                // behind the other's, which the zipper rightly calls tardy.
                "--tla-code",
                "sync_time=5000",
                "--tla-str",
                "name=chain-graph-test",
                "--ttl",
                "15",
                "--run-dir",
                &run_dir,
            ],
        ),
        LIMIT,
        "ptmp graph run chain-graph.jsonnet",
    );
    ok(&o, "ptmp graph run chain-graph.jsonnet");
    let out = text(&o.stdout) + &text(&o.stderr);
    // It ended because the sources did, well before the ttl.
    assert!(out.contains("stopping: finished"), "{out}");
    assert!(out.contains("zip (zipper) in="), "{out}");
    assert!(out.contains(" tardy=0 "), "{out}");
    // The sink wrote into the run directory, as the run's last line says,
    // not into the directory the graph was started from.
    let dump = d.path().join("run/chain-graph.dump");
    assert!(
        out.contains(&format!("graph chain-graph-test: wrote {}", dump.display())),
        "{out}"
    );
    assert!(!d.path().join("chain-graph.dump").exists());
    let sets = read_dump(&dump);
    assert!(!sets.is_empty(), "{out}");
    let tstarts: Vec<u64> = sets.iter().map(|s| s.tstart).collect();
    assert!(
        tstarts.windows(2).all(|w| w[0] <= w[1]),
        "chain-graph.dump not in tstart order"
    );
    for link in [1, 2] {
        let tps: usize = sets
            .iter()
            .filter(|s| s.detid == link)
            .map(|s| s.tps.len())
            .sum();
        assert_eq!(tps, 4 * n, "detid {link}: TrigPrims at the sink\n{out}");
        // Each window is one 50000-tick step of the 50 MHz clock.
        for s in sets.iter().filter(|s| s.detid == link) {
            assert_eq!((s.tspan, s.tstart % 50_000), (Some(50_000), 0), "{s:?}");
        }
    }
    let switches = sets.windows(2).filter(|w| w[0].detid != w[1].detid).count();
    assert!(switches > n / 4, "only {switches} detid switches");
}

/// The chain recipe: `ptmp run examples/chain.jsonnet`, two
/// `ptmp send --clock 50 --rate 1000`, then SIGTERM; the zipper sends every
/// set, none tardy, and the dump is in tstart order with both links
/// interleaved.
#[test]
fn chain_example_zips_two_clocked_senders() {
    let d = tempfile::tempdir().unwrap();
    let f = example("chain.jsonnet");
    let run = spawn_in(d.path(), &["run", f.to_str().unwrap(), "--ttl", "15"]);
    std::thread::sleep(Duration::from_millis(500));
    let n = 1000;
    let senders: Vec<Child> = [1, 2]
        .iter()
        .map(|link| {
            spawn_in(
                d.path(),
                &[
                    "send",
                    "-n",
                    &n.to_string(),
                    "-p",
                    "PUSH",
                    "-a",
                    "connect",
                    "-e",
                    &format!("tcp://127.0.0.1:{}", 17310 + link),
                    "--detid",
                    &link.to_string(),
                    "--ntps",
                    "4",
                    "--clock",
                    "50",
                    "--rate",
                    "1000",
                ],
            )
        })
        .collect();
    for s in senders {
        ok(&finish_as(s, LIMIT, "ptmp send"), "ptmp send");
    }
    // As the recipe: SIGTERM once the senders have ended.
    // SAFETY: kill sends a signal to a child this test started.
    unsafe { libc::kill(run.id() as i32, libc::SIGTERM) };
    let o = finish_as(run, LIMIT, "ptmp run chain.jsonnet");
    ok(&o, "ptmp run chain.jsonnet");
    let out = text(&o.stdout) + &text(&o.stderr);
    let total = 2 * n;
    assert!(
        out.contains(&format!("zip (zipper) in={total} out={total} tardy=0 ")),
        "{out}"
    );
    let sets = read_dump(&d.path().join("chain.dump"));
    assert_eq!(sets.len(), total as usize, "{out}");
    let tstarts: Vec<u64> = sets.iter().map(|s| s.tstart).collect();
    assert!(
        tstarts.windows(2).all(|w| w[0] <= w[1]),
        "chain.dump not in tstart order"
    );
    for link in [1, 2] {
        assert_eq!(sets.iter().filter(|s| s.detid == link).count(), n as usize);
    }
    // The two links interleave in time (they ran together on one clock),
    // rather than one link's sets all coming before the other's.
    let switches = sets.windows(2).filter(|w| w[0].detid != w[1].detid).count();
    assert!(switches > n as usize / 2, "only {switches} detid switches");
}

/// `--clock 50 --rate 1000`: tstarts on a 50000-tick grid, one step apart,
/// each the wall clock in 50 MHz ticks when the set was sent (`created`,
/// give or take a millisecond; late by at most a generous bound).
/// The README's `ptmp run` line with Jsonnet arguments: the chain's
/// top-level arguments are taken, and a code argument that is not code is
/// one clear error naming it.
#[test]
fn chain_example_takes_top_level_arguments() {
    let d = tempfile::tempdir().unwrap();
    let f = example("chain.jsonnet");
    let f = f.to_str().unwrap();
    let good = finish_as(
        spawn_in(
            d.path(),
            &[
                "run",
                f,
                "--check",
                "--tla-str",
                "engine=adjacency",
                "--tla-code",
                "sync_time=2000",
            ],
        ),
        LIMIT,
        "ptmp run --check",
    );
    ok(&good, "ptmp run --check with arguments");
    assert!(
        text(&good.stdout).contains("valid: 5 proxies"),
        "{}",
        text(&good.stdout)
    );
    let bad = finish_as(
        spawn_in(
            d.path(),
            &["run", f, "--check", "--tla-code", "sync_time=two"],
        ),
        LIMIT,
        "ptmp run --check",
    );
    assert_eq!(bad.status.code(), Some(2));
    let e = text(&bad.stderr);
    assert!(e.contains("sync_time") && e.contains("--tla-str"), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");
}

#[test]
fn send_clock_stamps_tstart_from_the_wall_clock() {
    let d = tempfile::tempdir().unwrap();
    let cat = spawn_in(
        d.path(),
        &[
            "cat",
            "--isock",
            "PULL,bind,tcp://127.0.0.1:17350",
            "--ofile",
            "clock.dump",
            "-n",
            "20",
            "-T",
            "10000",
        ],
    );
    let s = spawn_in(
        d.path(),
        &[
            "send",
            "-n",
            "20",
            "-p",
            "PUSH",
            "-a",
            "connect",
            "-e",
            "tcp://127.0.0.1:17350",
            "--ntps",
            "3",
            "--clock",
            "50",
            "--rate",
            "1000",
        ],
    );
    ok(&finish_as(s, LIMIT, "ptmp send"), "ptmp send");
    ok(&finish_as(cat, LIMIT, "ptmp cat"), "ptmp cat");
    let sets = read_dump(&d.path().join("clock.dump"));
    assert_eq!(sets.len(), 20);
    for (i, s) in sets.iter().enumerate() {
        assert_eq!(
            s.tstart % 50_000,
            0,
            "set {i}: tstart {} off the grid",
            s.tstart
        );
        if i > 0 {
            assert_eq!(s.tstart - sets[i - 1].tstart, 50_000, "set {i}");
        }
        let created_ticks = s.created as u64 * 50;
        assert!(
            // created is stamped just after the set fell due; the wall
            // clock is read once at start and paced by the monotonic clock,
            // so allow a millisecond of drift either way.
            s.tstart <= created_ticks + 50_000 && created_ticks < s.tstart + 50 * 1_000_000,
            "set {i}: tstart {} vs created {} us",
            s.tstart,
            s.created
        );
        for tp in &s.tps {
            assert!(tp.tstart >= s.tstart && tp.tstart < s.tstart + 25, "{tp:?}");
        }
    }
}

#[test]
fn send_clock_and_hwm_arguments() {
    for (args, needle) in [
        (&["--clock", "0"][..], "--clock 0"),
        (
            &["--clock", "50", "--rate", "1e9"][..],
            "less than one tick apart",
        ),
    ] {
        let o = Command::new(PTMP)
            .args([
                "send",
                "-n",
                "1",
                "-p",
                "PUSH",
                "-a",
                "bind",
                "-e",
                "inproc://x",
            ])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(text(&o.stderr).contains(needle), "{}", text(&o.stderr));
    }
    // --hwm on a sender bounds the send queue; its help says so (it used
    // to describe only the receive mark, which a sender never uses).
    let o = Command::new(PTMP)
        .args(["send", "--help"])
        .output()
        .unwrap();
    let help = text(&o.stdout);
    // The --hwm entry: its line and, when clap puts the text below the
    // option, the lines up to the next option.
    let mut entry = help.lines().skip_while(|l| !l.contains("--hwm"));
    let first = entry.next().unwrap_or_default().to_string();
    let rest: Vec<&str> = entry
        .take_while(|l| !l.trim_start().starts_with('-'))
        .collect();
    let text = format!("{first} {}", rest.join(" "));
    assert!(text.contains("send waits"), "{help}");
}

/// The monitor recipe: every set reaches `ptmp recv` unchanged and leaves
/// one row in monitor.txt.
#[test]
fn monitor_example_taps_every_set() {
    let d = tempfile::tempdir().unwrap();
    let f = example("monitor.jsonnet");
    let run = spawn_in(d.path(), &["run", f.to_str().unwrap(), "--ttl", "5"]);
    let recv = spawn_in(
        d.path(),
        &[
            "recv",
            "-n",
            "500",
            "-p",
            "PULL",
            "-a",
            "connect",
            "-e",
            "tcp://127.0.0.1:17322",
            "-T",
            "5000",
            "--json",
        ],
    );
    std::thread::sleep(Duration::from_millis(300));
    let s = spawn_in(
        d.path(),
        &[
            "send",
            "-n",
            "500",
            "-p",
            "PUSH",
            "-a",
            "connect",
            "-e",
            "tcp://127.0.0.1:17321",
            "--detid",
            "7",
            "--ntps",
            "2",
            "--clock",
            "50",
            "--rate",
            "500",
        ],
    );
    ok(&finish_as(s, LIMIT, "ptmp send"), "ptmp send");
    let r = finish_as(recv, LIMIT, "ptmp recv");
    ok(&r, "ptmp recv");
    let j = recv_summary(&r);
    assert_eq!(j["received"], 500, "{j}");
    assert_eq!(j["gaps"], 0, "{j}");
    let o = finish_as(run, LIMIT, "ptmp run monitor.jsonnet");
    ok(&o, "ptmp run monitor.jsonnet");
    let out = text(&o.stdout) + &text(&o.stderr);
    assert!(out.contains("mon (monitor) tap1=500 total=500"), "{out}");
    let rows = std::fs::read_to_string(d.path().join("monitor.txt")).unwrap();
    let (header, rows) = rows.split_once('\n').unwrap();
    assert_eq!(
        header,
        "tapid now nrecv nrecvtot count detid created tstart tspan ntps"
    );
    let rows: Vec<Vec<u64>> = rows
        .lines()
        .map(|l| l.split(' ').map(|x| x.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 500);
    for (i, r) in rows.iter().enumerate() {
        // tapid now nrecv nrecvtot count detid created tstart tspan ntps
        assert_eq!(r.len(), 10, "{r:?}");
        assert_eq!(
            (r[0], r[2], r[4], r[5], r[9]),
            (1, i as u64 + 1, i as u64, 7, 2)
        );
    }
}

/// The replay recipe: a dump made by `ptmp cat` from a clocked sender,
/// replayed by `ptmp run examples/replay.jsonnet` to `ptmp recv`.
#[test]
fn replay_example_replays_a_dump() {
    let d = tempfile::tempdir().unwrap();
    let cat = spawn_in(
        d.path(),
        &[
            "cat",
            "--isock",
            "PULL,bind,tcp://127.0.0.1:17330",
            "--ofile",
            "replay-in.dump",
            "-n",
            "200",
            "-T",
            "10000",
        ],
    );
    let s = spawn_in(
        d.path(),
        &[
            "send",
            "-n",
            "200",
            "-p",
            "PUSH",
            "-a",
            "connect",
            "-e",
            "tcp://127.0.0.1:17330",
            "--ntps",
            "4",
            "--clock",
            "50",
            "--rate",
            "250",
        ],
    );
    ok(&finish_as(s, LIMIT, "ptmp send"), "ptmp send");
    ok(&finish_as(cat, LIMIT, "ptmp cat"), "ptmp cat");
    let input = read_dump(&d.path().join("replay-in.dump"));
    assert_eq!(input.len(), 200);

    let f = example("replay.jsonnet");
    let run = spawn_in(d.path(), &["run", f.to_str().unwrap(), "--ttl", "4"]);
    let recv = spawn_in(
        d.path(),
        &[
            "recv",
            "-n",
            "200",
            "-p",
            "PULL",
            "-a",
            "connect",
            "-e",
            "tcp://127.0.0.1:17331",
            "-T",
            "5000",
            "--json",
        ],
    );
    let r = finish_as(recv, LIMIT, "ptmp recv");
    ok(&r, "ptmp recv");
    let j = recv_summary(&r);
    assert_eq!(j["received"], 200, "{j}");
    assert_eq!(j["gaps"], 0, "{j}");
    let o = finish_as(run, LIMIT, "ptmp run replay.jsonnet");
    ok(&o, "ptmp run replay.jsonnet");
    let out = text(&o.stdout) + &text(&o.stderr);
    assert!(out.contains("file (czmqat) copied=200"), "{out}");
    assert!(
        out.contains("replay (replay) in=200 out=200 out_of_order=0"),
        "{out}"
    );
}

/// The shm fan-out script as shipped, with this build's `ptmp`.
#[test]
fn shm_fanout_example_feeds_three_readers() {
    let d = tempfile::tempdir().unwrap();
    let c = Command::new("sh")
        .arg(example("shm-fanout.sh"))
        .arg("40")
        .env("PTMP", PTMP)
        .current_dir(d.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = finish_as(c, LIMIT, "examples/shm-fanout.sh");
    ok(&o, "examples/shm-fanout.sh");
    let out = text(&o.stdout);
    assert!(out.contains("ok: 3 readers got 40 frames each"), "{out}");
    let summaries: Vec<serde_json::Value> = out
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(summaries.len(), 3, "{out}");
    for j in summaries {
        assert_eq!(
            (j["received"].as_u64(), j["lost"].as_u64()),
            (Some(40), Some(0)),
            "{j}"
        );
    }
}
