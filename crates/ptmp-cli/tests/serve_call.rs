//! `ptmp serve` and `ptmp call` as separate processes: an echo, a command
//! run per request, a refusal and a missing server each with its exit
//! code and words, and a server stopped by a signal that says what it did.

use std::io::Write as _;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

mod common;
use common::{finish, spawn, text, wait_for, PTMP};

const LIMIT: Duration = Duration::from_secs(60);

fn call(args: &[&str]) -> Output {
    let mut all = vec!["call"];
    all.extend_from_slice(args);
    finish(spawn(&all), LIMIT)
}

/// Wait until the server's ipc socket file is there.
fn listening(path: &std::path::Path) {
    wait_for(LIMIT, "the server's socket file", || {
        path.exists().then_some(())
    });
}

#[test]
fn an_echo_server_answers_each_call_and_counts_them() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("echo");
    let at = format!("ipc://{}", path.display());
    let server = spawn(&["serve", &at, "-n", "3"]);
    listening(&path);
    let o = call(&[&at, "hello there"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(o.stdout, b"hello there");
    // The request from standard input, bytes that are not text included.
    let mut c = Command::new(PTMP)
        .args(["call", &at, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let bytes: Vec<u8> = (0..=255u8).collect();
    c.stdin.take().unwrap().write_all(&bytes).unwrap();
    let o = finish(c, LIMIT);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(o.stdout, bytes);
    // An empty request is a request.
    let o = call(&[&at]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty());
    let o = finish(server, LIMIT);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("received 3, answered 3, refused 0"), "{err}");
}

#[test]
fn a_command_answers_and_its_failure_is_a_refusal() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("cmd");
    let at = format!("ipc://{}", path.display());
    let script =
        "if [ \"$(cat)\" = bad ]; then echo 'no such thing' >&2; exit 3; fi; echo answered";
    let server = spawn(&["serve", &at, "--exec", script, "-n", "2"]);
    listening(&path);
    let o = call(&[&at, "good"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "answered\n");
    let o = call(&[&at, "bad"]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("refused") && err.contains("no such thing") && err.contains(&at),
        "{err}"
    );
    assert!(o.stdout.is_empty());
    let o = finish(server, LIMIT);
    assert!(
        text(&o.stderr).contains("answered 1, refused 1"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn no_server_is_said_within_the_timeout() {
    let d = tempfile::tempdir().unwrap();
    let at = format!("ipc://{}/nobody", d.path().display());
    let t0 = std::time::Instant::now();
    let o = call(&[&at, "anyone?", "--timeout", "400ms"]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.contains("no server") && err.contains(&at), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    // Wrong input is a usage error, named.
    let o = call(&[&at, "x", "--timeout", "soon"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let o = call(&[
        "--config",
        r#"{"socket":{"type":"PUSH","connect":["ipc:///nowhere"]}}"#,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("DEALER"), "{}", text(&o.stderr));
}

#[test]
fn a_stopped_server_ends_cleanly_with_its_counts() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("stop");
    let at = format!("ipc://{}", path.display());
    let server = spawn(&["serve", &at]);
    listening(&path);
    let o = call(&[&at, "one"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let pid = server.id().to_string();
    let k = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(k.success());
    let o = finish(server, LIMIT);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("received 1, answered 1"),
        "{}",
        text(&o.stderr)
    );
    // Asked again, nobody answers: said as such.
    let o = call(&[&at, "two", "--timeout", "300ms"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
}
