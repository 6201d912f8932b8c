//! `ptmp recv` on a shared-memory channel whose segment is corrupted under
//! it: the process ends (with an error naming the corruption, on its
//! timeout, or on SIGINT), never spins at full CPU forever.

use ptmp_shm::{ChannelConfig, Policy, Writer};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::PTMP;

const NEXT_SEQ: u64 = 128;

struct Chan(String);

impl Chan {
    fn new(tag: &str) -> Chan {
        Chan(format!("cli-fault-{tag}-{}", std::process::id()))
    }

    fn poke_u64(&self, off: u64, v: u64) {
        std::fs::OpenOptions::new()
            .write(true)
            .open(ptmp_shm::segment_path(&self.0).unwrap())
            .unwrap()
            .write_all_at(&v.to_ne_bytes(), off)
            .unwrap();
    }
}

impl Drop for Chan {
    fn drop(&mut self) {
        let _ = ptmp_shm::remove(&self.0);
    }
}

fn writer(c: &Chan) -> Writer {
    Writer::create(
        &c.0,
        ChannelConfig {
            slots: 8,
            max_message: 256,
            policy: Policy::Overwrite,
        },
    )
    .unwrap()
}

fn recv(c: &Chan, timeout_ms: &str) -> Child {
    let ep = format!("shm://{}", c.0);
    Command::new(PTMP)
        .args([
            "recv", "-n", "1000", "-p", "SUB", "-a", "connect", "-e", &ep, "-T", timeout_ms,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait for `c` to end, at most 20 s; its exit status and stderr.
fn ended(mut c: Child, what: &str) -> (std::process::ExitStatus, String) {
    // Not waited on by a blocking read: stderr is read after the exit.
    let t0 = Instant::now();
    let s = loop {
        if let Some(s) = c.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = c.kill();
            let _ = c.wait();
            panic!("{what}: ptmp recv still running after 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    c.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(s.signal(), None, "{what}: killed by a signal: {err}");
    (s, err)
}

#[test]
fn recv_without_timeout_on_a_corrupted_channel_exits_with_the_error() {
    let c = Chan::new("never");
    let _w = writer(&c);
    let child = recv(&c, "-1");
    // Let it attach and go to sleep, then claim 1000 messages no slot holds.
    std::thread::sleep(Duration::from_millis(500));
    c.poke_u64(NEXT_SEQ, 1000);
    let (s, err) = ended(child, "corrupt next_seq");
    assert!(!s.success(), "{err}");
    assert!(err.contains("corrupt") && err.contains(&c.0), "{err}");
}

fn sigint(c: &Child) {
    // It may already have ended on the error: then `kill` finds nobody.
    let _ = Command::new("kill")
        .args(["-INT", &c.id().to_string()])
        .status();
}

#[test]
fn recv_on_a_corrupted_channel_ends_on_sigint() {
    // Corruption that is reported: SIGINT or the error, whichever comes
    // first, ends it (the old reader spun inside one receive and ignored
    // both).
    let c = Chan::new("sigint");
    let _w = writer(&c);
    let child = recv(&c, "-1");
    std::thread::sleep(Duration::from_millis(500));
    c.poke_u64(NEXT_SEQ, 1000);
    sigint(&child);
    ended(child, "SIGINT after corruption");

    // Corruption a reader cannot tell from "nothing new" (every stamp
    // zeroed): with no timeout only SIGINT ends it, and it does, cleanly.
    let c = Chan::new("sigint-quiet");
    let _w = writer(&c);
    let child = recv(&c, "-1");
    std::thread::sleep(Duration::from_millis(500));
    for i in 0..8u64 {
        c.poke_u64(8192 + i * 320, 0);
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        Command::new("kill")
            .args(["-0", &child.id().to_string()])
            .status()
            .unwrap()
            .success(),
        "ptmp recv -T -1 ended by itself on a quiet channel"
    );
    sigint(&child);
    ended(child, "SIGINT on a quiet channel");
}

#[test]
fn recv_with_a_timeout_on_a_quietly_corrupted_channel_ends_on_its_timeout() {
    let c = Chan::new("timeout");
    let _w = writer(&c);
    let child = recv(&c, "300");
    std::thread::sleep(Duration::from_millis(100));
    // Stamps of a past lap in every slot: consistent, so "nothing new".
    for i in 0..8u64 {
        c.poke_u64(8192 + i * 320, 0);
    }
    let (_, err) = ended(child, "timeout");
    assert!(!err.contains("panicked"), "{err}");
}

/// `ptmp shm rm --stale` cleans up this user's dead channels but keeps a
/// link and another user's segment (saying so); `ls` shows why they are
/// refused, and nothing follows the link.
#[test]
fn shm_rm_stale_keeps_links_and_other_users_segments() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    // A dead channel of ours: a valid segment with no writer.
    let ours = Command::new(PTMP)
        .args(["send", "-n", "1", "-p", "PUB", "-e", "shm://mine"])
        .env("PTMP_SHM_DIR", dir)
        .output()
        .unwrap();
    assert!(dir.join("ptmp.mine").exists(), "{ours:?}");
    // Another user's (mode 0644: refused even if the owner is this user).
    std::fs::copy(dir.join("ptmp.mine"), dir.join("ptmp.theirs")).unwrap();
    std::fs::set_permissions(dir.join("ptmp.theirs"), PermissionsExt::from_mode(0o644)).unwrap();
    // A link to a file outside the directory.
    let target = dir.join("outside");
    std::fs::copy(dir.join("ptmp.mine"), &target).unwrap();
    std::os::unix::fs::symlink(&target, dir.join("ptmp.link")).unwrap();
    let before = std::fs::read(&target).unwrap();

    let ls = Command::new(PTMP)
        .args(["shm", "ls"])
        .env("PTMP_SHM_DIR", dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&ls.stdout);
    assert!(
        out.contains("symbolic link") && out.contains("mode 0644"),
        "{out}"
    );

    let rm = Command::new(PTMP)
        .args(["shm", "rm", "--stale"])
        .env("PTMP_SHM_DIR", dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&rm.stderr);
    assert!(rm.status.success(), "{err}");
    assert!(!dir.join("ptmp.mine").exists(), "{err}");
    assert!(dir.join("ptmp.theirs").exists(), "{err}");
    assert!(
        std::fs::symlink_metadata(dir.join("ptmp.link")).is_ok(),
        "{err}"
    );
    assert!(
        err.contains("kept theirs") && err.contains("kept link"),
        "{err}"
    );
    assert_eq!(std::fs::read(&target).unwrap(), before);
}
