//! A machine with systemd as PID 1 for tests: `systemd-nspawn --boot` of
//! this machine's own `/usr` (read-only) in a root directory of its own,
//! its network the namespace it is given. `systemctl` and `journalctl` run
//! inside through `nsenter`. The host's systemd is not needed: the
//! container is not registered (`--register=no --keep-unit`), and
//! nspawn's bookkeeping directory is a tmpfs in a mount namespace of the
//! container's own (on a host whose /run is not a tmpfs nspawn refuses to
//! clean it up).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const NSPAWN: &str = "/usr/bin/systemd-nspawn";

/// One booted container.
pub struct Machine {
    pub name: String,
    pub root: PathBuf,
    netns: String,
    binds: Vec<String>,
    nspawn: Option<Child>,
    leader: i32,
}

/// The pid of a child of `parent`, if it has one.
fn child_of(parent: u32) -> Option<i32> {
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        // pid (comm) state ppid ...: the comm may hold spaces.
        let after = stat.rsplit_once(')').map_or("", |x| x.1);
        if after.split_whitespace().nth(1) == Some(&parent.to_string()) {
            return Some(pid);
        }
    }
    None
}

impl Machine {
    /// A root directory under `dir` with what systemd needs to boot
    /// (the rest is the host's /usr); `binds` are paths seen inside at the
    /// same place (`ro:` in front for read-only).
    pub fn prepare(dir: &Path, name: &str, netns: &str, binds: &[String]) -> Machine {
        let root = dir.join(format!("root-{name}"));
        for d in [
            "etc/systemd/system",
            "var",
            "tmp",
            "root",
            "run",
            "proc",
            "sys",
            "dev",
            "usr",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for l in ["bin", "sbin", "lib", "lib64"] {
            let _ = std::os::unix::fs::symlink(format!("usr/{l}"), root.join(l));
        }
        std::fs::copy("/etc/os-release", root.join("etc/os-release")).unwrap();
        std::fs::write(root.join("etc/machine-id"), "").unwrap();
        std::fs::write(root.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n").unwrap();
        std::fs::write(root.join("etc/group"), "root:x:0:\n").unwrap();
        std::fs::write(root.join("etc/hostname"), format!("{name}\n")).unwrap();
        Machine {
            name: name.to_string(),
            root,
            netns: netns.to_string(),
            binds: binds.to_vec(),
            nspawn: None,
            leader: 0,
        }
    }

    /// Boots it and waits until systemd says it is running.
    pub fn boot(&mut self) -> Result<(), String> {
        std::fs::create_dir_all("/run/systemd/nspawn").map_err(|e| e.to_string())?;
        let mut args = vec![
            format!("--directory={}", self.root.display()),
            "--register=no".into(),
            "--keep-unit".into(),
            "--quiet".into(),
            "--bind-ro=/usr".into(),
            format!("--machine={}", self.name),
            format!("--network-namespace-path=/run/netns/{}", self.netns),
        ];
        for b in &self.binds {
            args.push(match b.strip_prefix("ro:") {
                Some(p) => format!("--bind-ro={p}"),
                None => format!("--bind={b}"),
            });
        }
        args.extend(["--boot".into(), "systemd.firstboot=off".into()]);
        let script = format!("mount -t tmpfs tmpfs /run/systemd/nspawn && exec {NSPAWN} \"$@\"");
        let log = std::fs::File::create(self.root.with_extension("console")).unwrap();
        let child = Command::new("unshare")
            .args([
                "-m",
                "--propagation",
                "private",
                "sh",
                "-c",
                &script,
                "nspawn",
            ])
            .args(&args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("unshare: {e}"))?;
        let pid = child.id();
        self.nspawn = Some(child);
        let t0 = Instant::now();
        loop {
            // The container's init, once systemd-nspawn has started it:
            // not the shell's `mount` that runs just before (a child of
            // the same pid for a moment), nor the init before its exec.
            let comm = |p: i32| std::fs::read_to_string(format!("/proc/{p}/comm"));
            if self.leader != 0 && comm(self.leader).map_or(true, |c| c.trim() != "systemd") {
                self.leader = 0;
            }
            if self.leader == 0 {
                self.leader = child_of(pid).unwrap_or(0);
            }
            if self.leader != 0 {
                let o = self.systemctl(&["is-system-running"]);
                let s = String::from_utf8_lossy(&o.stdout).trim().to_string();
                if s == "running" || s == "degraded" {
                    return Ok(());
                }
            }
            if let Some(Ok(Some(st))) = self.nspawn.as_mut().map(|c| c.try_wait()) {
                return Err(format!("systemd-nspawn ended ({st}): {}", self.console()));
            }
            // A boot takes a few seconds; a loaded machine (the test
            // suite on two cores) has been seen to need more than 60.
            if t0.elapsed() > Duration::from_secs(120) {
                return Err(format!(
                    "{} did not boot in 120 s: {}",
                    self.name,
                    self.console()
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// What the container printed on its console.
    pub fn console(&self) -> String {
        std::fs::read_to_string(self.root.with_extension("console")).unwrap_or_default()
    }

    /// A program run inside (all of its namespaces).
    pub fn run(&self, program: &str, args: &[&str]) -> Output {
        Command::new("nsenter")
            .args(["-t", &self.leader.to_string(), "-a", program])
            .args(args)
            .output()
            .unwrap()
    }

    pub fn systemctl(&self, args: &[&str]) -> Output {
        self.run("systemctl", args)
    }

    /// `systemctl show -p KEY --value UNIT`.
    pub fn show(&self, unit: &str, key: &str) -> String {
        let o = self.systemctl(&["show", "-p", key, "--value", unit]);
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }

    /// The unit's journal.
    pub fn journal(&self, unit: &str) -> String {
        let o = self.run("journalctl", &["-u", unit, "--no-pager", "-o", "cat"]);
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Powered off: PID 1 killed, and with it every process inside.
    pub fn power_off(&mut self) {
        if self.leader != 0 {
            // SAFETY: kill(2) of this container's PID 1.
            unsafe {
                libc::kill(self.leader, libc::SIGKILL);
            }
        }
        if let Some(mut c) = self.nspawn.take() {
            let t0 = Instant::now();
            while c.try_wait().ok().flatten().is_none() && t0.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        self.leader = 0;
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        if self.nspawn.is_some() {
            let _ = self.systemctl(&["poweroff"]);
            if let Some(c) = self.nspawn.as_mut() {
                let t0 = Instant::now();
                while c.try_wait().ok().flatten().is_none()
                    && t0.elapsed() < Duration::from_secs(15)
                {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
            self.power_off();
        }
    }
}
