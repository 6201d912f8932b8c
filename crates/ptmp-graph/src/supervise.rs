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
//!   carry on with it.
//! * The run ends on SIGINT/SIGTERM, after `ttl`, or when every process
//!   that ends by itself has exited cleanly (a counted source and sink);
//!   the remaining parts are then stopped upstream first, each given time to
//!   drain, and the graph's shm rings are removed.
//! * Only one supervisor runs per run directory (`supervisor.pid`, locked;
//!   see [`crate::rundir`]), and each run starts clean of what an earlier
//!   one left.

use crate::part::PartPlan;
use crate::plan::Plan;
use crate::status;
use crate::{Error, Graph, Result};
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
    let host = match &opts.host {
        Some(h) => g.host_index(h)?,
        None if g.hosts.len() == 1 => 0,
        None => {
            return Err(g.err(format!(
                "the graph spans hosts {}: say which this is with --host",
                g.host_names()
            )))
        }
    };
    let run_err =
        |what: &str, e: std::io::Error| Error::Run(format!("graph {}: {what}: {e}", g.name));
    let dir = &plan.run_dir;
    std::fs::create_dir_all(status::status_dir(dir))
        .map_err(|e| run_err(&format!("run dir {}", dir.display()), e))?;
    // The lock first: a supervisor refused here has touched nothing.
    let lock = crate::rundir::lock(dir, &g.name)?;
    for s in crate::rundir::clear_leftovers(g, plan, host, lock.stale, opts.stop_timeout) {
        let _ = writeln!(log, "graph {}: {s}", g.name);
    }
    let order = g.process_order();
    let mut procs: Vec<Proc> = Vec::new();
    for &i in &order {
        let p = &g.processes[i];
        if p.host != host {
            continue;
        }
        let _ = std::fs::remove_file(status::status_file(dir, &p.name));
        let pp = PartPlan {
            graph: g.name.clone(),
            process: p.name.clone(),
            run_dir: dir.clone(),
            config: plan.configs[i].clone(),
        };
        let path = dir.join(format!("plan-{}.json", p.name));
        std::fs::write(
            &path,
            serde_json::to_vec_pretty(&pp.to_json()).unwrap_or_default(),
        )
        .map_err(|e| run_err(&format!("write {}", path.display()), e))?;
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
        let mut c =
            spawn(&opts.part_command, &p.plan_path).map_err(|e| run_err("start a part", e))?;
        let _ = writeln!(
            log,
            "graph {}: process {} started (pid {})",
            g.name,
            p.name,
            c.id()
        );
        let t = Instant::now();
        let sfile = status::status_file(dir, &p.name);
        while t.elapsed() < READY_WAIT && !stop() {
            let ready = std::fs::read(&sfile)
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .is_some_and(|v| v["pid"].as_u64() == Some(c.id() as u64));
            if ready || c.try_wait().ok().flatten().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
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
    let any_finite = procs.iter().any(|p| p.finite);
    out.reason = loop {
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
        p.restart_at = None;
        let Some(mut c) = p.child.take() else {
            continue;
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
                        "graph {}: process {} (pid {pid}) did not stop within {:?}; killing it",
                        g.name, p.name, opts.stop_timeout
                    );
                    let _ = c.kill();
                    let _ = c.wait();
                    break None;
                }
                Err(_) => break None,
            }
        };
        match status {
            Some(s) if s.success() => {}
            Some(s) => {
                out.ok = false;
                let _ = writeln!(
                    log,
                    "graph {}: process {} stopped with {}",
                    g.name,
                    p.name,
                    describe(s)
                );
            }
            None => out.ok = false,
        }
    }
    // Rings and ipc socket files this host's processes bound.
    crate::rundir::remove_bound(g, plan, host);
    publish_states(dir, &procs, true, &mut shown);
    out.lost = edge_losses(g, dir);
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
