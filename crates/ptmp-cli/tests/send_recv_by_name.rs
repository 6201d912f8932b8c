//! `ptmp send` and `ptmp recv` with names for endpoints, presence switched
//! on with `--discovery` (or a "discovery" key in a `--config` JSON), in
//! separate network namespaces standing for hosts: a receiver finds a
//! sender by name and follows it when it comes back on another host; a
//! sender connected by name follows its receiver to another host after a
//! kill -9; a name that never appears is an error naming it.

mod common;
#[path = "lan/mod.rs"]
mod lan;

use common::{text, PTMP};
use lan::{Lan, Reaped};
use serde_json::Value;
use std::process::{Command, Output};
use std::time::Duration;

fn ptmp_in(ns: &str, args: &[&str]) -> Reaped {
    lan::spawn_in(ns, PTMP, args)
}

/// The JSON summary `ptmp recv --json` ends its output with.
fn summary(o: &Output) -> Value {
    let out = text(&o.stdout);
    let last = out.lines().last().unwrap_or("");
    serde_json::from_str(last).unwrap_or_else(|_| {
        panic!(
            "no JSON summary\nstdout: {out}\nstderr: {}",
            text(&o.stderr)
        )
    })
}

#[test]
fn a_name_without_presence_is_refused_naming_it_and_the_switch() {
    for args in [
        &[
            "recv",
            "-p",
            "PULL",
            "-a",
            "connect",
            "-e",
            "name://src/out",
        ][..],
        &["send", "-p", "PUSH", "-a", "bind", "-e", "name://src/out"][..],
    ] {
        let o = Command::new(PTMP).args(args).output().unwrap();
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(
            e.contains("name://src/out") && e.contains("--discovery"),
            "{e}"
        );
    }
    // Presence asked for twice, by the switch and in the config.
    let o = Command::new(PTMP)
        .args(["recv", "--discovery", "g", "--config"])
        .arg(r#"{"discovery": true, "socket": {"type": "PULL", "connect": "name://a/b"}}"#)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("\"discovery\" key"));
    // A bad group is refused before anything is sent.
    let o = Command::new(PTMP)
        .args(["recv", "--discovery", "no spaces", "-a", "connect"])
        .args(["-p", "PULL", "-e", "name://a/b"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("group"), "{}", text(&o.stderr));
}

#[test]
fn recv_finds_a_sender_by_name_and_follows_it_to_another_host() {
    let Some(lan) = Lan::make(3, "sr") else {
        common::missing_part("recv_finds_a_sender_by_name_and_follows_it_to_another_host: cannot create network namespaces here (needs root and iproute2's `ip netns`)");
        return;
    };
    let (h0, h1, h2) = (&lan.hosts[0], &lan.hosts[1], &lan.hosts[2]);
    let d = tempfile::tempdir().unwrap();
    let key = d.path().join("key");
    std::fs::write(&key, "sendrecv-secret\n").unwrap();
    // A secret file is read only if it is private to its user.
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let key = key.to_str().unwrap();
    // A name nobody announces fails after --name-timeout, naming it.
    let o = ptmp_in(
        h0,
        &[
            "recv",
            "-p",
            "PULL",
            "-a",
            "connect",
            "-e",
            "name://ghost/out",
            "--discovery",
            "sendrecv",
            "--name-timeout",
            "1",
            "-n",
            "1",
        ],
    )
    .finish(Duration::from_secs(20), "recv of a ghost");
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("name://ghost/out") && e.contains("within 1s"),
        "{e}"
    );
    // The receiver takes presence from its config, the senders from the
    // switches; all with the same secret.
    let config = serde_json::json!({
        "discovery": {"group": "sendrecv", "secret_file": key, "timeout": 30},
        "socket": {"type": "PULL", "connect": "name://src/out"}});
    let rx = ptmp_in(
        h1,
        &[
            "recv",
            "--config",
            &config.to_string(),
            "-n",
            "1000",
            "-T",
            "20000",
            "--json",
        ],
    );
    let send = |h: &str| {
        ptmp_in(
            h,
            &[
                "send",
                "-p",
                "PUSH",
                "-a",
                "bind",
                "-e",
                "name://src/out",
                "--discovery",
                "sendrecv",
                "--secret-file",
                key,
                "-n",
                "500",
                "--rate",
                "250",
            ],
        )
    };
    let first = send(h0).finish(Duration::from_secs(60), "first sender");
    assert!(first.status.success(), "{}", text(&first.stderr));
    // The same name from another host, at another address: the receiver,
    // idle meanwhile, follows it.
    let second = send(h2).finish(Duration::from_secs(60), "second sender");
    assert!(second.status.success(), "{}", text(&second.stderr));
    let o = rx.finish(Duration::from_secs(60), "recv");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = summary(&o);
    // Both runs counted 0..499: all of both, and one step back between.
    assert_eq!(s["received"], 1000, "{s}");
    assert_eq!(s["lost"], 0, "{s}");
    assert_eq!(s["backwards"], 1, "{s}");
    assert_eq!(s["last_count"], 499, "{s}");
    drop(lan);
}

#[test]
fn send_connected_by_name_follows_its_receiver_after_a_kill() {
    let Some(lan) = Lan::make(3, "ss") else {
        common::missing_part("send_connected_by_name_follows_its_receiver_after_a_kill: cannot create network namespaces here (needs root and iproute2's `ip netns`)");
        return;
    };
    let (h0, h1, h2) = (&lan.hosts[0], &lan.hosts[1], &lan.hosts[2]);
    let recv = |h: &str| {
        ptmp_in(
            h,
            &[
                "recv",
                "-p",
                "PULL",
                "-a",
                "bind",
                "-e",
                "name://snk/in",
                "--discovery",
                "sendfollow",
                "-n",
                "1000000",
                "-T",
                "4000",
                "--json",
            ],
        )
    };
    let mut rx1 = recv(h1);
    let n = 3000;
    let tx = ptmp_in(
        h0,
        &[
            "send",
            "-p",
            "PUSH",
            "-a",
            "connect",
            "-e",
            "name://snk/in",
            "--discovery",
            "sendfollow",
            "-n",
            &n.to_string(),
            "--rate",
            "300",
            "--json",
        ],
    );
    // Traffic flows a while, then the receiver dies without a word and
    // the same receiver starts on another host.
    std::thread::sleep(Duration::from_secs(4));
    assert!(
        rx1.try_wait().unwrap().is_none(),
        "the first receiver ended early"
    );
    let _ = Command::new("kill")
        .args(["-KILL", &rx1.id().to_string()])
        .status();
    let _ = rx1.wait();
    let rx2 = recv(h2);
    let sent = tx.finish(Duration::from_secs(90), "send");
    let err = text(&sent.stderr);
    assert!(sent.status.success(), "{err}");
    assert!(err.contains(&format!("sent {n} TPSets")), "{err}");
    let o = rx2.finish(Duration::from_secs(30), "second recv");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = summary(&o);
    // The second receiver got the rest, through to the last set.
    assert_eq!(s["last_count"], n - 1, "{s}");
    let first = s["first_count"].as_u64().unwrap();
    assert!(first > 0, "{s}");
    assert_eq!(s["received"].as_u64().unwrap(), n - first, "{s}");
    drop(lan);
}

/// A receiver's host loses its link without a word (its switch port goes
/// down: nothing is closed, nothing answers). The sender, connected by
/// name and allowed to queue far more than the test sends, would keep
/// queueing for the silent connection; ZeroMQ heartbeats (on by default
/// for a socket binding or connecting by name; each end also tells the
/// other to drop a connection silent for three intervals) drop that
/// connection, the sender then holds its sets and follows the name to a
/// receiver on another host. With `heartbeat_ms: 0` on both ends the
/// sender queues all it sends for the silent host and this test fails.
#[test]
fn heartbeats_let_a_sender_leave_a_silent_host_for_a_new_one() {
    let Some(lan) = Lan::make(3, "hb") else {
        common::missing_part("heartbeats_let_a_sender_leave_a_silent_host_for_a_new_one: cannot create network namespaces here (needs root and iproute2's `ip netns`)");
        return;
    };
    let (h0, h1, h2) = (&lan.hosts[0], &lan.hosts[1], &lan.hosts[2]);
    let recv = |h: &str| {
        ptmp_in(
            h,
            &[
                "recv",
                "-p",
                "PULL",
                "-a",
                "bind",
                "-e",
                "name://snk/in",
                "--discovery",
                "heartbeat",
                "-n",
                "1000000",
                "-T",
                "4000",
                "--json",
            ],
        )
    };
    let _rx1 = recv(h1);
    let n = 3000;
    let tx = ptmp_in(
        h0,
        &[
            "send",
            "-p",
            "PUSH",
            "-a",
            "connect",
            "-e",
            "name://snk/in",
            "--discovery",
            "heartbeat",
            "--hwm",
            "1000000",
            "-n",
            &n.to_string(),
            "--rate",
            "200",
        ],
    );
    std::thread::sleep(Duration::from_secs(4));
    // The first receiver's cable is pulled: its switch port goes down.
    assert!(lan::ip(&["-n", &lan.switch, "link", "set", "s1", "down"]));
    let rx2 = recv(h2);
    let sent = tx.finish(Duration::from_secs(90), "send");
    let err = text(&sent.stderr);
    assert!(sent.status.success(), "{err}");
    let o = rx2.finish(Duration::from_secs(30), "second recv");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = summary(&o);
    // Without heartbeats the sender would still be queueing for the
    // silent host (its high-water mark is above what it sends), and the
    // second receiver would get nothing.
    assert_eq!(s["last_count"], n - 1, "{s}\nsend: {err}");
    let first = s["first_count"].as_u64().unwrap();
    assert!(first > 0, "{s}");
    assert_eq!(s["received"].as_u64().unwrap(), n - first, "{s}");
    eprintln!(
        "heartbeats: the second receiver got sets {first}..{}",
        n - 1
    );
    drop(lan);
}
