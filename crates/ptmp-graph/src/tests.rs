use super::*;
use crate::plan::Plan;
use serde_json::json;
use std::path::Path;

fn chain() -> Value {
    json!({
        "name": "t",
        "nodes": [
            {"name": "src", "type": "source", "data": {"count": 10}},
            {"name": "w", "type": "worker"},
            {"name": "snk", "type": "sink"}
        ],
        "edges": [
            {"from": "src.out", "to": "w.in", "pattern": "pushpull"},
            {"from": "w.out", "to": "snk.in", "pattern": "pushpull"}
        ]
    })
}

fn err_of(v: &Value) -> String {
    match Graph::parse(v, "x") {
        Err(e) => e.to_string(),
        Ok(g) => match Plan::make(&g, Path::new("/tmp/ptmp-graph-test")) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted: {v}"),
        },
    }
}

fn edit(f: impl FnOnce(&mut Value)) -> Value {
    let mut v = chain();
    f(&mut v);
    v
}

#[test]
fn each_node_its_own_process_by_default_and_shm_between_them() {
    let g = Graph::parse(&chain(), "x").unwrap();
    assert_eq!(g.processes.len(), 3);
    let p = Plan::make(&g, Path::new("/tmp/d")).unwrap();
    for l in &p.links {
        assert_eq!(l.transport, Transport::Shm, "{l:?}");
        assert_eq!(l.binds.len(), 1);
        assert!(l.binds[0].1.starts_with("shm://t."), "{l:?}");
    }
    // The source's process ends by itself, the others do not.
    assert_eq!(p.finite, vec![true, false, false]);
    // Sockets filled in: the worker reads what the source binds.
    let w = Value::Object(p.configs[1].proxies[0].data.clone());
    assert_eq!(w["input"]["socket"]["type"], "PULL");
    assert_eq!(
        w["input"]["socket"]["connect"][0],
        p.configs[0].proxies[0].data["output"]["socket"]["bind"][0]
    );
    assert_eq!(g.process_order(), vec![0, 1, 2]);
    // A done edge back to the source does not feed it: the source still
    // comes first, wherever the graph lists it.
    let mut v = chain();
    v["nodes"][2]["data"] = json!({"count": 10});
    v["nodes"].as_array_mut().unwrap().rotate_right(1);
    v["edges"]
        .as_array_mut()
        .unwrap()
        .push(json!({"from": "snk.done", "to": "src.done", "pattern": "pair"}));
    let g = Graph::parse(&v, "x").unwrap();
    let names: Vec<&str> = g
        .process_order()
        .into_iter()
        .map(|i| g.processes[i].name.as_str())
        .collect();
    assert_eq!(names, vec!["src", "w", "snk"]);
}

#[test]
fn one_process_is_inproc_and_fan_out_pushpull_is_ipc() {
    let mut v = chain();
    v["processes"] = json!([{"name": "all", "nodes": ["src", "w", "snk"]}]);
    let g = Graph::parse(&v, "x").unwrap();
    let p = Plan::make(&g, Path::new("/tmp/d")).unwrap();
    assert!(p.links.iter().all(|l| l.transport == Transport::Inproc));
    // Fan-out: src to two workers (round-robin) must stay on zmq.
    let v = json!({
        "name": "fan",
        "nodes": [
            {"name": "src", "type": "source"},
            {"name": "a", "type": "worker"}, {"name": "b", "type": "worker"},
            {"name": "m", "type": "proxy"},
            {"name": "snk", "type": "sink"}
        ],
        "edges": [
            {"from": "src.out", "to": ["a.in", "b.in"], "pattern": "pushpull"},
            {"from": ["a.out", "b.out"], "to": "m.in", "pattern": "pushpull"},
            {"from": "m.out", "to": "snk.in", "pattern": "pubsub"}
        ]
    });
    let g = Graph::parse(&v, "x").unwrap();
    let p = Plan::make(&g, Path::new("/tmp/d")).unwrap();
    assert_eq!(p.links[0].transport, Transport::Ipc);
    // A pushpull fan-out: each input binds, the output connects to all.
    let b0: Vec<&str> = p.links[0].binds.iter().map(|(_, a)| a.as_str()).collect();
    assert_eq!(b0.len(), 2);
    assert_eq!(
        p.configs[1].proxies[0].data["input"]["socket"]["bind"][0],
        b0[0]
    );
    assert_eq!(
        p.configs[2].proxies[0].data["input"]["socket"]["bind"][0],
        b0[1]
    );
    let src = p.configs[0].proxies[0].data["output"]["socket"].clone();
    assert_eq!(src["connect"], json!(b0));
    assert_eq!(p.links[1].transport, Transport::Ipc);
    assert_eq!(p.links[1].binds[0].0.node, 3, "fan-in binds at the input");
    assert_eq!(p.links[2].transport, Transport::Shm);
    let m = Value::Object(p.configs[3].proxies[0].data.clone());
    assert_eq!(
        m["input"]["socket"]["bind"][0],
        p.links[1].binds[0].1.as_str()
    );
    assert_eq!(m["output"]["socket"]["type"], "PUB");
}

#[test]
fn hosts_get_tcp_with_deterministic_ports() {
    let mut v = chain();
    v["hosts"] =
        json!([{"name": "a", "address": "10.9.0.1"}, {"name": "b", "address": "10.9.0.2"}]);
    v["processes"] = json!([
        {"name": "pa", "host": "a", "nodes": ["src", "w"]},
        {"name": "pb", "host": "b", "nodes": ["snk"]}
    ]);
    v["port_base"] = json!(20000);
    let g = Graph::parse(&v, "x").unwrap();
    let p = Plan::make(&g, Path::new("/tmp/d")).unwrap();
    assert_eq!(p.links[0].transport, Transport::Inproc);
    assert_eq!(p.links[1].transport, Transport::Tcp);
    assert_eq!(p.links[1].binds[0].1, "tcp://10.9.0.1:20000");
    let snk = Value::Object(p.configs[1].proxies[0].data.clone());
    assert_eq!(snk["input"]["socket"]["connect"][0], "tcp://10.9.0.1:20000");
    let w = Value::Object(p.configs[0].proxies[1].data.clone());
    assert_eq!(w["output"]["socket"]["bind"][0], "tcp://10.9.0.1:20000");
    // The same graph planned again (another host) wires the same.
    let p2 = Plan::make(&g, Path::new("/tmp/other")).unwrap();
    assert_eq!(p2.links[1].binds, p.links[1].binds);
}

#[test]
fn pinned_transport_and_address() {
    let v = edit(|v| {
        v["edges"][1]["transport"] = json!("tcp");
        v["edges"][0]["address"] = json!("ipc:///tmp/pinned-x.ipc");
        v["port_base"] = json!(30000);
    });
    let g = Graph::parse(&v, "x").unwrap();
    let p = Plan::make(&g, Path::new("/tmp/d")).unwrap();
    assert_eq!(p.links[0].binds[0].1, "ipc:///tmp/pinned-x.ipc");
    assert!(!p.links[0].auto);
    assert_eq!(p.links[1].binds[0].1, "tcp://127.0.0.1:30000");
}

/// Each graph in `cases` is refused with an error holding every needle.
fn refused_naming(cases: Vec<(Value, &[&str])>) {
    for (v, needles) in cases {
        let e = err_of(&v);
        for n in needles {
            assert!(e.contains(n), "error {e:?} lacks {n:?}");
        }
    }
}

#[test]
fn wiring_errors_name_node_port_and_edge() {
    let cases: Vec<(Value, &[&str])> = vec![
        (
            edit(|v| v["processes"] = json!([{"name": "p1", "nodes": ["src", "w", "w"]}])),
            &["process p1", "\"w\" is listed twice"],
        ),
        (
            edit(|v| v["nodes"][1]["type"] = json!("wokrer")),
            &["node w", "wokrer", "unknown node type"],
        ),
        (
            edit(|v| v["edges"][1]["to"] = json!("snk.input")),
            &["edges[1].to", "snk", "no port \"input\""],
        ),
        (
            edit(|v| v["edges"][1]["to"] = json!("nope.in")),
            &["edges[1].to", "no node named nope"],
        ),
        (
            edit(|v| v["edges"][1]["from"] = json!("w.in")),
            &["edges[1].from", "port in is an input"],
        ),
        (
            edit(|v| {
                v["edges"]
                    .as_array_mut()
                    .unwrap()
                    .pop()
                    .map(|_| ())
                    .unwrap()
            }),
            &["node w", "port out", "dangling"],
        ),
        (
            edit(|v| {
                v["edges"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"from": "src.out", "to": "snk.in", "pattern": "pushpull"}))
            }),
            &[
                "node src",
                "port out",
                "bound twice",
                "edges[0]",
                "edges[2]",
            ],
        ),
        (
            edit(|v| v["edges"][1]["pattern"] = json!("reqrep")),
            &["edges[1].pattern", "reqrep"],
        ),
        (
            edit(|v| v["hosts"] = json!([{"name": "h", "feature": "gpu&x"}])),
            &["host h", "feature = \"gpu&x\"", "one node feature"],
        ),
        (
            edit(|v| v["hosts"] = json!([{"name": "h", "feature": ""}])),
            &["host h", "feature = \"\""],
        ),
        (
            edit(|v| {
                v["nodes"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"name": "w2", "type": "worker"}));
                v["edges"][0]["to"] = json!(["w.in", "w2.in"]);
                v["edges"][0]["pattern"] = json!("pair");
            }),
            &["edges[0]", "pattern mismatch", "pair"],
        ),
        (
            edit(|v| {
                v["nodes"] = json!([
                    {"name": "a", "type": "source"}, {"name": "b", "type": "source"},
                    {"name": "z", "type": "zipper"}, {"name": "snk", "type": "sink"}]);
                v["edges"] = json!([
                    {"from": "a.out", "to": "z.in", "pattern": "pushpull"},
                    {"from": "b.out", "to": "z.in", "pattern": "pubsub"},
                    {"from": "z.out", "to": "snk.in", "pattern": "pushpull"}]);
            }),
            &[
                "node z",
                "port in",
                "pattern mismatch",
                "pubsub and pushpull",
            ],
        ),
    ];
    refused_naming(cases);
}

#[test]
fn placement_and_data_errors_name_process_node_and_key() {
    let cases: Vec<(Value, &[&str])> = vec![
        (
            edit(|v| v["processes"] = json!([{"name": "p", "host": "mars", "nodes": ["src"]}])),
            &["process p", "mars", "unreachable placement"],
        ),
        (
            edit(|v| {
                v["hosts"] = json!([{"name": "a", "address": "10.0.0.1"}, {"name": "b", "address": "10.0.0.2"}]);
                v["processes"] = json!([
                    {"name": "pa", "host": "a", "nodes": ["src", "w"]},
                    {"name": "pb", "host": "b", "nodes": ["snk"]}]);
                v["edges"][1]["transport"] = json!("shm");
            }),
            &[
                "edges[1]",
                "w.out -> snk.in",
                "unreachable placement",
                "host a",
                "host b",
            ],
        ),
        (
            edit(|v| v["edges"][0]["transport"] = json!("inproc")),
            &[
                "edges[0]",
                "unreachable placement",
                "inproc",
                "process src",
                "process w",
            ],
        ),
        (
            edit(|v| v["nodes"][1]["data"] = json!({"work_us": -5})),
            &["node w", "work_us", "-5"],
        ),
        (
            edit(|v| {
                v["nodes"][1]["data"] =
                    json!({"input": {"socket": {"type": "PULL", "bind": "tcp://*:1"}}})
            }),
            &["node w", "data.input", "edges"],
        ),
        (
            edit(|v| {
                v["processes"] =
                    json!([{"name": "p", "nodes": ["src"]}, {"name": "q", "nodes": ["src"]}])
            }),
            &["node src", "two processes"],
        ),
        (
            edit(|v| v["nodes"][0]["type"] = json!("monitor")),
            &["node src", "monitor", "cannot be a graph node"],
        ),
        (edit(|v| v["nodez"] = json!([])), &["unknown key \"nodez\""]),
        (
            edit(|v| v["plugins"] = json!(["no-such-engine-lib"])),
            &["no-such-engine-lib"],
        ),
        (
            edit(|v| {
                v["nodes"][0]["data"] = json!({"count": 5});
                v["nodes"][2]["data"] = json!({});
                v["edges"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"from": "snk.done", "to": "src.done", "pattern": "pair"}));
            }),
            &["node snk", "count", "done"],
        ),
    ];
    refused_naming(cases);
}

#[test]
fn dot_draws_every_pair_of_ports() {
    let v = json!({
        "name": "d",
        "nodes": [{"name": "s", "type": "source"}, {"name": "a", "type": "sink"}, {"name": "b", "type": "sink"}],
        "edges": [{"from": "s.out", "to": ["a.in", "b.in"], "pattern": "pubsub"}]
    });
    let g = Graph::parse(&v, "x").unwrap();
    let p = Plan::make(&g, Path::new("/tmp/d")).unwrap();
    let d = dot::dot(&g, &p);
    assert!(d.starts_with("digraph \"d\""), "{d}");
    assert!(d.contains("\"s\" -> \"a\" [label=\"pubsub shm\""), "{d}");
    assert!(d.contains("\"s\" -> \"b\""), "{d}");
    assert!(d.contains("cluster_proc_a"), "{d}");
    // A two-line label: name, then type (dot's \n escape, written once).
    assert!(d.contains("\"s\" [label=\"s\\nsource\"]"), "{d}");
}

#[test]
fn a_cycle_of_data_edges_is_refused_naming_its_nodes() {
    // w -> p -> w, fed by src, as a loop back into a merge.
    let v = json!({
        "name": "loop",
        "nodes": [
            {"name": "src", "type": "source"},
            {"name": "z", "type": "zipper"},
            {"name": "w", "type": "worker"},
            {"name": "p", "type": "proxy"},
            {"name": "snk", "type": "sink"}
        ],
        "edges": [
            {"from": "src.out", "to": "z.in", "pattern": "pushpull"},
            {"from": "z.out", "to": "w.in", "pattern": "pushpull"},
            {"from": "w.out", "to": ["p.in", "snk.in"], "pattern": "pubsub"},
            {"from": "p.out", "to": "z.in", "pattern": "pushpull"}
        ]
    });
    let e = err_of(&v);
    assert!(e.contains("edges form a cycle"), "{e}");
    assert!(e.contains("z -> w -> p -> z"), "{e}");
    // A sink telling its source it is done is not a data edge: no cycle.
    let v = json!({
        "name": "done",
        "nodes": [
            {"name": "src", "type": "source", "data": {"count": 5}},
            {"name": "snk", "type": "sink", "data": {"count": 5}}
        ],
        "edges": [
            {"from": "src.out", "to": "snk.in", "pattern": "pushpull"},
            {"from": "snk.done", "to": "src.done", "pattern": "pair"}
        ]
    });
    let g = Graph::parse(&v, "x").unwrap();
    assert_eq!(g.cycle(), None);
}

#[test]
fn graph_shm_writers_wait_for_a_slow_reader_instead_of_failing() {
    let g = Graph::parse(&chain(), "x").unwrap();
    let p = Plan::make(&g, Path::new("/tmp/ptmp-graph-test")).unwrap();
    let out = p.configs[0].proxies[0].data["output"]["socket"].clone();
    assert_eq!(
        out["shm_block_timeout_ms"],
        json!(crate::plan::SHM_BLOCK_TIMEOUT.as_millis() as u64),
        "{out}"
    );
    // Readers do not get it; zmq edges do not either.
    let inp = p.configs[1].proxies[0].data["input"]["socket"].clone();
    assert!(inp.get("shm_block_timeout_ms").is_none(), "{inp}");
    let v = edit(|v| v["edges"][0]["transport"] = json!("ipc"));
    let g = Graph::parse(&v, "x").unwrap();
    let p = Plan::make(&g, Path::new("/tmp/ptmp-graph-test")).unwrap();
    let out = p.configs[0].proxies[0].data["output"]["socket"].clone();
    assert!(out.get("shm_block_timeout_ms").is_none(), "{out}");
}

#[test]
fn an_edge_shapes_its_shm_ring_and_the_rings_are_counted() {
    let v = edit(|v| {
        v["edges"][0]["shm_slots"] = json!(16);
        v["edges"][0]["shm_max_message"] = json!(4096);
    });
    let g = Graph::parse(&v, "x").unwrap();
    let p = Plan::make(&g, Path::new("/tmp/ptmp-graph-test")).unwrap();
    // The writer makes the ring, so the shape goes there.
    let out = p.configs[0].proxies[0].data["output"]["socket"].clone();
    assert_eq!(
        (out["shm_slots"].as_u64(), out["shm_max_message"].as_u64()),
        (Some(16), Some(4096)),
        "{out}"
    );
    let inp = p.configs[1].proxies[0].data["input"]["socket"].clone();
    assert!(inp.get("shm_slots").is_none(), "{inp}");
    // Two rings on the host: the shaped one and a default one.
    let rings = crate::plan::shm_rings_on(&g, &p, 0);
    let bytes: Vec<usize> = rings.iter().map(|r| r.1).collect();
    assert_eq!(bytes, vec![8192 + 16 * 4160, ptmp::DEFAULT_SHM_RING_BYTES]);
    let e = err_of(&edit(|v| v["edges"][1]["shm_slots"] = json!(12)));
    assert!(
        e.contains("edges[1].shm_slots = 12: must be a power of two"),
        "{e}"
    );
    let e = err_of(&edit(|v| v["edges"][1]["shm_max_message"] = json!(0)));
    assert!(e.contains("edges[1].shm_max_message = 0"), "{e}");
}

/// An edge's `heartbeat_ms` reaches the sockets at both its ends (the
/// bound on what a connection to a silent peer can take with it); it is
/// refused out of range, naming the edge.
#[test]
fn an_edge_sets_its_sockets_heartbeat() {
    let v = edit(|v| v["edges"][0]["heartbeat_ms"] = json!(250));
    let g = Graph::parse(&v, "x").unwrap();
    let p = Plan::make(&g, Path::new("/tmp/ptmp-graph-test")).unwrap();
    let out = p.configs[0].proxies[0].data["output"]["socket"].clone();
    let inp = p.configs[1].proxies[0].data["input"]["socket"].clone();
    assert_eq!(out["heartbeat_ms"].as_u64(), Some(250), "{out}");
    assert_eq!(inp["heartbeat_ms"].as_u64(), Some(250), "{inp}");
    let other = p.configs[1].proxies[0].data["output"]["socket"].clone();
    assert!(other.get("heartbeat_ms").is_none(), "{other}");
    let e = err_of(&edit(|v| v["edges"][1]["heartbeat_ms"] = json!(-1)));
    assert!(e.contains("edges[1].heartbeat_ms"), "{e}");
}

#[test]
fn the_run_directory_lock_is_exclusive_and_notices_a_dead_holder() {
    let d = tempfile::tempdir().unwrap();
    let me = std::process::id();
    let l = crate::rundir::lock(d.path(), "t").unwrap();
    assert_eq!(l.stale, None);
    // A second lock (another open file, as another process would have) is
    // refused, naming the holder.
    let e = crate::rundir::lock(d.path(), "t")
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains(&format!(
            "already running from {} (supervisor pid {me})",
            d.path().display()
        )),
        "{e}"
    );
    drop(l);
    assert!(!crate::rundir::lock_path(d.path()).exists());
    // A pid left by a supervisor that died (no lock held) is reported.
    std::fs::write(crate::rundir::lock_path(d.path()), "4194303").unwrap();
    let l = crate::rundir::lock(d.path(), "t").unwrap();
    assert_eq!(l.stale, Some(4_194_303));
    assert_eq!(
        std::fs::read_to_string(crate::rundir::lock_path(d.path())).unwrap(),
        me.to_string()
    );
}

#[test]
fn only_receivers_of_uniquely_numbered_streams_drop_repeats() {
    let dedup = |p: &Plan, proc_: usize| {
        p.configs[proc_].proxies[0]
            .data
            .get("dedup")
            .cloned()
            .unwrap_or_default()
    };
    // src -> w -> snk: w and snk drop repeats, and both see whole streams.
    let g = Graph::parse(&chain(), "x").unwrap();
    let p = Plan::make(&g, Path::new("/tmp/ptmp-graph-test")).unwrap();
    assert_eq!((dedup(&p, 1), dedup(&p, 2)), (json!(true), json!(true)));
    assert_eq!(crate::plan::whole_streams(&g), vec![true, true, true]);
    // A user's own setting is kept.
    let v = edit(|v| v["nodes"][2]["data"] = json!({"dedup": false}));
    let p = Plan::make(&Graph::parse(&v, "x").unwrap(), Path::new("/tmp/x")).unwrap();
    assert_eq!(dedup(&p, 2), json!(false));
    // Two sources with the same detid: numbers name no single set.
    let v = json!({
        "name": "two",
        "nodes": [
            {"name": "a", "type": "source"},
            {"name": "b", "type": "source"},
            {"name": "snk", "type": "sink"}
        ],
        "edges": [{"from": ["a.out", "b.out"], "to": "snk.in", "pattern": "pushpull"}]
    });
    let p = Plan::make(&Graph::parse(&v, "x").unwrap(), Path::new("/tmp/x")).unwrap();
    assert_eq!(dedup(&p, 2), Value::Null);
    // Distinct detids: the sink drops repeats.
    let mut v = v;
    v["nodes"][1]["data"] = json!({"detid": 1});
    let p = Plan::make(&Graph::parse(&v, "x").unwrap(), Path::new("/tmp/x")).unwrap();
    assert_eq!(dedup(&p, 2), json!(true));
    // Behind a round-robin fan-out: repeats are still dropped, but the
    // workers see shares, and the sink is not judged whole (conservative:
    // its feeders are not).
    let v = json!({
        "name": "fan",
        "nodes": [
            {"name": "src", "type": "source"},
            {"name": "w1", "type": "worker"},
            {"name": "w2", "type": "worker"},
            {"name": "snk", "type": "sink"}
        ],
        "edges": [
            {"from": "src.out", "to": ["w1.in", "w2.in"], "pattern": "pushpull"},
            {"from": ["w1.out", "w2.out"], "to": "snk.in", "pattern": "pushpull"}
        ]
    });
    let g = Graph::parse(&v, "x").unwrap();
    // The workers get shares, so gaps in their numbers are not losses; the
    // sink gets every set again.
    let p = Plan::make(&g, Path::new("/tmp/x")).unwrap();
    let share = |name: &str| {
        let c = p.configs.iter().flat_map(|c| &c.proxies);
        let node: Vec<_> = c.filter(|x| x.name == name).collect();
        node[0].data.get("share").cloned().unwrap_or_default()
    };
    assert_eq!((share("w1"), share("w2")), (json!(true), json!(true)));
    assert_eq!(share("snk"), Value::Null);
    assert_eq!(crate::plan::counted_streams(&g), vec![true; 4]);
    assert_eq!(
        crate::plan::whole_streams(&g),
        vec![true, false, false, false]
    );
}

#[test]
fn a_restarted_part_continues_its_sources_counts() {
    use crate::part::{continue_counts, PartConfig, PartPlan};
    use crate::rundir::sequence_file;
    let d = tempfile::tempdir().unwrap();
    let plan = PartPlan {
        graph: "t".into(),
        process: "front".into(),
        run_dir: d.path().to_path_buf(),
        config: serde_json::from_value(json!({"name": "t/front", "proxies": [
            {"name": "src", "type": "source", "data": {"count": 100}},
            {"name": "w", "type": "worker", "data": {}}
        ]}))
        .unwrap(),
    };
    let first = |c: &PartConfig| json!(c.proxies[0].first_count());
    let me = std::process::id() as i64;
    // The first start: from 0, recorded with our pid; workers untouched.
    let mut c = plan.config.clone();
    continue_counts(&plan, &mut c);
    assert_eq!(first(&c), json!(0));
    assert!(c.proxies[1].first_count().is_none());
    let seq: Value =
        serde_json::from_slice(&std::fs::read(sequence_file(d.path(), "front")).unwrap()).unwrap();
    assert_eq!(seq["src"], json!({"first": 0, "pid": me}));
    // That life's last status said 40 sent: the next starts at 40.
    let sfile = crate::status::status_file(d.path(), "front");
    std::fs::create_dir_all(sfile.parent().unwrap()).unwrap();
    let st = |pid: i64, out: u64| {
        json!({"pid": pid, "nodes": [{"name": "src", "in": 0, "out": out}]}).to_string()
    };
    std::fs::write(&sfile, st(me, 40)).unwrap();
    let mut c = plan.config.clone();
    continue_counts(&plan, &mut c);
    assert_eq!(first(&c), json!(40));
    // The status is of a life older than the one recorded (the last died
    // before its first status): start where the last started.
    std::fs::write(&sfile, st(1, 25)).unwrap();
    let mut c = plan.config.clone();
    continue_counts(&plan, &mut c);
    assert_eq!(first(&c), json!(40));
    // A first_count of the node's own is where a first start begins.
    std::fs::remove_file(sequence_file(d.path(), "front")).unwrap();
    let mut p2 = PartPlan {
        config: plan.config.clone(),
        ..plan
    };
    p2.config.proxies[0].set_first_count(7);
    let mut c = p2.config.clone();
    continue_counts(&p2, &mut c);
    assert_eq!(first(&c), json!(7));
}

/// Processes of one run starting at the same moment all get the one
/// reader token, never one read half written.
#[test]
fn a_reader_token_made_by_many_at_once_is_one_and_whole() {
    for _ in 0..40 {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().to_path_buf();
        let got: Vec<_> = (0..8)
            .map(|_| {
                let dir = dir.clone();
                std::thread::spawn(move || {
                    crate::rundir::reader_token(&dir).map_err(|e| e.to_string())
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        let first = got[0].clone().unwrap();
        assert!(got.iter().all(|t| t.as_ref() == Ok(&first)), "{got:?}");
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        let token = crate::rundir::token_path(&dir);
        assert_eq!(
            left,
            [token.file_name().unwrap()],
            "nothing but the token is left"
        );
    }
}
