//! The state of the agents of this very process (`ptmp run CONFIG
//! --http`): no graph and no run directory, so the shape comes from the
//! configuration (each agent's sockets, by the keys of its `data`) and
//! the figures from the live socket counters of this process. An edge is
//! an address: its senders are the sockets that send to it, its receivers
//! those that receive from it.

use crate::state::{Gather, SocketRow};
use ptmp_graph::status::live::{
    EdgeShown, EdgeView, GraphState, HostState, NodeView, PortDir, PortRefView, PortView,
    ProcessState,
};
use ptmp_graph::status::{pattern_of, EdgeFigures, NodeState, SocketStatus};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Instant;

struct Port {
    key: String,
    send: bool,
    endpoints: Vec<String>,
    stype: String,
}

struct Agent {
    name: String,
    kind: String,
    ports: Vec<Port>,
}

/// The agents of one ptmper configuration, watched in this process.
pub struct Local {
    name: String,
    agents: Vec<Agent>,
    started: Instant,
}

fn walk(path: &str, v: &Value, out: &mut Vec<Port>) {
    match v {
        Value::Object(m) => {
            if let Some(s) = m.get("socket").filter(|s| s.is_object()) {
                let stype = s["type"].as_str().unwrap_or("").to_ascii_uppercase();
                let endpoints: Vec<String> = ["bind", "connect"]
                    .iter()
                    .flat_map(|k| match &s[*k] {
                        Value::String(a) => vec![a.clone()],
                        Value::Array(a) => a
                            .iter()
                            .filter_map(|x| x.as_str().map(str::to_string))
                            .collect(),
                        _ => vec![],
                    })
                    .collect();
                let send = ptmp::SocketType::parse(&stype)
                    .map_or(path.contains("out"), |t| t.sends_under(path));
                out.push(Port {
                    key: path.to_string(),
                    send,
                    endpoints,
                    stype,
                });
                return;
            }
            for (k, x) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                walk(&p, x, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                walk(&format!("{path}[{i}]"), x, out);
            }
        }
        _ => {}
    }
}

fn scheme(address: &str) -> &str {
    address.split("://").next().unwrap_or("")
}

impl Local {
    /// Watch the agents of ptmper configuration `config` (PTMP's `{name,
    /// proxies: [{name, type, data}]}`, already evaluated).
    pub fn new(config: &Value) -> Local {
        let mut agents = Vec::new();
        for (i, p) in config["proxies"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let mut ports = Vec::new();
            walk("", &p["data"], &mut ports);
            agents.push(Agent {
                name: p["name"]
                    .as_str()
                    .map_or_else(|| format!("proxies[{i}]"), str::to_string),
                kind: p["type"].as_str().unwrap_or("?").to_string(),
                ports,
            });
        }
        Local {
            name: config["name"].as_str().unwrap_or("ptmp run").to_string(),
            agents,
            started: Instant::now(),
        }
    }
}

impl Gather for Local {
    fn gather(&mut self) -> (GraphState, Vec<SocketRow>) {
        let docs = ptmp_graph::status::sockets();
        // Every address, numbered in order, is an edge.
        let mut addrs: BTreeMap<&str, usize> = BTreeMap::new();
        for e in self
            .agents
            .iter()
            .flat_map(|a| &a.ports)
            .flat_map(|p| &p.endpoints)
        {
            let n = addrs.len();
            addrs.entry(e.as_str()).or_insert(n);
        }
        let (rows, owned) = self.rows(&docs, &addrs);
        let nodes = self.nodes(&docs, &owned);
        let mut by_index: Vec<(&str, usize)> = addrs.iter().map(|(a, n)| (*a, *n)).collect();
        by_index.sort_by_key(|x| x.1);
        let edges = by_index
            .into_iter()
            .map(|(addr, n)| self.edge(addr, n, &docs))
            .collect();
        let t = self.started.elapsed().as_secs_f64();
        let state = GraphState {
            graph: self.name.clone(),
            host: "localhost".into(),
            time_us: ptmp_graph::status::now_us(),
            uptime_s: (t * 10.0).round() / 10.0,
            structure: None,
            hosts: vec![HostState {
                name: "localhost".into(),
                address: "127.0.0.1".into(),
                node: None,
                step: None,
            }],
            processes: vec![ProcessState {
                name: self.name.clone(),
                host: "localhost".into(),
                node: None,
                step: None,
                state: NodeState::Running,
                restarts: 0,
                pid: Some(u64::from(std::process::id())),
            }],
            nodes,
            edges,
        };
        (state, rows)
    }
}

/// Which socket documents each (agent, port) owns.
type Owned = BTreeMap<(usize, usize), Vec<usize>>;

impl Local {
    /// Every socket of this process, matched to the agents' ports: same
    /// direction and endpoints, in order.
    fn rows(
        &self,
        docs: &[SocketStatus],
        addrs: &BTreeMap<&str, usize>,
    ) -> (Vec<SocketRow>, Owned) {
        let mut used: Vec<Vec<bool>> = self
            .agents
            .iter()
            .map(|a| vec![false; a.ports.len()])
            .collect();
        let mut rows = Vec::new();
        let mut owned = Owned::new();
        for (k, d) in docs.iter().enumerate() {
            let mut row = SocketRow::from_doc(self.name.clone(), "localhost".into(), k, d);
            let hit = self.agents.iter().enumerate().find_map(|(ai, a)| {
                let pi = a.ports.iter().enumerate().position(|(pi, p)| {
                    !used[ai][pi] && p.send == d.sends() && p.endpoints == d.endpoints
                })?;
                Some((ai, pi))
            });
            if let Some((ai, pi)) = hit {
                used[ai][pi] = true;
                owned.entry((ai, pi)).or_default().push(k);
                let p = &self.agents[ai].ports[pi];
                row.node = self.agents[ai].name.clone();
                row.port = p.key.clone();
                if let Some(e) = p.endpoints.first() {
                    row.edge = format!("e{}", addrs[e.as_str()]);
                    row.transport = scheme(e).to_string();
                }
            }
            rows.push(row);
        }
        (rows, owned)
    }

    /// Every agent as a node: its ports and their sockets' counts summed.
    fn nodes(&self, docs: &[SocketStatus], owned: &Owned) -> Vec<NodeView> {
        let fsum = |ks: &[usize], figure: fn(&SocketStatus) -> f64| -> f64 {
            // Plus 0.0: an empty sum of floats is -0.0.
            ks.iter().map(|&k| figure(&docs[k])).sum::<f64>() + 0.0
        };
        let mut nodes = Vec::new();
        for (ai, a) in self.agents.iter().enumerate() {
            let (mut ins, mut outs) = (vec![], vec![]);
            for (pi, p) in a.ports.iter().enumerate() {
                let ks = owned.get(&(ai, pi)).cloned().unwrap_or_default();
                if p.send {
                    outs.extend(ks);
                } else {
                    ins.extend(ks);
                }
            }
            let ports = a
                .ports
                .iter()
                .map(|p| PortView {
                    name: p.key.clone(),
                    dir: PortDir::of(p.send),
                })
                .collect();
            nodes.push(NodeView {
                name: a.name.clone(),
                kind: a.kind.clone(),
                process: self.name.clone(),
                host: "localhost".into(),
                state: NodeState::Running,
                restarts: 0,
                received: fsum(&ins, |d| d.messages as f64) as u64,
                sent: fsum(&outs, |d| d.messages as f64) as u64,
                in_rate: fsum(&ins, |d| d.rate),
                out_rate: fsum(&outs, |d| d.rate),
                ports,
            });
        }
        nodes
    }

    /// The edge at address `addr`, the `n`th: the ports that send to it
    /// and read from it, and its figures.
    fn edge(&self, addr: &str, n: usize, docs: &[SocketStatus]) -> EdgeView {
        let (mut from, mut to) = (vec![], vec![]);
        // The pattern, from the socket types of either side: an address
        // fed (or read) from outside this process has one side only.
        let mut pattern: Option<String> = None;
        for a in &self.agents {
            for p in a
                .ports
                .iter()
                .filter(|p| p.endpoints.iter().any(|e| e == addr))
            {
                let r = PortRefView {
                    node: a.name.clone(),
                    port: p.key.clone(),
                };
                if pattern.is_none() || p.send {
                    pattern = Some(pattern_of(&p.stype));
                }
                if p.send {
                    from.push(r);
                } else {
                    to.push(r);
                }
            }
        }
        EdgeView {
            id: format!("e{n}"),
            pattern: pattern.unwrap_or_default(),
            transport: scheme(addr).to_string(),
            addresses: vec![addr.to_string()],
            from,
            to,
            figures: EdgeShown::from(&EdgeFigures::of(&[addr.to_string()], docs)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An address with a receiver only (fed by a `ptmp send` of another
    /// process, say) is named by its receiver's pattern, as is one with a
    /// sender only; both sides present agree.
    #[test]
    fn one_sided_edges_name_their_pattern() {
        let cfg = json!({"name": "t", "proxies": [
            {"name": "sink", "type": "sink", "data": {
                "input": {"socket": {"type": "PULL", "bind": ["tcp://127.0.0.1:1"]}}}},
            {"name": "sub", "type": "sink", "data": {
                "input": {"socket": {"type": "SUB", "connect": ["tcp://127.0.0.1:2"]}}}},
            {"name": "src", "type": "source", "data": {
                "output": {"socket": {"type": "PUB", "bind": ["ipc:///tmp/x"]}}}},
            {"name": "pair", "type": "sink", "data": {
                "input": {"socket": {"type": "PAIR", "bind": ["inproc://p"]}}}},
            {"name": "st", "type": "sink", "data": {
                "input": {"socket": {"type": "STREAM", "connect": ["tcp://127.0.0.1:3"]}}}}
        ]});
        let (st, _) = Local::new(&cfg).gather();
        let st = serde_json::to_value(&st).unwrap();
        let pat: Vec<(&str, &str)> = st["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["addresses"][0].as_str().unwrap(),
                    e["pattern"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            pat,
            [
                ("tcp://127.0.0.1:1", "pushpull"),
                ("tcp://127.0.0.1:2", "pubsub"),
                ("ipc:///tmp/x", "pubsub"),
                ("inproc://p", "pair"),
                ("tcp://127.0.0.1:3", "stream"),
            ]
        );
        assert!(st["edges"][0]["from"].as_array().unwrap().is_empty());
        // A STREAM socket under `input` receives, by the rule `ptmp top`
        // uses too (its type says neither way; its key does).
        assert_eq!(st["edges"][4]["to"][0]["node"], "st", "{}", st["edges"][4]);
        assert!(st["edges"][4]["from"].as_array().unwrap().is_empty());
    }
}
