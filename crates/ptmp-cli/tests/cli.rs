//! The `ptmp` command run as real processes: fast quit, slow joiner, gap
//! reports, bad arguments, sendrecv over every pattern and transport.

use ptmp::{Sender, TPSet};
use serde_json::{json, Value};
use std::process::Command;
use std::time::Duration;

mod common;
use common::free_port;
use common::proc::{last_json, run, wait_listening, Proc};

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
    // The stream starts where its first set is: 1797 is no gap.
    assert_eq!(&lines[..2], &["1800 - 1805 = -5", "1807 - 3 = 1804"], "{s}");
    let j = last_json(&out);
    assert_eq!(j["received"], json!(8));
    assert_eq!(j["lost"], json!(5));
    assert_eq!(j["gaps"], json!(2));
    assert_eq!(j["backwards"], json!(1));
    assert_eq!(
        (j["first_count"].clone(), j["last_count"].clone()),
        (json!(1797), json!(5))
    );
    for k in ["errors", "elapsed_s", "rate_hz"] {
        assert!(j.get(k).is_some(), "{k} missing: {j}");
    }
}

/// `ptmp recv` of a stream whose counts start at 1 (as C++ PTMP's
/// `check_send` sends them) or at 0 (as `ptmp send` does) reports nothing
/// lost; a set missing in the middle of the one from 1 is one lost, one gap.
#[test]
fn recv_counts_from_the_first_count_it_sees() {
    let recv = |n: &str| {
        let ep = format!("tcp://127.0.0.1:{}", free_port());
        let rx = Proc::spawn(&[
            "recv", "-n", n, "-p", "PULL", "-a", "bind", "-e", &ep, "-T", "5000", "--json",
        ]);
        wait_listening(&ep);
        (ep, rx)
    };
    let send_counts = |ep: &str, counts: &[u32]| {
        let mut tx =
            Sender::from_json(&json!({"socket": {"type": "PUSH", "connect": [ep]}}).to_string())
                .unwrap();
        for &c in counts {
            tx.send(&TPSet {
                count: c,
                ..Default::default()
            })
            .unwrap();
        }
        let d = tx.finish();
        assert!(!d.undelivered.any(), "{d:?}");
    };
    let from_one: Vec<u32> = (1..=20).collect();
    let mut gap = from_one.clone();
    gap.retain(|&c| c != 7);
    for (counts, lost, gaps) in [(&from_one, 0, 0), (&gap, 1, 1)] {
        let (ep, rx) = recv(&counts.len().to_string());
        send_counts(&ep, counts);
        let out = rx.finish(Duration::from_secs(30));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let j = last_json(&out);
        assert_eq!(j["received"], json!(counts.len()), "{j}");
        assert_eq!(
            (j["lost"].clone(), j["gaps"].clone()),
            (json!(lost), json!(gaps)),
            "{j}"
        );
        assert_eq!(j["first_count"], json!(1), "{j}");
        let s = String::from_utf8_lossy(&out.stdout);
        assert_eq!(s.contains("7 - 8 = -1"), gaps == 1, "{s}");
    }
    // ptmp send's own counts start at 0.
    let (ep, rx) = recv("20");
    let tx = Proc::spawn(&["send", "-n", "20", "-p", "PUSH", "-a", "connect", "-e", &ep]);
    let sent = tx.finish(Duration::from_secs(30));
    assert!(
        sent.status.success(),
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    let out = rx.finish(Duration::from_secs(30));
    let j = last_json(&out);
    assert_eq!(j["received"], json!(20), "{j}");
    assert_eq!(
        (j["lost"].clone(), j["gaps"].clone()),
        (json!(0), json!(0)),
        "{j}"
    );
    assert_eq!(j["first_count"], json!(0), "{j}");
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
    // -v: a line per set, so the test sees the ten arrive before the signal.
    let mut rx = Proc::spawn(&[
        "recv", "-n", "1000", "-p", "PULL", "-a", "bind", "-e", &ep, "-T", "-1", "-v", "--json",
    ]);
    let lines = rx.stdout_lines();
    wait_listening(&ep);
    rx.wait_catching(libc::SIGINT);
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
    let mut seen = 0;
    while seen < 10 {
        let l = lines
            .recv_timeout(Duration::from_secs(60))
            .expect("recv printed its sets");
        seen += usize::from(l.starts_with("count="));
    }
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
    let last = lines.iter().last().expect("a summary line");
    let j: Value = serde_json::from_str(&last).unwrap();
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
    // The sender ran on this kernel with this environment, so it published
    // as a writer of this process would, unless its reader slept often
    // enough (at 100,000 sets/s it may) to turn it to a full barrier.
    let fence = c["publish_fence"].clone();
    assert!(
        fence == json!(ptmp_shm::default_publish_fence().label()) || fence == json!("full"),
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
