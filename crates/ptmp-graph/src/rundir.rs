//! The run directory's lock and the leftovers of an earlier run.
//!
//! * One supervisor per run directory: `supervisor.pid` is locked with
//!   `flock` for the supervisor's whole life, so of two supervisors started
//!   at the same moment exactly one gets it; the other is refused, naming
//!   the winner's pid, before it has touched anything. The kernel drops the
//!   lock when its holder dies, even by SIGKILL, so a stale file never
//!   blocks a new run.
//! * Every run starts clean: a pid left in the file means the supervisor
//!   before this one died without cleaning up. Whatever the earlier run
//!   left is removed before anything starts: parts of it still alive (they
//!   are sent SIGKILL after a grace period), the shm rings and ipc socket
//!   files this host's processes bind, status and sequence files, and an
//!   unanswered `ptmp graph apply` request. A new sink would
//!   otherwise read the old run's messages still in a ring.
//! * At the end the supervisor removes the rings, the ipc socket files and
//!   then the lock file.

use crate::plan::Plan;
use crate::{status, Error, Graph, Result};
use ptmp::Transport;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The locked `supervisor.pid` of a run directory; dropping it removes
/// the file, then releases the lock.
pub struct Lock {
    file: File,
    path: PathBuf,
    /// The pid an earlier supervisor left in the file when it died without
    /// cleaning up, if one did.
    pub stale: Option<i32>,
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Remove while still holding the lock: a supervisor starting now
        // either fails to lock this file or, having locked it after we
        // close it, sees it is no longer the file at the path and retries.
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// The file holding the supervisor's pid and lock.
pub fn lock_path(dir: &Path) -> PathBuf {
    dir.join("supervisor.pid")
}

fn read_pid(f: &mut File) -> Option<i32> {
    let mut s = String::new();
    f.rewind().ok()?;
    f.read_to_string(&mut s).ok()?;
    s.trim().parse().ok()
}

/// Lock the run directory `dir` for graph `graph`, writing our pid. The
/// error names the live supervisor that holds it.
pub fn lock(dir: &Path, graph: &str) -> Result<Lock> {
    let path = lock_path(dir);
    let io = |what: &str, e: std::io::Error| {
        Error::Run(format!("graph {graph}: {what} {}: {e}", path.display()))
    };
    for _ in 0..100 {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io("open", e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                // The holder writes its pid right after locking; give it a
                // moment so the refusal can name it.
                let t = Instant::now();
                let mut pid = read_pid(&mut file);
                while pid.is_none() && t.elapsed() < Duration::from_secs(1) {
                    std::thread::sleep(Duration::from_millis(5));
                    pid = read_pid(&mut file);
                }
                let who = pid.map_or("its pid not yet written".into(), |p| {
                    format!("supervisor pid {p}")
                });
                return Err(Error::Run(format!(
                    "graph {graph}: already running from {} ({who}); stop it or use another --run-dir",
                    dir.display()
                )));
            }
            Err(TryLockError::Error(e)) => return Err(io("lock", e)),
        }
        // The file may have been removed (by the supervisor that held it,
        // at its end) between our open and our lock: then we hold a lock
        // on a file nobody else sees. Start again with the file at the path.
        let same = match (file.metadata(), std::fs::metadata(&path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        };
        if !same {
            continue;
        }
        let stale = read_pid(&mut file).filter(|&p| p != std::process::id() as i32);
        file.set_len(0).map_err(|e| io("truncate", e))?;
        file.rewind().map_err(|e| io("rewind", e))?;
        file.write_all(std::process::id().to_string().as_bytes())
            .and_then(|()| file.sync_data())
            .map_err(|e| io("write", e))?;
        return Ok(Lock { file, path, stale });
    }
    Err(Error::Run(format!(
        "graph {graph}: {} keeps being replaced; is another supervisor starting and stopping there?",
        path.display()
    )))
}

/// The shm channel names and ipc socket paths the processes of `host` bind.
pub fn bound_here(g: &Graph, plan: &Plan, host: usize) -> (Vec<String>, Vec<PathBuf>) {
    let mut rings = Vec::new();
    let mut sockets = Vec::new();
    for l in &plan.links {
        for (b, a) in &l.binds {
            if g.processes[g.nodes[b.node].process].host != host {
                continue;
            }
            match l.transport {
                Transport::Shm => rings.extend(a.strip_prefix("shm://").map(str::to_string)),
                Transport::Ipc => sockets.extend(a.strip_prefix("ipc://").map(PathBuf::from)),
                _ => {}
            }
        }
    }
    (rings, sockets)
}

/// Remove the rings and ipc socket files this host's processes bind;
/// returns how many there were.
pub fn remove_bound(g: &Graph, plan: &Plan, host: usize) -> usize {
    let (rings, sockets) = bound_here(g, plan, host);
    let mut n = 0;
    for r in rings {
        n += usize::from(ptmp_shm::remove(&r).is_ok());
    }
    for s in sockets {
        n += usize::from(remove_socket_file(&s));
    }
    n
}

/// Remove `path` if it is a socket file; anything else there (a file an
/// ipc address was pointed at by mistake, whose bind was refused) stays.
pub fn remove_socket_file(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket())
        && std::fs::remove_file(path).is_ok()
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
    let plan = dir.join("plan-");
    let plan = plan.as_os_str().as_encoded_bytes();
    !zombie
        && cmd
            .split(|&b| b == 0)
            .any(|arg| arg.starts_with(plan) && arg.ends_with(b".json"))
}

/// Clear what an earlier run from `dir` left behind, before this run
/// starts (we hold the lock): parts still alive are given `grace` to end
/// (their supervisor's death sent them SIGTERM), then killed; then the
/// rings and ipc socket files this host binds and the status files go.
/// Returns sentences saying what was found, for the log.
pub fn clear_leftovers(
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
        .filter_map(|s| s["pid"].as_i64())
        .map(|p| p as i32)
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
                crate::supervise::send_signal(p, rustix::process::Signal::KILL);
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
    let _ = std::fs::remove_file(crate::reconfig::request_file(dir));
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let f = e.file_name();
            let f = f.to_string_lossy();
            if f.starts_with("apply-reply-")
                || (f.starts_with("apply-request.") && f.ends_with(".tmp"))
            {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    for d in [
        status::status_dir(dir),
        crate::part::sequence_file(dir, "x")
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
    ] {
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
