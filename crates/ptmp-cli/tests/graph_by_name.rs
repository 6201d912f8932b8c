//! A graph across three hosts with no addresses in it: each host is a
//! network namespace on one bridge, each runs `ptmp graph run G --host X`,
//! and the parts find each other by name (presence over multicast DNS).
//! The middle part is killed and started again on another host; the
//! traffic resumes without touching the other parts, and what is lost is
//! only what was in flight through the killed process.

mod common;
#[path = "lan/mod.rs"]
mod lan;

use common::{node_in, status, text, wait_for, write_graph, PTMP};
use lan::{Lan, Reaped};
use serde_json::json;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn part(ns: &str, graph: &Path, host: &str, run_dir: &Path) -> Reaped {
    Reaped(
        Command::new("ip")
            .args(["netns", "exec", ns, PTMP, "graph", "run"])
            .arg(graph)
            .args(["--host", host, "--run-dir"])
            .arg(run_dir)
            .args(["--ttl", "120"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill").args([sig, &pid.to_string()]).status();
}

fn stop(mut c: Reaped) -> String {
    signal(c.id(), "-TERM");
    wait_for(Duration::from_secs(30), "a graph part to stop", || {
        c.try_wait().unwrap().map(|_| ())
    });
    let mut s = String::new();
    if let Some(mut e) = c.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut s);
    }
    s
}

#[test]
fn a_graph_without_addresses_across_three_hosts_survives_a_move() {
    let Some(lan) = Lan::make(3, "g") else {
        common::missing_part("a_graph_without_addresses_across_three_hosts_survives_a_move: cannot create network namespaces here (needs root and iproute2's `ip netns`)");
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("received.dump");
    let n = 3000u64;
    let g = json!({
        "name": "byname",
        "hosts": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
        "nodes": [
            {"name": "src", "type": "source", "data": {"count": n, "tps": 1, "rate": 400}},
            {"name": "mid", "type": "worker"},
            {"name": "snk", "type": "sink", "data": {"ofile": out.to_str().unwrap()}}
        ],
        "edges": [
            {"from": "src.out", "to": "mid.in", "pattern": "pushpull"},
            {"from": "mid.out", "to": "snk.in", "pattern": "pushpull"}
        ],
        "processes": [
            {"name": "front", "host": "a", "nodes": ["src"]},
            {"name": "middle", "host": "b", "nodes": ["mid"]},
            {"name": "back", "host": "c", "nodes": ["snk"]}
        ]
    });
    let f = write_graph(d.path(), &g);
    // No address anywhere: the edges are names.
    let o = Command::new(PTMP)
        .args(["graph", "check"])
        .arg(&f)
        .output()
        .unwrap();
    let desc = text(&o.stdout);
    assert!(
        desc.contains("(src.out -> mid.in) pushpull over tcp at name://src/out"),
        "{desc}"
    );
    let rd = |h: &str| d.path().join(format!("run-{h}"));
    let (na, nb, nc) = (&lan.hosts[0], &lan.hosts[1], &lan.hosts[2]);
    let back = part(nc, &f, "c", &rd("c"));
    let middle = part(nb, &f, "b", &rd("b"));
    let front = part(na, &f, "a", &rd("a"));
    // Traffic flows through host b.
    wait_for(Duration::from_secs(40), "sets through host b", || {
        node_in(&rd("c"), "back", "snk").filter(|&k| k >= 300)
    });
    // Host b dies: its part without a word (kill -9), its supervisor too
    // (stopped first so that it cannot restart the part).
    let part_pid = status(&rd("b"), "middle").unwrap()["pid"].as_u64().unwrap() as u32;
    signal(middle.id(), "-STOP");
    signal(part_pid, "-KILL");
    signal(middle.id(), "-KILL");
    let mut middle = middle;
    let _ = middle.wait();
    let before = node_in(&rd("c"), "back", "snk").unwrap();
    // What the killed node had taken in and passed on, as of its last
    // status (at most a quarter of a second old): for the record.
    let last = status(&rd("b"), "middle").unwrap();
    let m = &last["nodes"][0];
    eprintln!(
        "graph by name: the killed node's last status: in {} out {}",
        m["in"], m["out"]
    );
    // The same part, started on host c instead: nothing else is touched.
    let killed = std::time::Instant::now();
    let moved = part(nc, &f, "b", &rd("b2"));
    // How long the sink went without sets: for the record, not asserted.
    wait_for(
        Duration::from_secs(60),
        "sets through the moved node",
        || node_in(&rd("c"), "back", "snk").filter(|&k| k > before + 10),
    );
    eprintln!(
        "graph by name: traffic resumed {:?} after the kill and the restart elsewhere",
        killed.elapsed()
    );
    // The source finishes, which it can only do once the moved node takes
    // its sets (a PUSH with no peer holds them), and the sink gets the rest.
    let front_out = {
        let mut front = front;
        wait_for(Duration::from_secs(60), "the source to finish", || {
            front.try_wait().unwrap().map(|_| ())
        });
        let mut s = String::new();
        use std::io::Read;
        let _ = front.stderr.take().unwrap().read_to_string(&mut s);
        s
    };
    assert!(front_out.contains("stopping: finished"), "{front_out}");
    let sent = status(&rd("a"), "front").unwrap()["nodes"][0]["out"]
        .as_u64()
        .unwrap();
    assert_eq!(sent, n, "{front_out}");
    // Wait until the sink has all that will arrive (nothing new for 2 s).
    let mut last = (0, std::time::Instant::now());
    wait_for(Duration::from_secs(60), "the sink to settle", || {
        let k = node_in(&rd("c"), "back", "snk").unwrap_or(0);
        if k != last.0 {
            last = (k, std::time::Instant::now());
        }
        (k >= n || last.1.elapsed() > Duration::from_secs(2)).then_some(())
    });
    let moved_err = stop(moved);
    let back_err = stop(back);
    // What the sink got: sequence numbers, each once.
    let got: Vec<u64> = common::read_dump(&out)
        .iter()
        .map(|s| s.count as u64)
        .collect();
    let distinct: BTreeSet<u64> = got.iter().copied().collect();
    assert_eq!(distinct.len(), got.len(), "a set arrived twice");
    let lost: Vec<u64> = (0..n).filter(|k| !distinct.contains(k)).collect();
    eprintln!(
        "graph by name: {n} sent, {} received ({before} before the move), {} lost: {:?}",
        got.len(),
        lost.len(),
        lost
    );
    assert!(
        got.len() as u64 > before,
        "nothing arrived after the move\nmoved part: {moved_err}\nback: {back_err}"
    );
    // Everything sent after the move arrived, and before it too: the only
    // gap is one run of sets that were inside host b's process or on their
    // way to it when it died.
    if let (Some(&lo), Some(&hi)) = (lost.first(), lost.last()) {
        assert_eq!(
            hi - lo + 1,
            lost.len() as u64,
            "losses not in one run: {lost:?}"
        );
        // ... around the moment of the kill (the status the sink's count
        // was read from is at most a quarter of a second old).
        assert!(lo + 200 >= before, "{lost:?} vs {before}");
    }
    // At 400 sets a second through a worker that keeps up, what is in
    // flight at any moment is a handful; a tenth of a second's worth is
    // far more than that.
    assert!(lost.len() <= 40, "lost {}: {lost:?}", lost.len());
    drop(lan);
}
