//! The graph's live state, gathered from the run directory: the plan gives
//! the shape (hosts, processes, nodes, ports, edges and their transports),
//! the status files each process writes give counts, rates and latencies,
//! and the supervisor's `processes.json` gives each process's state and
//! restarts. Nothing here runs on the data path: the processes write their
//! files anyway, and this reads them on the monitor's own thread.

use ptmp_graph::plan::Plan;
use ptmp_graph::{status, Graph};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
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
    pub doc: Value,
}

/// Gathers the state of one graph run.
pub struct Collector {
    graph: Graph,
    plan: Plan,
    run_dir: PathBuf,
    /// The host whose processes this supervisor runs.
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

/// The last [`HISTORY`] updates of every edge's rate and loss and every
/// node's rate, taken from successive states.
#[derive(Default)]
pub struct History {
    times: VecDeque<f64>,
    edges: BTreeMap<String, (VecDeque<f64>, VecDeque<f64>)>,
    nodes: BTreeMap<String, VecDeque<f64>>,
}

impl History {
    /// Add one state's figures.
    pub fn record(&mut self, state: &Value) {
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
            run_dir: plan.run_dir.clone(),
            host,
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
    fn match_sockets(&self, proc_index: usize, sockets: &[Value]) -> Vec<SocketRow> {
        let p = &self.graph.processes[proc_index];
        let host = self.graph.hosts[p.host].name.clone();
        let empty = vec![];
        let ports = self.ports_by_process.get(&proc_index).unwrap_or(&empty);
        let mut used = vec![false; ports.len()];
        let mut rows = Vec::new();
        for (k, s) in sockets.iter().enumerate() {
            let send = s["dir"] == "send";
            let eps: Vec<&str> = s["endpoints"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let mut row = SocketRow {
                process: p.name.clone(),
                host: host.clone(),
                index: k,
                direction: if send { "send" } else { "recv" }.into(),
                doc: s.clone(),
                ..Default::default()
            };
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

    /// Read the run directory now and return the whole state (without
    /// history) and every socket, matched to the plan.
    pub fn collect(&mut self) -> (Value, Vec<SocketRow>) {
        let g = &self.graph;
        let statuses = status::read_all(&self.run_dir);
        let procs = status::read_processes(&self.run_dir);
        let proc_state = |name: &str| -> (String, u64, Option<u64>) {
            procs
                .as_ref()
                .and_then(|v| v["processes"].as_array().cloned())
                .into_iter()
                .flatten()
                .find(|p| p["name"] == name)
                .map(|p| {
                    (
                        p["state"].as_str().unwrap_or("unknown").to_string(),
                        p["restarts"].as_u64().unwrap_or(0),
                        p["pid"].as_u64(),
                    )
                })
                .unwrap_or_else(|| ("unknown".into(), 0, None))
        };
        let mut rows: Vec<SocketRow> = Vec::new();
        let mut node_docs: BTreeMap<String, Value> = BTreeMap::new();
        for st in &statuses {
            let pname = st["process"].as_str().unwrap_or("");
            let Some(pi) = g.processes.iter().position(|p| p.name == pname) else {
                continue;
            };
            // A status file left by an earlier pid of a restarted process
            // still counts until the new one writes its own.
            let socks = st["sockets"].as_array().cloned().unwrap_or_default();
            rows.extend(self.match_sockets(pi, &socks));
            for n in st["nodes"].as_array().into_iter().flatten() {
                if let Some(name) = n["name"].as_str() {
                    node_docs.insert(name.to_string(), n.clone());
                }
            }
        }
        let t = self.started.elapsed().as_secs_f64();
        let mut processes = Vec::new();
        for p in &g.processes {
            let (state, restarts, pid) = if p.host == self.host {
                proc_state(&p.name)
            } else {
                ("elsewhere".into(), 0, None)
            };
            processes.push(json!({"name": p.name, "host": g.hosts[p.host].name,
                "state": state, "restarts": restarts, "pid": pid}));
        }
        let mut nodes = Vec::new();
        for n in &g.nodes {
            let p = &g.processes[n.process];
            let (mut state, restarts, _) = if p.host == self.host {
                proc_state(&p.name)
            } else {
                ("elsewhere".into(), 0, None)
            };
            let d = node_docs.get(&n.name).cloned().unwrap_or(Value::Null);
            if state == "running" && d["ended"] == true {
                state = "ended".into();
            }
            let in_rate = d["in_rate"].as_f64().unwrap_or(0.0);
            let out_rate = d["out_rate"].as_f64().unwrap_or(0.0);
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
                "in": d["in"].as_u64().unwrap_or(0), "out": d["out"].as_u64().unwrap_or(0),
                "in_rate": in_rate, "out_rate": out_rate, "ports": ports,
            }));
        }
        let mut edges = Vec::new();
        for (i, e) in g.edges.iter().enumerate() {
            let id = format!("e{i}");
            let mine: Vec<&SocketRow> = rows.iter().filter(|r| r.edge == id).collect();
            let sum = |dir: &str, key: &str| -> f64 {
                mine.iter()
                    .filter(|r| r.direction == dir)
                    .map(|r| r.doc[key].as_f64().unwrap_or(0.0))
                    .sum()
            };
            let lat = |q: &str| -> Value {
                mine.iter()
                    .filter(|r| r.direction == "recv")
                    .filter_map(|r| r.doc["latency_us"][q].as_u64())
                    .max()
                    .map_or(Value::Null, Value::from)
            };
            let has_send = mine.iter().any(|r| r.direction == "send");
            let rate = if has_send {
                sum("send", "rate")
            } else {
                sum("recv", "rate")
            };
            let lost = sum("recv", "lost");
            let errors = sum("recv", "errors");
            let side = |v: &[ptmp_graph::PortRef]| -> Vec<Value> {
                v.iter()
                    .map(|r| json!({"node": g.nodes[r.node].name, "port": r.port}))
                    .collect()
            };
            let l = &self.plan.links[i];
            edges.push(json!({
                "id": id, "pattern": e.pattern.name(), "transport": l.transport.scheme(),
                "addresses": self.edge_addrs[i],
                "from": side(&e.from), "to": side(&e.to),
                "sent": sum("send", "messages") as u64,
                "received": sum("recv", "messages") as u64,
                "bytes": sum("send", "bytes") as u64,
                "rate": (rate * 10.0).round() / 10.0,
                "byte_rate": sum("send", "byte_rate").round(),
                "lost": lost as u64, "errors": errors as u64,
                "latency_us": {"p50": lat("p50"), "p99": lat("p99"), "max": lat("max")},
            }));
        }
        let hosts: Vec<Value> = g
            .hosts
            .iter()
            .map(|h| json!({"name": h.name, "address": h.address}))
            .collect();
        let state = json!({
            "graph": g.name, "host": g.hosts[self.host].name,
            "time_us": now_us(), "uptime_s": (t * 10.0).round() / 10.0,
            "hosts": hosts, "processes": processes, "nodes": nodes, "edges": edges,
        });
        (state, rows)
    }
}
