//! `ptmp run` with names in its socket configs: agents in three processes
//! on three hosts (network namespaces) connect and bind by name, with no
//! address anywhere. The middle process is killed and started on another
//! host: the sender before it follows it there by itself.

mod common;
#[path = "lan/mod.rs"]
mod lan;

use common::{text, write_json, PTMP};
use lan::{Lan, Reaped};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn run_in(ns: &str, config: &Path) -> Reaped {
    Reaped(
        Command::new("ip")
            .args(["netns", "exec", ns, PTMP, "run"])
            .arg(config)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

fn sock(t: &str, attach: &str, name: &str) -> Value {
    json!({"socket": {"type": t, attach: [name]}})
}

fn output(mut c: Reaped) -> (String, String) {
    use std::io::Read;
    let (mut o, mut e) = (String::new(), String::new());
    let _ = c.stdout.take().unwrap().read_to_string(&mut o);
    let _ = c.stderr.take().unwrap().read_to_string(&mut e);
    let _ = c.wait();
    (o, e)
}

#[test]
fn agents_connect_by_name_and_a_sender_follows_its_peer_to_another_host() {
    let Some(lan) = Lan::make(3, "r") else {
        common::missing_part("agents_connect_by_name_and_a_sender_follows_its_peer_to_another_host: cannot create network namespaces here (needs root and iproute2's `ip netns`)");
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let dump = d.path().join("got.dump");
    // More than the test lasts: the source is stopped, and says how many
    // it sent.
    let n = 1_000_000u64;
    let disc = json!({"group": "runbyname", "timeout": 30});
    let source = json!({"discovery": disc, "ttl": 60, "proxies": [{"name": "src", "type": "source",
        "data": {"count": n, "tps": 1, "rate": 400,
                 "output": sock("PUSH", "connect", "name://mid/in")}}]});
    let worker = json!({"discovery": disc, "ttl": 60, "proxies": [{"name": "mid", "type": "worker",
        "data": {"input": sock("PULL", "bind", "name://mid/in"),
                 "output": sock("PUSH", "connect", "name://snk/input")}}]});
    // The sink binds a fixed address, announced because its config asks
    // (under the agent's name and the socket's key).
    let sink = json!({"discovery": {"group": "runbyname", "announce": true}, "ttl": 60,
        "proxies": [{"name": "snk", "type": "sink",
        "data": {"input": sock("PULL", "bind", "tcp://*:47311"),
                 "ofile": dump.to_str().unwrap()}}]});
    let (fs, fw, fk) = (
        write_json(d.path(), "source.json", &source),
        write_json(d.path(), "worker.json", &worker),
        write_json(d.path(), "sink.json", &sink),
    );
    // Without presence a name is refused, naming it.
    let mut plain = worker.clone();
    plain.as_object_mut().unwrap().remove("discovery");
    let fp = write_json(d.path(), "plain.json", &plain);
    let o = Command::new(PTMP).arg("run").arg(&fp).output().unwrap();
    let e = text(&o.stderr);
    assert!(!o.status.success() && e.contains("name://mid/in"), "{e}");
    let (h0, h1, h2) = (&lan.hosts[0], &lan.hosts[1], &lan.hosts[2]);
    // A name nobody announces is an error after the configured wait,
    // naming it.
    let ghost = json!({"discovery": {"group": "runbyname", "timeout": 1}, "ttl": 10,
        "proxies": [{"name": "lonely", "type": "sink",
            "data": {"input": sock("PULL", "connect", "name://ghost/out")}}]});
    let fg = write_json(d.path(), "ghost.json", &ghost);
    let (o, e) = output(run_in(h0, &fg));
    assert!(
        e.contains("name://ghost/out") && e.contains("within 1s"),
        "{o}\n{e}"
    );
    let snk = run_in(h2, &fk);
    let mut mid = run_in(h1, &fw);
    let src = run_in(h0, &fs);
    // Let traffic flow a while (the source paces 400 a second), then the
    // worker's host dies.
    std::thread::sleep(Duration::from_secs(5));
    assert!(mid.try_wait().unwrap().is_none(), "the worker ended early");
    let _ = Command::new("kill")
        .args(["-KILL", &mid.id().to_string()])
        .status();
    let _ = mid.wait();
    // The same worker on host 0, beside the source.
    let mid2 = run_in(h0, &fw);
    // Traffic goes on through the moved worker for a while, then the
    // source is stopped and says how many it sent.
    std::thread::sleep(Duration::from_secs(5));
    let _ = Command::new("kill")
        .args(["-TERM", &src.id().to_string()])
        .status();
    let (src_out, src_err) = output(src);
    let sent: u64 = src_out
        .split_whitespace()
        .find_map(|w| w.strip_prefix("sent="))
        .and_then(|v| v.trim_matches(|c: char| !c.is_ascii_digit()).parse().ok())
        .unwrap_or_else(|| panic!("no sent count in {src_out}\n{src_err}"));
    // Give the last sets time to pass, then stop the others.
    std::thread::sleep(Duration::from_secs(2));
    for c in [&mid2, &snk] {
        let _ = Command::new("kill")
            .args(["-TERM", &c.id().to_string()])
            .status();
    }
    let (_, mid2_err) = output(mid2);
    let (snk_out, snk_err) = output(snk);
    let got: Vec<u64> = common::read_dump(&dump)
        .iter()
        .map(|s| s.count as u64)
        .collect();
    let distinct: BTreeSet<u64> = got.iter().copied().collect();
    let lost: Vec<u64> = (0..sent).filter(|k| !distinct.contains(k)).collect();
    eprintln!(
        "run by name: {sent} sent, {} received, {} lost: {lost:?}",
        got.len(),
        lost.len()
    );
    assert_eq!(distinct.len(), got.len(), "a set arrived twice");
    assert!(
        got.iter().any(|&k| k + 1 == sent),
        "the last sets never arrived: the source did not follow the worker\nsource: {src_err}\nworker: {mid2_err}\nsink: {snk_out}{snk_err}"
    );
    // What is lost is one run: the sets inside the killed worker or on
    // their way to it when it died, a handful at this rate.
    if let (Some(&lo), Some(&hi)) = (lost.first(), lost.last()) {
        assert_eq!(
            hi - lo + 1,
            lost.len() as u64,
            "losses not in one run: {lost:?}"
        );
    }
    assert!(lost.len() <= 40, "lost {}: {lost:?}", lost.len());
    drop(lan);
}
