//! Helpers shared by the integration tests of the `ptmp` binary: starting
//! it, waiting for it with a deadline, reading what it wrote, and small
//! file and port chores. Each test file takes what it needs with
//! `mod common;`, so not every item is used by every file.
#![allow(dead_code)]

pub mod clients;
pub mod devtools;
pub mod monitored;
pub mod proc;
pub mod prometheus;

use ptmp_data::{decode_tpset, Frames, TPSet, VERSION_FRAME};
use ptmp_formats::dump::DumpReader;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The `ptmp` binary Cargo built for these tests.
pub const PTMP: &str = env!("CARGO_BIN_EXE_ptmp");

/// Bytes of a child's output as text, invalid UTF-8 replaced.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Start `ptmp` with `args`, its stdout and stderr captured.
pub fn spawn(args: &[&str]) -> Child {
    Command::new(PTMP)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait for `c`, killing it and failing after `limit`.
pub fn finish(c: Child, limit: Duration) -> Output {
    finish_as(c, limit, "ptmp")
}

/// Wait for `c`, killing it and failing after `limit`; the failure names
/// the child as `what`.
pub fn finish_as(mut c: Child, limit: Duration, what: &str) -> Output {
    let t0 = Instant::now();
    while c.try_wait().unwrap().is_none() {
        if t0.elapsed() > limit {
            let _ = c.kill();
            let o = c.wait_with_output().unwrap();
            panic!(
                "{what} did not finish in {limit:?}\nstdout: {}\nstderr: {}",
                text(&o.stdout),
                text(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    c.wait_with_output().unwrap()
}

/// Poll `f` until it gives Some, failing with `what` after `limit`.
pub fn wait_for<T>(limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(t0.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A loopback TCP port that was free a moment ago.
pub fn free_port() -> u16 {
    free_ports(1)
}

/// The first of `n` loopback TCP ports in a row that were all free a moment
/// ago. They are taken below the kernel's ephemeral range (32768 and up on
/// Linux), so no connecting socket on this machine is handed one of them
/// between this check and the test's bind: a graph's `port_base` names
/// several ports, and one taken that way fails its process at start.
pub fn free_ports(n: u16) -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const LOW: u32 = 20000;
    const SPAN: u32 = 12000;
    let start = std::process::id().wrapping_mul(7919) % SPAN;
    for _ in 0..SPAN {
        let k = NEXT.fetch_add(u32::from(n), Ordering::Relaxed);
        let base = LOW + (start + k) % (SPAN - u32::from(n));
        let all_free = (0..u32::from(n))
            .all(|i| std::net::TcpListener::bind(("127.0.0.1", (base + i) as u16)).is_ok());
        if all_free {
            return base as u16;
        }
    }
    panic!("no {n} free loopback ports in a row from {LOW}");
}

/// A path as a command-line argument.
pub fn s(p: &Path) -> String {
    p.display().to_string()
}

/// A `ptmp run` socket block: type `t`, `attach` ("bind" or "connect") to `eps`.
pub fn sock(t: &str, attach: &str, eps: &[&str]) -> Value {
    json!({"socket": {"type": t, attach: eps}})
}

/// Write `v` as pretty JSON to `dir/name` and give its path.
pub fn write_json(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
    p
}

/// Write the graph `v` to `dir/g.json` and give its path.
pub fn write_graph(dir: &Path, v: &Value) -> PathBuf {
    let f = dir.join("g.json");
    std::fs::write(&f, serde_json::to_vec_pretty(v).unwrap()).unwrap();
    f
}

/// The status file a graph part `process` last wrote in `run_dir`, if any.
pub fn status(run_dir: &Path, process: &str) -> Option<Value> {
    let b = std::fs::read(run_dir.join("status").join(format!("{process}.json"))).ok()?;
    serde_json::from_slice(&b).ok()
}

/// How many sets `node` of `process` has taken in, by its status file.
pub fn node_in(run_dir: &Path, process: &str, node: &str) -> Option<u64> {
    status(run_dir, process)?["nodes"]
        .as_array()?
        .iter()
        .find(|n| n["name"] == node)?["in"]
        .as_u64()
}

/// Every TPSet of a dump file, each record checked to be the version
/// frame and one set.
pub fn read_dump(path: &Path) -> Vec<TPSet> {
    let mut r = DumpReader::new(std::fs::File::open(path).unwrap());
    let mut f = Frames::new();
    let mut out = vec![];
    while r.read_into(&mut f).unwrap() {
        assert_eq!(f.len(), 2);
        assert_eq!(f.get(0).unwrap(), &VERSION_FRAME[..]);
        out.push(decode_tpset(f.get(1).unwrap()).unwrap());
    }
    out
}

/// One request on its own connection; (status, body).
pub fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    // Read to the end, or to the length the head gives (chromium's
    // DevTools server keeps the connection open).
    let mut b = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        let n = s.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        b.extend_from_slice(&buf[..n]);
        let t = String::from_utf8_lossy(&b);
        if let Some((head, body)) = t.split_once("\r\n\r\n") {
            let len = head.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse::<usize>().ok())?
            });
            if len.is_some_and(|n| body.len() >= n) {
                break;
            }
        }
    }
    let t = String::from_utf8_lossy(&b).into_owned();
    let status = t
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = t.split_once("\r\n\r\n").map(|x| x.1).unwrap_or("");
    (status, body.to_string())
}

/// The monitor's JSON state (`/api/state`), which must answer 200.
pub fn state(addr: SocketAddr) -> Value {
    let (code, body) = get(addr, "/api/state");
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

#[path = "../../../../tests/support/missing_part.rs"]
mod missing;
#[allow(unused_imports)]
pub use missing::missing_part;

/// A trigger primitive on `channel` at `tstart`, 5 ticks long, with
/// adc sum `adc`.
pub fn tp(channel: u32, tstart: u64, adc: u32) -> ptmp_data::TrigPrim {
    ptmp_data::TrigPrim {
        channel,
        tstart,
        tspan: Some(5),
        adcsum: Some(adc),
        adcpeak: Some(adc / 2),
        flags: Some(0),
    }
}
