//! `ptmp graph apply` and `ptmp graph diff` with real processes: a running
//! graph has its worker replaced (over shm, and over ipc with the inputs
//! binding), nodes added and removed; the sinks' dump files show that
//! nothing was lost on the unchanged paths nor on the replaced one, and the
//! unchanged processes keep their pids. Bad applies are refused with a
//! clear message and leave the running graph as it was.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

mod common;
use common::{finish, node_in, read_dump, status, text, wait_for, write_json, PTMP};

const LIMIT: Duration = Duration::from_secs(40);

/// A running supervisor, stopped with SIGINT (then killed) if a test
/// fails while it runs, so no graph outlives its test.
struct Sup(Option<Child>);

impl Sup {
    fn id(&self) -> u32 {
        self.0.as_ref().map_or(0, Child::id)
    }
    /// Wait until the sink of the graph in `run_dir` has taken in 500 sets;
    /// a graph that ends first fails the test at once, with its logs (in
    /// `dir`, tagged "run").
    fn wait_for_traffic(&mut self, run_dir: &Path, dir: &Path) {
        let t0 = std::time::Instant::now();
        while node_in(run_dir, "snk", "snk").is_none_or(|n| n < 500) {
            let ended = self.0.as_mut().unwrap().try_wait().unwrap();
            assert!(
                ended.is_none() && t0.elapsed() < LIMIT,
                "no traffic at the sink (graph {ended:?})\n{}",
                logs(dir, "run")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Wait for the supervisor to end by itself.
    fn finish(mut self) -> Output {
        finish(self.0.take().unwrap(), LIMIT)
    }
}

impl Drop for Sup {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            // SAFETY: kill only sends a signal to the supervisor this test
            // started and has not reaped; it touches no memory.
            unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
            let t = std::time::Instant::now();
            while c.try_wait().ok().flatten().is_none() && t.elapsed() < LIMIT {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Start `ptmp graph run FILE --run-dir DIR`, its stdout and stderr
/// going to files in `dir` named after `tag`.
fn run(file: &Path, run_dir: &Path, dir: &Path, tag: &str) -> Sup {
    let c = Command::new(PTMP)
        .args(["graph", "run"])
        .arg(file)
        .arg("--run-dir")
        .arg(run_dir)
        .stdout(std::fs::File::create(dir.join(format!("{tag}.out"))).unwrap())
        .stderr(std::fs::File::create(dir.join(format!("{tag}.err"))).unwrap())
        .spawn()
        .unwrap();
    Sup(Some(c))
}

/// `ptmp graph ARGS...`, waited for.
fn graph(args: &[&str]) -> Output {
    let c = Command::new(PTMP)
        .arg("graph")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish(c, LIMIT)
}

fn apply(file: &Path, run_dir: &Path, extra: &[&str]) -> Output {
    let (f, r) = (file.display().to_string(), run_dir.display().to_string());
    let mut args = vec!["apply", f.as_str(), "--run-dir", r.as_str()];
    args.extend(extra);
    graph(&args)
}

fn pid(run_dir: &Path, process: &str) -> i64 {
    wait_for(LIMIT, &format!("{process}'s status"), || {
        status(run_dir, process)?["pid"].as_i64()
    })
}

/// The counts of the sets in a dump file, in order.
fn counts(dump: &Path) -> Vec<u64> {
    read_dump(dump).iter().map(|s| s.count as u64).collect()
}

/// The graph's log files after its end, for failure messages.
fn logs(dir: &Path, tag: &str) -> String {
    let r = |x: &str| std::fs::read_to_string(dir.join(format!("{tag}.{x}"))).unwrap_or_default();
    format!("stdout:\n{}\nstderr:\n{}", r("out"), r("err"))
}

/// src -> w -> snk, each its own process: the source sends `n` sets at
/// `rate` per second, the sink ends when it has them all.
fn chain(name: &str, n: u64, rate: u64, work_us: u64, out: &Path) -> Value {
    json!({
        "name": name,
        "nodes": [
            {"name": "src", "type": "source", "data": {"count": n, "rate": rate, "detid": 1}},
            {"name": "w", "type": "worker", "data": {"work_us": work_us}},
            {"name": "snk", "type": "sink", "data": {"count": n, "ofile": out}}
        ],
        "edges": [
            {"from": "src.out", "to": "w.in", "pattern": "pushpull"},
            {"from": "w.out", "to": "snk.in", "pattern": "pushpull"}
        ]
    })
}

fn write(dir: &Path, file: &str, v: &Value) -> PathBuf {
    write_json(dir, file, v)
}

/// Replace the worker of a running chain with one of another setting, then
/// check every set reached the sink once and in order, that the sink had
/// no repeat to drop, and that the source and sink ran on untouched.
fn replace_worker(name: &str, edit: impl Fn(&mut Value)) {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    let out = d.path().join("out.dump");
    let n = 8000;
    let mut g1 = chain(name, n, 2000, 0, &out);
    edit(&mut g1);
    let mut g2 = g1.clone();
    g2["nodes"][1]["data"]["work_us"] = json!(20);
    let f1 = write(d.path(), "g1.json", &g1);
    let f2 = write(d.path(), "g2.json", &g2);
    let mut sup = run(&f1, &rd, d.path(), "run");
    sup.wait_for_traffic(&rd, d.path());
    let (src, w, snk) = (pid(&rd, "src"), pid(&rd, "w"), pid(&rd, "snk"));
    let o = apply(&f2, &rd, &[]);
    let said = text(&o.stdout);
    assert!(o.status.success(), "{said}{}", text(&o.stderr));
    assert!(said.contains("~ replaced w (work_us 0 -> 20)"), "{said}");
    assert!(said.contains("~ restart  w"), "{said}");
    assert!(said.contains("= keep     src"), "{said}");
    assert!(said.contains("= keep     snk"), "{said}");
    assert!(
        said.contains("graph ") && said.contains(": applied"),
        "{said}"
    );
    // The new worker runs; source and sink are the same processes.
    let w2 = wait_for(LIMIT, "the new worker", || {
        Some(pid(&rd, "w")).filter(|p| *p != w)
    });
    assert_ne!(w2, w);
    assert_eq!(pid(&rd, "src"), src, "the source was restarted");
    assert_eq!(pid(&rd, "snk"), snk, "the sink was restarted");
    // The sink ends by itself once it has all n: a set lost would keep
    // the graph running until the limit.
    let o = sup.finish();
    let l = logs(d.path(), "run");
    assert!(o.status.success(), "{l}");
    // The source was held by asking, not stopped with SIGSTOP.
    assert!(l.contains("holding process src"), "{l}");
    assert!(!l.contains("SIGSTOP"), "{l}");
    // Every set arrived once, in order.
    assert_eq!(counts(&out), (0..n).collect::<Vec<_>>(), "{l}");
    assert!(!l.contains(" lost "), "{l}");
    // Nothing reached the sink twice: over shm the new worker read on
    // where the old one stopped (the ring kept the place of the reader's
    // identity); over ipc the old worker had taken in everything sent
    // before the hold, and the source sent nothing until the new one ran.
    assert!(
        l.contains(&format!(
            "[snk] snk (sink) received={n} repeats_dropped=0 missing=0"
        )),
        "{l}"
    );
}

/// Over shm (the default between processes of a host) the ring the source
/// writes outlives the worker: the new worker reads on from it.
#[test]
fn a_replaced_worker_over_shm_loses_nothing() {
    replace_worker(&format!("apply-shm-{}", std::process::id()), |_| {});
}

/// Over ipc with the inputs binding, the connecting source keeps what it
/// queued for the old worker and hands it to the new one. The source is
/// held by asking it (its agents stop sending, its zmq I/O thread runs
/// on), so its I/O thread sees the old worker's connection close while
/// nothing is in flight: no set is written into the dead connection (a
/// source stopped with SIGSTOP lost one batch, 256 sets, that way in
/// about one run in four).
#[test]
fn a_replaced_worker_over_ipc_loses_nothing_when_the_inputs_bind() {
    replace_worker(&format!("apply-ipc-{}", std::process::id()), |g| {
        for e in g["edges"].as_array_mut().unwrap() {
            e["transport"] = json!("ipc");
            e["bind"] = json!("in");
        }
    });
}

/// Over ipc with the outputs binding (the default), the binding source's
/// queue for the old worker goes with its connection; held by asking, the
/// source has nothing queued when it goes, and sends on once the new
/// worker has connected (stopped with SIGSTOP, it lost 600 or so).
#[test]
fn a_replaced_worker_over_ipc_loses_nothing_when_the_outputs_bind() {
    replace_worker(&format!("apply-ipco-{}", std::process::id()), |g| {
        for e in g["edges"].as_array_mut().unwrap() {
            e["transport"] = json!("ipc");
        }
    });
}

/// The same over tcp, the outputs binding: the held source's I/O thread
/// sees the old worker's connection close and the new worker connect.
#[test]
fn a_replaced_worker_over_tcp_loses_nothing() {
    let port = common::free_ports(4);
    replace_worker(&format!("apply-tcp-{}", std::process::id()), |g| {
        g["port_base"] = json!(port);
        for e in g["edges"].as_array_mut().unwrap() {
            e["transport"] = json!("tcp");
        }
    });
}

/// The source's edge switched from the output binding to the inputs
/// binding (the swap restarts both its ends): the source stops first and
/// drains into the worker, the worker drains into the sink, and the new
/// source goes on counting, so the sink, kept, gets every set once.
#[test]
fn swapping_the_binding_side_drops_nothing() {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    let out = d.path().join("out.dump");
    let n = 8000;
    let name = format!("apply-swap-{}", std::process::id());
    let mut g1 = chain(&name, n, 2000, 0, &out);
    g1["edges"][0]["transport"] = json!("ipc");
    let mut g2 = g1.clone();
    g2["edges"][0]["bind"] = json!("in");
    let f1 = write(d.path(), "g1.json", &g1);
    let f2 = write(d.path(), "g2.json", &g2);
    let mut sup = run(&f1, &rd, d.path(), "run");
    sup.wait_for_traffic(&rd, d.path());
    let (src, w, snk) = (pid(&rd, "src"), pid(&rd, "w"), pid(&rd, "snk"));
    let o = apply(&f2, &rd, &[]);
    let said = text(&o.stdout);
    assert!(o.status.success(), "{said}{}", text(&o.stderr));
    assert!(
        said.contains("~ replaced src.out -> w.in (bind out -> in)"),
        "{said}"
    );
    assert!(
        said.contains("processes: 0 started, 0 stopped, 2 restarted, 1 kept"),
        "{said}"
    );
    wait_for(LIMIT, "the new source and worker", || {
        (pid(&rd, "src") != src && pid(&rd, "w") != w).then_some(())
    });
    assert_eq!(pid(&rd, "snk"), snk, "the sink was restarted");
    let o = sup.finish();
    let l = logs(d.path(), "run");
    assert!(o.status.success(), "{l}");
    assert_eq!(counts(&out), (0..n).collect::<Vec<_>>(), "{l}");
}

/// A second source and sink are added on a new edge and a side pair is
/// removed while the main chain runs: its processes keep their pids, it
/// delivers every set once, the new pair delivers its sets, and what the
/// removed source sent reached the removed sink before it stopped.
#[test]
fn nodes_added_and_removed_leave_the_rest_running() {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    let name = format!("apply-add-{}", std::process::id());
    let (out, out_b, out_c) = (
        d.path().join("out.dump"),
        d.path().join("b.dump"),
        d.path().join("c.dump"),
    );
    let n = 8000;
    let mut g1 = chain(&name, n, 2000, 0, &out);
    g1["nodes"].as_array_mut().unwrap().extend([
        json!({"name": "srcb", "type": "source", "data": {"rate": 500, "detid": 2}}),
        json!({"name": "snkb", "type": "sink", "data": {"ofile": out_b}}),
    ]);
    g1["edges"]
        .as_array_mut()
        .unwrap()
        .push(json!({"from": "srcb.out", "to": "snkb.in", "pattern": "pushpull"}));
    let mut g2 = chain(&name, n, 2000, 0, &out);
    g2["nodes"].as_array_mut().unwrap().extend([
        json!({"name": "srcc", "type": "source", "data": {"count": 1000, "rate": 1000, "detid": 3}}),
        json!({"name": "snkc", "type": "sink", "data": {"count": 1000, "ofile": out_c}}),
    ]);
    g2["edges"]
        .as_array_mut()
        .unwrap()
        .push(json!({"from": "srcc.out", "to": "snkc.in", "pattern": "pushpull"}));
    let f1 = write(d.path(), "g1.json", &g1);
    let f2 = write(d.path(), "g2.json", &g2);
    // What apply will do, from the files alone.
    let (s1, s2, r) = (
        f1.display().to_string(),
        f2.display().to_string(),
        rd.display().to_string(),
    );
    let o = graph(&["diff", &s1, &s2, "--run-dir", &r]);
    let said = text(&o.stdout);
    assert!(o.status.success(), "{said}{}", text(&o.stderr));
    for line in [
        "+ added    srcc (source)",
        "+ added    snkc (sink)",
        "- removed  srcb (source)",
        "- removed  snkb (sink)",
        "= kept     w (worker)",
        "+ added    srcc.out -> snkc.in (pushpull over shm at shm://",
        "- removed  srcb.out -> snkb.in (pushpull over shm at shm://",
        "= kept     src.out -> w.in (pushpull over shm at shm://",
        "+ start    srcc (host localhost)",
        "- stop     srcb (host localhost)",
        "= keep     w (host localhost)",
        "processes: 2 started, 2 stopped, 0 restarted, 3 kept",
    ] {
        assert!(said.contains(line), "no {line:?} in\n{said}");
    }
    let sup = run(&f1, &rd, d.path(), "run");
    wait_for(LIMIT, "traffic at both sinks", || {
        node_in(&rd, "snk", "snk").filter(|n| *n >= 500)?;
        node_in(&rd, "snkb", "snkb").filter(|n| *n >= 100)
    });
    let before: Vec<i64> = ["src", "w", "snk"].iter().map(|p| pid(&rd, p)).collect();
    let o = apply(&f2, &rd, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // The new pair runs, the old pair's files and ring are gone, the chain
    // is untouched.
    wait_for(LIMIT, "traffic at the new sink", || {
        node_in(&rd, "snkc", "snkc").filter(|n| *n >= 100)
    });
    assert!(status(&rd, "srcb").is_none() && status(&rd, "snkb").is_none());
    let rings = std::fs::read_dir("/dev/shm")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|f| f.contains(&format!("{name}.")) && f.contains("srcb"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(rings, 0, "the removed edge's ring is left");
    let after: Vec<i64> = ["src", "w", "snk"].iter().map(|p| pid(&rd, p)).collect();
    assert_eq!(before, after, "an unchanged process was restarted");
    let st = graph(&["status", &s2, "--run-dir", &r]);
    let table = text(&st.stdout);
    assert!(table.contains("srcc") && !table.contains("srcb"), "{table}");
    let o = sup.finish();
    let l = logs(d.path(), "run");
    assert!(o.status.success(), "{l}");
    assert_eq!(counts(&out), (0..n).collect::<Vec<_>>(), "{l}");
    assert_eq!(counts(&out_c), (0..1000).collect::<Vec<_>>(), "{l}");
    // The removed pair stopped upstream first: every set its source sent
    // is in its sink's dump.
    let sent: u64 = l
        .lines()
        .find(|x| x.starts_with("[srcb] srcb (source) sent="))
        .and_then(|x| x.split("sent=").nth(1)?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no report of srcb\n{l}"));
    assert!(sent >= 100, "{l}");
    assert_eq!(counts(&out_b), (0..sent).collect::<Vec<_>>(), "{l}");
}

/// Applies that cannot be carried out are refused, each naming what is
/// wrong, and the running graph goes on as it was: same processes, still
/// moving sets. A dry run prints what `graph diff` prints and changes
/// nothing.
#[test]
fn a_bad_apply_is_refused_and_changes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let rd = d.path().join("run");
    let name = format!("apply-bad-{}", std::process::id());
    let out = d.path().join("out.dump");
    let pinned = format!("ipc://{}/main.ipc", rd.display());
    let mut g1 = chain(&name, 0, 1000, 0, &out);
    g1["nodes"][2]["data"] = json!({"ofile": out});
    g1["edges"][1]["address"] = json!(pinned);
    let f1 = write(d.path(), "g1.json", &g1);
    // Nothing runs yet: refused, naming the run directory.
    let o = apply(&f1, &rd, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("no graph is running from"),
        "{}",
        text(&o.stderr)
    );
    let sup = run(&f1, &rd, d.path(), "run");
    wait_for(LIMIT, "traffic at the sink", || {
        node_in(&rd, "snk", "snk").filter(|n| *n >= 200)
    });
    let pids: Vec<i64> = ["src", "w", "snk"].iter().map(|p| pid(&rd, p)).collect();
    let refused = |g: &Value, file: &str, extra: &[&str], code: i32, want: &str| {
        let f = write(d.path(), file, g);
        let o = apply(&f, &rd, extra);
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{file}: {e}");
        assert!(e.contains(want), "{file}: no {want:?} in {e}");
    };
    // Invalid: an unknown node type.
    let mut bad = g1.clone();
    bad["nodes"][1]["type"] = json!("wokrer");
    refused(
        &bad,
        "type.json",
        &[],
        2,
        "type = \"wokrer\": unknown node type",
    );
    // A cycle.
    let mut cyc = g1.clone();
    cyc["nodes"][1]["type"] = json!("zipper");
    cyc["nodes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "p", "type": "proxy"}));
    cyc["edges"] = json!([
        {"from": "src.out", "to": "w.in", "pattern": "pubsub"},
        {"from": "w.out", "to": "p.in", "pattern": "pushpull"},
        {"from": "p.out", "to": ["w.in", "snk.in"], "pattern": "pubsub"}
    ]);
    refused(&cyc, "cycle.json", &[], 2, "edges form a cycle");
    // A port clash: a new edge pinning the address the running one binds.
    let mut clash = g1.clone();
    clash["nodes"].as_array_mut().unwrap().extend([
        json!({"name": "s2", "type": "source", "data": {"detid": 5}}),
        json!({"name": "k2", "type": "sink"}),
    ]);
    clash["edges"]
        .as_array_mut()
        .unwrap()
        .push(json!({"from": "s2.out", "to": "k2.in", "pattern": "pushpull", "address": pinned}));
    refused(
        &clash,
        "clash.json",
        &[],
        2,
        &format!("address clash: edges[1] (w.out -> snk.in) and edges[2] (s2.out -> k2.in) both bind {pinned}"),
    );
    // A new name for the running graph.
    let mut renamed = g1.clone();
    renamed["name"] = json!(format!("{name}-x"));
    refused(&renamed, "renamed.json", &[], 2, "cannot be renamed");
    // The running graph itself.
    refused(&g1, "same.json", &[], 1, "nothing to do");
    // A dry run says what would change, as diff does, and changes nothing.
    let mut g2 = g1.clone();
    g2["nodes"][1]["data"]["work_us"] = json!(10);
    let f2 = write(d.path(), "g2.json", &g2);
    let dry = apply(&f2, &rd, &["--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry.stderr));
    let (s1, s2, r) = (
        f1.display().to_string(),
        f2.display().to_string(),
        rd.display().to_string(),
    );
    let diff = graph(&["diff", &s1, &s2, "--run-dir", &r]);
    assert_eq!(text(&dry.stdout), text(&diff.stdout));
    assert!(text(&dry.stdout).contains("~ restart  w"));
    // Untouched: the same processes, still moving sets.
    let now: Vec<i64> = ["src", "w", "snk"].iter().map(|p| pid(&rd, p)).collect();
    assert_eq!(pids, now);
    let k = node_in(&rd, "snk", "snk").unwrap();
    wait_for(LIMIT, "more at the sink", || {
        node_in(&rd, "snk", "snk").filter(|n| *n >= k + 200)
    });
    // SAFETY: kill only sends a signal to the supervisor this test started.
    assert_eq!(unsafe { libc::kill(sup.id() as i32, libc::SIGINT) }, 0);
    let o = sup.finish();
    assert!(o.status.success(), "{}", logs(d.path(), "run"));
    let got = counts(&out);
    assert!(got.len() as u64 >= k + 200);
    assert_eq!(got, (0..got.len() as u64).collect::<Vec<_>>());
}
