//! A plan shown to people (`ptmp graph check`) and to programs
//! (`ptmp graph check --json`).

use super::Plan;
use crate::Graph;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Render the plan as text: each edge's transport and address, each
/// process's host and nodes.
pub fn describe(g: &Graph, plan: &Plan) -> String {
    let mut s = String::new();
    let mut by_host: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for p in &g.processes {
        by_host
            .entry(g.hosts[p.host].name.as_str())
            .or_default()
            .push(&p.name);
    }
    s += &format!(
        "graph {}: {} nodes, {} edges, {} processes on {} host(s); run dir {}\n",
        g.name,
        g.nodes.len(),
        g.edges.len(),
        g.processes.len(),
        by_host.len(),
        plan.run_dir.display()
    );
    for (i, p) in g.processes.iter().enumerate() {
        let nodes: Vec<String> = p
            .nodes
            .iter()
            .map(|&k| format!("{} ({})", g.nodes[k].name, g.nodes[k].kind.name()))
            .collect();
        s += &format!(
            "  process {} on {}{}: {}\n",
            p.name,
            g.hosts[p.host].name,
            if plan.finite[i] {
                " [ends by itself]"
            } else {
                ""
            },
            nodes.join(", ")
        );
    }
    for (i, l) in plan.links.iter().enumerate() {
        s += &format!(
            "  {} {} over {} at {}{}\n",
            g.edge_label(i),
            g.edges[i].pattern.name(),
            l.transport.scheme(),
            l.binds
                .iter()
                .map(|(_, a)| a.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            if l.auto { "" } else { " (pinned)" }
        );
    }
    s
}

/// The plan as JSON: the graph's name and run directory, each process
/// (host, nodes, whether it ends by itself) and each edge (its ends,
/// pattern, transport, the addresses bound and whether the transport was
/// pinned).
pub fn describe_json(g: &Graph, plan: &Plan) -> Value {
    let processes: Vec<Value> = g
        .processes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let nodes: Vec<Value> = p
                .nodes
                .iter()
                .map(|&k| json!({"name": g.nodes[k].name, "type": g.nodes[k].kind.name()}))
                .collect();
            json!({"name": p.name, "host": g.hosts[p.host].name,
                   "ends_by_itself": plan.finite[i], "nodes": nodes})
        })
        .collect();
    let label = |r: &crate::PortRef| format!("{}.{}", g.nodes[r.node].name, r.port);
    let edges: Vec<Value> = plan
        .links
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let binds: Vec<Value> = l
                .binds
                .iter()
                .map(|(port, a)| json!({"port": label(port), "address": a}))
                .collect();
            let e = &g.edges[i];
            let from: Vec<String> = e.from.iter().map(label).collect();
            let to: Vec<String> = e.to.iter().map(label).collect();
            json!({"index": i, "from": from, "to": to, "pattern": g.edges[i].pattern.name(),
                   "transport": l.transport.scheme(), "pinned": !l.auto, "binds": binds})
        })
        .collect();
    let hosts: Vec<&str> = g.hosts.iter().map(|h| h.name.as_str()).collect();
    json!({"graph": g.name, "run_dir": plan.run_dir, "hosts": hosts,
           "nodes": g.nodes.len(), "processes": processes, "edges": edges, "valid": true})
}
