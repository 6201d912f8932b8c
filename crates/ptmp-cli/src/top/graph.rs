//! `ptmp top` of a graph: the [`GraphState`] of its run directory, as
//! [`Planned`] reads it from the plans, status files and supervisors'
//! files there (the same typed state `ptmp graph status --json` and the
//! monitor's `/api/state` serialize), drawn as tables of hosts, nodes and
//! edges. Figures the state does not carry are worked out here from
//! successive readings and from the shm channels' headers: a process's
//! restarts from its pid changing (where no supervisor counts them), an
//! shm edge's rate and how far its readers are behind, a PUSH/PULL edge's
//! messages sent but not yet taken in, and an edge's rate from its nodes'
//! where no socket of it reports.

use super::{
    add_table, cell_u64, clock, micros, now_us, num, rate, Frame, Tables, Tone, View, STALE,
};
mod hosts;

use ptmp_graph::rundir;
use ptmp_graph::status::live::{EdgeView, GraphState, NodeView, PortDir, PortRefView};
use ptmp_graph::status::{self, Planned, ProcessStatus};
use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// The graph view: its run directory's reader and what it remembers
/// between frames.
pub(super) struct GraphView {
    run: Planned,
    /// Per process: the last pid its status gave and how often it changed.
    pids: HashMap<String, (u64, u64)>,
    /// Per shm channel: (time, published) at the previous frame.
    chans: HashMap<String, (Instant, u64)>,
}

/// The three parts of a frame being built: its lines, how to colour
/// them and its tables.
type Sheet<'a> = (
    &'a mut Vec<String>,
    &'a mut HashMap<usize, Tone>,
    &'a mut Tables,
);

/// A reading, with what a frame's rows look up in it.
struct Look<'a> {
    r: &'a status::PlannedReading,
    /// Every node a status file names, by name: its counts are known.
    reported: HashMap<&'a str, &'a NodeView>,
    /// Per process whose status gives a pid: how often it changed.
    seen: HashMap<String, u64>,
    now: Instant,
}

impl<'a> Look<'a> {
    fn new(r: &'a status::PlannedReading, seen: HashMap<String, u64>) -> Look<'a> {
        let st = &r.reading.state;
        let reported = (r.reading.statuses.iter())
            .flat_map(|s| &s.nodes)
            .filter_map(|c| st.node(&c.name).map(|n| (c.name.as_str(), n)))
            .collect();
        Look {
            r,
            reported,
            seen,
            now: Instant::now(),
        }
    }

    fn state(&self) -> &'a GraphState {
        &self.r.reading.state
    }

    /// Whether a supervisor names process `process`.
    fn supervised(&self, process: &str) -> bool {
        (self.r.reading.supervised.values())
            .flatten()
            .any(|s| s.process(process).is_some())
    }

    /// Node `n`'s row: its process's pid, its state, restarts (its
    /// supervisor's count, else how often its pid changed), counts and
    /// rates, and what its receiving sockets lost and their worst p99.
    fn node_row(&self, n: &NodeView) -> Vec<String> {
        let st = self.state();
        let pid = (st.processes.iter())
            .find(|p| p.name == n.process && p.host == n.host)
            .and_then(|p| p.pid);
        let said = self.supervised(&n.process).then_some(n.restarts);
        let mut row = vec![n.name.clone(), n.kind.clone(), n.process.clone(), num(pid)];
        row.push(n.state.to_string());
        if !self.reported.contains_key(n.name.as_str()) {
            row.push(num(said));
            row.extend(std::iter::repeat_n("-".to_string(), 6));
            return row;
        }
        let recv = || (self.r.reading.rows.iter()).filter(|x| x.node == n.name && !x.doc.sends());
        let lost = recv().map(|x| x.doc.lost).reduce(|a, b| a + b);
        let p99 = recv()
            .filter_map(|x| x.doc.latency_us.map(|l| l.p99 as f64))
            .reduce(f64::max);
        row.extend([
            num(said.or_else(|| self.seen.get(&n.process).copied())),
            num(Some(n.received)),
            rate(Some(n.in_rate)),
            num(Some(n.sent)),
            rate(Some(n.out_rate)),
            num(lost),
            micros(p99),
        ]);
        row
    }

    /// How many ports node `node` has going way `dir`.
    fn ports_on(&self, node: &str, dir: PortDir) -> usize {
        let n = self.state().node(node);
        n.map_or(0, |n| n.ports.iter().filter(|p| p.dir == dir).count())
    }

    /// Whether every end in `ends` is its node's one port going way `dir`.
    fn only_ports(&self, ends: &[PortRefView], dir: PortDir) -> bool {
        ends.iter().all(|p| self.ports_on(&p.node, dir) == 1)
    }

    /// The figure `f` of every node at `ends`, summed; `None` when one of
    /// them reported none.
    fn nodes_sum<T: std::iter::Sum<T>>(
        &self,
        ends: &[PortRefView],
        f: impl Fn(&NodeView) -> T,
    ) -> Option<T> {
        ends.iter()
            .map(|p| self.reported.get(p.node.as_str()).map(|n| f(n)))
            .sum()
    }

    /// An edge's rate from its nodes' counts, when its receivers (or else
    /// its senders) have no other port on that side.
    fn nodes_rate(&self, e: &EdgeView) -> Option<f64> {
        if self.only_ports(&e.to, PortDir::In) {
            self.nodes_sum(&e.to, |n| n.in_rate)
        } else if self.only_ports(&e.from, PortDir::Out) {
            self.nodes_sum(&e.from, |n| n.out_rate)
        } else {
            None
        }
    }

    /// A PUSH/PULL edge's messages sent but not yet taken in (queued on
    /// the way), when each end is its node's one port on that side.
    fn queued(&self, e: &EdgeView) -> Option<u64> {
        let one = self.only_ports(&e.from, PortDir::Out) && self.only_ports(&e.to, PortDir::In);
        if e.pattern != "pushpull" || !one {
            return None;
        }
        let sent = self.nodes_sum(&e.from, |n| n.sent)?;
        let got = self.nodes_sum(&e.to, |n| n.received)?;
        Some(sent.saturating_sub(got))
    }
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

/// The nodes at `ends`, by name, joined by ",".
fn names(ends: &[PortRefView]) -> String {
    let v: Vec<&str> = ends.iter().map(|p| p.node.as_str()).collect();
    v.join(",")
}

/// What a frame says under its tables of an edge whose ring gave durable
/// readers up or whose CURVE server refused clients; whether it said any.
fn edge_alarms(e: &EdgeView, msgs: &mut Vec<String>) -> bool {
    let f = &e.figures;
    let addr = e.addresses.first().map_or("", String::as_str);
    let edge = format!("edge {} -> {} ({addr})", names(&e.from), names(&e.to));
    // Rare, and about readers rather than messages: a line under the
    // tables, and the row marked, rather than a column.
    if f.readers_given_up > 0 {
        msgs.push(format!(
            "{edge}: {} durable reader(s) given up: their process died and did not come back within its grace time, so the ring went on without them",
            f.readers_given_up
        ));
    }
    // Strangers knocking at a secured edge: said the same way.
    if f.curve_refused > 0 {
        msgs.push(format!(
            "{edge}: {} client(s) refused by CURVE: a key not on the server's list",
            f.curve_refused
        ));
    }
    f.readers_given_up > 0 || f.curve_refused > 0
}

impl GraphView {
    pub(super) fn new(dir: std::path::PathBuf) -> GraphView {
        GraphView {
            run: Planned::new(dir),
            pids: HashMap::new(),
            chans: HashMap::new(),
        }
    }

    /// The frame of a run directory that is not there.
    fn missing_dir(&self) -> Frame {
        let dir = self.run.dir().display();
        let why = format!("no run directory {dir}: is the graph running (with this --run-dir)?");
        Frame {
            lines: vec![
                format!("ptmp top: {dir}   {}", clock()),
                String::new(),
                why.clone(),
            ],
            tones: HashMap::new(),
            tables: Vec::new(),
            empty_because: Some(why),
        }
    }

    /// Per process whose status gives a pid: how often that pid changed
    /// from frame to frame.
    fn count_pids(&mut self, statuses: &[ProcessStatus]) -> HashMap<String, u64> {
        let mut seen = HashMap::new();
        for st in statuses.iter().filter(|s| s.pid > 0) {
            let p = u64::from(st.pid);
            let e = self.pids.entry(st.process.clone()).or_insert((p, 0));
            if e.0 != p {
                *e = (p, e.1 + 1);
            }
            seen.insert(st.process.clone(), e.1);
        }
        seen
    }

    /// The frame's first lines: the graph, where it runs and its
    /// supervisor, and how many nodes and processes.
    fn heading(&self, look: &Look<'_>, across: bool) -> Vec<String> {
        let r = &look.r.reading;
        let graph = Some(r.state.graph.as_str()).filter(|g| !g.is_empty());
        let sup = (r.supervised.get(&0).and_then(Option::as_ref))
            .map(|s| s.supervisor_pid)
            .filter(|&p| p > 0)
            .or_else(|| rundir::supervisor_pid(self.run.dir()));
        let sup_state = match sup {
            _ if across => format!("{} hosts", look.r.parts.len()),
            Some(p) if ptmp_shm::pid_alive(p) => format!("supervisor pid {p}"),
            Some(p) => format!("supervisor pid {p} gone"),
            None => "no supervisor".into(),
        };
        let running = look.reported.values().filter(|n| n.state.is_running());
        vec![
            format!(
                "ptmp top: graph {}   {}   {sup_state}   {}",
                graph.unwrap_or("?"),
                self.run.dir().display(),
                clock()
            ),
            format!(
                "{} nodes ({} running) in {} processes; q quits",
                r.state.nodes.len(),
                running.count(),
                r.statuses.len()
            ),
            String::new(),
        ]
    }

    /// An shm edge's channel `name`: how far its slowest live reader is
    /// behind; its rate from the messages published since the previous
    /// frame when `r` has none yet.
    fn shm_figures(
        &mut self,
        name: &str,
        r: &mut Option<f64>,
        now: Instant,
        msgs: &mut Vec<String>,
    ) -> Option<u64> {
        let (st, readers) = match ptmp_shm::inspect(name) {
            Ok(v) => v,
            Err(e) => {
                msgs.push(format!("edge shm://{name}: {e}"));
                return None;
            }
        };
        if let Some((t0, p0)) = self.chans.get(name).filter(|_| r.is_none()) {
            let dt = now.duration_since(*t0).as_secs_f64();
            if dt > 0.0 {
                *r = Some(st.published.saturating_sub(*p0) as f64 / dt);
            }
        }
        self.chans.insert(name.to_string(), (now, st.published));
        (readers.iter().filter(|x| x.alive))
            .map(|x| st.published.saturating_sub(x.position))
            .max()
    }

    /// One edge's row: its rate (its sockets', else the shm channel's or
    /// the nodes' counts), how far behind its readers are, what was lost,
    /// stalls and latency; and whether it is to be marked (said in
    /// `msgs`).
    fn edge_row(
        &mut self,
        e: &EdgeView,
        look: &Look<'_>,
        msgs: &mut Vec<String>,
    ) -> (Vec<String>, bool) {
        let f = &e.figures;
        let addr = e.addresses.first().map_or("", String::as_str);
        let mut r = (f.sockets != (0, 0)).then_some(f.rate);
        let marked = edge_alarms(e, msgs);
        let mut lag = None;
        if let Some(name) = addr.strip_prefix("shm://") {
            lag = self.shm_figures(name, &mut r, look.now, msgs);
        }
        let r = r.or_else(|| look.nodes_rate(e));
        let lag = lag.or_else(|| look.queued(e));
        let row = vec![
            format!("{} -> {}", names(&e.from), names(&e.to)),
            e.transport.clone(),
            rate(r),
            num(lag),
            num((f.sockets.1 > 0).then_some(f.lost)),
            num((f.sockets.0 > 0).then_some(f.stalls)),
            micros(f.latency_us.p99.map(|p| p as f64)),
            addr.to_string(),
        ];
        (row, marked)
    }

    /// The edge table, in the order the data flows, when there are edges.
    fn add_edge_table(&mut self, sheet: Sheet<'_>, look: &Look<'_>, msgs: &mut Vec<String>) {
        let mut rows = Vec::new();
        // Rows of edges whose ring gave readers up or that refused clients.
        let mut marked = HashSet::new();
        for e in &look.state().edges {
            let (row, mark) = self.edge_row(e, look, msgs);
            if mark {
                marked.insert(rows.len());
            }
            rows.push(row);
        }
        if rows.is_empty() {
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
            &rows,
            |i, r| {
                if cell_u64(r, 4) > 0 || marked.contains(&i) {
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
        if !self.run.dir().is_dir() {
            return self.missing_dir();
        }
        let r = self.run.read();
        let look = Look::new(&r, self.count_pids(&r.reading.statuses));
        let mut msgs = r.reading.unreadable.clone();
        // One part's run directory, or several hosts' side by side.
        let across = r.parts.len() > 1 || r.parts[0].part.host.is_some();
        let mut lines = self.heading(&look, across);
        let (mut tones, mut tables) = (HashMap::new(), Tables::new());
        if across {
            hosts::add_host_table((&mut lines, &mut tones, &mut tables), &r);
            lines.push(String::new());
        }
        let state = look.state();
        let rows: Vec<Vec<String>> = state.nodes.iter().map(|n| look.node_row(n)).collect();
        add_node_table((&mut lines, &mut tones, &mut tables), &rows);
        self.add_edge_table((&mut lines, &mut tones, &mut tables), &look, &mut msgs);
        let empty_because = state.nodes.is_empty().then(|| {
            let why = format!(
                "no plans or status files in {}: is the graph running (with this --run-dir)?",
                self.run.dir().display()
            );
            msgs.insert(0, why.clone());
            why
        });
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
