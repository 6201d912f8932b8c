//! Signals to `ptmp send`, `ptmp recv` and `ptmp run`, with real
//! processes: the signals that would end a process by default either stop
//! it cleanly, with its summary and every set it took written, or are
//! ignored. Never a death by signal with half a file and no summary.

use serde_json::json;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

mod common;
use common::{finish, s, sock, text, write_json, PTMP};
use ptmp_data::Frames;
use ptmp_formats::dump::DumpReader;

const LIMIT: Duration = Duration::from_secs(60);

/// The signals every command ignores.
const IGNORED: [(i32, &str); 8] = [
    (libc::SIGUSR1, "SIGUSR1"),
    (libc::SIGUSR2, "SIGUSR2"),
    (libc::SIGALRM, "SIGALRM"),
    (libc::SIGVTALRM, "SIGVTALRM"),
    (libc::SIGPROF, "SIGPROF"),
    (libc::SIGIO, "SIGIO"),
    (libc::SIGPWR, "SIGPWR"),
    (libc::SIGXFSZ, "SIGXFSZ"),
];

/// The signals that stop every command cleanly.
const STOPPING: [(i32, &str); 5] = [
    (libc::SIGINT, "SIGINT"),
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGHUP, "SIGHUP"),
    (libc::SIGQUIT, "SIGQUIT"),
    (libc::SIGXCPU, "SIGXCPU"),
];

fn signal(c: &Child, sig: i32) {
    // SAFETY: kill(2) on the pid of our own child, not yet reaped (a child
    // that has ended is a zombie until waited for, so the pid is ours).
    assert_eq!(unsafe { libc::kill(c.id() as i32, sig) }, 0);
}

fn ptmp(args: &[&str]) -> Child {
    Command::new(PTMP)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `ptmp send` of `n` sets at `rate` a second, connecting its PUSH to `ep`.
fn send(ep: &str, n: u64, rate: u64) -> Child {
    let (n, rate) = (n.to_string(), rate.to_string());
    ptmp(&[
        "send", "-n", &n, "-r", &rate, "-p", "PUSH", "-a", "connect", "-e", ep, "--json",
    ])
}

/// `ptmp recv` of at most `n` sets, its PULL bound at `ep`, waiting for
/// ever for the next.
fn recv(ep: &str, n: u64) -> Child {
    let n = n.to_string();
    ptmp(&[
        "recv", "-n", &n, "-T", "-1", "-p", "PULL", "-a", "bind", "-e", ep, "--json",
    ])
}

/// `ptmp run` of one sink writing what its PULL (bound at `ep`) receives
/// into `out`, ending after `count` sets (0: when stopped).
fn run(dir: &Path, ep: &str, out: &Path, count: u64) -> Child {
    let cfg = json!({"proxies": [{"name": "snk", "type": "sink", "data": {
        "input": sock("PULL", "bind", &[ep]), "ofile": s(out), "count": count}}]});
    let f = write_json(dir, "run.json", &cfg);
    ptmp(&["run", &s(&f)])
}

/// The sets in dump file `p` so far (a record cut short ends the count).
fn sets_in(p: &Path) -> u64 {
    let Ok(f) = std::fs::File::open(p) else {
        return 0;
    };
    let mut r = DumpReader::new(std::io::BufReader::new(f));
    let mut f = Frames::new();
    let mut n = 0;
    while r.read_into(&mut f).unwrap_or(false) {
        n += 1;
    }
    n
}

/// Wait until `ep`'s ipc socket file exists (its PULL is bound).
fn bound(ep: &str) {
    let p = ep.strip_prefix("ipc://").unwrap();
    common::wait_for(LIMIT, "the bind", || Path::new(p).exists().then_some(()));
}

/// The last line of `o`'s stdout as JSON.
fn last_json(o: &Output) -> serde_json::Value {
    let out = text(&o.stdout);
    let line = out.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {out}\nstderr: {}", text(&o.stderr)))
}

fn ended_well(what: &str, o: &Output) {
    assert!(
        o.status.success(),
        "{what}: {:?}\nstdout: {}\nstderr: {}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// `ptmp send` into `ptmp recv` and into `ptmp run`, each process sent
/// every ignored signal mid-stream: all carry on, the receivers get every
/// set, the sink's file holds them all, and each prints its summary.
/// (Before, SIGUSR1 ended `ptmp run`, and SIGUSR1, SIGUSR2 and SIGALRM
/// ended `ptmp send` and `ptmp recv`, with no summary.)
#[test]
fn send_recv_and_run_ignore_the_signals_that_are_not_for_stopping() {
    let d = tempfile::tempdir().unwrap();
    let n = 4000;
    let ep_r = format!("ipc://{}", d.path().join("r.ipc").display());
    let ep_k = format!("ipc://{}", d.path().join("k.ipc").display());
    let out = d.path().join("out.dump");
    let rx = recv(&ep_r, n);
    let runner = run(d.path(), &ep_k, &out, n);
    bound(&ep_r);
    bound(&ep_k);
    // Paced so that each is still running when the signals come.
    let tx_r = send(&ep_r, n, 1000);
    let tx_k = send(&ep_k, n, 1000);
    std::thread::sleep(Duration::from_millis(300));
    for (sig, _) in IGNORED {
        for c in [&rx, &runner, &tx_r, &tx_k] {
            signal(c, sig);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let names: Vec<&str> = IGNORED.iter().map(|x| x.1).collect();
    let o = finish(tx_r, LIMIT);
    ended_well(&format!("send to recv after {names:?}"), &o);
    assert_eq!(last_json(&o)["sent"], n, "{}", text(&o.stdout));
    let o = finish(tx_k, LIMIT);
    ended_well(&format!("send to run after {names:?}"), &o);
    assert_eq!(last_json(&o)["sent"], n, "{}", text(&o.stdout));
    let o = finish(rx, LIMIT);
    ended_well(&format!("recv after {names:?}"), &o);
    let j = last_json(&o);
    assert_eq!(j["received"], n, "{j}");
    assert_eq!(j["ended_by"], "count", "{j}");
    // The sink ends by itself at its count.
    let o = finish(runner, LIMIT);
    ended_well(&format!("run after {names:?}"), &o);
    let report = text(&o.stdout);
    assert!(
        report.contains(&format!("snk (sink) received={n}")),
        "{report}"
    );
    assert_eq!(sets_in(&out), n);
}

/// Each stop signal to `ptmp send` (into `ptmp recv`, and into `ptmp
/// run`), then to the receiver: each stops cleanly and prints its summary;
/// the sink's file holds every set `ptmp send` says it sent, and the
/// sink's summary says so. (Before, SIGQUIT and SIGXCPU ended them with a
/// core dump and no summary.)
#[test]
fn stop_signals_end_send_recv_and_run_with_a_summary() {
    for (sig, name) in STOPPING {
        let d = tempfile::tempdir().unwrap();
        let ep_r = format!("ipc://{}", d.path().join("r.ipc").display());
        let ep_k = format!("ipc://{}", d.path().join("k.ipc").display());
        let out = d.path().join("out.dump");
        let rx = recv(&ep_r, u64::MAX);
        let runner = run(d.path(), &ep_k, &out, 0);
        bound(&ep_r);
        bound(&ep_k);
        let tx_r = send(&ep_r, u64::MAX, 2000);
        let tx_k = send(&ep_k, u64::MAX, 2000);
        std::thread::sleep(Duration::from_millis(300));
        signal(&tx_r, sig);
        signal(&tx_k, sig);
        let o = finish(tx_r, LIMIT);
        ended_well(&format!("send to recv, {name}"), &o);
        let sent_r = last_json(&o)["sent"].as_u64().unwrap();
        let o = finish(tx_k, LIMIT);
        ended_well(&format!("send to run, {name}"), &o);
        let sent_k = last_json(&o)["sent"].as_u64().unwrap();
        assert!(sent_r > 0 && sent_k > 0, "{name}: nothing sent");
        // Idle, the sink writes out what it has.
        common::wait_for(LIMIT, "the file", || {
            (sets_in(&out) == sent_k).then_some(())
        });
        signal(&rx, sig);
        signal(&runner, sig);
        let o = finish(rx, LIMIT);
        ended_well(&format!("recv, {name}"), &o);
        let j = last_json(&o);
        // A receiver stopped drops what it had not yet taken: no more
        // than was sent, and the summary says how many it got.
        let got = j["received"].as_u64().unwrap();
        assert!(got > 0 && got <= sent_r, "{name}: sent {sent_r}: {j}");
        assert_eq!(j["ended_by"], "signal", "{name}: {j}");
        let o = finish(runner, LIMIT);
        ended_well(&format!("run, {name}"), &o);
        let report = text(&o.stdout);
        assert!(
            report.contains(&format!("snk (sink) received={sent_k}")),
            "{name}: {report}"
        );
        assert_eq!(sets_in(&out), sent_k, "{name}");
    }
}
