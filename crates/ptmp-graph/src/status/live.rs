//! The live state of a graph run, typed: what the monitor serves as
//! `/api/state` (and each event of its stream), what `/metrics` and the
//! page's history are taken from, and what `ptmp graph status --json` and
//! Python's `run_graph` report ([`Report`](super::Report)). Every view
//! serializes this one value, so they cannot say different things of a
//! node, a process or an edge. It is built by a
//! [`Collector`](super::Collector) from a graph and its run directories,
//! by [`Planned`](super::Planned) from a run directory alone (what `ptmp
//! top` shows), or by the monitor of `ptmp run` from its own process's
//! counters.

use super::{EdgeFigures, NodeState};
use serde::Serialize;

/// The whole graph now, without history.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GraphState {
    /// The graph's name.
    pub graph: String,
    /// The host this view runs on (the first part's).
    pub host: String,
    /// When it was gathered, microseconds since the Unix epoch.
    pub time_us: u64,
    /// Seconds since the view started, to a tenth.
    pub uptime_s: f64,
    /// Grows by one each time the graph is changed (`ptmp graph apply`),
    /// so a client knows the nodes and edges (and their names `e0`,
    /// `e1`...) may mean others; absent for a view that cannot change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structure: Option<u64>,
    /// Every host of the graph.
    pub hosts: Vec<HostState>,
    /// Every process of the graph.
    pub processes: Vec<ProcessState>,
    /// Every node of the graph.
    pub nodes: Vec<NodeView>,
    /// Every edge, in the graph's order.
    pub edges: Vec<EdgeView>,
}

/// A host of the graph and where a scheduler placed its part.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HostState {
    /// Its name in the graph.
    pub name: String,
    /// The address the graph gives it.
    pub address: String,
    /// The scheduler's node it runs on (under Slurm), if placed.
    pub node: Option<String>,
    /// Its Slurm job step, if any.
    pub step: Option<String>,
}

/// A process of the graph.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessState {
    /// Its name.
    pub name: String,
    /// Its host's name.
    pub host: String,
    /// The scheduler's node it runs on, if placed.
    pub node: Option<String>,
    /// Its Slurm job step, if any.
    pub step: Option<String>,
    /// Its state ([`process_state`](super::process_state)).
    pub state: NodeState,
    /// How often its supervisor restarted it.
    pub restarts: u64,
    /// Its pid, as its supervisor last saw it (a reading of plans alone,
    /// [`Planned`](super::Planned), takes the one its status gives when
    /// no supervisor says).
    pub pid: Option<u64>,
}

/// A node of the graph: its state, counts and ports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeView {
    /// Its name.
    pub name: String,
    /// Its kind (`source`, `zipper`, ...).
    pub kind: String,
    /// Its process's name.
    pub process: String,
    /// Its host's name.
    pub host: String,
    /// Its state ([`node_state`](super::node_state)).
    pub state: NodeState,
    /// How often its process was restarted.
    pub restarts: u64,
    /// Messages it took in so far.
    #[serde(rename = "in")]
    pub received: u64,
    /// Messages it sent so far.
    #[serde(rename = "out")]
    pub sent: u64,
    /// Messages in per second, over about the last second.
    pub in_rate: f64,
    /// Messages out per second, over about the last second.
    pub out_rate: f64,
    /// Its ports.
    pub ports: Vec<PortView>,
}

/// A port of a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortView {
    /// Its name (`in`, `out`, ... or, for `ptmp run`, the config key).
    pub name: String,
    /// `in` or `out`.
    pub dir: PortDir,
}

/// Which way a port carries messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PortDir {
    /// Into its node.
    In,
    /// Out of its node.
    Out,
}

impl PortDir {
    /// `Out` for a sending port, `In` for a receiving one.
    pub fn of(sends: bool) -> PortDir {
        if sends {
            PortDir::Out
        } else {
            PortDir::In
        }
    }
}

/// One end of an edge: a node's port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortRefView {
    /// The node's name.
    pub node: String,
    /// The port's name.
    pub port: String,
}

impl PortRefView {
    /// `node.port`, as graphs write it.
    pub fn dotted(&self) -> String {
        format!("{}.{}", self.node, self.port)
    }
}

/// An edge of the graph and its figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EdgeView {
    /// `e0`, `e1`... in the graph's order.
    pub id: String,
    /// Its messaging pattern (`pushpull`, `pubsub`, `pair`).
    pub pattern: String,
    /// Its transport's scheme (`shm`, `ipc`, `tcp`, `inproc`).
    pub transport: String,
    /// The addresses its binding ports bind.
    pub addresses: Vec<String>,
    /// The sending ports.
    pub from: Vec<PortRefView>,
    /// The receiving ports.
    pub to: Vec<PortRefView>,
    /// What its sockets say, summed ([`EdgeFigures::of`]).
    #[serde(flatten)]
    pub figures: EdgeShown,
}

/// An edge's figures as the views show them: rates rounded (to a tenth of
/// a message, to a whole byte), latency quantiles `null` with no sample.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EdgeShown {
    /// Messages its senders sent.
    pub sent: u64,
    /// Messages its receivers took in.
    pub received: u64,
    /// Bytes that went through it.
    pub bytes: u64,
    /// Messages per second (0 when nothing says).
    pub rate: f64,
    /// Bytes per second.
    pub byte_rate: f64,
    /// Messages its receivers know were lost.
    pub lost: u64,
    /// Errors on either end.
    pub errors: u64,
    /// Sends that found the queue full.
    pub stalls: u64,
    /// Durable shm readers its ring gave up.
    pub readers_given_up: u64,
    /// Clients its CURVE server (either end) refused.
    pub curve_refused: u64,
    /// Latency since each TPSet's `created`.
    pub latency_us: LatencyShown,
    /// Sockets counted: senders, receivers.
    pub sockets: (usize, usize),
}

/// Latency quantiles in microseconds, each `null` with no sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LatencyShown {
    /// The median.
    pub p50: Option<u64>,
    /// The 99th percentile.
    pub p99: Option<u64>,
    /// The largest.
    pub max: Option<u64>,
}

impl From<&EdgeFigures> for EdgeShown {
    fn from(f: &EdgeFigures) -> EdgeShown {
        let lat = |q: fn(&super::Latency) -> u64| f.latency_us.as_ref().map(q);
        EdgeShown {
            sent: f.sent,
            received: f.received,
            bytes: f.bytes,
            rate: (f.rate.unwrap_or(0.0) * 10.0).round() / 10.0,
            byte_rate: f.byte_rate.round(),
            lost: f.lost,
            errors: f.errors,
            stalls: f.stalls,
            readers_given_up: f.readers_given_up,
            curve_refused: f.curve_refused,
            latency_us: LatencyShown {
                p50: lat(|l| l.p50),
                p99: lat(|l| l.p99),
                max: lat(|l| l.max),
            },
            sockets: f.sockets,
        }
    }
}

impl GraphState {
    /// The node named `name`.
    pub fn node(&self, name: &str) -> Option<&NodeView> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// The process named `name`.
    pub fn process(&self, name: &str) -> Option<&ProcessState> {
        self.processes.iter().find(|p| p.name == name)
    }
}
