//! Running built agents, one thread each, and stopping them.

use crate::agent::{Agent, Counts, Ctl, Report};
use crate::error::{Error, Result};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Agents running, one thread each, each with its own [`Ctl`].
pub struct Running {
    slots: Vec<Slot>,
}

struct Slot {
    name: String,
    ctl: Ctl,
    thread: Option<JoinHandle<Result<Report>>>,
    result: Option<Result<Report>>,
}

impl Slot {
    fn reap(&mut self) {
        if let Some(h) = self.thread.take() {
            let r = h
                .join()
                .unwrap_or_else(|_| Err(Error::run(&self.name, "the agent's thread panicked")));
            self.result = Some(r);
        }
    }
}

impl Running {
    /// Start every agent on its own named thread.
    pub fn start(agents: Vec<Box<dyn Agent>>, ctl: &Ctl) -> std::io::Result<Running> {
        let mut r = Running { slots: Vec::new() };
        for mut a in agents {
            let name = a.name().to_string();
            let c = ctl.fresh();
            let c2 = c.clone();
            let h = std::thread::Builder::new()
                .name(name.chars().take(15).collect())
                .spawn(move || {
                    let r = a.run(&c2);
                    drop(a);
                    r
                });
            match h {
                Ok(h) => r.slots.push(Slot {
                    name,
                    ctl: c,
                    thread: Some(h),
                    result: None,
                }),
                Err(e) => {
                    r.stop();
                    return Err(e);
                }
            }
        }
        Ok(r)
    }

    /// Each agent's name, live counts (in, out) and whether it has ended.
    pub fn counts(&self) -> Vec<(&str, (u64, u64), bool)> {
        self.slots
            .iter()
            .map(|s| {
                let ended = s.thread.as_ref().is_none_or(|h| h.is_finished());
                (s.name.as_str(), s.ctl.counts.get(), ended)
            })
            .collect()
    }

    /// Each agent's name and counters, to read after the agents stop.
    pub fn count_handles(&self) -> Vec<(String, Arc<Counts>)> {
        self.slots
            .iter()
            .map(|s| (s.name.clone(), s.ctl.counts.clone()))
            .collect()
    }

    /// Whether agent `i` (in start order) has ended.
    pub fn ended(&self, i: usize) -> bool {
        self.slots
            .get(i)
            .is_some_and(|s| s.thread.as_ref().is_none_or(|h| h.is_finished()))
    }

    /// Number of agents still running.
    pub fn alive(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.thread.as_ref().is_some_and(|h| !h.is_finished()))
            .count()
    }

    /// Collect agents that ended by themselves; true if one of them failed
    /// (an agent ends early when its input is exhausted, or on an error,
    /// which the runner must not hide).
    pub fn any_failed_early(&mut self) -> bool {
        let mut failed = false;
        for s in &mut self.slots {
            if s.thread.as_ref().is_some_and(|h| h.is_finished()) {
                s.reap();
                failed |= matches!(s.result, Some(Err(_)));
            }
        }
        failed
    }

    /// Stop every agent at once and wait for them.
    pub fn stop(self) -> Vec<(String, Result<Report>)> {
        let order: Vec<usize> = (0..self.slots.len()).collect();
        for s in &self.slots {
            s.ctl.stop();
        }
        self.stop_in_order(&order)
    }

    /// Stop agents one at a time in `order` (indices in start order, each
    /// waited for before the next is stopped: upstream first, so what is in
    /// flight drains downstream); agents not listed are stopped last.
    ///
    /// First every agent is told the pipeline is stopping ([`Ctl::hold`]),
    /// so a merge point keeps what its draining upstream stages flush into
    /// it (instead of timing out one stream while another still flushes)
    /// and sends it in order when its own turn to stop comes.
    pub fn stop_in_order(mut self, order: &[usize]) -> Vec<(String, Result<Report>)> {
        let n = self.slots.len();
        for s in &self.slots {
            s.ctl.hold();
        }
        let rest = (0..n).filter(|i| !order.contains(i));
        for i in order.iter().copied().filter(|i| *i < n).chain(rest) {
            self.slots[i].ctl.stop();
            self.slots[i].reap();
        }
        self.slots
            .into_iter()
            .map(|s| {
                let r = s
                    .result
                    .unwrap_or_else(|| Err(Error::run(&s.name, "the agent did not report")));
                (s.name, r)
            })
            .collect()
    }
}
