//! What an earlier run from the same run directory left behind, cleared
//! before this run starts, and what a run binds, removed at its end.

use crate::plan::Plan;
use crate::{rundir, status, Graph};
use std::path::Path;
use std::time::{Duration, Instant};

/// Remove the rings and ipc socket files this host's processes bind;
/// returns how many there were.
pub(crate) fn remove_bound(g: &Graph, plan: &Plan, host: usize) -> usize {
    let (rings, sockets) = plan.bound_here(g, host);
    let mut n = 0;
    for r in rings {
        n += usize::from(ptmp_shm::remove(&r).is_ok());
    }
    for s in sockets {
        n += usize::from(rundir::remove_socket_file(&s));
    }
    n
}

/// Whether `pid` is alive and runs a part of the run in `dir` (its command
/// line names a plan file there), so a recycled pid is never signalled.
fn our_part(pid: i32, dir: &Path) -> bool {
    let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let zombie = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next())
        .is_some_and(|s| s == "Z" || s == "X");
    !zombie
        && cmd
            .split(|&b| b == 0)
            .any(|arg| rundir::names_plan_file(dir, arg))
}

/// Clear what an earlier run from `dir` left behind, before this run
/// starts (we hold the lock): parts still alive are given `grace` to end
/// (their supervisor's death sent them SIGTERM), then killed; then the
/// rings and ipc socket files this host binds and the status files go.
/// Returns sentences saying what was found, for the log.
pub(crate) fn clear(
    g: &Graph,
    plan: &Plan,
    host: usize,
    stale: Option<i32>,
    grace: Duration,
) -> Vec<String> {
    let dir = &plan.run_dir;
    let mut said = Vec::new();
    let parts: Vec<i32> = status::read_all(dir)
        .iter()
        .map(|s| s.pid as i32)
        .filter(|&p| p > 0 && our_part(p, dir))
        .collect();
    if !parts.is_empty() {
        said.push(format!(
            "parts of an earlier run still alive (pids {}); waiting for them to end",
            parts
                .iter()
                .map(i32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
        let t = Instant::now();
        while parts.iter().any(|&p| our_part(p, dir)) && t.elapsed() < grace {
            std::thread::sleep(Duration::from_millis(20));
        }
        for &p in &parts {
            if our_part(p, dir) {
                super::send_signal(p, rustix::process::Signal::KILL);
                said.push(format!("part pid {p} did not end; killed it"));
            }
        }
        let t = Instant::now();
        while parts.iter().any(|&p| our_part(p, dir)) && t.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let n = remove_bound(g, plan, host);
    // A change asked of the earlier run is not this run's to make.
    let _ = std::fs::remove_file(rundir::request_file(dir));
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if rundir::is_apply_leftover(&e.file_name().to_string_lossy()) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    // A run that takes over from a supervisor that died continues it:
    // sources go on counting and sinks append (so a supervisor restarted
    // by systemd loses no recording). A run after a clean end starts anew.
    let mut clear = vec![status::status_dir(dir)];
    if stale.is_some() {
        crate::part::carry_counts(dir);
    } else {
        clear.push(rundir::sequence_dir(dir));
    }
    for d in clear {
        if let Ok(rd) = std::fs::read_dir(d) {
            for e in rd.flatten() {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    if let Some(p) = stale {
        said.insert(
            0,
            format!(
                "supervisor pid {p} of an earlier run from {} died without cleaning up",
                dir.display()
            ),
        );
    }
    if n > 0 {
        said.push(format!(
            "removed {n} shm ring(s) and ipc socket file(s) left from an earlier run"
        ));
    }
    said
}
