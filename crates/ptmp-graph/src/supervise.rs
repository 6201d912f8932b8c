//! `ptmp graph run`: start this host's processes of a graph, supervise
//! them, stop them.
//!
//! * Each process runs as a child `ptmp graph part PLAN` in a process group
//!   of its own (a terminal's Ctrl-C reaches only the supervisor, which then
//!   stops the parts in order) and dies with the supervisor
//!   (PR_SET_PDEATHSIG), so no part outlives it.
//! * A part that exits non-zero or is killed by a signal is restarted after
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

use crate::part::PartPlan;
use crate::plan::Plan;
use crate::reconfig::{self, Change, Refusal, Reply, Request};
use crate::status;
use crate::{Error, Graph, Result};
use rustix::process::{Pid, Signal};
use std::collections::BTreeSet;
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
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(9)) => "killed by SIGKILL".into(),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => s.to_string(),
    }
}

/// Send `sig` to process `pid` (a child of ours), ignoring failure: a child
/// that has exited meanwhile needs no signal. Non-positive pids, which would
/// name process groups, are ignored.
pub(crate) fn send_signal(pid: i32, sig: Signal) {
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
    for s in crate::rundir::clear_leftovers(&g, &plan, host, lock.stale, opts.stop_timeout) {
        let _ = writeln!(log, "graph {}: {s}", g.name);
    }
    crate::plan::check_shm_space(&g, &plan, host)?;
    // Hold requests an earlier supervisor left (it died during an apply).
    let _ = std::fs::remove_dir_all(dir.join("hold"));
    let order = g.process_order();
    let mut procs: Vec<Proc> = Vec::new();
    for &i in &order {
        let p = &g.processes[i];
        if p.host != host {
            continue;
        }
        let _ = std::fs::remove_file(status::status_file(dir, &p.name));
        let path = write_plan(&g, &plan, i).map_err(|(what, e)| run_err(&what, e))?;
        procs.push(Proc {
            index: i,
            name: p.name.clone(),
            plan_path: path,
            child: None,
            restarts: 0,
            restart_at: None,
            exited_clean: false,
            finite: plan.finite[i],
        });
    }
    if procs.is_empty() {
        drop(lock);
        return Err(Error::Invalid {
            graph: g.name.clone(),
            msg: format!("no process is placed on host {}", g.hosts[host].name),
        });
    }
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
                            gave_up = Some(format!(
                                "process {} (pid {pid}) {}: a configuration error (said above), which a restart cannot mend, so it is not restarted",
                                p.name,
                                describe(s)
                            ));
                        } else if p.restarts >= g.restart.max {
                            gave_up = Some(format!(
                                "process {} (pid {pid}) {}; restarted {} times already, giving up",
                                p.name,
                                describe(s),
                                p.restarts
                            ));
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
                let c = spawn(&opts.part_command, &p.plan_path)
                    .map_err(|e| run_err("restart a part", e))?;
                let _ = writeln!(
                    log,
                    "graph {}: process {} restarted (pid {})",
                    g.name,
                    p.name,
                    c.id()
                );
                p.child = Some(c);
            }
        }
        publish_states(dir, &procs, false, &mut shown);
        if let Some(why) = gave_up {
            out.ok = false;
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
            let _ = write!(log, "{}", status::table(&status::read_all(dir)));
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
    crate::rundir::remove_bound(&g, &plan, host);
    publish_states(dir, &procs, true, &mut shown);
    out.lost = edge_losses(&g, dir);
    for (e, n) in out.lost.iter().filter(|(_, n)| *n > 0) {
        let _ = writeln!(
            log,
            "graph {}: {}: {n} lost (numbers missing downstream of it, less those its sending node was already missing; counts the sets inside a killed process too)",
            g.name,
            g.edge_label(*e)
        );
    }
    out.restarts = procs
        .iter()
        .map(|p| (g.processes[p.index].name.clone(), p.restarts))
        .collect();
    drop(lock);
    Ok(out)
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
    let path = plan.run_dir.join(format!("plan-{}.json", p.name));
    ptmp::files::write_replace(
        &path,
        &serde_json::to_vec_pretty(&pp.to_json()).unwrap_or_default(),
    )
    .map_err(|e| (format!("write {}", path.display()), e))?;
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
        let ready =
            status::read_one(&sfile).is_some_and(|v| v["pid"].as_u64() == Some(c.id() as u64));
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
        Some(s) if s.success() => true,
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
            let n: u64 = st["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|n| n["in"].as_u64())
                .sum();
            let at = st["time_us"].as_u64().unwrap_or(0);
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

/// How long an apply waits for a feeder to say it holds its outputs before
/// it stops the feeder with SIGSTOP instead.
const HOLD_WAIT: Duration = Duration::from_secs(2);

/// Processes holding their outputs while what they feed is replaced,
/// released when dropped (so no path out of an apply leaves one held).
///
/// A part is asked to hold through its hold file
/// ([`crate::part::hold_file`]): its agents stop sending while its ZeroMQ
/// I/O threads run on, so they see the old receiver's connection close
/// while nothing is in flight and no message is written into it. A part
/// that does not say it holds within [`HOLD_WAIT`] is stopped with SIGSTOP
/// instead, which holds it too but freezes its I/O threads: a zmq sender
/// continued that way can write up to one batch into the dead connection
/// before it sees it gone.
struct Held {
    dir: PathBuf,
    /// (process name, pid, stopped with SIGSTOP rather than by its file).
    procs: Vec<(String, i32, bool)>,
}

impl Held {
    /// Ask `name` (pid `pid`) to hold its outputs; its word is awaited by
    /// [`Held::confirm`].
    fn ask(&mut self, name: &str, pid: i32) {
        let f = crate::part::hold_file(&self.dir, name);
        if let Some(d) = f.parent() {
            let _ = crate::rundir::make_private(d);
        }
        let _ = ptmp::files::write_replace(&f, pid.to_string().as_bytes());
        self.procs.push((name.to_string(), pid, false));
    }

    /// Wait until every part asked says it holds (its status file, written
    /// by that very pid, has `"held": true`); stop with SIGSTOP those that
    /// do not within [`HOLD_WAIT`]. Gives the names of those stopped.
    fn confirm(&mut self) -> Vec<String> {
        let t = Instant::now();
        loop {
            let mut all = true;
            for (name, pid, _) in &self.procs {
                all &= says_held(&self.dir, name, *pid);
            }
            if all {
                return Vec::new();
            }
            if t.elapsed() >= HOLD_WAIT {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut stopped = Vec::new();
        for (name, pid, sigstop) in &mut self.procs {
            if !says_held(&self.dir, name, *pid) {
                send_signal(*pid, Signal::STOP);
                *sigstop = true;
                stopped.push(name.clone());
            }
        }
        stopped
    }
}

/// Whether process `name`'s status file, written by pid `pid`, says it
/// holds its outputs.
fn says_held(dir: &Path, name: &str, pid: i32) -> bool {
    status::read_one(&status::status_file(dir, name))
        .is_some_and(|v| v["pid"].as_i64() == Some(i64::from(pid)) && v["held"] == true)
}

impl Drop for Held {
    fn drop(&mut self) {
        for (name, pid, sigstop) in &self.procs {
            let _ = std::fs::remove_file(crate::part::hold_file(&self.dir, name));
            if *sigstop {
                send_signal(*pid, Signal::CONT);
            }
        }
    }
}

/// What an apply changes: the supervisor's graph, plan, host and parts.
struct Apply<'a> {
    g: &'a mut Graph,
    plan: &'a mut Plan,
    host: &'a mut usize,
    procs: &'a mut Vec<Proc>,
}

impl Apply<'_> {
    /// Carry out (or, for a dry run, describe) request `req`.
    fn apply(
        &mut self,
        req: &Request,
        opts: &Options,
        stop: &dyn Fn() -> bool,
        log: &mut dyn Write,
    ) -> Reply {
        let refuse = |r: Refusal, message: String| Reply {
            refused: Some(r),
            message,
        };
        let (new, np, d) = match reconfig::prepare(self.g, self.plan, &req.graph, &req.default_name)
        {
            Ok(x) => x,
            Err(e) => return refuse(Refusal::Invalid, e.to_string()),
        };
        let gname = self.g.name.clone();
        let host_name = self.g.hosts[*self.host].name.clone();
        let Some(nhost) = new.hosts.iter().position(|h| h.name == host_name) else {
            return refuse(
                Refusal::Invalid,
                format!("graph {gname}: this supervisor runs host {host_name}, which the new graph does not have"),
            );
        };
        if d.is_empty() {
            return refuse(
                Refusal::NothingToDo,
                format!("graph {gname}: nothing to do: the new graph is the running one"),
            );
        }
        if !new.processes.iter().any(|p| p.host == nhost) {
            return refuse(
                Refusal::Invalid,
                format!("graph {gname}: no process would be left on host {host_name}; stop the graph instead"),
            );
        }
        if req.dry_run {
            return Reply {
                refused: None,
                message: d.render(),
            };
        }
        let _ = writeln!(
            log,
            "graph {gname}: applying a new version:\n{}",
            d.render()
        );
        let kept: BTreeSet<&str> = d.processes_with(Change::Kept).into_iter().collect();
        // This host's parts to stop (removed or replaced), upstream first.
        let order = self.g.process_order();
        let rank = |i: usize| order.iter().position(|&x| x == i).unwrap_or(usize::MAX);
        let mut to_stop: Vec<usize> = (0..self.procs.len())
            .filter(|&k| !kept.contains(self.procs[k].name.as_str()))
            .collect();
        to_stop.sort_by_key(|&k| rank(self.procs[k].index));
        let stopping: BTreeSet<usize> = to_stop.iter().map(|&k| self.procs[k].index).collect();
        // Hold the unchanged parts feeding them: held, a feeder keeps what
        // it has (in its agents and queues, or in the ring it writes,
        // which outlives its reader) until the replacement reads on.
        let mut held = Held {
            dir: self.plan.run_dir.clone(),
            procs: Vec::new(),
        };
        let mut held_at = BTreeSet::new();
        for p in self.procs.iter() {
            if !kept.contains(p.name.as_str()) {
                continue;
            }
            let Some(c) = &p.child else { continue };
            let feeds = self.g.edges.iter().any(|e| {
                e.to.iter().all(|t| t.port != "done")
                    && e.from
                        .iter()
                        .any(|f| self.g.nodes[f.node].process == p.index)
                    && e.to
                        .iter()
                        .any(|t| stopping.contains(&self.g.nodes[t.node].process))
            });
            if feeds {
                let pid = c.id() as i32;
                held.ask(&p.name, pid);
                let _ = writeln!(
                    log,
                    "graph {gname}: holding process {} (pid {pid}) while its downstream is replaced",
                    p.name
                );
                held_at.insert(p.index);
            }
        }
        for name in held.confirm() {
            let _ = writeln!(
                log,
                "graph {gname}: process {name} did not say it holds its outputs within {HOLD_WAIT:?}; stopped it (SIGSTOP) instead"
            );
        }
        // Let the parts about to stop that held parts feed take in what
        // was already on its way to them while they still run normally, so
        // their drain (which ends at the first read that finds nothing) has
        // nothing left behind. (Parts fed by parts that stop first are
        // drained by those.)
        let g = &*self.g;
        let fed_by_held = |i: usize| {
            g.edges.iter().any(|e| {
                e.to.iter()
                    .any(|t| g.nodes[t.node].process == i && t.port != "done")
                    && e.from
                        .iter()
                        .any(|f| held_at.contains(&g.nodes[f.node].process))
            })
        };
        let names: Vec<&str> = to_stop
            .iter()
            .filter(|&&k| self.procs[k].child.is_some() && fed_by_held(self.procs[k].index))
            .map(|&k| self.procs[k].name.as_str())
            .collect();
        wait_quiet(&self.plan.run_dir, &names, QUIET_WAIT);
        let mut problems = Vec::new();
        for &k in &to_stop {
            let p = &mut self.procs[k];
            let pid = p.child.as_ref().map(Child::id);
            if !stop_part(p, opts, &gname, log) {
                problems.push(format!("process {} did not stop cleanly", p.name));
            }
            if let Some(pid) = pid {
                let _ = writeln!(
                    log,
                    "graph {gname}: process {} (pid {pid}) stopped for the change",
                    p.name
                );
            }
        }
        // What only the old graph bound here, and the removed processes'
        // files, go.
        let (rings, sockets) = reconfig::unbound(self.g, self.plan, &new, &np, *self.host);
        for r in rings {
            let _ = ptmp_shm::remove(&r);
        }
        for s in sockets {
            crate::rundir::remove_socket_file(&s);
        }
        let removed = d.processes_with(Change::Removed);
        for name in &removed {
            let _ = std::fs::remove_file(status::status_file(&self.plan.run_dir, name));
            let _ = std::fs::remove_file(crate::part::sequence_file(&self.plan.run_dir, name));
            let _ = std::fs::remove_file(self.plan.run_dir.join(format!("plan-{name}.json")));
        }
        // The new list of this host's parts, upstream first.
        let mut old: Vec<Option<Proc>> = std::mem::take(self.procs).into_iter().map(Some).collect();
        let mut next = Vec::new();
        for i in new.process_order() {
            let p = &new.processes[i];
            if p.host != nhost {
                continue;
            }
            let prev = old
                .iter_mut()
                .find(|x| x.as_ref().is_some_and(|x| x.name == p.name))
                .and_then(Option::take);
            match prev {
                Some(mut x) if kept.contains(p.name.as_str()) => {
                    x.index = i;
                    x.finite = np.finite[i];
                    next.push(x);
                }
                prev => {
                    let plan_path = match write_plan(&new, &np, i) {
                        Ok(x) => x,
                        Err((what, e)) => {
                            problems.push(format!("{what}: {e}"));
                            continue;
                        }
                    };
                    next.push(Proc {
                        index: i,
                        name: p.name.clone(),
                        plan_path,
                        child: None,
                        // A replaced process keeps its count: `max` bounds
                        // crashes, and a change is none.
                        restarts: prev.map_or(0, |x| x.restarts),
                        restart_at: None,
                        exited_clean: false,
                        finite: np.finite[i],
                    });
                }
            }
        }
        // Start downstream first, each running before the next.
        for p in next.iter_mut().rev() {
            if kept.contains(p.name.as_str()) {
                continue;
            }
            match start_ready(&opts.part_command, p, &np.run_dir, stop, &gname, log) {
                Ok(c) => p.child = Some(c),
                Err(e) => {
                    problems.push(format!("start process {}: {e}", p.name));
                    p.restart_at = Some(Instant::now() + new.restart.backoff);
                }
            }
        }
        drop(held);
        *self.procs = next;
        *self.g = new;
        *self.plan = np;
        *self.host = nhost;
        if problems.is_empty() {
            let _ = writeln!(log, "graph {gname}: change applied");
            Reply {
                refused: None,
                message: d.render(),
            }
        } else {
            let msg = format!(
                "graph {gname}: the change was made, with problems: {}",
                problems.join("; ")
            );
            let _ = writeln!(log, "{msg}");
            refuse(Refusal::Failed, format!("{}{msg}", d.render()))
        }
    }
}

/// Write `RUNDIR/processes.json` (each process's pid, state and restarts)
/// when it differs from what was last written; `ending` marks every
/// process not finished or failed (given up) as stopped.
fn publish_states(dir: &Path, procs: &[Proc], ending: bool, shown: &mut Vec<status::ProcessState>) {
    let now: Vec<status::ProcessState> = procs
        .iter()
        .enumerate()
        .map(|(i, p)| status::ProcessState {
            name: p.name.clone(),
            pid: p.child.as_ref().map(Child::id),
            state: match (&p.child, p.restart_at, p.exited_clean) {
                (Some(_), _, _) if !ending => "running",
                (None, Some(_), _) if !ending => "restarting",
                (None, _, true) => "finished",
                (None, None, false) if !ending => "failed",
                _ if shown.get(i).is_some_and(|s| s.state == "failed") => "failed",
                _ => "stopped",
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
        for r in st["reports"].as_array().into_iter().flatten() {
            if let (Some(n), Some(k)) = (r["name"].as_str(), r["counters"]["missing"].as_u64()) {
                m.insert(n.to_string(), k);
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
