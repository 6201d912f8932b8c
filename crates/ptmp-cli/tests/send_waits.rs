//! A `ptmp send` with nobody to take its sets says what it waits for, and a
//! run stopped before any set left does not end as a success.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
use common::{finish, text, wait_for, PTMP};

#[test]
fn send_with_no_receiver_says_it_waits_and_an_interrupted_run_of_nothing_fails() {
    let d = tempfile::tempdir().unwrap();
    let ep = format!("ipc://{}/nobody", d.path().display());
    let mut child = Command::new(PTMP)
        .args(["send", "-n", "100", "-p", "PUSH", "-a", "bind", "-e", &ep])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first lines it prints: the wait must be named, with the address.
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    let waiting = wait_for(Duration::from_secs(60), "the waiting line", || {
        while let Ok(l) = rx.try_recv() {
            seen.push(l);
        }
        seen.iter().find(|l| l.starts_with("waiting:")).cloned()
    });
    assert!(
        waiting.contains("no receiver has taken a set yet") && waiting.contains(&ep),
        "{waiting}"
    );
    // SAFETY: kill(2) on our own unreaped child: its pid cannot be reused.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = finish(child, Duration::from_secs(60));
    reader.join().unwrap();
    while let Ok(l) = rx.try_recv() {
        seen.push(l);
    }
    let all = seen.join("\n") + &text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("sent nothing"), "{all}");
}
