//! The run directory against other local users and odd files, with real
//! processes: a run directory another user owns or may write in is
//! refused and nothing is written through the links planted there; the
//! default run directory is no longer a shared name in `$TMPDIR`; a FIFO
//! where the supervisor or `graph status` reads a file stalls neither; a
//! second run of a running graph is refused before it opens a socket;
//! stray signals leave the supervisor running; an output file that is no
//! regular file is refused by `graph check` and `graph apply`.
//!
//! The tests run as root, as the report they answer did: "another user" is
//! uid 65534 (nobody), whose directories and links are made by root and
//! handed over with chown.

use serde_json::{json, Value};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

mod common;
use common::{finish, node_in, read_dump, status, text, wait_for, write_json, PTMP};

const LIMIT: Duration = Duration::from_secs(40);
const NOBODY: u32 = 65534;

/// A test's private place: a temporary directory that is also the
/// user's directory of every `ptmp` it starts (`XDG_RUNTIME_DIR`), so
/// graph locks and default run directories stay inside it.
struct Place {
    d: tempfile::TempDir,
}

impl Place {
    fn new() -> Place {
        Place {
            d: tempfile::tempdir().unwrap(),
        }
    }
    fn path(&self) -> &Path {
        self.d.path()
    }
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(PTMP);
        c.args(args)
            .env("XDG_RUNTIME_DIR", self.path().join("xdg"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }
    /// `ptmp ARGS...`, waited for.
    fn ptmp(&self, args: &[&str]) -> Output {
        finish(self.cmd(args).spawn().unwrap(), LIMIT)
    }
    /// `ptmp graph run FILE --run-dir DIR`, its stderr to `DIR.err`.
    fn run(&self, file: &Path, run_dir: &Path) -> Sup {
        let err = PathBuf::from(format!("{}.err", run_dir.display()));
        let c = self
            .cmd(&["graph", "run", &s(file), "--run-dir", &s(run_dir)])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap();
        Sup(Some(c), err)
    }
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill only sends a signal to a process this test started; it
    // touches no memory.
    unsafe { libc::kill(pid as i32, sig) };
}

/// A running supervisor (and its stderr file), stopped with SIGINT (then
/// killed) if a test fails while it runs.
struct Sup(Option<Child>, PathBuf);

impl Sup {
    fn id(&self) -> u32 {
        self.0.as_ref().map_or(0, Child::id)
    }
    fn log(&self) -> String {
        std::fs::read_to_string(&self.1).unwrap_or_default()
    }
    fn alive(&mut self) -> bool {
        self.0
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }
    fn finish(mut self) -> Output {
        finish(self.0.take().unwrap(), LIMIT)
    }
}

impl Drop for Sup {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            signal(c.id(), libc::SIGINT);
            let t = std::time::Instant::now();
            while c.try_wait().ok().flatten().is_none() && t.elapsed() < LIMIT {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// src -> snk, each its own process, over `transport`; the source sends
/// `n` sets (0: without end) at `rate` a second, the sink writes `out`.
fn pair(name: &str, transport: &str, n: u64, rate: u64, out: &Path) -> Value {
    let mut v = json!({
        "name": name,
        "nodes": [
            {"name": "src", "type": "source", "data": {"count": n, "rate": rate, "detid": 3}},
            {"name": "snk", "type": "sink", "data": {"count": n, "ofile": out}}
        ],
        "edges": [{"from": "src.out", "to": "snk.in", "pattern": "pushpull",
                   "transport": transport}],
        "restart": {"max": 5, "backoff_ms": 100}
    });
    if transport == "tcp" {
        v["port_base"] = json!(common::free_ports(4));
    }
    v
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo reads the NUL-terminated path and nothing else.
    let r = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(r, 0, "mkfifo {p:?}");
}

/// A file of root's, 0644, whose content and mode must survive.
fn victim(dir: &Path, name: &str) -> PathBuf {
    let f = dir.join(name);
    std::fs::write(&f, "root's own data\n").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    f
}

#[track_caller]
fn assert_untouched(f: &Path) {
    assert_eq!(std::fs::read_to_string(f).unwrap(), "root's own data\n");
    assert_eq!(std::fs::metadata(f).unwrap().mode() & 0o7777, 0o644);
}

/// A run directory as another user could plant it in a shared directory
/// (like /tmp): theirs (or root's, with `owner` 0), mode `mode`, with
/// links from the files the supervisor writes to root's files.
fn planted(shared: &Path, name: &str, owner: u32, mode: u32, victims: &Path) -> PathBuf {
    let rd = shared.join(name);
    std::fs::create_dir(&rd).unwrap();
    for (link, to) in [
        ("supervisor.pid", "v-pid"),
        ("plan-src.json.tmp", "v-plan"),
        ("processes.json.tmp", "v-procs"),
    ] {
        let l = rd.join(link);
        std::os::unix::fs::symlink(victims.join(to), &l).unwrap();
        std::os::unix::fs::lchown(&l, Some(owner), Some(owner)).unwrap();
    }
    std::os::unix::fs::chown(&rd, Some(owner), Some(owner)).unwrap();
    std::fs::set_permissions(&rd, std::fs::Permissions::from_mode(mode)).unwrap();
    rd
}

/// Run directories another user owns, or that others may write in, are
/// refused by `graph run`, the error naming the directory, its owner and
/// mode; no file of root's reached through the links there is touched.
#[test]
fn a_run_directory_another_user_can_write_is_refused() {
    let p = Place::new();
    let shared = p.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let vs: Vec<PathBuf> = ["v-pid", "v-plan", "v-procs"]
        .iter()
        .map(|n| victim(p.path(), n))
        .collect();
    let out = p.path().join("out.dump");
    let name = format!("rd-owned-{}", std::process::id());
    let f = write_json(p.path(), "g.json", &pair(&name, "shm", 100, 5000, &out));
    for (tag, owner, mode, says) in [
        ("theirs-open", NOBODY, 0o777, "belongs to uid 65534"),
        ("theirs-closed", NOBODY, 0o755, "belongs to uid 65534"),
        ("ours-open", 0, 0o777, "mode 0777"),
        ("ours-group", 0, 0o770, "mode 0770"),
    ] {
        let rd = planted(&shared, tag, owner, mode, p.path());
        let o = p.ptmp(&["graph", "run", &s(&f), "--run-dir", &s(&rd), "--ttl", "5"]);
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{tag}: {e}");
        assert!(e.contains(&s(&rd)) && e.contains(says), "{tag}: {e}");
        if owner == NOBODY {
            assert!(
                e.contains("(nobody)") && e.contains(&format!("mode {mode:04o}")),
                "{e}"
            );
        }
        for v in &vs {
            assert_untouched(v);
        }
        assert!(!out.exists(), "{tag}: the graph ran");
    }
    // A link in place of the run directory, to a directory of root's.
    let linked = shared.join("linked");
    std::os::unix::fs::symlink(p.path(), &linked).unwrap();
    let o = p.ptmp(&[
        "graph",
        "run",
        &s(&f),
        "--run-dir",
        &s(&linked),
        "--ttl",
        "5",
    ]);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("symbolic link"), "{e}");
    assert!(!p.path().join("supervisor.pid").exists());
    // `graph apply` and `graph status` do not use such a directory either.
    let rd = shared.join("theirs-open");
    for args in [
        vec!["graph", "status", &s(&f), "--run-dir", &s(&rd)],
        vec!["graph", "apply", &s(&f), "--run-dir", &s(&rd)],
    ] {
        let args: Vec<&str> = args.iter().map(|a| a.as_ref()).collect();
        let o = p.ptmp(&args);
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert!(e.contains("belongs to uid 65534"), "{args:?}: {e}");
    }
}

/// The default run directory is no longer `$TMPDIR/ptmp-graph-NAME`,
/// where another user could make it first: with one planted there (theirs,
/// mode 0777, links to root's files), root's run goes elsewhere (its own
/// private directory), runs, and touches nothing of the planted one.
#[test]
fn the_default_run_directory_is_private_to_its_user() {
    let p = Place::new();
    let shared = p.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let vs: Vec<PathBuf> = ["v-pid", "v-plan", "v-procs"]
        .iter()
        .map(|n| victim(p.path(), n))
        .collect();
    let name = format!("rd-default-{}", std::process::id());
    let planted = planted(
        &shared,
        &format!("ptmp-graph-{name}"),
        NOBODY,
        0o777,
        p.path(),
    );
    let out = p.path().join("out.dump");
    let f = write_json(p.path(), "g.json", &pair(&name, "shm", 200, 5000, &out));
    let o = p
        .cmd(&["graph", "run", &s(&f)])
        .env("TMPDIR", &shared)
        .spawn()
        .unwrap();
    let o = finish(o, LIMIT);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let mine = p.path().join("xdg/ptmp").join(format!("ptmp-graph-{name}"));
    let m = std::fs::metadata(&mine).unwrap();
    assert_eq!((m.uid(), m.mode() & 0o7777), (0, 0o700));
    assert_eq!(read_dump(&out).len(), 200);
    for v in &vs {
        assert_untouched(v);
    }
    let mut left: Vec<String> = std::fs::read_dir(&planted)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["plan-src.json.tmp", "processes.json.tmp", "supervisor.pid"]
    );
    // As root without XDG_RUNTIME_DIR, the default is under /run/ptmp.
    let o = p
        .cmd(&["graph", "check", &s(&f)])
        .env_remove("XDG_RUNTIME_DIR")
        .env("TMPDIR", &shared)
        .output()
        .unwrap();
    let said = text(&o.stdout);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        said.contains(&format!("/run/ptmp/ptmp-graph-{name}")),
        "{said}"
    );
}

/// A FIFO in place of `apply-request.json` does not freeze the supervisor:
/// it says what is wrong with the file and removes it, restarts a killed
/// part, and stops on SIGINT.
#[test]
fn a_fifo_for_an_apply_request_does_not_freeze_the_supervisor() {
    let p = Place::new();
    let rd = p.path().join("run");
    let out = p.path().join("out.dump");
    let name = format!("rd-fifo-{}", std::process::id());
    let f = write_json(p.path(), "g.json", &pair(&name, "shm", 0, 2000, &out));
    let mut sup = p.run(&f, &rd);
    wait_for(LIMIT, "traffic at the sink", || {
        node_in(&rd, "snk", "snk").filter(|n| *n >= 100)
    });
    mkfifo(&rd.join("apply-request.json"));
    let old = status(&rd, "snk").unwrap()["pid"].as_u64().unwrap();
    wait_for(LIMIT, "the supervisor's word on the FIFO", || {
        sup.log()
            .contains("a FIFO, not a regular file")
            .then_some(())
    });
    assert!(!rd.join("apply-request.json").exists());
    signal(old as u32, libc::SIGKILL);
    wait_for(LIMIT, "the killed sink restarted", || {
        let pid = status(&rd, "snk")?["pid"].as_u64()?;
        (pid != old).then_some(())
    });
    assert!(sup.alive());
    signal(sup.id(), libc::SIGINT);
    let log = sup.log();
    let o = sup.finish();
    assert!(o.status.success(), "{log}");
}

/// A FIFO in `status/` (or in place of `processes.json`) stalls neither a
/// new `graph run` nor `graph status`: both name the file and go on.
#[test]
fn a_fifo_among_the_status_files_stalls_nothing() {
    let p = Place::new();
    let rd = p.path().join("run");
    std::fs::create_dir_all(rd.join("status")).unwrap();
    std::fs::set_permissions(&rd, std::fs::Permissions::from_mode(0o700)).unwrap();
    mkfifo(&rd.join("status/x.json"));
    let out = p.path().join("out.dump");
    let name = format!("rd-sfifo-{}", std::process::id());
    let f = write_json(p.path(), "g.json", &pair(&name, "shm", 0, 2000, &out));
    let o = p.ptmp(&["graph", "status", &s(&f), "--run-dir", &s(&rd)]);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("status/x.json: a FIFO, not a regular file"),
        "{e}"
    );
    let sup = p.run(&f, &rd);
    wait_for(LIMIT, "traffic at the sink", || {
        node_in(&rd, "snk", "snk").filter(|n| *n >= 100)
    });
    mkfifo(&rd.join("status/y.json"));
    let o = p.ptmp(&["graph", "status", &s(&f), "--run-dir", &s(&rd)]);
    let (said, e) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{e}");
    assert!(
        said.contains("snk") && e.contains("status/y.json: a FIFO"),
        "{said}{e}"
    );
    signal(sup.id(), libc::SIGINT);
    let log = sup.log();
    assert!(sup.finish().status.success(), "{log}");
}

/// Configuration files are read bounded: one larger than the limit is
/// refused with a message saying so, not read whole.
#[test]
fn a_huge_configuration_is_refused_unread() {
    let p = Place::new();
    let f = p.path().join("big.json");
    let file = std::fs::File::create(&f).unwrap();
    // Sparse: no disk used.
    file.set_len(200 << 20).unwrap();
    let o = p.ptmp(&["graph", "check", &s(&f)]);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("larger than 64 MiB"), "{e}");
    let o = p.ptmp(&["graph", "check", "/dev/zero"]);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("a character device"), "{e}");
}

/// A second run of a running graph with tcp edges, from another run
/// directory, is refused before it opens a socket, naming where the first
/// runs; the first run's sink gets every set.
#[test]
fn a_second_run_of_a_running_graph_is_refused() {
    let p = Place::new();
    let (rd1, rd2) = (p.path().join("run1"), p.path().join("run2"));
    let (out1, out2) = (p.path().join("out1.dump"), p.path().join("out2.dump"));
    let name = format!("rd-twice-{}", std::process::id());
    let n = 3000u64;
    let v = pair(&name, "tcp", n, 1000, &out1);
    let f1 = write_json(p.path(), "g1.json", &v);
    let mut v2 = v.clone();
    v2["nodes"][1]["data"]["ofile"] = json!(out2);
    let f2 = write_json(p.path(), "g2.json", &v2);
    let sup = p.run(&f1, &rd1);
    wait_for(LIMIT, "traffic at the sink", || {
        node_in(&rd1, "snk", "snk").filter(|n| *n >= 100)
    });
    let o = p.ptmp(&["graph", "run", &s(&f2), "--run-dir", &s(&rd2)]);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains(&format!(
            "already runs on this host from run directory {}",
            s(&rd1)
        )),
        "{e}"
    );
    assert!(!out2.exists(), "the second run's sink ran");
    assert!(!rd2.join("plan-snk.json").exists());
    let log = sup.log();
    let o = sup.finish();
    assert!(o.status.success(), "{log}");
    let counts: Vec<u64> = read_dump(&out1).iter().map(|t| t.count as u64).collect();
    assert_eq!(counts, (0..n).collect::<Vec<_>>(), "{log}");
    // The lock went with the first run: the graph runs again.
    std::fs::remove_file(&out1).unwrap();
    let mut v3 = v.clone();
    v3["nodes"][0]["data"]["count"] = json!(10);
    v3["nodes"][1]["data"]["count"] = json!(10);
    let f3 = write_json(p.path(), "g3.json", &v3);
    let o = p.ptmp(&["graph", "run", &s(&f3), "--run-dir", &s(&rd2)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// SIGUSR2, SIGALRM and SIGPIPE leave the supervisor running (the first two
/// with a log line); SIGHUP stops the graph as SIGTERM does, and its rings
/// go with it.
#[test]
fn stray_signals_leave_the_supervisor_running() {
    let p = Place::new();
    let rd = p.path().join("run");
    let out = p.path().join("out.dump");
    let name = format!("rd-sig-{}", std::process::id());
    let f = write_json(p.path(), "g.json", &pair(&name, "shm", 0, 2000, &out));
    let mut sup = p.run(&f, &rd);
    wait_for(LIMIT, "traffic at the sink", || {
        node_in(&rd, "snk", "snk").filter(|n| *n >= 100)
    });
    let rings = || -> Vec<String> {
        std::fs::read_dir("/dev/shm")
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(&name))
            .collect()
    };
    assert!(!rings().is_empty());
    for (sig, word) in [(libc::SIGUSR2, "SIGUSR2"), (libc::SIGALRM, "SIGALRM")] {
        signal(sup.id(), sig);
        wait_for(LIMIT, word, || {
            sup.log().contains(&format!("ignored {word}")).then_some(())
        });
        assert!(sup.alive(), "{word} ended it: {}", sup.log());
    }
    // The parts ignore them too: the sink's process is the same one after.
    let part_pid = || status(&rd, "snk").and_then(|v| v["pid"].as_i64());
    let pid = part_pid().expect("the sink's status names its pid");
    for sig in [libc::SIGUSR2, libc::SIGALRM] {
        signal(pid as u32, sig);
    }
    let before = node_in(&rd, "snk", "snk").unwrap();
    wait_for(LIMIT, "traffic after the parts' signals", || {
        node_in(&rd, "snk", "snk").filter(|n| *n > before + 100)
    });
    assert_eq!(
        part_pid(),
        Some(pid),
        "the sink was restarted: {}",
        sup.log()
    );
    signal(sup.id(), libc::SIGPIPE);
    let before = node_in(&rd, "snk", "snk").unwrap();
    wait_for(LIMIT, "more traffic", || {
        node_in(&rd, "snk", "snk").filter(|n| *n > before + 100)
    });
    assert!(sup.alive(), "SIGPIPE ended it: {}", sup.log());
    signal(sup.id(), libc::SIGHUP);
    let log = sup.log();
    let o = sup.finish();
    assert!(o.status.success(), "{log}");
    assert_eq!(rings(), Vec::<String>::new());
}

/// A sink's output file that exists and is no regular file, or lies in
/// /proc, /sys or /dev, is refused by `graph check` and by `graph apply`
/// (the running graph left as it was).
#[test]
fn an_output_file_that_is_no_regular_file_is_refused() {
    let p = Place::new();
    let fifo = p.path().join("fifo");
    mkfifo(&fifo);
    let link = p.path().join("mem");
    std::os::unix::fs::symlink("/proc/self/mem", &link).unwrap();
    let name = format!("rd-ofile-{}", std::process::id());
    for (bad, says) in [
        (PathBuf::from("/proc/self/mem"), "in /proc, /sys or /dev"),
        (PathBuf::from("/dev/sda"), "in /proc, /sys or /dev"),
        (link.clone(), "in /proc, /sys or /dev"),
        (fifo.clone(), "is a FIFO"),
        (p.path().to_path_buf(), "is a directory"),
    ] {
        let f = write_json(p.path(), "g.json", &pair(&name, "shm", 10, 1000, &bad));
        let o = p.ptmp(&["graph", "check", &s(&f)]);
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {e}");
        assert!(
            e.contains("node snk: ofile") && e.contains(says),
            "{bad:?}: {e}"
        );
    }
    let f = write_json(
        p.path(),
        "n.json",
        &pair(&name, "shm", 10, 1000, Path::new("/dev/null")),
    );
    let o = p.ptmp(&["graph", "check", &s(&f)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // Apply to a running graph.
    let rd = p.path().join("run");
    let out = p.path().join("out.dump");
    let f = write_json(p.path(), "g.json", &pair(&name, "shm", 0, 1000, &out));
    let sup = p.run(&f, &rd);
    wait_for(LIMIT, "traffic at the sink", || {
        node_in(&rd, "snk", "snk").filter(|n| *n >= 10)
    });
    let pid = status(&rd, "snk").unwrap()["pid"].as_u64();
    let bad = write_json(
        p.path(),
        "g.json",
        &pair(&name, "shm", 0, 1000, Path::new("/proc/self/mem")),
    );
    let o = p.ptmp(&["graph", "apply", &s(&bad), "--run-dir", &s(&rd)]);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("ofile") && e.contains("/proc"), "{e}");
    assert_eq!(status(&rd, "snk").unwrap()["pid"].as_u64(), pid);
    drop(sup);
}
