//! The conventions every subcommand shares, checked on the real program:
//! durations with units, one meaning per short option, log levels and JSON
//! log lines on standard error.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

mod common;
use common::{free_port, text, PTMP};

fn run(args: &[&str]) -> Output {
    Command::new(PTMP).args(args).output().expect("run ptmp")
}

#[test]
fn durations_take_units_and_bare_numbers_keep_their_old_unit() {
    // 300ms with a unit: recv gives up after about that, well before the
    // default second would have ended it if the unit were ignored... the
    // bound is generous, the point is that "300ms" is accepted and used.
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let t0 = Instant::now();
    let o = run(&[
        "recv", "-p", "PULL", "-a", "bind", "-e", &ep, "-n", "1", "-T", "300ms",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("ended by timeout"),
        "{}",
        text(&o.stdout)
    );
    assert!(t0.elapsed() < Duration::from_secs(30));

    // A bare number is milliseconds for -T, as in PTMP's check_recv.
    let o = run(&[
        "recv", "-p", "PULL", "-a", "bind", "-e", &ep, "-n", "1", "-T", "200",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));

    // A unit the parser does not know, and a word, are refused by name.
    let o = run(&["recv", "-p", "PULL", "-a", "bind", "-e", &ep, "-T", "5x"]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(
        e.contains("--timeout") && e.contains("unknown unit \"x\""),
        "{e}"
    );
    assert!(e.contains("a bare number is milliseconds"), "{e}");
    let o = run(&["send", "-p", "PUSH", "-e", &ep, "--linger", "soon"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("not a duration"),
        "{}",
        text(&o.stderr)
    );
    // Seconds where the option always took seconds, and a year at most.
    let o = run(&["top", "--shm", "--once", "--interval", "2y"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["run", "/nonexistent.json", "--ttl", "1e12"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("longer than a year"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_short_option_means_one_thing_everywhere() {
    // The whole command tree, with clap's own consistency checks: a short
    // letter is given one long name across every subcommand.
    let o = run(&["man"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let page = text(&o.stdout);
    let mut seen: std::collections::BTreeMap<String, String> = Default::default();
    let mut clashes = Vec::new();
    // Lines of the man page like `\fB\-n\fR, \fB\-\-ntpsets\fR`.
    for line in page.lines() {
        let l = line
            .replace("\\fB", "")
            .replace("\\fR", "")
            .replace("\\-", "-");
        let mut parts = l.split(", ");
        let (Some(short), Some(long)) = (parts.next(), parts.next()) else {
            continue;
        };
        if short.len() != 2 || !short.starts_with('-') || !long.starts_with("--") {
            continue;
        }
        let long = long.split(['=', ' ']).next().unwrap().to_string();
        // -h/--help and -V/--version are clap's own.
        if short == "-h" || long == "--version" {
            continue;
        }
        if let Some(other) = seen.insert(short.to_string(), long.clone()) {
            if !same_meaning(&other, &long) {
                clashes.push(format!(
                    "{short} is {other} in one place and {long} in another"
                ));
            }
        }
    }
    assert!(clashes.is_empty(), "{clashes:#?}");
    assert_eq!(
        seen.get("-d").map(String::as_str),
        Some("--detid"),
        "{seen:?}"
    );
    assert_eq!(
        seen.get("-v").map(String::as_str),
        Some("--verbose"),
        "{seen:?}"
    );
}

/// Long names that mean the same thing: a count of items is `-n` whatever
/// it counts, a message size `-m` whether one or a list.
fn same_meaning(a: &str, b: &str) -> bool {
    let alike: [&[&str]; 2] = [
        &["--ntpsets", "--number", "--iterations", "--count"],
        &["--size", "--sizes"],
    ];
    a == b || alike.iter().any(|g| g.contains(&a) && g.contains(&b))
}

#[test]
fn quiet_verbose_and_json_log_lines() {
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let send = |extra: &[&str]| {
        let mut args = vec!["send", "-p", "PUSH", "-a", "connect", "-e", &ep, "-n", "1"];
        args.extend_from_slice(&["--linger", "50ms"]);
        args.extend_from_slice(extra);
        run(&args)
    };
    // Default: the summary note and the error, as text.
    let o = send(&[]);
    assert_eq!(o.status.code(), Some(3));
    let e = text(&o.stderr);
    assert!(
        e.contains("sent 1 TPSets") && e.contains("ptmp: error:"),
        "{e}"
    );
    // -q: warnings and errors only; the note is gone, the error stays.
    let o = send(&["-q"]);
    assert_eq!(o.status.code(), Some(3));
    let e = text(&o.stderr);
    assert!(
        !e.contains("sent 1 TPSets") && e.contains("ptmp: error:"),
        "{e}"
    );
    // RUST_LOG takes over from -q.
    let o = Command::new(PTMP)
        .args([
            "-q", "send", "-p", "PUSH", "-a", "connect", "-e", &ep, "-n", "1",
        ])
        .args(["--linger", "50ms"])
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    assert!(
        text(&o.stderr).contains("sent 1 TPSets"),
        "{}",
        text(&o.stderr)
    );
    // JSON: every line of standard error is one object with a level and a
    // message; the error carries the exit status.
    let o = send(&["--log-format", "json"]);
    assert_eq!(o.status.code(), Some(3));
    let lines: Vec<serde_json::Value> = text(&o.stderr)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    assert!(lines.iter().any(
        |l| l["level"] == "INFO" && l["message"].as_str().unwrap().starts_with("sent 1 TPSets")
    ));
    let err = lines
        .iter()
        .find(|l| l["level"] == "ERROR")
        .expect("an error line");
    assert_eq!(err["exit"], 3);
    assert!(err["timestamp"].is_string());
    // -v and -q together make no sense and are refused.
    let o = send(&["-v", "-q"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn recv_prints_each_set_with_v() {
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let rx = common::spawn(&[
        "recv", "-v", "-p", "PULL", "-a", "bind", "-e", &ep, "-n", "3", "-T", "20s",
    ]);
    let tx = run(&[
        "send", "-p", "PUSH", "-a", "connect", "-e", &ep, "-n", "3", "--detid", "7",
    ]);
    assert!(tx.status.success(), "{}", text(&tx.stderr));
    let o = common::finish(rx, Duration::from_secs(60));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let per_set = text(&o.stdout)
        .lines()
        .filter(|l| l.contains("detid"))
        .count();
    assert!(per_set >= 3, "{}", text(&o.stdout));
}

fn json_of(o: &Output, what: &str) -> serde_json::Value {
    assert!(o.status.success(), "{what}: {}", text(&o.stderr));
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{what}: not one JSON document ({e}): {}", text(&o.stdout)))
}

/// `graph check --json` and `graph diff --json` describe the graph and the
/// change as documents a program can read: every process with its host
/// and nodes, every edge with its transport and bound addresses, every
/// change with its kind.
#[test]
fn graph_check_and_diff_answer_in_json() {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    let g1 = serde_json::json!({
        "name": "json-check",
        "nodes": [
            {"name": "src", "type": "source", "data": {"count": 10}},
            {"name": "snk", "type": "sink"}
        ],
        "edges": [{"from": "src.out", "to": "snk.in", "pattern": "pushpull"}]
    });
    let mut g2 = g1.clone();
    g2["nodes"][0]["data"]["count"] = 20.into();
    let nodes = g2["nodes"].as_array_mut().unwrap();
    nodes.push(serde_json::json!({"name": "src2", "type": "source", "data": {"count": 5}}));
    nodes.push(serde_json::json!({"name": "extra", "type": "sink"}));
    g2["edges"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"from": "src2.out", "to": "extra.in", "pattern": "pushpull"}));
    let (f1, f2) = (d.path().join("g1.json"), d.path().join("g2.json"));
    std::fs::write(&f1, g1.to_string()).unwrap();
    std::fs::write(&f2, g2.to_string()).unwrap();
    let rds = rd.to_str().unwrap();
    let v = json_of(
        &run(&[
            "graph",
            "check",
            f1.to_str().unwrap(),
            "--run-dir",
            rds,
            "--json",
        ]),
        "graph check --json",
    );
    assert_eq!(v["graph"], "json-check", "{v}");
    assert_eq!(v["valid"], true, "{v}");
    let procs = v["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 2, "{v}");
    assert!(procs.iter().all(|p| p["host"].is_string()), "{v}");
    let e = &v["edges"][0];
    assert_eq!(e["from"], serde_json::json!(["src.out"]), "{v}");
    assert_eq!(e["to"], serde_json::json!(["snk.in"]), "{v}");
    assert_eq!(e["pattern"], "pushpull", "{v}");
    assert_eq!(e["transport"], "shm", "{v}");
    assert!(
        e["binds"][0]["address"]
            .as_str()
            .unwrap()
            .starts_with("shm://"),
        "{v}"
    );

    let v = json_of(
        &run(&[
            "graph",
            "diff",
            f1.to_str().unwrap(),
            f2.to_str().unwrap(),
            "--run-dir",
            rds,
            "--json",
        ]),
        "graph diff --json",
    );
    assert_eq!(v["nothing_to_do"], false, "{v}");
    let change = |list: &str, name: &str| {
        v[list]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == name)
            .map(|i| i["change"].as_str().unwrap().to_string())
    };
    assert_eq!(change("nodes", "extra").as_deref(), Some("added"), "{v}");
    assert_eq!(change("nodes", "src").as_deref(), Some("replaced"), "{v}");
    assert_eq!(
        change("processes", "extra").as_deref(),
        Some("start"),
        "{v}"
    );
    assert_eq!(
        change("processes", "src").as_deref(),
        Some("restart"),
        "{v}"
    );
    assert_eq!(v["count"]["start"], 2, "{v}");
    // The text forms are unchanged.
    let o = run(&["graph", "check", f1.to_str().unwrap(), "--run-dir", rds]);
    assert!(text(&o.stdout).ends_with("valid\n"), "{}", text(&o.stdout));
}

/// `graph status --json` gives each part's status file as it is, and
/// `top --once --json` the frame's tables as rows of named, typed cells.
#[test]
fn graph_status_and_top_once_answer_in_json() {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    let g = serde_json::json!({
        "name": format!("json-status-{}", std::process::id()),
        "nodes": [
            {"name": "src", "type": "source", "data": {"count": 100000000, "rate": 1000}},
            {"name": "snk", "type": "sink"}
        ],
        "edges": [{"from": "src.out", "to": "snk.in", "pattern": "pushpull"}]
    });
    let f = d.path().join("g.json");
    std::fs::write(&f, g.to_string()).unwrap();
    let rds = rd.to_str().unwrap().to_string();
    let mut sup = Command::new(PTMP)
        .args([
            "graph",
            "run",
            f.to_str().unwrap(),
            "--run-dir",
            &rds,
            "--ttl",
            "60s",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    common::wait_for(Duration::from_secs(30), "traffic at the sink", || {
        common::node_in(&rd, "snk", "snk").filter(|n| *n > 10)
    });
    let v = json_of(
        &run(&[
            "graph",
            "status",
            f.to_str().unwrap(),
            "--run-dir",
            &rds,
            "--json",
        ]),
        "graph status --json",
    );
    let parts = v["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 2, "{v}");
    assert!(parts.iter().all(|p| p["pid"].as_u64().is_some()), "{v}");
    let v = json_of(
        &run(&["top", "--run-dir", &rds, "--once", "--json", "-i", "300ms"]),
        "top --once --json",
    );
    let nodes = v["tables"]["nodes"].as_array().unwrap();
    let snk = nodes
        .iter()
        .find(|n| n["node"] == "snk")
        .expect("the sink's row");
    assert_eq!(snk["type"], "sink", "{v}");
    assert!(snk["in"].as_u64().is_some_and(|n| n > 0), "{v}");
    assert!(snk["in_per_s"].is_number(), "{v}");
    assert!(snk["pid"].as_u64().is_some(), "{v}");
    assert!(
        v["tables"]["edges"]
            .as_array()
            .is_some_and(|e| e.len() == 1),
        "{v}"
    );
    // --json goes with --once only.
    let o = run(&["top", "--run-dir", &rds, "--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    // SAFETY: kill sends SIGINT to the supervisor this test started.
    unsafe { libc::kill(sup.id() as i32, libc::SIGINT) };
    let _ = sup.wait();
}
