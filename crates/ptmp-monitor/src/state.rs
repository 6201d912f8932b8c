//! The graph's live state as the monitor serves it: a [`GraphState`] read
//! from the run directory by the graph library's [`Collector`] (or, for
//! `ptmp run`, from this process's own counters), and the history of its
//! figures kept here between readings. Nothing here runs on the data path:
//! the processes write their files anyway, and this reads them on the
//! monitor's own thread.

use ptmp_graph::plan::Plan;
pub use ptmp_graph::status::{Collector, GraphState, Placement, SocketRow};
use ptmp_graph::Graph;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};

/// Samples of history kept per edge and node (one per update).
pub const HISTORY: usize = 300;

/// Something that can say, now, what the state is: a graph run (from its
/// run directory) or the agents of this very process.
pub trait Gather: Send {
    /// The state now (without history) and every socket, labelled.
    fn gather(&mut self) -> (GraphState, Vec<SocketRow>);
}

impl Gather for Collector {
    fn gather(&mut self) -> (GraphState, Vec<SocketRow>) {
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
    fn gather(&mut self) -> (GraphState, Vec<SocketRow>) {
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
        state.structure = Some(self.structure);
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
    structure: Option<u64>,
}

impl History {
    /// Add one state's figures.
    pub fn record(&mut self, state: &GraphState) {
        // After a change of the graph the edge names may mean other edges:
        // their history starts again; removed nodes' history goes.
        if state.structure != self.structure {
            self.structure = state.structure;
            self.edges.clear();
            let names: BTreeSet<&str> = state.nodes.iter().map(|n| n.name.as_str()).collect();
            self.nodes.retain(|k, _| names.contains(k.as_str()));
        }
        push(&mut self.times, state.uptime_s);
        for e in &state.edges {
            let h = self.edges.entry(e.id.clone()).or_default();
            push(&mut h.0, e.figures.rate);
            push(&mut h.1, e.figures.lost as f64);
        }
        for n in &state.nodes {
            let r = n.in_rate.max(n.out_rate);
            push(self.nodes.entry(n.name.clone()).or_default(), r);
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

#[cfg(test)]
mod tests {
    use super::*;
    use ptmp_graph::rundir::docs::write as write_atomic;
    use ptmp_graph::status::{self, write_processes, SupervisedProcess, SupervisedState};

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
                SupervisedProcess {
                    name: "src".into(),
                    pid: Some(1),
                    state: SupervisedState::Running,
                    restarts: 0,
                },
                SupervisedProcess {
                    name: "zs".into(),
                    pid: None,
                    state: SupervisedState::Restarting,
                    restarts: 3,
                },
            ],
        )
        .unwrap();
        let mut c = Collector::new(&g, &p, 0);
        let (typed, rows) = c.collect();
        let st = serde_json::to_value(&typed).unwrap();
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
        h.record(&typed);
        h.record(&typed);
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
        let st = serde_json::to_value(&st).unwrap();
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
        let names =
            |st: &GraphState| -> Vec<String> { st.nodes.iter().map(|n| n.name.clone()).collect() };
        let (st, _) = f.gather();
        h.record(&st);
        assert_eq!(names(&st), ["a", "s"]);
        assert_eq!(st.structure, Some(0));
        // Nothing handed over: the same shape.
        let (st, _) = f.gather();
        h.record(&st);
        assert_eq!(st.structure, Some(0));
        assert_eq!(
            h.to_json()["edges"]["e0"]["rate"].as_array().unwrap().len(),
            2
        );
        *f.next().lock().unwrap() = Some((g2, p2, 0));
        let (st, _) = f.gather();
        h.record(&st);
        assert_eq!(names(&st), ["a", "t"]);
        assert_eq!(st.structure, Some(1));
        assert_eq!(st.edges[0].to[0].node, "t");
        let hj = h.to_json();
        assert!(hj["nodes"].get("s").is_none() && hj["nodes"].get("t").is_some());
        assert_eq!(hj["nodes"]["a"]["rate"].as_array().unwrap().len(), 3);
        assert_eq!(hj["edges"]["e0"]["rate"].as_array().unwrap().len(), 1);
        // Taken once: the next gathering keeps the new shape.
        let (st, _) = f.gather();
        assert_eq!(st.structure, Some(1));
    }
}
