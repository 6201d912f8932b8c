//! The documents processes of a run hand each other through the run
//! directory, as types: what each file holds, written and read only
//! through these. A field a reader needs and a writer does not fill is a
//! compile error, not a "-" on screen.
//!
//! * [`ProcessStatus`]: `status/PROCESS.json`, rewritten by each running
//!   part a few times a second; its [`NodeCounts`] and [`SocketStatus`].
//! * [`Supervised`]: `processes.json`, rewritten by the supervisor on
//!   every change of one of its processes ([`SupervisedProcess`]).
//! * [`PartPlan`]: `plan-PROCESS.json`, what one part runs, written by
//!   the supervisor before it starts the part.
//! * [`Request`] and [`Reply`]: `apply-request.json` and
//!   `apply-reply-ID.json`, a change `ptmp graph apply` hands the
//!   supervisor and its answer.
//! * [`Sequence`]: `sequence/PROCESS.json`, where each source of a part
//!   started counting ([`SourceStart`]), written when the part starts.
//!
//! Every field has a default, so a document from an older ptmp (or one
//! cut short of an optional field) still reads; a field of the wrong type
//! is an error naming the file and the field.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `status/PROCESS.json`: one running part's nodes and sockets.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcessStatus {
    /// The graph's name.
    pub graph: String,
    /// The process's name in the graph.
    pub process: String,
    /// The part's pid.
    pub pid: u32,
    /// When the document was written, microseconds since the Unix epoch.
    pub time_us: u64,
    /// Every node of the process, in the plan's order.
    pub nodes: Vec<NodeCounts>,
    /// Every Sender and Receiver of the process (from [`ptmp::meter`]).
    pub sockets: Vec<SocketStatus>,
    /// The part has ended and this is its last document.
    #[serde(rename = "final")]
    pub ended: bool,
    /// The part holds its outputs (asked to by `ptmp graph apply`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
    /// In the last document, each node's final report (as its agent gives
    /// it: the agent's own counters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reports: Option<Vec<Value>>,
}

impl ProcessStatus {
    /// The node called `name`, when the process has one.
    pub fn node(&self, name: &str) -> Option<&NodeCounts> {
        self.nodes.iter().find(|n| n.name == name)
    }
}

/// One node's messages so far and over about the last second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NodeCounts {
    /// The node's name.
    pub name: String,
    /// Messages in so far.
    #[serde(rename = "in")]
    pub received: u64,
    /// Messages out so far.
    #[serde(rename = "out")]
    pub sent: u64,
    /// The node has ended (its process may still run).
    pub ended: bool,
    /// Messages in per second, over about the last second.
    pub in_rate: f64,
    /// Messages out per second, over about the last second.
    pub out_rate: f64,
}

/// One socket of a process: its counts so far and over the last second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SocketStatus {
    /// `send` or `recv`.
    pub dir: String,
    /// What it binds and connects.
    pub endpoints: Vec<String>,
    /// Messages so far.
    pub messages: u64,
    /// Bytes so far.
    pub bytes: u64,
    /// Errors so far.
    pub errors: u64,
    /// Messages lost so far (a lapped shm reader, a sequence gap).
    pub lost: u64,
    /// Sends that found the queue full.
    pub stalls: u64,
    /// Durable shm readers the sender's ring gave up.
    pub readers_given_up: u64,
    /// Messages per second over about the last second.
    pub rate: f64,
    /// Bytes per second over about the last second.
    pub byte_rate: f64,
    /// Latency since each TPSet's `created` over about the last second;
    /// `None` with no sample.
    pub latency_us: Option<Latency>,
    /// A CURVE server: the clients its allow-list let in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub curve_admitted: Option<u64>,
    /// A CURVE server: the clients its allow-list refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub curve_refused: Option<u64>,
}

impl SocketStatus {
    /// The socket sends.
    pub fn sends(&self) -> bool {
        self.dir == "send"
    }
}

/// Latency quantiles in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Latency {
    /// The median.
    pub p50: u64,
    /// The 99th percentile.
    pub p99: u64,
    /// The largest.
    pub max: u64,
}

impl Latency {
    /// The quantile called `q` (`p50`, `p99` or `max`).
    pub fn get(&self, q: &str) -> Option<u64> {
        match q {
            "p50" => Some(self.p50),
            "p99" => Some(self.p99),
            "max" => Some(self.max),
            _ => None,
        }
    }
}

/// `processes.json`: the supervisor's view of its processes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Supervised {
    /// The supervisor's pid.
    pub supervisor_pid: u32,
    /// Every process it runs.
    pub processes: Vec<SupervisedProcess>,
    /// Under Slurm, the node it runs on (`SLURMD_NODENAME`).
    pub node: Option<String>,
    /// Under Slurm, its job step (`JOB.STEP`).
    pub step: Option<String>,
}

impl Supervised {
    /// The process called `name`, when the supervisor runs one.
    pub fn process(&self, name: &str) -> Option<&SupervisedProcess> {
        self.processes.iter().find(|p| p.name == name)
    }
}

/// One process as its supervisor sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SupervisedProcess {
    /// The process's name.
    pub name: String,
    /// Its current pid, while a part runs.
    pub pid: Option<u32>,
    /// `starting`, `running`, `restarting`, `finished`, `failed` or
    /// `stopped`.
    pub state: String,
    /// Restarts so far.
    pub restarts: u32,
}

/// `plan-PROCESS.json`: what one process of a graph runs, written by the
/// supervisor and read by `ptmp graph part`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartPlan {
    /// The graph's name.
    pub graph: String,
    /// The process's name, which names its status file.
    pub process: String,
    /// The run directory, where the status file goes.
    pub run_dir: PathBuf,
    /// The ptmper configuration `{name, proxies}` with every socket filled in.
    pub config: Value,
}

/// `apply-request.json`: a change to a running graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Names the reply file; letters, digits and '-' only.
    pub id: String,
    /// The new graph's configuration, evaluated.
    pub graph: Value,
    /// The graph's name when its configuration has none.
    #[serde(default = "graph_name")]
    pub default_name: String,
    /// Only say what would change.
    #[serde(default)]
    pub dry_run: bool,
}

fn graph_name() -> String {
    "graph".into()
}

/// Why a request was not carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Refusal {
    /// The new graph is invalid (or cannot replace this one: renamed,
    /// addresses clash, the supervisor's host is gone).
    #[serde(rename = "invalid")]
    Invalid,
    /// The new graph is the running one.
    #[serde(rename = "nothing to do")]
    NothingToDo,
    /// Carrying it out failed (a process would not start).
    #[serde(rename = "failed")]
    Failed,
}

/// `apply-reply-ID.json`: the supervisor's answer to a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// `None` when the change was made (or, for a dry run, would be).
    pub refused: Option<Refusal>,
    /// The diff, or what is wrong.
    #[serde(default)]
    pub message: String,
}

/// `sequence/PROCESS.json`: per source node of a part, where it started.
pub type Sequence = std::collections::BTreeMap<String, SourceStart>;

/// Where one source started counting, and in which life of its part.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceStart {
    /// The `count` of its first set.
    pub first: u64,
    /// The pid of the part that started it there; `None` once a new
    /// supervisor has carried the start on past a dead one's sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// Read the run-directory document `path` as a `T`, at most `limit`
/// bytes (see [`super::read`]). `Ok(None)` when there is no such file; the
/// error names the file and, for a document of the wrong shape, the field.
pub fn read<T: DeserializeOwned>(path: &Path, limit: u64) -> crate::Result<Option<T>> {
    read_text(path, limit).map_err(crate::Error::RunDir)
}

fn read_text<T: DeserializeOwned>(path: &Path, limit: u64) -> Result<Option<T>, String> {
    match super::read_text(path, limit)? {
        None => Ok(None),
        Some(b) => serde_json::from_slice(&b).map(Some).map_err(|e| {
            use serde_json::error::Category;
            match e.classify() {
                Category::Syntax | Category::Eof | Category::Io => {
                    format!("{}: not JSON: {e}", path.display())
                }
                Category::Data => {
                    format!("{}: not a {} document: {e}", path.display(), kind(path))
                }
            }
        }),
    }
}

/// Write `doc` to `path` atomically, never through a link (see
/// [`ptmp::files::write_replace`]).
pub fn write<T: Serialize>(path: &Path, doc: &T) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(doc).map_err(std::io::Error::other)?;
    ptmp::files::write_replace(path, &bytes)
}

/// What kind of document the file at `path` is meant to be, for errors.
fn kind(path: &Path) -> &'static str {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let parent = path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .unwrap_or("");
    match (parent, name) {
        (_, "processes.json") => "supervisor's process",
        (_, n) if n.starts_with("plan-") => "part plan",
        (_, n) if n.starts_with("apply-reply-") => "apply reply",
        ("status", _) => "process status",
        ("sequence", _) => "sequence",
        _ => "run-directory",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_reads_back_as_written_and_an_older_one_reads_with_defaults() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("status")).unwrap();
        let f = d.path().join("status").join("p.json");
        let st = ProcessStatus {
            graph: "g".into(),
            process: "p".into(),
            pid: 7,
            nodes: vec![NodeCounts {
                name: "a".into(),
                received: 3,
                sent: 2,
                in_rate: 1.5,
                ..Default::default()
            }],
            sockets: vec![SocketStatus {
                dir: "send".into(),
                latency_us: Some(Latency {
                    p50: 1,
                    p99: 2,
                    max: 3,
                }),
                curve_refused: Some(1),
                ..Default::default()
            }],
            ..Default::default()
        };
        write(&f, &st).unwrap();
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            text.contains("\"in\": 3") && text.contains("\"final\": false"),
            "{text}"
        );
        assert!(
            !text.contains("held") && !text.contains("curve_admitted"),
            "{text}"
        );
        assert_eq!(read::<ProcessStatus>(&f, 1 << 20).unwrap(), Some(st));
        std::fs::write(&f, r#"{"process": "p", "nodes": [{"name": "a", "in": 1}]}"#).unwrap();
        let old: ProcessStatus = read(&f, 1 << 20).unwrap().unwrap();
        assert_eq!(old.node("a").map(|n| (n.received, n.sent)), Some((1, 0)));
        std::fs::write(&f, r#"{"process": "p", "pid": "seven"}"#).unwrap();
        let e = read::<ProcessStatus>(&f, 1 << 20).unwrap_err().to_string();
        assert!(
            e.contains("p.json: not a process status document") && e.contains("invalid type"),
            "{e}"
        );
        assert!(matches!(
            read::<Supervised>(&d.path().join("none.json"), 10),
            Ok(None)
        ));
    }
}
