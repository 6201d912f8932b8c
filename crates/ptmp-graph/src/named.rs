//! Graphs without an address plan: a host given no `address` has its tcp
//! edges found by name. Each output of such an edge binds
//! `name://NODE/PORT` (an ephemeral tcp port, announced under the node's
//! and port's names in the graph's discovery group, the graph's name), and
//! the inputs connect to that name, resolved when their socket is made and
//! followed when the node comes back elsewhere. Every process of such a
//! graph asks for presence (`"discovery"` in its configuration).

use crate::plan::Link;
use crate::{Graph, PortRef};
use ptmp::Transport;
use serde_json::{json, Value};

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
pub fn address(g: &Graph, b: PortRef) -> std::result::Result<String, String> {
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

/// Adds `"discovery": {"group": GRAPH}` to a process's configuration when
/// any edge of the graph is wired by name.
pub fn add_discovery(g: &Graph, links: &[Link], config: &mut Value) {
    let named = links
        .iter()
        .any(|l| l.binds.iter().any(|(_, a)| is_name(a)));
    if let (true, Some(o)) = (named, config.as_object_mut()) {
        o.insert("discovery".into(), json!({"group": g.name}));
    }
}
