//! What the suites ask of the operating system, in one place: a monotonic
//! clock in nanoseconds, CPU time of this process and of a reaped child,
//! peak resident memory, CPU pinning, and a stop flag for Ctrl-C.

use crate::error::{BenchError, BenchResult};
use std::sync::atomic::{AtomicBool, Ordering};

/// CLOCK_MONOTONIC in nanoseconds: the stamp a sender writes into a message
/// and the receiver subtracts, comparable across threads and processes.
pub fn mono_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn seconds(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6
}

/// CPU seconds (user plus system) this process has used so far, all
/// threads together.
pub fn cpu_seconds() -> f64 {
    // SAFETY: rusage is plain integers, so all-zero is a valid value.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes the struct we pass, which lives across
    // the call; RUSAGE_SELF cannot fail.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    seconds(u.ru_utime) + seconds(u.ru_stime)
}

/// Reap our child `child` with wait4: its exit status and CPU seconds (user
/// plus system). Peak RSS is not taken from here: wait4's ru_maxrss survives
/// exec and so reports at least this parent's size; children report their
/// own [`peak_rss_mb`] instead.
pub fn reap(child: &mut std::process::Child) -> std::io::Result<(std::process::ExitStatus, f64)> {
    use std::os::unix::process::ExitStatusExt;
    let mut status = 0;
    // SAFETY: rusage is plain integers, so all-zero is a valid value.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    loop {
        // SAFETY: wait4 writes only the status and rusage we pass, both
        // alive across the call; the pid is our own unreaped child (std's
        // Child has not waited for it), so no other process is affected.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut u) };
        if rc == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok((
        std::process::ExitStatus::from_raw(status),
        seconds(u.ru_utime) + seconds(u.ru_stime),
    ))
}

/// This process's peak resident set, MB (VmHWM: unlike wait4's ru_maxrss,
/// it starts afresh at exec, so a child does not inherit its parent's).
pub fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Pin the calling thread to `cpu` (nothing to do for `None`).
pub fn pin(cpu: Option<usize>) -> BenchResult {
    let Some(cpu) = cpu else {
        return Ok(());
    };
    if cpu >= rustix::thread::CpuSet::MAX_CPU {
        return Err(BenchError::fail(format!("-a: cannot pin to CPU {cpu}")));
    }
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set).map_err(|e| {
        BenchError::fail(format!(
            "-a: cannot pin to CPU {cpu}: {}",
            std::io::Error::from(e)
        ))
    })
}

/// CPUs online: all of the machine's, not this thread's (possibly pinned)
/// mask.
fn cpus_online() -> usize {
    // SAFETY: sysconf has no preconditions and touches no memory of ours.
    unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize
}

/// Parse `-a SEND,RECV`, checking the CPUs exist.
pub fn parse_affinity(a: &Option<String>) -> BenchResult<(Option<usize>, Option<usize>)> {
    let Some(s) = a else {
        return Ok((None, None));
    };
    let n = cpus_online();
    let one = |x: &str| -> BenchResult<usize> {
        let c: usize = x
            .trim()
            .parse()
            .map_err(|_| BenchError::usage(format!("-a {s:?}: expected SEND,RECV CPU numbers")))?;
        if c >= n {
            return Err(BenchError::usage(format!(
                "-a {s:?}: CPU {c} does not exist (this machine has {n})"
            )));
        }
        Ok(c)
    };
    let (x, y) = s
        .split_once(',')
        .ok_or_else(|| BenchError::usage(format!("-a {s:?}: expected SEND,RECV CPU numbers")))?;
    Ok((Some(one(x)?), Some(one(y)?)))
}

static STOP: AtomicBool = AtomicBool::new(false);

/// Ask running suites to finish early (the front calls this on Ctrl-C);
/// long loops check [`stopping`] and end their row cleanly.
pub fn request_stop() {
    STOP.store(true, Ordering::Relaxed);
}

/// Whether [`request_stop`] was called.
pub fn stopping() -> bool {
    STOP.load(Ordering::Relaxed)
}
