//! `ptmp send` and `ptmp recv` over a shm:// ring read by a receiver with
//! an identity (`shm_reader_id`): the receiver commits what it counted,
//! so it receives everything, and a sender whose durable reader is stopped,
//! dead within its grace time, or given up after it, says the sets it did
//! not commit may be undelivered and exits 3.

mod common;
use common::proc::{last_json, run, Proc};
use common::wait_for;
use ptmp_shm::{ChannelConfig, Policy, Writer};
use serde_json::{json, Value};
use std::time::Duration;

/// A channel name for this test and process, removed at the end.
struct Chan(String);

impl Chan {
    fn new(tag: &str) -> Chan {
        Chan(format!("cli-durable-{tag}-{}", std::process::id()))
    }

    fn ep(&self) -> String {
        format!("shm://{}", self.0)
    }

    /// A durable `ptmp recv` of `n` sets on this channel.
    fn recv(&self, n: u64, grace_ms: u64) -> Proc {
        let cfg = json!({"socket": {"type": "PULL", "connect": [self.ep()],
                                    "shm_reader_id": "cli/recv/in",
                                    "shm_reader_grace_ms": grace_ms}})
        .to_string();
        Proc::spawn(&[
            "recv",
            "-n",
            &n.to_string(),
            "--config",
            &cfg,
            "-T",
            "20000",
            "--json",
        ])
    }

    /// The PUSH config of a sender on this channel.
    fn push(&self) -> String {
        json!({"socket": {"type": "PUSH", "bind": [self.ep()], "shm_slots": SLOTS,
                          "shm_max_message": MAX}})
        .to_string()
    }

    /// Make the ring (as `push` would) and wait until `pid` reads it under
    /// its identity.
    fn ready_for(&self, pid: u32) {
        let w = Writer::create(
            &self.0,
            ChannelConfig {
                slots: SLOTS,
                max_message: MAX,
                policy: Policy::Block,
            },
        )
        .unwrap();
        wait_for(Duration::from_secs(30), "the receiver to attach", || {
            let (_, readers) = ptmp_shm::inspect(&self.0).ok()?;
            readers
                .iter()
                .any(|r| r.pid == pid && r.durable)
                .then_some(())
        });
        drop(w);
    }
}

impl Drop for Chan {
    fn drop(&mut self) {
        let _ = ptmp_shm::remove(&self.0);
    }
}

const SLOTS: usize = 256;
const MAX: usize = 4096;

fn signal(p: &Proc, sig: i32) {
    let pid = p.0.as_ref().unwrap().id();
    // SAFETY: kill(2) on our own child, not yet reaped.
    assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
}

fn pid(p: &Proc) -> u32 {
    p.0.as_ref().unwrap().id()
}

/// `ptmp send -n 100 --linger 300ms` on `c`: its exit code and JSON line.
fn send_100(c: &Chan) -> (Option<i32>, Value, String) {
    let out = run(&[
        "send",
        "-n",
        "100",
        "--config",
        &c.push(),
        "--linger",
        "300",
        "--json",
    ]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), last_json(&out), err)
}

#[test]
fn a_durable_recv_receives_every_set_of_a_send_over_shm() {
    let c = Chan::new("all");
    let rx = c.recv(20_000, 5000);
    let cfg = json!({"socket": {"type": "PUSH", "bind": [c.ep()]}}).to_string();
    let tx = run(&["send", "-n", "20000", "--config", &cfg, "--json"]);
    let rj = last_json(&rx.finish(Duration::from_secs(60)));
    assert_eq!(
        (rj["received"].clone(), rj["lost"].clone()),
        (json!(20000), json!(0)),
        "{rj}"
    );
    let tj = last_json(&tx);
    assert_eq!(tx.status.code(), Some(0), "{tj}");
    assert_eq!(tj["undelivered"], json!(0), "{tj}");
}

#[test]
fn a_send_whose_durable_reader_is_stopped_says_what_it_did_not_commit_and_exits_3() {
    let c = Chan::new("stopped");
    let rx = c.recv(100, 60_000);
    c.ready_for(pid(&rx));
    signal(&rx, libc::SIGSTOP);
    let (code, j, err) = send_100(&c);
    signal(&rx, libc::SIGCONT);
    assert_eq!(code, Some(3), "{j} {err}");
    assert_eq!(
        (j["undelivered"].clone(), j["undelivered_is"].clone()),
        (json!(100), json!("at_most")),
        "{j}"
    );
    let why = format!(
        "{}: durable reader (pid {}) has not committed 100",
        c.ep(),
        pid(&rx)
    );
    assert_eq!(j["undelivered_why"], json!(why), "{j}");
    assert!(err.contains(&why), "{err}");
    // The ring kept them: the receiver, let go on, gets all 100.
    let rj = last_json(&rx.finish(Duration::from_secs(60)));
    assert_eq!(rj["received"], json!(100), "{rj}");
}

#[test]
fn a_send_whose_durable_reader_died_counts_it_within_its_grace_and_after() {
    // Killed within a grace time of a minute: its place is kept, and its
    // successor gets every set.
    let c = Chan::new("killed");
    let rx = c.recv(100, 60_000);
    c.ready_for(pid(&rx));
    let dead = pid(&rx);
    signal(&rx, libc::SIGKILL);
    drop(rx);
    let (code, j, err) = send_100(&c);
    assert_eq!(code, Some(3), "{j} {err}");
    assert_eq!(j["undelivered"], json!(100), "{j}");
    let why = j["undelivered_why"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        why.contains(&format!("durable reader (pid {dead}, dead")) && why.ends_with(" 100"),
        "{why}"
    );
    let rj = last_json(&c.recv(100, 60_000).finish(Duration::from_secs(60)));
    assert_eq!(rj["received"], json!(100), "{rj}");

    // Killed with a grace time shorter than the sender's linger: given up
    // while the sender finishes, still counted.
    let c = Chan::new("given-up");
    let rx = c.recv(100, 100);
    c.ready_for(pid(&rx));
    signal(&rx, libc::SIGKILL);
    drop(rx);
    let out = run(&[
        "send",
        "-n",
        "100",
        "--config",
        &c.push(),
        "--linger",
        "10s",
        "--json",
    ]);
    let j = last_json(&out);
    assert_eq!(out.status.code(), Some(3), "{j}");
    assert_eq!(j["undelivered"], json!(100), "{j}");
    let why = j["undelivered_why"].as_str().unwrap_or_default();
    assert!(why.contains("given up with 100 not committed"), "{why}");
}
