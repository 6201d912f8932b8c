//! "Send N and exit at once" against a slow receiver, with real processes:
//! `ptmp send` exits as soon as its last send returns while a PULL that
//! spends about 200 us on every message is far behind. Every TPSet must
//! arrive, or the sender must say (exit status 3 and its JSON report) how
//! many may not have; never "drained" with a silent loss.
//!
//! The four cases (ipc and tcp, sender binding and connecting) run at the
//! same time, each in its own thread: the receivers mostly sleep, so the
//! total stays a few seconds even on a loaded two-core machine.

use ptmp::{Receiver, TPSet};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
use common::{free_port, PTMP};

const N: u64 = 20_000;

/// Run one case; returns a description of the failure, if any.
fn case(ep: String, sender_binds: bool) -> Result<(), String> {
    let (tx_attach, rx_key) = if sender_binds {
        ("bind", "connect")
    } else {
        ("connect", "bind")
    };
    // The receiver attaches first: bound, it is there when the sender
    // connects; connecting, libzmq retries until the sender binds.
    let mut rx = Receiver::from_json(
        &serde_json::json!({"socket": {"type": "PULL", rx_key: [ep.clone()]}}).to_string(),
    )
    .map_err(|e| format!("{ep}: receiver: {e}"))?;
    let n = N.to_string();
    let child = Command::new(PTMP)
        .args([
            "send", "-n", &n, "-p", "PUSH", "-a", tx_attach, "-e", &ep, "--json",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{ep}: spawn: {e}"))?;
    let mut got = 0u64;
    let mut set = TPSet::default();
    // Generous silence limit: only ends the loop once the sender is gone
    // and nothing more will come; it does not time anything.
    while got < N {
        match rx.recv_into(&mut set, Some(Duration::from_secs(5))) {
            Ok(true) => {
                got += 1;
                std::thread::sleep(Duration::from_micros(200));
            }
            Ok(false) => break,
            Err(e) => return Err(format!("{ep}: recv: {e}")),
        }
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("{ep}: wait: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let j: Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| format!("{ep}: no JSON report; stderr: {stderr}"))?;
    let code = out.status.code();
    let what = format!(
        "{ep} (sender {tx_attach}s): received {got} of {N}, exit {code:?}, report {j}, stderr: {stderr}"
    );
    eprintln!("{what}");
    match code {
        Some(0) if got == N => Ok(()),
        Some(0) => Err(format!("silent loss: {what}")),
        // The sender admitted a possible loss: it must cover what is missing.
        Some(3) => match j["undelivered"].as_u64() {
            Some(u) if got + u >= N && u > 0 => Ok(()),
            _ => Err(format!("loss larger than reported: {what}")),
        },
        _ => Err(format!("sender failed: {what}")),
    }
}

#[test]
fn fast_quit_against_a_slow_receiver_loses_nothing_or_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut cases = Vec::new();
    for sender_binds in [true, false] {
        let ipc = format!(
            "ipc://{}",
            dir.path()
                .join(format!("fq-{}.ipc", u8::from(sender_binds)))
                .display()
        );
        cases.push((ipc, sender_binds));
        cases.push((format!("tcp://127.0.0.1:{}", free_port()), sender_binds));
    }
    let threads: Vec<_> = cases
        .into_iter()
        .map(|(ep, b)| std::thread::spawn(move || case(ep, b)))
        .collect();
    let errors: Vec<String> = threads
        .into_iter()
        .filter_map(|t| t.join().unwrap().err())
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}
