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
//!   the supervisor before it starts the part: its [`PartConfig`], each
//!   node's [`NodePlan`].
//! * [`Request`] and [`Reply`]: `apply-request.json` and
//!   `apply-reply-ID.json`, a change `ptmp graph apply` hands the
//!   supervisor and its answer.
//! * [`Sequence`]: `sequence/PROCESS.json`, where each source of a part
//!   started counting ([`SourceStart`]), written when the part starts.
//!
//! Every field has a default, so a document from an older ptmp (or one
//! cut short of an optional field) still reads; a field of the wrong type
//! is an error naming the file and the field.
//!
//! Two leaves stay JSON, because they are a user's configuration passed
//! through rather than anything these documents define: a node's `data`
//! in a plan (its agent's own configuration, which its agent reads) and
//! the graph in an apply request (the user's graph, which
//! [`Graph::parse`](crate::Graph::parse) reads key by key).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
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
    pub reports: Option<Vec<NodeReport>>,
}

/// One node's final report, in a part's last status document: its
/// agent's counters and lines when it ended, or why it failed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NodeReport {
    /// The agent's counters by name (`in`, `out`, `missing`, ...); `None`
    /// for a node that failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counters: Option<BTreeMap<String, u64>>,
    /// Why the node failed; `None` for one that ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The agent's kind (`zipper`, `sink`, ...); `None` for a node that
    /// failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The agent's free-form lines (per-input statistics and the like);
    /// `None` for a node that failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<Vec<String>>,
    /// The node's name.
    pub name: String,
}

impl NodeReport {
    /// The report of node `name`, whose agent of `kind` ended with
    /// `counters` and `lines`.
    pub fn ended(name: &str, kind: &str, counters: &[(String, u64)], lines: &[String]) -> Self {
        NodeReport {
            counters: Some(counters.iter().cloned().collect()),
            error: None,
            kind: Some(kind.to_string()),
            lines: Some(lines.to_vec()),
            name: name.to_string(),
        }
    }

    /// The report of node `name`, whose agent failed with `error`.
    pub fn failed(name: &str, error: String) -> Self {
        NodeReport {
            error: Some(error),
            name: name.to_string(),
            ..Default::default()
        }
    }

    /// The counter called `name`, when the node ended with one.
    pub fn counter(&self, name: &str) -> Option<u64> {
        self.counters.as_ref()?.get(name).copied()
    }
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

/// Which way a socket carries messages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SocketDir {
    /// It sends (`send`).
    Send,
    /// It receives (`recv`); also what a socket that does not say is
    /// taken for.
    #[default]
    Recv,
}

impl SocketDir {
    /// `send` or `recv`, as the status document writes it.
    pub fn word(self) -> &'static str {
        match self {
            SocketDir::Send => "send",
            SocketDir::Recv => "recv",
        }
    }
}

impl fmt::Display for SocketDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// One socket of a process: its counts so far and over the last second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SocketStatus {
    /// `send` or `recv`.
    pub dir: SocketDir,
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
        self.dir == SocketDir::Send
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
    /// What the supervisor says of it.
    pub state: SupervisedState,
    /// Restarts so far.
    pub restarts: u32,
}

/// What the supervisor says of one of its processes, in `processes.json`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SupervisedState {
    /// Not started yet (`starting`).
    #[default]
    Starting,
    /// Its part runs (`running`).
    Running,
    /// Its part ended and is to be started again (`restarting`).
    Restarting,
    /// Its part finished its work (`finished`).
    Finished,
    /// Its part failed and is not started again (`failed`).
    Failed,
    /// The graph was stopped before it finished (`stopped`).
    Stopped,
}

impl SupervisedState {
    /// The word `processes.json` and every view use for it.
    pub fn word(self) -> &'static str {
        match self {
            SupervisedState::Starting => "starting",
            SupervisedState::Running => "running",
            SupervisedState::Restarting => "restarting",
            SupervisedState::Finished => "finished",
            SupervisedState::Failed => "failed",
            SupervisedState::Stopped => "stopped",
        }
    }
}

impl fmt::Display for SupervisedState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
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
    /// The ptmper configuration with every socket filled in.
    pub config: PartConfig,
}

impl PartPlan {
    /// Read a plan file; the error names the file and what is missing or
    /// malformed.
    pub fn read(path: &Path) -> crate::Result<PartPlan> {
        read(path, super::PLAN_LIMIT)?
            .ok_or_else(|| crate::Error::RunDir(format!("plan {}: no such file", path.display())))
    }
}

/// What one part runs: a ptmper configuration (as `ptmp run` reads one),
/// `{discovery, name, plugins, proxies}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PartConfig {
    /// When the graph connects by name, the presence its process joins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discovery: Option<Discovery>,
    /// `GRAPH/PROCESS`.
    pub name: String,
    /// Filter-engine libraries the process loads.
    pub plugins: Vec<String>,
    /// The process's nodes, in the graph's order.
    pub proxies: Vec<NodePlan>,
}

impl PartConfig {
    /// The configuration as JSON, as ptmper's reader
    /// ([`ptmp_agents::ptmper::RunConfig::parse`]) and the presence of a
    /// graph connecting by name take it.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The presence a part joins when its graph connects by name: its group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Discovery {
    /// The presence group: the graph's name.
    pub group: String,
}

/// One node of a part: `{data, name, type}`, as ptmper's `proxies` list
/// holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodePlan {
    /// The agent's own configuration, as its agent reads it: the node's
    /// `data` from the graph, with its sockets (ptmp's socket
    /// configurations, `{"socket": {...}}`, under its ports' keys) and
    /// what the runner sets for it filled in. It stays JSON: what it
    /// holds is the agent's to define.
    #[serde(default)]
    pub data: Map<String, Value>,
    /// The node's name.
    pub name: String,
    /// The agent's type, as the graph writes it (`source`, `sink`, ...).
    #[serde(rename = "type")]
    pub kind: String,
}

/// The key of a node's `data` naming its output file.
const OFILE: &str = "ofile";
/// The key of a node's `data` asking it to append to its output file.
const APPEND: &str = "append";
/// The key of a source's `data` giving the `count` of its first set.
const FIRST_COUNT: &str = "first_count";
/// The key of a socket configuration naming its durable shm reader.
const SHM_READER_ID: &str = "shm_reader_id";
/// The key of a socket configuration holding the run's reader token.
const SHM_READER_TOKEN: &str = "shm_reader_token";

impl NodePlan {
    /// The output file the node writes (`ofile`), when it names one.
    pub fn ofile(&self) -> Option<&str> {
        self.data
            .get(OFILE)
            .and_then(Value::as_str)
            .filter(|f| !f.is_empty())
    }

    /// Have the node append to its output file rather than start it anew.
    pub fn set_append(&mut self) {
        self.data.insert(APPEND.into(), Value::Bool(true));
    }

    /// The `count` a source's first set has (`first_count`), when given.
    pub fn first_count(&self) -> Option<u64> {
        self.data.get(FIRST_COUNT).and_then(Value::as_u64)
    }

    /// Have a source start counting at `first`.
    pub fn set_first_count(&mut self, first: u64) {
        self.data.insert(FIRST_COUNT.into(), Value::from(first));
    }

    /// Give every socket of the node that reads an shm ring under a
    /// durable identity (`shm_reader_id`) the run's reader token.
    pub fn set_reader_token(&mut self, token: &str) {
        fn walk(v: &mut Value, token: &str) {
            match v {
                Value::Object(o) => {
                    if o.contains_key(SHM_READER_ID) {
                        o.insert(SHM_READER_TOKEN.into(), Value::from(token));
                    }
                    o.values_mut().for_each(|x| walk(x, token));
                }
                Value::Array(a) => a.iter_mut().for_each(|x| walk(x, token)),
                _ => {}
            }
        }
        self.data.values_mut().for_each(|v| walk(v, token));
    }

    /// Every socket in the node's configuration: each value of its `data`
    /// (or nested in one) that is ptmp's socket configuration
    /// `{"socket": {...}}`, with the key it sits under.
    pub fn sockets(&self) -> Vec<PlannedSocket<'_>> {
        fn walk<'a>(key: &'a str, v: &'a Value, out: &mut Vec<PlannedSocket<'a>>) {
            match v {
                Value::Object(m) => {
                    if let Some(socket) = SocketPlan::of(v) {
                        out.push(PlannedSocket {
                            key,
                            config: v,
                            socket,
                        });
                        return;
                    }
                    for (k, x) in m {
                        walk(k, x, out);
                    }
                }
                Value::Array(a) => a.iter().for_each(|x| walk(key, x, out)),
                _ => {}
            }
        }
        let mut out = Vec::new();
        for (k, v) in &self.data {
            walk(k, v, &mut out);
        }
        out
    }
}

/// One socket of a planned node ([`NodePlan::sockets`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedSocket<'a> {
    /// The key of the node's `data` it sits under (`input`, `output`, ...).
    pub key: &'a str,
    /// The socket's whole configuration, `{"socket": {...}}`, as the
    /// agent reads it (see [`ptmp::SocketConfig::from_value`]).
    pub config: &'a Value,
    /// Its type and addresses.
    pub socket: SocketPlan,
}

/// What a reader of a plan needs of a socket configuration: its type and
/// the addresses it binds and connects, as written (the rest is the
/// agent's: [`ptmp::SocketConfig`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct SocketPlan {
    /// The zmq socket type as written (`PUSH`, `sub`, ...).
    #[serde(rename = "type")]
    pub stype: String,
    /// The addresses it binds.
    pub bind: Vec<String>,
    /// The addresses it connects to.
    pub connect: Vec<String>,
}

impl SocketPlan {
    /// The socket in `v` when `v` is a socket configuration,
    /// `{"socket": {...}}`.
    pub fn of(v: &Value) -> Option<SocketPlan> {
        /// A socket configuration's outside.
        #[derive(Deserialize)]
        struct Outside {
            socket: SocketPlan,
        }
        if !v.is_object() {
            return None;
        }
        Outside::deserialize(v).ok().map(|o| o.socket)
    }

    /// Every address it binds, then every one it connects to.
    pub fn addresses(&self) -> impl Iterator<Item = &str> {
        self.bind.iter().chain(&self.connect).map(String::as_str)
    }
}

/// `apply-request.json`: a change to a running graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Names the reply file; letters, digits and '-' only.
    pub id: String,
    /// The new graph's configuration, evaluated: the user's graph as
    /// `ptmp graph run` reads it from a file, passed through as JSON for
    /// [`Graph::parse`](crate::Graph::parse) to read and check key by key
    /// (its errors name the node, edge or host at fault).
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
    let up = path.parent().unwrap_or(Path::new(""));
    let run_dir = up.parent().unwrap_or(Path::new(""));
    if name == super::PROCESSES_FILE {
        "supervisor's process"
    } else if super::plan_process(name).is_some() {
        "part plan"
    } else if super::is_reply_file(name) {
        "apply reply"
    } else if up == super::status_dir(run_dir) {
        "process status"
    } else if up == super::sequence_dir(run_dir) {
        "sequence"
    } else {
        "run-directory"
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
                dir: SocketDir::Send,
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

    /// A plan, a final report and the supervisor's states are written
    /// byte for byte as they were when they were built as JSON, so older
    /// readers of the run directory read them as before.
    #[test]
    fn documents_keep_their_shape_on_disk() {
        use serde_json::json;
        let same = |typed: Vec<u8>, v: Value| {
            let before = serde_json::to_vec_pretty(&v).unwrap();
            assert_eq!(
                String::from_utf8(typed).unwrap(),
                String::from_utf8(before).unwrap()
            );
        };
        let sock = json!({"socket": {"type": "PUSH", "bind": ["shm://g.1.a-out-e0"],
                                     "connect": [], "hwm": 1000,
                                     "shm_reader_id": "g/a/in"}});
        let config = json!({"discovery": {"group": "g"}, "name": "g/p", "plugins": [],
            "proxies": [{"name": "a", "type": "source", "data": {"count": 5, "output": sock}},
                        {"name": "b", "type": "sink", "data": {"ofile": "/tmp/x.dump"}}]});
        let plan =
            json!({"graph": "g", "process": "p", "run_dir": "/tmp/r", "config": config.clone()});
        let typed: PartPlan = serde_json::from_value(plan.clone()).unwrap();
        same(serde_json::to_vec_pretty(&typed.config).unwrap(), config);
        assert_eq!(serde_json::to_value(&typed).unwrap(), plan);
        let mut c = typed.config.clone();
        c.discovery = None;
        assert!(!serde_json::to_string(&c).unwrap().contains("discovery"));
        // What a reader of the plan finds in it.
        let a = &typed.config.proxies[0];
        let s = a.sockets();
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].key, s[0].socket.stype.as_str()), ("output", "PUSH"));
        assert_eq!(
            s[0].socket.addresses().collect::<Vec<_>>(),
            ["shm://g.1.a-out-e0"]
        );
        assert_eq!(typed.config.proxies[1].ofile(), Some("/tmp/x.dump"));
        assert_eq!(a.ofile(), None);
        let mut a = a.clone();
        a.set_first_count(9);
        a.set_reader_token("t0");
        assert_eq!(a.first_count(), Some(9));
        assert_eq!(a.data["output"]["socket"]["shm_reader_token"], "t0");
        // Final reports, of a node that ended and one that failed.
        let ended = NodeReport::ended("a", "source", &[("out".into(), 5)], &["l".into()]);
        same(
            serde_json::to_vec_pretty(&ended).unwrap(),
            json!({"name": "a", "kind": "source", "counters": {"out": 5}, "lines": ["l"]}),
        );
        assert_eq!(ended.counter("out"), Some(5));
        same(
            serde_json::to_vec_pretty(&NodeReport::failed("b", "bad".into())).unwrap(),
            json!({"name": "b", "error": "bad"}),
        );
        // The supervisor's word, and a socket's direction, are words.
        let p = SupervisedProcess {
            name: "p".into(),
            pid: Some(3),
            state: SupervisedState::Restarting,
            restarts: 1,
        };
        let text = serde_json::to_string(&p).unwrap();
        assert!(text.contains(r#""state":"restarting""#), "{text}");
        assert_eq!(serde_json::from_str::<SupervisedProcess>(&text).unwrap(), p);
        let bad = serde_json::from_str::<SupervisedProcess>(r#"{"state": "asleep"}"#);
        assert!(bad.is_err());
        let s = serde_json::to_string(&SocketStatus::default()).unwrap();
        assert!(s.contains(r#""dir":"recv""#), "{s}");
    }
}
