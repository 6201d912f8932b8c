//! What the suites' tests share: running this crate's `ptmp-bench` binary
//! as a real process, and reading the tables it prints.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BENCH: &str = env!("CARGO_BIN_EXE_ptmp-bench");

/// Run the binary with `args`, killed (and the test failed) after
/// `limit`; what it printed, and its process id.
pub fn run_within(args: &[&str], limit: Duration) -> (Output, u32) {
    let mut c = Command::new(BENCH)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ptmp-bench");
    let pid = c.id();
    let t0 = Instant::now();
    while c.try_wait().unwrap().is_none() {
        if t0.elapsed() > limit {
            let _ = c.kill();
            let out = c.wait_with_output().unwrap();
            panic!(
                "ptmp-bench did not finish within {limit:?}\nstdout: {}\nstderr: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    (c.wait_with_output().unwrap(), pid)
}

/// The values of the table row of `s` that starts with `row` (its first
/// three cells): the runs listed in its fourth cell and the median in its
/// fifth.
pub fn row_values(s: &str, row: &str) -> (Vec<f64>, f64) {
    let line = s
        .lines()
        .find(|l| l.starts_with(row))
        .unwrap_or_else(|| panic!("no row {row}: {s}"));
    let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
    let runs = cells[3]
        .split(',')
        .map(|x| x.trim().parse().unwrap())
        .collect();
    (runs, cells[4].parse().unwrap())
}
