use super::*;
use ptmp::TPSet;
use ptmp_formats::dump::DumpWriter;

#[test]
fn fault_names_are_checked() {
    assert_eq!(
        parse_faults("kill,stop,kill").unwrap(),
        vec![Fault::Kill, Fault::Stop]
    );
    assert_eq!(parse_faults(" stop ").unwrap(), vec![Fault::Stop]);
    for bad in ["", "kill,", "explode", "kill,Stop"] {
        let e = parse_faults(bad).unwrap_err();
        assert!(e.contains("unknown fault"), "{bad}: {e}");
    }
}

fn graph() -> Value {
    json!({
        "name": "soak-unit",
        "nodes": [
            {"name": "a", "type": "source"},
            {"name": "b", "type": "source", "data": {"detid": 0}},
            {"name": "w", "type": "worker"},
            {"name": "snk", "type": "sink"}
        ],
        "edges": [
            {"from": ["a.out", "b.out"], "to": "w.in", "pattern": "pushpull"},
            {"from": "w.out", "to": "snk.in", "pattern": "pushpull", "hwm": 10}
        ],
        "restart": {"max": 3}
    })
}

#[test]
fn prepare_gives_sinks_dumps_and_sources_their_own_detid() {
    let d = tempfile::tempdir().unwrap();
    let mut v = graph();
    let notes = prepare(&mut v, d.path(), 40).unwrap();
    assert_eq!(v["nodes"][0]["data"]["detid"], 1, "0 is b's");
    assert_eq!(
        v["nodes"][3]["data"]["ofile"],
        json!(default_ofile(d.path(), "snk"))
    );
    assert_eq!(v["restart"]["max"], 40);
    assert!(notes.iter().any(|n| n == "restart.max raised from 3 to 40"));
    // Two sources naming one detid cannot be told apart.
    let mut v = graph();
    v["nodes"][0]["data"] = json!({"detid": 0});
    let e = prepare(&mut v, d.path(), 1).unwrap_err();
    assert!(e.contains("sources a and b both send detid 0"), "{e}");
}

fn write_dump(path: &Path, sets: &[(u32, u32, i64)]) {
    let mut w = DumpWriter::new(std::fs::File::create(path).unwrap());
    let mut buf = Vec::new();
    for &(detid, count, created) in sets {
        let s = TPSet {
            detid,
            count,
            created,
            ..Default::default()
        };
        ptmp::data::encode_tpset(&s, &mut buf);
        w.write([&ptmp::data::VERSION_FRAME[..], &buf[..]]).unwrap();
    }
    w.flush().unwrap();
}

fn status(
    process: &str,
    pid: i32,
    node: &str,
    inn: u64,
    out: u64,
) -> ((String, i32), (NodeCounts, bool)) {
    (
        (process.to_string(), pid),
        (vec![(node.to_string(), inn, out)], true),
    )
}

/// The counting from a dump: source a (detid 1) was killed once at
/// time 1000, its first life sent 5 (numbers 0..5, 3 never arrived),
/// its second life sent 3 more (numbers 5..8, all arrived, 6 twice);
/// source b (detid 0) sent 4, all arrived. Lost, duplicated and the
/// bound are what they must be, and the duplicate fails the run.
#[test]
fn accounts_from_dumps_split_restarts_and_find_duplicates_and_gaps() {
    let d = tempfile::tempdir().unwrap();
    let mut v = graph();
    prepare(&mut v, d.path(), 10).unwrap();
    let (g, plan) = ptmp_graph::load(&v, "x", Some(d.path())).unwrap();
    let a1 = [(1, 0, 10), (1, 1, 20), (1, 2, 30), (1, 4, 50)];
    // Its second life went on from 5 (where its part recorded it
    // started): 5, 6 twice, 7.
    let a2 = [(1, 5, 2000), (1, 6, 2010), (1, 6, 2010), (1, 7, 2020)];
    let seq = ptmp_graph::rundir::sequence_file(d.path(), "a");
    std::fs::create_dir_all(seq.parent().unwrap()).unwrap();
    std::fs::write(&seq, json!({"a": {"first": 5, "pid": 101}}).to_string()).unwrap();
    let b = [(0, 0, 5), (0, 1, 15), (0, 2, 1500), (0, 3, 2500)];
    let mut all: Vec<(u32, u32, i64)> = Vec::new();
    all.extend(a1);
    all.extend(b);
    all.extend(a2);
    write_dump(&default_ofile(d.path(), "snk"), &all);
    let mut sh = Shared::default();
    sh.track.seen = [
        // a's first life's last status said 3 sent: the dump shows 5.
        status("a", 100, "a", 0, 3),
        status("a", 101, "a", 0, 3),
        status("b", 200, "b", 0, 4),
    ]
    .into_iter()
    .collect();
    sh.injected = vec![
        Injected {
            kind: Fault::Kill,
            process: "a".into(),
            pid: 100,
            at_us: 1000,
        },
        Injected {
            kind: Fault::Stop,
            process: "w".into(),
            pid: 300,
            at_us: 1200,
        },
    ];
    let outcome = supervise::Outcome {
        reason: "interrupted".into(),
        restarts: vec![("a".into(), 1)],
        ok: true,
        ..Default::default()
    };
    let opts = Options {
        duration: Duration::from_secs(1),
        every: Duration::from_millis(100),
        faults: vec![Fault::Kill, Fault::Stop],
        stop_for: Duration::from_millis(10),
        start: 1,
        kill_only: None,
        recover: Duration::from_secs(1),
    };
    let r = account(&g, &plan, &opts, &outcome, sh, Duration::from_secs(1));
    let e = &r.json["end_to_end"];
    assert_eq!(e["sent"], 5 + 3 + 4, "{}", r.json);
    assert_eq!(e["received"], 12);
    assert_eq!(e["received_unique"], 11);
    assert_eq!(e["duplicated"], 1);
    assert_eq!(e["lost"], 1, "number 3 of a's first life");
    let sa = &r.json["streams"][0];
    assert_eq!(
        (&sa["source"], &sa["incarnations"]),
        (&json!("a"), &json!(2))
    );
    // One kill of a: its one node in flight, plus its edge, a fan-in
    // over ipc: 2 x 1000 (high-water marks) + the socket buffer.
    let per = r.json["bound_per_kill"]["a"].as_u64().unwrap();
    assert!(per > 2001, "{}", r.json);
    assert_eq!(e["bound"], per);
    assert_eq!(r.json["faults"]["kills"], 1);
    assert_eq!(r.json["faults"]["stops"], 1);
    assert!(!r.ok);
    assert_eq!(r.failures, vec!["1 messages were delivered more than once"]);
}
