//! `bench peers` with the cargo feature `iceoryx2`: its rows beside ptmp's,
//! run for real through this crate's `ptmp-bench` binary (the two-process
//! rows start it again as their subscriber and echo).
//!
//! Run with `cargo test -p ptmp-bench --features iceoryx2 --test
//! peers_iceoryx2`.
#![cfg(feature = "iceoryx2")]

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

mod common;
use common::row_values as values;

/// Run the binary (killed after three minutes), returning what it printed
/// and its process id.
fn run(args: &[&str]) -> (Output, u32) {
    common::run_within(args, Duration::from_secs(180))
}

/// The iceoryx2 files anywhere they could be: shared memory, iceoryx2's
/// shared root directory, and the runs' own directories.
fn iceoryx2_files() -> BTreeSet<PathBuf> {
    let mut all = BTreeSet::new();
    let mut walk = vec![PathBuf::from("/dev/shm"), PathBuf::from("/tmp/iceoryx2")];
    walk.push(std::env::temp_dir());
    while let Some(d) = walk.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let (p, name) = (e.path(), e.file_name().to_string_lossy().into_owned());
            let ours = name.starts_with("iox2_") || name.starts_with("ptmp_iox2_");
            if p.is_dir() && (ours || d.ends_with("iceoryx2")) {
                walk.push(p.clone());
            }
            if ours || p.starts_with("/tmp/iceoryx2") {
                all.insert(p);
            }
        }
    }
    all
}

/// Short versions of the three iceoryx2 measures: both rates (each run
/// fails unless every message arrived), the 64 B and 4 KiB round trips;
/// every value positive and finite, each p50 at most its p99.9, and
/// nothing of iceoryx2 left behind.
#[test]
fn bench_peers_iceoryx2_rows() {
    let before = iceoryx2_files();
    let (out, pid) = run(&[
        "bench",
        "peers",
        "--runs",
        "2",
        "--seconds",
        "1",
        "-n",
        "2000",
        "--sizes",
        "64,4096",
        "--aeron-jar",
        "/nonexistent/aeron-all.jar",
    ]);
    let (s, e) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{s}{e}");
    assert!(!e.contains("iceoryx2 rows left out"), "{e}");
    for row in [
        "| 64 B messages, threads | iceoryx2 | M msg/s |",
        "| 64 B messages, processes | iceoryx2 | M msg/s |",
    ] {
        let (runs, median) = values(&s, row);
        assert_eq!(runs.len(), 2, "{row}: {s}");
        for x in runs.iter().chain([&median]) {
            assert!(x.is_finite() && *x > 0.0, "{row}: {s}");
        }
    }
    for size in ["64 B", "4 KiB"] {
        let p50 = values(
            &s,
            &format!("| {size} round trip p50, processes | iceoryx2 | us |"),
        );
        let p999 = values(
            &s,
            &format!("| {size} round trip p99.9, processes | iceoryx2 | us |"),
        );
        for (a, b) in p50.0.iter().zip(&p999.0) {
            assert!(
                a.is_finite() && *a > 0.0 && a <= b,
                "{size}: {a} > {b}: {s}"
            );
        }
    }
    // Nothing of this run is left, in its own domain or elsewhere.
    let mine = format!("ptmp_iox2_{pid}_");
    let after = iceoryx2_files();
    let left: Vec<_> = after
        .iter()
        .filter(|p| !before.contains(*p) || p.to_string_lossy().contains(&mine))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
