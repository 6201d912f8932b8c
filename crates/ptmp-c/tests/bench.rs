//! The C API's throughput next to the Rust CLI's, in the same run: a C
//! sender to a C receiver (`bench/bench.c`, two processes) over tcp
//! (PUSH/PULL) and shm (PUB/SUB), and `ptmp bench throughput` on the same
//! cases, alternating, several rounds; prints the medians and the ratio.
//!
//! A benchmark, not a test: it is ignored by default. Run it on release
//! builds:
//!
//! ```sh
//! cargo build --release -p ptmp-c -p ptmp-cli
//! cargo test --release -p ptmp-c --test bench -- --ignored --nocapture
//! ```
//!
//! `PTMP_C_BENCH_N` (TPSets per run, default 200000) and
//! `PTMP_C_BENCH_ROUNDS` (default 7) change its size.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

const NTPS: u32 = 10;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One C run: the receiver first (it prints "ready ENDPOINT"), then the
/// sender; returns the receiver's msg/s and how many sets it missed.
fn c_run(exe: &Path, recv_cfg: &str, send_cfg: impl Fn(&str) -> String, n: u64) -> (f64, f64) {
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
        .status()
        .unwrap();
    assert!(tx.success(), "C sender failed");
    line.clear();
    out.read_line(&mut line).unwrap();
    assert!(rx.wait().unwrap().success(), "C receiver failed: {line}");
    // "received R gaps G seconds S rate X"
    let f: Vec<&str> = line.split_whitespace().collect();
    let num = |i: usize| -> f64 {
        f.get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("bad result line {line:?}"))
    };
    (num(7), n as f64 - num(1))
}

/// One run of the Rust CLI's benchmark on one case; returns ptmp's msg/s
/// and its lost count.
fn rust_run(ptmp: &Path, pattern: &str, transport: &str, n: u64, dir: &Path) -> (f64, f64) {
    let st = Command::new(ptmp)
        .arg("bench")
        .arg("--out")
        .arg(dir)
        .args(["throughput", "-n", &n.to_string(), "--patterns", pattern])
        .args(["--transports", transport, "--ntps", &NTPS.to_string()])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "ptmp bench failed");
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
    let rate = row["msg/s"]["value"].as_f64().expect("msg/s");
    (rate, row["lost"]["value"].as_f64().unwrap_or(f64::NAN))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

#[test]
#[ignore = "a benchmark: run with --release -- --ignored --nocapture"]
fn c_api_throughput_against_the_rust_cli() {
    let n = env_or("PTMP_C_BENCH_N", 200_000);
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

    let tcp_recv = r#"{"socket":{"type":"PULL","bind":["tcp://127.0.0.1:*"],"hwm":10000}}"#;
    let tcp_send = |ep: &str| {
        format!(
            r#"{{"socket":{{"type":"PUSH","connect":["{ep}"],"sndhwm":10000,"linger_ms":2000}}}}"#
        )
    };
    let shm = format!("cbench-{}", std::process::id());
    let shm_recv = format!(
        r#"{{"socket":{{"type":"SUB","connect":["shm://{shm}"],"hwm":10000,"shm_slots":4096,"shm_max_message":4096}}}}"#
    );
    let shm_send = |_: &str| {
        format!(
            r#"{{"socket":{{"type":"PUB","bind":["shm://{shm}"],"sndhwm":10000,"linger_ms":2000,"shm_slots":4096,"shm_max_message":4096}}}}"#
        )
    };
    let (mut c_tcp, mut r_tcp, mut c_shm, mut r_shm) = (vec![], vec![], vec![], vec![]);
    let mut lost = [0.0f64; 4];
    let mut keep = |v: &mut Vec<f64>, k: usize, (rate, l): (f64, f64)| {
        v.push(rate);
        lost[k] += l;
    };
    for round in 0..rounds {
        keep(&mut c_tcp, 0, c_run(&exe, tcp_recv, tcp_send, n));
        keep(
            &mut r_tcp,
            1,
            rust_run(&ptmp, "pushpull", "tcp", n, dir.path()),
        );
        keep(&mut c_shm, 2, c_run(&exe, &shm_recv, shm_send, n));
        let _ = ptmp_shm::remove(&shm);
        keep(
            &mut r_shm,
            3,
            rust_run(&ptmp, "pubsub", "shm", n, dir.path()),
        );
        eprintln!(
            "round {round}: tcp C {:.0} Rust {:.0}; shm C {:.0} Rust {:.0} msg/s",
            c_tcp[c_tcp.len() - 1],
            r_tcp[r_tcp.len() - 1],
            c_shm[c_shm.len() - 1],
            r_shm[r_shm.len() - 1]
        );
    }
    let fmt = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{:.0}k", x / 1000.0))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!("\n{n} TPSets of {NTPS} TrigPrims per run, {rounds} rounds, alternating C and Rust\n");
    println!(
        "| case | C API median msg/s | Rust CLI median msg/s | ratio of medians | median of per-round ratios | C runs | Rust runs | lost C / Rust (all runs) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (case, c, r, lc, lr) in [
        ("pushpull tcp", &mut c_tcp, &mut r_tcp, lost[0], lost[1]),
        ("pubsub shm", &mut c_shm, &mut r_shm, lost[2], lost[3]),
    ] {
        let (runs_c, runs_r) = (fmt(c), fmt(r));
        // Each round runs C then Rust back to back, so a round's ratio is
        // less exposed to the load drifting over the whole run.
        let mut paired: Vec<f64> = c.iter().zip(r.iter()).map(|(a, b)| a / b).collect();
        let (mc, mr) = (median(c), median(r));
        println!(
            "| {case} | {mc:.0} | {mr:.0} | {:.2} | {:.2} | {runs_c} | {runs_r} | {lc:.0} / {lr:.0} |",
            mc / mr,
            median(&mut paired)
        );
    }
}
