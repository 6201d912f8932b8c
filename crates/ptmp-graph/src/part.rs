//! One process of a graph (`ptmp graph part PLAN`): runs its nodes as
//! agents, keeps its status file current, and ends when told to (SIGINT or
//! SIGTERM from the supervisor), when every node that ends by itself has
//! ended (a source with a count, a sink with a count), or with a failure.
//!
//! The plan file ([`PartPlan`]) is written by the supervisor: `{graph,
//! process, run_dir, config}`, `config` being a ptmper configuration
//! ([`PartConfig`]) with every socket filled in. Exit status: 0 when the part finished (or its caller asked it
//! to stop), 128 + the signal's number when it stopped cleanly because of
//! a signal (SIGINT from the supervisor stopping the graph; any other, or
//! SIGINT the supervisor did not send, makes the supervisor restart it: a
//! part told to stop by someone else has not finished its input), 1 when a
//! node failed (the supervisor restarts it), 2 for a bad plan or a node
//! that failed for its configuration, which no restart can mend (see
//! [`ptmp_agents::Error::is_config`]; the supervisor stops the graph).

use crate::rundir::docs::{self, NodeReport, ProcessStatus, Sequence, SourceStart};
pub use crate::rundir::hold_file;
use crate::rundir::{self, ofile_marker, sequence_file};
use crate::status::{self, Rates};
use ptmp_agents::ptmper::RunConfig;
use ptmp_agents::{Ctl, Proxy, Running};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// A part's exit status for a bad plan or a configuration error: the
/// supervisor does not restart it.
pub const EXIT_CONFIG: i32 = 2;

/// The exit status of a part that stopped cleanly because of signal `sig`:
/// 128 + `sig`, as a shell reports a process a signal ended.
pub fn signal_exit(sig: i32) -> i32 {
    128 + sig
}

/// The signal a part's exit status `code` says it stopped for, if any
/// (see [`signal_exit`]).
pub fn stopped_by(code: i32) -> Option<i32> {
    (129..=128 + 64).contains(&code).then(|| code - 128)
}

/// A signal's name (`SIGTERM`), or its number when it has none.
pub fn signal_name(sig: i32) -> String {
    use rustix::process::Signal as S;
    const NAMES: [(S, &str); 22] = [
        (S::HUP, "SIGHUP"),
        (S::INT, "SIGINT"),
        (S::QUIT, "SIGQUIT"),
        (S::ILL, "SIGILL"),
        (S::TRAP, "SIGTRAP"),
        (S::ABORT, "SIGABRT"),
        (S::BUS, "SIGBUS"),
        (S::FPE, "SIGFPE"),
        (S::KILL, "SIGKILL"),
        (S::USR1, "SIGUSR1"),
        (S::SEGV, "SIGSEGV"),
        (S::USR2, "SIGUSR2"),
        (S::PIPE, "SIGPIPE"),
        (S::ALARM, "SIGALRM"),
        (S::TERM, "SIGTERM"),
        (S::XCPU, "SIGXCPU"),
        (S::XFSZ, "SIGXFSZ"),
        (S::VTALARM, "SIGVTALRM"),
        (S::PROF, "SIGPROF"),
        (S::IO, "SIGIO"),
        (S::POWER, "SIGPWR"),
        (S::SYS, "SIGSYS"),
    ];
    NAMES
        .iter()
        .find(|(s, _)| s.as_raw() == sig)
        .map_or_else(|| format!("signal {sig}"), |(_, n)| n.to_string())
}

/// How often a part rewrites its status file.
pub const STATUS_EVERY: Duration = Duration::from_millis(250);

pub use crate::rundir::docs::{
    Discovery, NodePlan, PartConfig, PartPlan, PlannedSocket, SocketPlan,
};

/// For a run taking over from a supervisor that died with its parts: each
/// source's start in the sequence files moves on by what the source's last
/// status said it had sent, and no longer names the pid, so that the new
/// run's sources go on counting (the status files are removed next). The
/// sequence directory's other files (the output files' marks) stay, so
/// its sinks append.
pub(crate) fn carry_counts(run_dir: &Path) {
    let dir = rundir::sequence_dir(run_dir);
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return;
    };
    for e in rd.flatten() {
        let path = e.path();
        let Some(process) = rundir::doc_process(&path).map(str::to_string) else {
            continue;
        };
        let Some(before) = read_doc::<Sequence>(&path) else {
            continue;
        };
        let st = read_doc(&status::status_file(run_dir, &process));
        let now: Sequence = before
            .iter()
            .map(|(name, prev)| {
                let first = resumed_at(name, Some(prev), st.as_ref()).unwrap_or(0);
                (name.clone(), SourceStart { first, pid: None })
            })
            .collect();
        let _ = docs::write(&path, &now);
    }
}

/// A run-directory document, `None` when it is missing or unreadable.
fn read_doc<T: serde::de::DeserializeOwned>(p: &Path) -> Option<T> {
    docs::read(p, crate::rundir::STATUS_LIMIT).ok().flatten()
}

/// Where source `name` goes on counting: where it started (`prev`, its
/// sequence entry), plus what its last status `st` says it sent when that
/// status is the same life's (the pids match; otherwise that life died
/// before its first status and its sends are unknown, and few). `None`
/// when its sequence entry has no start.
fn resumed_at(name: &str, prev: Option<&SourceStart>, st: Option<&ProcessStatus>) -> Option<u64> {
    let prev = prev?;
    let Some(st) = st.filter(|st| prev.pid.is_some_and(|p| p == st.pid)) else {
        return Some(prev.first);
    };
    let out = st.node(name).map_or(0, |n| n.sent);
    Some(prev.first.saturating_add(out))
}

/// Where each source of this process starts counting. A process that ran
/// before in this run (it crashed and is restarted) left its sources' last
/// counts in its status file (sent so far, at most a status interval old)
/// and where they started in its sequence file; each source goes on from
/// their sum, so its sequence continues rather than starting again at 0.
/// Numbers sent in the last moments before the crash may be sent again;
/// the nodes downstream drop those they already had (`dedup`). Records
/// the starts, with our pid, for the next restart.
pub(crate) fn continue_counts(plan: &PartPlan, config: &mut PartConfig) {
    let seq = sequence_file(&plan.run_dir, &plan.process);
    let before: Sequence = read_doc(&seq).unwrap_or_default();
    let st: Option<ProcessStatus> = read_doc(&status::status_file(&plan.run_dir, &plan.process));
    let mut now = Sequence::new();
    for p in config.proxies.iter_mut().filter(|p| p.kind == "source") {
        let first = resumed_at(&p.name, before.get(&p.name), st.as_ref())
            .or_else(|| p.first_count())
            .unwrap_or(0);
        p.set_first_count(first);
        let pid = Some(std::process::id());
        now.insert(p.name.clone(), SourceStart { first, pid });
    }
    if now.is_empty() {
        return;
    }
    if seq
        .parent()
        .is_some_and(|d| crate::rundir::make_private(d).is_ok())
    {
        let _ = docs::write(&seq, &now);
    }
}

/// A sink or czmqat writing an `ofile` that a node of this run opened
/// before (its process crashed, or was restarted by the supervisor or by
/// `ptmp graph apply`) appends to it (`"append": true`), so nothing
/// written earlier in the run is lost; the first opening in a run starts
/// the file anew, as a lone `ptmp run` does.
pub(crate) fn continue_ofiles(plan: &PartPlan, config: &mut PartConfig) {
    for p in config
        .proxies
        .iter_mut()
        .filter(|p| p.kind == "sink" || p.kind == "czmqat")
    {
        let Some(f) = p.ofile() else {
            continue;
        };
        let marker = ofile_marker(&plan.run_dir, Path::new(f));
        if let Some(d) = marker.parent() {
            let _ = std::fs::create_dir_all(d);
        }
        let first = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&marker)
            .is_ok();
        if !first {
            p.set_append();
        }
    }
}

/// Give every shm reader identity of the part's sockets the run's token
/// ([`crate::rundir::reader_token`]), binding the identities to this run.
pub(crate) fn lock_reader_ids(plan: &PartPlan, config: &mut PartConfig) -> crate::Result<()> {
    let token = crate::rundir::reader_token(&plan.run_dir)?;
    for p in &mut config.proxies {
        p.set_reader_token(&token);
    }
    Ok(())
}

/// Run the part until it ends, or until `stop()` is true (which ends it
/// as finished, exit 0); returns the exit status.
pub fn run(plan: &PartPlan, stop: &dyn Fn() -> bool, log: &mut dyn Write) -> i32 {
    run_until(plan, &|| stop().then_some(0), log)
}

/// Run the part until it ends, or until `stop()` gives a signal's number
/// (or 0: asked to stop by other means, which ends it as finished);
/// returns the exit status, [`signal_exit`] of that signal after a clean
/// stop, so its supervisor can tell a part that finished from one that
/// was told to stop.
pub fn run_until(plan: &PartPlan, stop: &dyn Fn() -> Option<i32>, log: &mut dyn Write) -> i32 {
    let who = format!("{}/{}", plan.graph, plan.process);
    let mut config = plan.config.clone();
    continue_counts(plan, &mut config);
    continue_ofiles(plan, &mut config);
    // A token that cannot be read or made is not mended by a restart.
    if let Err(e) = lock_reader_ids(plan, &mut config) {
        let _ = writeln!(log, "{who}: {e}");
        return EXIT_CONFIG;
    }
    let rc = match RunConfig::parse(&config.to_value()) {
        Ok(rc) => rc,
        Err(e) => {
            let _ = writeln!(log, "{who}: {e}");
            return EXIT_CONFIG;
        }
    };
    // A part (re)started while a hold is asked for starts held.
    let hfile = hold_file(&plan.run_dir, &plan.process);
    let mut held = hfile.exists();
    ptmp_agents::hold_outputs(held);
    let leaves: Vec<&Proxy> = rc.proxies.iter().flat_map(|p| p.leaves()).collect();
    let finite: Vec<usize> = (0..leaves.len()).filter(|&i| leaves[i].finite()).collect();
    let order = ptmp_agents::upstream_first(&leaves);
    let mut agents = Vec::new();
    for p in &rc.proxies {
        match p.build() {
            Ok(a) => agents.extend(a),
            Err(e) => {
                let _ = writeln!(log, "{who}: {e}");
                return if e.is_config() { EXIT_CONFIG } else { 1 };
            }
        }
    }
    let mut running = match Running::start(agents, &Ctl::new(rc.verbose)) {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(log, "{who}: cannot start threads: {e}");
            return 1;
        }
    };
    let sfile = status::status_file(&plan.run_dir, &plan.process);
    let mut rates = Rates::new();
    let mut next_status = Instant::now();
    let write_status = |running: &Running, rates: &mut Rates, held: bool| {
        let c = running.counts();
        let counts: Vec<(u64, u64)> = c.iter().map(|x| x.1).collect();
        let r = rates.update(&counts);
        let nodes: Vec<_> = c
            .iter()
            .zip(r)
            .map(|((n, io, ended), rate)| (n.to_string(), *io, *ended, rate))
            .collect();
        let mut doc = status::document(&plan.graph, &plan.process, &nodes, None);
        doc.held = held;
        let _ = crate::rundir::docs::write(&sfile, &doc);
    };
    let mut signalled = None;
    let reason = loop {
        if let Some(sig) = stop() {
            signalled = (sig > 0).then_some(sig);
            if sig > 0 && sig != rustix::process::Signal::INT.as_raw() {
                // Not the supervisor's stop (it sends SIGINT): this part
                // will be started again, and its successor resumes where
                // its durable readers are.
                ptmp_shm::keep_durable_places();
            }
            break "stopped";
        }
        if running.any_failed_early() {
            break "a node failed";
        }
        if !finite.is_empty() && finite.iter().all(|&i| running.ended(i)) {
            break "finished";
        }
        if running.alive() == 0 {
            break "finished";
        }
        // A hold asked for or ended: take it and say so at once (the
        // supervisor waits for the word before it stops what we feed).
        if hfile.exists() != held {
            held = !held;
            ptmp_agents::hold_outputs(held);
            write_status(&running, &mut rates, held);
        }
        if Instant::now() >= next_status {
            write_status(&running, &mut rates, held);
            next_status += STATUS_EVERY;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    match signalled {
        Some(sig) => {
            let _ = writeln!(log, "{who}: stopping: {reason} by {}", signal_name(sig));
        }
        None => {
            let _ = writeln!(log, "{who}: stopping: {reason}");
        }
    }
    // Stopping drains: what the agents hold goes on downstream.
    ptmp_agents::hold_outputs(false);
    let handles = running.count_handles();
    let results = running.stop_in_order(&order);
    let mut failed = reason == "a node failed";
    let mut config_error = false;
    let mut reports = Vec::new();
    let mut out = std::io::stdout().lock();
    for (name, r) in &results {
        match r {
            Ok(rep) => {
                let _ = writeln!(out, "[{}] {rep}", plan.process);
                reports.push(NodeReport::ended(name, rep.kind, &rep.counters, &rep.lines));
            }
            Err(e) => {
                failed = true;
                config_error |= e.is_config();
                let _ = writeln!(log, "{who}: {e}");
                reports.push(NodeReport::failed(name, e.to_string()));
            }
        }
    }
    let _ = out.flush();
    // The final document: counts after the drain.
    let nodes: Vec<_> = handles
        .into_iter()
        .map(|(n, c)| (n, c.get(), true, (0.0, 0.0)))
        .collect();
    let doc = status::document(&plan.graph, &plan.process, &nodes, Some(reports));
    let _ = crate::rundir::docs::write(&sfile, &doc);
    match (failed, config_error) {
        (_, true) => EXIT_CONFIG,
        (true, false) => 1,
        _ => signalled.map_or(0, signal_exit),
    }
}
