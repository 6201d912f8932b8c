//! C programs built against `libptmp.a` talk to Rust over real tcp sockets,
//! and the error paths a C caller can reach behave as the header says.

mod common;

use common::{assert_ok, compile, try_compile};
use ptmp_core::{Receiver, Sender, TPSet, TrigPrim};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const N: u32 = 40;

/// Runs the C sender against a Rust receiver and checks every field of
/// every set against what `sender.c` derives from the set's number.
fn c_sender_to_rust(exe: &Path) {
    c_sender_to_rust_via(&[], exe)
}

/// As [`c_sender_to_rust`], the program run under `wrap` (e.g. valgrind).
fn c_sender_to_rust_via(wrap: &[String], exe: &Path) {
    let mut rx =
        Receiver::from_json(r#"{"socket":{"type":"PULL","bind":["tcp://127.0.0.1:*"]}}"#).unwrap();
    let ep = rx.bound_endpoints()[0].clone();
    let mut cmd = match wrap.split_first() {
        Some((w, rest)) => {
            let mut c = Command::new(w);
            c.args(rest).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    let child = cmd
        .arg(&ep)
        .arg(N.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut t = TPSet::default();
    for i in 0..N {
        assert!(
            rx.recv_into(&mut t, Some(Duration::from_secs(20))).unwrap(),
            "set {i} did not come"
        );
        let ntps = i % 16 + 1;
        let want = TPSet {
            count: i,
            detid: 7 + i,
            created: -1 - i64::from(i),
            tstart: 5_000_000_000 + 1000 * u64::from(i),
            tspan: Some(50),
            chanbeg: Some(100 * i),
            chanend: Some(100 * i + ntps - 1),
            totaladc: Some(4_000_000_000 - i),
            tps: (0..ntps)
                .map(|k| TrigPrim {
                    channel: 100 * i + k,
                    tstart: 5_000_000_000 + 1000 * u64::from(i) + u64::from(k),
                    tspan: Some(10 + k),
                    adcsum: Some(1000 + k),
                    adcpeak: Some(200 + k),
                    flags: Some(k % 3),
                })
                .collect(),
        };
        assert_eq!(t, want, "set {i}");
    }
    let out = child.wait_with_output().unwrap();
    assert_ok("C sender", &out);
    assert!(!rx
        .recv_into(&mut t, Some(Duration::from_millis(50)))
        .unwrap());
}

#[test]
fn c_sender_to_rust_receiver_over_tcp() {
    let dir = tempfile::tempdir().unwrap();
    c_sender_to_rust(&compile("sender", dir.path()));
}

#[test]
fn c_sender_under_address_and_undefined_sanitizers() {
    let dir = tempfile::tempdir().unwrap();
    match try_compile("sender", dir.path(), common::SANITIZE) {
        Ok(exe) => c_sender_to_rust(&exe),
        // Only a compiler without the sanitizer runtimes is excused.
        Err(e) if common::no_sanitizer_runtime(&e) => {
            common::missing_part(&format!("sanitizers are not available here:\n{e}"));
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn c_sender_under_valgrind() {
    let Some(vg) = common::valgrind() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    c_sender_to_rust_via(&vg, &compile("sender", dir.path()));
}

/// The C shared-memory and dump-file program: plain, then sanitized.
#[test]
fn c_shared_memory_and_dump_files() {
    let dir = tempfile::tempdir().unwrap();
    let run = |exe: &Path| {
        let out = Command::new(exe).arg(dir.path()).output().unwrap();
        assert_ok("C shm and dump checks", &out);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("0 failures"), "{stdout}");
    };
    run(&compile("features", dir.path()));
    match try_compile("features", dir.path(), common::SANITIZE) {
        Ok(exe) => run(&exe),
        Err(e) if common::no_sanitizer_runtime(&e) => {
            common::missing_part(&format!("sanitizers are not available here:\n{e}"));
        }
        Err(e) => panic!("{e}"),
    }
}

/// The shared-memory and dump-file program under valgrind: the ring's
/// futex waits read the clock through rustix, which finds the vDSO through
/// getauxval in this library, so valgrind can run it (see Cargo.toml).
#[test]
fn c_shared_memory_under_valgrind() {
    let Some(vg) = common::valgrind() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("features", dir.path());
    let out = Command::new(&vg[0])
        .args(&vg[1..])
        .arg(&exe)
        .arg(dir.path())
        .output()
        .unwrap();
    assert_ok("C shm and dump checks under valgrind", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("0 failures"), "{stdout}");
}

/// The sender's options (a bounded send, the delivery report, the count
/// sent, the wait for subscribers) and a receiver's lost count: plain,
/// sanitized, and under valgrind.
#[test]
fn c_sender_options() {
    let dir = tempfile::tempdir().unwrap();
    let run = |wrap: &[String], exe: &Path| {
        // A port nobody listens on: bound, then closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut cmd = match wrap.split_first() {
            Some((w, rest)) => {
                let mut c = Command::new(w);
                c.args(rest).arg(exe);
                c
            }
            None => Command::new(exe),
        };
        let out = cmd.arg(port.to_string()).output().unwrap();
        assert_ok("C sender options", &out);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("0 failures"), "{stdout}");
    };
    let exe = compile("options", dir.path());
    run(&[], &exe);
    match try_compile("options", dir.path(), common::SANITIZE) {
        Ok(exe) => run(&[], &exe),
        Err(e) if common::no_sanitizer_runtime(&e) => {
            common::missing_part(&format!("sanitizers are not available here:\n{e}"));
        }
        Err(e) => panic!("{e}"),
    }
    if let Some(vg) = common::valgrind() {
        run(&vg, &compile("options", dir.path()));
    }
}

#[test]
fn rust_sender_to_c_receiver_then_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("receiver", dir.path());
    let mut tx =
        Sender::from_json(r#"{"socket":{"type":"PUSH","bind":["tcp://127.0.0.1:*"]}}"#).unwrap();
    let ep = tx.bound_endpoints()[0].clone();
    let child = Command::new(&exe)
        .arg(&ep)
        .arg(N.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    for i in 0..N {
        let ntps = (i % 5) * 3;
        let t = TPSet {
            count: i,
            detid: 3,
            created: 1_700_000_000_000_000 + i64::from(i),
            tstart: 9_000_000_000 + 50 * u64::from(i),
            tspan: Some(50),
            chanbeg: Some(10),
            chanend: Some(10 + ntps),
            totaladc: Some(12345 + i),
            tps: (0..ntps)
                .map(|k| TrigPrim {
                    channel: 10 + k,
                    tstart: 9_000_000_000 + 50 * u64::from(i) + u64::from(k),
                    tspan: Some(4),
                    adcsum: Some(100 * k),
                    adcpeak: Some(u32::MAX - k),
                    flags: Some(i),
                })
                .collect(),
        };
        tx.send(&t).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert_ok("C receiver", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("got ")).count(),
        N as usize
    );
    assert!(
        stdout.contains("timeout 1"),
        "no timeout line in:\n{stdout}"
    );
}

#[test]
fn c_error_paths() {
    let dir = tempfile::tempdir().unwrap();
    let run = |exe: &Path| {
        let out = Command::new(exe).output().unwrap();
        assert_ok("C error checks", &out);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("0 failures"), "{stdout}");
    };
    run(&compile("errors", dir.path()));
    // The error paths again under the sanitizers: what a failed call
    // leaves behind (messages, half-made handles) is freed or kept right.
    match try_compile("errors", dir.path(), common::SANITIZE) {
        Ok(exe) => run(&exe),
        Err(e) if common::no_sanitizer_runtime(&e) => {
            common::missing_part(&format!("sanitizers are not available here:\n{e}"));
        }
        Err(e) => panic!("{e}"),
    }
}

/// A graph run from C, each part a `ptmp graph part` child of the `ptmp`
/// program cargo built next to the library (a workspace test run builds
/// it; a run of this crate alone may not have); then a graph with no end
/// started in the background and stopped from a signal handler.
#[test]
fn c_runs_a_graph() {
    let ptmp = common::lib_dir().join("ptmp");
    if !ptmp.exists() {
        common::missing_part(&format!(
            "{} is not built (cargo build -p ptmp-cli); the graph run needs it",
            ptmp.display()
        ));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("graph", dir.path());
    let out = Command::new(&exe)
        .arg(common::crate_dir().join("../../examples/chain-graph.jsonnet"))
        .arg(dir.path().join("run"))
        .arg(&ptmp)
        // The example graph's sink records into its run directory.
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_ok("C graph run", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("run: 0")
            && stdout.contains("started, stopped by a signal: 0")
            && stdout.contains("0 failures"),
        "{stdout}"
    );
    // The parts' final reports (the children share the program's output):
    // the sink got what the sources sent through.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("[sink] sink (sink) received=") && stderr.contains("sink: stopping"),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let received: u64 = stdout
        .split("[sink] sink (sink) received=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(received > 0, "the sink received nothing:\n{stdout}");
}

/// CURVE from C (`c/curve.c`): keys made here, in the files czmq and
/// pyzmq write; the program checks that a listed client's sets arrive and
/// that an unlisted one is refused when sending, finishing and receiving.
#[test]
fn c_curve_admits_a_listed_key_and_refuses_another() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    for name in ["server", "alice", "mallory"] {
        ptmp_core::curve::write_certificates(&keys, name).unwrap();
    }
    let exe = compile("curve", dir.path());
    let mut child = Command::new(&exe)
        .arg(&keys)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A wait with no end must end at the refusal: bound the whole run.
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the C CURVE program did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert_ok("C CURVE checks", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("0 failures"), "{stdout}");
}

/// Runs `exe` under `wrap` (none, or valgrind's command line), killing it
/// after `limit`, and checks it exited 0 having printed "0 failures".
fn run_bounded(what: &str, wrap: &[String], exe: &Path, limit: Duration) {
    let mut cmd = match wrap.split_first() {
        Some((w, rest)) => {
            let mut c = Command::new(w);
            c.args(rest).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what} did not finish in {limit:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert_ok(what, &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("\n0 failures"), "{stdout}");
}

/// Request and response from C (`c/request.c`): a server on a pthread
/// echoes, refuses with words the client sees, holds a request past its
/// time, and hands requests to worker threads that answer them last
/// first; then a request to nobody, a server gone, the limits and the
/// argument errors. Plain, sanitized, and under valgrind.
#[test]
fn c_request_and_response() {
    let dir = tempfile::tempdir().unwrap();
    let limit = Duration::from_secs(120);
    let exe = compile("request", dir.path());
    run_bounded("C requests", &[], &exe, limit);
    let sdir = dir.path().join("sanitized");
    std::fs::create_dir(&sdir).unwrap();
    match try_compile("request", &sdir, common::SANITIZE) {
        Ok(exe) => run_bounded("C requests, sanitized", &[], &exe, limit),
        Err(e) if common::no_sanitizer_runtime(&e) => {
            common::missing_part(&format!("sanitizers are not available here:\n{e}"));
        }
        Err(e) => panic!("{e}"),
    }
    if let Some(vg) = common::valgrind() {
        run_bounded("C requests under valgrind", &vg, &exe, limit);
    }
}
