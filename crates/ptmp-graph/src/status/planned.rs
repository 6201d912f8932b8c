//! Reading a graph run's [`GraphState`] from its run directory alone, with
//! no graph file: what `ptmp top` shows. The plan files
//! (`plan-PROCESS.json`, each process's nodes and their sockets) give the
//! shape: a node per planned node, a port per socket (named by the key of
//! the node's `data` it sits under), and an edge per address that some
//! socket sends to and another receives from. The status files give
//! counts, rates and latencies, by the rules every view uses
//! ([`node_state`], [`EdgeFigures`]); each supervisor's `processes.json`
//! its processes' states, pids and restarts. A directory holding one run
//! directory per host ([`part_dirs`](crate::rundir::part_dirs)) is read
//! whole, a host per part.
//!
//! Nodes and edges are listed in the order the data flows: by how far
//! downstream a node is (the longest path to it from a node nothing
//! feeds), then by name; an edge by its most upstream sender.

use super::live::{
    EdgeShown, EdgeView, GraphState, HostState, NodeView, PortDir, PortRefView, PortView,
    ProcessState,
};
use super::{node_state, pattern_of, process_state, read_all_noting, read_processes_noting};
use super::{runs_here, SupervisedProcess};
use super::{EdgeFigures, ProcessStatus, Reading, SocketRow, SocketStatus, Supervised};
use crate::rundir::docs::PartPlan;
use crate::rundir::{self, PartDir};
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The host's name for a lone run directory (not one of several hosts').
pub const LOCALHOST: &str = "localhost";

/// Reads the state of one graph run from its run directory, or from the
/// directory holding one run directory per host.
pub struct Planned {
    dir: PathBuf,
    /// When the view started (its uptime is counted from here).
    pub started: Instant,
}

/// One part as a reading found it.
#[derive(Debug, Clone)]
pub struct PartRead {
    /// Its host and run directory.
    pub part: PartDir,
    /// Its status documents: this range of [`Reading::statuses`].
    pub statuses: Range<usize>,
}

/// One reading of a run directory: the state, what it was made of, and
/// its parts.
#[derive(Debug, Clone)]
pub struct PlannedReading {
    /// The state and what it was made of. Its `supervised` is keyed by
    /// part (the index of the part's host in the state's hosts); its
    /// `unreadable` names every plan, supervisor's file and status file
    /// that could not be read, part by part.
    pub reading: Reading,
    /// Every part read, in the order of the state's hosts.
    pub parts: Vec<PartRead>,
}

impl Planned {
    /// A reader of the run directory `dir`, or of the directory holding
    /// one run directory per host.
    pub fn new(dir: impl Into<PathBuf>) -> Planned {
        Planned {
            dir: dir.into(),
            started: Instant::now(),
        }
    }

    /// The directory read.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Read the run directories now: the whole state (without history),
    /// every socket matched to its node and port, and what it was made of.
    pub fn read(&self) -> PlannedReading {
        let parts = rundir::part_dirs(&self.dir);
        let (shape, said, unreadable) = read_parts(&parts);
        let ends = shape.ends();
        let depth = shape.depths(&ends);
        let depth_of = |n: &str| depth.get(n).copied().unwrap_or(0);
        let edges = shape.edge_order(&ends, &depth_of);
        let ids: HashMap<&str, String> = edges
            .iter()
            .enumerate()
            .map(|(k, (a, _))| (*a, format!("e{k}")))
            .collect();
        let mut nodes = said.nodes(&shape);
        nodes.sort_by(|a, b| {
            (depth_of(&a.name).cmp(&depth_of(&b.name))).then_with(|| a.name.cmp(&b.name))
        });
        let graph = shape.graph.clone().or_else(|| {
            said.statuses
                .iter()
                .map(|s| s.graph.clone())
                .find(|g| !g.is_empty())
        });
        let uptime = self.started.elapsed().as_secs_f64();
        let state = GraphState {
            graph: graph.unwrap_or_default(),
            host: said.hosts[0].clone(),
            time_us: said.now,
            uptime_s: (uptime * 10.0).round() / 10.0,
            structure: None,
            hosts: said.hosts(),
            processes: said.processes(&shape),
            nodes,
            edges: (edges.iter().enumerate())
                .map(|(k, (a, e))| shape.edge(k, a, e, &said.statuses))
                .collect(),
        };
        let rows = said.rows(&shape, &ids);
        let parts = parts
            .into_iter()
            .zip(&said.ranges)
            .map(|(part, r)| PartRead {
                part,
                statuses: r.clone(),
            })
            .collect();
        let reading = Reading {
            state,
            rows,
            statuses: said.statuses,
            unreadable,
            supervised: said.supervised,
        };
        PlannedReading { reading, parts }
    }
}

/// Every part's plans, supervisor's file and status files, and what could
/// not be read of them (each plan, then the supervisor's file, then the
/// status files, part by part).
fn read_parts(parts: &[PartDir]) -> (Shape, Said, Vec<String>) {
    let here = super::this_node();
    let (mut shape, mut bad) = (Shape::default(), Vec::new());
    let mut said = Said {
        hosts: parts
            .iter()
            .map(|p| p.host.clone().unwrap_or_else(|| LOCALHOST.into()))
            .collect(),
        supervised: BTreeMap::new(),
        local: Vec::new(),
        statuses: Vec::new(),
        ranges: Vec::new(),
        now: super::now_us(),
    };
    for (i, part) in parts.iter().enumerate() {
        shape.add_plans(i, &part.dir, &mut bad);
        let sup = read_processes_noting(&part.dir).unwrap_or_else(|e| {
            bad.push(e.to_string());
            None
        });
        said.local.push(runs_here(sup.as_ref(), here.as_deref()));
        said.supervised.insert(i, sup);
        let (st, b) = read_all_noting(&part.dir);
        bad.extend(b);
        let start = said.statuses.len();
        said.statuses.extend(st);
        said.ranges.push(start..said.statuses.len());
    }
    (shape, said, bad)
}

/// A node as its process's plan describes it.
struct PlanNode {
    name: String,
    kind: String,
    process: String,
    /// The part whose plan names it.
    part: usize,
}

/// One socket of a planned node.
struct PlanSocket {
    /// Its node: an index into [`Shape::nodes`].
    node: usize,
    /// The key of the node's `data` it sits under: its port's name.
    key: String,
    sends: bool,
    /// Its type in upper case.
    stype: String,
    addresses: Vec<String>,
}

/// Per address, the sockets sending to it and those receiving from it
/// (indices into [`Shape::sockets`]).
type Ends = (Vec<usize>, Vec<usize>);

/// What the plans say: the graph's name, the processes, every node and
/// every socket, in the order of the plan files and their nodes.
#[derive(Default)]
struct Shape {
    graph: Option<String>,
    /// Each plan's part and process.
    processes: Vec<(usize, String)>,
    nodes: Vec<PlanNode>,
    sockets: Vec<PlanSocket>,
}

impl Shape {
    /// Every plan of part `part`, whose run directory is `dir`; a plan
    /// that cannot be read is said in `bad`.
    fn add_plans(&mut self, part: usize, dir: &Path, bad: &mut Vec<String>) {
        for f in rundir::plan_files(dir) {
            let plan = match PartPlan::read(&f) {
                Ok(v) => v,
                Err(e) => {
                    bad.push(format!("unreadable plan: {e}"));
                    continue;
                }
            };
            if self.graph.is_none() {
                self.graph = Some(plan.graph.clone());
            }
            self.processes.push((part, plan.process.clone()));
            for p in &plan.config.proxies {
                let node = self.nodes.len();
                self.nodes.push(PlanNode {
                    name: p.name.clone(),
                    kind: p.kind.clone(),
                    process: plan.process.clone(),
                    part,
                });
                for s in p.sockets() {
                    let stype = s.socket.stype.to_ascii_uppercase();
                    self.sockets.push(PlanSocket {
                        node,
                        key: s.key.to_string(),
                        sends: ptmp::SocketType::parse(&stype)
                            .map_or(s.key.contains("out"), |t| t.sends_under(s.key)),
                        stype,
                        addresses: s.socket.addresses().map(String::from).collect(),
                    });
                }
            }
        }
    }

    /// The name of the node socket `s` belongs to.
    fn node_of(&self, s: usize) -> &str {
        &self.nodes[self.sockets[s].node].name
    }

    /// Per address any planned socket uses, its senders and receivers.
    fn ends(&self) -> BTreeMap<&str, Ends> {
        let mut ends: BTreeMap<&str, Ends> = BTreeMap::new();
        for (i, s) in self.sockets.iter().enumerate() {
            for a in &s.addresses {
                let e = ends.entry(a.as_str()).or_default();
                if s.sends {
                    e.0.push(i);
                } else {
                    e.1.push(i);
                }
            }
        }
        ends
    }

    /// How far downstream each node is (the longest path to it from a
    /// node nothing feeds). A cycle only stops the counting after as many
    /// rounds as there are planned nodes.
    fn depths(&self, ends: &BTreeMap<&str, Ends>) -> HashMap<&str, usize> {
        let bound = self.nodes.len();
        let mut depth: HashMap<&str, usize> = HashMap::new();
        for _ in 0..=bound {
            let mut moved = false;
            for (tx, rx) in ends.values() {
                for &s in tx {
                    let d = depth.get(self.node_of(s)).copied().unwrap_or(0) + 1;
                    for &r in rx {
                        let e = depth.entry(self.node_of(r)).or_insert(0);
                        if *e < d && d <= bound {
                            *e = d;
                            moved = true;
                        }
                    }
                }
            }
            if !moved {
                break;
            }
        }
        depth
    }

    /// The edges: each address with a sender and a receiver, in the order
    /// the data flows (by its most upstream sender, then its first
    /// sender's name, then the address).
    fn edge_order<'a>(
        &self,
        ends: &'a BTreeMap<&'a str, Ends>,
        depth_of: &dyn Fn(&str) -> usize,
    ) -> Vec<(&'a str, &'a Ends)> {
        let mut edges: Vec<(&str, &Ends)> = ends
            .iter()
            .filter(|(_, (tx, rx))| !tx.is_empty() && !rx.is_empty())
            .map(|(a, e)| (*a, e))
            .collect();
        edges.sort_by_cached_key(|(_, (tx, _))| {
            let d = tx.iter().map(|&s| depth_of(self.node_of(s))).min();
            (d.unwrap_or(0), self.node_of(tx[0]).to_string())
        });
        edges
    }

    /// Edge `k`, on address `addr`, its figures from every socket of
    /// `statuses`.
    fn edge(&self, k: usize, addr: &str, (tx, rx): &Ends, statuses: &[ProcessStatus]) -> EdgeView {
        let port = |&s: &usize| PortRefView {
            node: self.node_of(s).to_string(),
            port: self.sockets[s].key.clone(),
        };
        let addresses = vec![addr.to_string()];
        let f = EdgeFigures::of(&addresses, statuses.iter().flat_map(|s| &s.sockets));
        EdgeView {
            id: format!("e{k}"),
            pattern: pattern_of(&self.sockets[tx[0]].stype),
            transport: scheme(addr).to_string(),
            addresses,
            from: tx.iter().map(port).collect(),
            to: rx.iter().map(port).collect(),
            figures: EdgeShown::from(&f),
        }
    }

    /// Node `node`'s ports: one per socket, named by its key.
    fn ports(&self, node: usize) -> Vec<PortView> {
        (self.sockets.iter().filter(|s| s.node == node))
            .map(|s| PortView {
                name: s.key.clone(),
                dir: PortDir::of(s.sends),
            })
            .collect()
    }

    /// The planned socket a socket of process `process` is: the first of
    /// a node of that process going the same way on one of its addresses.
    fn socket_of(&self, process: &str, doc: &SocketStatus) -> Option<&PlanSocket> {
        self.sockets.iter().find(|s| {
            self.nodes[s.node].process == process
                && s.sends == doc.sends()
                && s.addresses.iter().any(|a| doc.endpoints.contains(a))
        })
    }
}

/// An address's scheme (`shm`, `ipc`, `tcp`, `inproc`).
fn scheme(address: &str) -> &str {
    address.split("://").next().unwrap_or("")
}

/// What the parts' supervisors and status files say, read once per
/// reading.
struct Said {
    /// Each part's host's name.
    hosts: Vec<String>,
    /// Each part's supervisor's document, when it was read.
    supervised: BTreeMap<usize, Option<Supervised>>,
    /// Whether each part runs on this machine (its pids can be checked).
    local: Vec<bool>,
    /// Every status document, part by part.
    statuses: Vec<ProcessStatus>,
    /// Each part's status documents in `statuses`.
    ranges: Vec<Range<usize>>,
    now: u64,
}

impl Said {
    /// The supervisor's document of part `part`, when it was read.
    fn doc(&self, part: usize) -> Option<&Supervised> {
        self.supervised.get(&part).and_then(Option::as_ref)
    }

    /// What part `part`'s supervisor says of process `name`.
    fn sup(&self, part: usize, name: &str) -> Option<&SupervisedProcess> {
        self.doc(part).and_then(|d| d.process(name))
    }

    /// How often part `part`'s supervisor restarted process `name`.
    fn restarts(&self, part: usize, name: &str) -> u64 {
        self.sup(part, name).map_or(0, |p| u64::from(p.restarts))
    }

    /// Part `part`'s status documents.
    fn statuses_of(&self, part: usize) -> &[ProcessStatus] {
        &self.statuses[self.ranges[part].clone()]
    }

    /// The last status document that names node `node`, and its part.
    fn naming(&self, node: &str) -> Option<(usize, &ProcessStatus)> {
        let i = self.statuses.iter().rposition(|s| s.node(node).is_some())?;
        let part = self.ranges.iter().position(|r| r.contains(&i))?;
        Some((part, &self.statuses[i]))
    }

    /// Every part as a host, placed where its supervisor says.
    fn hosts(&self) -> Vec<HostState> {
        (self.hosts.iter().enumerate())
            .map(|(i, name)| HostState {
                name: name.clone(),
                address: String::new(),
                node: self.doc(i).and_then(|d| d.node.clone()),
                step: self.doc(i).and_then(|d| d.step.clone()),
            })
            .collect()
    }

    /// Every process, part by part: those planned, then those only their
    /// supervisor names, then those only a status file names.
    fn processes(&self, shape: &Shape) -> Vec<ProcessState> {
        let mut out: Vec<ProcessState> = Vec::new();
        for part in 0..self.hosts.len() {
            let planned = (shape.processes.iter())
                .filter(|(p, _)| *p == part)
                .map(|(_, n)| n.as_str());
            let supervised = self.doc(part).into_iter().flat_map(|d| &d.processes);
            let names = planned
                .chain(supervised.map(|p| p.name.as_str()))
                .chain(self.statuses_of(part).iter().map(|s| s.process.as_str()));
            for name in names {
                if !out
                    .iter()
                    .any(|p| p.name == name && p.host == self.hosts[part])
                {
                    out.push(self.process(part, name));
                }
            }
        }
        out
    }

    /// Process `name` of part `part`: its state, restarts and pid (its
    /// supervisor's word, else its status's).
    fn process(&self, part: usize, name: &str) -> ProcessState {
        let sup = self.sup(part, name);
        let st = self.statuses_of(part).iter().find(|s| s.process == name);
        let pid = sup.and_then(|p| p.pid).map(u64::from);
        ProcessState {
            name: name.to_string(),
            host: self.hosts[part].clone(),
            node: self.doc(part).and_then(|d| d.node.clone()),
            step: self.doc(part).and_then(|d| d.step.clone()),
            state: process_state(sup, st, self.local[part], self.now),
            restarts: self.restarts(part, name),
            pid: pid.or_else(|| st.map(|s| u64::from(s.pid)).filter(|&p| p > 0)),
        }
    }

    /// Every planned node, then every node only a status file names (of
    /// kind `?`).
    fn nodes(&self, shape: &Shape) -> Vec<NodeView> {
        let mut out: Vec<NodeView> = (shape.nodes.iter().enumerate())
            .map(|(i, n)| self.node(&n.name, &n.kind, &n.process, n.part, shape.ports(i)))
            .collect();
        for c in self.statuses.iter().flat_map(|s| &s.nodes) {
            if out.iter().any(|v| v.name == c.name) {
                continue;
            }
            if let Some((part, st)) = self.naming(&c.name) {
                out.push(self.node(&c.name, "?", &st.process, part, Vec::new()));
            }
        }
        out
    }

    /// Node `name` of process `process` in part `part`: its state,
    /// restarts, counts and rates, from the last status that names it
    /// (and that status's process and part) when one does.
    fn node(
        &self,
        name: &str,
        kind: &str,
        process: &str,
        part: usize,
        ports: Vec<PortView>,
    ) -> NodeView {
        let (state, restarts, counts) = match self.naming(name) {
            Some((p, st)) => (
                node_state(
                    self.sup(p, &st.process),
                    Some(st),
                    name,
                    self.local[p],
                    self.now,
                ),
                self.restarts(p, &st.process),
                st.node(name).cloned(),
            ),
            None => (
                node_state(self.sup(part, process), None, "", false, 0),
                self.restarts(part, process),
                None,
            ),
        };
        let c = counts.unwrap_or_default();
        NodeView {
            name: name.to_string(),
            kind: kind.to_string(),
            process: process.to_string(),
            host: self.hosts[part].clone(),
            state,
            restarts,
            received: c.received,
            sent: c.sent,
            in_rate: c.in_rate,
            out_rate: c.out_rate,
            ports,
        }
    }

    /// Every socket of every status, matched to its node and port: the
    /// first planned socket of its process going the same way on one of
    /// its addresses ([`Shape::socket_of`]); its edge is that of the
    /// first such address that is one.
    fn rows(&self, shape: &Shape, ids: &HashMap<&str, String>) -> Vec<SocketRow> {
        let mut rows = Vec::new();
        for (part, range) in self.ranges.iter().enumerate() {
            for st in &self.statuses[range.clone()] {
                for (k, doc) in st.sockets.iter().enumerate() {
                    let host = self.hosts[part].clone();
                    let mut row = SocketRow::from_doc(st.process.clone(), host, k, doc);
                    if let Some(s) = shape.socket_of(&st.process, doc) {
                        let mut shared = (s.addresses.iter()).filter(|a| doc.endpoints.contains(a));
                        let addr = (shared.clone())
                            .find(|a| ids.contains_key(a.as_str()))
                            .or_else(|| shared.next());
                        row.node = shape.nodes[s.node].name.clone();
                        row.port = s.key.clone();
                        if let Some(a) = addr {
                            row.edge = ids.get(a.as_str()).cloned().unwrap_or_default();
                            row.transport = scheme(a).to_string();
                        }
                    }
                    rows.push(row);
                }
            }
        }
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{processes_file, status_dir, status_file, NodeState};
    use serde_json::{json, Value};

    /// Write a plan for process `p` of graph `g` with these nodes into
    /// run directory `rd`.
    fn plan(rd: &Path, p: &str, proxies: Value) {
        let v = json!({"graph": "g", "process": p, "run_dir": rd,
                       "config": {"proxies": proxies}});
        std::fs::write(rundir::plan_file(rd, p), v.to_string()).unwrap();
    }

    fn sock(t: &str, a: &str) -> Value {
        json!({"socket": {"type": t, "connect": [a]}})
    }

    fn socket_doc(dir: &str, ep: &str, messages: u64, lost: u64, p99: Option<u64>) -> Value {
        let lat = p99.map(|p| json!({"p50": 1, "p99": p, "max": p}));
        json!({"dir": dir, "endpoints": [ep], "messages": messages, "bytes": 10 * messages,
               "errors": 0, "lost": lost, "stalls": 1, "readers_given_up": 0,
               "rate": 2.0, "byte_rate": 20.0, "latency_us": lat})
    }

    /// A run of three nodes over two processes: `a` pushes to `m`, which
    /// publishes to `z` (`z` planned in `src`'s process too, to be sure an
    /// edge within a process counts); `m` also reads an address nobody
    /// writes. Only `src` and `dst` wrote statuses; `dst`'s also names a
    /// node no plan has.
    fn run_dir(rd: &Path) {
        std::fs::create_dir_all(status_dir(rd)).unwrap();
        plan(
            rd,
            "src",
            json!([{"name": "a", "type": "source", "data": {"output": sock("PUSH", "ipc:///x/e0")}},
                   {"name": "z", "type": "sink", "data": {"input": sock("SUB", "tcp://h:2")}}]),
        );
        plan(
            rd,
            "dst",
            json!([{"name": "m", "type": "window", "data": {
                "input": sock("PULL", "ipc:///x/e0"),
                "extra": sock("PULL", "ipc:///x/none"),
                "output": {"socket": {"type": "PUB", "bind": ["tcp://h:2"]}}}}]),
        );
        let status = |p: &str, nodes: Value, sockets: Value| {
            let v = json!({"graph": "g", "process": p, "pid": std::process::id(),
                           "time_us": crate::status::now_us(), "final": false,
                           "nodes": nodes, "sockets": sockets});
            std::fs::write(status_file(rd, p), v.to_string()).unwrap();
        };
        status(
            "src",
            json!([{"name": "a", "in": 0, "out": 10, "out_rate": 2.0, "ended": false}]),
            json!([socket_doc("send", "ipc:///x/e0", 10, 0, None)]),
        );
        status(
            "dst",
            json!([{"name": "m", "in": 9, "out": 9, "in_rate": 2.0, "ended": false},
                   {"name": "q", "in": 1, "out": 0, "ended": false}]),
            json!([
                socket_doc("recv", "ipc:///x/e0", 9, 1, Some(40)),
                socket_doc("send", "tcp://h:2", 9, 0, None)
            ]),
        );
    }

    /// Nodes (planned, and one only a status names) with their kinds,
    /// states, counts and ports; processes with their pids.
    #[test]
    fn nodes_and_processes_of_a_run_directory() {
        let d = tempfile::tempdir().unwrap();
        let rd = d.path();
        run_dir(rd);
        let r = Planned::new(rd).read();
        let st = &r.reading.state;
        assert_eq!((st.graph.as_str(), st.host.as_str()), ("g", LOCALHOST));
        assert_eq!(st.hosts.len(), 1);
        assert_eq!(r.parts.len(), 1);
        assert_eq!(
            (r.parts[0].part.host.as_ref(), r.parts[0].statuses.clone()),
            (None, 0..2)
        );
        // In the order the data flows, then by name; `q` only a status
        // names, so it is of no kind and no ports.
        let names: Vec<&str> = st.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["a", "q", "m", "z"]);
        let m = st.node("m").unwrap();
        assert_eq!((m.kind.as_str(), m.process.as_str()), ("window", "dst"));
        assert_eq!((m.received, m.sent, m.in_rate), (9, 9, 2.0));
        assert_eq!(m.state, NodeState::Running);
        let ports: Vec<(&str, PortDir)> =
            m.ports.iter().map(|p| (p.name.as_str(), p.dir)).collect();
        assert_eq!(
            ports,
            [
                ("extra", PortDir::In),
                ("input", PortDir::In),
                ("output", PortDir::Out)
            ]
        );
        let q = st.node("q").unwrap();
        assert_eq!(
            (q.kind.as_str(), q.process.as_str(), q.received),
            ("?", "dst", 1)
        );
        assert!(q.ports.is_empty());
        // A planned node of a process with no status.
        let z = st.node("z").unwrap();
        assert_eq!((z.state.clone(), z.received), (NodeState::NoStatus, 0));
        // Processes: each planned, with its status's pid (no supervisor).
        let procs: Vec<(&str, Option<u64>)> = st
            .processes
            .iter()
            .map(|p| (p.name.as_str(), p.pid))
            .collect();
        let me = Some(u64::from(std::process::id()));
        assert_eq!(procs, [("dst", me), ("src", me)]);
        assert!(
            r.reading.unreadable.is_empty(),
            "{:?}",
            r.reading.unreadable
        );
    }

    /// An edge per address a socket sends to and another receives from,
    /// in the order the data flows, with its ends and its sockets'
    /// figures; every socket matched to its node, port and edge.
    #[test]
    fn edges_and_sockets_of_a_run_directory() {
        let d = tempfile::tempdir().unwrap();
        run_dir(d.path());
        let r = Planned::new(d.path()).read();
        let st = &r.reading.state;
        // An edge per address with both ends; none for `ipc:///x/none`.
        let edges: Vec<(&str, &str, &str, &str)> = st
            .edges
            .iter()
            .map(|e| {
                (
                    e.id.as_str(),
                    e.addresses[0].as_str(),
                    e.pattern.as_str(),
                    e.transport.as_str(),
                )
            })
            .collect();
        assert_eq!(
            edges,
            [
                ("e0", "ipc:///x/e0", "pushpull", "ipc"),
                ("e1", "tcp://h:2", "pubsub", "tcp")
            ]
        );
        let e0 = &st.edges[0];
        let end = |n: &str, p: &str| PortRefView {
            node: n.into(),
            port: p.into(),
        };
        assert_eq!(
            (e0.from.clone(), e0.to.clone()),
            (vec![end("a", "output")], vec![end("m", "input")])
        );
        let f = &e0.figures;
        assert_eq!(
            (f.sent, f.received, f.lost, f.stalls, f.sockets),
            (10, 9, 1, 1, (1, 1))
        );
        assert_eq!((f.rate, f.latency_us.p99), (2.0, Some(40)));
        assert_eq!(st.edges[1].figures.sockets, (1, 0));
        // Every socket matched to its node, port and edge.
        let rows: Vec<(&str, &str, &str, &str, &str)> = (r.reading.rows.iter())
            .map(|r| {
                (
                    r.process.as_str(),
                    r.node.as_str(),
                    r.port.as_str(),
                    r.edge.as_str(),
                    r.direction.as_str(),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("dst", "m", "input", "e0", "recv"),
                ("dst", "m", "output", "e1", "send"),
                ("src", "a", "output", "e0", "send"),
            ]
        );
    }

    /// One run directory per host: a host per part, placed as its
    /// supervisor says; nodes and processes on their hosts; an edge
    /// between hosts; a bad plan said and passed over.
    #[test]
    fn a_run_directory_per_host() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::create_dir_all(status_dir(&a)).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        plan(
            &a,
            "front",
            json!([{"name": "src", "type": "source", "data": {"output": sock("PUSH", "tcp://h:1")}}]),
        );
        plan(
            &b,
            "back",
            json!([{"name": "snk", "type": "sink", "data": {"input": sock("PULL", "tcp://h:1")}}]),
        );
        std::fs::write(rundir::plan_file(&b, "bad"), "{").unwrap();
        let sup = json!({"supervisor_pid": 7, "node": "n2", "step": "5.1",
            "processes": [{"name": "back", "pid": 4242, "state": "restarting", "restarts": 3}]});
        std::fs::write(processes_file(&b), sup.to_string()).unwrap();
        let r = Planned::new(d.path()).read();
        let st = &r.reading.state;
        let hosts: Vec<(&str, Option<&str>, Option<&str>)> = (st.hosts.iter())
            .map(|h| (h.name.as_str(), h.node.as_deref(), h.step.as_deref()))
            .collect();
        assert_eq!(hosts, [("a", None, None), ("b", Some("n2"), Some("5.1"))]);
        assert_eq!(st.host, "a");
        let parts: Vec<Option<&str>> = r.parts.iter().map(|p| p.part.host.as_deref()).collect();
        assert_eq!(parts, [Some("a"), Some("b")]);
        let snk = st.node("snk").unwrap();
        assert_eq!((snk.host.as_str(), snk.restarts), ("b", 3));
        assert_eq!(snk.state.to_string(), "restarting");
        let back = st.process("back").unwrap();
        assert_eq!(
            (back.host.as_str(), back.pid, back.node.as_deref()),
            ("b", Some(4242), Some("n2"))
        );
        assert_eq!(st.process("front").unwrap().host, "a");
        assert_eq!(st.edges.len(), 1);
        assert_eq!(
            (
                st.edges[0].from[0].node.as_str(),
                st.edges[0].to[0].node.as_str()
            ),
            ("src", "snk")
        );
        assert!(r.reading.supervised[&0].is_none());
        assert_eq!(r.reading.supervised[&1].as_ref().unwrap().supervisor_pid, 7);
        assert_eq!(r.reading.unreadable.len(), 1, "{:?}", r.reading.unreadable);
        assert!(r.reading.unreadable[0].starts_with("unreadable plan: "));
    }
}
