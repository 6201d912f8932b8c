//! C++ programs built with the system `c++` against `ptmp.hpp` and
//! `libptmp.a`: the wrapper end to end in one process (plain, under the
//! address and undefined-behaviour sanitizers, and under valgrind), and the
//! PTMP-shaped receiver fed by a Rust sender.

mod common;

use common::{assert_ok, compile_cpp, try_compile_cpp};
use ptmp_core::{Sender, TPSet, TrigPrim};
use std::path::Path;
use std::process::Command;

/// Runs the self-test program, under `wrap` if given.
fn selftest(wrap: &[String], exe: &Path) {
    let scratch = tempfile::tempdir().unwrap();
    let graph = common::crate_dir().join("../../examples/chain-graph.jsonnet");
    let mut cmd = match wrap.split_first() {
        Some((w, rest)) => {
            let mut c = Command::new(w);
            c.args(rest).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    let out = cmd.arg(scratch.path()).arg(&graph).output().unwrap();
    assert_ok("C++ self-test", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("0 failures"), "{stdout}");
    // The error paths were taken, each with its message.
    assert!(stdout.contains("NUL byte at offset 2"), "{stdout}");
    assert!(stdout.contains("socket.type = \"PUSHY\""), "{stdout}");
}

#[test]
fn cpp_wrapper_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    selftest(&[], &compile_cpp("selftest", dir.path()));
}

#[test]
fn cpp_wrapper_under_address_and_undefined_sanitizers() {
    let dir = tempfile::tempdir().unwrap();
    match try_compile_cpp("selftest", dir.path(), common::SANITIZE) {
        Ok(exe) => selftest(&[], &exe),
        Err(e) if common::no_sanitizer_runtime(&e) => {
            common::missing_part(&format!("sanitizers are not available here:\n{e}"));
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn cpp_wrapper_under_valgrind() {
    let Some(vg) = common::valgrind() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Shared memory included: the library makes rustix find the vDSO
    // through getauxval, which valgrind answers (see Cargo.toml).
    selftest(&vg, &compile_cpp("selftest", dir.path()));
}

/// The set the C++ receiver expects as number `i` (the Python sender in
/// python/tests/test_c_interop.py makes the same).
fn expected(i: u32) -> TPSet {
    let ntps = i % 7;
    TPSet {
        count: i,
        detid: 11,
        created: 1_700_000_000_000_000 + i64::from(i),
        tstart: 7_000_000_000 + 25 * u64::from(i),
        tspan: Some(25),
        chanbeg: Some(5),
        chanend: Some(5 + ntps),
        totaladc: Some(1000 + i),
        tps: (0..ntps)
            .map(|k| TrigPrim {
                channel: 5 + k,
                tstart: 7_000_000_000 + 25 * u64::from(i) + u64::from(k),
                tspan: Some(3),
                adcsum: Some(10 * k),
                adcpeak: Some(0xffff_fff0 + k),
                flags: Some(i % 2),
            })
            .collect(),
    }
}

#[test]
fn rust_sender_to_cpp_receiver() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_cpp("receiver", dir.path());
    let mut tx =
        Sender::from_json(r#"{"socket":{"type":"PUSH","bind":["tcp://127.0.0.1:*"]}}"#).unwrap();
    let cfg = format!(
        r#"{{"socket":{{"type":"PULL","connect":["{}"]}}}}"#,
        tx.bound_endpoints()[0]
    );
    let n = 30;
    let child = Command::new(&exe)
        .arg(&cfg)
        .arg(n.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    for i in 0..n {
        tx.send(&expected(i)).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert_ok("C++ receiver", &out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("received 30, then a timeout"));
}
