//! The `ptmp` command given hostile or unusual input, as real processes:
//! NUL in endpoints, deeply nested and endless configurations, undelivered
//! sends, wrong graph node types, a closed standard output, and the
//! Jsonnet helpers' defaults.

use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
use common::proc::{last_json, run, wait_listening, Proc};
use common::{free_port, text, PTMP};

/// A run config whose only agent binds `ep`.
fn run_config(ep: &str, ofile: &std::path::Path) -> Value {
    json!({"proxies": [{"name": "sink", "type": "czmqat", "data": {
        "input": {"socket": {"type": "PULL", "bind": [ep]}},
        "ofile": ofile.display().to_string()}}]})
}

#[test]
fn a_nul_in_an_endpoint_is_a_config_error_in_every_command() {
    let d = tempfile::tempdir().unwrap();
    let ep = "tcp://127.0.0.1\u{0}x:5000";
    let shown = r#""tcp://127.0.0.1\u0000x:5000""#;
    let rc = d.path().join("nul.json");
    std::fs::write(&rc, run_config(ep, &d.path().join("o.dump")).to_string()).unwrap();
    let rcs = rc.to_str().unwrap();
    let g = d.path().join("nul-graph.json");
    std::fs::write(
        &g,
        json!({"nodes": [{"name": "src", "type": "source"}, {"name": "snk", "type": "sink"}],
               "edges": [{"from": "src.out", "to": "snk.in", "pattern": "pushpull",
                          "address": ep}]})
        .to_string(),
    )
    .unwrap();
    let rd = d.path().join("run");
    let sock = json!({"socket": {"type": "PUSH", "connect": [ep]}}).to_string();
    for args in [
        vec!["run", "--check", rcs],
        vec!["run", rcs],
        vec!["send", "-n", "1", "--config", &sock],
        vec![
            "graph",
            "check",
            g.to_str().unwrap(),
            "--run-dir",
            rd.to_str().unwrap(),
        ],
    ] {
        let o = run(&args);
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(shown) && e.contains("NUL byte"), "{args:?}: {e}");
        assert!(!e.contains("panicked"), "{args:?}: {e}");
    }
    let e = text(&run(&["run", "--check", rcs]).stderr);
    assert!(e.contains("input") && e.contains("socket.bind[0]"), "{e}");
    // A plugin library name goes to the dynamic loader as a C string too
    // (a trailing NUL was taken as the string's end and the name loaded).
    let mut v = run_config("inproc://p", &d.path().join("o.dump"));
    v["plugins"] = json!(["libm.so.6\u{0}"]);
    let pc = d.path().join("plugin-nul.json");
    std::fs::write(&pc, v.to_string()).unwrap();
    let o = run(&["run", "--check", pc.to_str().unwrap()]);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains(r#""libm.so.6\u0000""#) && e.contains("NUL byte"),
        "{e}"
    );
}

/// `[[[...]]]` nested `n` deep as the value of `key`.
fn deep(key: &str, n: usize) -> String {
    format!("{{\"{key}\": {}{}}}", "[".repeat(n), "]".repeat(n))
}

#[test]
fn deeply_nested_configs_are_refused_naming_the_limit() {
    let d = tempfile::tempdir().unwrap();
    let mut files = vec![];
    for (name, text) in [
        ("deep.json", deep("proxies", 100_000)),
        ("deep.jsonnet", deep("proxies", 100_000)),
        // Built by evaluation, not written out: deep only once manifested.
        (
            "built.jsonnet",
            "{proxies: std.foldl(function(a, _) [a], std.range(1, 100000), [])}".into(),
        ),
        // One level over: the outer object is a level too.
        ("just-over.json", deep("proxies", 127)),
    ] {
        let f = d.path().join(name);
        std::fs::write(&f, text).unwrap();
        files.push(f);
    }
    let rd = d.path().join("run");
    for f in &files {
        let f = f.to_str().unwrap();
        for args in [
            vec!["run", "--check", f],
            vec!["run", f],
            vec!["graph", "check", f, "--run-dir", rd.to_str().unwrap()],
            vec!["graph", "run", f, "--run-dir", rd.to_str().unwrap()],
        ] {
            let o = run(&args);
            let e = text(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
            assert!(e.contains("limit"), "{args:?}: {e}");
            assert!(e.lines().count() < 5, "{args:?}: a short message: {e}");
        }
    }
    let sock = d.path().join("deep-socket.json");
    std::fs::write(&sock, deep("socket", 100_000)).unwrap();
    let at_sock = format!("@{}", sock.display());
    let o = run(&["send", "-n", "1", "--config", &at_sock]);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("nested deeper than 127 levels"), "{e}");
    // At the limit a config still parses (and fails later for its content).
    let f = d.path().join("deepest-allowed.json");
    std::fs::write(&f, deep("proxies", 126)).unwrap();
    let e = text(&run(&["run", "--check", f.to_str().unwrap()]).stderr);
    assert!(!e.contains("the limit"), "{e}");
    assert!(e.contains("a proxy must be an object"), "{e}");
}

/// A Jsonnet config that computes for far longer than any test (2^60 calls,
/// never deeper than 60).
const ENDLESS: &str = "local f(n) = if n == 0 then 0 else f(n - 1) + f(n - 1); {ttl: f(60)}";

#[test]
fn an_endless_jsonnet_evaluation_stops_on_sigint_and_sigterm() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("endless.jsonnet");
    std::fs::write(&f, ENDLESS).unwrap();
    for (sig, args) in [
        ("-INT", vec!["run", f.to_str().unwrap()]),
        ("-TERM", vec!["run", "--check", f.to_str().unwrap()]),
        ("-INT", vec!["graph", "check", f.to_str().unwrap()]),
    ] {
        let p = Proc::spawn(&args);
        p.wait_catching(libc::SIGINT);
        p.wait_catching(libc::SIGTERM);
        let pid = p.0.as_ref().unwrap().id().to_string();
        assert!(Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success());
        let o = p.finish(Duration::from_secs(20));
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{sig} {args:?}: {e}");
        assert!(e.contains("interrupted"), "{sig} {args:?}: {e}");
    }
}

#[test]
fn config_timeout_ends_a_long_jsonnet_evaluation() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("endless.jsonnet");
    std::fs::write(&f, ENDLESS).unwrap();
    let f = f.to_str().unwrap();
    for args in [
        vec!["run", "--config-timeout", "0.5", f],
        vec!["graph", "check", "--config-timeout", "0.5", f],
    ] {
        let o = Proc::spawn(&args).finish(Duration::from_secs(20));
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains("time limit of 0.5 s"), "{args:?}: {e}");
    }
    let o = run(&["run", "--config-timeout", "0", f]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

#[test]
fn send_reports_undelivered_messages_and_fails() {
    // A PUSH that connects where nobody listens: nothing can leave.
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let o = run(&[
        "send", "-n", "10", "-p", "PUSH", "-a", "connect", "-e", &ep, "--linger", "300", "--json",
    ]);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{e}");
    assert!(e.contains("undelivered: 10"), "{e}");
    assert!(e.contains("10 of 10 TPSets not delivered"), "{e}");
    let j = last_json(&o);
    assert_eq!(
        (
            j["sent"].clone(),
            j["undelivered"].clone(),
            j["undelivered_is"].clone()
        ),
        (json!(10), json!(10), json!("exact")),
        "{j}"
    );
    // A PUSH that binds with nobody connecting blocks, and still stops on
    // a signal, reporting what it sent.
    let ep2 = format!("tcp://127.0.0.1:{}", free_port());
    let p = Proc::spawn(&["send", "-n", "10", "-p", "PUSH", "-e", &ep2, "--json"]);
    wait_listening(&ep2);
    p.wait_catching(libc::SIGINT);
    let pid = p.0.as_ref().unwrap().id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let o = p.finish(Duration::from_secs(20));
    let j = last_json(&o);
    assert_eq!(j["sent"], json!(0), "{j}");
    // With a listener, everything is delivered.
    let rx = Proc::spawn(&[
        "recv", "-n", "10", "-p", "PULL", "-a", "bind", "-e", &ep, "-T", "10000", "--json",
    ]);
    wait_listening(&ep);
    let o = run(&[
        "send", "-n", "10", "-p", "PUSH", "-a", "connect", "-e", &ep, "--json",
    ]);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert!(e.contains("undelivered: 0"), "{e}");
    let j = last_json(&o);
    assert_eq!(
        (j["undelivered"].clone(), j["undelivered_is"].clone()),
        (json!(0), json!("exact")),
        "{j}"
    );
    let r = last_json(&rx.finish(Duration::from_secs(20)));
    assert_eq!(r["received"], json!(10), "{r}");
}

/// An unknown node type is refused with the list of types a graph takes,
/// which leaves out the agents that cannot be nodes; naming one of those
/// says why and points to `ptmp run`.
#[test]
fn graph_node_type_errors_list_only_what_graphs_take() {
    let d = tempfile::tempdir().unwrap();
    let check = |t: &str| {
        let g = d.path().join(format!("{t}.json"));
        let v = json!({"name": "g", "nodes": [{"name": "a", "type": t}], "edges": []});
        std::fs::write(&g, v.to_string()).unwrap();
        let o = run(&["graph", "check", g.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{t}");
        text(&o.stderr)
    };
    let e = check("bogus");
    assert!(e.contains("unknown node type; graphs take: "), "{e}");
    let list = e.split("graphs take: ").nth(1).unwrap_or_default();
    for t in [
        "source", "sink", "worker", "proxy", "window", "zipper", "filter",
    ] {
        assert!(list.contains(t), "{t} missing: {e}");
    }
    for t in ["monitor", "composer", "stats_graphite"] {
        assert!(!list.contains(t), "{t} listed: {e}");
    }
    for t in ["stats_graphite", "monitor", "composer"] {
        let e = check(t);
        assert!(
            e.contains("cannot be a graph node") && e.contains("ptmp run"),
            "{t}: {e}"
        );
    }
}

/// A reader that closes stdout early (`ptmp ... | head -1`) ends the
/// command quietly: exit 0, no "Broken pipe" and no panic, as `ptmp cat`.
#[test]
fn closed_stdout_ends_quietly() {
    let butterfly = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/butterfly.jsonnet"
    );
    let chain = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/chain.jsonnet");
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run").display().to_string();
    let big = ["--tla-code", "c1=100", "--tla-code", "c2=100"];
    let cases: Vec<Vec<&str>> = vec![
        [
            &["graph", "check", butterfly, "--run-dir", &rd][..],
            &big[..],
        ]
        .concat(),
        [&["graph", "dot", butterfly][..], &big[..]].concat(),
        vec!["run", chain, "--check"],
        vec!["run", chain, "--dump"],
        vec!["shm", "ls"],
        vec![
            "recv",
            "-n",
            "1",
            "-p",
            "PULL",
            "-a",
            "bind",
            "-e",
            "inproc://x",
            "-T",
            "300",
        ],
    ];
    for args in cases {
        let mut c = Command::new(PTMP)
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Close the reading end at once: every write the command makes
        // to stdout then fails with EPIPE.
        drop(c.stdout.take());
        let o = c.wait_with_output().unwrap();
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {e}");
        assert!(
            !e.contains("Broken pipe") && !e.contains("panicked"),
            "{args:?}: {e}"
        );
    }
}

/// The Jsonnet helpers fill in the same defaults the agents use and
/// docs/agents.md states (so leaving an argument out changes nothing).
#[test]
fn jsonnet_helper_defaults_match_the_agents_and_the_docs() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("defaults.jsonnet");
    std::fs::write(
        &f,
        r#"local ptmp = import 'ptmp.libsonnet';
ptmp.ptmper([
  ptmp.zipper('z', ptmp.pull('inproc://a'), ptmp.push_bind('inproc://b')),
  ptmp.window('w', ptmp.pull('inproc://c'), ptmp.push_bind('inproc://d'), tspan=5),
  ptmp.stats('s', ptmp.pull('inproc://e'), ptmp.push_bind('inproc://f')),
  ptmp.replay('r', ptmp.pull('inproc://g'), ptmp.push_bind('inproc://h')),
])"#,
    )
    .unwrap();
    let o = run(&["run", f.to_str().unwrap(), "--dump"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((&v["ttl"], &v["snooze"]), (&json!(-1), &json!(1000)), "{v}");
    let data = |i: usize| v["proxies"][i]["data"].clone();
    let z = data(0);
    assert_eq!(
        (&z["sync_time"], &z["tardy_policy"]),
        (&json!(10), &json!("drop"))
    );
    assert_eq!(z["input"]["socket"]["hwm"], 1000);
    let w = data(1);
    assert_eq!(
        (&w["tbuf"], &w["toffset"], &w["detid"]),
        (&json!(0), &json!(0), &json!(-1))
    );
    let s = data(2);
    assert_eq!(s["topkey"], "tpsets");
    assert_eq!(
        (
            &s["link_integration_time"],
            &s["chan_integration_time"],
            &s["tick_per_us"]
        ),
        (&json!(1000), &json!(10000), &json!(50))
    );
    assert_eq!(data(3)["speed"], 50);
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/agents.md"))
            .unwrap();
    for said in [
        "`sync_time` ms (10;",
        "`toffset` (0)",
        "`detid` (-1: first input's)",
        "`topkey` (tpsets)",
        "`link_integration_time` ms (1000)",
        "`chan_integration_time` ms (10000)",
        "`tick_per_us` (50",
        "`speed` ticks/us (50)",
    ] {
        assert!(docs.contains(said), "docs/agents.md lacks {said:?}");
    }
}
