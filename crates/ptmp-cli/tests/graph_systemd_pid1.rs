//! The unit `ptmp graph systemd` writes, under a real systemd as PID 1: two
//! containers (`systemd-nspawn --boot` of this machine's /usr), each in
//! its own network namespace on one bridge, each running one host's part
//! of a graph connected by name. A part killed with SIGKILL is restarted by
//! ptmp's supervisor while systemd keeps the same main process (the two
//! never both restart); the supervisor killed is restarted by systemd; the
//! sink's container powered off and booted again starts its part by itself
//! and the source follows it by name; `systemctl stop` drains cleanly.

mod common;
#[path = "lan/mod.rs"]
mod lan;
#[path = "nspawn/mod.rs"]
mod nspawn;

use common::{text, PTMP};
use ptmp_data::{decode_tpset, Frames};
use ptmp_formats::dump::DumpReader;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// The counts in a dump file, which must read to its end without error.
fn counts(f: &Path) -> Vec<u64> {
    let Ok(file) = std::fs::File::open(f) else {
        return Vec::new();
    };
    let mut r = DumpReader::new(std::io::BufReader::new(file));
    let mut fr = Frames::new();
    let mut v = Vec::new();
    // A file being written may end inside a record: whole ones only.
    while r.read_into(&mut fr).unwrap_or(false) {
        v.push(decode_tpset(fr.get(1).unwrap()).unwrap().count as u64);
    }
    v
}

/// Waits until the sink's file holds `more` sets beyond what it holds now.
fn grows(out: &Path, more: usize, what: &str, why: &dyn Fn() -> String) {
    let before = counts(out).len();
    let t0 = Instant::now();
    while counts(out).len() < before + more {
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "no sets after {what} ({} then {}): {}",
            before,
            counts(out).len(),
            why()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The pid of the process in namespace `ns` whose command line holds
/// `word`.
fn pid_in(ns: &str, word: &str) -> Option<i32> {
    let o = std::process::Command::new("ip")
        .args(["netns", "pids", ns])
        .output()
        .unwrap();
    text(&o.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse::<i32>().ok())
        .find(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .map(|c| {
                    String::from_utf8_lossy(&c)
                        .replace('\0', " ")
                        .contains(word)
                })
                .unwrap_or(false)
        })
}

fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool, why: &dyn Fn() -> String) {
    let t0 = Instant::now();
    while !f() {
        assert!(
            t0.elapsed() < limit,
            "{what}: not within {limit:?}: {}",
            why()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// What systemd says of `unit` in machine `m`, and every process of its
/// network namespace `ns` (name, state, parent, pids), then `why`.
fn unit_state(m: &nspawn::Machine, ns: &str, unit: &str, why: String) -> String {
    let o = m.systemctl(&["status", "--no-pager", unit]);
    let ps = std::process::Command::new("ip")
        .args(["netns", "pids", ns])
        .output()
        .unwrap();
    let states: Vec<String> = text(&ps.stdout)
        .split_whitespace()
        .map(|p| {
            let st = std::fs::read_to_string(format!("/proc/{p}/status")).unwrap_or_default();
            let f = |k: &str| {
                st.lines()
                    .find(|l| l.starts_with(k))
                    .unwrap_or("")
                    .to_string()
            };
            format!(
                "{p}: {} {} {} {}",
                f("Name:"),
                f("State:"),
                f("PPid:"),
                f("NSpid:")
            )
        })
        .collect();
    format!(
        "{}{}\n{}\n{}",
        text(&o.stdout),
        text(&o.stderr),
        states.join("\n"),
        why
    )
}

#[test]
fn a_graph_under_systemd_as_pid_1() {
    if !Path::new(nspawn::NSPAWN).exists() {
        common::missing_part("a_graph_under_systemd_as_pid_1: systemd-nspawn missing (Debian package systemd-container)");
        return;
    }
    let Some(lan) = lan::Lan::make(2, "sp") else {
        common::missing_part("a_graph_under_systemd_as_pid_1: cannot create network namespaces here (needs root and iproute2's `ip netns`)");
        return;
    };
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = d.path().join("sink.dump");
    let name = "sdpid1";
    let g = json!({
        "name": name,
        "hosts": [{"name": "a"}, {"name": "b"}],
        "nodes": [
            {"name": "src", "type": "source", "data": {"rate": 500, "tps": 1}},
            {"name": "snk", "type": "sink", "data": {"ofile": out.to_str().unwrap()}}
        ],
        "edges": [{"from": "src.out", "to": "snk.in", "pattern": "pushpull"}],
        "processes": [
            {"name": "front", "host": "a", "nodes": ["src"]},
            {"name": "back", "host": "b", "nodes": ["snk"]}
        ]
    });
    let gf = d.path().join("g.json");
    std::fs::write(&gf, g.to_string()).unwrap();
    let bin_dir = Path::new(PTMP).parent().unwrap().display().to_string();
    let binds = vec![format!("ro:{bin_dir}"), d.path().display().to_string()];
    let unit = |h: &str| format!("ptmp-graph-{name}@{h}");
    let mut machines = Vec::new();
    for (h, ns) in ["a", "b"].iter().zip(&lan.hosts) {
        let m = nspawn::Machine::prepare(d.path(), h, ns, &binds);
        let o = std::process::Command::new(PTMP)
            .args(["graph", "systemd"])
            .arg(&gf)
            .arg("--out")
            .arg(m.root.join("etc/systemd/system"))
            .args(["--ptmp", PTMP])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        machines.push(m);
    }
    for m in &mut machines {
        m.boot().unwrap_or_else(|e| panic!("{e}"));
        let o = m.systemctl(&["enable", "--now", &unit(&m.name)]);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let (ma, mb) = (&machines[0], &machines[1]);
    let why = || {
        format!(
            "a:\n{}\nb:\n{}",
            ma.journal(&unit("a")),
            mb.journal(&unit("b"))
        )
    };
    grows(&out, 300, "the start", &why);

    // A part killed: ptmp's supervisor restarts it; systemd sees nothing.
    let main = ma.show(&unit("a"), "MainPID");
    let part = pid_in(&lan.hosts[0], "graph part").expect("host a's part");
    // SAFETY: kill(2) of a process of this test's container.
    unsafe { libc::kill(part, libc::SIGKILL) };
    grows(&out, 300, "the part's restart", &why);
    assert_eq!(ma.show(&unit("a"), "MainPID"), main, "{}", why());
    assert_eq!(ma.show(&unit("a"), "NRestarts"), "0", "{}", why());

    // The supervisor killed: systemd restarts the unit. (MainPID is a pid
    // of the container's own pid namespace: killed from inside.)
    let o = ma.run("kill", &["-KILL", &main]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let status = || unit_state(ma, &lan.hosts[0], &unit("a"), why());
    let t_kill = Instant::now();
    wait_until(
        "systemd's restart",
        Duration::from_secs(100),
        || ma.show(&unit("a"), "NRestarts") == "1",
        &status,
    );
    eprintln!(
        "systemd restarted the unit {:?} after its supervisor was killed",
        t_kill.elapsed()
    );
    grows(&out, 300, "the unit's restart", &why);

    // The sink's container powered off, then booted: its unit (enabled)
    // starts by itself and continues the run from its state directory
    // (appends to the file, keeping what it held), and the source follows.
    let kept = counts(&out);
    let top = *kept.iter().max().unwrap();
    machines[1].power_off();
    machines[1].boot().unwrap_or_else(|e| panic!("{e}"));
    let (ma, mb) = (&machines[0], &machines[1]);
    let why = || {
        format!(
            "a:\n{}\nb:\n{}",
            ma.journal(&unit("a")),
            mb.journal(&unit("b"))
        )
    };
    grows(&out, 300, "the power-off", &why);
    let got = counts(&out);
    assert!(*got.iter().max().unwrap() > top + 300, "{}", why());
    assert_eq!(
        got[..kept.len()],
        kept[..],
        "the sink's file lost what it held before the power-off: {}",
        why()
    );

    // systemctl stop: SIGINT to the supervisor, a clean drain.
    for m in [mb, ma] {
        let o = m.systemctl(&["stop", &unit(&m.name)]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert_eq!(m.show(&unit(&m.name), "Result"), "success", "{}", why());
        assert!(
            m.journal(&unit(&m.name)).contains("stopping: interrupted"),
            "{}",
            why()
        );
    }
    // Nothing twice across the restarts and the power-off: a restarted
    // source goes on counting, a restarted sink drops what its file holds.
    let got = counts(&out);
    let repeats = got.windows(2).filter(|w| w[1] <= w[0]).count();
    let lost = got.last().map_or(0, |l| l + 1) - got.len() as u64;
    eprintln!(
        "sink: {} sets, {repeats} twice or out of order, {lost} numbers missing (in the killed processes and the powered-off container)",
        got.len()
    );
    assert_eq!(repeats, 0, "{}", why());
    drop(machines);
    drop(lan);
}
