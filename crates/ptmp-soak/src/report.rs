//! The soak's accounting: every stream counted from the sinks' dumps, every
//! edge from the status files, the loss held against its bound; and the
//! report as text.

#[allow(unused_imports)]
use super::*;
use ptmp_graph::rundir::docs::Sequence;

/// Per stream (source node) tallies from the sinks' dumps.
#[derive(Default)]
pub(super) struct Stream {
    /// count -> times received. A restarted source goes on counting, so
    /// one stream has one numbering over every incarnation.
    got: HashMap<u32, u32>,
    received: u64,
}

/// A stream's source: its node and its detid.
fn detid_of(g: &Graph, i: usize) -> u32 {
    g.nodes[i]
        .data
        .get("detid")
        .and_then(Value::as_u64)
        .unwrap_or(0) as u32
}

/// What the sinks' dumps hold: per stream the numbers received, the sets
/// from no known source, and the smallest message seen (bytes, framing
/// included).
struct Dumps {
    streams: BTreeMap<u32, Stream>,
    foreign: u64,
    min_msg: usize,
}

/// Read every sink's dump; a sink without one, or a dump that cannot be
/// read to its end, is a failure.
fn read_dumps(g: &Graph, sources: &[usize], failures: &mut Vec<String>) -> Dumps {
    let detid_of = |i: usize| detid_of(g, i);
    let mut streams: BTreeMap<u32, Stream> = BTreeMap::new();
    let mut foreign = 0u64;
    let mut min_msg = usize::MAX;
    for n in g.nodes.iter().filter(|n| n.kind == Kind::Sink) {
        let Some(f) = n.data.get("ofile").and_then(Value::as_str) else {
            failures.push(format!(
                "sink {} has no ofile: nothing to count from",
                n.name
            ));
            continue;
        };
        let file = match std::fs::File::open(f) {
            Ok(x) => x,
            Err(e) => {
                failures.push(format!("sink {}: ofile {f}: {e}", n.name));
                continue;
            }
        };
        let mut r = ptmp_formats::dump::DumpReader::new(std::io::BufReader::new(file));
        let mut fr = ptmp::Frames::new();
        let mut set = ptmp::TPSet::default();
        loop {
            match r.read_into(&mut fr) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    failures.push(format!("sink {}: ofile {f}: {e}", n.name));
                    break;
                }
            }
            min_msg = min_msg.min(fr.iter().map(|b| b.len() + 9).sum());
            if ptmp::data::wire::decode_frames(&fr, &mut set).is_err() {
                foreign += 1;
                continue;
            }
            if !sources.iter().any(|&i| detid_of(i) == set.detid) {
                foreign += 1;
                continue;
            }
            let s = streams.entry(set.detid).or_default();
            *s.got.entry(set.count).or_insert(0) += 1;
            s.received += 1;
        }
    }
    if min_msg == usize::MAX {
        min_msg = 16;
    }
    Dumps {
        streams,
        foreign,
        min_msg,
    }
}

/// End-to-end totals over every stream.
#[derive(Default)]
struct Totals {
    sent: u64,
    received: u64,
    unique: u64,
    duplicated: u64,
    lost: u64,
}

/// Per stream: sent (the highest number received, or what the last
/// incarnation said it reached), received, received once, duplicated and
/// lost; and the totals.
fn stream_report(
    g: &Graph,
    plan: &Plan,
    sh: &Shared,
    sources: &[usize],
    mut streams: BTreeMap<u32, Stream>,
) -> (Vec<Value>, Totals) {
    let kills_of = |process: &str| -> Vec<&Injected> {
        let mut v: Vec<&Injected> = sh
            .injected
            .iter()
            .filter(|f| f.kind == Fault::Kill && f.process == process)
            .collect();
        v.sort_by_key(|f| f.at_us);
        v
    };
    let mut t = Totals::default();
    let mut jstreams = Vec::new();
    for &i in sources {
        let node = &g.nodes[i];
        let process = &g.processes[node.process].name;
        let detid = detid_of(g, i);
        let ks = kills_of(process);
        let st = streams.remove(&detid).unwrap_or_default();
        // Sent: the highest number received, or what the last incarnation
        // said it reached (where it started, from the sequence file its
        // part keeps, plus its own count), whichever is more.
        let max_got = st.got.keys().max().map_or(0, |m| *m as u64 + 1);
        let last = sh
            .track
            .seen
            .iter()
            .filter(|((p, pid), _)| p == process && !ks.iter().any(|x| x.pid == *pid))
            .filter_map(|((_, pid), (v, _))| {
                v.iter().find(|x| x.0 == node.name).map(|x| (*pid, x.2))
            })
            .max_by_key(|x| x.1);
        let seq: Sequence = ptmp_graph::rundir::docs::read(
            &ptmp_graph::rundir::sequence_file(&plan.run_dir, process),
            ptmp_graph::rundir::STATUS_LIMIT,
        )
        .ok()
        .flatten()
        .unwrap_or_default();
        let said = last.map_or(0, |(pid, out)| {
            let first = seq
                .get(&node.name)
                .filter(|from| from.pid.is_some_and(|p| i64::from(p) == i64::from(pid)))
                .map_or(0, |from| from.first);
            first + out
        });
        let sent = said.max(max_got);
        let uniq = st.got.len() as u64;
        let dup = st.got.values().map(|c| (*c - 1) as u64).sum::<u64>();
        let lost = sent.saturating_sub(uniq);
        t.sent += sent;
        t.received += st.received;
        t.unique += uniq;
        t.duplicated += dup;
        t.lost += lost;
        jstreams.push(json!({
            "source": node.name, "detid": detid, "incarnations": ks.len() + 1,
            "sent": sent, "received": st.received, "received_unique": uniq,
            "duplicated": dup, "lost": lost,
        }));
    }
    (jstreams, t)
}

/// The loss bound: what each killed process could hold, summed over the
/// kills; and the bound per process.
fn loss_bound(g: &Graph, plan: &Plan, sh: &Shared, min_msg: usize) -> (u64, BTreeMap<String, u64>) {
    // A unix stream socket queues at the reader, charged to the writer's
    // send buffer; tcp has both buffers.
    let wmem = read_u64("/proc/sys/net/core/wmem_default").unwrap_or(212_992);
    let rmem = read_u64("/proc/sys/net/core/rmem_default").unwrap_or(212_992);
    let per_msg = min_msg.max(1) as u64;
    let capacity = |e: usize| -> u64 {
        let edge = &g.edges[e];
        let hwm = edge.hwm.unwrap_or(1000).max(0) as u64;
        match plan.links[e].transport {
            Transport::Shm => ptmp::DEFAULT_SHM_SLOTS as u64,
            Transport::Inproc => 2 * hwm,
            Transport::Ipc => 2 * hwm + wmem / per_msg,
            Transport::Tcp => 2 * hwm + (wmem + rmem) / per_msg,
        }
    };
    let mut bound = 0u64;
    let mut proc_bound: BTreeMap<String, u64> = BTreeMap::new();
    for p in &g.processes {
        let mut b = p.nodes.len() as u64;
        for (e, edge) in g.edges.iter().enumerate() {
            if edge.from.iter().chain(&edge.to).any(|r| {
                g.nodes[r.node].process
                    == g.processes
                        .iter()
                        .position(|x| x.name == p.name)
                        .unwrap_or(usize::MAX)
            }) {
                b += capacity(e);
            }
        }
        proc_bound.insert(p.name.clone(), b);
    }
    for f in sh.injected.iter().filter(|f| f.kind == Fault::Kill) {
        bound += proc_bound.get(&f.process).copied().unwrap_or(0);
    }
    (bound, proc_bound)
}

/// Per edge, what its senders sent and its receivers received, from the
/// status files (approximate where a process was killed).
fn edge_report(g: &Graph, plan: &Plan, sh: &Shared) -> Vec<Value> {
    let killed: Vec<&str> = sh
        .injected
        .iter()
        .filter(|f| f.kind == Fault::Kill)
        .map(|f| f.process.as_str())
        .collect();
    let mut jedges = Vec::new();
    for (e, edge) in g.edges.iter().enumerate() {
        let sent: u64 = edge
            .from
            .iter()
            .map(|r| sh.track.node(&g.nodes[r.node].name).1)
            .sum();
        let recv: u64 = edge
            .to
            .iter()
            .map(|r| sh.track.node(&g.nodes[r.node].name).0)
            .sum();
        let approx = edge
            .from
            .iter()
            .chain(&edge.to)
            .any(|r| killed.contains(&g.processes[g.nodes[r.node].process].name.as_str()));
        jedges.push(json!({
            "edge": g.edge_label(e),
            "pattern": edge.pattern.name(),
            "transport": plan.links[e].transport.scheme(),
            "sent": sent, "received": recv,
            "difference": sent as i64 - recv as i64,
            "approximate": approx,
        }));
    }
    jedges
}

pub(super) fn account(
    g: &Graph,
    plan: &Plan,
    opts: &Options,
    outcome: &supervise::Outcome,
    sh: Shared,
    elapsed: Duration,
) -> Report {
    let mut failures = Vec::new();
    // Faults.
    let mut per: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for f in &sh.injected {
        let e = per.entry(f.process.clone()).or_default();
        match f.kind {
            Fault::Kill => e.0 += 1,
            Fault::Stop => e.1 += 1,
        }
    }
    let kills = sh.injected.iter().filter(|f| f.kind == Fault::Kill).count() as u64;
    let stops = sh.injected.len() as u64 - kills;
    let sources: Vec<usize> = (0..g.nodes.len())
        .filter(|&i| g.nodes[i].kind == Kind::Source)
        .collect();
    let Dumps {
        streams,
        foreign,
        min_msg,
    } = read_dumps(g, &sources, &mut failures);
    let (jstreams, t) = stream_report(g, plan, &sh, &sources, streams);
    let (t_sent, t_recv, t_uniq, t_dup, t_lost) =
        (t.sent, t.received, t.unique, t.duplicated, t.lost);
    let (bound, proc_bound) = loss_bound(g, plan, &sh, min_msg);
    let jedges = edge_report(g, plan, &sh);
    let restarts: Map<String, Value> = outcome
        .restarts
        .iter()
        .map(|(p, n)| (p.clone(), json!(n)))
        .collect();
    let restarts_total: u64 = outcome.restarts.iter().map(|x| x.1 as u64).sum();
    let per_json: Map<String, Value> = per
        .iter()
        .map(|(p, (k, s))| (p.clone(), json!({"kills": k, "stops": s})))
        .collect();
    if sh.injected.is_empty() {
        failures.push("no fault was injected: nothing was tested".into());
    }
    if t_lost > bound {
        failures.push(format!(
            "lost {t_lost} messages, more than the {bound} the killed processes could hold"
        ));
    }
    if t_dup > 0 {
        failures.push(format!("{t_dup} messages were delivered more than once"));
    }
    if t_uniq + t_lost != t_sent {
        failures.push(format!(
            "accounts do not balance: received once {t_uniq} + lost {t_lost} != sent {t_sent}"
        ));
    }
    if foreign > 0 {
        failures.push(format!(
            "{foreign} messages at the sinks came from no known source"
        ));
    }
    if sh.interrupted {
        failures.push(format!(
            "interrupted after {:.1} s of the {:.1} asked for",
            elapsed.as_secs_f64(),
            opts.duration.as_secs_f64()
        ));
    }
    if let Some(s) = &sh.stalled {
        failures.push(format!("stalled: {s}"));
    }
    if !outcome.ok {
        failures.push(format!("supervisor: {}", outcome.reason));
    }
    let ok = failures.is_empty();
    let json = json!({
        "graph": g.name,
        "seconds": opts.duration.as_secs_f64(),
        "every_ms": opts.every.as_millis() as u64,
        "stop_ms": opts.stop_for.as_millis() as u64,
        "faults_allowed": opts.faults.iter().map(|f| f.name()).collect::<Vec<_>>(),
        "start": opts.start,
        "elapsed_s": (elapsed.as_secs_f64() * 1000.0).round() / 1000.0,
        "faults": {"kills": kills, "stops": stops, "skipped": sh.skipped, "per_process": per_json},
        "restarts": restarts,
        "restarts_total": restarts_total,
        "edges": jedges,
        "streams": jstreams,
        "end_to_end": {
            "sent": t_sent, "received": t_recv, "received_unique": t_uniq,
            "duplicated": t_dup, "lost": t_lost, "bound": bound,
        },
        "bound_per_kill": proc_bound,
        "smallest_message_bytes": min_msg,
        "supervisor": {"reason": outcome.reason, "ok": outcome.ok},
        "stalled": sh.stalled,
        "failures": failures,
        "ok": ok,
    });
    Report { json, ok, failures }
}

/// The report as text, for people.
pub fn text(r: &Value) -> String {
    let mut s = String::new();
    let f = &r["faults"];
    s += &format!(
        "soak of graph {}: {} s, a fault every ~{} ms ({}), start {}\n",
        r["graph"].as_str().unwrap_or("?"),
        r["elapsed_s"],
        r["every_ms"],
        r["faults_allowed"]
            .as_array()
            .map(|a| a
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(","))
            .unwrap_or_default(),
        r["start"],
    );
    s += &format!(
        "faults: {} kills, {} stops ({} skipped: no candidate)\n",
        f["kills"], f["stops"], f["skipped"]
    );
    for (p, v) in f["per_process"].as_object().into_iter().flatten() {
        s += &format!("  {p}: {} kills, {} stops\n", v["kills"], v["stops"]);
    }
    s += &format!("restarts: {}", r["restarts_total"]);
    let rs: Vec<String> = r["restarts"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, n)| n.as_u64() != Some(0))
        .map(|(p, n)| format!("{p} x{n}"))
        .collect();
    if !rs.is_empty() {
        s += &format!(" ({})", rs.join(", "));
    }
    s += "\n";
    s += &format!(
        "{:<48} {:>9} {:>6} {:>10} {:>10} {:>8}\n",
        "edge", "pattern", "over", "sent", "received", "diff"
    );
    for e in r["edges"].as_array().into_iter().flatten() {
        s += &format!(
            "{:<48} {:>9} {:>6} {:>10} {:>10} {:>8}{}\n",
            e["edge"].as_str().unwrap_or("?"),
            e["pattern"].as_str().unwrap_or("?"),
            e["transport"].as_str().unwrap_or("?"),
            e["sent"].as_u64().unwrap_or(0),
            e["received"].as_u64().unwrap_or(0),
            e["difference"].as_i64().unwrap_or(0),
            if e["approximate"].as_bool() == Some(true) {
                "  ~ (a process was killed)"
            } else {
                ""
            }
        );
    }
    s += &format!(
        "{:<16} {:>6} {:>5} {:>10} {:>10} {:>10} {:>6} {:>8}\n",
        "stream", "detid", "incs", "sent", "received", "once", "dup", "lost"
    );
    for t in r["streams"].as_array().into_iter().flatten() {
        s += &format!(
            "{:<16} {:>6} {:>5} {:>10} {:>10} {:>10} {:>6} {:>8}\n",
            t["source"].as_str().unwrap_or("?"),
            t["detid"].as_u64().unwrap_or(0),
            t["incarnations"].as_u64().unwrap_or(0),
            t["sent"].as_u64().unwrap_or(0),
            t["received"].as_u64().unwrap_or(0),
            t["received_unique"].as_u64().unwrap_or(0),
            t["duplicated"].as_u64().unwrap_or(0),
            t["lost"].as_u64().unwrap_or(0)
        );
    }
    let e = &r["end_to_end"];
    s += &format!(
        "end to end: sent {}, received {}, once {}, duplicated {}, lost {} (bound for what killed processes held: {})\n",
        e["sent"], e["received"], e["received_unique"], e["duplicated"], e["lost"], e["bound"]
    );
    if r["ok"].as_bool() == Some(true) {
        s += "soak passed\n";
    } else {
        for f in r["failures"].as_array().into_iter().flatten() {
            s += &format!("FAILED: {}\n", f.as_str().unwrap_or("?"));
        }
    }
    s
}
