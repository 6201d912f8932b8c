//! The state of a whole graph run, read from its run directory: what `ptmp
//! graph status --json` prints and Python's `run_graph` hands back. It is
//! the [`GraphState`] every view serializes (read by the same
//! [`Collector`]), keyed for a script: each node's and each process's state
//! by name, each edge with its ends written `node.port`, and the status
//! documents it was read from.

use super::live::EdgeShown;
use super::{Collector, GraphState, NodeState, ProcessStatus, Supervised};
use crate::plan::Plan;
use crate::Graph;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One edge of the graph and its figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EdgeReport {
    /// `e0`, `e1`... in the graph's order, as the monitor names them.
    pub id: String,
    /// The sending ports, `node.port`.
    pub from: Vec<String>,
    /// The receiving ports, `node.port`.
    pub to: Vec<String>,
    /// The transport's scheme (`shm`, `ipc`, `tcp`, `inproc`).
    pub transport: String,
    /// The addresses its binding ports bind.
    pub addresses: Vec<String>,
    /// What its sockets say, summed, as every view shows it.
    #[serde(flatten)]
    pub figures: EdgeShown,
}

/// A graph run's state, as every process's status file and the
/// supervisor's `processes.json` give it.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The graph's name.
    pub graph: String,
    /// The run directory read.
    pub run_dir: PathBuf,
    /// Every process's status document, by process name.
    pub parts: Vec<ProcessStatus>,
    /// Each node's state by name.
    pub states: BTreeMap<String, NodeState>,
    /// Each process's state by name.
    pub process_states: BTreeMap<String, NodeState>,
    /// Each edge's figures, in the graph's order.
    pub edges: Vec<EdgeReport>,
    /// Status files that could not be read, each with why.
    #[serde(skip)]
    pub unreadable: Vec<String>,
    /// The supervisor's `processes.json`, when there is one.
    #[serde(skip)]
    pub supervised: Option<Supervised>,
    /// The state every view shows, whole.
    #[serde(skip)]
    pub state: GraphState,
}

impl Report {
    /// Read the state of the run of `graph` planned as `plan` from its run
    /// directory now: every host's part is taken to be there (a run on
    /// one machine).
    pub fn read(graph: &Graph, plan: &Plan) -> Report {
        let parts = (0..graph.hosts.len().max(1))
            .map(|h| (h, plan.run_dir.clone()))
            .collect();
        let reading = Collector::across(graph, plan, parts, Default::default()).read();
        let state = reading.state;
        let edges = state
            .edges
            .iter()
            .map(|e| EdgeReport {
                id: e.id.clone(),
                from: e.from.iter().map(|p| p.dotted()).collect(),
                to: e.to.iter().map(|p| p.dotted()).collect(),
                transport: e.transport.clone(),
                addresses: e.addresses.clone(),
                figures: e.figures.clone(),
            })
            .collect();
        Report {
            graph: graph.name.clone(),
            run_dir: plan.run_dir.clone(),
            states: by_name(state.nodes.iter().map(|n| (&n.name, &n.state))),
            process_states: by_name(state.processes.iter().map(|p| (&p.name, &p.state))),
            parts: reading.statuses,
            edges,
            unreadable: reading.unreadable,
            supervised: reading.supervised.into_values().flatten().next(),
            state,
        }
    }
}

/// Names and states as a map.
fn by_name<'a>(
    it: impl Iterator<Item = (&'a String, &'a NodeState)>,
) -> BTreeMap<String, NodeState> {
    it.map(|(n, s)| (n.clone(), s.clone())).collect()
}
