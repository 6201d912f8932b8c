//! A process's and a node's state: worked out here, once, from what the
//! run directory says, so that `ptmp top`, the monitor's page,
//! `/api/state`, `/metrics` and `ptmp graph status` show the same word for
//! the same process and node.
//!
//! A node's state, in order, the first that holds (a process's is the
//! same without rule 4):
//! 1. the supervisor says its process is not running: its word
//!    (`starting`, `restarting`, `failed`, `finished`, `stopped`);
//! 2. the process has written no status: the supervisor's word
//!    (`running`), or `no status` when there is no supervisor's either;
//! 3. the process's last status is its final one: `exited`;
//! 4. the node has ended (its process may still run): `ended`;
//! 5. the process runs on this machine and its pid is gone: `gone`;
//! 6. its status is older than [`STALE`]: `stale Ns`;
//! 7. otherwise `running`.

use super::{ProcessStatus, Supervised, SupervisedProcess, SupervisedState};
use std::fmt;
use std::time::Duration;

/// A status not rewritten for this long is stale (a part rewrites it
/// every quarter second).
pub const STALE: Duration = Duration::from_secs(5);

/// What a view says of a node. It is written out (in `ptmp graph status
/// --json`, the monitor's documents) as the word or words it displays as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeState {
    /// The supervisor's word for a process not running (or running
    /// without a status yet).
    Supervisor(SupervisedState),
    /// Neither a status nor the supervisor's word.
    NoStatus,
    /// The process wrote its final status.
    Exited,
    /// The node ended; its process may still run.
    Ended,
    /// The process ran on this machine and its pid is gone.
    Gone,
    /// The last status is this many seconds old.
    Stale(u64),
    /// Running.
    Running,
    /// Its part runs on a host this view does not read.
    Elsewhere,
}

impl NodeState {
    /// The node runs (its process runs and it has not ended).
    pub fn is_running(&self) -> bool {
        match self {
            NodeState::Running => true,
            NodeState::Supervisor(s) => *s == SupervisedState::Running,
            _ => false,
        }
    }
}

impl fmt::Display for NodeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeState::Supervisor(s) => f.write_str(s.word()),
            NodeState::NoStatus => f.write_str("no status"),
            NodeState::Exited => f.write_str("exited"),
            NodeState::Ended => f.write_str("ended"),
            NodeState::Gone => f.write_str("gone"),
            NodeState::Stale(s) => write!(f, "stale {s}s"),
            NodeState::Running => f.write_str("running"),
            NodeState::Elsewhere => f.write_str("elsewhere"),
        }
    }
}

impl serde::Serialize for NodeState {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The state of a process the supervisor describes as `sup` and whose
/// last status is `st`; `local` when it runs on this machine (so its pid
/// can be checked); `now_us` the wall clock in microseconds since the
/// Unix epoch. A node's state is its process's unless the node ended
/// first ([`node_state`]).
pub fn process_state(
    sup: Option<&SupervisedProcess>,
    st: Option<&ProcessStatus>,
    local: bool,
    now_us: u64,
) -> NodeState {
    let said = sup.map(|p| p.state);
    if let Some(s) = said.filter(|s| *s != SupervisedState::Running) {
        return NodeState::Supervisor(s);
    }
    let Some(st) = st else {
        return said.map_or(NodeState::NoStatus, NodeState::Supervisor);
    };
    if st.ended {
        return NodeState::Exited;
    }
    if local && st.pid > 0 && !ptmp_shm::pid_alive(st.pid) {
        return NodeState::Gone;
    }
    let age = Duration::from_micros(now_us.saturating_sub(st.time_us));
    if st.time_us > 0 && age > STALE {
        return NodeState::Stale(age.as_secs());
    }
    NodeState::Running
}

/// The state of node `node`, whose process the supervisor describes as
/// `sup` and whose last status is `st`: its process's state
/// ([`process_state`]), except `ended` for a node that ended while its
/// process still runs (or is gone, or stale).
pub fn node_state(
    sup: Option<&SupervisedProcess>,
    st: Option<&ProcessStatus>,
    node: &str,
    local: bool,
    now_us: u64,
) -> NodeState {
    match process_state(sup, st, local, now_us) {
        s @ (NodeState::Supervisor(_) | NodeState::NoStatus | NodeState::Exited) => s,
        _ if st.and_then(|st| st.node(node)).is_some_and(|n| n.ended) => NodeState::Ended,
        s => s,
    }
}

/// This machine's name, to tell a part running here (whose pids can be
/// checked) from one on another node.
pub fn this_node() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
}

/// Whether the part whose supervisor wrote `supervised` runs on this
/// machine (`here`): it names no node (not under a scheduler) or this one.
pub fn runs_here(supervised: Option<&Supervised>, here: Option<&str>) -> bool {
    match supervised.and_then(|s| s.node.as_deref()) {
        None => true,
        Some(n) => Some(n) == here,
    }
}

/// The wall clock, microseconds since the Unix epoch.
pub fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::NodeCounts;

    #[test]
    fn each_rule_in_its_order() {
        let now = now_us();
        let sup = |s: SupervisedState| SupervisedProcess {
            name: "p".into(),
            state: s,
            ..Default::default()
        };
        let st = |ended: bool, node_ended: bool, pid: u32, age_s: u64| ProcessStatus {
            process: "p".into(),
            pid,
            time_us: now - age_s * 1_000_000,
            ended,
            nodes: vec![NodeCounts {
                name: "a".into(),
                ended: node_ended,
                ..Default::default()
            }],
            ..Default::default()
        };
        let me = std::process::id();
        let s = |sp: Option<&SupervisedProcess>, ps: Option<&ProcessStatus>, local| {
            node_state(sp, ps, "a", local, now).to_string()
        };
        let live = st(false, false, me, 0);
        assert_eq!(
            s(Some(&sup(SupervisedState::Restarting)), Some(&live), true),
            "restarting"
        );
        assert_eq!(
            s(Some(&sup(SupervisedState::Running)), None, true),
            "running"
        );
        assert_eq!(s(None, None, true), "no status");
        assert_eq!(s(None, Some(&st(true, true, me, 0)), true), "exited");
        assert_eq!(
            s(
                Some(&sup(SupervisedState::Running)),
                Some(&st(false, true, me, 0)),
                true
            ),
            "ended"
        );
        // A pid no process has (beyond the kernel's largest).
        let dead = st(false, false, 1 << 30, 0);
        assert_eq!(s(None, Some(&dead), true), "gone");
        assert_eq!(
            s(None, Some(&dead), false),
            "running",
            "a remote pid is not checked"
        );
        assert_eq!(s(None, Some(&st(false, false, me, 9)), true), "stale 9s");
        assert_eq!(
            s(Some(&sup(SupervisedState::Running)), Some(&live), true),
            "running"
        );
        assert!(node_state(None, Some(&live), "a", true, now).is_running());
        // An ended node of a process that then died or stalled is ended;
        // its process is gone, or stale.
        let dead_ended = st(false, true, 1 << 30, 0);
        assert_eq!(s(None, Some(&dead_ended), true), "ended");
        let p = |sp: Option<&SupervisedProcess>, ps: Option<&ProcessStatus>, local: bool| {
            process_state(sp, ps, local, now).to_string()
        };
        assert_eq!(p(None, Some(&dead_ended), true), "gone");
        assert_eq!(p(None, Some(&st(false, true, me, 9)), true), "stale 9s");
        assert_eq!(p(None, Some(&st(false, true, me, 0)), true), "running");
        assert_eq!(
            p(Some(&sup(SupervisedState::Failed)), Some(&live), true),
            "failed"
        );
        assert_eq!(p(None, Some(&st(true, true, me, 0)), true), "exited");
        assert_eq!(p(None, None, true), "no status");
    }
}
