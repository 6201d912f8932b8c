//! `ptmp graph run`: start this host's processes of a graph, supervise
//! them, stop them.
//!
//! * Each process runs as a child `ptmp graph part PLAN` in a process group
//!   of its own (a terminal's Ctrl-C reaches only the supervisor, which then
//!   stops the parts in order) and dies with the supervisor
//!   (PR_SET_PDEATHSIG), so no part outlives it.
//! * A part that exits non-zero, is killed by a signal, or stops cleanly
//!   for a signal the supervisor did not send (its exit status says which,
//!   see [`crate::part::signal_exit`]: it was told to stop by someone else,
//!   so it has not finished its input) is restarted after
//!   `restart.backoff_ms`, at most `restart.max` times; it rebinds the same
//!   addresses, so its peers (zmq reconnects, shm takes over the ring)
//!   carry on with it. A part that exits 2 failed for its configuration
//!   (an shm ring that does not fit, an ipc path that is not a socket):
//!   a restart would fail the same way, so the graph is stopped instead,
//!   the part's error said once.
//! * The run ends on SIGINT/SIGTERM, after `ttl`, or when every process
//!   that ends by itself has exited cleanly (a counted source and sink);
//!   the remaining parts are then stopped upstream first, each given time to
//!   drain, and the graph's shm rings are removed.
//! * Only one supervisor runs per run directory (`supervisor.pid`, locked;
//!   see [`crate::rundir`]), and each run starts clean of what an earlier
//!   one left.
//! * `ptmp graph apply` changes the running graph (see
//!   [`crate::reconfig`]): processes whose configuration did not change are
//!   left alone; the others are stopped upstream first, each draining, while
//!   the unchanged processes feeding them hold their outputs (asked
//!   through a hold file, see [`crate::part::hold_file`]; SIGSTOP for a
//!   part that does not answer), so what they have stays in their agents,
//!   queues and rings; then the new ones are started downstream first and
//!   the held ones released.

mod apply;
mod leftovers;

use crate::part::PartPlan;
use crate::plan::Plan;
use crate::reconfig::{self, Refusal};
use crate::status;
use crate::{Error, Graph, Result};
use apply::Apply;
use rustix::process::{Pid, Signal};

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// How long the supervisor waits for a starting part to report before it
/// starts the next one anyway.
pub const READY_WAIT: Duration = Duration::from_secs(5);

/// How [`run`] starts, watches and stops the processes.
pub struct Options {
    /// The command that runs one part, the plan's path appended: `ptmp
    /// graph part` for the CLI, `python -m ptmp._part` for Python.
    pub part_command: Vec<OsString>,
    /// The host whose processes to run; may be omitted when the graph has
    /// one host.
    pub host: Option<String>,
    /// Print the status table this often.
    pub status_every: Option<Duration>,
    /// Stop the graph after this long; `None` runs until interrupted or
    /// until every finite process has finished.
    pub ttl: Option<Duration>,
    /// How long a stopped part may take before it is killed.
    pub stop_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            part_command: vec!["ptmp".into(), "graph".into(), "part".into()],
            host: None,
            status_every: None,
            ttl: None,
            stop_timeout: Duration::from_secs(15),
        }
    }
}

/// How a [`run`] ended.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Why the graph stopped, e.g. "interrupted" or "ttl reached".
    pub reason: String,
    /// Restarts per process (this host's processes).
    pub restarts: Vec<(String, u32)>,
    /// False when the graph gave up on a process or a part failed to stop
    /// cleanly.
    pub ok: bool,
    /// True when it gave up because a process refused its configuration
    /// (exit [`crate::part::EXIT_CONFIG`]): running it again cannot help,
    /// so whoever restarts the graph (systemd, Slurm) must not.
    pub config_error: bool,
    /// Sets lost per edge (index into [`Graph::edges`]), from the gaps in
    /// the numbers its receiving node saw: for each edge into a node that
    /// receives whole streams and drops repeats, what that node is missing
    /// less what the node feeding it was already missing. Edges whose
    /// receiving node could not tell are left out.
    pub lost: Vec<(usize, u64)>,
}

struct Proc {
    index: usize,
    name: String,
    plan_path: PathBuf,
    child: Option<Child>,
    restarts: u32,
    restart_at: Option<Instant>,
    exited_clean: bool,
    finite: bool,
    /// It exited refusing its configuration.
    refused_config: bool,
}

fn spawn(cmd: &[OsString], plan: &Path) -> std::io::Result<Child> {
    let (prog, args) = cmd.split_first().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty part command")
    })?;
    let mut c = Command::new(prog);
    c.args(args).arg(plan).process_group(0);
    // SAFETY: the hook runs in the forked child before exec, where only
    // async-signal-safe work is allowed: it makes one prctl system call
    // (rustix issues it directly, with no allocation or lock) and touches no
    // state shared with the parent.
    unsafe {
        c.pre_exec(|| {
            // Best effort, as before: a part that cannot have it still runs.
            let _ = rustix::process::set_parent_process_death_signal(Some(Signal::TERM));
            Ok(())
        });
    }
    c.spawn()
}

fn describe(s: ExitStatus) -> String {
    use crate::part::{signal_name, stopped_by};
    match (s.code(), s.signal()) {
        (Some(c), _) => match stopped_by(c) {
            Some(sig) => format!(
                "stopped by {}, which the supervisor did not send (exit status {c})",
                signal_name(sig)
            ),
            None => format!("exit status {c}"),
        },
        (None, Some(sig)) => format!("killed by {}", signal_name(sig)),
        _ => s.to_string(),
    }
}

/// Send `sig` to process `pid` (a child of ours), ignoring failure: a child
/// that has exited meanwhile needs no signal. Non-positive pids, which would
/// name process groups, are ignored.
pub fn send_signal(pid: i32, sig: Signal) {
    if let Some(p) = Pid::from_raw(pid.max(0)) {
        let _ = rustix::process::kill_process(p, sig);
    }
}

/// Run this host's part of `g` as wired by `plan`. `stop` and `status_now`
/// are polled (signal flags; `status_now` is expected to clear itself).
pub fn run(
    g: &Graph,
    plan: &Plan,
    opts: &Options,
    stop: &dyn Fn() -> bool,
    status_now: &dyn Fn() -> bool,
    log: &mut dyn Write,
) -> Result<Outcome> {
    run_telling(g, plan, opts, stop, status_now, log, &mut |_, _, _| {})
}

/// [`run`], calling `applied` with the new graph, plan and this host's
/// index in it each time `ptmp graph apply` changes the running graph
/// (before the apply is answered), so that a live view can follow it.
pub fn run_telling(
    g: &Graph,
    plan: &Plan,
    opts: &Options,
    stop: &dyn Fn() -> bool,
    status_now: &dyn Fn() -> bool,
    log: &mut dyn Write,
    applied: &mut dyn FnMut(&Graph, &Plan, usize),
) -> Result<Outcome> {
    // Owned: `ptmp graph apply` replaces both while the graph runs.
    let (mut g, mut plan) = (g.clone(), plan.clone());
    let mut host = match &opts.host {
        Some(h) => g.host_index(h)?,
        None if g.hosts.len() == 1 => 0,
        None => {
            return Err(g.err(format!(
                "the graph spans hosts {}: say which this is with --host",
                g.host_names()
            )))
        }
    };
    let gname = g.name.clone();
    let run_err = |what: &str, e: std::io::Error| Error::Run(format!("graph {gname}: {what}: {e}"));
    let dir = plan.run_dir.clone();
    let dir = &dir;
    crate::rundir::prepare(dir, &g.name)?;
    // The locks first: a supervisor refused here has touched nothing.
    let lock = crate::rundir::lock(dir, &g.name)?;
    let _graph_lock = crate::rundir::lock_graph(&g.name, &g.hosts[host].name, dir)?;
    crate::curve::prepare(&g, dir)?;
    for s in leftovers::clear(&g, &plan, host, lock.stale, opts.stop_timeout) {
        let _ = writeln!(log, "graph {}: {s}", g.name);
    }
    crate::plan::check_shm_space(&g, &plan, host)?;
    // Hold requests an earlier supervisor left (it died during an apply).
    let _ = std::fs::remove_dir_all(crate::rundir::hold_dir(dir));
    let procs = write_plans(&g, &plan, host, dir);
    let mut procs = match procs {
        Ok(p) if !p.is_empty() => p,
        Ok(_) => {
            drop(lock);
            return Err(Error::Invalid {
                graph: g.name.clone(),
                msg: format!("no process is placed on host {}", g.hosts[host].name),
            });
        }
        Err((what, e)) => return Err(run_err(&what, e)),
    };
    // Start downstream first, each part running (its first status file
    // written) before the next starts, so receivers are up when sources
    // begin and a source's clock does not count its peers' start-up.
    for p in procs.iter_mut().rev() {
        let c = start_ready(&opts.part_command, p, dir, stop, &g.name, log)
            .map_err(|e| run_err("start a part", e))?;
        p.child = Some(c);
    }
    let mut shown = Vec::new();
    publish_states(dir, &procs, false, &mut shown);
    let t0 = Instant::now();
    let mut next_status = opts.status_every.map(|d| t0 + d);
    let mut out = Outcome {
        ok: true,
        ..Default::default()
    };
    out.reason = loop {
        let any_finite = procs.iter().any(|p| p.finite);
        if stop() {
            break "interrupted".into();
        }
        if opts.ttl.is_some_and(|t| t0.elapsed() >= t) {
            break "ttl reached".into();
        }
        let mut gave_up = None;
        for p in procs.iter_mut() {
            if let Some(why) = tend(p, &g, opts, log)? {
                gave_up = Some(why);
            }
        }
        publish_states(dir, &procs, false, &mut shown);
        if let Some(why) = gave_up {
            out.ok = false;
            out.config_error = procs.iter().any(|p| p.refused_config);
            break why;
        }
        if let Some(req) = reconfig::take(dir) {
            match req {
                Err(e) => {
                    let _ = writeln!(log, "graph {}: ignored an apply request: {e}", g.name);
                }
                Ok(req) => {
                    let mut cx = Apply {
                        g: &mut g,
                        plan: &mut plan,
                        host: &mut host,
                        procs: &mut procs,
                    };
                    let reply = cx.apply(&req, opts, stop, log);
                    // A change made with problems is still made.
                    if !req.dry_run && matches!(reply.refused, None | Some(Refusal::Failed)) {
                        applied(&g, &plan, host);
                    }
                    reconfig::answer(dir, &req.id, &reply);
                    publish_states(dir, &procs, false, &mut shown);
                }
            }
        }
        if any_finite && procs.iter().filter(|p| p.finite).all(|p| p.exited_clean) {
            break "finished".into();
        }
        if procs.iter().all(|p| p.exited_clean) {
            break "every process ended".into();
        }
        let due = next_status.is_some_and(|t| Instant::now() >= t);
        if status_now() || due {
            log_table(dir, log);
            if let (Some(t), Some(d)) = (&mut next_status, opts.status_every) {
                while *t <= Instant::now() {
                    *t += d;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = writeln!(log, "graph {}: stopping: {}", g.name, out.reason);
    for p in procs.iter_mut() {
        if !stop_part(p, opts, &g.name, log) {
            out.ok = false;
        }
    }
    // Rings and ipc socket files this host's processes bound.
    leftovers::remove_bound(&g, &plan, host);
    publish_states(dir, &procs, true, &mut shown);
    out.lost = edge_losses(&g, dir);
    log_losses(&g, &out.lost, log);
    out.restarts = procs
        .iter()
        .map(|p| (g.processes[p.index].name.clone(), p.restarts))
        .collect();
    drop(lock);
    Ok(out)
}

/// Write every node's counts, rates and state to `log`.
fn log_table(dir: &Path, log: &mut dyn Write) {
    let sup = status::read_processes(dir);
    let table = status::table(&status::read_all(dir), sup.as_ref());
    let _ = write!(log, "{table}");
}

/// Say in `log` what was lost on each edge that lost anything.
fn log_losses(g: &Graph, lost: &[(usize, u64)], log: &mut dyn Write) {
    for (e, n) in lost.iter().filter(|(_, n)| *n > 0) {
        let _ = writeln!(
            log,
            "graph {}: {}: {n} lost (numbers missing downstream of it, less those its sending node was already missing; counts the sets inside a killed process too)",
            g.name,
            g.edge_label(*e)
        );
    }
}

/// Look after process `p` once round the loop: note how it ended, if it
/// did, and restart it when its backoff is over. `Some(why)` when the
/// graph must stop: the process failed in a way a restart cannot mend, or
/// used up its restarts.
fn tend(p: &mut Proc, g: &Graph, opts: &Options, log: &mut dyn Write) -> Result<Option<String>> {
    let run_err =
        |what: &str, e: std::io::Error| Error::Run(format!("graph {}: {what}: {e}", g.name));
    if let Some(c) = &mut p.child {
        match c.try_wait() {
            Ok(Some(s)) => {
                let pid = c.id();
                p.child = None;
                if s.success() {
                    p.exited_clean = true;
                    let _ = writeln!(
                        log,
                        "graph {}: process {} (pid {pid}) finished",
                        g.name, p.name
                    );
                } else if s.code() == Some(crate::part::EXIT_CONFIG) {
                    p.refused_config = true;
                    return Ok(Some(format!(
                            "process {} (pid {pid}) {}: a configuration error (said above), which a restart cannot mend, so it is not restarted",
                            p.name,
                            describe(s)
                        )));
                } else if p.restarts >= g.restart.max {
                    return Ok(Some(format!(
                        "process {} (pid {pid}) {}; restarted {} times already, giving up",
                        p.name,
                        describe(s),
                        p.restarts
                    )));
                } else {
                    p.restarts += 1;
                    p.restart_at = Some(Instant::now() + g.restart.backoff);
                    let _ = writeln!(
                        log,
                        "graph {}: process {} (pid {pid}) {}; restarting ({} of at most {})",
                        g.name,
                        p.name,
                        describe(s),
                        p.restarts,
                        g.restart.max
                    );
                }
            }
            Ok(None) => {}
            Err(e) => return Err(run_err("wait for a part", e)),
        }
    }
    if p.restart_at.is_some_and(|t| Instant::now() >= t) {
        p.restart_at = None;
        let c =
            spawn(&opts.part_command, &p.plan_path).map_err(|e| run_err("restart a part", e))?;
        let _ = writeln!(
            log,
            "graph {}: process {} restarted (pid {})",
            g.name,
            p.name,
            c.id()
        );
        p.child = Some(c);
    }
    Ok(None)
}

/// Write the plan of every process of `host` (in start order) and make
/// its record; gives what failed.
fn write_plans(
    g: &Graph,
    plan: &Plan,
    host: usize,
    dir: &Path,
) -> std::result::Result<Vec<Proc>, (String, std::io::Error)> {
    let order = g.process_order();
    let mut procs: Vec<Proc> = Vec::new();
    for &i in &order {
        let p = &g.processes[i];
        if p.host != host {
            continue;
        }
        let _ = std::fs::remove_file(status::status_file(dir, &p.name));
        let path = write_plan(g, plan, i)?;
        procs.push(Proc {
            index: i,
            name: p.name.clone(),
            plan_path: path,
            child: None,
            restarts: 0,
            restart_at: None,
            exited_clean: false,
            finite: plan.finite[i],
            refused_config: false,
        });
    }
    Ok(procs)
}

/// Write process `i`'s plan file; gives its path, or what failed.
fn write_plan(
    g: &Graph,
    plan: &Plan,
    i: usize,
) -> std::result::Result<PathBuf, (String, std::io::Error)> {
    let p = &g.processes[i];
    let pp = PartPlan {
        graph: g.name.clone(),
        process: p.name.clone(),
        run_dir: plan.run_dir.clone(),
        config: plan.configs[i].clone(),
    };
    let path = crate::rundir::plan_file(&plan.run_dir, &p.name);
    crate::rundir::docs::write(&path, &pp).map_err(|e| (format!("write {}", path.display()), e))?;
    Ok(path)
}

/// Start part `p` and wait until it runs (its first status written, at
/// most [`READY_WAIT`]), so what it binds is there before its peers need
/// it.
fn start_ready(
    cmd: &[OsString],
    p: &Proc,
    dir: &Path,
    stop: &dyn Fn() -> bool,
    graph: &str,
    log: &mut dyn Write,
) -> std::io::Result<Child> {
    let mut c = spawn(cmd, &p.plan_path)?;
    let _ = writeln!(
        log,
        "graph {graph}: process {} started (pid {})",
        p.name,
        c.id()
    );
    let t = Instant::now();
    let sfile = status::status_file(dir, &p.name);
    while t.elapsed() < READY_WAIT && !stop() {
        let ready = status::read_one(&sfile).is_some_and(|v| v.pid == c.id());
        if ready || c.try_wait().ok().flatten().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(c)
}

/// Stop part `p` cleanly (SIGINT: it drains its input and ends), killing
/// it after the stop timeout. False when it did not stop cleanly.
fn stop_part(p: &mut Proc, opts: &Options, graph: &str, log: &mut dyn Write) -> bool {
    p.restart_at = None;
    let Some(mut c) = p.child.take() else {
        return true;
    };
    let pid = c.id() as i32;
    // Our own child, still unreaped, so the pid cannot have been reused.
    send_signal(pid, Signal::INT);
    let t = Instant::now();
    let status = loop {
        match c.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if t.elapsed() < opts.stop_timeout => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Ok(None) => {
                let _ = writeln!(
                    log,
                    "graph {graph}: process {} (pid {pid}) did not stop within {:?}; killing it",
                    p.name, opts.stop_timeout
                );
                let _ = c.kill();
                let _ = c.wait();
                break None;
            }
            Err(_) => break None,
        }
    };
    match status {
        // Stopped cleanly, for our SIGINT (or for another stop signal that
        // came at the same time).
        Some(s) if s.success() || s.code().and_then(crate::part::stopped_by).is_some() => true,
        Some(s) => {
            let _ = writeln!(
                log,
                "graph {graph}: process {} stopped with {}",
                p.name,
                describe(s)
            );
            false
        }
        None => false,
    }
}

/// The longest an apply waits for the inputs of the parts it replaces to
/// fall quiet once their feeders are held.
const QUIET_WAIT: Duration = Duration::from_secs(3);

/// Wait until the nodes of `processes` have taken in nothing new for two
/// status intervals (their status files say so), or `limit` passes.
fn wait_quiet(dir: &Path, processes: &[&str], limit: Duration) {
    let t = Instant::now();
    // Per process: the messages in when last seen to change, and the time
    // (the status file's own clock) of the first status that showed them.
    let mut last: Vec<Option<(u64, u64)>> = vec![None; processes.len()];
    let quiet_us = 2 * crate::part::STATUS_EVERY.as_micros() as u64 + 20_000;
    while t.elapsed() < limit {
        let mut all = true;
        for (k, name) in processes.iter().enumerate() {
            let Some(st) = status::read_one(&status::status_file(dir, name)) else {
                continue;
            };
            let n: u64 = st.nodes.iter().map(|n| n.received).sum();
            let at = st.time_us;
            match last[k] {
                Some((m, since)) if m == n => all &= at.saturating_sub(since) >= quiet_us,
                _ => {
                    last[k] = Some((n, at));
                    all = false;
                }
            }
        }
        if all {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Write `RUNDIR/processes.json` (each process's pid, state and restarts)
/// when it differs from what was last written; `ending` marks every
/// process not finished or failed (given up) as stopped.
fn publish_states(
    dir: &Path,
    procs: &[Proc],
    ending: bool,
    shown: &mut Vec<status::SupervisedProcess>,
) {
    use status::SupervisedState as S;
    let now: Vec<status::SupervisedProcess> = procs
        .iter()
        .enumerate()
        .map(|(i, p)| status::SupervisedProcess {
            name: p.name.clone(),
            pid: p.child.as_ref().map(Child::id),
            state: match (&p.child, p.restart_at, p.exited_clean) {
                (Some(_), _, _) if !ending => S::Running,
                (None, Some(_), _) if !ending => S::Restarting,
                (None, _, true) => S::Finished,
                (None, None, false) if !ending => S::Failed,
                _ if shown.get(i).is_some_and(|s| s.state == S::Failed) => S::Failed,
                _ => S::Stopped,
            },
            restarts: p.restarts,
        })
        .collect();
    if now != *shown {
        let _ = status::write_processes(dir, &now);
        *shown = now;
    }
}

/// A node's `missing` counter from the final reports in `dir`'s status
/// files (absent when the node does not count gaps or left no report).
fn missing_counts(dir: &Path) -> std::collections::BTreeMap<String, u64> {
    let mut m = std::collections::BTreeMap::new();
    for st in status::read_all(dir) {
        for r in st.reports.iter().flatten() {
            if let Some(k) = r.counter("missing") {
                m.insert(r.name.clone(), k);
            }
        }
    }
    m
}

/// Per edge, the sets lost on it (see [`Outcome::lost`]).
fn edge_losses(g: &Graph, dir: &Path) -> Vec<(usize, u64)> {
    let whole = crate::plan::whole_streams(g);
    let missing = missing_counts(dir);
    let mut out = Vec::new();
    for (i, e) in g.edges.iter().enumerate() {
        if e.to.len() != 1 || e.to[0].port == "done" || !whole[e.to[0].node] {
            continue;
        }
        let Some(&at) = missing.get(&g.nodes[e.to[0].node].name) else {
            continue;
        };
        let before: u64 = e
            .from
            .iter()
            .map(|f| missing.get(&g.nodes[f.node].name).copied().unwrap_or(0))
            .sum();
        out.push((i, at.saturating_sub(before)));
    }
    out
}
