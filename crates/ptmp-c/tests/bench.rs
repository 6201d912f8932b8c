//! The C API's throughput next to the Rust CLI's, in the same run: a C
//! sender to a C receiver (`bench/bench.c`, two processes) and `ptmp bench
//! throughput` on the same cases, alternating, several rounds; prints the
//! medians, the ratios and each side's CPU time per message.
//!
//! The cases: PUSH/PULL over tcp and over shm (both lossless, so both
//! sides time the same messages) and PUB/SUB over shm (which drops what a
//! slow subscriber misses, on both sides).
//!
//! A benchmark, not a test: it is ignored by default. Run it on release
//! builds:
//!
//! ```sh
//! cargo build --release -p ptmp-c -p ptmp-cli
//! cargo test --release -p ptmp-c --test bench -- --ignored --nocapture
//! ```
//!
//! `PTMP_C_BENCH_N` (TPSets per run, default 1000000) and
//! `PTMP_C_BENCH_ROUNDS` (default 7) change its size.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

const NTPS: u32 = 10;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What one run measured.
#[derive(Clone, Copy)]
struct Run {
    /// TPSets per second at the receiver, first message to last.
    rate: f64,
    /// TPSets the receiver did not get.
    lost: f64,
    /// CPU seconds of both processes together (wait4), per TPSet sent,
    /// in microseconds.
    cpu_us: f64,
}

/// Reaps `child` with wait4 and returns its CPU time (user + system),
/// as `ptmp bench throughput` measures its children.
fn reap(child: Child, what: &str) -> f64 {
    let mut status = 0;
    // SAFETY: rusage is plain integers, so all-zero is a valid value.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    loop {
        // SAFETY: wait4 writes only the status and rusage passed, both
        // alive across the call; the pid is our own child, which std has
        // not waited for (the `Child` is dropped unwaited below).
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut u) };
        if rc == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "wait4: {e}");
    }
    drop(child);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{what} failed (wait status {status})"
    );
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    s(u.ru_utime) + s(u.ru_stime)
}

/// One C run: the receiver first (it prints "ready ENDPOINT"), then the
/// sender.
fn c_run(exe: &Path, recv_cfg: &str, send_cfg: impl Fn(&str) -> String, n: u64) -> Run {
    let mut rx = Command::new(exe)
        .args(["recv", recv_cfg, &n.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(rx.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let ep = line
        .strip_prefix("ready ")
        .unwrap_or_else(|| panic!("receiver said {line:?}"))
        .trim()
        .to_string();
    let tx = Command::new(exe)
        .args(["send", &send_cfg(&ep), &n.to_string(), &NTPS.to_string()])
        .spawn()
        .unwrap();
    let cpu_tx = reap(tx, "C sender");
    line.clear();
    out.read_line(&mut line).unwrap();
    let cpu_rx = reap(rx, "C receiver");
    // "received R gaps G seconds S rate X"
    let f: Vec<&str> = line.split_whitespace().collect();
    let num = |i: usize| -> f64 {
        f.get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("bad result line {line:?}"))
    };
    Run {
        rate: num(7),
        lost: n as f64 - num(1),
        cpu_us: (cpu_tx + cpu_rx) / n as f64 * 1e6,
    }
}

/// One run of the Rust CLI's benchmark on one case.
fn rust_run(ptmp: &Path, pattern: &str, transport: &str, n: u64, dir: &Path) -> Run {
    let st = Command::new(ptmp)
        .arg("bench")
        .arg("--out")
        .arg(dir)
        .args(["throughput", "-n", &n.to_string(), "--patterns", pattern])
        .args(["--transports", transport, "--ntps", &NTPS.to_string()])
        .output()
        .unwrap();
    common::assert_ok("ptmp bench throughput", &st);
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("throughput.json")).unwrap())
            .unwrap();
    let row = j["tables"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["impl"] == "ptmp")
        .expect("a ptmp row")
        .clone();
    let v = |k: &str| row[k]["value"].as_f64().unwrap_or(f64::NAN);
    let rate = v("msg/s");
    // Each side's CPU % is its CPU time over the receiver's timed span,
    // which is the TPSets received over the rate: back to seconds.
    let span = (n as f64 - v("lost")) / rate;
    let cpu = (v("sender CPU %") + v("receiver CPU %")) / 100.0 * span;
    Run {
        rate,
        lost: v("lost"),
        cpu_us: cpu / n as f64 * 1e6,
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// A case: its name, the Rust CLI's pattern and transport, the C
/// receiver's configuration and the C sender's (given the receiver's
/// endpoint).
struct Case {
    name: &'static str,
    pattern: &'static str,
    transport: &'static str,
    recv: String,
    send: Box<dyn Fn(&str) -> String>,
    shm: Option<String>,
    c: Vec<Run>,
    rust: Vec<Run>,
}

#[test]
#[ignore = "a benchmark: run with --release -- --ignored --nocapture"]
fn c_api_throughput_against_the_rust_cli() {
    let n = env_or("PTMP_C_BENCH_N", 1_000_000);
    let rounds = env_or("PTMP_C_BENCH_ROUNDS", 7);
    let lib = common::lib_dir();
    let ptmp = lib.join("ptmp");
    assert!(
        ptmp.exists() && lib.join("libptmp.a").exists(),
        "build first: cargo build --release -p ptmp-c -p ptmp-cli"
    );
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("bench");
    let cc = Command::new("cc")
        .args(["-std=c99", "-O2", "-Wall", "-Werror", "-I"])
        .arg(common::crate_dir().join("include"))
        .arg(common::crate_dir().join("bench/bench.c"))
        .arg(lib.join("libptmp.a"))
        .args(common::STATIC_LIBS)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    common::assert_ok("cc bench.c", &cc);

    // The socket settings of `ptmp bench throughput`'s two sides.
    let shm_opts = r#""shm_slots":4096,"shm_max_message":4096"#;
    let shm_case = |name, pattern, (stype, rtype): (&str, &str)| {
        let chan = format!("cbench-{pattern}-{}", std::process::id());
        let send = format!(
            r#"{{"socket":{{"type":"{stype}","bind":["shm://{chan}"],"sndhwm":10000,"linger_ms":2000,{shm_opts}}}}}"#
        );
        Case {
            name,
            pattern,
            transport: "shm",
            recv: format!(
                r#"{{"socket":{{"type":"{rtype}","connect":["shm://{chan}"],"hwm":10000,{shm_opts}}}}}"#
            ),
            send: Box::new(move |_: &str| send.clone()),
            shm: Some(chan),
            c: vec![],
            rust: vec![],
        }
    };
    let mut cases = [
        Case {
            name: "pushpull tcp",
            pattern: "pushpull",
            transport: "tcp",
            recv: r#"{"socket":{"type":"PULL","bind":["tcp://127.0.0.1:*"],"hwm":10000}}"#.into(),
            send: Box::new(|ep: &str| {
                format!(
                    r#"{{"socket":{{"type":"PUSH","connect":["{ep}"],"sndhwm":10000,"linger_ms":2000}}}}"#
                )
            }),
            shm: None,
            c: vec![],
            rust: vec![],
        },
        shm_case("pushpull shm", "pushpull", ("PUSH", "PULL")),
        shm_case("pubsub shm", "pubsub", ("PUB", "SUB")),
    ];
    for round in 0..rounds {
        let mut line = format!("round {round}:");
        for case in &mut cases {
            // C first in even rounds, Rust first in odd ones, so neither
            // always runs right after the other's case.
            for first_c in [round % 2 == 0, round % 2 == 1] {
                if first_c {
                    case.c.push(c_run(&exe, &case.recv, &case.send, n));
                    if let Some(chan) = &case.shm {
                        let _ = ptmp_shm::remove(chan);
                    }
                } else {
                    let r = rust_run(&ptmp, case.pattern, case.transport, n, dir.path());
                    case.rust.push(r);
                }
            }
            let (c, r) = (case.c.last().unwrap(), case.rust.last().unwrap());
            line += &format!(
                " {} C {:.0} Rust {:.0} ({:.2});",
                case.name,
                c.rate,
                r.rate,
                c.rate / r.rate
            );
        }
        eprintln!("{line}");
    }
    println!(
        "\n{n} TPSets of {NTPS} TrigPrims per run, {rounds} rounds, C and Rust alternating (C first in even rounds)\n"
    );
    println!(
        "| case | C API median msg/s | Rust CLI median msg/s | ratio of medians | median of per-round ratios | per-round ratios, lowest-highest | CPU µs per TPSet, C / Rust (medians, both processes) | lost C / Rust (all runs) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for case in &cases {
        let rates = |v: &[Run]| v.iter().map(|r| r.rate).collect::<Vec<_>>();
        let cpus = |v: &[Run]| v.iter().map(|r| r.cpu_us).collect::<Vec<_>>();
        let lost = |v: &[Run]| v.iter().map(|r| r.lost).sum::<f64>();
        // Each round runs C and Rust back to back, so a round's ratio is
        // less exposed to the load drifting over the whole run.
        let paired: Vec<f64> = case
            .c
            .iter()
            .zip(&case.rust)
            .map(|(a, b)| a.rate / b.rate)
            .collect();
        let (mc, mr) = (median(&rates(&case.c)), median(&rates(&case.rust)));
        let lo = paired.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = paired.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        println!(
            "| {} | {mc:.0} | {mr:.0} | {:.2} | {:.2} | {lo:.2}-{hi:.2} | {:.2} / {:.2} | {:.0} / {:.0} |",
            case.name,
            mc / mr,
            median(&paired),
            median(&cpus(&case.c)),
            median(&cpus(&case.rust)),
            lost(&case.c),
            lost(&case.rust),
        );
    }
    for case in &cases {
        let fmt = |v: &[Run]| {
            v.iter()
                .map(|x| format!("{:.0}k", x.rate / 1000.0))
                .collect::<Vec<_>>()
                .join(", ")
        };
        println!(
            "\n{}: C runs {}; Rust runs {}",
            case.name,
            fmt(&case.c),
            fmt(&case.rust)
        );
    }
}
