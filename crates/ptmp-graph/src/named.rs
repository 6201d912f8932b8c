//! Graphs without an address plan: a host given no `address` has its tcp
//! edges found by name. Each output of such an edge binds
//! `name://NODE/PORT` (an ephemeral tcp port, announced under the node's
//! and port's names in the graph's discovery group, the graph's name), and
//! the inputs connect to that name, resolved when their socket is made and
//! followed when the node comes back elsewhere. Every process of such a
//! graph asks for presence (`"discovery"` in its configuration).

use crate::{Graph, PortRef};
use ptmp::Transport;

/// Whether `address` is a name rather than an address.
pub fn is_name(address: &str) -> bool {
    ptmp::names::parse(address).is_some()
}

/// Whether the host of `b`'s node has no address.
pub fn host_unplanned(g: &Graph, b: PortRef) -> bool {
    g.hosts[g.processes[g.nodes[b.node].process].host]
        .address
        .is_empty()
}

/// Whether an edge over `t` from `from` is wired by name: tcp, and some
/// output's host has no address.
pub fn by_name(g: &Graph, t: Transport, from: &[PortRef]) -> bool {
    t == Transport::Tcp && from.iter().any(|&b| host_unplanned(g, b))
}

/// The name port `b` binds: `name://NODE/PORT`.
pub(crate) fn address(g: &Graph, b: PortRef) -> std::result::Result<String, String> {
    // The graph's name is its discovery group, which has the limits of a name.
    if g.name.len() > 24 {
        return Err(format!(
            "hosts without an address find each other in a group named after the graph, \
             but the graph's name {:?} is longer than 24 characters",
            g.name
        ));
    }
    let a = format!(
        "{}{}/{}",
        ptmp::names::NAME_SCHEME,
        g.nodes[b.node].name,
        b.port
    );
    match ptmp::names::check(&a) {
        None => Ok(a),
        Some(why) => Err(format!(
            "node {} on a host without an address is found by name {a}, but {why}",
            g.nodes[b.node].name
        )),
    }
}

#[cfg(test)]
mod tests {
    use crate::plan::Plan;
    use crate::Graph;
    use serde_json::{json, Value};
    use std::path::Path;

    fn plan(hosts: Value) -> Plan {
        let v = json!({
            "name": "bn",
            "hosts": hosts,
            "nodes": [
                {"name": "s1", "type": "source", "data": {"count": 10}},
                {"name": "s2", "type": "source", "data": {"count": 10}},
                {"name": "w", "type": "worker"},
                {"name": "k", "type": "sink"}
            ],
            "edges": [
                {"from": ["s1.out", "s2.out"], "to": "w.in", "pattern": "pushpull"},
                {"from": "w.out", "to": "k.in", "pattern": "pushpull"}
            ],
            "processes": [
                {"name": "p1", "host": "a", "nodes": ["s1", "s2"]},
                {"name": "p2", "host": "b", "nodes": ["w"]},
                {"name": "p3", "host": "b", "nodes": ["k"]}
            ]
        });
        let g = Graph::parse(&v, "x").unwrap();
        Plan::make(&g, Path::new("/tmp/ptmp-graph-test")).unwrap()
    }

    fn socket<'a>(p: &'a Plan, proc: usize, node: &str, key: &str) -> &'a Value {
        let proxies = &p.configs[proc].proxies;
        let n = proxies.iter().find(|x| x.name == node).unwrap();
        &n.data[key]["socket"]
    }

    #[test]
    fn hosts_without_addresses_wire_tcp_edges_by_name() {
        let p = plan(json!([{"name": "a"}, {"name": "b"}]));
        // The fan-in across hosts: each output binds its own name, the
        // input connects to both.
        assert_eq!(
            socket(&p, 0, "s1", "output")["bind"],
            json!(["name://s1/out"])
        );
        assert_eq!(
            socket(&p, 0, "s2", "output")["bind"],
            json!(["name://s2/out"])
        );
        assert_eq!(
            socket(&p, 1, "w", "input")["connect"],
            json!(["name://s1/out", "name://s2/out"])
        );
        // Within host b: shm, no name.
        let wk = socket(&p, 1, "w", "output")["bind"][0].as_str().unwrap();
        assert!(wk.starts_with("shm://"), "{wk}");
        // Every process asks for presence in the graph's group.
        for c in &p.configs {
            assert_eq!(c.to_value()["discovery"], json!({"group": "bn"}));
        }
    }

    #[test]
    fn hosts_with_addresses_keep_their_plan() {
        let p = plan(json!([
            {"name": "a", "address": "10.0.0.1"},
            {"name": "b", "address": "10.0.0.2"}
        ]));
        let c = socket(&p, 0, "s1", "output");
        assert!(
            c["connect"][0]
                .as_str()
                .unwrap()
                .starts_with("tcp://10.0.0.2:"),
            "{c}"
        );
        assert!(p.configs.iter().all(|c| c.discovery.is_none()));
    }

    #[test]
    fn a_graph_name_too_long_for_a_group_is_refused() {
        let v = json!({
            "name": "a-graph-with-a-rather-long-name",
            "hosts": [{"name": "a"}, {"name": "b"}],
            "nodes": [{"name": "s", "type": "source"}, {"name": "k", "type": "sink"}],
            "edges": [{"from": "s.out", "to": "k.in", "pattern": "pushpull"}],
            "processes": [
                {"name": "p1", "host": "a", "nodes": ["s"]},
                {"name": "p2", "host": "b", "nodes": ["k"]}
            ]
        });
        let g = Graph::parse(&v, "x").unwrap();
        let e = Plan::make(&g, Path::new("/tmp/ptmp-graph-test"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("a-graph-with-a-rather-long-name") && e.contains("24"),
            "{e}"
        );
    }

    #[test]
    fn a_node_name_too_long_for_a_name_is_refused() {
        let v = json!({
            "name": "bn",
            "hosts": [{"name": "a"}, {"name": "b"}],
            "nodes": [
                {"name": "a-source-with-a-very-long-name", "type": "source"},
                {"name": "k", "type": "sink"}
            ],
            "edges": [{"from": "a-source-with-a-very-long-name.out", "to": "k.in",
                       "pattern": "pushpull"}],
            "processes": [
                {"name": "p1", "host": "a", "nodes": ["a-source-with-a-very-long-name"]},
                {"name": "p2", "host": "b", "nodes": ["k"]}
            ]
        });
        let g = Graph::parse(&v, "x").unwrap();
        let e = Plan::make(&g, Path::new("/tmp/ptmp-graph-test"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("a-source-with-a-very-long-name") && e.contains("24"),
            "{e}"
        );
    }
}
