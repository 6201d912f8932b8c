//! `ptmp graph run --http`: the live page, JSON state and metrics of a real
//! running graph, checked as their users would check them: a real
//! Prometheus server scrapes the metrics and answers a query, a real
//! headless chromium loads the page and sees every node drawn and an edge's
//! rate change, and raw TCP clients misbehave (garbage, a slow request
//! head, huge headers, too many connections, an event stream never read)
//! while TPSets keep flowing.
//!
//! Prometheus and chromium are Debian's `prometheus` and `chromium`
//! packages; a test whose program is missing says so and skips.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::clients::{connect_from, hog};
use common::devtools::Browser;
use common::monitored::{graph, merge_graph, sink_in, start, start_graph, wait_for};
use common::{get, state, PTMP};

#[test]
fn state_metrics_and_page_served() {
    let r = start(&[]);
    wait_for("messages at the sink", Duration::from_secs(30), || {
        sink_in(r.addr) > 0
    });
    let st = state(r.addr);
    let names: Vec<&str> = st["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["src", "pass", "sink"]);
    assert_eq!(st["edges"].as_array().unwrap().len(), 2);
    assert!(st["processes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["state"] == "running" && p["restarts"] == 0));
    assert!(st["history"]["t"].as_array().is_some());
    let (code, m) = get(r.addr, "/metrics");
    assert_eq!(code, 200);
    assert!(m.contains("# TYPE ptmp_messages_total counter"), "{m}");
    assert!(m.contains("node=\"src\",port=\"out\",edge=\"e0\""), "{m}");
    let (code, page) = get(r.addr, "/");
    assert_eq!(code, 200);
    assert!(page.contains("<svg id=\"graph\""));
    assert_eq!(get(r.addr, "/app.js").0, 200);
    assert_eq!(get(r.addr, "/nothing").0, 404);
    // Events: the stream starts with a retry hint, then state events.
    let mut s = TcpStream::connect(r.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 65536];
    let t0 = Instant::now();
    while seen.matches("event: state").count() < 2 {
        assert!(t0.elapsed() < Duration::from_secs(15), "{seen}");
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "event stream closed: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(seen.contains("text/event-stream"));
}

/// `ptmp run CONFIG --http`: the agents of one process, their sockets
/// matched to the configuration, edges by address.
#[test]
fn ptmp_run_serves_its_agents() {
    let dir = tempfile::tempdir().unwrap();
    let ipc = format!("ipc://{}/b.ipc", dir.path().display());
    let inproc = format!("inproc://runmon-{}", std::process::id());
    let cfg = json!({"name": "runmon", "proxies": [
        {"name": "src", "type": "source", "data": {"rate": 200, "tps": 2, "detid": 3,
            "output": {"socket": {"type": "PUSH", "bind": [inproc]}}}},
        {"name": "fil", "type": "filter", "data": {"engine": "pass",
            "input": {"socket": {"type": "PULL", "connect": [inproc]}},
            "output": {"socket": {"type": "PUSH", "bind": [ipc]}}}},
        {"name": "sink", "type": "sink", "data": {
            "input": {"socket": {"type": "PULL", "connect": [ipc]}}}}
    ]});
    let f = dir.path().join("run.json");
    std::fs::write(&f, cfg.to_string()).unwrap();
    let mut child = Command::new(PTMP)
        .arg("run")
        .arg(&f)
        .args(["--ttl", "60", "--http", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr: SocketAddr = loop {
        let Some(Ok(l)) = lines.next() else {
            let _ = child.kill();
            panic!("ptmp run --http printed no monitor address");
        };
        if let Some(a) = l.split("monitor at http://").nth(1) {
            break a.trim_end_matches('/').parse().unwrap();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    let mut last = Value::Null;
    wait_for("both edges flowing", Duration::from_secs(30), || {
        last = state(addr);
        last["edges"].as_array().is_some_and(|e| {
            e.len() == 2
                && e.iter()
                    .all(|e| e["rate"].as_f64() > Some(0.0) && e["received"].as_u64() > Some(0))
        })
    });
    let names: Vec<&str> = last["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["src", "fil", "sink"]);
    assert_eq!(last["edges"][0]["from"][0]["node"], "src", "{last}");
    assert_eq!(last["edges"][0]["to"][0]["node"], "fil", "{last}");
    assert_eq!(last["edges"][1]["transport"], "ipc", "{last}");
    let (_, m) = get(addr, "/metrics");
    assert!(
        m.contains("node=\"sink\",port=\"input\",edge=\"e1\",transport=\"ipc\",direction=\"recv\""),
        "{m}"
    );
    // SAFETY: kill(2) on our own child's pid, which is not yet reaped.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("ptmp run did not stop on SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Children killed (after SIGCONT, in case they were stopped) and reaped
/// when dropped.
struct Kids(Vec<Child>);

impl Drop for Kids {
    fn drop(&mut self) {
        for c in &mut self.0 {
            // SAFETY: kill(2) on our own child's pid, not yet reaped.
            unsafe {
                libc::kill(c.id() as i32, libc::SIGCONT);
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A sender whose receiver stopped reading finds its queue full: the
/// stall is counted, and the state, the page's data and the metrics
/// show it on that sender's edge; a sender whose receiver keeps up
/// shows none.
#[test]
fn a_stopped_receiver_stalls_its_sender() {
    let dir = tempfile::tempdir().unwrap();
    let stuck = format!("ipc://{}/stuck.ipc", dir.path().display());
    let live = format!("ipc://{}/live.ipc", dir.path().display());
    // Through a queue of five.
    let fast = json!({"type": "PUSH", "connect": [stuck], "sndhwm": 5, "hwm": 5});
    let slow = json!({"type": "PUSH", "connect": [live]});
    stalls_shown(dir.path(), [&stuck, &live], [fast, slow], false);
}

/// The same over shm://: the ring of eight of a PUSH whose reader is
/// stopped fills, and its sender counts the stall; a reader that keeps up
/// with a ring of 1024 holds its sender back never.
#[test]
fn a_stopped_shm_receiver_stalls_its_sender() {
    let dir = tempfile::tempdir().unwrap();
    let tag = format!("stallmon-{}", std::process::id());
    let stuck = format!("shm://{tag}-stuck");
    let live = format!("shm://{tag}-live");
    let fast = json!({"type": "PUSH", "bind": [stuck], "shm_slots": 8,
                      "shm_block_timeout_ms": 60000});
    let slow = json!({"type": "PUSH", "bind": [live], "shm_slots": 1024});
    stalls_shown(dir.path(), [&stuck, &live], [fast, slow], true);
}

/// Receivers on `ends` (the first stopped with SIGSTOP once it is
/// reading), a `ptmp run` with a source flat out on `outputs[0]` and one
/// at 100 TPSets/s on `outputs[1]`; the first edge must show stalls, the
/// second none. `shm`: the ends are shm:// channels (removed at the end).
fn stalls_shown(dir: &Path, ends: [&String; 2], outputs: [Value; 2], shm: bool) {
    struct Rings(Vec<String>);
    impl Drop for Rings {
        fn drop(&mut self) {
            for n in &self.0 {
                let _ = ptmp_shm::remove(n);
            }
        }
    }
    let names = ends.map(|e| e.trim_start_matches("shm://").to_string());
    let _rings = Rings(if shm { names.to_vec() } else { vec![] });
    let recv = |ep: &str| {
        let mut c = Command::new(PTMP);
        c.args(["recv", "-p", "PULL", "-e", ep, "--hwm", "5"])
            .args(["-n", "1000000000", "-T", "-1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if shm {
            c.args(["-a", "connect"]);
        }
        c.spawn().unwrap()
    };
    let mut kids = Kids(vec![recv(ends[0]), recv(ends[1])]);
    let stop = |kids: &Kids| {
        // SAFETY: kill(2) on our own child's pid, not yet reaped.
        let stopped = unsafe { libc::kill(kids.0[0].id() as i32, libc::SIGSTOP) };
        assert_eq!(stopped, 0);
    };
    if !shm {
        // The first receiver never reads: stopped before it could.
        stop(&kids);
    }
    let [fast, slow] = outputs;
    let cfg = json!({"name": "stallmon", "proxies": [
        {"name": "fast", "type": "source", "data": {"rate": 0, "detid": 1,
            "output": {"socket": fast}}},
        {"name": "slow", "type": "source", "data": {"rate": 100, "detid": 2,
            "output": {"socket": slow}}}
    ]});
    let f = dir.join("run.json");
    std::fs::write(&f, cfg.to_string()).unwrap();
    let mut run = Command::new(PTMP);
    run.arg("run")
        .arg(&f)
        .args(["--ttl", "60", "--http", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = run.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    kids.0.push(child);
    let addr: SocketAddr = loop {
        let Some(Ok(l)) = lines.next() else {
            panic!("ptmp run --http printed no monitor address");
        };
        if let Some(a) = l.split("monitor at http://").nth(1) {
            break a.trim_end_matches('/').parse().unwrap();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    if shm {
        // Over shm the receivers attach once the senders have made their
        // rings; the first is stopped once it is registered in its ring,
        // the second keeps reading.
        wait_for("the receiver in its ring", Duration::from_secs(30), || {
            ptmp_shm::inspect(&names[0]).is_ok_and(|(_, r)| r.iter().any(|r| r.alive))
        });
        stop(&kids);
    }
    let mut last = Value::Null;
    wait_for(
        "a stall on the stopped receiver's edge, sets on the other",
        Duration::from_secs(30),
        || {
            last = state(addr);
            last["edges"][0]["stalls"].as_u64() > Some(0)
                && last["edges"][1]["sent"].as_u64() > Some(20)
        },
    );
    let e = &last["edges"];
    assert_eq!(e[0]["from"][0]["node"], "fast", "{last}");
    assert_eq!(e[1]["from"][0]["node"], "slow", "{last}");
    // The stopped receiver holds what it was sent before it stopped: the
    // queue of five and whatever the connection holds (over shm, the ring
    // of eight).
    assert!(e[0]["sent"].as_u64() >= Some(5), "{last}");
    assert_eq!(e[1]["stalls"].as_u64(), Some(0), "{last}");
    let (_, m) = get(addr, "/metrics");
    let sample = |node: &str| -> u64 {
        let l = m
            .lines()
            .find(|l| {
                l.starts_with("ptmp_send_stalls_total{") && l.contains(&format!("node=\"{node}\""))
            })
            .unwrap_or_else(|| panic!("no ptmp_send_stalls_total for {node} in\n{m}"));
        l.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert!(sample("fast") > 0, "{m}");
    assert_eq!(sample("slow"), 0, "{m}");
    assert!(m.contains("# TYPE ptmp_send_stalls_total counter\n"), "{m}");
    // Receivers have no stall series.
    assert!(!m
        .lines()
        .any(|l| l.starts_with("ptmp_send_stalls_total{") && l.contains("direction=\"recv\"")));
}

/// A process killed with SIGKILL: the state, the page's data and the
/// metrics count its restart, and the node runs again.
#[test]
fn a_restart_is_shown() {
    let r = start(&[]);
    wait_for("messages at the sink", Duration::from_secs(30), || {
        sink_in(r.addr) > 0
    });
    let pid = state(r.addr)["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "pass")
        .and_then(|p| p["pid"].as_u64())
        .unwrap();
    // SAFETY: kill(2) on a pid the supervisor reported as its running child.
    unsafe {
        libc::kill(pid as i32, libc::SIGKILL);
    }
    let mut last = Value::Null;
    wait_for("the restart shown", Duration::from_secs(30), || {
        last = state(r.addr);
        let p = last["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == "pass")
            .cloned()
            .unwrap();
        p["restarts"] == 1 && p["state"] == "running"
    });
    let (_, m) = get(r.addr, "/metrics");
    assert!(
        m.contains(&format!(
            "ptmp_process_restarts_total{{graph=\"mon-{}\",host=\"localhost\",process=\"pass\"}} 1\n",
            std::process::id()
        )),
        "{m}"
    );
    // Data flows through the restarted process again.
    let before = sink_in(r.addr);
    wait_for("the sink receiving again", Duration::from_secs(30), || {
        sink_in(r.addr) > before
    });
}

#[test]
fn non_loopback_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let g = graph(dir.path());
    let o = Command::new(PTMP)
        .args(["graph", "run"])
        .arg(&g)
        .arg("--run-dir")
        .arg(dir.path().join("run"))
        .args(["--http", "0.0.0.0:0", "--ttl", "5"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("not a loopback address") && err.contains("--http-allow-remote"),
        "{err}"
    );
    // Nothing was started.
    assert!(!dir.path().join("run/status").exists() || err.contains("loopback"));
    let o = Command::new(PTMP)
        .args(["graph", "run"])
        .arg(&g)
        .args(["--http", "127.0.0.1:notaport"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("notaport"));
    let r = start(&["--http-allow-remote"]);
    assert_eq!(
        state(r.addr)["graph"],
        format!("mon-{}", std::process::id())
    );
}

/// Read until the peer closes or `limit` passes; what was read and whether
/// it closed.
fn read_until_closed(s: &mut TcpStream, limit: Duration) -> (String, bool) {
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        match s.read(&mut buf) {
            Ok(0) => return (String::from_utf8_lossy(&out).into_owned(), true),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return (String::from_utf8_lossy(&out).into_owned(), true),
        }
    }
    (String::from_utf8_lossy(&out).into_owned(), false)
}

#[test]
fn bad_and_slow_clients_do_not_stop_the_server_or_the_data() {
    let r = start(&[]);
    wait_for("messages at the sink", Duration::from_secs(30), || {
        sink_in(r.addr) > 0
    });

    // Garbage: a 400 and a closed connection.
    let mut s = TcpStream::connect(r.addr).unwrap();
    s.write_all(b"\x00\x01\x02 this is not http\r\n\r\n")
        .unwrap();
    let (t, closed) = read_until_closed(&mut s, Duration::from_secs(10));
    assert!(closed && t.starts_with("HTTP/1.1 400"), "{t:?}");

    // A request head of 64 KiB: refused (431) and closed.
    let mut s = TcpStream::connect(r.addr).unwrap();
    let big = format!(
        "GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: {}\r\n\r\n",
        "a".repeat(65536)
    );
    let _ = s.write_all(big.as_bytes());
    let (t, closed) = read_until_closed(&mut s, Duration::from_secs(10));
    assert!(
        closed && (t.is_empty() || t.starts_with("HTTP/1.1 431")),
        "{t:?}"
    );

    // Slowloris: a head dribbled a byte at a time is cut off (the head
    // timeout is 5 s; the bound here is generous).
    let mut s = TcpStream::connect(r.addr).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
        .unwrap();
    let t0 = Instant::now();
    let mut closed = false;
    while t0.elapsed() < Duration::from_secs(30) {
        if s.write_all(b"a").is_err() {
            closed = true;
            break;
        }
        let (_, c) = read_until_closed(&mut s, Duration::from_millis(300));
        if c {
            closed = true;
            break;
        }
    }
    assert!(closed, "a slow request head was never cut off");

    // More connections than allowed (64): the extra ones get 503 at once;
    // the server answers again once they are gone.
    let mut held: Vec<TcpStream> = (0..64)
        .map(|_| TcpStream::connect(r.addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let mut extra = TcpStream::connect(r.addr).unwrap();
    let (t, _) = read_until_closed(&mut extra, Duration::from_secs(10));
    assert!(t.starts_with("HTTP/1.1 503"), "{t:?}");
    held.clear();
    wait_for(
        "the server answering again",
        Duration::from_secs(10),
        || {
            TcpStream::connect(r.addr)
                .ok()
                .map(|mut s| {
                    let _ = s.write_all(
                        b"GET /api/state HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
                    );
                    read_until_closed(&mut s, Duration::from_secs(5))
                        .0
                        .starts_with("HTTP/1.1 200")
                })
                .unwrap_or(false)
        },
    );

    // A client that opens the event stream and never reads: the server
    // goes on answering, and TPSets go on reaching the sink.
    let mut stuck = TcpStream::connect(r.addr).unwrap();
    stuck
        .write_all(b"GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let before = sink_in(r.addr);
    let mut last = before;
    for _ in 0..3 {
        std::thread::sleep(Duration::from_secs(2));
        let now = sink_in(r.addr);
        assert!(now > last, "the sink stopped at {now} with a stuck client");
        last = now;
    }
    drop(stuck);
    // The data path is in other processes: the rate the graph reports is
    // the source's, not zero.
    let st = state(r.addr);
    assert!(st["edges"][1]["rate"].as_f64().unwrap() > 0.0, "{st}");
}

/// The real server with its shipped limits, under 80 slow request heads
/// from one address and 64 event streams never read from four others,
/// all of them opened again whenever they are closed (so every general
/// place stays taken, and the extra ones keep trying the reserved places):
/// `/api/state` and `/metrics` from yet another address answer 200, every
/// time, and TPSets keep reaching the sink.
#[test]
fn slow_and_idle_clients_do_not_lock_out_state_and_metrics() {
    let r = start(&[]);
    wait_for("messages at the sink", Duration::from_secs(30), || {
        sink_in(r.addr) > 0
    });
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut hogs = vec![hog("127.0.0.1", r.addr, 80, false, stop.clone())];
    for from in ["127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6"] {
        hogs.push(hog(from, r.addr, 16, true, stop.clone()));
    }
    // Until every general place is taken by them.
    let mut last = String::new();
    wait_for(
        "the clients holding every place",
        Duration::from_secs(60),
        || {
            let Some(mut s) = connect_from("127.0.0.2", r.addr, false) else {
                return false;
            };
            let _ = s.write_all(
                b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
            );
            last = read_until_closed(&mut s, Duration::from_secs(10)).0;
            // (A server without places kept for short requests is full.)
            last.starts_with("HTTP/1.1 503")
                || last.lines().any(|l| {
                    l.strip_prefix("ptmp_monitor_connections{kind=\"all\"} ")
                        .and_then(|v| v.parse::<u64>().ok())
                        .is_some_and(|v| v >= 64)
                })
        },
    );
    let before = sink_in_from(r.addr);
    for i in 0..20 {
        for path in ["/api/state", "/metrics"] {
            let mut s = connect_from("127.0.0.2", r.addr, false).expect("connect");
            write!(
                s,
                "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
            let (t, _) = read_until_closed(&mut s, Duration::from_secs(10));
            assert!(
                t.starts_with("HTTP/1.1 200"),
                "{path} {i}: {:?}",
                &t[..t.len().min(300)]
            );
        }
    }
    wait_for("TPSets reaching the sink", Duration::from_secs(30), || {
        sink_in_from(r.addr) > before
    });
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for h in hogs {
        h.join().unwrap();
    }
}

/// Messages at the sink, asked from 127.0.0.2.
fn sink_in_from(addr: SocketAddr) -> u64 {
    let mut s = connect_from("127.0.0.2", addr, false).expect("connect");
    s.write_all(b"GET /api/state HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let (t, _) = read_until_closed(&mut s, Duration::from_secs(10));
    let body = t.split_once("\r\n\r\n").map(|x| x.1).unwrap_or("");
    let st: Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("{t:?}"));
    st["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "sink")
        .and_then(|n| n["in"].as_u64())
        .unwrap()
}

#[test]
fn prometheus_scrapes_the_metrics() {
    let r = start(&[]);
    let Some(p) = common::prometheus::Prometheus::start(&format!(
        "  - job_name: ptmp\n    static_configs:\n      - targets: ['{}']\n",
        r.addr
    )) else {
        return;
    };
    let query = "sum(ptmp_messages_total%7Bnode%3D%22sink%22%7D)";
    let t0 = Instant::now();
    let mut last = String::new();
    let found = loop {
        if t0.elapsed() > Duration::from_secs(60) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(500));
        let (v, body) = p.query(query);
        last = body;
        if let Some(x) = v.filter(|x| *x > 0.0) {
            break Some(x);
        }
    };
    let x = found.unwrap_or_else(|| panic!("prometheus never answered a non-zero value: {last}"));
    assert!(x > 0.0);
}

/// The page in headless chromium: every node drawn, live updates arrive,
/// an edge's rate changes; a screenshot is saved (into docs/images too
/// when PTMP_SAVE_SCREENSHOT is set).
#[test]
fn page_in_headless_chromium() {
    let Some(mut browser) = Browser::start(1440, 800) else {
        return;
    };
    let r = start_graph(merge_graph, &[]);
    browser.navigate(&format!("http://{}/", r.addr));
    let ws = &mut browser.ws;
    let probe = "JSON.stringify({updates: +document.body.dataset.updates || 0, \
        nodes: [...document.querySelectorAll('#graph g.node')].map(g => g.dataset.node), \
        rates: [...document.querySelectorAll('#graph path.edge')].map(p => +p.dataset.rate), \
        conn: (document.getElementById('conn') || {}).textContent})";
    let mut rates_seen: Vec<Vec<f64>> = Vec::new();
    let mut last = Value::Null;
    let t0 = Instant::now();
    loop {
        assert!(
            t0.elapsed() < Duration::from_secs(40),
            "the page did not show live changing rates: {last} after {rates_seen:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
        let v = ws.eval(probe);
        let Some(text) = v.as_str() else {
            continue;
        };
        last = serde_json::from_str(text).unwrap();
        let rates: Vec<f64> = last["rates"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_f64)
            .collect();
        if !rates.is_empty() && rates_seen.last() != Some(&rates) {
            rates_seen.push(rates);
        }
        let first_edge: Vec<f64> = rates_seen.iter().map(|r| r[0]).collect();
        let changed = first_edge.windows(2).any(|w| w[0] != w[1]);
        if last["updates"].as_u64().unwrap_or(0) >= 4 && changed && first_edge.last() > Some(&0.0) {
            break;
        }
    }
    let nodes: Vec<&str> = last["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut nodes = nodes.clone();
    nodes.sort();
    assert_eq!(nodes, ["link1", "link2", "pass", "sink", "zip"], "{last}");
    assert_eq!(last["conn"], "live", "{last}");
    // One arrow per sender of the fan-in, one per other edge.
    assert_eq!(last["rates"].as_array().unwrap().len(), 4, "{last}");
    // Let the sparklines grow a little, then take the picture.
    std::thread::sleep(Duration::from_secs(3));
    let png = browser.screenshot();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("monitor.png");
    std::fs::write(&out, &png).unwrap();
    eprintln!("screenshot: {}", out.display());
    if std::env::var_os("PTMP_SAVE_SCREENSHOT").is_some() {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/images/monitor.png");
        std::fs::create_dir_all(docs.parent().unwrap()).unwrap();
        std::fs::write(&docs, &png).unwrap();
    }
}
