//! The state of the agents of this very process (`ptmp run CONFIG
//! --http`): no graph and no run directory, so the shape comes from the
//! configuration (each agent's sockets, by the keys of its `data`) and
//! the figures from the live socket counters of this process. An edge is
//! an address: its senders are the sockets that send to it, its receivers
//! those that receive from it.

use crate::state::{add_figures, Gather, SocketRow};
use ptmp_graph::status::{EdgeFigures, SocketStatus};
use serde_json::{json, Value};
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
                let send = match stype.as_str() {
                    "PUB" | "PUSH" | "XPUB" | "STREAM" => true,
                    "PAIR" => path.contains("out"),
                    _ => false,
                };
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

/// The messaging pattern a socket type takes part in: `pushpull`,
/// `pubsub`, `pair`, or the type itself in lower case for the others
/// (`stream`, `router`...).
fn pattern_of(stype: &str) -> String {
    match stype {
        "PUSH" | "PULL" => "pushpull".into(),
        "PUB" | "XPUB" | "SUB" | "XSUB" => "pubsub".into(),
        "PAIR" => "pair".into(),
        "" => "?".into(),
        t => t.to_ascii_lowercase(),
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
    fn gather(&mut self) -> (Value, Vec<SocketRow>) {
        let docs = ptmp_graph::status::sockets();
        // Every address, numbered in order, is an edge.
        let mut addrs: BTreeMap<&str, usize> = BTreeMap::new();
        for a in &self.agents {
            for p in &a.ports {
                for e in &p.endpoints {
                    let n = addrs.len();
                    addrs.entry(e.as_str()).or_insert(n);
                }
            }
        }
        // Sockets to ports: same direction and endpoints, in order.
        let mut used: Vec<Vec<bool>> = self
            .agents
            .iter()
            .map(|a| vec![false; a.ports.len()])
            .collect();
        let mut rows = Vec::new();
        // (agent, port) -> the socket documents it owns.
        let mut owned: BTreeMap<(usize, usize), Vec<usize>> = BTreeMap::new();
        for (k, d) in docs.iter().enumerate() {
            let (mut row, send, eps) =
                SocketRow::from_doc(self.name.clone(), "localhost".into(), k, d);
            let mut hit = None;
            'find: for (ai, a) in self.agents.iter().enumerate() {
                for (pi, p) in a.ports.iter().enumerate() {
                    if !used[ai][pi] && p.send == send && p.endpoints == eps {
                        hit = Some((ai, pi));
                        break 'find;
                    }
                }
            }
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
        let fsum = |ks: &[usize], figure: fn(&SocketStatus) -> f64| -> f64 {
            // Plus 0.0: an empty sum of floats is -0.0.
            ks.iter().map(|&k| figure(&docs[k])).sum::<f64>() + 0.0
        };
        let mut nodes = Vec::new();
        for (ai, a) in self.agents.iter().enumerate() {
            let mut ins = vec![];
            let mut outs = vec![];
            for (pi, p) in a.ports.iter().enumerate() {
                let ks = owned.get(&(ai, pi)).cloned().unwrap_or_default();
                if p.send {
                    outs.extend(ks);
                } else {
                    ins.extend(ks);
                }
            }
            let ports: Vec<Value> = a
                .ports
                .iter()
                .map(|p| json!({"name": p.key, "dir": if p.send { "out" } else { "in" }}))
                .collect();
            nodes.push(json!({
                "name": a.name, "kind": a.kind, "process": self.name, "host": "localhost",
                "state": "running", "restarts": 0,
                "in": fsum(&ins, |d| d.messages as f64) as u64, "out": fsum(&outs, |d| d.messages as f64) as u64,
                "in_rate": fsum(&ins, |d| d.rate), "out_rate": fsum(&outs, |d| d.rate), "ports": ports,
            }));
        }
        let mut edges = Vec::new();
        let mut by_index: Vec<(&str, usize)> = addrs.iter().map(|(a, n)| (*a, *n)).collect();
        by_index.sort_by_key(|x| x.1);
        for (addr, n) in by_index {
            let mut from = vec![];
            let mut to = vec![];
            // The pattern, from the socket types of either side: an
            // address fed (or read) from outside this process has one
            // side only.
            let mut pattern: Option<String> = None;
            for a in &self.agents {
                for p in &a.ports {
                    if !p.endpoints.iter().any(|e| e == addr) {
                        continue;
                    }
                    let r = json!({"node": a.name, "port": p.key});
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
            let mut edge = json!({
                "id": format!("e{n}"), "pattern": pattern.unwrap_or_default(), "transport": scheme(addr),
                "addresses": [addr], "from": from, "to": to,
            });
            add_figures(&mut edge, &EdgeFigures::of(&[addr.to_string()], &docs));
            edges.push(edge);
        }
        let t = self.started.elapsed().as_secs_f64();
        let state = json!({
            "graph": self.name, "host": "localhost",
            "time_us": std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_micros() as u64)
                .unwrap_or(0),
            "uptime_s": (t * 10.0).round() / 10.0,
            "hosts": [{"name": "localhost", "address": "127.0.0.1"}],
            "processes": [{"name": self.name, "host": "localhost", "state": "running",
                           "restarts": 0, "pid": std::process::id()}],
            "nodes": nodes, "edges": edges,
        });
        (state, rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
