//! `ptmp graph run --http 0.0.0.0:0 --http-allow-remote`: clients on
//! another address than loopback must give the monitor's token (kept in the
//! run directory, mode 0600) for the state, events and metrics, while
//! loopback clients and the page itself need none; a real Prometheus
//! scrapes with the token from the file and gets nothing without it.
//! The log (the journal, under systemd) says where the token is kept,
//! never the token itself; `ptmp run` keeps its own in a file of the
//! user's directory while it runs. A request naming another host than the
//! monitor's (a page rebinding its name to 127.0.0.1) is answered 421.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod common;
use common::PTMP;

struct Run {
    child: Child,
    port: u16,
    token_line: String,
}

impl Drop for Run {
    fn drop(&mut self) {
        common::proc::interrupt(&mut self.child, Duration::from_secs(20));
    }
}

/// This host's address on its way out (no packet is sent), when it has
/// one other than loopback.
fn host_address() -> Option<IpAddr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("10.255.255.254:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

fn start(dir: &Path) -> Run {
    let g = json!({
        "name": format!("montok-{}", std::process::id()),
        "nodes": [
            {"name": "src", "type": "source", "data": {"rate": 200, "detid": 1}},
            {"name": "sink", "type": "sink", "data": {}}
        ],
        "edges": [{"from": "src.out", "to": "sink.in", "pattern": "pushpull"}]
    });
    let f = dir.join("g.json");
    std::fs::write(&f, g.to_string()).unwrap();
    let mut child = Command::new(PTMP)
        .args(["graph", "run"])
        .arg(&f)
        .arg("--run-dir")
        .arg(dir.join("run"))
        .env("XDG_RUNTIME_DIR", dir.join("xdg"))
        .args(["--http", "0.0.0.0:0", "--http-allow-remote", "--ttl", "120"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let (mut port, mut token_line) = (None, String::new());
    let t0 = Instant::now();
    while port.is_none() && t0.elapsed() < Duration::from_secs(30) {
        let Ok(line) = rx.recv_timeout(Duration::from_secs(1)) else {
            continue;
        };
        if line.contains("monitor's token") {
            token_line = line.clone();
        }
        if let Some(a) = line.split("monitor at http://").nth(1) {
            let a: SocketAddr = a.trim_end_matches('/').parse().unwrap();
            port = Some(a.port());
        }
    }
    let Some(port) = port else {
        let _ = child.kill();
        panic!("no monitor address printed");
    };
    Run {
        child,
        port,
        token_line,
    }
}

/// GET `path` from `addr` with extra header lines; the status and body.
fn get(addr: SocketAddr, path: &str, headers: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut b = Vec::new();
    let _ = s.read_to_end(&mut b);
    let t = String::from_utf8_lossy(&b).into_owned();
    let code = t.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = t.split_once("\r\n\r\n").map_or("", |x| x.1).to_string();
    (code, body)
}

#[test]
fn remote_clients_need_the_token() {
    let Some(ip) = host_address() else {
        common::missing_part(
            "remote_clients_need_the_token: this host has no address other than loopback",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let r = start(dir.path());
    let file = dir.path().join("run").join("monitor-token");
    let token = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(
        r.token_line.contains(&file.display().to_string()) && !r.token_line.contains(&token),
        "the log says where the token is, not what it is: {}",
        r.token_line
    );
    let remote = SocketAddr::new(ip, r.port);
    let local = SocketAddr::from(([127, 0, 0, 1], r.port));
    let auth = format!("Authorization: Bearer {token}\r\n");
    for path in ["/api/state", "/metrics", "/events"] {
        let (code, body) = get(remote, path, "");
        assert_eq!(code, 401, "{path} without the token: {body}");
        assert!(body.contains("monitor-token"), "{body}");
        let (code, _) = get(
            remote,
            path,
            "Authorization: Bearer 0123456789abcdef0123456789abcdef\r\n",
        );
        assert_eq!(code, 401, "{path} with a wrong token");
    }
    let (code, body) = get(remote, "/api/state", &auth);
    assert_eq!(code, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["graph"], format!("montok-{}", std::process::id()));
    let (code, body) = get(remote, &format!("/metrics?token={token}"), "");
    assert_eq!(code, 200);
    assert!(body.contains("ptmp_monitor_unauthorized_total 6"), "{body}");
    // The page holds no data: anyone gets it, and it asks for the token.
    let (code, _) = get(remote, "/", "");
    assert_eq!(code, 200);
    let (code, js) = get(remote, "/app.js", "");
    assert_eq!(code, 200);
    assert!(
        js.contains("Bearer") && js.contains("token="),
        "the page sends the token"
    );
    // Loopback stays open.
    let (code, _) = get(local, "/api/state", "");
    assert_eq!(code, 200);

    page(remote, &token);
    prometheus(remote, &file);
}

/// The page in headless chromium from the host's address, the token in
/// the address's fragment, then (in a fresh browser) typed into the prompt
/// the page shows when refused: the state and the event stream come
/// through both ways.
fn page(remote: SocketAddr, token: &str) {
    let Some(mut browser) = common::devtools::Browser::start(1280, 800) else {
        return;
    };
    browser.navigate(&format!("http://{remote}/#token={token}"));
    goes_live(&mut browser, remote, "with the token in its address");
    let Some(mut browser) = common::devtools::Browser::start(1280, 800) else {
        return;
    };
    browser.navigate(&format!("http://{remote}/"));
    browser.answer_prompt(token, Duration::from_secs(30));
    goes_live(&mut browser, remote, "with the token typed into its prompt");
}

fn goes_live(browser: &mut common::devtools::Browser, remote: SocketAddr, how: &str) {
    let probe = "JSON.stringify({updates: +document.body.dataset.updates || 0, \
        conn: (document.getElementById('conn') || {}).textContent})";
    let t0 = Instant::now();
    let mut last = Value::Null;
    while t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(300));
        if let Some(t) = browser.ws.eval(probe).as_str() {
            last = serde_json::from_str(t).unwrap();
        }
        if last["updates"].as_u64().unwrap_or(0) >= 3 && last["conn"] == "live" {
            return;
        }
    }
    panic!("the page {how} did not go live from {remote}: {last}");
}

/// A real Prometheus: the job with the token file scrapes the graph's
/// metrics, the one without it is refused (its target is down).
fn prometheus(target: SocketAddr, token_file: &Path) {
    let Some(p) = common::prometheus::Prometheus::start(&format!(
        "  - job_name: with_token\n    authorization:\n      type: Bearer\n      credentials_file: {}\n    static_configs:\n      - targets: ['{target}']\n\
         \x20 - job_name: without\n    static_configs:\n      - targets: ['{target}']\n",
        token_file.display()
    )) else {
        return;
    };
    let t0 = Instant::now();
    let mut seen = (None, None);
    while t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(500));
        seen = (
            p.query("sum(ptmp_messages_total%7Bnode%3D%22sink%22%2Cjob%3D%22with_token%22%7D)")
                .0,
            p.query("up%7Bjob%3D%22without%22%7D").0,
        );
        if seen.0.is_some_and(|x| x > 0.0) && seen.1 == Some(0.0) {
            break;
        }
    }
    assert!(
        seen.0.is_some_and(|x| x > 0.0),
        "scraped with the token: {seen:?}"
    );
    assert_eq!(seen.1, Some(0.0), "the job without the token is down");
}

/// `ptmp run --http 0.0.0.0:0 --http-allow-remote`: the token is kept in
/// `run-PID.monitor-token` of the user's directory (mode 0600) while it
/// runs, the log names the file and never holds the token, and the file
/// is gone once it stopped. A request from loopback naming another host
/// gets 421 from the real process; one naming 127.0.0.1 gets the state.
#[test]
fn ptmp_run_keeps_its_token_in_a_file_and_out_of_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let xdg = dir.path().join("xdg");
    std::fs::create_dir(&xdg).unwrap();
    std::fs::set_permissions(&xdg, std::fs::Permissions::from_mode(0o700)).unwrap();
    let cfg = json!({"name": "runtok", "proxies": [
        {"name": "src", "type": "source", "data": {"rate": 100, "detid": 3,
            "output": {"socket": {"type": "PUSH", "bind": [format!("inproc://runtok-{}", std::process::id())]}}}},
        {"name": "sink", "type": "sink", "data": {
            "input": {"socket": {"type": "PULL", "connect": [format!("inproc://runtok-{}", std::process::id())]}}}}
    ]});
    let f = dir.path().join("run.json");
    std::fs::write(&f, cfg.to_string()).unwrap();
    let child = Command::new(PTMP)
        .arg("run")
        .arg(&f)
        .env("XDG_RUNTIME_DIR", &xdg)
        .args(["--ttl", "60", "--http", "0.0.0.0:0", "--http-allow-remote"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut run = Run {
        port: 0,
        token_line: String::new(),
        child,
    };
    let err = run.child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut said = Vec::new();
    let t0 = Instant::now();
    while run.port == 0 && t0.elapsed() < Duration::from_secs(30) {
        let Ok(line) = rx.recv_timeout(Duration::from_secs(1)) else {
            continue;
        };
        if line.contains("monitor's token") {
            run.token_line = line.clone();
        }
        if let Some(a) = line.split("monitor at http://").nth(1) {
            let a: SocketAddr = a.trim_end_matches('/').parse().unwrap();
            run.port = a.port();
        }
        said.push(line);
    }
    assert!(run.port != 0, "no monitor address printed: {said:?}");
    let file = xdg
        .join("ptmp")
        .join(format!("run-{}.monitor-token", run.child.id()));
    assert!(
        run.token_line.contains(&file.display().to_string()),
        "the log names the token's file: {said:?}"
    );
    let token = std::fs::read_to_string(&file).unwrap();
    assert!(
        token.len() == 32 && token.bytes().all(|b| b.is_ascii_hexdigit()),
        "{token:?}"
    );
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let local = SocketAddr::from(([127, 0, 0, 1], run.port));
    let (code, body) = get(local, "/api/state", "");
    assert_eq!(code, 200, "{body}");
    let mut s = TcpStream::connect(local).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET /api/state HTTP/1.1\r\nHost: evil.example:{}\r\nConnection: close\r\n\r\n",
        run.port
    )
    .unwrap();
    let mut b = String::new();
    let _ = s.read_to_string(&mut b);
    assert!(b.starts_with("HTTP/1.1 421"), "{b}");
    assert!(b.contains("evil.example"), "{b}");
    // SAFETY: kill(2) on our own child's pid, which is not yet reaped.
    unsafe {
        libc::kill(run.child.id() as i32, libc::SIGINT);
    }
    let t0 = Instant::now();
    while run.child.try_wait().unwrap().is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "ptmp run did not stop on SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    said.extend(rx.try_iter());
    assert!(
        said.iter().all(|l| !l.contains(token.trim())),
        "the token is in the log: {said:?}"
    );
    assert!(!file.exists(), "{} left behind", file.display());
}
