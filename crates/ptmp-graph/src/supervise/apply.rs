//! `ptmp graph apply` carried out by the supervisor: the request checked,
//! the feeders of what changes held, the changed parts stopped and their
//! successors started, nothing accepted on a PUSH/PULL path lost.

use super::{
    send_signal, start_ready, stop_part, wait_quiet, write_plan, Options, Proc, QUIET_WAIT,
};
use crate::plan::Plan;
use crate::reconfig::{self, Change, Diff, Refusal, Reply, Request};
use crate::{status, Graph};
use rustix::process::Signal;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

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
        .is_some_and(|v| i64::from(v.pid) == i64::from(pid) && v.held)
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
pub(super) struct Apply<'a> {
    pub(super) g: &'a mut Graph,
    pub(super) plan: &'a mut Plan,
    pub(super) host: &'a mut usize,
    pub(super) procs: &'a mut Vec<Proc>,
}

impl Apply<'_> {
    /// Carry out (or, for a dry run, describe) request `req`.
    pub(super) fn apply(
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
        let (new, np, d, nhost) = match self.check(req) {
            Ok(x) => x,
            Err(reply) => return reply,
        };
        let gname = self.g.name.clone();
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
        let (held, held_at) = self.hold_feeders(&kept, &stopping, log);
        let mut problems = self.stop_changed(&to_stop, &held_at, opts, log);
        self.clear_unbound(&new, &np, &d);
        let mut next = self.next_procs(&new, &np, nhost, &kept, &mut problems);
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

impl Apply<'_> {
    /// The new graph and plan, what changes and this host's index in the
    /// new graph; or the reply refusing the request (or describing it, for
    /// a dry run).
    fn check(&self, req: &Request) -> std::result::Result<(Graph, Plan, Diff, usize), Reply> {
        let refuse = |r: Refusal, message: String| Reply {
            refused: Some(r),
            message,
        };
        let (new, np, d) = match reconfig::prepare(self.g, self.plan, &req.graph, &req.default_name)
        {
            Ok(x) => x,
            Err(e) => return Err(refuse(Refusal::Invalid, e.to_string())),
        };
        let gname = self.g.name.clone();
        let host_name = self.g.hosts[*self.host].name.clone();
        let Some(nhost) = new.hosts.iter().position(|h| h.name == host_name) else {
            return Err(refuse(
                Refusal::Invalid,
                format!("graph {gname}: this supervisor runs host {host_name}, which the new graph does not have"),
            ));
        };
        if d.is_empty() {
            return Err(refuse(
                Refusal::NothingToDo,
                format!("graph {gname}: nothing to do: the new graph is the running one"),
            ));
        }
        if !new.processes.iter().any(|p| p.host == nhost) {
            return Err(refuse(
                Refusal::Invalid,
                format!("graph {gname}: no process would be left on host {host_name}; stop the graph instead"),
            ));
        }
        if req.dry_run {
            return Err(Reply {
                refused: None,
                message: d.render(),
            });
        }
        Ok((new, np, d, nhost))
    }

    /// Hold the unchanged parts feeding those about to stop; gives the hold
    /// (released when dropped) and the processes held.
    fn hold_feeders(
        &self,
        kept: &BTreeSet<&str>,
        stopping: &BTreeSet<usize>,
        log: &mut dyn Write,
    ) -> (Held, BTreeSet<usize>) {
        let gname = &self.g.name;
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
        (held, held_at)
    }

    /// Stop this host's parts `to_stop` (indexes into the parts), letting
    /// those fed by held parts take in what was on its way first; gives
    /// the problems met.
    fn stop_changed(
        &mut self,
        to_stop: &[usize],
        held_at: &BTreeSet<usize>,
        opts: &Options,
        log: &mut dyn Write,
    ) -> Vec<String> {
        let gname = self.g.name.clone();
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
        for &k in to_stop {
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
        problems
    }

    /// Remove what only the old graph bound here, and the removed
    /// processes' files.
    fn clear_unbound(&self, new: &Graph, np: &Plan, d: &Diff) {
        let (rings, sockets) = reconfig::unbound(self.g, self.plan, new, np, *self.host);
        for r in rings {
            let _ = ptmp_shm::remove(&r);
        }
        for s in sockets {
            crate::rundir::remove_socket_file(&s);
        }
        let removed = d.processes_with(Change::Removed);
        for name in &removed {
            let _ = std::fs::remove_file(status::status_file(&self.plan.run_dir, name));
            let _ = std::fs::remove_file(crate::rundir::sequence_file(&self.plan.run_dir, name));
            let _ = std::fs::remove_file(crate::rundir::plan_file(&self.plan.run_dir, name));
        }
    }

    /// The new list of this host's parts, upstream first: kept ones as they
    /// run, the others with their new plans written (not started).
    fn next_procs(
        &mut self,
        new: &Graph,
        np: &Plan,
        nhost: usize,
        kept: &BTreeSet<&str>,
        problems: &mut Vec<String>,
    ) -> Vec<Proc> {
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
                    let plan_path = match write_plan(new, np, i) {
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
                        refused_config: false,
                    });
                }
            }
        }
        next
    }
}
