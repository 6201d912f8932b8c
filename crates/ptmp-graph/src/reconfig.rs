//! Live reconfiguration: what changes between two versions of a graph,
//! the plan of the new one that keeps the old one's addresses, and the
//! control channel through which `ptmp graph apply` asks a running
//! supervisor to change its graph.
//!
//! * Nodes are matched by name, edges by their ends (`node.port` on both
//!   sides). A node whose type, data or process changed is *replaced*; an
//!   edge whose pattern, transport, address, hwm or heartbeat changed is
//!   replaced.
//! * The new plan keeps the address of every edge that did not change
//!   ([`crate::plan::Keep`]); new edges get addresses the old plan never used. A
//!   process whose configuration (its nodes' data and every socket) is the
//!   same in both plans is *kept*: the supervisor does not touch it, so it
//!   runs on without a gap. Processes only in the old graph are stopped,
//!   those only in the new one started, the others restarted.
//! * The channel is two files in the run directory: the request
//!   `apply-request.json` (published with a hard link, so it appears whole
//!   and a second apply while one is pending is refused) and the answer
//!   `apply-reply-ID.json`. The supervisor looks for a request every time
//!   round its loop (50 times a second), answers it and removes it.

use crate::plan::{Keep, Plan};
use crate::rundir::docs::SocketPlan;
use crate::{Error, Graph, PortRef, Result};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// How a node, edge or process fares in a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    /// Only in the new graph: added, its process started.
    Added,
    /// Only in the old graph: removed, its process stopped.
    Removed,
    /// In both, but different: replaced, its process restarted.
    Replaced,
    /// The same in both: it keeps running untouched.
    Kept,
}

impl Change {
    fn word(self, process: bool) -> &'static str {
        match (self, process) {
            (Change::Added, false) => "added",
            (Change::Removed, false) => "removed",
            (Change::Replaced, false) => "replaced",
            (Change::Kept, false) => "kept",
            (Change::Added, true) => "start",
            (Change::Removed, true) => "stop",
            (Change::Replaced, true) => "restart",
            (Change::Kept, true) => "keep",
        }
    }
}

/// One line of a [`Diff`]: what changed, its name and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// What happens to it.
    pub change: Change,
    /// The node's or process's name, or the edge's ends.
    pub name: String,
    /// Why it is replaced, or what it is (type, transport, host).
    pub detail: String,
}

/// What applying a new graph to a running one does.
#[derive(Debug, Clone, Default)]
pub struct Diff {
    /// The graph's name.
    pub graph: String,
    /// Every node of either graph.
    pub nodes: Vec<Item>,
    /// Every edge of either graph.
    pub edges: Vec<Item>,
    /// Every process of either graph, with its host in `detail`.
    pub processes: Vec<Item>,
    /// Changes to the graph as a whole that touch no process (the restart
    /// policy), as sentences.
    pub settings: Vec<String>,
}

impl Diff {
    /// Whether nothing would change.
    pub fn is_empty(&self) -> bool {
        self.nodes
            .iter()
            .chain(&self.edges)
            .chain(&self.processes)
            .all(|i| i.change == Change::Kept)
            && self.settings.is_empty()
    }

    /// The processes with change `c`.
    pub fn processes_with(&self, c: Change) -> Vec<&str> {
        self.processes
            .iter()
            .filter(|i| i.change == c)
            .map(|i| i.name.as_str())
            .collect()
    }

    /// The diff as JSON: every node, edge and process with its change
    /// (`added`/`removed`/`replaced`/`kept`; for processes
    /// `start`/`stop`/`restart`/`keep`) and why, the graph-wide settings
    /// changed, and how many processes each change touches.
    pub fn to_json(&self) -> Value {
        let items = |items: &[Item], process: bool| -> Vec<Value> {
            let mut sorted: Vec<&Item> = items.iter().collect();
            sorted.sort_by_key(|i| i.change);
            sorted
                .iter()
                .map(|i| json!({"change": i.change.word(process), "name": i.name, "detail": i.detail}))
                .collect()
        };
        let n = |c| self.processes_with(c).len();
        json!({
            "graph": self.graph,
            "nothing_to_do": self.is_empty(),
            "nodes": items(&self.nodes, false),
            "edges": items(&self.edges, false),
            "processes": items(&self.processes, true),
            "settings": self.settings,
            "count": {"start": n(Change::Added), "stop": n(Change::Removed),
                      "restart": n(Change::Replaced), "keep": n(Change::Kept)},
        })
    }

    /// The diff as text: one line per node, edge and process, changes
    /// first, then a summary line.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let section = |s: &mut String, title: &str, items: &[Item], process: bool| {
            *s += &format!("{title}:\n");
            let mut sorted: Vec<&Item> = items.iter().collect();
            sorted.sort_by_key(|i| i.change);
            for i in sorted {
                let mark = match i.change {
                    Change::Added => '+',
                    Change::Removed => '-',
                    Change::Replaced => '~',
                    Change::Kept => '=',
                };
                *s += &format!("  {mark} {:<8} {}", i.change.word(process), i.name);
                if !i.detail.is_empty() {
                    *s += &format!(" ({})", i.detail);
                }
                s.push('\n');
            }
        };
        section(&mut s, "nodes", &self.nodes, false);
        section(&mut s, "edges", &self.edges, false);
        section(&mut s, "processes", &self.processes, true);
        for x in &self.settings {
            s += &format!("graph: {x}\n");
        }
        if self.is_empty() {
            s += &format!("graph {}: nothing to do\n", self.graph);
        } else {
            let n = |c| self.processes_with(c).len();
            s += &format!(
                "graph {}: processes: {} started, {} stopped, {} restarted, {} kept\n",
                self.graph,
                n(Change::Added),
                n(Change::Removed),
                n(Change::Replaced),
                n(Change::Kept)
            );
        }
        s
    }
}

/// An edge's ends as names, for matching edges across graphs:
/// (sorted `node.port` of `from`, sorted `node.port` of `to`).
fn edge_key(g: &Graph, i: usize) -> (Vec<String>, Vec<String>) {
    let e = &g.edges[i];
    let side = |v: &[PortRef]| {
        let mut l: Vec<String> = v
            .iter()
            .map(|r| format!("{}.{}", g.nodes[r.node].name, r.port))
            .collect();
        l.sort();
        l
    };
    (side(&e.from), side(&e.to))
}

fn key_text(k: &(Vec<String>, Vec<String>)) -> String {
    format!("{} -> {}", k.0.join(", "), k.1.join(", "))
}

/// The new graph's port `node.port` in the old graph's numbering.
fn port_in(g: &Graph, name: &str, port: &'static str) -> Option<PortRef> {
    let k = g.nodes.iter().position(|n| n.name == name)?;
    Some(PortRef { node: k, port })
}

/// Why edge `j` of `new` differs from edge `i` of `old` (empty: it does
/// not, and its addresses may be kept).
fn edge_changes(old: &Graph, i: usize, new: &Graph, j: usize) -> Vec<String> {
    let (a, b) = (&old.edges[i], &new.edges[j]);
    let mut why = Vec::new();
    if a.pattern != b.pattern {
        why.push(format!(
            "pattern {} -> {}",
            a.pattern.name(),
            b.pattern.name()
        ));
    }
    if a.transport != b.transport {
        let t = |t: Option<ptmp::Transport>| t.map_or("auto", |t| t.scheme());
        why.push(format!(
            "transport {} -> {}",
            t(a.transport),
            t(b.transport)
        ));
    }
    if a.address != b.address {
        why.push("address changed".into());
    }
    if a.hwm != b.hwm {
        why.push("hwm changed".into());
    }
    if a.heartbeat_ms != b.heartbeat_ms {
        why.push("heartbeat_ms changed".into());
    }
    if a.shm != b.shm {
        why.push("shm ring shape changed".into());
    }
    if a.bind_inputs != b.bind_inputs {
        let side = |x: bool| if x { "in" } else { "out" };
        why.push(format!(
            "bind {} -> {}",
            side(a.bind_inputs),
            side(b.bind_inputs)
        ));
    }
    why
}

/// The matching edge of `new` for each edge of `old` (by ends).
fn edge_map(old: &Graph, new: &Graph) -> Vec<Option<usize>> {
    let keys: BTreeMap<_, usize> = (0..new.edges.len())
        .map(|j| (edge_key(new, j), j))
        .collect();
    (0..old.edges.len())
        .map(|i| keys.get(&edge_key(old, i)).copied())
        .collect()
}

/// Plan `new` to replace `old` (planned as `old_plan`) in the same run:
/// unchanged edges keep their addresses, new ones get fresh ones. Refused
/// when the graph's name changed (names are in its addresses) or two edges
/// would bind one address.
pub fn plan_next(old: &Graph, old_plan: &Plan, new: &Graph) -> Result<Plan> {
    let err = |msg: String| Error::Invalid {
        graph: new.name.clone(),
        msg,
    };
    if new.name != old.name {
        return Err(err(format!(
            "the running graph is called {}; a graph cannot be renamed while it runs (its name is in its addresses)",
            old.name
        )));
    }
    let mut keep = Keep {
        links: vec![None; new.edges.len()],
        taken: old_plan
            .links
            .iter()
            .flat_map(|l| l.binds.iter().map(|(_, a)| a.clone()))
            .collect(),
    };
    for (i, m) in edge_map(old, new).into_iter().enumerate() {
        let Some(j) = m else { continue };
        if !edge_changes(old, i, new, j).is_empty() {
            continue;
        }
        let l = &old_plan.links[i];
        let binds: Option<Vec<(PortRef, String)>> = l
            .binds
            .iter()
            .map(|(r, a)| {
                let r = port_in(new, &old.nodes[r.node].name, r.port)?;
                // A tcp address names the binding node's host: kept only
                // while that host's address is the same.
                if let Some((h, _)) = a.strip_prefix("tcp://").and_then(|x| x.rsplit_once(':')) {
                    let host = &new.hosts[new.processes[new.nodes[r.node].process].host];
                    if h != host.address && new.edges[j].address.is_none() {
                        return None;
                    }
                }
                Some((r, a.clone()))
            })
            .collect();
        if let Some(b) = binds {
            keep.links[j] = Some((l.transport, b));
        }
    }
    let p = Plan::make_keeping(new, &old_plan.run_dir, Some(&keep))?;
    check_clashes(new, &p)?;
    Ok(p)
}

/// Refuse a plan in which two binds share one address (a pinned address
/// equal to another edge's, say).
pub fn check_clashes(g: &Graph, p: &Plan) -> Result<()> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, l) in p.links.iter().enumerate() {
        for (_, a) in &l.binds {
            if let Some(&j) = seen.get(a.as_str()) {
                if j != i {
                    return Err(Error::Invalid {
                        graph: g.name.clone(),
                        msg: format!(
                            "address clash: {} and {} both bind {a}",
                            g.edge_label(j),
                            g.edge_label(i)
                        ),
                    });
                }
            }
            seen.insert(a, i);
        }
    }
    Ok(())
}

/// The data of node `name` as `plan` gives it to its process.
fn planned_data<'a>(g: &Graph, plan: &'a Plan, name: &str) -> Option<&'a Map<String, Value>> {
    let k = g.nodes.iter().position(|n| n.name == name)?;
    plan.configs[g.nodes[k].process]
        .proxies
        .iter()
        .find(|p| p.name == name)
        .map(|p| &p.data)
}

/// Keys the runner sets in a node's data (not its sockets, which follow
/// its edges) that differ between the plans, each with the runner's
/// reason: a node whose own data did not change is still restarted for
/// them, and the plan says why.
fn runner_set(
    old: &Graph,
    old_plan: &Plan,
    new: &Graph,
    new_plan: &Plan,
    name: &str,
) -> Vec<String> {
    let (Some(a), Some(b)) = (
        planned_data(old, old_plan, name),
        planned_data(new, new_plan, name),
    ) else {
        return Vec::new();
    };
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let mut why = Vec::new();
    for k in keys {
        let (x, y) = (a.get(k), b.get(k));
        if x == y || [x, y].iter().flatten().any(|v| SocketPlan::of(v).is_some()) {
            continue;
        }
        let show = |v: Option<&Value>| v.map_or("(none)".to_string(), Value::to_string);
        let reason = match k.as_str() {
            "dedup" => dedup_reason(old, new),
            "streams" => "the number of senders into its input changed".to_string(),
            "share" => "whether its input is dealt out among several receivers changed".to_string(),
            _ => "its edges changed".to_string(),
        };
        why.push(format!(
            "{k} {} -> {} set by the runner: {reason}",
            show(x),
            show(y)
        ));
    }
    why
}

/// Why the runner's `dedup` for a node differs between `old` and `new`.
fn dedup_reason(old: &Graph, new: &Graph) -> String {
    fn shared(g: &Graph) -> Option<(u64, Vec<&str>)> {
        let mut by: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
        for n in g
            .nodes
            .iter()
            .filter(|n| n.kind == ptmp_agents::Kind::Source)
        {
            let d = n.data.get("detid").and_then(Value::as_u64).unwrap_or(0);
            by.entry(d).or_default().push(&n.name);
        }
        by.into_iter().find(|(_, v)| v.len() > 1)
    }
    match (shared(old), shared(new)) {
        (None, Some((d, names))) => format!(
            "sources {} now share detid {d}, so a set's (detid, count) no longer names one set and no node drops repeats; give each source its own detid to keep it",
            names.join(", ")
        ),
        (Some((d, _)), None) => format!(
            "no two sources share a detid now (before, detid {d} was shared), so repeats are dropped again"
        ),
        _ => "what feeds it changed: it takes sets made by nodes other than sources, workers and proxies, or no longer does".to_string(),
    }
}

/// Every node of either graph: added, removed, replaced (and why) or kept.
fn node_items(old: &Graph, old_plan: &Plan, new: &Graph, new_plan: &Plan) -> Vec<Item> {
    let mut out = Vec::new();
    for n in &old.nodes {
        let Some(m) = new.nodes.iter().find(|x| x.name == n.name) else {
            out.push(Item {
                change: Change::Removed,
                name: n.name.clone(),
                detail: n.type_name.clone(),
            });
            continue;
        };
        let mut why = Vec::new();
        if m.type_name != n.type_name {
            why.push(format!("type {} -> {}", n.type_name, m.type_name));
        }
        let keys: BTreeSet<&String> = n.data.keys().chain(m.data.keys()).collect();
        for k in keys {
            let (a, b) = (n.data.get(k), m.data.get(k));
            if a != b {
                let show = |v: Option<&Value>| v.map_or("(none)".to_string(), Value::to_string);
                why.push(format!("{k} {} -> {}", show(a), show(b)));
            }
        }
        let (pa, pb) = (
            &old.processes[n.process].name,
            &new.processes[m.process].name,
        );
        if pa != pb {
            why.push(format!("process {pa} -> {pb}"));
        }
        if why.is_empty() {
            why = runner_set(old, old_plan, new, new_plan, &n.name);
        }
        out.push(Item {
            change: if why.is_empty() {
                Change::Kept
            } else {
                Change::Replaced
            },
            name: n.name.clone(),
            detail: if why.is_empty() {
                n.type_name.clone()
            } else {
                why.join("; ")
            },
        });
    }
    for m in new
        .nodes
        .iter()
        .filter(|m| !old.nodes.iter().any(|n| n.name == m.name))
    {
        out.push(Item {
            change: Change::Added,
            name: m.name.clone(),
            detail: m.type_name.clone(),
        });
    }
    out
}

/// Every edge of either graph, matched by its ends: added, removed,
/// replaced (and why) or kept.
fn edge_items(old: &Graph, old_plan: &Plan, new: &Graph, new_plan: &Plan) -> Vec<Item> {
    let mut out = Vec::new();
    let map = edge_map(old, new);
    let addrs = |p: &Plan, i: usize| {
        let l = &p.links[i];
        format!(
            "{} at {}",
            l.transport.scheme(),
            l.binds
                .iter()
                .map(|(_, a)| a.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    for (i, m) in map.iter().enumerate() {
        let key = key_text(&edge_key(old, i));
        match m {
            None => out.push(Item {
                change: Change::Removed,
                name: key,
                detail: format!(
                    "{} over {}",
                    old.edges[i].pattern.name(),
                    addrs(old_plan, i)
                ),
            }),
            Some(j) => {
                let mut why = edge_changes(old, i, new, *j);
                let (a, b) = (addrs(old_plan, i), addrs(new_plan, *j));
                if why.is_empty() && a != b {
                    why.push(format!("{a} -> {b}"));
                }
                out.push(Item {
                    change: if why.is_empty() {
                        Change::Kept
                    } else {
                        Change::Replaced
                    },
                    name: key,
                    detail: if why.is_empty() {
                        format!("{} over {a}", new.edges[*j].pattern.name())
                    } else {
                        why.join("; ")
                    },
                });
            }
        }
    }
    for j in 0..new.edges.len() {
        if map.contains(&Some(j)) {
            continue;
        }
        out.push(Item {
            change: Change::Added,
            name: key_text(&edge_key(new, j)),
            detail: format!(
                "{} over {}",
                new.edges[j].pattern.name(),
                addrs(new_plan, j)
            ),
        });
    }
    out
}

/// Every process of either graph: kept when its host and configuration
/// are the same, else restarted (naming its changed `nodes`), started or
/// stopped.
fn process_items(
    old: &Graph,
    old_plan: &Plan,
    new: &Graph,
    new_plan: &Plan,
    nodes: &[Item],
) -> Vec<Item> {
    let mut out = Vec::new();
    for (i, p) in old.processes.iter().enumerate() {
        let host = &old.hosts[p.host].name;
        let Some(j) = new.processes.iter().position(|x| x.name == p.name) else {
            out.push(Item {
                change: Change::Removed,
                name: p.name.clone(),
                detail: format!("host {host}"),
            });
            continue;
        };
        let host2 = &new.hosts[new.processes[j].host].name;
        let same = host == host2 && old_plan.configs[i] == new_plan.configs[j];
        let detail = if host != host2 {
            format!("host {host} -> {host2}")
        } else if same {
            format!("host {host}")
        } else {
            let changed: Vec<&str> = new.processes[j]
                .nodes
                .iter()
                .map(|&k| new.nodes[k].name.as_str())
                .filter(|n| {
                    nodes
                        .iter()
                        .any(|x| x.name == *n && x.change != Change::Kept)
                })
                .collect();
            if changed.is_empty() {
                format!("host {host}; its sockets changed")
            } else {
                format!("host {host}; nodes {} changed", changed.join(", "))
            }
        };
        out.push(Item {
            change: if same { Change::Kept } else { Change::Replaced },
            name: p.name.clone(),
            detail,
        });
    }
    for p in new
        .processes
        .iter()
        .filter(|p| !old.processes.iter().any(|x| x.name == p.name))
    {
        out.push(Item {
            change: Change::Added,
            name: p.name.clone(),
            detail: format!("host {}", new.hosts[p.host].name),
        });
    }
    out
}

/// What changes from `old` to `new`, each wired by its plan.
pub fn diff(old: &Graph, old_plan: &Plan, new: &Graph, new_plan: &Plan) -> Diff {
    let mut d = Diff {
        graph: new.name.clone(),
        ..Default::default()
    };
    if old.restart.max != new.restart.max || old.restart.backoff != new.restart.backoff {
        d.settings.push(format!(
            "restart: max {} -> {}, backoff {:?} -> {:?}",
            old.restart.max, new.restart.max, old.restart.backoff, new.restart.backoff
        ));
    }
    d.nodes = node_items(old, old_plan, new, new_plan);
    d.edges = edge_items(old, old_plan, new, new_plan);
    d.processes = process_items(old, old_plan, new, new_plan, &d.nodes);
    d
}

/// Parse `v` as the new version of the running graph `old` and plan it
/// against `old_plan`; the diff says what applying it does.
pub fn prepare(
    old: &Graph,
    old_plan: &Plan,
    v: &Value,
    default_name: &str,
) -> Result<(Graph, Plan, Diff)> {
    let new = Graph::parse(v, default_name)?;
    let p = plan_next(old, old_plan, &new)?;
    let d = diff(old, old_plan, &new, &p);
    Ok((new, p, d))
}

mod channel;
pub use crate::rundir::{reply_file, request_file};
pub use channel::{answer, new_id, send, take, Refusal, Reply, Request};

/// The shm rings and ipc socket files `old_plan` bound on `host` that
/// `new_plan` does not: what a change leaves behind to remove.
pub fn unbound(
    old: &Graph,
    old_plan: &Plan,
    new: &Graph,
    new_plan: &Plan,
    host: usize,
) -> (Vec<String>, Vec<PathBuf>) {
    let (r0, s0) = old_plan.bound_here(old, host);
    let host_name = &old.hosts[host].name;
    let (r1, s1) = match new.hosts.iter().position(|h| &h.name == host_name) {
        Some(h) => new_plan.bound_here(new, h),
        None => (vec![], vec![]),
    };
    (
        r0.into_iter().filter(|r| !r1.contains(r)).collect(),
        s0.into_iter().filter(|s| !s1.contains(s)).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    const DIR: &str = "/tmp/ptmp-reconfig-test";

    fn chain() -> Value {
        json!({
            "name": "t",
            "nodes": [
                {"name": "src", "type": "source", "data": {"count": 10, "detid": 1}},
                {"name": "w", "type": "worker"},
                {"name": "snk", "type": "sink"}
            ],
            "edges": [
                {"from": "src.out", "to": "w.in", "pattern": "pushpull"},
                {"from": "w.out", "to": "snk.in", "pattern": "pushpull"}
            ]
        })
    }

    fn planned(v: &Value) -> (Graph, Plan) {
        let g = Graph::parse(v, "t").unwrap();
        let p = Plan::make(&g, Path::new(DIR)).unwrap();
        (g, p)
    }

    fn addr(g: &Graph, p: &Plan, from: &str) -> String {
        let i = (0..g.edges.len())
            .find(|&i| edge_key(g, i).0 == vec![from.to_string()])
            .unwrap();
        p.links[i].binds[0].1.clone()
    }

    /// A node and edge added in front of the others (which shifts every
    /// edge's index) moves no address: the unchanged processes' configs
    /// are the same, so they are kept.
    #[test]
    fn an_added_edge_moves_no_other_address() {
        let (g, p) = planned(&chain());
        let mut v = chain();
        v["nodes"].as_array_mut().unwrap().insert(
            0,
            json!({"name": "s0", "type": "source", "data": {"detid": 2}}),
        );
        v["nodes"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "k0", "type": "sink"}));
        v["edges"].as_array_mut().unwrap().insert(
            0,
            json!({"from": "s0.out", "to": "k0.in", "pattern": "pushpull"}),
        );
        let (g2, p2, d) = prepare(&g, &p, &v, "t").unwrap();
        for from in ["src.out", "w.out"] {
            assert_eq!(addr(&g, &p, from), addr(&g2, &p2, from));
        }
        // Planned afresh, the shifted edges would have moved.
        let fresh = Plan::make(&g2, Path::new(DIR)).unwrap();
        assert_ne!(addr(&g2, &fresh, "src.out"), addr(&g, &p, "src.out"));
        assert_eq!(d.processes_with(Change::Kept), vec!["src", "w", "snk"]);
        assert_eq!(d.processes_with(Change::Added), vec!["s0", "k0"]);
        assert!(d.processes_with(Change::Replaced).is_empty());
    }

    /// An edge removed and another added where its label would fall gets
    /// an address the old plan never bound: a new reader never meets an
    /// old ring's sets.
    #[test]
    fn a_new_edge_never_takes_an_old_address() {
        let mut v = chain();
        v["nodes"][2]["type"] = json!("proxy");
        v["nodes"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "k", "type": "sink"}));
        v["edges"]
            .as_array_mut()
            .unwrap()
            .push(json!({"from": "snk.out", "to": "k.in", "pattern": "pushpull"}));
        let (g, p) = planned(&v);
        // The same ends with another pattern: a new edge.
        let mut v2 = v.clone();
        v2["edges"][1]["pattern"] = json!("pubsub");
        let (g2, p2, d) = prepare(&g, &p, &v2, "t").unwrap();
        let (a, b) = (addr(&g, &p, "w.out"), addr(&g2, &p2, "w.out"));
        assert_ne!(a, b);
        assert!(b.ends_with("-g2"), "{b}");
        assert!(d.edges.iter().any(
            |i| i.change == Change::Replaced && i.detail.contains("pattern pushpull -> pubsub")
        ));
        assert_eq!(d.processes_with(Change::Kept), vec!["src", "k"]);
        assert_eq!(d.processes_with(Change::Replaced), vec!["w", "snk"]);
    }

    /// tcp edges keep their ports; a new one takes a port no old edge had.
    #[test]
    fn tcp_ports_are_kept_and_new_ones_are_fresh() {
        let mut v = chain();
        v["hosts"] =
            json!([{"name": "a", "address": "10.1.0.1"}, {"name": "b", "address": "10.1.0.2"}]);
        v["processes"] = json!([
            {"name": "pa", "host": "a", "nodes": ["src"]},
            {"name": "pb", "host": "b", "nodes": ["w"]},
            {"name": "pc", "host": "a", "nodes": ["snk"]}
        ]);
        v["port_base"] = json!(21000);
        let (g, p) = planned(&v);
        assert_eq!(addr(&g, &p, "src.out"), "tcp://10.1.0.1:21000");
        assert_eq!(addr(&g, &p, "w.out"), "tcp://10.1.0.2:21001");
        let mut v2 = v.clone();
        v2["nodes"].as_array_mut().unwrap().insert(
            0,
            json!({"name": "s0", "type": "source", "data": {"detid": 2}}),
        );
        v2["nodes"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "k0", "type": "sink"}));
        v2["processes"].as_array_mut().unwrap().extend([
            json!({"name": "pd", "host": "a", "nodes": ["s0"]}),
            json!({"name": "pe", "host": "b", "nodes": ["k0"]}),
        ]);
        v2["edges"].as_array_mut().unwrap().insert(
            0,
            json!({"from": "s0.out", "to": "k0.in", "pattern": "pushpull"}),
        );
        let (g2, p2, d) = prepare(&g, &p, &v2, "t").unwrap();
        assert_eq!(addr(&g2, &p2, "src.out"), "tcp://10.1.0.1:21000");
        assert_eq!(addr(&g2, &p2, "w.out"), "tcp://10.1.0.2:21001");
        assert_eq!(addr(&g2, &p2, "s0.out"), "tcp://10.1.0.1:21002");
        assert_eq!(d.processes_with(Change::Kept), vec!["pa", "pb", "pc"]);
        // A host with a new address: its bindings move there.
        let mut v3 = v.clone();
        v3["hosts"][1]["address"] = json!("10.1.0.9");
        let (g3, p3, d) = prepare(&g, &p, &v3, "t").unwrap();
        assert_eq!(addr(&g3, &p3, "src.out"), "tcp://10.1.0.1:21000");
        assert_eq!(addr(&g3, &p3, "w.out"), "tcp://10.1.0.9:21002");
        assert_eq!(d.processes_with(Change::Kept), vec!["pa"]);
    }

    /// What apply refuses before it touches anything: a rename, two edges
    /// binding one address; and the diff of a graph with itself is empty.
    #[test]
    fn refusals_and_nothing_to_do() {
        let (g, p) = planned(&chain());
        let mut v = chain();
        v["name"] = json!("u");
        let e = prepare(&g, &p, &v, "t").unwrap_err().to_string();
        assert!(e.contains("cannot be renamed"), "{e}");
        let mut v = chain();
        v["edges"][0]["address"] = json!("ipc:///tmp/x.ipc");
        v["edges"][1]["address"] = json!("ipc:///tmp/x.ipc");
        let e = prepare(&g, &p, &v, "t").unwrap_err().to_string();
        assert!(
            e.contains("address clash: edges[0] (src.out -> w.in) and edges[1] (w.out -> snk.in) both bind ipc:///tmp/x.ipc"),
            "{e}"
        );
        let (_, _, d) = prepare(&g, &p, &chain(), "t").unwrap();
        assert!(d.is_empty());
        assert!(
            d.render().ends_with("graph t: nothing to do\n"),
            "{}",
            d.render()
        );
        // A new restart policy is a change that touches no process.
        let mut v = chain();
        v["restart"] = json!({"max": 9});
        let (_, _, d) = prepare(&g, &p, &v, "t").unwrap();
        assert!(!d.is_empty());
        assert_eq!(d.processes_with(Change::Kept), vec!["src", "w", "snk"]);
        assert!(
            d.render().contains("graph: restart: max 5 -> 9"),
            "{}",
            d.render()
        );
        // A changed setting replaces the node and restarts its process only.
        let mut v = chain();
        v["nodes"][1]["data"] = json!({"work_us": 5});
        let (_, _, d) = prepare(&g, &p, &v, "t").unwrap();
        let r = d.render();
        assert!(r.contains("~ replaced w (work_us (none) -> 5)"), "{r}");
        assert!(
            r.contains("~ restart  w (host localhost; nodes w changed)"),
            "{r}"
        );
        assert!(
            r.contains("processes: 0 started, 0 stopped, 1 restarted, 2 kept"),
            "{r}"
        );
    }

    /// `"bind": "in"` makes the inputs bind (and the edge zmq), and is
    /// refused where it cannot be.
    #[test]
    fn binding_at_the_inputs() {
        let mut v = chain();
        v["edges"][0]["bind"] = json!("in");
        let (g, p) = planned(&v);
        assert_eq!(p.links[0].transport, ptmp::Transport::Ipc);
        assert_eq!(p.links[0].binds[0].0.node, 1, "the worker binds");
        assert_eq!(
            p.configs[0].proxies[0].data["output"]["socket"]["connect"][0],
            p.configs[1].proxies[0].data["input"]["socket"]["bind"][0]
        );
        assert!(!g.edges[1].bind_inputs);
        for (set, want) in [
            (
                json!({"bind": "in", "transport": "shm"}),
                "an shm ring is made by its writer",
            ),
            (
                json!({"bind": "sideways"}),
                "must be out (the output binds, the default) or in",
            ),
        ] {
            let mut v = chain();
            for (k, x) in set.as_object().unwrap() {
                v["edges"][0][k] = x.clone();
            }
            let e = Graph::parse(&v, "t").unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }
}
