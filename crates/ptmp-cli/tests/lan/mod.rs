//! Hosts on one LAN for tests: network namespaces joined by a bridge in
//! a namespace of its own (the switch), so multicast DNS reaches them all.
//! Needs root and iproute2's `ip`; `Lan::make` gives `None` without them.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `count` namespaces (the hosts, 10.232.0.1 up) on a bridge in one more
/// (the switch),
/// removed on drop.
pub struct Lan {
    pub hosts: Vec<String>,
    pub switch: String,
}

impl Lan {
    pub fn make(count: usize, tag: &str) -> Option<Lan> {
        let id = std::process::id() % 100_000;
        let lan = Lan {
            hosts: (0..count).map(|i| format!("ptmp{tag}{i}x{id}")).collect(),
            switch: format!("ptmp{tag}sw{id}"),
        };
        let sw = lan.switch.as_str();
        let mut ok = ip(&["netns", "add", sw])
            && ip(&["-n", sw, "link", "add", "br0", "type", "bridge"])
            && ip(&["-n", sw, "link", "set", "br0", "up"]);
        for (i, h) in lan.hosts.iter().enumerate() {
            let (v, s) = (format!("v{i}"), format!("s{i}"));
            let addr = format!("10.232.0.{}/24", i + 1);
            ok = ok
                && ip(&["netns", "add", h])
                && ip(&[
                    "link", "add", &v, "netns", h, "type", "veth", "peer", "name", &s, "netns", sw,
                ])
                && ip(&["-n", sw, "link", "set", &s, "master", "br0", "up"])
                && ip(&["-n", h, "addr", "add", &addr, "dev", &v])
                && ip(&["-n", h, "link", "set", &v, "up", "multicast", "on"])
                && ip(&["-n", h, "link", "set", "lo", "up"]);
        }
        ok.then_some(lan)
    }
}

impl Drop for Lan {
    fn drop(&mut self) {
        for h in &self.hosts {
            ip(&["netns", "del", h]);
        }
        ip(&["netns", "del", &self.switch]);
    }
}

/// A child process killed (SIGKILL) when dropped, so that a failing test
/// leaves nothing running in its namespaces.
pub struct Reaped(pub std::process::Child);

impl std::ops::Deref for Reaped {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for Reaped {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `program args` started in namespace `ns`, its output piped.
pub fn spawn_in(ns: &str, program: impl AsRef<OsStr>, args: &[&str]) -> Reaped {
    Reaped(
        Command::new("ip")
            .args(["netns", "exec", ns])
            .arg(program)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

impl Reaped {
    /// Waits for the process to end and takes what it wrote; fails (and
    /// the process is killed on drop) after `limit`.
    pub fn finish(mut self, limit: Duration, what: &str) -> Output {
        use std::io::Read;
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = self.try_wait().unwrap() {
                break s;
            }
            assert!(t0.elapsed() < limit, "{what} did not finish in {limit:?}");
            std::thread::sleep(Duration::from_millis(20));
        };
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let _ = self.stdout.take().unwrap().read_to_end(&mut stdout);
        let _ = self.stderr.take().unwrap().read_to_end(&mut stderr);
        Output {
            status,
            stdout,
            stderr,
        }
    }
}
