//! # ptmp-graph: data-flow graphs that place, wire and supervise themselves
//!
//! A PTMP user hand-writes every socket address and starts every process.
//! Here the *graph* is the unit: nodes (agents, or the built-in source,
//! sink, worker and proxy of [`ptmp_agents::Kind`]) with named ports,
//! edges between ports with a messaging pattern, and a placement of nodes
//! into processes and processes onto hosts. From that the runner
//!
//! * validates everything before anything starts ([`Graph::parse`], then
//!   [`plan::Plan::make`], which also validates every node's agent config),
//!   each error naming the node and port or the edge;
//! * chooses each edge's transport: `inproc` when all its nodes share a
//!   process, `shm` between processes of one host when the edge can be a
//!   single-writer ring (see [`plan`]), else `ipc` on one host, else `tcp`;
//! * assigns every address (inproc names, ipc paths in the run directory,
//!   shm channel names, tcp ports from `port_base` on each host's address),
//!   the same on every host, so the parts of a multi-host graph started
//!   separately (`ptmp graph run G --host H`) find each other; an edge may
//!   pin its own `transport` or `address`;
//! * runs each process as a child (`ptmp graph part`), restarts one that
//!   crashes, shows per-node counts and rates, and stops the processes
//!   upstream first so what is in flight drains ([`supervise`]).
//! * changes a running graph into a new version ([`reconfig`], `ptmp graph
//!   apply`): unchanged processes keep running with their addresses,
//!   changed ones are replaced while their feeders are held.
//!
//! Why processes run the existing agent runner: a part is a ptmper
//! configuration with its sockets filled in, so graph nodes are exactly the
//! agents `ptmp run` runs, with the same validation and the same drain on
//! stop; the graph layer only adds wiring, placement and supervision.
//!
//! ## Configuration (JSON, or Jsonnet with top-level arguments)
//! ```json
//! {"name": "chain",
//!  "nodes": [{"name": "src", "type": "source", "data": {"count": 1000}},
//!            {"name": "w", "type": "worker", "data": {"work_us": 100}},
//!            {"name": "snk", "type": "sink", "data": {"count": 1000}}],
//!  "edges": [{"from": "src.out", "to": "w.in", "pattern": "pushpull"},
//!            {"from": "w.out", "to": "snk.in", "pattern": "pushpull"}],
//!  "processes": [{"name": "front", "nodes": ["src", "w"]}],
//!  "hosts": [{"name": "localhost", "address": "127.0.0.1"}],
//!  "port_base": 17100,
//!  "restart": {"max": 5, "backoff_ms": 200}}
//! ```
//! Nodes not placed in a process get a process of their own named after
//! them. `from`/`to` are `"node.port"` or lists of them: one output to
//! several inputs fans out (pubsub copies, pushpull deals round-robin),
//! several outputs to one input fans in; many to many is refused (put a
//! proxy node between, as the butterfly's intermediate does).

mod curve;
pub mod dot;
mod named;
pub mod part;
pub mod plan;
pub mod reconfig;
pub mod rundir;
pub mod slurm;
pub mod status;
pub mod supervise;
pub mod systemd;

mod parse;

use ptmp::Transport;
use ptmp_agents::Kind;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// A graph error: what is wrong and where (node and port, edge, process).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The graph's configuration is wrong; found before anything starts.
    #[error("graph {graph}: {msg}")]
    Invalid {
        /// The graph's name.
        graph: String,
        /// What is wrong, naming the node and port, edge or process.
        msg: String,
    },
    /// A node's agent configuration (its `data`) was refused by the agent.
    #[error("graph {graph}: node {node}: {source}")]
    Agent {
        /// The graph's name.
        graph: String,
        /// The node whose configuration was refused.
        node: String,
        /// The agent's own error.
        #[source]
        source: Box<ptmp_agents::Error>,
    },
    /// Running the graph failed (processes, another supervisor); the text
    /// names the graph and what failed.
    #[error("{0}")]
    Run(String),
    /// A run directory, or a document in it, is unusable or unsafe (not
    /// private, a link, not a regular file, too big, of the wrong shape);
    /// the text names it and what is wrong.
    #[error("{0}")]
    RunDir(String),
    /// `ptmp graph apply` could not hand its request to the supervisor,
    /// or got no answer; the text says why.
    #[error("{0}")]
    Apply(String),
    /// Slurm could not be asked, or its answer could not be used; the
    /// text names the tool or the variable.
    #[error("{0}")]
    Slurm(String),
}

/// Result with this crate's [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub use ptmp_agents::{Dir, PortSpec};

/// The ports of a node type; `None` for types that cannot be graph nodes
/// ([`Kind::ports`]).
pub fn ports(kind: Kind) -> Option<&'static [PortSpec]> {
    kind.ports()
}

/// The agent types a graph node may have, comma separated: the known
/// types less those without a fixed set of ports (monitor, composer,
/// stats_graphite), so an error never suggests one a graph refuses.
pub fn graph_types() -> String {
    Kind::known()
        .split(", ")
        .filter(|t| Kind::parse(t).and_then(ports).is_some())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Messaging pattern of an edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// PUB to SUB: every receiver gets a copy; a slow one loses messages.
    PubSub,
    /// PUSH to PULL: messages are dealt round-robin, with back-pressure.
    PushPull,
    /// PAIR to PAIR: exactly one sender and one receiver.
    Pair,
}

impl Pattern {
    /// The name the configuration uses for it (`"pubsub"`, `"pushpull"`,
    /// `"pair"`).
    pub fn name(self) -> &'static str {
        match self {
            Pattern::PubSub => "pubsub",
            Pattern::PushPull => "pushpull",
            Pattern::Pair => "pair",
        }
    }
    /// Socket types of the sending and the receiving side.
    pub fn socket_types(self) -> (ptmp::SocketType, ptmp::SocketType) {
        use ptmp::SocketType::*;
        match self {
            Pattern::PubSub => (Pub, Sub),
            Pattern::PushPull => (Push, Pull),
            Pattern::Pair => (Pair, Pair),
        }
    }
}

/// A node of the graph: one agent, placed in one process.
#[derive(Debug, Clone)]
pub struct Node {
    /// Unique name, used in edges, logs and status.
    pub name: String,
    /// The agent type `type` names.
    pub kind: Kind,
    /// `type` as written.
    pub type_name: String,
    /// The agent's configuration, without the sockets the planner adds.
    pub data: Map<String, Value>,
    /// Index into [`Graph::processes`].
    pub process: usize,
}

impl Node {
    /// The node's port called `name`; `None` when its type has no such port.
    pub fn port(&self, name: &str) -> Option<&'static PortSpec> {
        ports(self.kind)?.iter().find(|p| p.name == name)
    }
}

/// One end of an edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PortRef {
    /// Index into [`Graph::nodes`].
    pub node: usize,
    /// Name of one of that node's ports.
    pub port: &'static str,
}

/// A connection from output ports to input ports: one to one, fan-out or
/// fan-in (never many to many).
#[derive(Debug, Clone)]
pub struct Edge {
    /// The sending ports.
    pub from: Vec<PortRef>,
    /// The receiving ports.
    pub to: Vec<PortRef>,
    /// How messages are distributed between the ends.
    pub pattern: Pattern,
    /// The transport the edge pins; `None` lets the planner choose.
    pub transport: Option<Transport>,
    /// The address the edge pins; `None` lets the planner assign one.
    pub address: Option<String>,
    /// Socket high-water mark in messages for the edge's sockets; `None`
    /// keeps the agent's default.
    pub hwm: Option<i64>,
    /// ZeroMQ heartbeat interval in milliseconds for the edge's sockets
    /// (`heartbeat_ms`): a peer silent for three intervals is dropped, and
    /// with it what its connection held. `None` keeps the sockets'
    /// default (1 s for an edge reached by name, none otherwise).
    pub heartbeat_ms: Option<i64>,
    /// `"bind": "in"`: the inputs bind and the single output connects to
    /// them, over zmq. A connecting PUSH keeps what it queued for a
    /// receiver that goes away and hands it to the next one at the same
    /// address, so a receiver replaced by `ptmp graph apply` (or restarted)
    /// loses nothing the sender still held; a binding PUSH drops that
    /// queue with the connection.
    pub bind_inputs: bool,
    /// The shape of the edge's shm ring, when it is carried over shm:
    /// `shm_slots` and `shm_max_message` (`None`: ptmp's defaults).
    pub shm: (Option<i64>, Option<i64>),
}

/// An operating-system process running some of the graph's nodes.
#[derive(Debug, Clone)]
pub struct Process {
    /// Unique name, used in logs, status and plan files.
    pub name: String,
    /// Index into [`Graph::hosts`] of the host it runs on.
    pub host: usize,
    /// Indices into [`Graph::nodes`] of the nodes it runs.
    pub nodes: Vec<usize>,
}

/// A machine the graph runs processes on.
#[derive(Debug, Clone)]
pub struct Host {
    /// The name `--host` selects it by.
    pub name: String,
    /// The address other hosts reach its tcp endpoints at; empty when the
    /// graph gives none, and its tcp edges are then found by name.
    pub address: String,
    /// The node feature (Slurm's `Features=`) the node this host runs on
    /// must have under `graph run --slurm`; empty: any node.
    pub feature: String,
}

/// Restarting crashed processes.
#[derive(Debug, Clone, Copy)]
pub struct Restart {
    /// Restarts of one process before the graph gives up.
    pub max: u32,
    /// Wait between a process's exit and its restart.
    pub backoff: Duration,
}

/// A validated graph: nodes, edges and their placement, as
/// [`Graph::parse`] reads them from the configuration.
#[derive(Debug, Clone)]
pub struct Graph {
    /// The graph's name, in every message about it.
    pub name: String,
    /// Every node, in configuration order.
    pub nodes: Vec<Node>,
    /// Every edge, in configuration order.
    pub edges: Vec<Edge>,
    /// Every process, the implicit one-node processes included.
    pub processes: Vec<Process>,
    /// Every host; at least one.
    pub hosts: Vec<Host>,
    /// First TCP port assigned to tcp edges on each host.
    pub port_base: u16,
    /// What to do when a process crashes.
    pub restart: Restart,
    /// Filter-engine libraries every process loads (as ptmper's `plugins`).
    pub plugins: Vec<String>,
    /// CURVE on every tcp edge (`"curve"`), and where its keys are.
    pub curve: Option<curve::GraphCurve>,
}

/// Default first tcp port.
pub const DEFAULT_PORT_BASE: u16 = 17100;

impl Graph {
    fn err(&self, msg: impl Into<String>) -> Error {
        Error::Invalid {
            graph: self.name.clone(),
            msg: msg.into(),
        }
    }

    /// `edges[i] (a.out -> b.in, c.in)` for messages.
    pub fn edge_label(&self, i: usize) -> String {
        let e = &self.edges[i];
        let side = |v: &[PortRef]| {
            v.iter()
                .map(|r| format!("{}.{}", self.nodes[r.node].name, r.port))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!("edges[{i}] ({} -> {})", side(&e.from), side(&e.to))
    }

    /// The edges meeting at each port, in edge order.
    pub fn port_edges(&self) -> BTreeMap<PortRef, Vec<usize>> {
        let mut m: BTreeMap<PortRef, Vec<usize>> = BTreeMap::new();
        for (i, e) in self.edges.iter().enumerate() {
            for r in e.from.iter().chain(&e.to) {
                m.entry(*r).or_default().push(i);
            }
        }
        m
    }

    fn check_wiring(&self) -> Result<()> {
        for (i, e) in self.edges.iter().enumerate() {
            let label = self.edge_label(i);
            let nodes: BTreeSet<usize> = e.from.iter().map(|r| r.node).collect();
            if let Some(r) = e.to.iter().find(|r| nodes.contains(&r.node)) {
                return Err(self.err(format!(
                    "{label}: node {} feeds itself",
                    self.nodes[r.node].name
                )));
            }
            if e.pattern == Pattern::Pair && (e.from.len() > 1 || e.to.len() > 1) {
                return Err(self.err(format!(
                    "{label}: pattern mismatch: a pair joins exactly one output to one input; use pushpull or pubsub to fan out or in"
                )));
            }
            if e.from.len() > 1 && e.to.len() > 1 {
                return Err(self.err(format!(
                    "{label}: many outputs to many inputs; put a proxy node between them (fan in to it, fan out of it)"
                )));
            }
        }
        let pe = self.port_edges();
        for (r, list) in &pe {
            let node = &self.nodes[r.node];
            let spec = node.port(r.port).expect("checked");
            if list.len() > 1 && !spec.multi {
                return Err(self.err(format!(
                    "node {}: port {} is bound twice, by {} and {}; one port is one edge (fan out or in within one edge: \"to\": [...])",
                    node.name,
                    r.port,
                    self.edge_label(list[0]),
                    self.edge_label(list[1])
                )));
            }
            let pats: BTreeSet<&str> = list.iter().map(|&i| self.edges[i].pattern.name()).collect();
            if pats.len() > 1 {
                return Err(self.err(format!(
                    "node {}: port {}: pattern mismatch: its edges use {}; one socket has one pattern",
                    node.name,
                    r.port,
                    pats.into_iter().collect::<Vec<_>>().join(" and ")
                )));
            }
        }
        for node in &self.nodes {
            for spec in ports(node.kind).unwrap_or(&[]) {
                let r = PortRef {
                    node: self
                        .nodes
                        .iter()
                        .position(|n| n.name == node.name)
                        .expect("own"),
                    port: spec.name,
                };
                if spec.required && !pe.contains_key(&r) {
                    return Err(self.err(format!(
                        "node {}: port {} is not connected (dangling): a {} needs its {} port",
                        node.name,
                        spec.name,
                        node.kind.name(),
                        spec.name
                    )));
                }
            }
        }
        if let Some(cycle) = self.cycle() {
            let names: Vec<&str> = cycle.iter().map(|&k| self.nodes[k].name.as_str()).collect();
            return Err(self.err(format!(
                "edges form a cycle, which cannot drain (a stop drains upstream first, and a cycle has no upstream end; messages could circle for ever): {} -> {}; only an edge to a done port may lead back upstream",
                names.join(" -> "),
                names[0]
            )));
        }
        Ok(())
    }

    /// A cycle of nodes along the edges that carry data (edges to a `done`
    /// port report back upstream and are left out), as the nodes in order,
    /// or `None` when there is none.
    pub fn cycle(&self) -> Option<Vec<usize>> {
        let n = self.nodes.len();
        let mut next = vec![BTreeSet::new(); n];
        for e in self
            .edges
            .iter()
            .filter(|e| e.to.iter().all(|t| t.port != "done"))
        {
            for f in &e.from {
                for t in &e.to {
                    next[f.node].insert(t.node);
                }
            }
        }
        // Depth first, without recursion (a graph may be large): 0 not
        // seen, 1 on the current path, 2 finished.
        let mut mark = vec![0u8; n];
        for root in 0..n {
            if mark[root] != 0 {
                continue;
            }
            let mut path: Vec<(usize, Vec<usize>)> =
                vec![(root, next[root].iter().rev().copied().collect())];
            mark[root] = 1;
            while let Some((_, todo)) = path.last_mut() {
                match todo.pop() {
                    Some(k) if mark[k] == 1 => {
                        let at = path.iter().position(|(x, _)| *x == k).expect("on path");
                        return Some(path[at..].iter().map(|(x, _)| *x).collect());
                    }
                    Some(k) if mark[k] == 0 => {
                        mark[k] = 1;
                        let mut t: Vec<usize> = next[k].iter().copied().collect();
                        t.reverse();
                        path.push((k, t));
                    }
                    Some(_) => {}
                    None => {
                        let (k, _) = path.pop().expect("non-empty");
                        mark[k] = 2;
                    }
                }
            }
        }
        None
    }

    /// Process indices in an order where each comes after the processes
    /// feeding it (upstream first), done edges (a sink telling a source it
    /// has everything) aside; in any other cycle, graph order breaks the
    /// tie.
    pub fn process_order(&self) -> Vec<usize> {
        let n = self.processes.len();
        let mut feeds = vec![BTreeSet::new(); n];
        // A done edge reports back upstream; it does not feed.
        for e in self
            .edges
            .iter()
            .filter(|e| e.to.iter().all(|t| t.port != "done"))
        {
            for f in &e.from {
                for t in &e.to {
                    let (a, b) = (self.nodes[f.node].process, self.nodes[t.node].process);
                    if a != b {
                        feeds[a].insert(b);
                    }
                }
            }
        }
        let feeds: Vec<Vec<usize>> = feeds.into_iter().map(|s| s.into_iter().collect()).collect();
        ptmp_agents::upstream_order(&feeds)
    }

    /// Index into [`Graph::hosts`] of the host called `name`; the error
    /// lists the hosts there are.
    pub fn host_index(&self, name: &str) -> Result<usize> {
        self.hosts
            .iter()
            .position(|h| h.name == name)
            .ok_or_else(|| {
                self.err(format!(
                    "no host named {name:?}; hosts: {}",
                    self.host_names()
                ))
            })
    }

    /// The hosts' names, comma-separated, for error messages.
    fn host_names(&self) -> String {
        self.hosts
            .iter()
            .map(|h| h.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A graph's default name from its file: the stem, with anything but
/// letters, digits and '-' made '_'.
pub fn name_from_path(path: &std::path::Path) -> String {
    path.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("graph")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Parse, validate and wire a graph for running from `run_dir` (default
/// [`plan::default_run_dir`], made absolute): what `ptmp graph` and the
/// Python binding both do with a loaded configuration.
pub fn load(
    v: &Value,
    default_name: &str,
    run_dir: Option<&std::path::Path>,
) -> Result<(Graph, plan::Plan)> {
    let g = Graph::parse(v, default_name)?;
    let dir = run_dir
        .map(std::path::Path::to_path_buf)
        .unwrap_or_else(|| plan::default_run_dir(&g.name));
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    let p = plan::Plan::make(&g, &dir)?;
    Ok((g, p))
}

#[cfg(test)]
mod tests;
