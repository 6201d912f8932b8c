//! `ptmp graph dot`: the graph in Graphviz, hosts and processes as nested
//! clusters, each edge labelled with its pattern and chosen transport.

use crate::plan::Plan;
use crate::Graph;

fn q(s: &str) -> String {
    format!(
        "\"{}\"",
        s.replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n")
    )
}

/// The graph as Graphviz source: hosts and processes as nested clusters,
/// nodes as boxes, each edge labelled with its pattern and planned transport.
pub fn dot(g: &Graph, plan: &Plan) -> String {
    let mut s = format!(
        "digraph {} {{\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\", fontsize=10];\n",
        q(&g.name)
    );
    for (h, host) in g.hosts.iter().enumerate() {
        let procs: Vec<usize> = (0..g.processes.len())
            .filter(|&p| g.processes[p].host == h)
            .collect();
        if procs.is_empty() {
            continue;
        }
        s += &format!(
            "  subgraph {} {{\n    label={};\n    style=dashed;\n",
            q(&format!("cluster_host_{}", host.name)),
            q(&format!("host {} ({})", host.name, host.address))
        );
        for p in procs {
            let pr = &g.processes[p];
            s += &format!(
                "    subgraph {} {{\n      label={};\n      style=rounded;\n",
                q(&format!("cluster_proc_{}", pr.name)),
                q(&format!("process {}", pr.name))
            );
            for &k in &pr.nodes {
                let n = &g.nodes[k];
                s += &format!(
                    "      {} [label={}];\n",
                    q(&n.name),
                    q(&format!("{}\n{}", n.name, n.kind.name()))
                );
            }
            s += "    }\n";
        }
        s += "  }\n";
    }
    for (i, e) in g.edges.iter().enumerate() {
        let l = &plan.links[i];
        for f in &e.from {
            for t in &e.to {
                s += &format!(
                    "  {} -> {} [label={}, taillabel={}, headlabel={}];\n",
                    q(&g.nodes[f.node].name),
                    q(&g.nodes[t.node].name),
                    q(&format!("{} {}", e.pattern.name(), l.transport.scheme())),
                    q(f.port),
                    q(t.port)
                );
            }
        }
    }
    s += "}\n";
    s
}
