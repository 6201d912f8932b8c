//! The live page as headless chromium renders it: the DOM after the page's
//! script has run (`--dump-dom` with a virtual time budget), at the window
//! widths people use. Checked: the header's badge says `live` (green)
//! while states arrive; an edge that lost nothing draws its loss plot
//! grey, not red; a chain of seven nodes fits the window at 1280 and 1920
//! pixels; an address fed from outside `ptmp run` (a `ptmp send` PUSH
//! into an agent's PULL) is labelled with its real pattern, `pushpull`,
//! and as coming from outside.
//!
//! chromium is Debian's `chromium`; without it the tests say so and skip.

use serde_json::json;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod common;
use common::devtools::{Browser, CHROMIUM};
use common::{free_port, state, PTMP};

/// A child stopped (SIGINT, then killed) and reaped when dropped.
struct Stop(Child);

impl Drop for Stop {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid, which is not yet reaped.
        unsafe {
            libc::kill(self.0.id() as i32, libc::SIGINT);
        }
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(20) {
            if self.0.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start `ptmp ARGS... --http 127.0.0.1:0`; the child and the monitor's
/// address, from the line it prints.
fn start_http(args: &[&str]) -> (Stop, SocketAddr) {
    start_http_with(args, &[])
}

/// [`start_http`] with more variables in the environment.
fn start_http_with(args: &[&str], envs: &[(&str, &str)]) -> (Stop, SocketAddr) {
    let mut child = Command::new(PTMP)
        .args(args)
        .envs(envs.iter().copied())
        .args(["--http", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let child = Stop(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if let Some(a) = line.split("monitor at http://").nth(1) {
                let _ = tx.send(a.trim_end_matches('/').to_string());
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("ptmp printed no monitor address")
        .parse()
        .unwrap();
    (child, addr)
}

fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The page at `addr` in headless chromium with a window `width` pixels
/// wide, once it has drawn at least `updates` states: its DOM then (and a
/// screenshot saved as `name`.png in the tests' temporary directory);
/// None when chromium is missing.
fn render(addr: SocketAddr, width: u32, name: &str) -> Option<String> {
    let mut b = Browser::start(width, 1000)?;
    b.navigate(&format!("http://{addr}/"));
    wait_updates(&mut b, 3);
    let dom = b.ws.eval("document.documentElement.outerHTML");
    let dom = dom.as_str().expect("no DOM").to_string();
    let png = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.png"));
    std::fs::write(&png, b.screenshot()).unwrap();
    eprintln!("screenshot: {}", png.display());
    Some(dom)
}

/// Wait until the page has drawn `n` states.
fn wait_updates(b: &mut Browser, n: u64) {
    let t0 = Instant::now();
    loop {
        let u = b.ws.eval("+document.body.dataset.updates || 0");
        if u.as_u64() >= Some(n) {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the page drew {u} states, not {n}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The opening tag of the first element whose opening tag contains
/// `marker`, and its text (tags stripped), up to its closing `</tag>`.
fn element<'a>(dom: &'a str, marker: &str) -> Option<(&'a str, String)> {
    let at = dom.find(marker)?;
    let start = dom[..at].rfind('<')?;
    let open_end = at + dom[at..].find('>')?;
    let open = &dom[start..=open_end];
    let tag: String = open[1..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    let close = format!("</{tag}>");
    let inner_end = open_end + 1 + dom[open_end + 1..].find(&close)?;
    let mut text = String::new();
    let mut in_tag = false;
    for c in dom[open_end + 1..inner_end].chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                text.push(' ');
            }
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    Some((open, text.split_whitespace().collect::<Vec<_>>().join(" ")))
}

/// The value of attribute `name` in opening tag `open`.
fn attr<'a>(open: &'a str, name: &str) -> Option<&'a str> {
    let k = format!(" {name}=\"");
    let at = open.find(&k)? + k.len();
    Some(&open[at..at + open[at..].find('"')?])
}

fn badge_is_live(dom: &str) {
    let (open, text) = element(dom, "id=\"conn\"").expect("no badge");
    assert_eq!(text, "live", "{open}");
    assert_eq!(attr(open, "class"), Some("conn up"), "{open}");
}

/// A chain of seven nodes, each in its own process: the badge is live, the
/// picture fits the window at 1280 and 1920 pixels (scaled down at 1280,
/// not at 1920) with every node in it, and the loss plots of edges that
/// lost nothing are grey.
#[test]
fn a_seven_node_chain_fits_and_the_page_is_live() {
    if !Path::new(CHROMIUM).exists() {
        common::missing_part(&format!("a_seven_node_chain_fits_and_the_page_is_live: {CHROMIUM} missing (Debian package chromium)"));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut nodes =
        vec![json!({"name": "src", "type": "source", "data": {"rate": 100, "tps": 2, "detid": 1}})];
    let mut edges = vec![];
    let mut last = "src".to_string();
    for i in 1..=5 {
        let n = format!("f{i}");
        nodes.push(json!({"name": n, "type": "filter", "data": {"engine": "pass"}}));
        edges.push(
            json!({"from": format!("{last}.out"), "to": format!("{n}.in"), "pattern": "pushpull"}),
        );
        last = n;
    }
    nodes.push(json!({"name": "sink", "type": "sink", "data": {}}));
    edges.push(json!({"from": format!("{last}.out"), "to": "sink.in", "pattern": "pushpull"}));
    let g = json!({"name": format!("page-chain-{}", std::process::id()), "nodes": nodes, "edges": edges});
    let f = dir.path().join("chain.json");
    std::fs::write(&f, g.to_string()).unwrap();
    let run_dir = dir.path().join("run");
    let (_run, addr) = start_http(&[
        "graph",
        "run",
        f.to_str().unwrap(),
        "--run-dir",
        run_dir.to_str().unwrap(),
        "--ttl",
        "120",
    ]);
    wait_for("sets at the sink", Duration::from_secs(60), || {
        state(addr)["nodes"]
            .as_array()
            .and_then(|n| n.iter().find(|n| n["name"] == "sink"))
            .and_then(|n| n["in"].as_u64())
            > Some(0)
    });
    for width in [1280u32, 1920] {
        let Some(dom) = render(addr, width, &format!("chain-{width}")) else {
            return;
        };
        badge_is_live(&dom);
        let (svg, _) = element(&dom, "id=\"graph\"").expect("no picture");
        let w: f64 = attr(svg, "width").unwrap().parse().unwrap();
        let scale: f64 = attr(svg, "data-scale").unwrap().parse().unwrap();
        // The box the picture sits in: the window less the page's margins.
        assert!(w <= f64::from(width) - 28.0, "{width}: {svg}");
        if width == 1920 {
            assert_eq!(scale, 1.0, "{svg}");
        } else {
            assert!(scale < 1.0, "{svg}");
        }
        for n in ["src", "f1", "f2", "f3", "f4", "f5", "sink"] {
            assert!(dom.contains(&format!("data-node=\"{n}\"")), "{n} not drawn");
        }
        assert_eq!(dom.matches("data-edge-label=").count(), 6);
        // Nothing was lost: every loss plot is the grey one.
        assert_eq!(dom.matches("data-lost=\"no\"").count(), 6, "{width}");
        assert!(!dom.contains("class=\"sparklost\""), "{width}");
    }
}

/// `ptmp run` with a sink whose PULL binds a tcp address, fed by a `ptmp
/// send` PUSH of another process: the edge is `pushpull tcp`, drawn as an
/// arrow from outside, never `pair`; the badge is live.
#[test]
fn an_edge_fed_from_outside_names_its_pattern() {
    if !Path::new(CHROMIUM).exists() {
        common::missing_part(&format!("an_edge_fed_from_outside_names_its_pattern: {CHROMIUM} missing (Debian package chromium)"));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let cfg = json!({"name": "fed", "proxies": [
        {"name": "sink", "type": "sink", "data": {
            "input": {"socket": {"type": "PULL", "bind": [ep]}}}}
    ]});
    let f = dir.path().join("fed.json");
    std::fs::write(&f, cfg.to_string()).unwrap();
    let (_run, addr) = start_http(&["run", f.to_str().unwrap(), "--ttl", "120"]);
    let _send = Stop(
        Command::new(PTMP)
            .args([
                "send",
                "-n",
                "100000000",
                "-p",
                "PUSH",
                "-a",
                "connect",
                "-e",
                &ep,
            ])
            .args(["-r", "100"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("sets received", Duration::from_secs(30), || {
        state(addr)["edges"][0]["received"].as_u64() > Some(0)
    });
    let st = state(addr);
    assert_eq!(st["edges"][0]["pattern"], "pushpull", "{st}");
    let Some(dom) = render(addr, 1280, "fed") else {
        return;
    };
    badge_is_live(&dom);
    let (_, label) = element(&dom, "data-edge-label=\"e0\"").expect("no edge label");
    assert!(label.starts_with("pushpull tcp from outside"), "{label:?}");
    assert!(!dom.contains("pair tcp"));
    let (_, row) = element(&dom, "tr data-edge=\"e0\"").expect("no table row");
    assert!(row.contains("(outside) → sink.input"), "{row:?}");
    // The event stream held back (its request paused in the browser,
    // neither answered nor failed): the state from /api/state is drawn and
    // the badge says live, green, not a red "connecting".
    let Some(mut b) = Browser::start(1280, 1000) else {
        return;
    };
    b.ws.call("Page.enable", json!({}));
    b.ws.call(
        "Page.addScriptToEvaluateOnNewDocument",
        json!({"source": "window.__badges = []; new MutationObserver(() => { \
            const c = document.getElementById('conn'); \
            if (c) window.__badges.push(c.textContent + '|' + c.className); \
        }).observe(document, {subtree: true, childList: true, characterData: true, attributes: true});"}),
    );
    b.ws.call(
        "Fetch.enable",
        json!({"patterns": [{"urlPattern": "*/events*"}]}),
    );
    b.navigate(&format!("http://{addr}/"));
    wait_updates(&mut b, 1);
    let t0 = Instant::now();
    loop {
        let seen = b.ws.eval("JSON.stringify(window.__badges)");
        let seen: Vec<String> = serde_json::from_str(seen.as_str().unwrap_or("[]")).unwrap();
        if seen.iter().any(|x| x == "live|conn up") {
            assert!(
                !seen
                    .iter()
                    .any(|x| x.ends_with("conn down") && x.starts_with("connecting")),
                "{seen:?}"
            );
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the page drew the state but its badge never said live: {seen:?} (badge now {})",
            b.ws.eval("typeof window.__badges + ' ' + document.getElementById('conn').outerHTML")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A graph's part started by Slurm (the environment of a job step): the
/// page labels its host's box with the node and step it runs in, and
/// `/api/state` and `/metrics` say the same.
#[test]
fn a_part_slurm_started_is_labelled_with_its_node_and_step() {
    if !Path::new(CHROMIUM).exists() {
        common::missing_part(&format!("a_part_slurm_started_is_labelled_with_its_node_and_step: {CHROMIUM} missing (Debian package chromium)"));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let g = json!({"name": format!("page-slurm-{}", std::process::id()),
        "nodes": [{"name": "src", "type": "source", "data": {"rate": 100}},
                  {"name": "snk", "type": "sink"}],
        "edges": [{"from": "src.out", "to": "snk.in", "pattern": "pushpull"}]});
    let f = dir.path().join("g.json");
    std::fs::write(&f, g.to_string()).unwrap();
    let run_dir = dir.path().join("run");
    let (_run, addr) = start_http_with(
        &[
            "graph",
            "run",
            f.to_str().unwrap(),
            "--run-dir",
            run_dir.to_str().unwrap(),
            "--ttl",
            "120",
        ],
        &[
            ("SLURM_JOB_ID", "4242"),
            ("SLURM_STEP_ID", "3"),
            ("SLURMD_NODENAME", "rack7-n12"),
        ],
    );
    wait_for("the step in the state", Duration::from_secs(30), || {
        state(addr)["processes"][0]["step"] == "4242.3"
    });
    let st = state(addr);
    assert_eq!(st["hosts"][0]["node"], "rack7-n12", "{st}");
    assert_eq!(st["hosts"][0]["step"], "4242.3", "{st}");
    let (code, metrics) = common::get(addr, "/metrics");
    assert_eq!(code, 200);
    assert!(
        metrics
            .contains("host=\"localhost\",process=\"src\",node=\"rack7-n12\",step=\"4242.3\"} 1"),
        "{metrics}"
    );
    let Some(dom) = render(addr, 1280, "slurm-step") else {
        return;
    };
    badge_is_live(&dom);
    assert!(
        dom.contains(">host localhost on node rack7-n12, step 4242.3<"),
        "no host label with its node and step"
    );
}
