//! `ptmp top` of a graph: its run directory read as `ptmp graph status`
//! reads it (plans and status files), figures a status file does not carry
//! worked out from successive readings and from the shm channels' headers.

use super::{
    add_table, cell_u64, clock, micros, now_us, num, rate, Frame, Tables, Tone, View, STALE,
};
mod hosts;
mod wiring;

use ptmp_graph::rundir;
use ptmp_graph::status::{
    self, EdgeFigures, NodeState, SocketStatus, Supervised, SupervisedProcess,
};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;
use wiring::{depths, edge_ends, sock_figs};

/// A node as its process's plan describes it.
struct PlanNode {
    name: String,
    kind: String,
    process: String,
}

/// One socket of a node: where it sends or receives.
struct PlanSocket {
    node: String,
    sends: bool,
    stype: String,
    addresses: Vec<String>,
}

/// The graph view: the run directory and what it remembers between frames.
pub(super) struct GraphView {
    dir: PathBuf,
    /// Per process: the last pid seen and how often it changed.
    pids: HashMap<String, (u64, u64)>,
    /// Per shm channel: (time, published) at the previous frame.
    chans: HashMap<String, (Instant, u64)>,
}

/// A status file as read, or why it could not be.
#[derive(Clone)]
struct ProcStatus {
    process: String,
    doc: status::ProcessStatus,
    /// Whether the process runs on this machine (its pid can be checked).
    local: bool,
}

impl GraphView {
    pub(super) fn new(dir: PathBuf) -> GraphView {
        GraphView {
            dir,
            pids: HashMap::new(),
            chans: HashMap::new(),
        }
    }

    /// Every plan file: the graph's name, nodes and sockets.
    fn plans(
        dir: &Path,
        msgs: &mut Vec<String>,
    ) -> (Option<String>, Vec<PlanNode>, Vec<PlanSocket>) {
        let (mut graph, mut nodes, mut socks) = (None, Vec::new(), Vec::new());
        for f in rundir::plan_files(dir) {
            let v = match ptmp_graph::part::PartPlan::read(&f) {
                Ok(v) => v,
                Err(e) => {
                    msgs.push(format!("unreadable plan: {e}"));
                    continue;
                }
            };
            let process = v.process;
            if graph.is_none() {
                graph = Some(v.graph);
            }
            for p in &v.config.proxies {
                nodes.push(PlanNode {
                    name: p.name.clone(),
                    kind: p.kind.clone(),
                    process: process.clone(),
                });
                socks.extend(p.sockets().into_iter().map(|s| plan_socket(&p.name, &s)));
            }
        }
        (graph, nodes, socks)
    }

    /// The supervisor's file of process states (empty when there is none
    /// or it cannot be read; the latter is reported).
    fn supervised(dir: &Path, msgs: &mut Vec<String>) -> Supervised {
        status::read_processes_noting(dir)
            .unwrap_or_else(|e| {
                msgs.push(e.to_string());
                None
            })
            .unwrap_or_default()
    }

    /// Every status file, each parsed or reported as a message.
    fn statuses(dir: &Path, local: bool, msgs: &mut Vec<String>) -> Vec<ProcStatus> {
        let (all, bad) = status::read_all_noting(dir);
        msgs.extend(bad);
        all.into_iter()
            .map(|doc| ProcStatus {
                process: doc.process.clone(),
                doc,
                local,
            })
            .collect()
    }
}

/// A socket of node `node` as its plan gives it.
fn plan_socket(node: &str, s: &ptmp_graph::part::PlannedSocket<'_>) -> PlanSocket {
    let stype = s.socket.stype.to_ascii_uppercase();
    PlanSocket {
        node: node.to_string(),
        sends: ptmp::SocketType::parse(&stype)
            .map_or(s.key.contains("out"), |t| t.sends_under(s.key)),
        stype,
        addresses: s.socket.addresses().map(String::from).collect(),
    }
}

fn pid_alive(pid: u64) -> bool {
    u32::try_from(pid).is_ok_and(ptmp_shm::pid_alive)
}

/// An edge's sockets: the senders', the receivers'.
type Ends<'a> = (Vec<&'a PlanSocket>, Vec<&'a PlanSocket>);

/// One socket a process reports in its status file.
struct SockFig {
    /// The plan's node it belongs to, when that can be told.
    node: Option<String>,
    recv: bool,
    lost: Option<u64>,
    p99_us: Option<f64>,
    /// The socket as its process reported it.
    doc: SocketStatus,
}

/// A node's row as the frame shows it.
struct NodeFig {
    state: NodeState,
    pid: Option<u64>,
    restarts: Option<u64>,
    inn: Option<u64>,
    out: Option<u64>,
    in_rate: Option<f64>,
    out_rate: Option<f64>,
    lost: Option<u64>,
    p99_us: Option<f64>,
}

/// The three parts of a frame being built: its lines, how to colour
/// them and its tables.
type Sheet<'a> = (
    &'a mut Vec<String>,
    &'a mut HashMap<usize, Tone>,
    &'a mut Tables,
);

/// The supervisor's word on each process (`processes.json`), by name.
fn processes_of(supervised: &Supervised) -> HashMap<&str, &SupervisedProcess> {
    supervised
        .processes
        .iter()
        .map(|p| (p.name.as_str(), p))
        .collect()
}

/// The node table's rows, in `order` (name, process, type): a node without
/// a status file shows what the supervisor says of its process.
fn node_rows(
    order: &[(String, String, String)],
    figs: &BTreeMap<String, NodeFig>,
    proc_of: &HashMap<&str, &SupervisedProcess>,
) -> Vec<Vec<String>> {
    let no_status = |process: &str| -> (String, Option<u64>, Option<u64>) {
        let p = proc_of.get(process).copied();
        let state = status::node_state(p, None, "", false, 0).to_string();
        (
            state,
            p.and_then(|p| p.pid).map(u64::from),
            p.map(|p| u64::from(p.restarts)),
        )
    };
    let mut rows = Vec::new();
    for (name, process, kind) in order {
        let row = match figs.get(name) {
            Some(f) => vec![
                name.clone(),
                kind.clone(),
                process.clone(),
                num(f.pid),
                f.state.to_string(),
                num(f.restarts),
                num(f.inn),
                rate(f.in_rate),
                num(f.out),
                rate(f.out_rate),
                num(f.lost),
                micros(f.p99_us),
            ],
            None => {
                let (state, pid, restarts) = no_status(process);
                let mut r = vec![
                    name.clone(),
                    kind.clone(),
                    process.clone(),
                    num(pid),
                    state,
                    num(restarts),
                ];
                r.extend(std::iter::repeat_n("-".to_string(), 6));
                r
            }
        };
        rows.push(row);
    }
    rows
}

/// The node table: what needs a look stands out.
fn add_node_table(sheet: Sheet<'_>, rows: &[Vec<String>]) {
    add_table(
        sheet,
        "nodes",
        &[
            ("NODE", false),
            ("TYPE", false),
            ("PROCESS", false),
            ("PID", true),
            ("STATE", false),
            ("RESTARTS", true),
            ("IN", true),
            ("IN/S", true),
            ("OUT", true),
            ("OUT/S", true),
            ("LOST", true),
            ("P99 US", true),
        ],
        rows,
        |_, r| {
            let state = r.get(4).map_or("", String::as_str);
            if matches!(state, "failed" | "gone") || cell_u64(r, 10) > 0 {
                Tone::Bad
            } else if state != "running" && state != "ended" && state != "exited"
                || cell_u64(r, 5) > 0
            {
                Tone::Warn
            } else {
                Tone::Plain
            }
        },
    );
}

/// What a frame's edge rows read besides the edge itself.
struct Look<'a> {
    socks: &'a [PlanSocket],
    sock_figs: &'a [SockFig],
    figs: &'a BTreeMap<String, NodeFig>,
    now: Instant,
}

impl GraphView {
    /// The frame of a run directory that is not there.
    fn missing_dir(&self) -> Frame {
        let why = format!(
            "no run directory {}: is the graph running (with this --run-dir)?",
            self.dir.display()
        );
        Frame {
            lines: vec![
                format!("ptmp top: {}   {}", self.dir.display(), clock()),
                String::new(),
                why.clone(),
            ],
            tones: HashMap::new(),
            tables: Vec::new(),
            empty_because: Some(why),
        }
    }

    /// The supervisor's pid: from its file of process states, else from
    /// its lock file.
    fn supervisor_pid(&self, supervised: &Supervised) -> Option<u64> {
        Some(supervised.supervisor_pid)
            .filter(|&p| p > 0)
            .or_else(|| rundir::supervisor_pid(&self.dir))
            .map(u64::from)
    }

    /// Per node figures from the status files, and each node's process.
    fn node_figs(
        &mut self,
        stats: &[ProcStatus],
        proc_of: &HashMap<&str, &SupervisedProcess>,
        sock_figs: &[SockFig],
    ) -> (BTreeMap<String, NodeFig>, HashMap<String, String>) {
        let wall = now_us();
        let mut figs: BTreeMap<String, NodeFig> = BTreeMap::new();
        let mut node_proc: HashMap<String, String> = HashMap::new();
        for st in stats {
            let d = &st.doc;
            let pid = Some(u64::from(d.pid)).filter(|&p| p > 0);
            let sup_proc = proc_of.get(st.process.as_str());
            let restarts_given = sup_proc.map(|p| u64::from(p.restarts));
            let seen = match pid {
                Some(p) => {
                    let e = self.pids.entry(st.process.clone()).or_insert((p, 0));
                    if e.0 != p {
                        *e = (p, e.1 + 1);
                    }
                    Some(e.1)
                }
                None => None,
            };
            for n in &d.nodes {
                let name = n.name.clone();
                let (inn, out) = (Some(n.received), Some(n.sent));
                let (in_rate, out_rate) = (Some(n.in_rate), Some(n.out_rate));
                let sup = sup_proc.copied();
                let state = status::node_state(sup, Some(d), &name, st.local, wall);
                // Lost and latency: those of the sockets it receives on.
                let mine = || {
                    sock_figs
                        .iter()
                        .filter(|x| x.recv && x.node.as_deref() == Some(name.as_str()))
                };
                let lost = mine()
                    .map(|x| x.lost)
                    .reduce(|a, b| Some(a? + b?))
                    .flatten();
                let p99 = mine().filter_map(|x| x.p99_us).reduce(f64::max);
                figs.insert(
                    name.clone(),
                    NodeFig {
                        state,
                        pid,
                        restarts: restarts_given.or(seen),
                        inn,
                        out,
                        in_rate,
                        out_rate,
                        lost,
                        p99_us: p99,
                    },
                );
                node_proc.insert(name, st.process.clone());
            }
        }
        (figs, node_proc)
    }

    /// One edge's row: its rate ([`EdgeFigures::of`], else the shm
    /// channel's or the nodes' counts), how far behind its
    /// readers are, what was lost, stalls and latency; and whether its ring
    /// gave a durable reader up (said in `msgs`).
    fn edge_row(
        &mut self,
        addr: &str,
        (tx, rx): &Ends<'_>,
        look: &Look<'_>,
        msgs: &mut Vec<String>,
    ) -> (Vec<String>, bool) {
        let ports_of = |node: &str, sends: bool| {
            look.socks
                .iter()
                .filter(|s| s.node == node && s.sends == sends)
                .count()
        };
        let mut given_up_any = false;
        let names = |v: &Vec<&PlanSocket>| {
            v.iter()
                .map(|s| s.node.as_str())
                .collect::<Vec<_>>()
                .join(",")
        };
        let transport = addr.split("://").next().unwrap_or("?").to_string();
        // The edge's figures, by the rule the monitor uses too.
        let f = EdgeFigures::of(&[addr.to_string()], look.sock_figs.iter().map(|x| &x.doc));
        let mut r = f.rate;
        let lost = (f.sockets.1 > 0).then_some(f.lost);
        let p99 = f.latency_us.map(|l| l.p99 as f64);
        let stalls = (f.sockets.0 > 0).then_some(f.stalls);
        // Rare, and about readers rather than messages: a line under
        // the tables, and the row marked, rather than a column.
        let given_up = f.readers_given_up;
        if given_up > 0 {
            given_up_any = true;
            msgs.push(format!(
                "edge {} -> {} ({addr}): {given_up} durable reader(s) given up: their process died and did not come back within its grace time, so the ring went on without them",
                names(tx),
                names(rx)
            ));
        }
        // Strangers knocking at a secured edge: said the same way.
        let refused = f.curve_refused;
        if refused > 0 {
            given_up_any = true;
            msgs.push(format!(
                "edge {} -> {} ({addr}): {refused} client(s) refused by CURVE: a key not on the server's list",
                names(tx),
                names(rx)
            ));
        }
        let mut lag = None;
        if let Some(name) = addr.strip_prefix("shm://") {
            match ptmp_shm::inspect(name) {
                Ok((st, readers)) => {
                    if r.is_none() {
                        if let Some((t0, p0)) = self.chans.get(name) {
                            let dt = look.now.duration_since(*t0).as_secs_f64();
                            if dt > 0.0 {
                                r = Some(st.published.saturating_sub(*p0) as f64 / dt);
                            }
                        }
                    }
                    self.chans
                        .insert(name.to_string(), (look.now, st.published));
                    let behind = readers
                        .iter()
                        .filter(|x| x.alive)
                        .map(|x| st.published.saturating_sub(x.position))
                        .max();
                    lag = lag.or(behind);
                }
                Err(e) => msgs.push(format!("edge {addr}: {e}")),
            }
        }
        if r.is_none() {
            // Node counts stand for the edge when the receivers (or
            // else the senders) have no other port on that side.
            if rx.iter().all(|s| ports_of(&s.node, false) == 1) {
                r = rx
                    .iter()
                    .map(|s| look.figs.get(&s.node).and_then(|f| f.in_rate))
                    .sum();
            } else if tx.iter().all(|s| ports_of(&s.node, true) == 1) {
                r = tx
                    .iter()
                    .map(|s| look.figs.get(&s.node).and_then(|f| f.out_rate))
                    .sum();
            }
        }
        if lag.is_none()
            && tx
                .iter()
                .all(|s| s.stype == "PUSH" && ports_of(&s.node, true) == 1)
            && rx
                .iter()
                .all(|s| s.stype == "PULL" && ports_of(&s.node, false) == 1)
        {
            // Sent but not yet taken in: queued on the way.
            let sent: Option<u64> = tx
                .iter()
                .map(|s| look.figs.get(&s.node).and_then(|f| f.out))
                .sum();
            let got: Option<u64> = rx
                .iter()
                .map(|s| look.figs.get(&s.node).and_then(|f| f.inn))
                .sum();
            if let (Some(a), Some(b)) = (sent, got) {
                lag = Some(a.saturating_sub(b));
            }
        }
        let row = vec![
            format!("{} -> {}", names(tx), names(rx)),
            transport,
            rate(r),
            num(lag),
            num(lost),
            num(stalls),
            micros(p99),
            addr.to_string(),
        ];
        (row, given_up_any)
    }

    /// The edge table, in the order the data flows, when there are edges.
    fn add_edge_table(
        &mut self,
        sheet: Sheet<'_>,
        edges: &BTreeMap<String, Ends<'_>>,
        depth_of: &dyn Fn(&str) -> usize,
        look: &Look<'_>,
        msgs: &mut Vec<String>,
    ) {
        let mut erows = Vec::new();
        // Rows of edges whose sending ring gave readers up.
        let mut given_up_rows = std::collections::HashSet::new();
        let mut edge_order: Vec<(&String, &Ends)> = edges.iter().collect();
        let key = |e: &Ends| {
            let d = e.0.iter().map(|s| depth_of(&s.node)).min().unwrap_or(0);
            let n = e.0.first().map_or("", |s| s.node.as_str());
            (d, n.to_string())
        };
        edge_order.sort_by_key(|(_, e)| key(e));
        for (addr, ends) in edge_order {
            if ends.0.is_empty() || ends.1.is_empty() {
                continue;
            }
            let (row, given_up) = self.edge_row(addr, ends, look, msgs);
            if given_up {
                given_up_rows.insert(erows.len());
            }
            erows.push(row);
        }
        if erows.is_empty() {
            return;
        }
        sheet.0.push(String::new());
        add_table(
            sheet,
            "edges",
            &[
                ("EDGE", false),
                ("TRANSPORT", false),
                ("RATE/S", true),
                ("BEHIND", true),
                ("LOST", true),
                ("STALLS", true),
                ("P99 US", true),
                ("ADDRESS", false),
            ],
            &erows,
            |i, r| {
                if cell_u64(r, 4) > 0 || given_up_rows.contains(&i) {
                    Tone::Bad
                } else {
                    Tone::Plain
                }
            },
        );
    }
}

impl View for GraphView {
    fn frame(&mut self) -> Frame {
        if !self.dir.is_dir() {
            return self.missing_dir();
        }
        let mut msgs = Vec::new();
        // One part's run directory, or several hosts' side by side.
        let parts = hosts::part_dirs(&self.dir);
        let here = status::this_node();
        let (mut graph, mut plan_nodes, mut socks) = (None, Vec::new(), Vec::new());
        let (mut sups, mut by_part) = (Vec::new(), Vec::new());
        for part in &parts {
            let (g, n, s) = GraphView::plans(&part.dir, &mut msgs);
            graph = graph.or(g);
            plan_nodes.extend(n);
            socks.extend(s);
            let sup = GraphView::supervised(&part.dir, &mut msgs);
            let local = status::runs_here(Some(&sup), here.as_deref());
            by_part.push(GraphView::statuses(&part.dir, local, &mut msgs));
            sups.push(sup);
        }
        let stats: Vec<ProcStatus> = by_part.iter().flatten().map(ProcStatus::clone).collect();
        let across = parts.len() > 1 || parts[0].host.is_some();
        let supervised = if across {
            Supervised {
                processes: sups.iter().flat_map(|s| s.processes.clone()).collect(),
                ..Default::default()
            }
        } else {
            sups[0].clone()
        };
        let sup = self.supervisor_pid(&supervised);
        let proc_of = processes_of(&supervised);
        let sock_figs = sock_figs(&stats, &plan_nodes, &socks);
        let graph = graph
            .or_else(|| {
                stats
                    .iter()
                    .map(|s| s.doc.graph.clone())
                    .find(|g| !g.is_empty())
            })
            .unwrap_or_else(|| "?".into());
        let now = Instant::now();
        let (figs, node_proc) = self.node_figs(&stats, &proc_of, &sock_figs);
        let edges = edge_ends(&socks);
        let depth = depths(&edges, plan_nodes.len());
        let depth_of = |n: &str| depth.get(n).copied().unwrap_or(0);
        // Nodes: the plans' list, with any node only a status file names.
        let mut order: Vec<(String, String, String)> = plan_nodes
            .iter()
            .map(|n| (n.name.clone(), n.process.clone(), n.kind.clone()))
            .collect();
        for (name, p) in &node_proc {
            if !order.iter().any(|o| &o.0 == name) {
                order.push((name.clone(), p.clone(), "?".into()));
            }
        }
        order.sort_by(|a, b| depth_of(&a.0).cmp(&depth_of(&b.0)).then(a.0.cmp(&b.0)));
        let running = figs.values().filter(|f| f.state.is_running()).count();
        let sup_state = match sup {
            _ if across => format!("{} hosts", parts.len()),
            Some(p) if pid_alive(p) => format!("supervisor pid {p}"),
            Some(p) => format!("supervisor pid {p} gone"),
            None => "no supervisor".into(),
        };
        let mut lines = vec![
            format!(
                "ptmp top: graph {graph}   {}   {sup_state}   {}",
                self.dir.display(),
                clock()
            ),
            format!(
                "{} nodes ({running} running) in {} processes; q quits",
                order.len(),
                stats.len()
            ),
            String::new(),
        ];
        let (mut tones, mut tables) = (HashMap::new(), Tables::new());
        if across {
            hosts::add_host_table(
                (&mut lines, &mut tones, &mut tables),
                &parts,
                &sups,
                &by_part,
            );
            lines.push(String::new());
        }
        let rows = node_rows(&order, &figs, &proc_of);
        add_node_table((&mut lines, &mut tones, &mut tables), &rows);
        let look = Look {
            socks: &socks,
            sock_figs: &sock_figs,
            figs: &figs,
            now,
        };
        self.add_edge_table(
            (&mut lines, &mut tones, &mut tables),
            &edges,
            &depth_of,
            &look,
            &mut msgs,
        );
        let empty_because = if order.is_empty() {
            let why = format!(
                "no plans or status files in {}: is the graph running (with this --run-dir)?",
                self.dir.display()
            );
            msgs.insert(0, why.clone());
            Some(why)
        } else {
            None
        };
        if !msgs.is_empty() {
            lines.push(String::new());
            lines.extend(msgs.into_iter().map(|m| format!("! {m}")));
        }
        Frame {
            lines,
            tones,
            tables,
            empty_because,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// An edge whose sending ring gave a durable reader up: its row is
    /// red and a line under the tables says what happened, naming the
    /// edge; an edge without is plain and not named.
    #[test]
    fn readers_given_up_are_shown() {
        let d = tempfile::tempdir().unwrap();
        let rd = d.path();
        std::fs::create_dir(status::status_dir(rd)).unwrap();
        let (gone, kept) = (
            format!("shm://top-given-up-{}-a", std::process::id()),
            format!("shm://top-given-up-{}-b", std::process::id()),
        );
        let sock = |t: &str, a: &str| json!({"socket": {"type": t, "connect": [a]}});
        let plan = |p: &str, proxies: Value| {
            let v = json!({"graph": "g", "process": p, "run_dir": rd,
                           "config": {"proxies": proxies}});
            std::fs::write(rundir::plan_file(rd, p), v.to_string()).unwrap();
        };
        plan(
            "src",
            json!([{"name": "a", "type": "source", "data": {"output": sock("PUSH", &gone)}},
                   {"name": "b", "type": "source", "data": {"output": sock("PUSH", &kept)}}]),
        );
        plan(
            "dst",
            json!([{"name": "x", "type": "sink", "data": {"input": sock("PULL", &gone)}},
                   {"name": "y", "type": "sink", "data": {"input": sock("PULL", &kept)}}]),
        );
        let send = |ep: &str, given_up: u64| {
            json!({"dir": "send", "endpoints": [ep], "messages": 10, "bytes": 100,
                   "errors": 0, "lost": 0, "stalls": 3, "readers_given_up": given_up,
                   "rate": 1.0, "byte_rate": 10.0, "latency_us": null, "curve_refused": given_up})
        };
        let status = json!({"graph": "g", "process": "src", "pid": std::process::id(),
            "final": false,
            "nodes": [{"name": "a", "in": 0, "out": 10, "ended": false},
                      {"name": "b", "in": 0, "out": 10, "ended": false}],
            "sockets": [send(&gone, 2), send(&kept, 0)]});
        std::fs::write(status::status_file(rd, "src"), status.to_string()).unwrap();
        let f = GraphView::new(rd.to_path_buf()).frame();
        let text = f.lines.join("\n");
        let row = |ep: &str| {
            f.lines
                .iter()
                .position(|l| l.contains(" -> ") && l.ends_with(ep))
                .unwrap_or_else(|| panic!("no row for {ep}:\n{text}"))
        };
        assert!(f.tones.get(&row(&gone)) == Some(&Tone::Bad), "{text}");
        assert!(f.tones.get(&row(&kept)) == Some(&Tone::Plain), "{text}");
        let said: Vec<&String> = f
            .lines
            .iter()
            .filter(|l| l.contains("durable reader(s) given up"))
            .collect();
        assert_eq!(said.len(), 1, "{text}");
        assert!(
            said[0].starts_with(&format!("! edge a -> x ({gone}): 2 durable reader(s)")),
            "{text}"
        );
        // CURVE refusals at a secured edge are said likewise.
        assert!(
            text.contains(&format!(
                "! edge a -> x ({gone}): 2 client(s) refused by CURVE"
            )),
            "{text}"
        );
        assert!(!text.contains(&format!("({kept}): 0 client(s)")), "{text}");
    }
}
