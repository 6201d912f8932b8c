use super::*;
use serde_json::json;

/// Every shm input of a worker, proxy or sink reads under
/// GRAPH/NODE/PORT with the graph's grace; an agent that does not
/// commit (a window) gets no identity, and zmq inputs none either.
#[test]
fn shm_inputs_of_committing_nodes_get_a_stable_identity() {
    let v = json!({
        "name": "t",
        "nodes": [
            {"name": "src", "type": "source", "data": {"count": 10}},
            {"name": "w", "type": "worker"},
            {"name": "win", "type": "window", "data": {"tspan": 100}},
            {"name": "p", "type": "proxy"},
            {"name": "snk", "type": "sink"}
        ],
        "edges": [
            {"from": "src.out", "to": "w.in", "pattern": "pushpull"},
            {"from": "w.out", "to": "win.in", "pattern": "pushpull"},
            {"from": "win.out", "to": "p.in", "pattern": "pushpull", "transport": "ipc"},
            {"from": "p.out", "to": "snk.in", "pattern": "pushpull"}
        ]
    });
    let g = Graph::parse(&v, "x").unwrap();
    let p = Plan::make(&g, Path::new("/tmp/d")).unwrap();
    let input = |k: usize| p.configs[k].proxies[0].data["input"]["socket"].clone();
    for (k, id) in [
        (1, Some("t/w/in")),
        (2, None),
        (3, None),
        (4, Some("t/snk/in")),
    ] {
        let s = input(k);
        assert_eq!(s["shm_reader_id"].as_str(), id, "{s}");
        let grace = id.map(|_| SHM_READER_GRACE.as_millis() as u64);
        assert_eq!(s["shm_reader_grace_ms"].as_u64(), grace, "{s}");
    }
}

#[test]
fn a_zipper_fed_by_a_fan_in_is_told_how_many_streams_come() {
    let v = json!({
        "name": "z",
        "nodes": [
            {"name": "a", "type": "source", "data": {"count": 10, "detid": 1}},
            {"name": "b", "type": "source", "data": {"count": 10, "detid": 2}},
            {"name": "c", "type": "source", "data": {"count": 10, "detid": 3}},
            {"name": "zip", "type": "zipper"},
            {"name": "snk", "type": "sink"}
        ],
        "edges": [
            {"from": ["a.out", "b.out", "c.out"], "to": "zip.in", "pattern": "pushpull"},
            {"from": "zip.out", "to": "snk.in", "pattern": "pushpull"}
        ]
    });
    let g = Graph::parse(&v, "x").unwrap();
    let p = Plan::make(&g, Path::new("/tmp/d")).unwrap();
    let data = |name: &str| {
        p.configs
            .iter()
            .map(|c| &c.proxies[0])
            .find(|n| n.name == name)
            .map(|n| Value::Object(n.data.clone()))
            .unwrap()
    };
    // Its input binds one endpoint that three senders reach.
    assert_eq!(
        data("zip")["input"]["socket"]["bind"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    assert_eq!(data("zip")["streams"], 3);
    assert!(data("snk").get("streams").is_none());
}
