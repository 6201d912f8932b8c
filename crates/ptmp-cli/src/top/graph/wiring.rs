//! How a graph's sockets connect, read from its plans and status files:
//! which node each reported socket belongs to, the edges by address, and
//! how far downstream each node is.

use super::{Ends, PlanNode, PlanSocket, ProcStatus, SockFig};
use std::collections::{BTreeMap, HashMap};

/// Every socket the processes report, with the node it belongs to (the
/// plan's node of that process with a socket on the same addresses).
pub(super) fn sock_figs(
    stats: &[ProcStatus],
    plan_nodes: &[PlanNode],
    socks: &[PlanSocket],
) -> Vec<SockFig> {
    let mut sock_figs: Vec<SockFig> = Vec::new();
    for st in stats {
        for x in &st.doc.sockets {
            let endpoints = &x.endpoints;
            let recv = !x.sends();
            let node = plan_nodes
                .iter()
                .filter(|n| n.process == st.process)
                .find(|n| {
                    socks.iter().any(|p| {
                        p.node == n.name
                            && p.sends != recv
                            && p.addresses.iter().any(|a| endpoints.contains(a))
                    })
                })
                .map(|n| n.name.clone());
            sock_figs.push(SockFig {
                node,
                recv,
                lost: Some(x.lost),
                p99_us: x.latency_us.map(|l| l.p99 as f64),
                doc: x.clone(),
            });
        }
    }
    sock_figs
}

/// Edges: per address, the sockets sending on it and those receiving.
pub(super) fn edge_ends(socks: &[PlanSocket]) -> BTreeMap<String, Ends<'_>> {
    let mut edges: BTreeMap<String, Ends> = BTreeMap::new();
    for s in socks {
        for a in &s.addresses {
            let e = edges.entry(a.clone()).or_default();
            if s.sends {
                e.0.push(s);
            } else {
                e.1.push(s);
            }
        }
    }
    edges
}

/// How far downstream each node is (the longest path to it from a node
/// nothing feeds), so nodes and edges are listed in the order the data
/// flows. A cycle only stops the counting after `bound` rounds.
pub(super) fn depths<'a>(
    edges: &BTreeMap<String, Ends<'a>>,
    bound: usize,
) -> HashMap<&'a str, usize> {
    let mut depth: HashMap<&str, usize> = HashMap::new();
    for _ in 0..=bound {
        let mut moved = false;
        for (tx, rx) in edges.values() {
            for s in tx {
                let d = depth.get(s.node.as_str()).copied().unwrap_or(0) + 1;
                for r in rx {
                    let e = depth.entry(r.node.as_str()).or_insert(0);
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
