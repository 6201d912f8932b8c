//! The state in Prometheus's text exposition format (version 0.0.4):
//! one `# HELP` and `# TYPE` line per metric family, then its samples,
//! label values escaped as the format requires.
//!
//! Families (every sample also carries `graph`):
//! * `ptmp_messages_total`, `ptmp_bytes_total`: per socket, labels `host`,
//!   `process`, `node`, `port`, `edge`, `transport`, `direction` (send or
//!   recv) and `socket` (its index within the process);
//! * `ptmp_lost_messages_total`, `ptmp_wire_errors_total`: per receiving
//!   socket, same labels;
//! * `ptmp_send_stalls_total`: per sending socket, same labels: sends
//!   that found the queue full and had to wait;
//! * `ptmp_shm_readers_given_up_total`: per sending socket, same labels:
//!   durable shm readers whose process died and did not come back within
//!   their grace time, so the ring went on without them;
//! * `ptmp_curve_admitted_total`, `ptmp_curve_refused_total`: per CURVE
//!   server socket (only those), same labels: clients its allow-list let
//!   in and refused;
//! * `ptmp_latency_seconds`: per receiving socket, `quantile` 0.5, 0.99
//!   and 1 (the maximum) over about the last second, from `created`;
//! * `ptmp_node_messages_total`: per node, `direction` in or out;
//! * `ptmp_node_up`: 1 while the node's process runs, else 0;
//! * `ptmp_process_restarts_total`: per process.

use crate::state::SocketRow;
use ptmp_graph::status::{GraphState, SocketStatus};
use std::fmt::Write;

/// Escape a label value: backslash, double quote and newline.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '"' => o.push_str("\\\""),
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o
}

fn labels(pairs: &[(&str, &str)]) -> String {
    let body: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", esc(v)))
        .collect();
    format!("{{{}}}", body.join(","))
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// Render the state and its sockets as a Prometheus scrape.
pub fn render(state: &GraphState, rows: &[SocketRow]) -> String {
    let graph = state.graph.as_str();
    let mut out = String::new();
    sockets(&mut out, graph, rows);
    nodes(&mut out, graph, state);
    out
}

/// The per-socket families: messages, bytes, losses, errors, stalls,
/// readers given up, CURVE admissions and latency quantiles.
fn sockets(out: &mut String, graph: &str, rows: &[SocketRow]) {
    let sock_labels = |r: &SocketRow| -> Vec<(&str, String)> {
        vec![
            ("graph", graph.to_string()),
            ("host", r.host.clone()),
            ("process", r.process.clone()),
            ("node", r.node.clone()),
            ("port", r.port.clone()),
            ("edge", r.edge.clone()),
            ("transport", r.transport.clone()),
            ("direction", r.direction.clone()),
            ("socket", r.index.to_string()),
        ]
    };
    // `only`: the direction a family is about (None: both).
    let per_socket = |out: &mut String,
                      name: &str,
                      help: &str,
                      figure: fn(&SocketStatus) -> u64,
                      only: Option<&str>| {
        family(out, name, "counter", help);
        for r in rows {
            if only.is_some_and(|d| r.direction != d) {
                continue;
            }
            let l = sock_labels(r);
            let l: Vec<(&str, &str)> = l.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let _ = writeln!(out, "{name}{} {}", labels(&l), figure(&r.doc));
        }
    };
    per_socket(
        out,
        "ptmp_messages_total",
        "Messages sent or received by a socket.",
        |d| d.messages,
        None,
    );
    per_socket(
        out,
        "ptmp_bytes_total",
        "Bytes of the messages sent or received by a socket (both frames).",
        |d| d.bytes,
        None,
    );
    per_socket(
        out,
        "ptmp_lost_messages_total",
        "Messages a receiving socket knows it lost (shared-memory overruns).",
        |d| d.lost,
        Some("recv"),
    );
    per_socket(
        out,
        "ptmp_wire_errors_total",
        "Malformed messages a receiving socket skipped.",
        |d| d.errors,
        Some("recv"),
    );
    per_socket(
        out,
        "ptmp_send_stalls_total",
        "Sends that found the queue full (a PUSH or PAIR at its high-water mark, or with no peer yet) and had to wait.",
        |d| d.stalls,
        Some("send"),
    );
    per_socket(
        out,
        "ptmp_shm_readers_given_up_total",
        "Durable shared-memory readers a sending socket's ring gave up: their process died and did not come back within their grace time (0 for other transports).",
        |d| d.readers_given_up,
        Some("send"),
    );
    // CURVE servers only: a secured socket's admissions.
    for (name, figure, help) in [
        (
            "ptmp_curve_admitted_total",
            (|d| d.curve_admitted) as fn(&SocketStatus) -> Option<u64>,
            "Clients a CURVE server socket admitted (their key is on its allow-list).",
        ),
        (
            "ptmp_curve_refused_total",
            |d| d.curve_refused,
            "Clients a CURVE server socket refused: their key is not on its allow-list.",
        ),
    ] {
        family(out, name, "counter", help);
        for r in rows {
            let Some(n) = figure(&r.doc) else {
                continue;
            };
            let l = sock_labels(r);
            let l: Vec<(&str, &str)> = l.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let _ = writeln!(out, "{name}{} {n}", labels(&l));
        }
    }
    family(
        out,
        "ptmp_latency_seconds",
        "gauge",
        "Time from a TPSet's created stamp to its receipt over about the last second, sampled: quantile 0.5, 0.99 and 1 (the maximum).",
    );
    for r in rows.iter().filter(|r| r.direction == "recv") {
        let Some(lat) = r.doc.latency_us else {
            continue;
        };
        for (q, us) in [("0.5", lat.p50), ("0.99", lat.p99), ("1", lat.max)] {
            let mut l = sock_labels(r);
            l.push(("quantile", q.to_string()));
            let l: Vec<(&str, &str)> = l.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let _ = writeln!(
                out,
                "ptmp_latency_seconds{} {}",
                labels(&l),
                us as f64 / 1e6
            );
        }
    }
}

/// The per-node and per-process families: messages in and out, whether
/// the node runs, restarts.
fn nodes(out: &mut String, graph: &str, state: &GraphState) {
    family(
        out,
        "ptmp_node_messages_total",
        "counter",
        "Messages a node took in or sent out.",
    );
    for n in &state.nodes {
        for (dir, count) in [("in", n.received), ("out", n.sent)] {
            let l = [
                ("graph", graph),
                ("host", &n.host),
                ("process", &n.process),
                ("node", &n.name),
                ("kind", &n.kind),
                ("direction", dir),
            ];
            let _ = writeln!(out, "ptmp_node_messages_total{} {count}", labels(&l));
        }
    }
    family(
        out,
        "ptmp_node_up",
        "gauge",
        "1 while the node's process is running, else 0.",
    );
    for n in &state.nodes {
        let l = [
            ("graph", graph),
            ("host", &n.host),
            ("process", &n.process),
            ("node", &n.name),
        ];
        let up = n.state.is_running();
        let _ = writeln!(out, "ptmp_node_up{} {}", labels(&l), u8::from(up));
    }
    processes(out, graph, state);
}

/// The per-process families: restarts, and where a scheduler placed it.
fn processes(out: &mut String, graph: &str, state: &GraphState) {
    family(
        out,
        "ptmp_process_restarts_total",
        "counter",
        "Times the supervisor restarted a process.",
    );
    for p in &state.processes {
        let l = [("graph", graph), ("host", &p.host), ("process", &p.name)];
        let _ = writeln!(
            out,
            "ptmp_process_restarts_total{} {}",
            labels(&l),
            p.restarts
        );
    }
    let placed: Vec<_> = state
        .processes
        .iter()
        .filter(|p| p.node.is_some())
        .collect();
    if placed.is_empty() {
        return;
    }
    family(
        out,
        "ptmp_process_info",
        "gauge",
        "Where a scheduler runs a process: its node and job step (always 1).",
    );
    for p in placed {
        let l = [
            ("graph", graph),
            ("host", &p.host),
            ("process", &p.name),
            ("node", p.node.as_deref().unwrap_or("")),
            ("step", p.step.as_deref().unwrap_or("")),
        ];
        let _ = writeln!(out, "ptmp_process_info{} 1", labels(&l));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptmp_graph::status::live::{NodeView, ProcessState};
    use ptmp_graph::status::NodeState;
    use serde_json::json;

    /// A process a scheduler placed has an info sample naming its node
    /// and step; without placement there is no such family.
    #[test]
    fn where_a_process_runs_is_an_info_sample() {
        let process = |name: &str, host: &str, node: Option<&str>| ProcessState {
            name: name.into(),
            host: host.into(),
            node: node.map(str::to_string),
            step: node.map(|_| "7.1".to_string()),
            state: NodeState::Running,
            restarts: 0,
            pid: None,
        };
        let mut state = GraphState {
            graph: "g".into(),
            processes: vec![process("p", "h", Some("n2")), process("q", "i", None)],
            ..Default::default()
        };
        let t = render(&state, &[]);
        assert!(t.contains("# TYPE ptmp_process_info gauge\n"), "{t}");
        assert!(t.contains(
            "ptmp_process_info{graph=\"g\",host=\"h\",process=\"p\",node=\"n2\",step=\"7.1\"} 1\n"
        ));
        assert_eq!(t.matches("ptmp_process_info{").count(), 1);
        state.processes[0].node = None;
        assert!(!render(&state, &[]).contains("ptmp_process_info"));
    }

    #[test]
    fn escapes_and_families() {
        assert_eq!(esc("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        let state = GraphState {
            graph: "g".into(),
            nodes: vec![NodeView {
                name: "n\"1".into(),
                kind: "source".into(),
                process: "p".into(),
                host: "h".into(),
                state: NodeState::Running,
                restarts: 2,
                received: 0,
                sent: 7,
                in_rate: 0.0,
                out_rate: 0.0,
                ports: vec![],
            }],
            processes: vec![ProcessState {
                name: "p".into(),
                host: "h".into(),
                node: None,
                step: None,
                state: NodeState::Running,
                restarts: 2,
                pid: None,
            }],
            ..Default::default()
        };
        let row = SocketRow {
            process: "p".into(),
            host: "h".into(),
            node: "n\"1".into(),
            port: "out".into(),
            edge: "e0".into(),
            transport: "shm".into(),
            direction: "recv".into(),
            doc: serde_json::from_value(json!({"messages": 5, "bytes": 50, "lost": 1, "errors": 0,
                        "latency_us": {"p50": 64, "p99": 1024, "max": 900}}))
            .unwrap(),
            ..Default::default()
        };
        let sender = SocketRow {
            index: 1,
            transport: "tcp".into(),
            direction: "send".into(),
            doc: serde_json::from_value(
                json!({"messages": 9, "bytes": 90, "stalls": 3, "readers_given_up": 2,
                        "latency_us": null, "curve_admitted": 1, "curve_refused": 4}),
            )
            .unwrap(),
            ..row.clone()
        };
        let rows = vec![row, sender];
        let t = render(&state, &rows);
        // Stalls are a sender's: one sample, for the sending socket.
        assert!(t.contains("# TYPE ptmp_send_stalls_total counter\n"));
        assert!(t.contains("ptmp_send_stalls_total{graph=\"g\",host=\"h\",process=\"p\",node=\"n\\\"1\",port=\"out\",edge=\"e0\",transport=\"tcp\",direction=\"send\",socket=\"1\"} 3\n"));
        assert_eq!(t.matches("ptmp_send_stalls_total{").count(), 1);
        // Readers given up too: the sender's ring's.
        assert!(t.contains("# TYPE ptmp_shm_readers_given_up_total counter\n"));
        assert!(t.contains("ptmp_shm_readers_given_up_total{graph=\"g\",host=\"h\",process=\"p\",node=\"n\\\"1\",port=\"out\",edge=\"e0\",transport=\"tcp\",direction=\"send\",socket=\"1\"} 2\n"));
        assert_eq!(t.matches("ptmp_shm_readers_given_up_total{").count(), 1);
        // CURVE admissions: the secured socket's only.
        assert!(t.contains("# TYPE ptmp_curve_refused_total counter\n"));
        assert!(t.contains("ptmp_curve_refused_total{graph=\"g\",host=\"h\",process=\"p\",node=\"n\\\"1\",port=\"out\",edge=\"e0\",transport=\"tcp\",direction=\"send\",socket=\"1\"} 4\n"));
        assert_eq!(t.matches("ptmp_curve_refused_total{").count(), 1);
        assert_eq!(t.matches("ptmp_curve_admitted_total{").count(), 1);
        assert!(!t.contains("ptmp_lost_messages_total{graph=\"g\",host=\"h\",process=\"p\",node=\"n\\\"1\",port=\"out\",edge=\"e0\",transport=\"tcp\""));
        assert!(t.contains("# TYPE ptmp_messages_total counter\n"));
        assert!(t.contains("node=\"n\\\"1\""));
        assert!(t.contains("ptmp_messages_total{graph=\"g\",host=\"h\",process=\"p\",node=\"n\\\"1\",port=\"out\",edge=\"e0\",transport=\"shm\",direction=\"recv\",socket=\"0\"} 5\n"));
        assert!(t.contains("quantile=\"0.99\"} 0.001024\n"));
        assert!(t.contains("ptmp_process_restarts_total{graph=\"g\",host=\"h\",process=\"p\"} 2\n"));
        assert!(t.contains("direction=\"out\"} 7\n"));
        // Every sample line belongs to the family announced before it.
        let mut fam = String::new();
        for line in t.lines() {
            if let Some(r) = line.strip_prefix("# TYPE ") {
                fam = r.split(' ').next().unwrap_or("").to_string();
            } else if !line.starts_with('#') {
                assert!(line.starts_with(&fam), "{line} outside {fam}");
            }
        }
    }
}
