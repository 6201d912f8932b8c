//! An ipc address naming a file that is not a socket: `ptmp recv` and
//! `ptmp send` binding it, and a graph pinning it (`graph check`, `graph
//! run`), are refused naming the path, and the file is left as it was. A
//! stale socket file (its process died) is still replaced by a bind.

use ptmp::{Receiver, Sender, TPSet};
use serde_json::json;
use std::path::Path;
use std::time::Duration;

mod common;
use common::{finish, spawn, text, write_graph};

const LIMIT: Duration = Duration::from_secs(30);

fn precious(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("notes.txt");
    std::fs::write(&p, "keep me\n").unwrap();
    p
}

#[test]
fn binding_over_a_regular_file_is_refused_naming_it() {
    let d = tempfile::tempdir().unwrap();
    let p = precious(d.path());
    let ep = format!("ipc://{}", p.display());
    for args in [
        [
            "recv", "-n", "1", "-p", "PULL", "-a", "bind", "-e", &ep, "-T", "500",
        ]
        .as_slice(),
        ["send", "-n", "1", "-p", "PUSH", "-a", "bind", "-e", &ep].as_slice(),
    ] {
        let cmd = args[0];
        let o = finish(spawn(args), LIMIT);
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {e}");
        assert!(
            e.contains(&p.display().to_string()) && e.contains("not a socket"),
            "{cmd}: {e}"
        );
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "keep me\n", "{cmd}");
    }
    // The library refuses it too (the C and Python front ends use it).
    let e = Receiver::from_json(&json!({"socket": {"type": "PULL", "bind": [ep]}}).to_string())
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("regular file"), "{e}");
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "keep me\n");
}

#[test]
fn a_graph_pinning_a_regular_file_is_refused_by_check_and_run() {
    let d = tempfile::tempdir().unwrap();
    let p = precious(d.path());
    let g = json!({
        "name": format!("ipcfile-{}", std::process::id()),
        "nodes": [
            {"name": "src", "type": "source", "data": {"count": 10}},
            {"name": "snk", "type": "sink", "data": {"count": 10}}
        ],
        "edges": [{"from": "src.out", "to": "snk.in", "pattern": "pushpull",
                   "address": format!("ipc://{}", p.display())}]
    });
    let f = write_graph(d.path(), &g);
    let (fs, rd) = (
        f.display().to_string(),
        d.path().join("run").display().to_string(),
    );
    for args in [
        vec!["graph", "check", fs.as_str()],
        vec![
            "graph",
            "run",
            fs.as_str(),
            "--run-dir",
            rd.as_str(),
            "--ttl",
            "20",
        ],
    ] {
        let o = finish(spawn(&args), LIMIT);
        let e = text(&o.stderr);
        assert!(!o.status.success(), "{args:?}: {e}");
        assert!(
            e.contains(&p.display().to_string()) && e.contains("not a socket"),
            "{args:?}: {e}"
        );
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "keep me\n",
            "{args:?}"
        );
    }
}

#[test]
fn a_stale_socket_file_is_still_replaced() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("stale.ipc");
    // A socket file whose listener is gone, as a killed process leaves it.
    drop(std::os::unix::net::UnixListener::bind(&p).unwrap());
    assert!(p.exists());
    let ep = format!("ipc://{}", p.display());
    let mut rx =
        Receiver::from_json(&json!({"socket": {"type": "PULL", "bind": [ep]}}).to_string())
            .unwrap();
    let mut tx =
        Sender::from_json(&json!({"socket": {"type": "PUSH", "connect": [ep]}}).to_string())
            .unwrap();
    tx.send(&TPSet {
        count: 7,
        ..Default::default()
    })
    .unwrap();
    let got = rx.recv(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(got.map(|s| s.count), Some(7));
}
