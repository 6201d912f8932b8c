//! A graph's shm reader identities belong to its run: another receiver of
//! the same user that claims one while the graph's process restarts is
//! refused, moves nothing, and the restarted process resumes where its
//! predecessor stopped, with real processes throughout.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
use common::{finish, node_in, read_dump, status, text, wait_for, PTMP};

const LIMIT: Duration = Duration::from_secs(30);

/// The first object in `v` (a part's plan) that has a `shm_reader_id`.
fn reader_socket(v: &Value) -> Option<Value> {
    match v {
        Value::Object(o) if o.contains_key("shm_reader_id") => Some(v.clone()),
        Value::Object(o) => o.values().find_map(reader_socket),
        Value::Array(a) => a.iter().find_map(reader_socket),
        _ => None,
    }
}

fn graph(name: &str, n: u64, out: &Path) -> Value {
    json!({
        "name": name,
        "nodes": [
            {"name": "src", "type": "source", "data": {"count": n, "rate": 4000, "detid": 3}},
            {"name": "w", "type": "worker"},
            {"name": "snk", "type": "sink", "data": {"count": n, "ofile": out}}
        ],
        "edges": [
            {"from": "src.out", "to": "w.in", "pattern": "pushpull"},
            {"from": "w.out", "to": "snk.in", "pattern": "pushpull"}
        ],
        // A slow restart: the window in which the sink's place is free.
        "restart": {"max": 3, "backoff_ms": 4000}
    })
}

/// The sink of src -> w -> snk (shm, one process a node) is killed with
/// SIGKILL; while its restart waits, `ptmp recv` claims the sink's
/// identity on the same ring, as a user of the same account could. It is
/// refused, saying the identity is locked, and reads nothing; the
/// restarted sink ends with every set once, in order. (Before identities
/// were bound to their run, the intruder took the place over, read sets
/// and left, and the sink lost them.)
#[test]
fn a_receiver_outside_the_graph_cannot_take_a_graph_readers_place() {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    let out = d.path().join("out.dump");
    let n = 16_000u64;
    let name = format!("token-{}", std::process::id());
    let f = d.path().join("g.json");
    std::fs::write(&f, graph(&name, n, &out).to_string()).unwrap();
    let err = d.path().join("err");
    let sup = Command::new(PTMP)
        .args(["graph", "run"])
        .arg(&f)
        .arg("--run-dir")
        .arg(&rd)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    wait_for(LIMIT, "traffic at the sink", || {
        node_in(&rd, "snk", "snk").filter(|k| *k >= 500)
    });
    // The run's token is private to it.
    let token: PathBuf = rd.join("reader-token");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&token)
            .expect("the run has a reader token")
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    let plan: Value =
        serde_json::from_slice(&std::fs::read(rd.join("plan-snk.json")).unwrap()).unwrap();
    let sock = reader_socket(&plan).expect("the sink reads under an identity");
    let id = sock["shm_reader_id"].as_str().unwrap().to_string();
    let addr = sock["connect"][0].as_str().unwrap().to_string();
    assert!(addr.starts_with("shm://"), "{sock}");
    let pid = status(&rd, "snk").unwrap()["pid"].as_i64().unwrap() as i32;
    // SAFETY: kill sends a signal to a process this test's graph started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    wait_for(LIMIT, "the supervisor to see the kill", || {
        let e = std::fs::read_to_string(&err).unwrap_or_default();
        e.contains(&format!("(pid {pid}) killed by SIGKILL"))
            .then_some(())
    });
    let config = json!({"socket": {"type": "PULL", "connect": [addr], "shm_reader_id": id}});
    let intruder = Command::new(PTMP)
        .args(["recv", "--config"])
        .arg(config.to_string())
        .args(["-n", "100", "-T", "2s"])
        .output()
        .unwrap();
    let said = text(&intruder.stderr) + &text(&intruder.stdout);
    assert!(
        !intruder.status.success(),
        "the intruder was let in: {said}"
    );
    assert!(said.contains("locked"), "{said}");
    assert!(said.contains(&id), "{said}");
    // The source ends by itself; the sink, once it has every set. Were
    // any lost, it would wait for them: the graph is then stopped once the
    // sink's count stops moving.
    wait_for(Duration::from_secs(60), "the source's end", || {
        status(&rd, "src")
            .filter(|s| s["final"] == true)
            .map(|_| ())
    });
    let mut last = None;
    wait_for(LIMIT, "the sink to settle", || {
        let now = node_in(&rd, "snk", "snk");
        let settled = now == Some(n) || (now.is_some() && now == last);
        last = now;
        std::thread::sleep(Duration::from_millis(1000));
        settled.then_some(())
    });
    // SAFETY: kill sends SIGINT to the supervisor this test started.
    unsafe { libc::kill(sup.id() as i32, libc::SIGINT) };
    let o = finish(sup, LIMIT);
    let log = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(o.status.success(), "{log}");
    let counts: Vec<u64> = read_dump(&out).iter().map(|s| s.count as u64).collect();
    assert_eq!(counts.len() as u64, n, "{log}");
    assert!(counts.iter().copied().eq(0..n), "{log}");
}

/// A run directory whose token is not one (a file someone edited) stops
/// the graph before anything starts, naming the file and what to do.
#[test]
fn a_damaged_token_is_refused_before_anything_starts() {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    std::fs::create_dir(&rd).unwrap();
    std::fs::set_permissions(&rd, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    std::fs::write(rd.join("reader-token"), "not hex at all").unwrap();
    let f = d.path().join("g.json");
    let name = format!("token-bad-{}", std::process::id());
    std::fs::write(&f, graph(&name, 10, &d.path().join("out.dump")).to_string()).unwrap();
    let o = Command::new(PTMP)
        .args(["graph", "run"])
        .arg(&f)
        .arg("--run-dir")
        .arg(&rd)
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("reader-token") && err.contains("not a reader token"),
        "{err}"
    );
    assert!(!err.contains("started (pid"), "{err}");
}
