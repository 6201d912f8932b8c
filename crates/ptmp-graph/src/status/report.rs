//! The state of a whole graph run, read from its run directory: what `ptmp
//! graph status --json` prints and Python's `run_graph` hands back, built
//! from the same rules as the terminal view and the monitor
//! ([`node_state`](super::node_state), [`process_state`](super::process_state),
//! [`EdgeFigures`]).

use super::{node_states, process_states, read_all_noting, read_processes, EdgeFigures};
use super::{ProcessStatus, Supervised};
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
    /// What its sockets say, summed.
    #[serde(flatten)]
    pub figures: EdgeFigures,
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
    pub states: BTreeMap<String, String>,
    /// Each process's state by name.
    pub process_states: BTreeMap<String, String>,
    /// Each edge's figures, in the graph's order.
    pub edges: Vec<EdgeReport>,
    /// Status files that could not be read, each with why.
    #[serde(skip)]
    pub unreadable: Vec<String>,
    /// The supervisor's `processes.json`, when there is one.
    #[serde(skip)]
    pub supervised: Option<Supervised>,
}

impl Report {
    /// Read the state of the run of `graph` planned as `plan` from its run
    /// directory now.
    pub fn read(graph: &Graph, plan: &Plan) -> Report {
        let (parts, unreadable) = read_all_noting(&plan.run_dir);
        let sup: Option<Supervised> = read_processes(&plan.run_dir);
        let sockets: Vec<_> = parts.iter().flat_map(|p| &p.sockets).collect();
        let port = |r: &crate::PortRef| format!("{}.{}", graph.nodes[r.node].name, r.port);
        let edges = graph
            .edges
            .iter()
            .zip(&plan.links)
            .enumerate()
            .map(|(i, (e, l))| {
                let addresses = l.addresses();
                EdgeReport {
                    id: format!("e{i}"),
                    from: e.from.iter().map(port).collect(),
                    to: e.to.iter().map(port).collect(),
                    transport: l.transport.scheme().to_string(),
                    figures: EdgeFigures::of(&addresses, sockets.iter().copied()),
                    addresses,
                }
            })
            .collect();
        Report {
            graph: graph.name.clone(),
            run_dir: plan.run_dir.clone(),
            states: node_states(&parts, sup.as_ref()),
            process_states: process_states(&parts, sup.as_ref()),
            parts,
            edges,
            unreadable,
            supervised: sup,
        }
    }
}
