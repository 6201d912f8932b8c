//! `ptmp keys` and the --curve-* options of send and recv, as real
//! processes: a listed sender's sets all arrive over a secured tcp edge, an
//! unlisted one's none, and key files are never overwritten.

use serde_json::json;
use std::time::Duration;

mod common;
use common::free_port;
use common::proc::{last_json, run, wait_listening, Proc};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Key pairs `server`, `alice` and `mallory` made by `ptmp keys new` in
/// `dir`; a file's path by its name.
fn keys(dir: &std::path::Path) -> impl Fn(&str) -> String + '_ {
    for name in ["server", "alice", "mallory"] {
        let o = run(&["keys", "new", name, "--dir", dir.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    move |n: &str| dir.join(n).display().to_string()
}

/// `ptmp CMD -n N -p TYPE -a bind -e EP` as the CURVE server admitting
/// alice only, then `extra`; started and listening.
fn server(
    f: &dyn Fn(&str) -> String,
    cmd: &str,
    n: &str,
    stype: &str,
    ep: &str,
    extra: &[&str],
) -> Proc {
    let (secret, alice) = (f("server.key_secret"), f("alice.key"));
    let mut args = vec![cmd, "-n", n, "-p", stype, "-a", "bind", "-e", ep];
    args.extend(["--curve-secret", &secret, "--curve-allow", &alice]);
    args.extend_from_slice(extra);
    let p = Proc::spawn(&args);
    wait_listening(ep);
    p
}

#[test]
fn keys_are_made_once_and_shown() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().to_str().unwrap();
    let o = run(&["keys", "new", "alice", "--dir", dir]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let said = text(&o.stdout);
    let key = said
        .lines()
        .find_map(|l| l.strip_prefix("public key "))
        .expect("the public key is printed")
        .to_string();
    assert_eq!(key.len(), 40, "{said}");
    for f in ["alice.key", "alice.key_secret"] {
        let o = run(&["keys", "show", d.path().join(f).to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert_eq!(text(&o.stdout).trim(), key, "{f}");
    }
    let o = run(&["keys", "new", "alice", "--dir", dir]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("exists"), "{}", text(&o.stderr));
    let o = run(&["keys", "show", d.path().join("none.key").to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("none.key"), "{}", text(&o.stderr));
}

/// recv is the CURVE server admitting alice: alice's 2000 sets arrive,
/// mallory's (a key not on the list) none.
#[test]
fn send_and_recv_over_a_secured_edge() {
    let d = tempfile::tempdir().unwrap();
    let f = keys(d.path());
    let recv = |ep: &str, n: &str, timeout: &str| {
        server(&f, "recv", n, "PULL", ep, &["-T", timeout, "--json"])
    };
    let send = |ep: &str, who: &str, n: &str, server: &str| {
        run(&[
            "send",
            "-n",
            n,
            "-p",
            "PUSH",
            "-a",
            "connect",
            "-e",
            ep,
            "--linger",
            "1s",
            "--curve-secret",
            &f(&format!("{who}.key_secret")),
            "--curve-server-key",
            &f(server),
        ])
    };
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let rx = recv(&ep, "2000", "20s");
    wait_listening(&ep);
    let tx = send(&ep, "alice", "2000", "server.key");
    assert!(tx.status.success(), "{}", text(&tx.stderr));
    let out = rx.finish(Duration::from_secs(30));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let j = last_json(&out);
    assert_eq!(j["received"], json!(2000), "{j}");
    assert_eq!(j["lost"], json!(0), "{j}");

    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let rx = recv(&ep, "10", "5s");
    wait_listening(&ep);
    // A refused client says so and fails, rather than queueing into a
    // connection libzmq will never retry; so does one holding the wrong
    // server key.
    let tx = send(&ep, "mallory", "10", "server.key");
    assert_eq!(tx.status.code(), Some(1), "{}", text(&tx.stderr));
    let e = text(&tx.stderr);
    assert!(
        e.contains("refused this client's key") && e.contains(&ep),
        "{e}"
    );
    let tx = send(&ep, "alice", "10", "mallory.key");
    assert_eq!(tx.status.code(), Some(1), "{}", text(&tx.stderr));
    assert!(
        text(&tx.stderr).contains("handshake failed"),
        "{}",
        text(&tx.stderr)
    );
    // One that sends more than a queue holds is stopped at the refusal,
    // not left waiting for room.
    let tx = send(&ep, "mallory", "200000", "server.key");
    assert_eq!(tx.status.code(), Some(1), "{}", text(&tx.stderr));
    assert!(text(&tx.stderr).contains("refused"), "{}", text(&tx.stderr));
    let out = rx.finish(Duration::from_secs(30));
    let j = last_json(&out);
    assert_eq!(j["received"], json!(0), "{j}\n{}", text(&out.stderr));

    // A receiving client refused by a binding sender's allow-list is told
    // too, and ends with exit 1 rather than waiting for sets that cannot
    // come.
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let tx = server(&f, "send", "10", "PUSH", &ep, &[]);
    let o = run(&[
        "recv",
        "-n",
        "10",
        "-p",
        "PULL",
        "-a",
        "connect",
        "-e",
        &ep,
        "-T",
        "20s",
        "--curve-secret",
        &f("mallory.key_secret"),
        "--curve-server-key",
        &f("server.key"),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("refused this client's key"),
        "{}",
        text(&o.stderr)
    );
    drop(tx);

    // Half a CURVE setting is a usage error that says what is missing.
    let o = run(&[
        "recv",
        "-p",
        "PULL",
        "-e",
        &ep,
        "--curve-secret",
        &f("server.key_secret"),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("--curve-allow"),
        "{}",
        text(&o.stderr)
    );
}

/// `ptmp cat` takes CURVE in its socket JSON: it copies a plain edge into
/// a secured one, and a cat holding a key the server does not list stops
/// with exit 1 naming the side refused, whether it writes or reads.
#[test]
fn cat_copies_into_a_secured_edge_and_is_refused_without_a_listed_key() {
    let d = tempfile::tempdir().unwrap();
    let f = keys(d.path());
    let client = |ep: &str, stype: &str, who: &str| {
        json!({"socket": {"type": stype, "connect": ep, "linger_ms": 1000,
               "curve": {"secret_key_file": f(&format!("{who}.key_secret")),
                         "server_key": f("server.key")}}})
        .to_string()
    };
    let secured = format!("tcp://127.0.0.1:{}", free_port());
    let plain = format!("tcp://127.0.0.1:{}", free_port());
    let rx = server(
        &f,
        "recv",
        "300",
        "PULL",
        &secured,
        &["-T", "20s", "--json"],
    );
    let tx = Proc::spawn(&[
        "send", "-n", "300", "-p", "PUSH", "-a", "bind", "-e", &plain,
    ]);
    wait_listening(&plain);
    let cat = run(&[
        "cat",
        "-n",
        "300",
        "--isock",
        &format!("PULL,connect,{plain}"),
        "--osock",
        &client(&secured, "PUSH", "alice"),
    ]);
    assert!(cat.status.success(), "{}", text(&cat.stderr));
    let out = rx.finish(Duration::from_secs(30));
    let j = last_json(&out);
    assert_eq!(
        (j["received"].clone(), j["lost"].clone()),
        (json!(300), json!(0)),
        "{j}"
    );
    assert!(tx.finish(Duration::from_secs(30)).status.success());

    // Writing with a key not listed: refused, nothing claimed delivered.
    let secured = format!("tcp://127.0.0.1:{}", free_port());
    let plain = format!("tcp://127.0.0.1:{}", free_port());
    let rx = server(&f, "recv", "1", "PULL", &secured, &["-T", "10s"]);
    let tx = Proc::spawn(&["send", "-n", "20", "-p", "PUSH", "-a", "bind", "-e", &plain]);
    wait_listening(&plain);
    let cat = run(&[
        "cat",
        "-n",
        "20",
        "--isock",
        &format!("PULL,connect,{plain}"),
        "--osock",
        &client(&secured, "PUSH", "mallory"),
    ]);
    let e = text(&cat.stderr);
    assert_eq!(cat.status.code(), Some(1), "{e}");
    assert!(
        e.contains("--osock refused") && e.contains("refused this client's key"),
        "{e}"
    );
    drop((rx, tx));

    // Reading with a key not listed: refused, not left waiting.
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let tx = server(&f, "send", "10", "PUSH", &ep, &[]);
    let cat = run(&[
        "cat",
        "-n",
        "10",
        "-T",
        "20s",
        "--isock",
        &client(&ep, "PULL", "mallory"),
    ]);
    let e = text(&cat.stderr);
    assert_eq!(cat.status.code(), Some(1), "{e}");
    assert!(
        e.contains("--isock refused") && e.contains("refused this client's key"),
        "{e}"
    );
    drop(tx);
}

/// An agent of `ptmp run` whose CURVE server refuses its key stops the
/// run with an error naming the agent and the refusal, instead of waiting
/// for ever on a connection libzmq will not retry.
#[test]
fn an_agent_refused_by_its_curve_server_stops_the_run() {
    let d = tempfile::tempdir().unwrap();
    let f = keys(d.path());
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let tx = Proc::spawn(&[
        "send",
        "-n",
        "1000",
        "--rate",
        "100",
        "-p",
        "PUSH",
        "-a",
        "bind",
        "-e",
        &ep,
        "--curve-secret",
        &f("server.key_secret"),
        "--curve-allow",
        &f("alice.key"),
    ]);
    wait_listening(&ep);
    let cfg = json!({"name": "refused", "proxies": [
        {"name": "win", "type": "window", "data": {"tspan": 1000, "tbuf": 3000,
            "input": {"socket": {"type": "PULL", "connect": [ep],
                "curve": {"secret_key_file": f("mallory.key_secret"),
                          "server_key": f("server.key")}}},
            "output": {"socket": {"type": "PUSH", "bind": ["inproc://refused-out"]}}}}]});
    let p = d.path().join("refused.json");
    std::fs::write(&p, cfg.to_string()).unwrap();
    let o = Proc::spawn(&["run", p.to_str().unwrap()]).finish(Duration::from_secs(30));
    let e = text(&o.stderr);
    assert!(!o.status.success(), "{e}");
    assert!(
        e.contains("agent win: refused:")
            && e.contains("refused this client's key")
            && e.contains(&ep),
        "{e}"
    );
    drop(tx);
}

/// `ptmp recv` whose allow list is a directory holding a FIFO named like
/// a certificate: it ends at once with an error naming the FIFO, instead
/// of waiting in its open for a writer (deaf to SIGINT and SIGTERM).
#[test]
fn recv_refuses_a_fifo_in_its_allow_directory() {
    let d = tempfile::tempdir().unwrap();
    let f = keys(d.path());
    let allowed = d.path().join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    std::fs::copy(f("alice.key"), allowed.join("alice.key")).unwrap();
    let fifo = allowed.join("zz.key");
    let o = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .output()
        .unwrap();
    assert!(o.status.success(), "mkfifo: {}", text(&o.stderr));
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let secret = f("server.key_secret");
    let o = Proc::spawn(&[
        "recv",
        "-n",
        "1",
        "-p",
        "PULL",
        "-a",
        "bind",
        "-e",
        &ep,
        "--curve-secret",
        &secret,
        "--curve-allow",
        allowed.to_str().unwrap(),
    ])
    .finish(Duration::from_secs(60));
    let e = text(&o.stderr);
    assert!(!o.status.success(), "{e}");
    assert!(
        e.contains("socket.curve.allow[0]")
            && e.contains(&fifo.display().to_string())
            && e.contains("a FIFO, not a regular file"),
        "{e}"
    );
}

/// A secret key file others may read is refused by send and recv,
/// naming the file, its mode and the fix; `ptmp keys new` writes the
/// secret 0600, so its files pass.
#[test]
fn a_secret_key_file_others_may_read_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let f = keys(d.path());
    let secret = f("server.key_secret");
    let mode = |p: &str| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&secret), 0o600);
    assert_eq!(mode(&f("server.key")), 0o644);
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let o = Proc::spawn(&[
        "recv",
        "-n",
        "1",
        "-p",
        "PULL",
        "-a",
        "bind",
        "-e",
        &ep,
        "--curve-secret",
        &secret,
        "--curve-allow",
        &f("alice.key"),
    ])
    .finish(Duration::from_secs(60));
    let e = text(&o.stderr);
    assert!(!o.status.success(), "{e}");
    assert!(
        e.contains(&format!("{secret} holds a secret key, but its mode 0644"))
            && e.contains(&format!("chmod 600 {secret}")),
        "{e}"
    );
    let o = run(&["keys", "show", &secret]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("mode 0644"), "{}", text(&o.stderr));
}
