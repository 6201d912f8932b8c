//! `ptmp top` as a person uses it: in a terminal (a detached tmux session
//! of fixed size, read with capture-pane, keys sent with send-keys) against
//! a real running graph (one of whose processes is killed and restarted)
//! and real shm writers and readers; and from a
//! script (`--once`) against run directories holding bad files.
//!
//! The terminal tests need tmux (Debian package `tmux`); without it they
//! print that they were skipped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::PTMP;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn have_tmux() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A tmux server of our own (its own socket), with one session running a
/// plain shell; killed when dropped.
struct Tmux {
    socket: String,
}

const PROMPT: &str = "top-test$";

impl Tmux {
    fn start(tag: &str) -> Tmux {
        let t = Tmux {
            socket: format!("ptmp-top-{tag}-{}", std::process::id()),
        };
        let ok = t
            .cmd(&[
                "new-session",
                "-d",
                "-s",
                "main",
                "-x",
                "160",
                "-y",
                "48",
                &format!("env PS1='{PROMPT} ' bash --norc --noprofile"),
            ])
            .status
            .success();
        assert!(ok, "tmux new-session failed");
        t.wait_for("the shell's prompt", Duration::from_secs(10), |p| {
            p.contains(PROMPT)
        });
        t
    }

    fn cmd(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux")
    }

    /// Type a line into the shell.
    fn type_line(&self, line: &str) {
        assert!(self
            .cmd(&["send-keys", "-t", "main", "-l", line])
            .status
            .success());
        assert!(self
            .cmd(&["send-keys", "-t", "main", "Enter"])
            .status
            .success());
    }

    fn key(&self, k: &str) {
        assert!(self.cmd(&["send-keys", "-t", "main", k]).status.success());
    }

    /// What the pane shows now.
    fn pane(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", "main"]).stdout)
            .into_owned()
    }

    /// The program running in the pane's foreground.
    fn current_command(&self) -> String {
        String::from_utf8_lossy(
            &self
                .cmd(&["display", "-p", "-t", "main", "#{pane_current_command}"])
                .stdout,
        )
        .trim()
        .to_string()
    }

    /// Capture until `ok` holds, at most `limit`; the last capture.
    fn wait_for(&self, what: &str, limit: Duration, ok: impl Fn(&str) -> bool) -> String {
        let t = Instant::now();
        loop {
            let p = self.pane();
            if ok(&p) {
                return p;
            }
            assert!(
                t.elapsed() < limit,
                "waited {limit:?} for {what}; the pane shows:\n{p}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `key` (`q` or Ctrl-C) ends the view: the shell is in the foreground
    /// again, with its prompt on the main screen.
    fn quit_and_check(&self, key: &str) {
        self.key(key);
        let t = Instant::now();
        while self.current_command() != "bash" {
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "ptmp top still runs 5 s after {key} ({}); pane:\n{}",
                self.current_command(),
                self.pane()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let p = self.wait_for("the prompt again", Duration::from_secs(5), |p| {
            p.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| l.trim() == PROMPT)
        });
        assert!(
            !p.contains("NODE") && !p.contains("CHANNEL"),
            "the view's screen is gone after {key}:\n{p}"
        );
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

/// A child process stopped (SIGCONT first, in case it is stopped, then
/// SIGKILL) and reaped when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let pid = self.0.id() as i32;
        // SAFETY: kill(2) on our own unreaped child: its pid cannot have
        // been reused.
        unsafe {
            libc::kill(pid, libc::SIGCONT);
            libc::kill(pid, libc::SIGKILL);
        }
        let _ = self.0.wait();
    }
}

fn signal(c: &Child, sig: i32) {
    // SAFETY: kill(2) on our own unreaped child.
    let rc = unsafe { libc::kill(c.id() as i32, sig) };
    assert_eq!(rc, 0, "kill {sig}");
}

/// Rows of the table that starts with the heading `head` (up to the next
/// blank line), split into cells by runs of spaces.
fn rows<'a>(pane: &'a str, head: &str) -> Vec<Vec<&'a str>> {
    pane.lines()
        .skip_while(|l| !l.starts_with(head))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect()
}

const NODES: [&str; 7] = ["link1", "link2", "win1", "win2", "zip", "tcs", "sink"];

#[test]
fn top_follows_a_running_graph_in_a_terminal() {
    if !have_tmux() {
        common::missing_part(
            "tmux is not installed (Debian package tmux); `ptmp top` was not tested in a terminal",
        );
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let run_dir = d.path().join("run");
    let shm = d.path().join("shm");
    std::fs::create_dir(&shm).unwrap();
    let tmux = Tmux::start("graph");
    // The view starts before the graph: it says so, and waits for it.
    tmux.type_line(&format!(
        "PTMP_SHM_DIR={} {PTMP} top --run-dir {}",
        shm.display(),
        run_dir.display()
    ));
    tmux.wait_for("the missing run directory", Duration::from_secs(10), |p| {
        p.contains("no run directory")
    });
    assert_ne!(tmux.current_command(), "bash", "top keeps running");
    let graph = Proc(
        Command::new(PTMP)
            .args(["graph", "run"])
            .arg(repo().join("examples/chain-graph.jsonnet"))
            .args(["--run-dir"])
            .arg(&run_dir)
            .args([
                "--tla-code",
                "n=1000000",
                "--tla-code",
                "rate=300",
                "--ttl",
                "60",
            ])
            .current_dir(d.path())
            .env("PTMP_SHM_DIR", &shm)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Frames until every node is listed and some node's rate has changed
    // from one frame to the next.
    let t = Instant::now();
    let mut last: Option<Vec<(String, String)>> = None;
    let mut changed = None;
    let mut frames = 0;
    let pane = loop {
        let p = tmux.pane();
        let nodes = rows(&p, "NODE");
        let listed = NODES
            .iter()
            .all(|n| nodes.iter().any(|r| r.first() == Some(n)));
        if listed && p.contains("EDGE") {
            frames += 1;
            // NODE TYPE PROCESS PID STATE RESTARTS IN IN/S OUT OUT/S ...
            let rates: Vec<(String, String)> = nodes
                .iter()
                .filter(|r| r.len() >= 10)
                .map(|r| (r[0].to_string(), format!("{} {}", r[7], r[9])))
                .collect();
            if let Some(prev) = &last {
                if let Some((n, r)) = rates
                    .iter()
                    .find(|x| prev.iter().any(|y| y.0 == x.0 && y.1 != x.1))
                {
                    changed = Some(format!("{n}: {r}"));
                }
            }
            last = Some(rates);
            if changed.is_some() {
                break p;
            }
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "after 20 s: every node listed: {listed}, rate changes seen: none; pane:\n{p}"
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    eprintln!(
        "rate changed ({}) within {frames} captures:\n{pane}",
        changed.unwrap()
    );
    // Every node running, no restart; every edge listed with its transport.
    for r in rows(&pane, "NODE") {
        assert_eq!(r[4], "running", "{r:?} in\n{pane}");
        assert_eq!(r[5], "0", "{r:?} in\n{pane}");
    }
    let edges = rows(&pane, "EDGE");
    assert_eq!(edges.len(), 5, "five edges in\n{pane}");
    for e in [
        "link1 -> win1",
        "link2 -> win2",
        "win1,win2 -> zip",
        "zip -> tcs",
        "tcs -> sink",
    ] {
        assert!(pane.contains(e), "edge {e} in\n{pane}");
    }
    // Nothing holds a sender back at 300 TPSets/s: every edge's STALLS
    // (third from the end, before P99 US and ADDRESS) is 0.
    assert!(
        pane.lines().any(|l| l.starts_with("EDGE")
            && l.split_whitespace()
                .collect::<Vec<_>>()
                .ends_with(&["LOST", "STALLS", "P99", "US", "ADDRESS"])),
        "{pane}"
    );
    for r in &edges {
        assert_eq!(r[r.len() - 3], "0", "STALLS of {r:?} in\n{pane}");
    }
    // A process killed: the supervisor restarts it, and the view shows the
    // restart and the new pid.
    let win1 = |p: &str| {
        rows(p, "NODE")
            .into_iter()
            .find(|r| r[0] == "win1")
            .map(|r| r.iter().map(|c| c.to_string()).collect::<Vec<_>>())
    };
    let old = win1(&pane).unwrap();
    let pid: i32 = old[3].parse().unwrap();
    // SAFETY: kill(2) on a pid the view shows for a part of our graph,
    // still running (its row said so).
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let p = tmux.wait_for("win1 restarted", Duration::from_secs(20), |p| {
        win1(p).is_some_and(|r| r[5] == "1" && r[4] == "running" && r[3] != old[3])
    });
    eprintln!("after SIGKILL of win1 (pid {pid}):\n{p}");
    tmux.quit_and_check("q");
    // The graph stops as on Ctrl-C, cleaning up its rings and sockets.
    let mut graph = graph;
    signal(&graph.0, libc::SIGINT);
    let t = Instant::now();
    while graph.0.try_wait().unwrap().is_none() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the graph did not stop on SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn top_shm_shows_the_writer_and_a_lagging_reader() {
    if !have_tmux() {
        common::missing_part("tmux is not installed (Debian package tmux); `ptmp top --shm` was not tested in a terminal");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let shm = d.path().join("shm");
    std::fs::create_dir(&shm).unwrap();
    let chan = format!("toptest-{}", std::process::id());
    let ep = format!("shm://{chan}");
    let ptmp = |args: &[&str]| {
        Proc(
            Command::new(PTMP)
                .args(args)
                .env("PTMP_SHM_DIR", &shm)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let writer = ptmp(&[
        "send",
        "-p",
        "PUB",
        "-e",
        &ep,
        "-n",
        "100000000",
        "-r",
        "1000",
    ]);
    let t = Instant::now();
    while !shm.join(format!("ptmp.{chan}")).exists() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the writer made no channel"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let recv = [
        "recv",
        "-p",
        "SUB",
        "-a",
        "connect",
        "-e",
        &ep,
        "-n",
        "100000000",
        "-T",
        "-1",
    ];
    let keeping_up = ptmp(&recv);
    let lagging = ptmp(&recv);
    let tmux = Tmux::start("shm");
    tmux.type_line(&format!(
        "PTMP_SHM_DIR={} {PTMP} top --shm {chan}",
        shm.display()
    ));
    let reader_row = |p: &str, pid: u32| -> Option<Vec<String>> {
        p.lines()
            .find(|l| {
                l.trim_start().starts_with(&format!("reader {pid} "))
                    || l.trim_end().ends_with(&format!("reader {pid}"))
            })
            .map(|l| l.split_whitespace().map(String::from).collect())
    };
    // Both readers registered, the channel's rate shown.
    let p = tmux.wait_for("both readers and a rate", Duration::from_secs(15), |p| {
        reader_row(p, keeping_up.0.id()).is_some()
            && reader_row(p, lagging.0.id()).is_some()
            && rows(p, "CHANNEL")
                .first()
                .is_some_and(|r| r.len() >= 6 && r[5].parse::<f64>().is_ok_and(|x| x > 0.0))
    });
    let chan_row = &rows(&p, "CHANNEL")[0];
    assert_eq!(chan_row[0], chan, "{p}");
    assert_eq!(chan_row[1], "pub", "{p}");
    assert_eq!(
        chan_row[3],
        writer.0.id().to_string(),
        "the writer's pid in\n{p}"
    );
    let slots: u64 = chan_row[2].parse().unwrap();
    // Stop one reader: it falls behind, then past a whole ring, whose
    // messages it has lost; the other keeps up.
    signal(&lagging.0, libc::SIGSTOP);
    let behind = |p: &str, pid: u32| -> Option<(u64, u64)> {
        // reader PID MESSAGES RATE BEHIND LOST
        let r = reader_row(p, pid)?;
        Some((r.get(4)?.parse().ok()?, r.get(5)?.parse().ok()?))
    };
    let p = tmux.wait_for(
        "the stopped reader a ring behind",
        Duration::from_secs(15),
        |p| behind(p, lagging.0.id()).is_some_and(|(b, lost)| b > slots && lost > 0),
    );
    let (b_lag, lost_lag) = behind(&p, lagging.0.id()).unwrap();
    let (b_ok, lost_ok) = behind(&p, keeping_up.0.id()).unwrap_or_else(|| panic!("{p}"));
    assert_eq!(
        lost_lag,
        b_lag - slots,
        "lost: what the ring no longer holds\n{p}"
    );
    assert!(
        b_ok < slots && lost_ok == 0,
        "the running reader keeps up:\n{p}"
    );
    // It keeps falling behind from frame to frame.
    let p2 = tmux.wait_for("the lag growing", Duration::from_secs(10), |p| {
        behind(p, lagging.0.id()).is_some_and(|(b, _)| b > b_lag)
    });
    eprintln!("{p2}");
    tmux.quit_and_check("C-c");
    drop((writer, keeping_up, lagging));
}

fn top_once(args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(PTMP)
        .arg("top")
        .args(args)
        .args(["--once", "--interval", "0.1"])
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn once_on_a_missing_run_directory_says_so() {
    let d = tempfile::tempdir().unwrap();
    let gone = d.path().join("nothing-here");
    let (code, out, err) = top_once(&["--run-dir", gone.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("no run directory") && err.contains("nothing-here"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    // A name with no run directory, and no name at all.
    let (code, _, err) = top_once(&["no-such-graph-name-xyz"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("ptmp-graph-no-such-graph-name-xyz"), "{err}");
    let (code, _, err) = top_once(&[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("say which graph"), "{err}");
}

#[test]
fn once_shows_bad_and_vanished_status_as_messages() {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path();
    std::fs::create_dir(rd.join("status")).unwrap();
    let plan = |p: &str, node: &str, data: serde_json::Value| {
        let v = serde_json::json!({"graph": "g", "process": p, "run_dir": rd,
            "config": {"proxies": [{"name": node, "type": "window", "data": data}]}});
        std::fs::write(rd.join(format!("plan-{p}.json")), v.to_string()).unwrap();
    };
    let sock = |t: &str, a: &str| serde_json::json!({"socket": {"type": t, "connect": [a]}});
    plan(
        "pa",
        "a",
        serde_json::json!({"output": sock("PUSH", "ipc:///nowhere/e0")}),
    );
    plan(
        "pb",
        "b",
        serde_json::json!({"input": sock("PULL", "ipc:///nowhere/e0")}),
    );
    plan("pc", "c", serde_json::json!({}));
    // A process that ended without a word: its pid is a reaped child's.
    let mut c = Command::new("true").spawn().unwrap();
    let dead = c.id();
    c.wait().unwrap();
    let now_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    let status = serde_json::json!({"graph": "g", "process": "pa", "pid": dead,
        "time_us": now_us, "final": false,
        "nodes": [{"name": "a", "in": 0, "out": 70, "in_rate": 0.0, "out_rate": 12.5, "ended": false}]});
    std::fs::write(rd.join("status/pa.json"), status.to_string()).unwrap();
    // Half a file, and a file that is JSON but no status document.
    std::fs::write(rd.join("status/pb.json"), "{\"graph\": \"g\", \"nodes\": [").unwrap();
    std::fs::write(rd.join("status/pc.json"), "[1, 2]").unwrap();
    std::fs::write(rd.join("processes.json"), "\u{0}\u{1}garbage").unwrap();
    // A plan cut short, and one of the wrong shape throughout.
    std::fs::write(rd.join("plan-pd.json"), "{\"config\": {\"proxies\": [").unwrap();
    std::fs::write(
        rd.join("plan-pe.json"),
        r#"{"process": 7, "config": {"proxies": [{"name": ["x"], "data": {"out": {"socket": "shm"}, "in": {"socket": {"type": 3, "bind": "shm"}}}}, 5]}}"#,
    )
    .unwrap();
    let (code, out, err) = top_once(&[rd.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}{err}");
    let nodes = rows(&out, "NODE");
    let a = nodes
        .iter()
        .find(|r| r[0] == "a")
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(a[4], "gone", "a dead pid's node:\n{out}");
    assert_eq!(a[8], "70", "{out}");
    assert_eq!(a[9], "12.5", "{out}");
    for n in ["b", "c"] {
        let r = nodes
            .iter()
            .find(|r| r[0] == n)
            .unwrap_or_else(|| panic!("{out}"));
        assert_eq!(r[4..6], ["no", "status"], "{out}");
    }
    assert!(
        out.contains("a -> b") && out.contains("ipc:///nowhere/e0"),
        "{out}"
    );
    assert!(out.contains("pb.json: not JSON"), "{out}");
    assert!(
        out.contains("pc.json: not a process status document"),
        "{out}"
    );
    assert!(out.contains("processes.json: not JSON"), "{out}");
    assert!(out.contains("plan-pd.json: not JSON"), "{out}");
    assert!(!err.contains("panicked"), "{err}");
}

/// A directory holding one run directory per host (as `graph run --slurm
/// --run-dir D` lays them out, `D/HOST`) is shown whole: a table of the
/// hosts, and every host's nodes in one node table. Two real parts of a
/// two-host graph run here, each with its own supervisor.
#[test]
fn once_shows_every_hosts_part_of_a_run_dir_per_host() {
    let d = tempfile::tempdir().unwrap();
    let base = d.path().join("run");
    let g = serde_json::json!({
        "name": "topacross",
        "hosts": [{"name": "a", "address": "127.0.0.1"}, {"name": "b", "address": "127.0.0.1"}],
        "port_base": 24720,
        "nodes": [
            {"name": "src", "type": "source", "data": {"rate": 200}},
            {"name": "snk", "type": "sink"}
        ],
        "edges": [{"from": "src.out", "to": "snk.in", "pattern": "pushpull"}],
        "processes": [
            {"name": "front", "host": "a", "nodes": ["src"]},
            {"name": "back", "host": "b", "nodes": ["snk"]}
        ]
    });
    let f = d.path().join("topacross.json");
    std::fs::write(&f, g.to_string()).unwrap();
    let part = |host: &str| {
        Proc(
            Command::new(PTMP)
                .args(["graph", "run"])
                .arg(&f)
                .args(["--host", host, "--ttl", "60", "--run-dir"])
                .arg(base.join(host))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let _parts = [part("b"), part("a")];
    let t0 = Instant::now();
    let frame = loop {
        let (code, out, err) = top_once(&[base.to_str().unwrap(), "--json"]);
        if code == Some(0) {
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            let running = v["tables"]["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|r| r["state"] == "running" && r["out"].as_u64() > Some(0))
                .count();
            if running == 1 && v["tables"]["hosts"].as_array().map(Vec::len) == Some(2) {
                break v;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "both parts not shown running: {out}{err}"
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    let hosts = frame["tables"]["hosts"].as_array().unwrap();
    for (row, name) in hosts.iter().zip(["a", "b"]) {
        assert_eq!(row["host"], name, "{frame}");
        assert_eq!(row["processes"], 1, "{frame}");
        assert_eq!(row["state"], "running", "{frame}");
        assert!(row["supervisor"].as_u64().is_some(), "{frame}");
    }
    let nodes: Vec<&str> = frame["tables"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["node"].as_str().unwrap())
        .collect();
    assert_eq!(nodes, ["src", "snk"], "{frame}");
    assert!(frame["heading"].to_string().contains("2 hosts"), "{frame}");
}
