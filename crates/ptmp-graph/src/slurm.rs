//! A graph inside a Slurm allocation: each of the graph's hosts is placed
//! on one of the allocated nodes (a host that names a `feature` on the
//! first free node that has it, the others in order; the nodes of every
//! component of a heterogeneous job count), its address becomes that
//! node's, and its part (`ptmp graph run G --host H`, with its own
//! supervisor) runs as one job step there (`srun`, one task on that
//! node). A step that fails is started again on the same node, a few
//! times; a step that ends cleanly (the graph finished, or `scancel -s
//! INT` stopped it) is not. Stopping the launcher signals every step with
//! SIGINT through `scancel`, so each part drains as it does by hand.
//!
//! Slurm sees only processes; what ptmp adds is which host talks to which
//! (the addresses written into the graph each step runs).

use crate::Graph;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How many times a failed step is started again on its node.
pub const STEP_RESTARTS: u32 = 3;

/// How long the steps have to drain after the stop signal before they are
/// killed.
pub const STOP_GRACE: Duration = Duration::from_secs(60);

/// One allocated node: its Slurm name and the address its processes are
/// reached at (`NodeAddr`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The node's name (`-w NAME`).
    pub name: String,
    /// Its address (IPv4 or a host name).
    pub address: String,
    /// Its features (`ActiveFeatures`).
    pub features: Vec<String>,
    /// The component of a heterogeneous job it belongs to (a step there
    /// needs `--het-group`); `None` in a plain job.
    pub het_group: Option<usize>,
}

/// A host of the graph on the node it runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// The host's name.
    pub host: String,
    /// The feature its node must have (empty: any).
    pub feature: String,
    /// The node.
    pub node: Node,
}

/// The allocation this process runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    /// `SLURM_JOB_ID`.
    pub job: String,
    /// The nodes, in the allocation's order.
    pub nodes: Vec<Node>,
}

/// Runs a Slurm client program; its standard output, or why it failed.
fn slurm_tool(program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {program} (Slurm's client programs): {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{program} {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Field `key` (`NodeAddr=`, `ActiveFeatures=`) in one line of
/// `scontrol -o show node` output; `None` when empty or `(null)`.
fn node_field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key))
        .filter(|a| !a.is_empty() && *a != "(null)")
}

impl Allocation {
    /// The allocation named by `SLURM_JOB_ID` and `SLURM_JOB_NODELIST`
    /// (as `salloc` and `sbatch` set them; in a heterogeneous job, each
    /// component's `SLURM_JOB_NODELIST_HET_GROUP_K`), its nodes' names
    /// expanded and their addresses and features asked of `scontrol`.
    pub fn from_env() -> crate::Result<Allocation> {
        Self::from_env_text().map_err(crate::Error::Slurm)
    }

    fn from_env_text() -> Result<Allocation, String> {
        let var = |k: &str| {
            std::env::var(k).map_err(|_| {
                format!("{k} is not set: --slurm runs inside an allocation (salloc, or a script given to sbatch; `ptmp graph sbatch G` writes one)")
            })
        };
        let job = var("SLURM_JOB_ID")?;
        let lists = match std::env::var("SLURM_HET_SIZE") {
            Err(_) => vec![(None, var("SLURM_JOB_NODELIST")?)],
            Ok(n) => {
                let n: usize = n
                    .parse()
                    .map_err(|_| format!("SLURM_HET_SIZE = {n:?}: not a number"))?;
                (0..n)
                    .map(|k| Ok((Some(k), var(&format!("SLURM_JOB_NODELIST_HET_GROUP_{k}"))?)))
                    .collect::<Result<Vec<_>, String>>()?
            }
        };
        let mut nodes: Vec<Node> = Vec::new();
        for (het_group, list) in &lists {
            let names = slurm_tool("scontrol", &["show", "hostnames", list])?;
            for name in names.split_whitespace() {
                // A node in two components is used through the first.
                if nodes.iter().any(|n| n.name == name) {
                    continue;
                }
                let info = slurm_tool("scontrol", &["-o", "show", "node", name])?;
                nodes.push(Node {
                    name: name.to_string(),
                    address: node_field(&info, "NodeAddr=").unwrap_or(name).to_string(),
                    features: node_field(&info, "ActiveFeatures=")
                        .map(|f| f.split(',').map(String::from).collect())
                        .unwrap_or_default(),
                    het_group: *het_group,
                });
            }
        }
        if nodes.is_empty() {
            return Err(format!("allocation {job} lists no nodes ({lists:?})"));
        }
        Ok(Allocation { job, nodes })
    }
}

/// The node each of the graph's hosts runs on, and the spare nodes left
/// over (see [`Launch::run`]), in the allocation's order. A host with a
/// `feature` takes the first free node that has it; then each other host
/// the first free node. The error says how many nodes, or which feature,
/// is missing.
pub fn place(g: &Graph, alloc: &Allocation) -> crate::Result<(Vec<Placed>, Vec<Node>)> {
    place_text(g, alloc).map_err(crate::Error::Slurm)
}

fn place_text(g: &Graph, alloc: &Allocation) -> Result<(Vec<Placed>, Vec<Node>), String> {
    if g.hosts.len() > alloc.nodes.len() {
        return Err(format!(
            "graph {} has {} hosts but allocation {} has {} node(s): ask for --nodes={} (ptmp graph sbatch does)",
            g.name,
            g.hosts.len(),
            alloc.job,
            alloc.nodes.len(),
            g.hosts.len()
        ));
    }
    let mut free: Vec<Option<&Node>> = alloc.nodes.iter().map(Some).collect();
    let mut on: Vec<Option<&Node>> = vec![None; g.hosts.len()];
    // Hosts that need a feature choose first.
    let featured = |want: bool| {
        g.hosts
            .iter()
            .enumerate()
            .filter(move |(_, h)| h.feature.is_empty() != want)
    };
    for (i, h) in featured(true).chain(featured(false)) {
        let fits = |n: &&Node| h.feature.is_empty() || n.features.contains(&h.feature);
        let Some(slot) = free.iter_mut().find(|n| n.as_ref().is_some_and(fits)) else {
            let nodes: Vec<String> = alloc
                .nodes
                .iter()
                .map(|n| format!("{} ({})", n.name, n.features.join(",")))
                .collect();
            return Err(format!(
                "host {} needs a node with feature {:?}, and allocation {} has none free (its nodes and their features: {}): ask for one (sbatch --constraint; ptmp graph sbatch does)",
                h.name,
                h.feature,
                alloc.job,
                nodes.join(", ")
            ));
        };
        on[i] = slot.take();
    }
    let placed = g
        .hosts
        .iter()
        .zip(on)
        .filter_map(|(h, n)| {
            Some(Placed {
                host: h.name.clone(),
                feature: h.feature.clone(),
                node: n?.clone(),
            })
        })
        .collect();
    Ok((placed, free.into_iter().flatten().cloned().collect()))
}

/// Per host of `g` (in order): whether one of its processes ends by
/// itself (a source or sink with a count). When all such hosts' steps
/// have ended cleanly the graph is finished, and the launcher stops the
/// others (a host of workers only would run on for ever).
pub fn finite_hosts(g: &Graph, p: &crate::plan::Plan) -> Vec<bool> {
    (0..g.hosts.len())
        .map(|h| {
            g.processes
                .iter()
                .zip(&p.finite)
                .any(|(proc_, fin)| proc_.host == h && *fin)
        })
        .collect()
}

/// One word for a POSIX shell, quoted when it needs to be.
fn sh_word(w: &str) -> String {
    if !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
    {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

/// Refuse a word holding a control character: a shell's quotes carry
/// one, but `sbatch` refuses a script with a carriage return before a
/// line feed, and a lone one hides, on a terminal, what comes before it.
/// The error names `what` the word is, the word and the character.
fn no_control(g: &Graph, what: &str, w: &str) -> crate::Result<()> {
    match w.chars().find(|c| c.is_control()) {
        None => Ok(()),
        Some(c) => Err(crate::Error::Invalid {
            graph: g.name.clone(),
            msg: format!(
                "{what} {w:?} holds a control character ({c:?}, U+{:04X}), which the batch script does not carry; rename it or leave it out",
                c as u32
            ),
        }),
    }
}

/// A batch script for `sbatch` that runs the graph on one node per host
/// (and `spares` more, for parts whose node fails):
/// `--no-kill` so that a failed node does not end the job, and the
/// launcher (`ptmp graph run G --slurm`) as its only command. `args` go
/// after the file (Jsonnet options, `--ttl`, ...). A path or argument
/// holding a control character (a line feed, a carriage return, ...) is
/// refused, the error naming it.
pub fn sbatch_script(
    g: &Graph,
    spares: usize,
    ptmp: &Path,
    graph_file: &Path,
    args: &[String],
) -> crate::Result<String> {
    let (ptmp, graph_file) = (ptmp.display().to_string(), graph_file.display().to_string());
    no_control(g, "the ptmp program's path", &ptmp)?;
    no_control(g, "the graph file's path", &graph_file)?;
    for a in args {
        no_control(g, "the argument", a)?;
    }
    let mut s = String::new();
    let _ = writeln!(s, "#!/bin/sh");
    let _ = writeln!(
        s,
        "# Runs graph {} with one node per host; submit with: sbatch FILE",
        g.name
    );
    let _ = writeln!(s, "#SBATCH --job-name=ptmp-{}", g.name);
    let _ = writeln!(s, "#SBATCH --nodes={}", g.hosts.len().max(1) + spares);
    let _ = writeln!(s, "#SBATCH --ntasks-per-node=1");
    let _ = writeln!(s, "#SBATCH --no-kill");
    if let Some(c) = constraint(g) {
        let _ = writeln!(s, "#SBATCH --constraint={}", sh_word(&c));
    }
    let mut cmd = vec![
        sh_word(&ptmp),
        "graph".into(),
        "run".into(),
        sh_word(&graph_file),
    ];
    cmd.extend(args.iter().map(|a| sh_word(a)));
    cmd.push("--slurm".into());
    let _ = writeln!(s, "exec {}", cmd.join(" "));
    Ok(s)
}

/// The `--constraint` that asks for a node with each host's feature
/// (`gpu*1`, or `[gpu*1&fast*2]` for several), when a host names one.
fn constraint(g: &Graph) -> Option<String> {
    let mut count = std::collections::BTreeMap::<&str, usize>::new();
    for h in g.hosts.iter().filter(|h| !h.feature.is_empty()) {
        *count.entry(&h.feature).or_default() += 1;
    }
    let terms: Vec<String> = count.iter().map(|(f, n)| format!("{f}*{n}")).collect();
    match terms.len() {
        0 => None,
        1 => Some(terms[0].clone()),
        _ => Some(format!("[{}]", terms.join("&"))),
    }
}

/// What the launcher runs on each node: this `ptmp`, the graph file, the
/// run directory under which each host's part has its own, and the
/// arguments for `graph run` after `--host H --run-dir D`.
pub struct Launch<'a> {
    /// The job (`SLURM_JOB_ID`) the steps run in.
    pub job: &'a str,
    /// The `ptmp` program.
    pub ptmp: &'a Path,
    /// The graph's file (the same path on every node).
    pub graph_file: &'a Path,
    /// Each host's part runs with `--run-dir RUN_BASE/HOST`.
    pub run_base: &'a Path,
    /// More arguments for each part (`--ttl`, `--status`, the hosts'
    /// addresses).
    pub args: &'a [String],
    /// Whether a part may move to another node: only when the graph's
    /// hosts have no addresses, so that their peers find them by name.
    pub movable: bool,
}

/// Why `node` is lost to the job: its Slurm state (down, failing, not
/// responding); `None` while it serves (or when it cannot be asked).
fn node_lost(node: &Node) -> Option<String> {
    let info = slurm_tool("scontrol", &["-o", "show", "node", &node.name]).ok()?;
    let state = info
        .split_whitespace()
        .find_map(|w| w.strip_prefix("State="))?;
    ["DOWN", "FAIL", "NOT_RESPONDING"]
        .iter()
        .any(|b| state.contains(b))
        .then(|| state.to_string())
}

struct Step {
    finite: bool,
    host: String,
    feature: String,
    node: Node,
    child: Option<Child>,
    restarts: u32,
    ended: Option<ExitStatus>,
}

impl Launch<'_> {
    fn start(&self, host: &str, node: &Node) -> Result<Child, String> {
        let run_dir: PathBuf = self.run_base.join(host);
        let mut srun = Command::new("srun");
        if let Some(k) = node.het_group {
            srun.arg(format!("--het-group={k}"));
        }
        srun.args([
            "--overlap",
            "--nodes=1",
            "--ntasks=1",
            "--kill-on-bad-exit=0",
        ])
        .arg(format!("--nodelist={}", node.name))
        .arg(format!("--job-name=ptmp-{host}"))
        .arg(self.ptmp)
        .args(["graph", "run"])
        .arg(self.graph_file)
        .args(["--host", host, "--run-dir"])
        .arg(&run_dir)
        .args(self.args)
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run srun (Slurm's client programs): {e}"))
    }

    /// Runs one step per placed host (telling `placed_at` where each runs,
    /// and again when one moves) until every step ended cleanly, the
    /// hosts marked `finite` ([`finite_hosts`]) all did, or `stop()` says
    /// to stop (then every step is sent SIGINT through
    /// `scancel` and given [`STOP_GRACE`] to drain). A step that fails is
    /// started again on its node up to [`STEP_RESTARTS`] times; after that
    /// the others are stopped and the error names the host and node.
    pub fn run(
        &self,
        placed: &[Placed],
        spares: &[Node],
        finite: &[bool],
        stop: &dyn Fn() -> bool,
        placed_at: &mut dyn FnMut(&str, &Node),
        log: &mut dyn Write,
    ) -> crate::Result<()> {
        self.run_text(placed, spares, finite, stop, placed_at, log)
            .map_err(crate::Error::Slurm)
    }

    fn run_text(
        &self,
        placed: &[Placed],
        spares: &[Node],
        finite: &[bool],
        stop: &dyn Fn() -> bool,
        placed_at: &mut dyn FnMut(&str, &Node),
        log: &mut dyn Write,
    ) -> Result<(), String> {
        let mut spares: Vec<Node> = spares.iter().rev().cloned().collect();
        let mut steps = Vec::new();
        let mut failure = None;
        for (i, p) in placed.iter().enumerate() {
            let group = p
                .node
                .het_group
                .map_or(String::new(), |k| format!(", job component {k}"));
            let _ = writeln!(
                log,
                "slurm: host {} on node {} ({}){group}",
                p.host, p.node.name, p.node.address
            );
            placed_at(&p.host, &p.node);
            // A step that cannot start stops those already started.
            let child = match self.start(&p.host, &p.node) {
                Ok(c) => Some(c),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            };
            steps.push(Step {
                finite: finite.get(i).copied().unwrap_or(false),
                host: p.host.clone(),
                feature: p.feature.clone(),
                node: p.node.clone(),
                child,
                restarts: 0,
                ended: None,
            });
        }
        let clean = |s: &Step| s.child.is_none() && s.ended.is_some_and(|e| e.success());
        while failure.is_none() && !stop() {
            if steps.iter().all(|s| s.child.is_none()) {
                return Ok(());
            }
            if steps.iter().any(|s| s.finite) && steps.iter().filter(|s| s.finite).all(clean) {
                let _ = writeln!(
                    log,
                    "slurm: every host that ends by itself has ended: the graph is finished"
                );
                break;
            }
            for s in &mut steps {
                failure = failure.or_else(|| {
                    self.watch(s, &mut spares, placed_at, log)
                        .unwrap_or_else(Some)
                });
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        if failure.is_none() && stop() {
            if let Some(why) = allocation_ending(self.job) {
                let _ = writeln!(log, "slurm: {why}: the graph stops");
            }
        }
        let _ = writeln!(
            log,
            "slurm: stopping every step of job {} (SIGINT)",
            self.job
        );
        stop_steps(self.job, &mut steps, log);
        match failure {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }

    /// Looks at one step: one whose node was lost moves to a spare node;
    /// a failed one is started again (or, past the restarts, reported as
    /// the failure).
    fn watch(
        &self,
        s: &mut Step,
        spares: &mut Vec<Node>,
        placed_at: &mut dyn FnMut(&str, &Node),
        log: &mut dyn Write,
    ) -> Result<Option<String>, String> {
        let Some(child) = &mut s.child else {
            return Ok(None);
        };
        let Some(status) = child.try_wait().map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        s.child = None;
        s.ended = Some(status);
        // srun ends a step whose node failed with status 0: ask the node.
        if let Some(state) = node_lost(&s.node) {
            return self.move_step(s, &state, spares, placed_at, log);
        }
        if status.success() {
            let _ = writeln!(log, "slurm: host {} on node {} ended", s.host, s.node.name);
            return Ok(None);
        }
        // Exit 2 is a configuration error: no retry can pass.
        if status.code() == Some(2) {
            return Ok(Some(format!(
                "host {} on node {} refused its configuration (exit 2; its message is above); stopping the graph",
                s.host, s.node.name
            )));
        }
        if s.restarts >= STEP_RESTARTS {
            return Ok(Some(format!(
                "host {} on node {} failed {} times (last: {status}); stopping the graph",
                s.host,
                s.node.name,
                s.restarts + 1
            )));
        }
        s.restarts += 1;
        let _ = writeln!(
            log,
            "slurm: host {} on node {} ended with {status}; starting it again ({} of {STEP_RESTARTS})",
            s.host,
            s.node.name,
            s.restarts
        );
        s.child = Some(self.start(&s.host, &s.node)?);
        Ok(None)
    }

    /// Moves the step of a lost node to the next spare node that serves.
    fn move_step(
        &self,
        s: &mut Step,
        state: &str,
        spares: &mut Vec<Node>,
        placed_at: &mut dyn FnMut(&str, &Node),
        log: &mut dyn Write,
    ) -> Result<Option<String>, String> {
        let lost = format!("node {} is lost ({state})", s.node.name);
        if !self.movable {
            return Ok(Some(format!(
                "{lost}, and host {} cannot move: its address is in the graph (a graph whose hosts have no address is connected by name, and its parts can move)",
                s.host
            )));
        }
        let fits = |n: &Node| s.feature.is_empty() || n.features.contains(&s.feature);
        while let Some(i) = spares.iter().rposition(fits) {
            let spare = spares.remove(i);
            if node_lost(&spare).is_some() {
                continue;
            }
            let _ = writeln!(
                log,
                "slurm: {lost}: host {} moves to node {}",
                s.host, spare.name
            );
            s.node = spare;
            placed_at(&s.host, &s.node);
            s.child = Some(self.start(&s.host, &s.node)?);
            s.ended = None;
            return Ok(None);
        }
        let with = if s.feature.is_empty() {
            String::new()
        } else {
            format!(" with feature {:?}", s.feature)
        };
        Ok(Some(format!(
            "{lost}, and no spare node{with} is left for host {}: ask for more nodes than hosts (ptmp graph sbatch --spare-nodes N)",
            s.host
        )))
    }
}

/// Seconds in a Slurm duration (`MM:SS`, `HH:MM:SS`, `D-HH:MM:SS`).
fn slurm_secs(t: &str) -> Option<u64> {
    let (days, rest) = match t.split_once('-') {
        Some((d, r)) => (d.parse::<u64>().ok()?, r),
        None => (0, t),
    };
    let mut secs = 0;
    for part in rest.split(':') {
        secs = secs * 60 + part.parse::<u64>().ok()?;
    }
    Some(days * 86_400 + secs)
}

/// Why the launcher was told to stop, when it is the allocation's end:
/// `squeue` gives the job under a minute left, or no time at all.
fn allocation_ending(job: &str) -> Option<String> {
    let out = slurm_tool("squeue", &["-h", "-j", job, "-o", "%L"]).ok()?;
    let left = out.trim();
    if left == "UNLIMITED" || left == "NOT_SET" {
        return None;
    }
    match slurm_secs(left) {
        Some(s) if s >= 60 => None,
        _ => Some(format!(
            "the allocation of job {job} is ending ({left} left)"
        )),
    }
}

/// SIGINT to every step of `job` (not the batch script), then waits for
/// ours to end; those still running after [`STOP_GRACE`] are killed.
fn stop_steps(job: &str, steps: &mut [Step], log: &mut dyn Write) {
    if let Err(e) = slurm_tool("scancel", &["--signal=INT", job]) {
        let _ = writeln!(log, "slurm: {e}");
    }
    let t0 = Instant::now();
    while steps.iter().any(|s| s.child.is_some()) && t0.elapsed() < STOP_GRACE {
        for s in steps.iter_mut() {
            if let Some(c) = &mut s.child {
                if let Ok(Some(st)) = c.try_wait() {
                    s.ended = Some(st);
                    s.child = None;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for s in steps.iter_mut() {
        if let Some(mut c) = s.child.take() {
            let _ = writeln!(
                log,
                "slurm: host {} did not stop in {STOP_GRACE:?}: killed",
                s.host
            );
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_addresses_are_read_from_scontrol_lines() {
        let l = "NodeName=n1 Arch=x86_64 CoresPerSocket=2 NodeAddr=10.233.0.2 NodeHostName=n1";
        assert_eq!(node_field(l, "NodeAddr="), Some("10.233.0.2"));
        let l = "NodeName=n1 NodeAddr=(null) ActiveFeatures=(null)";
        assert_eq!(node_field(l, "NodeAddr="), None);
        assert_eq!(node_field(l, "ActiveFeatures="), None);
        assert_eq!(node_field("NodeName=n1", "NodeAddr="), None);
    }

    fn graph(hosts: serde_json::Value) -> Graph {
        let v = serde_json::json!({
            "name": "g", "hosts": hosts,
            "nodes": [{"name": "s", "type": "source"}, {"name": "k", "type": "sink"}],
            "edges": [{"from": "s.out", "to": "k.in", "pattern": "pushpull"}],
            "processes": [{"name": "p", "host": "a", "nodes": ["s", "k"]}]
        });
        Graph::parse(&v, "g").unwrap()
    }

    fn alloc(nodes: &[(&str, &str)]) -> Allocation {
        Allocation {
            job: "7".into(),
            nodes: nodes
                .iter()
                .map(|(n, f)| Node {
                    name: n.to_string(),
                    address: n.to_string(),
                    features: f
                        .split(',')
                        .filter(|f| !f.is_empty())
                        .map(String::from)
                        .collect(),
                    het_group: None,
                })
                .collect(),
        }
    }

    /// Hosts with a feature choose first; the others take the free
    /// nodes in order; what is left is spare.
    #[test]
    fn hosts_are_placed_by_feature_then_in_order() {
        let g = graph(serde_json::json!([
            {"name": "a"}, {"name": "b", "feature": "gpu"}, {"name": "c"}
        ]));
        let (placed, spares) = place(
            &g,
            &alloc(&[("n1", "gpu"), ("n2", ""), ("n3", "gpu,fast"), ("n4", "")]),
        )
        .unwrap();
        let on: Vec<(&str, &str)> = placed
            .iter()
            .map(|p| (p.host.as_str(), p.node.name.as_str()))
            .collect();
        assert_eq!(on, [("a", "n2"), ("b", "n1"), ("c", "n3")]);
        assert_eq!(spares.iter().map(|n| &n.name).collect::<Vec<_>>(), ["n4"]);
        let e = place(&g, &alloc(&[("n1", "fast"), ("n2", ""), ("n3", "")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("host b needs a node with feature \"gpu\"") && e.contains("n1 (fast)"),
            "{e}"
        );
        let e = place(&g, &alloc(&[("n1", "gpu")])).unwrap_err().to_string();
        assert!(e.contains("--nodes=3"), "{e}");
    }

    #[test]
    fn the_batch_script_asks_for_each_feature() {
        let g = graph(serde_json::json!([{"name": "a"}, {"name": "b", "feature": "gpu"}]));
        let s = sbatch_script(&g, 1, Path::new("/bin/ptmp"), Path::new("/g.json"), &[]).unwrap();
        assert!(s.contains("#SBATCH --nodes=3\n"), "{s}");
        assert!(s.contains("#SBATCH --constraint='gpu*1'\n"), "{s}");
        let g = graph(serde_json::json!([
            {"name": "a", "feature": "fast"}, {"name": "b", "feature": "gpu"},
            {"name": "c", "feature": "fast"}
        ]));
        let s = sbatch_script(&g, 0, Path::new("/bin/ptmp"), Path::new("/g.json"), &[]).unwrap();
        assert!(s.contains("#SBATCH --constraint='[fast*2&gpu*1]'\n"), "{s}");
        let g = graph(serde_json::json!([{"name": "a"}]));
        let s = sbatch_script(&g, 0, Path::new("/bin/ptmp"), Path::new("/g.json"), &[]).unwrap();
        assert!(!s.contains("constraint"), "{s}");
    }

    #[test]
    fn control_characters_are_refused_naming_the_word() {
        let g = graph(serde_json::json!([{"name": "a"}]));
        let p = Path::new("/bin/ptmp");
        let e = sbatch_script(&g, 0, p, Path::new("/g\r.json"), &[]).unwrap_err();
        let e = e.to_string();
        assert!(e.contains("the graph file's path \"/g\\r.json\""), "{e}");
        assert!(e.contains("U+000D"), "{e}");
        let args = ["-A".to_string(), "x=a\nb".to_string()];
        let e = sbatch_script(&g, 0, p, Path::new("/g.json"), &args).unwrap_err();
        assert!(e.to_string().contains("the argument \"x=a\\nb\""), "{e}");
        let e = sbatch_script(&g, 0, Path::new("/b\u{1b}"), Path::new("/g"), &[]).unwrap_err();
        assert!(e.to_string().contains("the ptmp program's path"), "{e}");
    }

    #[test]
    fn slurm_durations_are_read() {
        assert_eq!(slurm_secs("0:00"), Some(0));
        assert_eq!(slurm_secs("1:30"), Some(90));
        assert_eq!(slurm_secs("2:00:01"), Some(7201));
        assert_eq!(slurm_secs("1-00:00:00"), Some(86_400));
        assert_eq!(slurm_secs("INVALID"), None);
    }

    #[test]
    fn words_are_quoted_for_the_shell() {
        assert_eq!(sh_word("/usr/bin/ptmp"), "/usr/bin/ptmp");
        assert_eq!(sh_word("a b"), "'a b'");
        assert_eq!(sh_word("it's"), r"'it'\''s'");
        assert_eq!(sh_word(""), "''");
    }
}
