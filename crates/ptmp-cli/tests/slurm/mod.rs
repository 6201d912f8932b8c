//! A Slurm cluster on one machine for tests: munged, slurmctld in one
//! network namespace and one slurmd per node in its own, all on a bridge
//! (as `lan` makes), with Debian's Slurm 22.05. Clients (`sbatch`,
//! `squeue`, `scancel`) run in the controller's namespace. Everything is
//! stopped by PID and the namespaces deleted on drop.
//!
//! Each slurmd starts under `nsenter --net` and `unshare --uts` (its own
//! host name), not `ip netns exec`, which remounts /sys so that slurmd's
//! cgroup plugin cannot start. Processes are tracked by
//! `proctrack/linuxproc`: ptmp's parts run in process groups of their own,
//! which `proctrack/pgid` would lose track of.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Whether Slurm and munge are installed; the missing program otherwise.
pub fn missing() -> Option<&'static str> {
    [
        "slurmctld",
        "slurmd",
        "sbatch",
        "munged",
        "nsenter",
        "unshare",
    ]
    .into_iter()
    .find(|p| {
        !["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
            .iter()
            .any(|d| Path::new(d).join(p).exists())
    })
}

pub struct Cluster {
    pub dir: tempfile::TempDir,
    pub ctl: String,
    /// Node names (n1...) and their namespaces.
    pub nodes: Vec<(String, String)>,
    /// Each node's features (Slurm's `Features=`), comma-separated.
    features: Vec<String>,
    /// The namespaces: the controller's first (10.232.0.1), then the
    /// nodes' (10.232.0.2 up); deleted after the daemons are stopped.
    lan: Option<super::lan::Lan>,
}

impl Cluster {
    /// A controller and `count` nodes; `Err` says what did not start.
    pub fn start(count: usize, tag: &str) -> Result<Cluster, String> {
        Cluster::with_features(&vec![""; count], tag)
    }

    /// A controller and one node per entry of `features`, each with those
    /// features (comma-separated; empty for none).
    pub fn with_features(features: &[&str], tag: &str) -> Result<Cluster, String> {
        let count = features.len();
        let dir = tempfile::Builder::new().prefix("slurm").tempdir().unwrap();
        let lan = super::lan::Lan::make(count + 1, &format!("sl{tag}"))
            .ok_or("cannot make the network namespaces (needs root and iproute2)")?;
        let c = Cluster {
            ctl: lan.hosts[0].clone(),
            nodes: (1..=count)
                .map(|i| (format!("n{i}"), lan.hosts[i].clone()))
                .collect(),
            features: features.iter().map(|f| f.to_string()).collect(),
            dir,
            lan: Some(lan),
        };
        let w = c.dir.path();
        let key = w.join("munge.key");
        let mut bytes = vec![0u8; 1024];
        std::io::Read::read_exact(
            &mut std::fs::File::open("/dev/urandom").unwrap(),
            &mut bytes,
        )
        .unwrap();
        std::fs::write(&key, bytes).unwrap();
        std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o400))
            .unwrap();
        c.daemon(
            None,
            &format!(
                "munged --force --socket={0}/munge.sock --key-file={0}/munge.key --pid-file={0}/munged.pid --log-file={0}/munged.log --seed-file={0}/munge.seed",
                w.display()
            ),
        )?;
        std::fs::create_dir_all(w.join("state")).unwrap();
        std::fs::write(c.conf(), c.conf_text()).unwrap();
        c.daemon(
            Some(&c.ctl),
            &format!("hostname ctl; slurmctld -f {}", c.conf().display()),
        )?;
        for (name, ns) in &c.nodes {
            c.daemon(
                Some(ns),
                &format!(
                    "hostname {name}; slurmd -f {} -N {name}",
                    c.conf().display()
                ),
            )?;
        }
        // Up when every node is idle.
        let t0 = Instant::now();
        loop {
            let o = c.client("sinfo", &["-h", "-o", "%T %D"]);
            let s = String::from_utf8_lossy(&o.stdout).trim().to_string();
            if s == format!("idle {count}") {
                return Ok(c);
            }
            if t0.elapsed() > Duration::from_secs(30) {
                return Err(format!(
                    "the Slurm cluster did not come up in 30 s (sinfo: {s:?} {}); slurmctld log:\n{}",
                    String::from_utf8_lossy(&o.stderr),
                    std::fs::read_to_string(w.join("slurmctld.log")).unwrap_or_default()
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    pub fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    fn conf_text(&self) -> String {
        let w = self.dir.path().display();
        let mut s = format!(
            "ClusterName=ptmptest\nMailProg=/bin/true\nSlurmctldHost=ctl(10.232.0.1)\n\
             AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={w}/munge.sock\n\
             SlurmUser=root\nSlurmdUser=root\nStateSaveLocation={w}/state\n\
             SlurmdSpoolDir={w}/spool-%n\nSlurmctldPidFile={w}/slurmctld.pid\n\
             SlurmdPidFile={w}/slurmd-%n.pid\nSlurmctldLogFile={w}/slurmctld.log\n\
             SlurmdLogFile={w}/slurmd-%n.log\nProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\nMpiDefault=none\n\
             ReturnToService=2\nSlurmdTimeout=5\nKillWait=30\n\
             SchedulerParameters=bf_interval=1,bf_hetjob_immediate\nSelectType=select/cons_tres\n"
        );
        for (i, (name, _)) in self.nodes.iter().enumerate() {
            let features = match self.features[i].as_str() {
                "" => String::new(),
                f => format!(" Features={f}"),
            };
            s += &format!(
                "NodeName={name} NodeAddr=10.232.0.{} CPUs=2{features} State=UNKNOWN\n",
                i + 2
            );
        }
        let names: Vec<&str> = self.nodes.iter().map(|n| n.0.as_str()).collect();
        s += &format!(
            "PartitionName=p Nodes={} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES\n",
            names.join(",")
        );
        s
    }

    /// Starts a daemon (it forks into the background) in namespace `ns`
    /// with a host name of its own.
    fn daemon(&self, ns: Option<&str>, script: &str) -> Result<(), String> {
        let mut cmd = match ns {
            Some(ns) => {
                let mut c = Command::new("nsenter");
                c.arg(format!("--net=/run/netns/{ns}"))
                    .args(["unshare", "--uts", "sh", "-c", script]);
                c
            }
            None => {
                let mut c = Command::new("sh");
                c.args(["-c", script]);
                c
            }
        };
        let o = cmd
            .env("SLURM_CONF", self.conf())
            .output()
            .map_err(|e| format!("{script}: {e}"))?;
        if !o.status.success() {
            return Err(format!(
                "{script}: {}: {}",
                o.status,
                String::from_utf8_lossy(&o.stderr)
            ));
        }
        Ok(())
    }

    /// A Slurm client program run in the controller's namespace.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ctl])
            .arg(program)
            .env("SLURM_CONF", self.conf());
        c
    }

    /// `program args` as a client; its output.
    pub fn client(&self, program: &str, args: &[&str]) -> Output {
        self.command(program).args(args).output().unwrap()
    }

    /// The state of job `id` as squeue shows it; None once it is gone.
    pub fn job_state(&self, id: &str) -> Option<String> {
        let o = self.client("squeue", &["-h", "-j", id, "-o", "%T"]);
        let s = String::from_utf8_lossy(&o.stdout).trim().to_string();
        (!s.is_empty()).then_some(s)
    }

    /// A log file of the cluster (`slurmctld.log`, `slurmd-n1.log`).
    pub fn log(&self, file: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(file)).unwrap_or_default()
    }

    /// Powers node `name` off: its cable pulled (its port on the switch
    /// down), then every process in its namespace (its slurmd, the steps
    /// there and their processes) killed at once.
    pub fn power_off(&self, name: &str) {
        let i = self
            .nodes
            .iter()
            .position(|n| n.0 == name)
            .expect("a node of this cluster");
        // The cable first, as a power cut does: no packet leaves the node
        // after it, not even the resets its kernel would send for the
        // sockets of the processes killed next; its peers hear nothing and
        // learn of the loss only from their own timers.
        let lan = self.lan.as_ref().expect("the cluster's network");
        let port = format!("s{}", i + 1);
        assert!(
            super::lan::ip(&["-n", &lan.switch, "link", "set", &port, "down"]),
            "cannot unplug {name}"
        );
        let o = Command::new("ip")
            .args(["netns", "pids", &self.nodes[i].1])
            .output()
            .unwrap();
        for pid in String::from_utf8_lossy(&o.stdout).split_whitespace() {
            if let Ok(pid) = pid.parse::<i32>() {
                // SAFETY: kill(2) of a process in this cluster's namespace.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Jobs first (their steps killed by their slurmd), then daemons.
        let _ = self.client("scancel", &["--full", "-s", "KILL", "-u", "root"]);
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(15)
            && !self.client("squeue", &["-h"]).stdout.is_empty()
        {
            std::thread::sleep(Duration::from_millis(200));
        }
        let w = self.dir.path();
        let mut pids = vec![w.join("slurmctld.pid"), w.join("munged.pid")];
        pids.extend(
            self.nodes
                .iter()
                .map(|(n, _)| w.join(format!("slurmd-{n}.pid"))),
        );
        for f in &pids {
            if let Some(pid) = std::fs::read_to_string(f)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
            {
                // SAFETY: kill(2) of a daemon this cluster started.
                unsafe {
                    libc::kill(pid, libc::SIGTERM);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(300));
        drop(self.lan.take());
    }
}
