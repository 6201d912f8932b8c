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

/// What a side of a benchmark asked of the kernel so far: system calls (when
/// the kernel lets us count them) and context switches.
#[derive(Debug, Clone, Copy, Default)]
pub struct Kernel {
    /// System calls entered, `None` where they cannot be counted.
    pub syscalls: Option<u64>,
    /// Voluntary context switches (sleeps: futex waits, blocking reads).
    pub voluntary: u64,
    /// Involuntary ones (preemptions).
    pub involuntary: u64,
}

impl Kernel {
    /// What happened between `self` (earlier) and `later`.
    pub fn since(self, later: Kernel) -> Kernel {
        Kernel {
            syscalls: later
                .syscalls
                .zip(self.syscalls)
                .map(|(b, a)| b.saturating_sub(a)),
            voluntary: later.voluntary.saturating_sub(self.voluntary),
            involuntary: later.involuntary.saturating_sub(self.involuntary),
        }
    }

    /// Context switches of both kinds.
    pub fn switches(&self) -> u64 {
        self.voluntary + self.involuntary
    }
}

/// The first 64 bytes of the kernel's `perf_event_attr` (its version 0
/// size), which is all a counting tracepoint event needs.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const PERF_TYPE_TRACEPOINT: u32 = 2;
/// `perf_event_attr.inherit`: count threads created after opening too.
const PERF_FLAG_INHERIT: u64 = 1 << 1;

/// A counter of the system calls this thread makes (and, with `inherit`,
/// the threads it starts afterwards, counted once they have exited), read
/// from the kernel's `raw_syscalls:sys_enter` tracepoint with
/// perf_event_open. Needs tracefs and the right to trace this process
/// (root, CAP_PERFMON, or a permissive `perf_event_paranoid`); without them
/// the count is `None` and tables print "-".
pub struct Syscalls {
    fd: Option<std::os::fd::OwnedFd>,
}

impl Syscalls {
    /// Open the counter (never fails: `None` counts then).
    pub fn open(inherit: bool) -> Syscalls {
        use std::os::fd::FromRawFd;
        let id = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
            .iter()
            .find_map(|d| {
                std::fs::read_to_string(format!("{d}/events/raw_syscalls/sys_enter/id"))
                    .ok()
                    .and_then(|s| s.trim().parse::<u64>().ok())
            });
        let Some(id) = id else {
            return Syscalls { fd: None };
        };
        let attr = PerfEventAttr {
            kind: PERF_TYPE_TRACEPOINT,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: id,
            flags: if inherit { PERF_FLAG_INHERIT } else { 0 },
            ..Default::default()
        };
        // SAFETY: perf_event_open reads `attr`, which lives across the call
        // and whose `size` says how much of it there is; pid 0 and cpu -1
        // count this thread wherever it runs; it touches no other memory.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const PerfEventAttr,
                0,
                -1,
                -1,
                0,
            )
        };
        if fd < 0 {
            return Syscalls { fd: None };
        }
        // SAFETY: the kernel just gave us this descriptor, owned by nobody
        // else.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) };
        Syscalls { fd: Some(fd) }
    }

    /// System calls counted so far.
    pub fn read(&self) -> Option<u64> {
        use std::io::Read;
        let fd = self.fd.as_ref()?;
        let mut b = [0u8; 8];
        let mut f = std::fs::File::from(fd.try_clone().ok()?);
        f.read_exact(&mut b).ok()?;
        Some(u64::from_ne_bytes(b))
    }
}

/// Context switches so far, of this thread (`thread`) or of the whole
/// process, from getrusage.
pub fn switches(thread: bool) -> (u64, u64) {
    // SAFETY: rusage is plain integers, so all-zero is a valid value.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    let who = if thread {
        libc::RUSAGE_THREAD
    } else {
        libc::RUSAGE_SELF
    };
    // SAFETY: getrusage only writes the struct we pass, which lives across
    // the call.
    unsafe { libc::getrusage(who, &mut u) };
    (u.ru_nvcsw as u64, u.ru_nivcsw as u64)
}

/// A snapshot of [`Kernel`] counts: `counter` for system calls, context
/// switches of this thread or the whole process.
pub fn kernel(counter: &Syscalls, thread: bool) -> Kernel {
    let (voluntary, involuntary) = switches(thread);
    Kernel {
        syscalls: counter.read(),
        voluntary,
        involuntary,
    }
}
