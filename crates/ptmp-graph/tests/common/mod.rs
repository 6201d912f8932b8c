//! What the graph scenario tests (`apply.rs`, `leftovers.rs`,
//! `part_deaths.rs`) share. Each of those binaries is its own test runner
//! (no libtest harness, see [`main`]) and also every command the library
//! starts, so neither the `ptmp` command nor Python is needed:
//!
//! * `BINARY part PLAN` runs one part as `ptmp graph part` does. A part
//!   whose process is named `doomed...` kills itself with SIGKILL
//!   [`DOOMED_AFTER`] into every start: a part that keeps dying. One named
//!   `stubborn...` ignores SIGTERM and SIGHUP (it stops only for SIGINT,
//!   its supervisor's stop): a part that outlives its supervisor.
//! * `BINARY supervise GRAPH.json RUN_DIR` runs a supervisor as `ptmp
//!   graph run` does, until SIGINT or SIGTERM, so a test can kill one.
//!
//! Each part also appends its log to `$PTMP_GRAPH_TEST_LOGS/GRAPH.PROCESS.log`
//! (the runner sets the variable), so a test can read what a part said.
//!
//! A graph whose edges go by name is not among these scenarios: its parts
//! find each other by presence over multicast DNS, which needs hosts of
//! their own (network namespaces on a bridge, made as root) and the
//! presence the `ptmp` command starts around a part. It is tested through
//! the command, host by host, in `ptmp-cli/tests/graph_by_name.rs`.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use ptmp::data::{decode_tpset, Frames};
use ptmp_formats::dump::DumpReader;
use ptmp_graph::{part, status, supervise};
use rustix::process::Signal;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest any one wait of a test may take.
pub const LIMIT: Duration = Duration::from_secs(20);

/// How long a `doomed` part runs before it kills itself.
pub const DOOMED_AFTER: Duration = Duration::from_millis(400);

/// Where the parts append their logs.
const LOGS_ENV: &str = "PTMP_GRAPH_TEST_LOGS";

/// A test: its name and its body, given a directory of its own.
pub type Test = (&'static str, fn(&Path));

/// The binary's entry: a part or a supervisor when asked to be one (see
/// the module's documentation), else the runner of `tests` (those whose
/// name contains an argument not starting with `-`, or all), each in a
/// fresh directory; a failed test does not stop the others, and any
/// failure makes the exit status 1.
pub fn main(tests: &[Test]) {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("part") => std::process::exit(run_part(Path::new(&args[2]))),
        Some("supervise") => {
            std::process::exit(run_supervisor(Path::new(&args[2]), Path::new(&args[3])))
        }
        _ => {}
    }
    // Each run its own user directory (the graph locks go there) and its
    // own place for the parts' logs.
    let d = tempfile::tempdir().unwrap();
    std::env::set_var("XDG_RUNTIME_DIR", d.path());
    std::env::set_var(LOGS_ENV, d.path());
    let only: Vec<&String> = args
        .iter()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let mut failed = Vec::new();
    for &(name, t) in tests {
        if !only.is_empty() && !only.iter().any(|o| name.contains(o.as_str())) {
            continue;
        }
        eprintln!("test {name} ...");
        let dir = tempfile::tempdir_in(d.path()).unwrap();
        let t0 = Instant::now();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t(dir.path())));
        let verdict = if r.is_ok() { "ok" } else { "FAILED" };
        eprintln!("test {name} ... {verdict} ({:.1?})", t0.elapsed());
        if r.is_err() {
            failed.push(name);
        }
    }
    if !failed.is_empty() {
        eprintln!("failed: {}", failed.join(", "));
        std::process::exit(1);
    }
}

/// Writes to both.
struct Tee<A, B>(A, B);

impl<A: Write, B: Write> Write for Tee<A, B> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.write_all(b)?;
        self.1.write_all(b)?;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()?;
        self.1.flush()
    }
}

/// Where the part of `process` of graph `graph` appends its log.
fn part_log_path(graph: &str, process: &str) -> PathBuf {
    let dir = std::env::var_os(LOGS_ENV).unwrap_or_else(|| std::env::temp_dir().into());
    Path::new(&dir).join(format!("{graph}.{process}.log"))
}

/// Everything the parts of `process` of graph `graph` have logged so far.
pub fn part_log(graph: &str, process: &str) -> String {
    std::fs::read_to_string(part_log_path(graph, process)).unwrap_or_default()
}

/// Flags set by SIGINT and SIGTERM, read as [`part::run_until`] wants: the
/// signal's number once one came. With `stubborn`, SIGTERM and SIGHUP are
/// caught and ignored.
fn stop_signals(stubborn: bool) -> impl Fn() -> Option<i32> {
    let int = Arc::new(AtomicBool::new(false));
    let term = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, int.clone()).unwrap();
    if stubborn {
        let ignored = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
            signal_hook::flag::register(sig, ignored.clone()).unwrap();
        }
    } else {
        signal_hook::flag::register(signal_hook::consts::SIGTERM, term.clone()).unwrap();
    }
    move || {
        if int.load(Ordering::Relaxed) {
            Some(Signal::INT.as_raw())
        } else if term.load(Ordering::Relaxed) {
            Some(Signal::TERM.as_raw())
        } else {
            None
        }
    }
}

/// One part, as `ptmp graph part` runs it: until its nodes end or a signal
/// stops it (its exit status then says which signal).
fn run_part(plan: &Path) -> i32 {
    let pp = match part::PartPlan::read(plan) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return part::EXIT_CONFIG;
        }
    };
    let stop = stop_signals(pp.process.starts_with("stubborn"));
    if pp.process.starts_with("doomed") {
        std::thread::spawn(|| {
            std::thread::sleep(DOOMED_AFTER);
            supervise::send_signal(std::process::id() as i32, Signal::KILL);
        });
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(part_log_path(&pp.graph, &pp.process))
        .unwrap();
    let mut log = Tee(std::io::stderr(), file);
    part::run_until(&pp, &stop, &mut log)
}

/// A supervisor, as `ptmp graph run GRAPH --run-dir RUN_DIR` runs one:
/// exit 0 when the graph ended well, 1 when not, 2 when it did not start.
fn run_supervisor(graph: &Path, run_dir: &Path) -> i32 {
    let v: Value = serde_json::from_slice(&std::fs::read(graph).unwrap()).unwrap();
    let (g, plan) = match ptmp_graph::load(&v, "g", Some(run_dir)) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    let stop = stop_signals(false);
    let opts = options(Duration::from_secs(10));
    let mut log = std::io::stderr();
    match supervise::run(&g, &plan, &opts, &|| stop().is_some(), &|| false, &mut log) {
        Ok(o) => {
            eprintln!("outcome: {o:?}");
            i32::from(!o.ok)
        }
        Err(e) => {
            eprintln!("{e}");
            2
        }
    }
}

/// Supervision through this binary's parts, a stopped part given
/// `stop_timeout`.
pub fn options(stop_timeout: Duration) -> supervise::Options {
    supervise::Options {
        part_command: vec![std::env::current_exe().unwrap().into(), "part".into()],
        stop_timeout,
        ..Default::default()
    }
}

/// A log many threads may write and read.
#[derive(Clone, Default)]
pub struct SharedLog(Arc<Mutex<Vec<u8>>>);

impl SharedLog {
    /// What was written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl Write for SharedLog {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

type Run = ptmp_graph::Result<supervise::Outcome>;

/// A supervisor running in a thread of the test ([`supervise::run`]),
/// told to stop (and waited for, bounded) if the test fails first.
pub struct Supervisor {
    /// The run directory.
    pub run_dir: PathBuf,
    stop: Arc<AtomicBool>,
    log: SharedLog,
    thread: Option<JoinHandle<Run>>,
}

impl Supervisor {
    /// Load graph `v` for `run_dir` and run it with `opts`.
    pub fn start(v: &Value, run_dir: &Path, opts: supervise::Options) -> Supervisor {
        let (g, plan) = ptmp_graph::load(v, "g", Some(run_dir)).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let log = SharedLog::default();
        let (s, mut l) = (stop.clone(), log.clone());
        let thread = std::thread::spawn(move || {
            let stop = || s.load(Ordering::Relaxed);
            supervise::run(&g, &plan, &opts, &stop, &|| false, &mut l)
        });
        Supervisor {
            run_dir: run_dir.to_path_buf(),
            stop,
            log,
            thread: Some(thread),
        }
    }

    /// The supervisor's log so far.
    pub fn log(&self) -> String {
        self.log.text()
    }

    /// Wait up to [`LIMIT`] for `f` to give a value; fails, with the log,
    /// when the time is up or the supervisor ends first.
    #[track_caller]
    pub fn wait_for<T>(&self, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        let t = Instant::now();
        loop {
            if let Some(x) = f() {
                return x;
            }
            let ended = self.thread.as_ref().is_none_or(JoinHandle::is_finished);
            assert!(
                !ended && t.elapsed() < LIMIT,
                "waited {:.1?} for {what}; the supervisor {}\n{}",
                t.elapsed(),
                if ended { "ended" } else { "runs on" },
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The pid of `process`'s part, as the supervisor last published it.
    pub fn pid(&self, process: &str) -> u32 {
        self.wait_for(&format!("a pid for {process}"), || {
            status::read_processes(&self.run_dir)?.process(process)?.pid
        })
    }

    /// Wait up to `limit` for the run to end by itself; gives how it ended
    /// and the log.
    #[track_caller]
    pub fn ended(mut self, limit: Duration) -> (supervise::Outcome, String) {
        let t = Instant::now();
        while !self.thread.as_ref().unwrap().is_finished() {
            assert!(
                t.elapsed() < limit,
                "the graph still runs after {limit:?}\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        self.join()
    }

    /// Stop the run as SIGINT would, and wait for its end.
    pub fn stop(mut self) -> (supervise::Outcome, String) {
        self.stop.store(true, Ordering::Relaxed);
        self.ended_within(LIMIT);
        self.join()
    }

    fn ended_within(&self, limit: Duration) -> bool {
        let t = Instant::now();
        while self.thread.as_ref().is_some_and(|h| !h.is_finished()) {
            if t.elapsed() >= limit {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    fn join(&mut self) -> (supervise::Outcome, String) {
        let r = self.thread.take().unwrap().join().unwrap();
        let log = self.log();
        match r {
            Ok(o) => (o, log),
            Err(e) => panic!("the supervisor failed: {e}\n{log}"),
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if self.ended_within(Duration::from_secs(30)) {
            if let Some(h) = self.thread.take() {
                let _ = h.join();
            }
        }
    }
}

/// A process this test started (a supervisor) or one of a graph run's
/// parts, killed with SIGKILL when the test ends (a part only while its
/// command line still names this test's binary and a plan file, so a
/// recycled pid is never signalled).
pub enum Owned {
    /// Our child, reaped when dropped.
    Child(Child),
    /// A part whose supervisor is gone.
    Part(i32),
}

impl Drop for Owned {
    fn drop(&mut self) {
        match self {
            Owned::Child(c) => {
                let _ = c.kill();
                let _ = c.wait();
            }
            Owned::Part(pid) => {
                let exe = std::env::current_exe().unwrap();
                let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let ours = cmd
                    .split(|&b| b == 0)
                    .any(|a| a == exe.as_os_str().as_encoded_bytes());
                if ours && alive(*pid) {
                    supervise::send_signal(*pid, Signal::KILL);
                }
            }
        }
    }
}

/// Whether `pid` runs (neither gone nor a zombie).
pub fn alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next())
        .is_some_and(|s| s != "Z" && s != "X")
}

/// Wait up to [`LIMIT`] for `f` to give a value.
#[track_caller]
pub fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let t = Instant::now();
    loop {
        if let Some(x) = f() {
            return x;
        }
        assert!(t.elapsed() < LIMIT, "waited {LIMIT:?} for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The files of graph `graph`'s shm rings in the shm directory.
pub fn rings_left(graph: &str) -> Vec<String> {
    let prefix = format!("ptmp.{graph}.");
    std::fs::read_dir(ptmp_shm::shm_dir())
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// Removes graph `.0`'s shm rings when dropped, whatever a test left.
pub struct Sweep(pub String);

impl Drop for Sweep {
    fn drop(&mut self) {
        for f in rings_left(&self.0) {
            let _ = std::fs::remove_file(ptmp_shm::shm_dir().join(f));
        }
    }
}

/// A graph name unique to this run of this binary: `tag` and our pid.
pub fn unique(tag: &str) -> String {
    format!("{tag}{}", std::process::id())
}

/// The (count, detid) of every set in dump file `f`, in file order.
pub fn sets(f: &Path) -> Vec<(u64, u32)> {
    let Ok(file) = std::fs::File::open(f) else {
        return vec![];
    };
    let mut r = DumpReader::new(std::io::BufReader::new(file));
    let mut fr = Frames::new();
    let mut v = Vec::new();
    while let Ok(true) = r.read_into(&mut fr) {
        let s = decode_tpset(fr.get(1).unwrap()).unwrap();
        v.push((u64::from(s.count), s.detid));
    }
    v
}

/// Whether each count is larger than the one before: no set twice, none
/// out of order.
pub fn increasing(sets: &[(u64, u32)]) -> bool {
    sets.windows(2).all(|w| w[0].0 < w[1].0)
}
