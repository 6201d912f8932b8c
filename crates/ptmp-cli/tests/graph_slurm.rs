//! A graph under a real Slurm (Debian's 22.05: slurmctld and three slurmd,
//! each node a network namespace): the batch script `ptmp graph sbatch`
//! writes, given to `sbatch`, runs each host's part as a job step on its
//! own node with that node's address, and the sink gets every set once, in
//! order. A graph connected by name (its hosts have no addresses): a part
//! whose step is killed is started again on its node, a part whose node
//! is powered off moves to the spare node, and the sink gets nothing
//! twice; `scancel -s INT` stops it cleanly, its dump file whole.

mod common;
#[path = "lan/mod.rs"]
mod lan;
#[path = "slurm/mod.rs"]
mod slurm;

use common::{text, PTMP};
use ptmp_data::{decode_tpset, Frames};
use ptmp_formats::dump::DumpReader;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// Source on host a, a worker on b, the sink on c (writing `out`); the
/// hosts with addresses (which Slurm's placement replaces) or without
/// (connected by name).
fn graph(name: &str, out: &Path, count: Option<u64>, port_base: u16, addressed: bool) -> Value {
    let mut src = json!({"tps": 2, "rate": 500});
    let mut snk = json!({"ofile": out.to_str().unwrap()});
    if let Some(n) = count {
        src["count"] = n.into();
        snk["count"] = n.into();
    }
    let hosts = if addressed {
        json!([{"name": "a", "address": "192.0.2.1"}, {"name": "b", "address": "192.0.2.2"},
               {"name": "c", "address": "192.0.2.3"}])
    } else {
        json!([{"name": "a"}, {"name": "b"}, {"name": "c"}])
    };
    json!({
        "name": name,
        "hosts": hosts,
        "port_base": port_base,
        "nodes": [
            {"name": "src", "type": "source", "data": src},
            {"name": "w", "type": "worker"},
            {"name": "snk", "type": "sink", "data": snk}
        ],
        "edges": [
            {"from": "src.out", "to": "w.in", "pattern": "pushpull"},
            {"from": "w.out", "to": "snk.in", "pattern": "pushpull"}
        ],
        "processes": [
            {"name": "front", "host": "a", "nodes": ["src"]},
            {"name": "mid", "host": "b", "nodes": ["w"]},
            {"name": "back", "host": "c", "nodes": ["snk"]}
        ]
    })
}

/// The counts of the sets in a dump file, in order; the file must read
/// to its end without error.
fn counts(f: &Path) -> Vec<u64> {
    let mut r = DumpReader::new(std::io::BufReader::new(std::fs::File::open(f).unwrap()));
    let mut fr = Frames::new();
    let mut v = Vec::new();
    while r.read_into(&mut fr).unwrap() {
        v.push(decode_tpset(fr.get(1).unwrap()).unwrap().count as u64);
    }
    v
}

/// `ptmp graph sbatch` for graph `g` (written in `dir`), submitted; the
/// job's id.
fn submit(c: &slurm::Cluster, dir: &Path, g: &Value, extra: &[&str], nodes: usize) -> String {
    let f = dir.join(format!("{}.json", g["name"].as_str().unwrap()));
    std::fs::write(&f, g.to_string()).unwrap();
    let run = dir.join("run");
    let mut args = vec![
        "graph",
        "sbatch",
        f.to_str().unwrap(),
        "--run-dir",
        run.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = std::process::Command::new(PTMP)
        .args(&args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let script = text(&o.stdout);
    let want_nodes = format!("#SBATCH --nodes={nodes}");
    for want in [want_nodes.as_str(), "#SBATCH --no-kill", "--slurm"] {
        assert!(script.contains(want), "{want} in:\n{script}");
    }
    let sf = dir.join("job.sh");
    std::fs::write(&sf, &script).unwrap();
    let out = dir.join("job.out");
    let o = c.client(
        "sbatch",
        &[
            "--parsable",
            "--output",
            out.to_str().unwrap(),
            "--chdir",
            dir.to_str().unwrap(),
            sf.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "sbatch: {}", text(&o.stderr));
    text(&o.stdout)
        .trim()
        .split(';')
        .next()
        .unwrap()
        .to_string()
}

/// Waits until job `id` has left the queue.
fn wait_gone(c: &slurm::Cluster, id: &str, limit: Duration, out: &Path) {
    let t0 = Instant::now();
    while c.job_state(id).is_some() {
        assert!(
            t0.elapsed() < limit,
            "job {id} still {:?} after {limit:?}; its output:\n{}",
            c.job_state(id),
            std::fs::read_to_string(out).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// A graph with an end, run from the script `graph sbatch` writes: every
/// set arrives once, in order, and the log says where each host ran.
fn a_graph_with_an_end_arrives_once_in_order(c: &slurm::Cluster, dir: &Path) {
    let n = 2000;
    let out = dir.join("finite.dump");
    let id = submit(
        c,
        dir,
        &graph("slurmfinite", &out, Some(n), 24400, true),
        &[],
        3,
    );
    let log = dir.join("job.out");
    wait_gone(c, &id, Duration::from_secs(120), &log);
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    for want in [
        "host a on node n1 (10.232.0.2)",
        "host b on node n2",
        "host c on node n3",
    ] {
        assert!(said.contains(want), "{want} in:\n{said}");
    }
    assert_eq!(counts(&out), (0..n).collect::<Vec<_>>(), "{said}");
}

/// The launcher's view puts each process on its host and node.
fn placed_as(state: &Value, want: [(&str, &str, &str); 3]) {
    for (proc_, host, node) in want {
        let p = state["processes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == proc_)
            .unwrap();
        assert_eq!(
            (p["host"].as_str(), p["node"].as_str()),
            (Some(host), Some(node)),
            "{state}"
        );
    }
}

/// `ptmp top` of the shared run directory shows every host, its node and
/// its job step (of job `id`), running.
fn top_shows_every_host(run_dir: &Path, id: &str) {
    let o = std::process::Command::new(PTMP)
        .args(["top", "--once", "--json", "--interval", "0.2", "--run-dir"])
        .arg(run_dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let top: Value = serde_json::from_slice(&o.stdout).unwrap();
    let hosts = top["tables"]["hosts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let rows: Vec<(&str, &str)> = hosts
        .iter()
        .map(|h| (h["host"].as_str().unwrap(), h["node"].as_str().unwrap()))
        .collect();
    assert_eq!(rows, [("a", "n1"), ("b", "n4"), ("c", "n3")], "{top}");
    for h in &hosts {
        assert!(
            h["step"].as_str().unwrap().starts_with(&format!("{id}.")),
            "{top}"
        );
        assert_eq!(h["state"], "running", "{top}");
    }
}

/// Wait up to `limit` until the job's log `log` says `what`.
fn wait_said(log: &Path, what: &str, limit: Duration) {
    let t0 = Instant::now();
    while !std::fs::read_to_string(log)
        .unwrap_or_default()
        .contains(what)
    {
        assert!(
            t0.elapsed() < limit,
            "not said within {limit:?}: {what}\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The launcher's `/api/state` at `url`, asked from node n1's namespace
/// (where the launcher runs), and what the asking printed on stderr.
fn launcher_view(c: &slurm::Cluster, url: &str) -> (Value, String) {
    let o = std::process::Command::new("ip")
        .args(["netns", "exec", &c.nodes[0].1, "/usr/bin/python3", "-c"])
        .arg("import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1] + 'api/state', timeout=5).read().decode())")
        .arg(url)
        .output()
        .unwrap();
    (
        serde_json::from_slice(&o.stdout).unwrap_or(Value::Null),
        text(&o.stderr),
    )
}

/// The launcher's view once it shows all three processes running.
fn all_running(c: &slurm::Cluster, url: &str) -> Value {
    let t0 = Instant::now();
    loop {
        let (v, err) = launcher_view(c, url);
        let running = v["processes"]
            .as_array()
            .is_some_and(|ps| ps.len() == 3 && ps.iter().all(|p| p["state"] == "running"));
        if running {
            break v;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the launcher's view: {v}\n{err}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn a_graph_runs_under_slurm_one_node_per_host() {
    if let Some(p) = slurm::missing() {
        common::missing_part(&format!(
            "a_graph_runs_under_slurm_one_node_per_host: {p} missing (Debian packages slurmctld slurmd slurm-client munge)"
        ));
        return;
    }
    let c = match slurm::Cluster::start(4, "g") {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let d = tempfile::tempdir().unwrap();

    a_graph_with_an_end_arrives_once_in_order(&c, d.path());
    let log = d.path().join("job.out");

    // A graph with no end, connected by name, with a spare node: its
    // worker's part killed once is started again on its node; its node
    // powered off, it moves to the spare; then scancel -s INT stops it all
    // cleanly.
    let out = d.path().join("endless.dump");
    let mut g = graph("slurmendless", &out, None, 24500, false);
    for e in g["edges"].as_array_mut().unwrap() {
        e["heartbeat_ms"] = HEARTBEAT_MS.into();
    }
    let id = submit(
        &c,
        d.path(),
        &g,
        &["--spare-nodes", "1", "--http", "127.0.0.1:0"],
        4,
    );
    let t0 = Instant::now();
    let mid_pid = loop {
        let pid = std::fs::read_to_string(d.path().join("run/b/supervisor.pid")).ok();
        if let Some(p) = pid.and_then(|p| p.trim().parse::<i32>().ok()) {
            if std::fs::metadata(&out).is_ok_and(|m| m.len() > 10_000) {
                break p;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the graph did not start: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    // One view of all three hosts' parts, served by the launcher on node
    // n1 (the batch step's node), read from their run directories.
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    let url = said
        .lines()
        .find_map(|l| l.split("monitor at ").nth(1))
        .unwrap_or_else(|| panic!("no monitor address in:\n{said}"))
        .trim()
        .to_string();
    let view = || launcher_view(&c, &url);
    let node_of = |v: &Value, proc_: &str| -> Option<String> {
        v["processes"]
            .as_array()?
            .iter()
            .find(|p| p["name"] == proc_)?["node"]
            .as_str()
            .map(str::to_string)
    };
    let state = all_running(&c, &url);
    placed_as(
        &state,
        [
            ("front", "a", "n1"),
            ("mid", "b", "n2"),
            ("back", "c", "n3"),
        ],
    );
    let snk = state["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "snk")
        .unwrap();
    assert!(snk["in"].as_u64().unwrap_or(0) > 0, "{state}");
    // SAFETY: kill(2) of host b's supervisor, a process of this test's job.
    unsafe {
        libc::kill(mid_pid, libc::SIGKILL);
    }
    wait_said(&log, "starting it again (1 of 3)", Duration::from_secs(30));
    // Sets flow again through the restarted part.
    let flowing = |what: &str| {
        let before = counts(&out).len();
        let t0 = Instant::now();
        while counts(&out).len() < before + 500 {
            assert!(
                t0.elapsed() < Duration::from_secs(90),
                "no sets after {what}: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
        before
    };
    flowing("the restart");
    // Node n2 powered off: once Slurm marks it down, host b moves to n4.
    c.power_off("n2");
    let t0 = Instant::now();
    wait_said(&log, "host b moves to node n4", Duration::from_secs(120));
    let moved_after = t0.elapsed();
    let before = flowing("the move");
    let resumed_after = t0.elapsed();
    let (v, err) = view();
    assert_eq!(node_of(&v, "mid").as_deref(), Some("n4"), "{v}\n{err}");
    // Each part's job step, as its supervisor says; and `ptmp top` of the
    // run directories shows every host, its node and its step.
    for p in v["processes"].as_array().unwrap() {
        let step = p["step"].as_str().unwrap_or_default();
        assert!(step.starts_with(&format!("{id}.")), "{p}");
    }
    top_shows_every_host(&d.path().join("run"), &id);
    let o = c.client("scancel", &["-s", "INT", &id]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    wait_gone(&c, &id, Duration::from_secs(90), &log);
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    for h in ["a", "b", "c"] {
        assert!(
            said.contains(&format!("slurm: host {h} on node"))
                && said.contains(&format!("host {h} on node n")),
            "{said}"
        );
    }
    assert!(
        !said.contains("did not stop in"),
        "every part drained in time:\n{said}"
    );
    // Nothing twice, in order; what the killed worker held may be lost.
    let got = counts(&out);
    assert!(
        got.windows(2).all(|w| w[0] < w[1]),
        "a set repeated or out of order"
    );
    assert!(got.len() as u64 > before as u64 + 500, "{}", got.len());
    eprintln!(
        "job output:\n{said}\nsink: {} sets, none twice; node n2 powered off: host b moved after \
         {moved_after:?}, sets flowed again after {resumed_after:?}",
        got.len()
    );
    lost_within_bound(&got);
}

/// The heartbeat of the endless graph's edges (`heartbeat_ms`).
const HEARTBEAT_MS: u64 = 250;

/// The sets missing from `got` (counts from 0), checked against what a
/// lost node can take: the set its killed process held, and those the
/// source sent into its connection to the powered-off node until
/// heartbeats dropped it (three intervals without a word from the peer,
/// so at most four intervals of sets at 500 a second), with half a second
/// more for a loaded machine. Prints each run of missing sets.
fn lost_within_bound(got: &[u64]) {
    let lost = got.last().map_or(0, |l| l + 1) - got.len() as u64;
    let gaps: Vec<(u64, u64)> = got
        .windows(2)
        .filter(|w| w[1] != w[0] + 1)
        .map(|w| (w[0] + 1, w[1] - 1))
        .collect();
    let bound = 500 * (4 * HEARTBEAT_MS + 500) / 1000 + 10;
    eprintln!("missing sets (first, last): {gaps:?}; {lost} in all, bound {bound}");
    assert!(lost <= bound, "{lost} lost, more than {bound}: {gaps:?}");
}

/// Hosts placed by node feature: host b needs `gpu`, which only n3 has.
/// The script `graph sbatch` writes asks for it (`--constraint`) and runs
/// the graph with b on n3 (in order it would be on n2); then a
/// heterogeneous job (n1 and n2 in one component, a gpu node in the other)
/// runs it the same way, b's step in the second component. Every set
/// arrives once, in order, both times.
#[test]
fn hosts_are_placed_by_feature_also_in_a_heterogeneous_job() {
    if let Some(p) = slurm::missing() {
        common::missing_part(&format!(
            "hosts_are_placed_by_feature_also_in_a_heterogeneous_job: {p} missing (Debian packages slurmctld slurmd slurm-client munge)"
        ));
        return;
    }
    let c = slurm::Cluster::with_features(&["", "", "gpu"], "f").unwrap_or_else(|e| panic!("{e}"));
    let d = tempfile::tempdir().unwrap();
    let n = 300;
    let placed = [
        "host a on node n1",
        "host b on node n3",
        "host c on node n2",
    ];
    let out = d.path().join("feature.dump");
    let mut g = graph("slurmfeature", &out, Some(n), 24800, true);
    g["hosts"][1]["feature"] = "gpu".into();
    let id = submit(&c, d.path(), &g, &[], 3);
    let script = std::fs::read_to_string(d.path().join("job.sh")).unwrap();
    assert!(
        script.contains("#SBATCH --constraint='gpu*1'\n"),
        "{script}"
    );
    let log = d.path().join("job.out");
    wait_gone(&c, &id, Duration::from_secs(120), &log);
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    for want in placed {
        assert!(said.contains(want), "{want} in:\n{said}");
    }
    assert_eq!(counts(&out), (0..n).collect::<Vec<_>>(), "{said}");

    // The same graph in a heterogeneous job.
    let out = d.path().join("het.dump");
    let mut g = graph("slurmhet", &out, Some(n), 24850, true);
    g["hosts"][1]["feature"] = "gpu".into();
    let f = d.path().join("slurmhet.json");
    std::fs::write(&f, g.to_string()).unwrap();
    let script = format!(
        "#!/bin/sh\n#SBATCH --nodes=2\n#SBATCH --nodelist=n1,n2\n#SBATCH --no-kill\n\
         #SBATCH hetjob\n#SBATCH --nodes=1\n#SBATCH --constraint=gpu\n\
         exec {PTMP} graph run {} --run-dir {} --slurm\n",
        f.display(),
        d.path().join("hetrun").display()
    );
    let sf = d.path().join("het.sh");
    std::fs::write(&sf, script).unwrap();
    let log = d.path().join("het.out");
    let o = c.client(
        "sbatch",
        &[
            "--parsable",
            "--output",
            log.to_str().unwrap(),
            sf.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "sbatch: {}", text(&o.stderr));
    let id = text(&o.stdout)
        .trim()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    wait_gone(&c, &id, Duration::from_secs(120), &log);
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    for want in placed {
        assert!(said.contains(want), "{want} in:\n{said}");
    }
    for want in [
        "n1 (10.232.0.2), job component 0",
        "n3 (10.232.0.4), job component 1",
    ] {
        assert!(said.contains(want), "{want} in:\n{said}");
    }
    assert_eq!(counts(&out), (0..n).collect::<Vec<_>>(), "{said}");
}

/// A graph with no end in a one-minute allocation: when the time is up,
/// Slurm signals the launcher, which says the allocation is ending and
/// stops every part with SIGINT; the sink's file reads to its end.
#[test]
fn a_graph_whose_allocation_ends_says_so() {
    if let Some(p) = slurm::missing() {
        common::missing_part(&format!(
            "a_graph_whose_allocation_ends_says_so: {p} missing (Debian packages slurmctld slurmd slurm-client munge)"
        ));
        return;
    }
    let c = slurm::Cluster::start(1, "t").unwrap_or_else(|e| panic!("{e}"));
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("timed.dump");
    let g = json!({
        "name": "slurmtimed",
        "nodes": [
            {"name": "src", "type": "source", "data": {"rate": 200}},
            {"name": "snk", "type": "sink", "data": {"ofile": out.to_str().unwrap()}}
        ],
        "edges": [{"from": "src.out", "to": "snk.in", "pattern": "pushpull"}],
        "processes": [{"name": "p1", "nodes": ["src"]}, {"name": "p2", "nodes": ["snk"]}]
    });
    let f = d.path().join("slurmtimed.json");
    std::fs::write(&f, g.to_string()).unwrap();
    let run = d.path().join("run");
    let o = std::process::Command::new(PTMP)
        .args([
            "graph",
            "sbatch",
            f.to_str().unwrap(),
            "--run-dir",
            run.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let sf = d.path().join("job.sh");
    std::fs::write(&sf, o.stdout).unwrap();
    let log = d.path().join("job.out");
    let o = c.client(
        "sbatch",
        &[
            "--parsable",
            "--time=1",
            "--output",
            log.to_str().unwrap(),
            sf.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "sbatch: {}", text(&o.stderr));
    let id = text(&o.stdout).trim().to_string();
    wait_gone(&c, &id, Duration::from_secs(180), &log);
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        said.contains(&format!("the allocation of job {id} is ending")),
        "{said}"
    );
    assert!(said.contains("stopping: interrupted"), "{said}");
    let got = counts(&out);
    assert!(got.len() > 1000, "{} sets\n{said}", got.len());
    assert!(
        got.windows(2).all(|w| w[0] < w[1]),
        "a set repeated or out of order"
    );
}

/// Outside an allocation `--slurm` says where it runs; a bad
/// `--host-address` names what is wrong. Neither starts anything.
#[test]
fn slurm_and_host_address_mistakes_are_named() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("g.json");
    std::fs::write(
        &f,
        graph(
            "slurmmistake",
            &d.path().join("o.dump"),
            Some(10),
            24600,
            true,
        )
        .to_string(),
    )
    .unwrap();
    let f = f.to_str().unwrap();
    let ptmp = |args: &[&str]| {
        std::process::Command::new(PTMP)
            .args(args)
            .env_remove("SLURM_JOB_ID")
            .env_remove("SLURM_JOB_NODELIST")
            .output()
            .unwrap()
    };
    let o = ptmp(&["graph", "run", f, "--slurm"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("SLURM_JOB_ID") && text(&o.stderr).contains("sbatch"),
        "{}",
        text(&o.stderr)
    );
    for (arg, says) in [("a", "NAME=ADDRESS"), ("zz=10.0.0.9", "no host \"zz\"")] {
        let o = ptmp(&["graph", "run", f, "--host", "a", "--host-address", arg]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
        assert!(text(&o.stderr).contains(says), "{arg}: {}", text(&o.stderr));
    }
}
