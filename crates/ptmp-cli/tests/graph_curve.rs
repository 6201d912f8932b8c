//! A graph with `"curve": true` over tcp, as real processes: every set
//! reaches the sink while a rogue reader with a key of its own and one
//! without CURVE connect to the source's port and get nothing; the source
//! counts the refusal in its status file; the graph's secret key is 0600.

use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Duration;

mod common;
use common::proc::{last_json, Proc};
use common::{finish, free_ports, node_in, read_dump, status, text, wait_for, write_json, PTMP};

const LIMIT: Duration = Duration::from_secs(60);

/// The clients the CURVE server sockets of `process` refused so far.
fn refused(run_dir: &std::path::Path, process: &str) -> u64 {
    status(run_dir, process)
        .and_then(|s| {
            s["sockets"]
                .as_array()
                .map(|a| a.iter().filter_map(|x| x["curve_refused"].as_u64()).sum())
        })
        .unwrap_or(0)
}

#[test]
fn a_secured_graph_keeps_strangers_out() {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    let out = d.path().join("out.dump");
    let n = 10000u64;
    let port = free_ports(4);
    let g = json!({
        "name": format!("curve-{}", std::process::id()),
        "port_base": port,
        "curve": true,
        "nodes": [
            {"name": "src", "type": "source", "data": {"count": n, "rate": 2000, "detid": 1}},
            {"name": "w", "type": "worker"},
            {"name": "snk", "type": "sink", "data": {"count": n, "ofile": out}}
        ],
        "edges": [
            {"from": "src.out", "to": "w.in", "pattern": "pushpull", "transport": "tcp"},
            {"from": "w.out", "to": "snk.in", "pattern": "pushpull", "transport": "tcp"}
        ]
    });
    let f = write_json(d.path(), "g.json", &g);
    let sup = Command::new(PTMP)
        .args(["graph", "run"])
        .arg(&f)
        .arg("--run-dir")
        .arg(&rd)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(LIMIT, "traffic at the sink", || {
        node_in(&rd, "snk", "snk").filter(|n| *n >= 200)
    });
    let secret = rd.join("curve").join("graph.key_secret");
    let mode = std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    // A reader holding a key of its own, which knows the source's public
    // key (public, after all), and one without CURVE: both connect to the
    // source's port while it sends, and neither gets a set.
    let keys = d.path().join("keys");
    let o = Command::new(PTMP)
        .args(["keys", "new", "rogue", "--dir"])
        .arg(&keys)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let ep = format!("tcp://127.0.0.1:{port}");
    let (rkey, gkey) = (
        keys.join("rogue.key_secret").display().to_string(),
        rd.join("curve").join("graph.key").display().to_string(),
    );
    let rogue = |curve: bool| {
        let mut a = vec![
            "recv", "-n", "100", "-p", "PULL", "-a", "connect", "-e", &ep, "-T", "2s", "--json",
        ];
        if curve {
            a.extend(["--curve-secret", &rkey, "--curve-server-key", &gkey]);
        }
        Proc::spawn(&a)
    };
    let (with_key, plain) = (rogue(true), rogue(false));
    // The one with a key is told it was refused, and ends at once.
    let o = with_key.finish(LIMIT);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    assert!(
        text(&o.stderr).contains("refused this client's key"),
        "{}",
        text(&o.stderr)
    );
    assert!(!text(&o.stdout).contains("count="), "{}", text(&o.stdout));
    let o = plain.finish(LIMIT);
    let j = last_json(&o);
    assert_eq!(j["received"], json!(0), "the rogue without CURVE read: {j}");
    let counted = wait_for(LIMIT, "the refusal in the source's status", || {
        Some(refused(&rd, "src")).filter(|n| *n >= 1)
    });
    assert!(counted >= 1);
    // `ptmp top` says it under its tables, naming the edge.
    let o = Command::new(PTMP)
        .args(["top", "--once", "-i", "200ms", "--run-dir"])
        .arg(&rd)
        .output()
        .unwrap();
    let top = text(&o.stdout);
    assert!(
        top.contains(&format!("edge src -> w ({ep}): ")) && top.contains("refused by CURVE"),
        "{top}{}",
        text(&o.stderr)
    );

    // The graph ends by itself with every set at the sink, once, in order.
    let o = finish(sup, LIMIT);
    assert!(
        o.status.success(),
        "{}\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let counts: Vec<u64> = read_dump(&out).iter().map(|s| s.count as u64).collect();
    assert_eq!(counts, (0..n).collect::<Vec<_>>());
}

/// A graph on several hosts needs a key directory every host has; a bad
/// `curve` value is refused by name.
#[test]
fn curve_settings_are_checked() {
    let d = tempfile::tempdir().unwrap();
    let check = |curve: serde_json::Value, hosts: bool| {
        let mut g = json!({
            "name": "cc",
            "curve": curve,
            "nodes": [{"name": "src", "type": "source", "data": {"count": 1}},
                      {"name": "snk", "type": "sink", "data": {"count": 1}}],
            "edges": [{"from": "src.out", "to": "snk.in", "pattern": "pushpull"}]
        });
        if hosts {
            g["hosts"] =
                json!([{"name": "a", "address": "10.0.0.1"}, {"name": "b", "address": "10.0.0.2"}]);
            g["processes"] = json!([{"name": "p", "nodes": ["src"], "host": "a"},
                                    {"name": "q", "nodes": ["snk"], "host": "b"}]);
        }
        let f = write_json(d.path(), "g.json", &g);
        let o = Command::new(PTMP)
            .args(["graph", "check"])
            .arg(&f)
            .output()
            .unwrap();
        (o.status.code(), text(&o.stderr))
    };
    let (code, e) = check(json!(true), true);
    assert_ne!(code, Some(0));
    assert!(e.contains("key_dir") && e.contains("ptmp keys new"), "{e}");
    let (code, e) = check(json!({"key_dir": "/k"}), true);
    assert_eq!(code, Some(0), "{e}");
    let (code, e) = check(json!("yes"), false);
    assert_ne!(code, Some(0));
    assert!(e.contains("curve = \"yes\""), "{e}");
    let (code, e) = check(json!({"keydir": "/k"}), false);
    assert_ne!(code, Some(0));
    assert!(e.contains("curve.keydir: unknown key"), "{e}");
}
