//! The `ptmp` command run as real processes: fast quit, slow joiner, gap
//! reports, bad arguments, sendrecv over every pattern and transport.

use ptmp::{Sender, TPSet};
use serde_json::{json, Value};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{free_port, text, PTMP};

/// A child process that is killed if the test ends before it does.
struct Proc(Option<Child>);

impl Proc {
    fn spawn(args: &[&str]) -> Proc {
        let c = Command::new(PTMP)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start ptmp");
        Proc(Some(c))
    }
    /// Wait at most `limit` for the process to end.
    fn finish(mut self, limit: Duration) -> Output {
        let mut c = self.0.take().unwrap();
        let t0 = Instant::now();
        while c.try_wait().unwrap().is_none() {
            if t0.elapsed() > limit {
                let _ = c.kill();
                let out = c.wait_with_output().unwrap();
                panic!(
                    "ptmp did not finish within {limit:?}\nstdout: {}\nstderr: {}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        c.wait_with_output().unwrap()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn run(args: &[&str]) -> Output {
    Proc::spawn(args).finish(Duration::from_secs(60))
}

/// Wait until something listens on the endpoint (tcp port or ipc path).
fn wait_listening(ep: &str) {
    let t0 = Instant::now();
    loop {
        let up = if let Some(a) = ep.strip_prefix("tcp://") {
            std::net::TcpStream::connect(a).is_ok()
        } else if let Some(p) = ep.strip_prefix("ipc://") {
            std::os::unix::net::UnixStream::connect(p).is_ok()
        } else {
            unreachable!()
        };
        if up {
            return;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "{ep} never came up");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn last_json(out: &Output) -> Value {
    let s = String::from_utf8_lossy(&out.stdout);
    let line = s.lines().last().unwrap_or_else(|| {
        panic!(
            "no output; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    serde_json::from_str(line).unwrap_or_else(|e| panic!("last line {line:?} is not JSON: {e}"))
}

fn endpoints(dir: &tempfile::TempDir) -> Vec<String> {
    vec![
        format!("tcp://127.0.0.1:{}", free_port()),
        format!("ipc://{}", dir.path().join("fq.ipc").display()),
    ]
}

#[test]
fn fast_quit_loses_nothing_over_tcp_and_ipc() {
    let n = "200000";
    for (stype, rtype) in [("PUSH", "PULL"), ("PAIR", "PAIR")] {
        let dir = tempfile::tempdir().unwrap();
        for ep in endpoints(&dir) {
            let rx = Proc::spawn(&[
                "recv", "-n", n, "-p", rtype, "-a", "bind", "-e", &ep, "-T", "10000", "--json",
            ]);
            wait_listening(&ep);
            // No end wait: the sender exits as soon as its last send returns.
            let tx = run(&["send", "-n", n, "-p", stype, "-a", "connect", "-e", &ep]);
            assert!(
                tx.status.success(),
                "{}",
                String::from_utf8_lossy(&tx.stderr)
            );
            let out = rx.finish(Duration::from_secs(30));
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let j = last_json(&out);
            assert_eq!(j["received"], json!(200000), "{stype} {ep}: {j}");
            assert_eq!(j["lost"], json!(0), "{stype} {ep}: {j}");
            assert_eq!(j["last_count"], json!(199999), "{stype} {ep}: {j}");
        }
    }
}

#[test]
fn fast_quit_when_the_sender_binds() {
    let dir = tempfile::tempdir().unwrap();
    for ep in endpoints(&dir) {
        // The receiver connects first and retries until the sender binds.
        let rx = Proc::spawn(&[
            "recv", "-n", "100000", "-p", "PULL", "-a", "connect", "-e", &ep, "-T", "10000",
            "--json",
        ]);
        let tx = run(&[
            "send", "-n", "100000", "-p", "PUSH", "-a", "bind", "-e", &ep,
        ]);
        assert!(
            tx.status.success(),
            "{}",
            String::from_utf8_lossy(&tx.stderr)
        );
        let j = last_json(&rx.finish(Duration::from_secs(30)));
        assert_eq!(
            (j["received"].clone(), j["lost"].clone()),
            (json!(100000), json!(0)),
            "{ep}: {j}"
        );
    }
}

#[test]
fn pub_with_subscribers_option_loses_no_initial_message() {
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    // The publisher starts first and would send everything before anyone
    // subscribes; --subscribers 2 makes it wait for both. Paced at 20 kHz so
    // that no message is dropped at the PUB's high-water mark: any loss
    // would be the slow joiner's.
    let tx = Proc::spawn(&[
        "send",
        "-n",
        "1500",
        "-p",
        "PUB",
        "-a",
        "bind",
        "-e",
        &ep,
        "--subscribers",
        "2",
        "--rate",
        "20000",
    ]);
    wait_listening(&ep);
    std::thread::sleep(Duration::from_millis(200));
    let subs: Vec<Proc> = (0..2)
        .map(|_| {
            Proc::spawn(&[
                "recv", "-n", "1500", "-p", "SUB", "-a", "connect", "-e", &ep, "-T", "1500",
                "--json",
            ])
        })
        .collect();
    assert!(tx.finish(Duration::from_secs(30)).status.success());
    for s in subs {
        let j = last_json(&s.finish(Duration::from_secs(30)));
        assert_eq!(j["received"], json!(1500), "{j}");
        assert_eq!(j["first_count"], json!(0), "{j}");
        assert_eq!(j["lost"], json!(0), "{j}");
    }
}

#[test]
fn pub_without_waiting_loses_to_a_slow_joiner() {
    // The control for the test above: the same start order without
    // --subscribers loses the beginning of the stream (here, all of it).
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let tx = Proc::spawn(&[
        "send", "-n", "5000", "-p", "PUB", "-a", "bind", "-e", &ep, "-E", "300",
    ]);
    wait_listening(&ep);
    let sub = Proc::spawn(&[
        "recv", "-n", "5000", "-p", "SUB", "-a", "connect", "-e", &ep, "-T", "1000", "--json",
    ]);
    tx.finish(Duration::from_secs(30));
    let out = sub.finish(Duration::from_secs(30));
    let j = last_json(&out);
    assert!(j["received"].as_u64().unwrap() < 5000, "{j}");
}

#[test]
fn subscribers_wait_times_out_with_an_error() {
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let out = run(&[
        "send",
        "-n",
        "10",
        "-p",
        "PUB",
        "-a",
        "bind",
        "-e",
        &ep,
        "--subscribers",
        "1",
        "--subscribers-timeout",
        "200",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("timed out") && e.contains("subscriber"), "{e}");
}

#[test]
fn recv_reports_each_gap_like_ptmp() {
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let rx = Proc::spawn(&[
        "recv", "-n", "8", "-p", "PULL", "-a", "bind", "-e", &ep, "-T", "5000", "--json",
    ]);
    wait_listening(&ep);
    let mut tx =
        Sender::from_json(&json!({"socket": {"type": "PUSH", "connect": [ep]}}).to_string())
            .unwrap();
    for c in [1797u32, 1798, 1799, 1805, 1806, 3, 4, 5] {
        tx.send(&TPSet {
            count: c,
            ..Default::default()
        })
        .unwrap();
    }
    drop(tx);
    let out = rx.finish(Duration::from_secs(30));
    let s = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(
        &lines[..3],
        &["0 - 1797 = -1797", "1800 - 1805 = -5", "1807 - 3 = 1804"],
        "{s}"
    );
    let j = last_json(&out);
    assert_eq!(j["received"], json!(8));
    assert_eq!(j["lost"], json!(1797 + 5));
    assert_eq!(j["gaps"], json!(3));
    assert_eq!(j["backwards"], json!(1));
    assert_eq!(
        (j["first_count"].clone(), j["last_count"].clone()),
        (json!(1797), json!(5))
    );
    for k in ["errors", "elapsed_s", "rate_hz"] {
        assert!(j.get(k).is_some(), "{k} missing: {j}");
    }
}

#[test]
fn recv_counts_malformed_messages_and_continues() {
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let rx = Proc::spawn(&[
        "recv", "-n", "2", "-p", "PULL", "-a", "bind", "-e", &ep, "-T", "5000", "--json",
    ]);
    wait_listening(&ep);
    let mut tx =
        Sender::from_json(&json!({"socket": {"type": "PUSH", "connect": [ep]}}).to_string())
            .unwrap();
    tx.send(&TPSet {
        count: 0,
        ..Default::default()
    })
    .unwrap();
    tx.send_raw(&[&b"only one frame"[..]]).unwrap();
    tx.send_raw(&[&[0u8, 0, 0, 0][..], &b"\xff\xff"[..]])
        .unwrap();
    tx.send_raw(&[&[9u8, 0, 0, 0][..], &b""[..]]).unwrap();
    tx.send(&TPSet {
        count: 1,
        ..Default::default()
    })
    .unwrap();
    drop(tx);
    let out = rx.finish(Duration::from_secs(30));
    let j = last_json(&out);
    assert_eq!(
        (
            j["received"].clone(),
            j["errors"].clone(),
            j["lost"].clone()
        ),
        (json!(2), json!(3), json!(0)),
        "{j}"
    );
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("1 frame") && e.contains("version is 9"), "{e}");
}

#[test]
fn recv_fails_when_nothing_arrives() {
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let out = run(&[
        "recv", "-n", "5", "-p", "PULL", "-a", "bind", "-e", &ep, "-T", "200", "--json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(last_json(&out)["received"], json!(0));
}

#[test]
fn config_json_instead_of_options() {
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let rcfg = json!({"socket": {"type": "pull", "bind": [ep], "hwm": 10}}).to_string();
    let scfg = json!({"socket": {"type": "push", "connect": [ep]}}).to_string();
    let rx = Proc::spawn(&[
        "recv", "-n", "1000", "--config", &rcfg, "-T", "5000", "--json",
    ]);
    wait_listening(&ep);
    assert!(
        run(&["send", "-n", "1000", "--config", &scfg, "--ntps", "3"])
            .status
            .success()
    );
    assert_eq!(
        last_json(&rx.finish(Duration::from_secs(30)))["received"],
        json!(1000)
    );
}

#[test]
fn bad_arguments_exit_2_with_a_message_naming_the_value() {
    let cases: &[(&[&str], &str)] = &[
        (&["send", "-p", "PUSHY", "-e", "tcp://127.0.0.1:5"], "PUSHY"),
        (
            &["recv", "-p", "PULL", "-e", "tcp://localhost"],
            "tcp://localhost",
        ),
        (
            &["recv", "-p", "PULL", "-a", "connect", "-e", "tcp://*:5"],
            "tcp://*:5",
        ),
        (&["send", "-p", "PUSH", "-e", "bogus://x"], "bogus"),
        (&["send", "--config", "{nope"], "not valid JSON"),
        (
            &[
                "send",
                "--config",
                r#"{"socket":{"type":"PUSH","bind":["tcp://*:1"],"hwm":-1}}"#,
            ],
            "socket.hwm",
        ),
        (
            &["send", "-n", "abc", "-p", "PUSH", "-e", "tcp://127.0.0.1:5"],
            "abc",
        ),
        (&["recv", "-e", "tcp://127.0.0.1:5"], "socket type"),
        (&["send", "-p", "PUSH"], "endpoint"),
        (&["send", "-p", "SUB", "-e", "tcp://127.0.0.1:5"], "SUB"),
        (&["recv", "-p", "PUSH", "-e", "tcp://127.0.0.1:5"], "PUSH"),
        (
            &[
                "send",
                "-p",
                "PUSH",
                "-e",
                "tcp://127.0.0.1:5",
                "--subscribers",
                "2",
            ],
            "--subscribers",
        ),
        (
            &[
                "send",
                "-p",
                "PUSH",
                "-e",
                "tcp://127.0.0.1:5",
                "--rate",
                "-3",
            ],
            "-3",
        ),
        (
            &[
                "send",
                "-p",
                "PAIR",
                "-e",
                "tcp://127.0.0.1:5",
                "tcp://127.0.0.1:6",
            ],
            "PAIR",
        ),
        (&["sendrecv", "--pattern", "ring"], "ring"),
        (&["sendrecv", "--transport", "udp"], "udp"),
        (&["frobnicate"], "frobnicate"),
    ];
    for (args, needle) in cases {
        let out = run(args);
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        assert!(
            e.contains(needle),
            "{args:?}: stderr does not mention {needle:?}: {e}"
        );
    }
}

#[test]
fn address_in_use_is_reported() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let ep = format!("tcp://{}", l.local_addr().unwrap());
    let out = run(&["recv", "-p", "PULL", "-a", "bind", "-e", &ep, "-T", "100"]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(e.contains(&ep) && e.contains("in use"), "{e}");
}

#[test]
fn sendrecv_every_pattern_and_transport() {
    for pattern in ["pair", "pipe", "pubsub", "pushpull"] {
        for transport in ["inproc", "ipc", "tcp"] {
            for raw in [false, true] {
                let mut args = vec![
                    "sendrecv",
                    "-n",
                    "20000",
                    "--pattern",
                    pattern,
                    "--transport",
                    transport,
                    "--json",
                ];
                if raw {
                    args.push("--raw");
                }
                let out = run(&args);
                assert!(
                    out.status.success(),
                    "{args:?}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let j = last_json(&out);
                let got = j["received"].as_u64().unwrap();
                assert_eq!(j["sent"], json!(20000));
                assert_eq!(got + j["lost"].as_u64().unwrap(), 20000, "{j}");
                if pattern == "pubsub" || raw {
                    // A PUB drops at its high-water mark, and raw libzmq
                    // loses the tail of a fast quit over ipc (the drain that
                    // ptmp adds is not in it): the loss is measured.
                    assert!(got > 0, "{j}");
                    let e = String::from_utf8_lossy(&out.stderr);
                    if got < 20000 && !raw {
                        // Said, so a low count is not taken for a fault.
                        assert!(e.contains("high-water mark"), "{e}");
                    }
                } else {
                    assert_eq!(got, 20000, "{args:?}: {j}");
                }
                assert!(j["rate_hz"].as_f64().unwrap() > 0.0);
            }
        }
    }
}

#[test]
fn sigint_ends_recv_with_its_summary() {
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let rx = Proc::spawn(&[
        "recv", "-n", "1000", "-p", "PULL", "-a", "bind", "-e", &ep, "-T", "-1", "--json",
    ]);
    wait_listening(&ep);
    let mut tx =
        Sender::from_json(&json!({"socket": {"type": "PUSH", "connect": [ep]}}).to_string())
            .unwrap();
    for c in 0..10 {
        tx.send(&TPSet {
            count: c,
            ..Default::default()
        })
        .unwrap();
    }
    drop(tx);
    std::thread::sleep(Duration::from_millis(300));
    let pid = rx.0.as_ref().unwrap().id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let out = rx.finish(Duration::from_secs(10));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = last_json(&out);
    assert_eq!(
        (j["received"].clone(), j["ended_by"].clone()),
        (json!(10), json!("signal")),
        "{j}"
    );
}

#[test]
fn send_and_recv_over_shm_between_processes_and_shm_ls_rm() {
    let name = format!("ptmp-cli-test-{}", std::process::id());
    let ep = format!("shm://{name}");
    // The receiver starts first: it takes the channel from its first message.
    let rx = Proc::spawn(&[
        "recv", "-n", "20000", "-p", "SUB", "-a", "connect", "-e", &ep, "-T", "10000", "--json",
    ]);
    std::thread::sleep(Duration::from_millis(200));
    // A ring that holds the whole run: PUB/SUB over shm never makes the
    // writer wait, so with the default 1024 slots a reader descheduled for
    // 10 ms on a loaded 2-core machine would (rightly) report losses.
    let cfg = format!(
        r#"{{"socket":{{"type":"PUB","bind":["{ep}"],"shm_slots":32768,"shm_max_message":256}}}}"#
    );
    let tx = run(&[
        "send", "-n", "20000", "--config", &cfg, "--ntps", "5", "--rate", "100000",
    ]);
    assert!(
        tx.status.success(),
        "{}",
        String::from_utf8_lossy(&tx.stderr)
    );
    let j = last_json(&rx.finish(Duration::from_secs(30)));
    assert_eq!(
        (j["received"].clone(), j["lost"].clone()),
        (json!(20000), json!(0)),
        "{j}"
    );
    // The channel outlives its writer (history, re-attach) until removed.
    let ls = run(&["shm", "ls", "--json"]);
    let s = String::from_utf8_lossy(&ls.stdout);
    let line = s
        .lines()
        .find(|l| l.contains(&name))
        .unwrap_or_else(|| panic!("{name} not listed: {s}"));
    let c: Value = serde_json::from_str(line).unwrap();
    assert_eq!(
        (c["published"].clone(), c["writer_alive"].clone()),
        (json!(20000), json!(false)),
        "{c}"
    );
    assert!(run(&["shm", "rm", &name]).status.success());
    let ls = run(&["shm", "ls"]);
    assert!(!String::from_utf8_lossy(&ls.stdout).contains(&name));
    let out = run(&["shm", "rm", &name]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
}

#[test]
fn sendrecv_over_shm() {
    let out = run(&[
        "sendrecv",
        "-n",
        "20000",
        "--pattern",
        "pubsub",
        "--transport",
        "shm",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = last_json(&out);
    let got = j["received"].as_u64().unwrap();
    assert!(got > 0 && got + j["lost"].as_u64().unwrap() == 20000, "{j}");
    // PUSH/PULL over shm blocks the writer instead of dropping: all arrive.
    let out = run(&[
        "sendrecv",
        "-n",
        "20000",
        "--pattern",
        "pushpull",
        "--transport",
        "shm",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = last_json(&out);
    assert_eq!(j["received"].as_u64(), Some(20000), "{j}");
    assert_eq!(j["lost"].as_u64(), Some(0), "{j}");
    let args = [
        "sendrecv",
        "--pattern",
        "pubsub",
        "--transport",
        "shm",
        "--raw",
    ];
    let out = run(&args);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("shm"));
}

/// `ptmp bench` is a front over the benchmark crate (whose own tests cover
/// the suites): a two-process row starts `ptmp` again as its sides.
#[test]
fn bench_front_runs_a_two_process_suite() {
    let out = run(&[
        "bench",
        "throughput",
        "-n",
        "2000",
        "--patterns",
        "pushpull",
        "--ntps",
        "0",
        "--transports",
        "ipc",
    ]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{s}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Vec<&str>> = s
        .lines()
        .filter(|l| l.starts_with("| pushpull | ipc |"))
        .map(|l| l.split('|').map(str::trim).collect())
        .collect();
    assert_eq!(rows.len(), 2, "ptmp and raw libzmq: {s}");
    for r in &rows {
        assert_eq!(
            (r[5], r[8]),
            ("2", "0"),
            "two processes, nothing lost: {r:?}"
        );
    }
}

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
        std::thread::sleep(Duration::from_millis(500));
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
    std::thread::sleep(Duration::from_millis(300));
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
