//! Reading a graph run's [`GraphState`] from its run directories: the plan
//! gives the shape (hosts, processes, nodes, ports, edges and their
//! transports), the status files each process writes give counts, rates
//! and latencies, and each supervisor's `processes.json` gives its
//! processes' states and restarts. Nothing here runs on the data path: the
//! processes write their files anyway, and a view reads them on its own
//! thread.

use super::live::{
    EdgeShown, EdgeView, GraphState, HostState, NodeView, PortDir, PortRefView, PortView,
    ProcessState,
};
use super::{read_all_noting, read_processes, EdgeFigures, NodeState};
use super::{NodeCounts, ProcessStatus, SocketStatus, Supervised};
use crate::plan::Plan;
use crate::Graph;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One port's place in the graph, for labelling a socket.
#[derive(Debug, Clone)]
struct PortAt {
    node: usize,
    port: &'static str,
    edge: usize,
    out: bool,
}

/// What a socket of a process is, once matched to the plan.
#[derive(Debug, Clone, Default)]
pub struct SocketRow {
    /// The graph process it lives in.
    pub process: String,
    /// Its host's name.
    pub host: String,
    /// Index of the socket within its process (unique with `process`).
    pub index: usize,
    /// The node and port it belongs to, when the plan says.
    pub node: String,
    /// The port's name.
    pub port: String,
    /// The edge index, as the page and metrics name it (`e0`, `e1`...).
    pub edge: String,
    /// The edge's transport scheme (`shm`, `ipc`, `tcp`, `inproc`).
    pub transport: String,
    /// `send` or `recv`.
    pub direction: String,
    /// The socket's figures as the status file gives them.
    pub doc: SocketStatus,
}

impl SocketRow {
    /// The row of socket `index` of a process, from its status document,
    /// not yet matched to a node and port.
    pub fn from_doc(process: String, host: String, index: usize, doc: &SocketStatus) -> SocketRow {
        SocketRow {
            process,
            host,
            index,
            direction: doc.dir.word().into(),
            doc: doc.clone(),
            ..Default::default()
        }
    }
}

/// Where a scheduler placed each host's part (host index to a Slurm
/// node's name), kept up to date by whoever moves parts.
pub type Placement = Arc<Mutex<BTreeMap<usize, String>>>;

/// One reading of the run directories: the state and what it was made of.
#[derive(Debug, Clone)]
pub struct Reading {
    /// The state.
    pub state: GraphState,
    /// Every socket, matched to the plan where it could be.
    pub rows: Vec<SocketRow>,
    /// Every status document read.
    pub statuses: Vec<ProcessStatus>,
    /// Status files that could not be read, each with why (and, in a
    /// reading of plans alone, [`Planned`](super::Planned), plans and
    /// supervisors' files).
    pub unreadable: Vec<String>,
    /// Each part's supervisor's document, by host index.
    pub supervised: BTreeMap<usize, Option<Supervised>>,
}

/// Reads the state of one graph run: one host's part, or several whose
/// run directories this process can read (a graph under Slurm with its run
/// directories on a shared file system).
pub struct Collector {
    graph: Graph,
    plan: Plan,
    /// Each part read: its host (an index into the graph's hosts) and its
    /// supervisor's run directory.
    parts: Vec<(usize, PathBuf)>,
    /// Where each part runs, when a scheduler placed them.
    placement: Placement,
    /// The host named as this view's in the state (the first part's).
    host: usize,
    /// Per edge, the addresses it uses.
    edge_addrs: Vec<Vec<String>>,
    ports_by_process: BTreeMap<usize, Vec<PortAt>>,
    /// When the view started (its uptime is counted from here).
    pub started: Instant,
}

impl Collector {
    /// A collector for graph `g` as planned by `plan`, run on host `host`
    /// (an index into `g.hosts`).
    pub fn new(graph: &Graph, plan: &Plan, host: usize) -> Collector {
        Collector::across(
            graph,
            plan,
            vec![(host, plan.run_dir.clone())],
            Placement::default(),
        )
    }

    /// A collector of several hosts' parts, each `(host, run directory)`,
    /// placed on nodes as `placement` says now. Hosts not listed are shown
    /// "elsewhere". Parts sharing a run directory are read once.
    pub fn across(
        graph: &Graph,
        plan: &Plan,
        parts: Vec<(usize, PathBuf)>,
        placement: Placement,
    ) -> Collector {
        let edge_addrs: Vec<Vec<String>> = plan
            .links
            .iter()
            .map(|l| l.binds.iter().map(|(_, a)| a.clone()).collect())
            .collect();
        Collector {
            graph: graph.clone(),
            plan: plan.clone(),
            host: parts.first().map_or(0, |p| p.0),
            parts,
            placement,
            edge_addrs,
            ports_by_process: ports_by_process(graph),
            started: Instant::now(),
        }
    }

    /// The graph being watched.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// Read the run directories now: the whole state (without history)
    /// and every socket, matched to the plan.
    pub fn collect(&mut self) -> (GraphState, Vec<SocketRow>) {
        let r = self.read();
        (r.state, r.rows)
    }

    /// Read the run directories now, keeping what the state was made of.
    pub fn read(&self) -> Reading {
        let mut dirs = BTreeSet::new();
        let (mut statuses, mut unreadable) = (Vec::new(), Vec::new());
        for (_, dir) in &self.parts {
            if dirs.insert(dir) {
                let (st, bad) = read_all_noting(dir);
                statuses.extend(st);
                unreadable.extend(bad);
            }
        }
        let supervised: BTreeMap<usize, Option<Supervised>> = self
            .parts
            .iter()
            .map(|(host, dir)| (*host, read_processes(dir)))
            .collect();
        let placed = self
            .placement
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let said = Said {
            supervised: &supervised,
            statuses: &statuses,
            placed: &placed,
            here: super::this_node(),
            now: super::now_us(),
        };
        let rows = self.rows(&statuses);
        let g = &self.graph;
        let uptime = self.started.elapsed().as_secs_f64();
        let state = GraphState {
            graph: g.name.clone(),
            host: g
                .hosts
                .get(self.host)
                .map(|h| h.name.clone())
                .unwrap_or_default(),
            time_us: super::now_us(),
            uptime_s: (uptime * 10.0).round() / 10.0,
            structure: None,
            hosts: self.hosts(&said),
            processes: self.processes(&said),
            nodes: self.nodes(&said, &statuses),
            edges: self.edges(&rows),
        };
        Reading {
            state,
            rows,
            statuses,
            unreadable,
            supervised,
        }
    }

    /// Every socket of every process that wrote a status, matched to the
    /// plan. A status file left by an earlier pid of a restarted process
    /// still counts until the new one writes its own.
    fn rows(&self, statuses: &[ProcessStatus]) -> Vec<SocketRow> {
        let g = &self.graph;
        let mut rows = Vec::new();
        for st in statuses {
            if let Some(pi) = g.processes.iter().position(|p| p.name == st.process) {
                rows.extend(self.match_sockets(pi, &st.sockets));
            }
        }
        rows
    }

    /// Match a process's sockets to the ports of the plan: a socket goes
    /// to the edges whose addresses it uses; when several ports of the
    /// process sit on the same edge in the same direction (nodes sharing
    /// a process and a fan-in), the sockets are taken in the order their
    /// nodes were built.
    fn match_sockets(&self, proc_index: usize, sockets: &[SocketStatus]) -> Vec<SocketRow> {
        let p = &self.graph.processes[proc_index];
        let host = self.graph.hosts[p.host].name.clone();
        let empty = vec![];
        let ports = self.ports_by_process.get(&proc_index).unwrap_or(&empty);
        let mut used = vec![false; ports.len()];
        let mut rows = Vec::new();
        for (k, s) in sockets.iter().enumerate() {
            let mut row = SocketRow::from_doc(p.name.clone(), host.clone(), k, s);
            let fits = |pa: &PortAt| {
                pa.out == s.sends()
                    && self.edge_addrs[pa.edge]
                        .iter()
                        .any(|a| s.endpoints.contains(a))
            };
            let pick = (0..ports.len())
                .find(|&j| !used[j] && fits(&ports[j]))
                .or_else(|| (0..ports.len()).find(|&j| fits(&ports[j])));
            if let Some(j) = pick {
                used[j] = true;
                // A multi port (a zipper's input) holds one socket for all
                // its edges: mark them all as served by this socket.
                for (u, q) in used.iter_mut().zip(ports) {
                    if q.node == ports[j].node && q.port == ports[j].port {
                        *u = true;
                    }
                }
                let pa = &ports[j];
                row.node = self.graph.nodes[pa.node].name.clone();
                row.port = pa.port.to_string();
                row.edge = format!("e{}", pa.edge);
                row.transport = self.plan.links[pa.edge].transport.scheme().to_string();
            }
            rows.push(row);
        }
        rows
    }

    /// Every host, and where its part runs.
    fn hosts(&self, said: &Said<'_>) -> Vec<HostState> {
        let g = &self.graph;
        g.hosts
            .iter()
            .enumerate()
            .map(|(i, h)| HostState {
                name: h.name.clone(),
                address: h.address.clone(),
                node: said.node_of(i),
                step: said.step_of(i),
            })
            .collect()
    }

    /// Every process: its state, restarts and pid.
    fn processes(&self, said: &Said<'_>) -> Vec<ProcessState> {
        let g = &self.graph;
        g.processes
            .iter()
            .map(|p| {
                let (restarts, pid) = said.restarts_pid(p.host, &p.name);
                ProcessState {
                    name: p.name.clone(),
                    host: g.hosts[p.host].name.clone(),
                    node: said.node_of(p.host),
                    step: said.step_of(p.host),
                    state: said.state(p.host, &p.name, None),
                    restarts,
                    pid,
                }
            })
            .collect()
    }

    /// Every node: its state, counts, rates and ports.
    fn nodes(&self, said: &Said<'_>, statuses: &[ProcessStatus]) -> Vec<NodeView> {
        let g = &self.graph;
        let counts: BTreeMap<&str, &NodeCounts> = statuses
            .iter()
            .flat_map(|st| &st.nodes)
            .map(|n| (n.name.as_str(), n))
            .collect();
        g.nodes
            .iter()
            .map(|n| {
                let p = &g.processes[n.process];
                let d = counts.get(n.name.as_str()).copied().cloned();
                let d = d.unwrap_or_default();
                let ports = crate::ports(n.kind)
                    .unwrap_or(&[])
                    .iter()
                    .map(|s| PortView {
                        name: s.name.to_string(),
                        dir: PortDir::of(s.dir == crate::Dir::Out),
                    })
                    .collect();
                NodeView {
                    name: n.name.clone(),
                    kind: n.kind.name().to_string(),
                    process: p.name.clone(),
                    host: g.hosts[p.host].name.clone(),
                    state: said.state(p.host, &p.name, Some(&n.name)),
                    restarts: said.restarts_pid(p.host, &p.name).0,
                    received: d.received,
                    sent: d.sent,
                    in_rate: d.in_rate,
                    out_rate: d.out_rate,
                    ports,
                }
            })
            .collect()
    }

    /// Every edge's figures, by the rule every view uses
    /// ([`EdgeFigures::of`]): the sockets on the edge's addresses alone.
    fn edges(&self, rows: &[SocketRow]) -> Vec<EdgeView> {
        let g = &self.graph;
        let side = |v: &[crate::PortRef]| -> Vec<PortRefView> {
            v.iter()
                .map(|r| PortRefView {
                    node: g.nodes[r.node].name.clone(),
                    port: r.port.to_string(),
                })
                .collect()
        };
        g.edges
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let f = EdgeFigures::of(&self.edge_addrs[i], rows.iter().map(|r| &r.doc));
                EdgeView {
                    id: format!("e{i}"),
                    pattern: e.pattern.name().to_string(),
                    transport: self.plan.links[i].transport.scheme().to_string(),
                    addresses: self.edge_addrs[i].clone(),
                    from: side(&e.from),
                    to: side(&e.to),
                    figures: EdgeShown::from(&f),
                }
            })
            .collect()
    }
}

/// Every port of every edge, by the process its node runs in, sorted by
/// node and edge.
fn ports_by_process(graph: &Graph) -> BTreeMap<usize, Vec<PortAt>> {
    let mut by: BTreeMap<usize, Vec<PortAt>> = BTreeMap::new();
    for (i, e) in graph.edges.iter().enumerate() {
        let ends = e.from.iter().map(|r| (r, true));
        for (r, out) in ends.chain(e.to.iter().map(|r| (r, false))) {
            by.entry(graph.nodes[r.node].process)
                .or_default()
                .push(PortAt {
                    node: r.node,
                    port: r.port,
                    edge: i,
                    out,
                });
        }
    }
    for v in by.values_mut() {
        v.sort_by_key(|p| (p.node, p.edge));
    }
    by
}

/// What the parts' supervisors and status files say, read once per
/// reading.
struct Said<'a> {
    supervised: &'a BTreeMap<usize, Option<Supervised>>,
    statuses: &'a [ProcessStatus],
    placed: &'a BTreeMap<usize, String>,
    here: Option<String>,
    now: u64,
}

impl Said<'_> {
    /// The supervisor's document of `host`'s part, when it was read.
    fn doc(&self, host: usize) -> Option<&Supervised> {
        self.supervised.get(&host).and_then(Option::as_ref)
    }

    /// The node `host`'s part runs on: where it was placed, else what its
    /// supervisor says (under Slurm).
    fn node_of(&self, host: usize) -> Option<String> {
        self.placed
            .get(&host)
            .cloned()
            .or_else(|| self.doc(host).and_then(|d| d.node.clone()))
    }

    /// The Slurm job step of `host`'s part, when its supervisor says.
    fn step_of(&self, host: usize) -> Option<String> {
        self.doc(host).and_then(|d| d.step.clone())
    }

    /// A process's restarts and pid, as its supervisor says.
    fn restarts_pid(&self, host: usize, name: &str) -> (u64, Option<u64>) {
        self.doc(host)
            .and_then(|d| d.process(name))
            .map_or((0, None), |p| (u64::from(p.restarts), p.pid.map(u64::from)))
    }

    /// The state of process `process` ([`process_state`](super::process_state))
    /// or, given `node`, of that node of it ([`node_state`](super::node_state));
    /// `elsewhere` for a part this view does not read.
    fn state(&self, host: usize, process: &str, node: Option<&str>) -> NodeState {
        let Some(sup) = self.supervised.get(&host) else {
            return NodeState::Elsewhere;
        };
        let st = self.statuses.iter().find(|s| s.process == process);
        let local = super::runs_here(sup.as_ref(), self.here.as_deref());
        let said = sup.as_ref().and_then(|s| s.process(process));
        match node {
            Some(n) => super::node_state(said, st, n, local, self.now),
            None => super::process_state(said, st, local, self.now),
        }
    }
}
