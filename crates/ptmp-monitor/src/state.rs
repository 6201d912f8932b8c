//! The graph's live state, gathered from the run directory: the plan gives
//! the shape (hosts, processes, nodes, ports, edges and their transports),
//! the status files each process writes give counts, rates and latencies,
//! and the supervisor's `processes.json` gives each process's state and
//! restarts. Nothing here runs on the data path: the processes write their
//! files anyway, and this reads them on the monitor's own thread.

use ptmp_graph::plan::Plan;
use ptmp_graph::status::{self, EdgeFigures, NodeCounts, ProcessStatus, SocketStatus, Supervised};
use ptmp_graph::Graph;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Samples of history kept per edge and node (one per update).
pub const HISTORY: usize = 300;

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
    /// not yet matched to a node and port; also whether it sends, and its
    /// endpoints.
    pub(crate) fn from_doc(
        process: String,
        host: String,
        index: usize,
        doc: &SocketStatus,
    ) -> (SocketRow, bool, Vec<&str>) {
        let send = doc.sends();
        let eps = doc.endpoints.iter().map(String::as_str).collect();
        let row = SocketRow {
            process,
            host,
            index,
            direction: if send { "send" } else { "recv" }.into(),
            doc: doc.clone(),
            ..Default::default()
        };
        (row, send, eps)
    }
}

/// One host's part of a graph run, as a collector reads it.
struct Part {
    /// The host (an index into the graph's hosts).
    host: usize,
    /// Its supervisor's run directory.
    run_dir: PathBuf,
}

/// Where a scheduler placed each host's part (host index to a Slurm
/// node's name), kept up to date by whoever moves parts.
pub type Placement = Arc<Mutex<BTreeMap<usize, String>>>;

/// Gathers the state of one graph run: one host's part, or several whose
/// run directories this process can read (a graph under Slurm with its run
/// directories on a shared file system).
pub struct Collector {
    graph: Graph,
    plan: Plan,
    parts: Vec<Part>,
    /// Where each part runs, when a scheduler placed them.
    placement: Placement,
    /// The host named as this view's in the state (the first part's).
    host: usize,
    /// Per edge, the addresses it uses.
    edge_addrs: Vec<Vec<String>>,
    ports_by_process: BTreeMap<usize, Vec<PortAt>>,
    started: Instant,
}

/// Something that can say, now, what the state is: a graph run (from its
/// run directory) or the agents of this very process.
pub trait Gather: Send {
    /// The state now (without history) and every socket, labelled.
    fn gather(&mut self) -> (Value, Vec<SocketRow>);
}

impl Gather for Collector {
    fn gather(&mut self) -> (Value, Vec<SocketRow>) {
        self.collect()
    }
}

/// The graph a [`Following`] collector is to switch to at its next
/// gathering: the new graph, its plan and this host's index in it.
pub type NextGraph = Arc<Mutex<Option<(Graph, Plan, usize)>>>;

/// A graph run whose shape follows `ptmp graph apply`: whoever applies a
/// change puts the new graph in [`Following::next`], and the next
/// gathering reads the run directory against it. The state carries
/// `structure`, a number that grows with each change, so that a client
/// knows the nodes and edges (and the edge names `e0`, `e1`...) changed.
pub struct Following {
    cur: Collector,
    next: NextGraph,
    structure: u64,
}

impl Following {
    /// Follow the run of `graph` as planned by `plan` on host `host`.
    pub fn new(graph: &Graph, plan: &Plan, host: usize) -> Following {
        Following {
            cur: Collector::new(graph, plan, host),
            next: Arc::default(),
            structure: 0,
        }
    }

    /// Where to put a new graph for this collector to switch to.
    pub fn next(&self) -> NextGraph {
        self.next.clone()
    }
}

impl Gather for Following {
    fn gather(&mut self) -> (Value, Vec<SocketRow>) {
        // A poisoned lock only means an applier panicked: its value stands.
        let next = self.next.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((g, plan, host)) = next {
            let started = self.cur.started;
            self.cur = Collector::new(&g, &plan, host);
            // Uptime runs on across changes: it is the monitor's.
            self.cur.started = started;
            self.structure += 1;
        }
        let (mut state, rows) = self.cur.collect();
        state["structure"] = self.structure.into();
        (state, rows)
    }
}

/// The last [`HISTORY`] updates of every edge's rate and loss and every
/// node's rate, taken from successive states.
#[derive(Default)]
pub struct History {
    times: VecDeque<f64>,
    edges: BTreeMap<String, (VecDeque<f64>, VecDeque<f64>)>,
    nodes: BTreeMap<String, VecDeque<f64>>,
    /// The `structure` of the last state recorded.
    structure: Value,
}

impl History {
    /// Add one state's figures.
    pub fn record(&mut self, state: &Value) {
        // After a change of the graph the edge names may mean other edges:
        // their history starts again; removed nodes' history goes.
        if state["structure"] != self.structure {
            self.structure = state["structure"].clone();
            self.edges.clear();
            let names: BTreeSet<&str> = state["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|n| n["name"].as_str())
                .collect();
            self.nodes.retain(|k, _| names.contains(k.as_str()));
        }
        push(&mut self.times, state["uptime_s"].as_f64().unwrap_or(0.0));
        for e in state["edges"].as_array().into_iter().flatten() {
            let id = e["id"].as_str().unwrap_or("").to_string();
            let h = self.edges.entry(id).or_default();
            push(&mut h.0, e["rate"].as_f64().unwrap_or(0.0));
            push(&mut h.1, e["lost"].as_f64().unwrap_or(0.0));
        }
        for n in state["nodes"].as_array().into_iter().flatten() {
            let name = n["name"].as_str().unwrap_or("").to_string();
            let r = n["in_rate"]
                .as_f64()
                .unwrap_or(0.0)
                .max(n["out_rate"].as_f64().unwrap_or(0.0));
            push(self.nodes.entry(name).or_default(), r);
        }
    }

    /// `{"t": [seconds since the monitor started], "edges": {id: {"rate":
    /// [...], "lost": [...]}}, "nodes": {name: {"rate": [...]}}}`.
    pub fn to_json(&self) -> Value {
        let mut edges = Map::new();
        for (id, (r, l)) in &self.edges {
            edges.insert(id.clone(), json!({"rate": r, "lost": l}));
        }
        let mut nodes = Map::new();
        for (name, r) in &self.nodes {
            nodes.insert(name.clone(), json!({"rate": r}));
        }
        json!({"t": self.times, "edges": edges, "nodes": nodes})
    }
}

fn push(q: &mut VecDeque<f64>, v: f64) {
    if q.len() == HISTORY {
        q.pop_front();
    }
    q.push_back(v);
}

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
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
    /// "elsewhere".
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
        let mut ports_by_process: BTreeMap<usize, Vec<PortAt>> = BTreeMap::new();
        for (i, e) in graph.edges.iter().enumerate() {
            for (r, out) in e
                .from
                .iter()
                .map(|r| (r, true))
                .chain(e.to.iter().map(|r| (r, false)))
            {
                ports_by_process
                    .entry(graph.nodes[r.node].process)
                    .or_default()
                    .push(PortAt {
                        node: r.node,
                        port: r.port,
                        edge: i,
                        out,
                    });
            }
        }
        for v in ports_by_process.values_mut() {
            v.sort_by_key(|p| (p.node, p.edge));
        }
        Collector {
            graph: graph.clone(),
            plan: plan.clone(),
            host: parts.first().map_or(0, |p| p.0),
            parts: parts
                .into_iter()
                .map(|(host, run_dir)| Part { host, run_dir })
                .collect(),
            placement,
            edge_addrs,
            ports_by_process,
            started: Instant::now(),
        }
    }

    /// The graph being watched.
    pub fn graph(&self) -> &Graph {
        &self.graph
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
            let (mut row, send, eps) = SocketRow::from_doc(p.name.clone(), host.clone(), k, s);
            let fits = |pa: &PortAt| {
                pa.out == send
                    && self.edge_addrs[pa.edge]
                        .iter()
                        .any(|a| eps.contains(&a.as_str()))
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

    /// Every edge's figures, by the rule every view uses
    /// ([`EdgeFigures::of`]): the sockets on the edge's addresses alone.
    fn edges(&self, rows: &[SocketRow]) -> Vec<Value> {
        let g = &self.graph;
        let mut edges = Vec::new();
        for (i, e) in g.edges.iter().enumerate() {
            let f = EdgeFigures::of(&self.edge_addrs[i], rows.iter().map(|r| &r.doc));
            let side = |v: &[ptmp_graph::PortRef]| -> Vec<Value> {
                v.iter()
                    .map(|r| json!({"node": g.nodes[r.node].name, "port": r.port}))
                    .collect()
            };
            let l = &self.plan.links[i];
            let mut edge = json!({
                "id": format!("e{i}"), "pattern": e.pattern.name(), "transport": l.transport.scheme(),
                "addresses": self.edge_addrs[i],
                "from": side(&e.from), "to": side(&e.to),
            });
            add_figures(&mut edge, &f);
            edges.push(edge);
        }
        edges
    }

    /// Read the run directory now and return the whole state (without
    /// history) and every socket, matched to the plan.
    pub fn collect(&mut self) -> (Value, Vec<SocketRow>) {
        let g = &self.graph;
        let statuses: Vec<ProcessStatus> = self
            .parts
            .iter()
            .flat_map(|p| status::read_all(&p.run_dir))
            .collect();
        let procs: BTreeMap<usize, Option<Supervised>> = self
            .parts
            .iter()
            .map(|p| (p.host, status::read_processes(&p.run_dir)))
            .collect();
        let placed = self
            .placement
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        // What a part's supervisor says of where it runs (under Slurm).
        let said = |host: usize, what: fn(&Supervised) -> &Option<String>| -> Value {
            procs
                .get(&host)
                .and_then(|d| d.as_ref())
                .and_then(|d| what(d).as_deref())
                .map_or(Value::Null, Value::from)
        };
        let node_of = |host: usize| -> Value {
            placed
                .get(&host)
                .map_or_else(|| said(host, |d| &d.node), |n| Value::from(n.as_str()))
        };
        // What the supervisor of `host` says of a process: its restarts and
        // pid (its state is `process_state`'s, below).
        let supervised = |host: usize, name: &str| -> (u64, Option<u64>) {
            procs
                .get(&host)
                .and_then(|doc| doc.as_ref()?.process(name))
                .map_or((0, None), |p| (u64::from(p.restarts), p.pid.map(u64::from)))
        };
        let here = status::this_node();
        let now = status::now_us();
        // A node's state, as every view works it out (see
        // `ptmp_graph::status::node_state`).
        let node_state = |host: usize, process: &str, node: &str| -> String {
            let Some(sup) = procs.get(&host) else {
                return "elsewhere".into();
            };
            let st = statuses.iter().find(|s| s.process == process);
            let local = status::runs_here(sup.as_ref(), here.as_deref());
            let said = sup.as_ref().and_then(|s| s.process(process));
            status::node_state(said, st, node, local, now).to_string()
        };
        let mut rows: Vec<SocketRow> = Vec::new();
        let mut node_docs: BTreeMap<String, NodeCounts> = BTreeMap::new();
        for st in &statuses {
            let Some(pi) = g.processes.iter().position(|p| p.name == st.process) else {
                continue;
            };
            // A status file left by an earlier pid of a restarted process
            // still counts until the new one writes its own.
            rows.extend(self.match_sockets(pi, &st.sockets));
            for n in &st.nodes {
                node_docs.insert(n.name.clone(), n.clone());
            }
        }
        let t = self.started.elapsed().as_secs_f64();
        // A process's state, as every view works it out (see
        // `ptmp_graph::status::process_state`).
        let process_state = |host: usize, process: &str| -> String {
            let Some(sup) = procs.get(&host) else {
                return "elsewhere".into();
            };
            let st = statuses.iter().find(|s| s.process == process);
            let local = status::runs_here(sup.as_ref(), here.as_deref());
            let said = sup.as_ref().and_then(|s| s.process(process));
            status::process_state(said, st, local, now).to_string()
        };
        let mut processes = Vec::new();
        for p in &g.processes {
            let (restarts, pid) = supervised(p.host, &p.name);
            let state = process_state(p.host, &p.name);
            processes.push(json!({"name": p.name, "host": g.hosts[p.host].name,
                "node": node_of(p.host), "step": said(p.host, |d| &d.step),
                "state": state, "restarts": restarts, "pid": pid}));
        }
        let mut nodes = Vec::new();
        for n in &g.nodes {
            let p = &g.processes[n.process];
            let (restarts, _) = supervised(p.host, &p.name);
            let state = node_state(p.host, &p.name, &n.name);
            let d = node_docs.get(&n.name).cloned().unwrap_or_default();
            let (in_rate, out_rate) = (d.in_rate, d.out_rate);
            let ports: Vec<Value> = ptmp_graph::ports(n.kind)
                .unwrap_or(&[])
                .iter()
                .map(|s| {
                    json!({"name": s.name,
                           "dir": if s.dir == ptmp_graph::Dir::In { "in" } else { "out" }})
                })
                .collect();
            nodes.push(json!({
                "name": n.name, "kind": n.kind.name(), "process": p.name,
                "host": g.hosts[p.host].name, "state": state, "restarts": restarts,
                "in": d.received, "out": d.sent,
                "in_rate": in_rate, "out_rate": out_rate, "ports": ports,
            }));
        }
        let edges = self.edges(&rows);
        let hosts: Vec<Value> = g
            .hosts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                json!({"name": h.name, "address": h.address, "node": node_of(i),
                       "step": said(i, |d| &d.step)})
            })
            .collect();
        let state = json!({
            "graph": g.name, "host": g.hosts[self.host].name,
            "time_us": now_us(), "uptime_s": (t * 10.0).round() / 10.0,
            "hosts": hosts, "processes": processes, "nodes": nodes, "edges": edges,
        });
        (state, rows)
    }
}

/// An edge's figures into its JSON object, named as the page, the API and
/// the metrics read them.
pub(crate) fn add_figures(edge: &mut Value, f: &EdgeFigures) {
    let lat = |q: &str| f.latency_us.and_then(|l| l.get(q));
    let figures = json!({
        "sent": f.sent, "received": f.received, "bytes": f.bytes,
        "rate": (f.rate.unwrap_or(0.0) * 10.0).round() / 10.0,
        "byte_rate": f.byte_rate.round(),
        "lost": f.lost, "errors": f.errors, "stalls": f.stalls,
        "readers_given_up": f.readers_given_up,
        // Clients its CURVE server (either end) refused.
        "curve_refused": f.curve_refused,
        "latency_us": {"p50": lat("p50"), "p99": lat("p99"), "max": lat("max")},
    });
    if let (Some(e), Value::Object(m)) = (edge.as_object_mut(), figures) {
        e.extend(m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptmp_graph::rundir::docs::write as write_atomic;
    use ptmp_graph::status::{write_processes, ProcessState};

    /// A fan-in from two nodes of one process, placed so both senders share
    /// a process and an address: each socket must land on its own node.
    #[test]
    fn sockets_matched_to_edges_and_states_read() {
        let dir = tempfile::tempdir().unwrap();
        let g = json!({
            "name": "t",
            "nodes": [
                {"name": "a", "type": "source", "data": {"rate": 10}},
                {"name": "b", "type": "source", "data": {"rate": 10}},
                {"name": "z", "type": "zipper", "data": {}},
                {"name": "s", "type": "sink", "data": {}}
            ],
            "edges": [
                {"from": ["a.out", "b.out"], "to": "z.in", "pattern": "pushpull", "transport": "ipc"},
                {"from": "z.out", "to": "s.in", "pattern": "pushpull"}
            ],
            "processes": [{"name": "src", "nodes": ["a", "b"]}, {"name": "zs", "nodes": ["z", "s"]}]
        });
        let (g, p) = ptmp_graph::load(&g, "t", Some(dir.path())).unwrap();
        let e0 = p.links[0].binds[0].1.clone();
        let e1 = p.links[1].binds[0].1.clone();
        std::fs::create_dir_all(status::status_dir(dir.path())).unwrap();
        let sock = |d: &str, ep: &str, m: u64, rate: f64, lost: u64| {
            json!({"dir": d, "endpoints": [ep], "messages": m, "bytes": m * 10, "errors": 0,
                   "lost": lost, "rate": rate, "byte_rate": rate * 10.0,
                   "stalls": if d == "send" { m % 4 } else { 0 },
                   "readers_given_up": if d == "send" { m / 6 } else { 0 },
                   "curve_refused": m % 3,
                   "latency_us": if d == "recv" { json!({"p50": 8, "p99": 64, "max": 70}) } else { Value::Null }})
        };
        let node = |n: &str, i: u64, o: u64, ended: bool| json!({"name": n, "in": i, "out": o, "ended": ended, "in_rate": 1.0, "out_rate": 2.0});
        write_atomic(
            &status::status_file(dir.path(), "src"),
            &json!({"process": "src", "pid": 1, "nodes": [node("a", 0, 5, false), node("b", 0, 7, true)],
                    "sockets": [sock("send", &e0, 5, 1.0, 0), sock("send", &e0, 7, 2.0, 0)]}),
        )
        .unwrap();
        write_atomic(
            &status::status_file(dir.path(), "zs"),
            &json!({"process": "zs", "pid": 2, "nodes": [node("z", 12, 11, false), node("s", 9, 0, false)],
                    "sockets": [sock("recv", &e0, 12, 3.0, 1), sock("send", &e1, 11, 3.0, 0),
                                sock("recv", &e1, 9, 2.5, 2)]}),
        )
        .unwrap();
        write_processes(
            dir.path(),
            &[
                ProcessState {
                    name: "src".into(),
                    pid: Some(1),
                    state: "running",
                    restarts: 0,
                },
                ProcessState {
                    name: "zs".into(),
                    pid: None,
                    state: "restarting",
                    restarts: 3,
                },
            ],
        )
        .unwrap();
        let mut c = Collector::new(&g, &p, 0);
        let (st, rows) = c.collect();
        let who: Vec<(&str, &str, &str, &str)> = rows
            .iter()
            .map(|r| {
                (
                    r.node.as_str(),
                    r.port.as_str(),
                    r.edge.as_str(),
                    r.direction.as_str(),
                )
            })
            .collect();
        assert_eq!(
            who,
            [
                ("a", "out", "e0", "send"),
                ("b", "out", "e0", "send"),
                ("z", "in", "e0", "recv"),
                ("z", "out", "e1", "send"),
                ("s", "in", "e1", "recv")
            ]
        );
        let e = &st["edges"][0];
        assert_eq!(
            (e["sent"].as_u64(), e["received"].as_u64()),
            (Some(12), Some(12))
        );
        assert_eq!(e["rate"].as_f64(), Some(3.0));
        assert_eq!(e["lost"].as_u64(), Some(1));
        assert_eq!(e["transport"], "ipc");
        assert_eq!(e["latency_us"]["p99"].as_u64(), Some(64));
        assert_eq!(st["edges"][1]["lost"].as_u64(), Some(2));
        // Stalls are the senders' (5 % 4 + 7 % 4 on e0, 11 % 4 on e1).
        assert_eq!(e["stalls"].as_u64(), Some(4));
        assert_eq!(st["edges"][1]["stalls"].as_u64(), Some(3));
        // CURVE refusals are either end's, a server being either.
        let refused = |e: &Value| e["curve_refused"].as_u64();
        // On e0: 5 % 3 and 7 % 3 from the senders, 12 % 3 from the receiver.
        assert_eq!(refused(e), Some(3), "{e}");
        // So are readers given up (5 / 6 + 7 / 6 on e0, 11 / 6 on e1).
        assert_eq!(e["readers_given_up"].as_u64(), Some(1));
        assert_eq!(st["edges"][1]["readers_given_up"].as_u64(), Some(1));
        let n = |name: &str| {
            st["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|n| n["name"] == name)
                .cloned()
                .unwrap()
        };
        assert_eq!(n("a")["state"], "running");
        assert_eq!(n("b")["state"], "ended");
        assert_eq!(n("z")["state"], "restarting");
        assert_eq!(n("z")["restarts"].as_u64(), Some(3));
        assert_eq!(n("s")["in"].as_u64(), Some(9));
        let mut h = History::default();
        h.record(&st);
        h.record(&st);
        let hj = h.to_json();
        assert_eq!(hj["edges"]["e0"]["rate"], json!([3.0, 3.0]));
        assert_eq!(hj["nodes"]["a"]["rate"], json!([2.0, 2.0]));
    }

    /// No status files and no supervisor file yet: every node is there,
    /// with nothing known about it.
    #[test]
    fn nothing_written_yet() {
        let dir = tempfile::tempdir().unwrap();
        let g = json!({"name": "u", "nodes": [
            {"name": "a", "type": "source", "data": {}}, {"name": "s", "type": "sink", "data": {}}],
            "edges": [{"from": "a.out", "to": "s.in", "pattern": "pushpull"}]});
        let (g, p) = ptmp_graph::load(&g, "u", Some(dir.path())).unwrap();
        let (st, rows) = Collector::new(&g, &p, 0).collect();
        assert!(rows.is_empty());
        assert_eq!(st["nodes"].as_array().unwrap().len(), 2);
        assert!(st["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n["state"] == "no status"));
        assert_eq!(st["edges"][0]["rate"].as_f64(), Some(0.0));
    }

    /// A new graph handed over takes effect at the next gathering: its
    /// nodes and edges replace the old ones, the structure number grows,
    /// and the history drops removed nodes and starts the edges again.
    #[test]
    fn a_new_graph_is_followed() {
        let dir = tempfile::tempdir().unwrap();
        let two = |sink: &str| {
            json!({"name": "f", "nodes": [
                {"name": "a", "type": "source", "data": {}},
                {"name": sink, "type": "sink", "data": {}}],
                "edges": [{"from": "a.out", "to": format!("{sink}.in"), "pattern": "pushpull"}]})
        };
        let (g1, p1) = ptmp_graph::load(&two("s"), "f", Some(dir.path())).unwrap();
        let (g2, p2) = ptmp_graph::load(&two("t"), "f", Some(dir.path())).unwrap();
        let mut f = Following::new(&g1, &p1, 0);
        let mut h = History::default();
        let names = |st: &Value| -> Vec<String> {
            st["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n["name"].as_str().unwrap().to_string())
                .collect()
        };
        let (st, _) = f.gather();
        h.record(&st);
        assert_eq!(names(&st), ["a", "s"]);
        assert_eq!(st["structure"], 0);
        // Nothing handed over: the same shape.
        let (st, _) = f.gather();
        h.record(&st);
        assert_eq!(st["structure"], 0);
        assert_eq!(
            h.to_json()["edges"]["e0"]["rate"].as_array().unwrap().len(),
            2
        );
        *f.next().lock().unwrap() = Some((g2, p2, 0));
        let (st, _) = f.gather();
        h.record(&st);
        assert_eq!(names(&st), ["a", "t"]);
        assert_eq!(st["structure"], 1);
        assert_eq!(st["edges"][0]["to"][0]["node"], "t");
        let hj = h.to_json();
        assert!(hj["nodes"].get("s").is_none() && hj["nodes"].get("t").is_some());
        assert_eq!(hj["nodes"]["a"]["rate"].as_array().unwrap().len(), 3);
        assert_eq!(hj["edges"]["e0"]["rate"].as_array().unwrap().len(), 1);
        // Taken once: the next gathering keeps the new shape.
        let (st, _) = f.gather();
        assert_eq!(st["structure"], 1);
    }
}
