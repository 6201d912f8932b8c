//! `ptmp top`: a terminal view, refreshed every second, of a running graph
//! or of this host's shared-memory channels.
//!
//! A graph is read from its run directory, the same files `ptmp graph
//! status` reads: the plan of each process (`plan-PROCESS.json`, which
//! names its nodes and their sockets, from which the edges are found) and
//! the status file each process rewrites a few times a second
//! (`status/PROCESS.json`: pid, per node counts and rates). Figures a
//! status file does not carry are worked out where they can be (rates from
//! successive counts, restarts from a process's pid changing, an shm edge's
//! rate and lag from its channel's header) and shown as `-` where they
//! cannot. Nothing here needs the graph's cooperation beyond those files:
//! no HTTP, no socket.
//!
//! The shm view reads every channel's header and reader registry: writer,
//! messages published and their rate, and per registered reader how far it
//! is behind the writer and, on a channel whose writer overwrites, how many
//! of those the ring no longer holds.

use crate::common::{stopping, CliError, CliResult};
use clap::Args;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A status file not rewritten for this long belongs to a process that is
/// stuck or gone.
const STALE: Duration = Duration::from_secs(5);

#[derive(Args)]
pub struct TopArgs {
    /// The graph to watch: its run directory, its file (JSON or Jsonnet, as
    /// given to `ptmp graph run`) or its name (run directory
    /// ptmp-graph-NAME in the user's directory, as `graph run` has it). With --shm: show only the channels whose
    /// name contains this text.
    target: Option<String>,
    /// The graph's run directory (as given to `ptmp graph run --run-dir`).
    #[arg(long, conflicts_with_all = ["target", "shm"])]
    run_dir: Option<PathBuf>,
    /// Show this host's shared-memory channels: writer, rate, and each
    /// reader's lag behind the writer.
    #[arg(long)]
    shm: bool,
    /// Print one frame without terminal control codes and exit (figures
    /// worked out from successive readings take one interval).
    #[arg(long, conflicts_with = "iterations")]
    once: bool,
    /// Print this many frames and exit.
    #[arg(short = 'n', long, value_name = "N")]
    iterations: Option<u64>,
    /// Seconds between frames.
    #[arg(short = 'd', long, value_name = "SECS", default_value_t = 1.0)]
    interval: f64,
}

/// One screenful: lines of text, plus whether it shows anything at all (a
/// frame that is only an error message makes `--once` fail).
struct Frame {
    lines: Vec<String>,
    /// How to colour a line on a terminal, by index (plain when absent).
    tones: HashMap<usize, Tone>,
    empty_because: Option<String>,
}

/// The colour of a line on a terminal: what needs a look stands out.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tone {
    Plain,
    /// A table's heading.
    Head,
    /// Starting, restarting, stale, falling behind.
    Warn,
    /// Failed, gone, losing messages.
    Bad,
}

impl Tone {
    fn escape(self) -> &'static str {
        match self {
            Tone::Plain => "",
            Tone::Head => "\x1b[1m",
            Tone::Warn => "\x1b[33m",
            Tone::Bad => "\x1b[1;31m",
        }
    }
}

/// What a view remembers between frames.
trait View {
    fn frame(&mut self) -> Frame;
}

pub fn run(a: &TopArgs) -> CliResult {
    if !(a.interval.is_finite() && a.interval >= 0.05 && a.interval <= 3600.0) {
        return Err(CliError::usage(format!(
            "--interval {}: must be from 0.05 to 3600 seconds",
            a.interval
        )));
    }
    if a.iterations == Some(0) {
        return Err(CliError::usage("-n must be at least 1"));
    }
    let every = Duration::from_secs_f64(a.interval);
    let mut view: Box<dyn View> = if a.shm {
        Box::new(ShmView::new(a.target.clone()))
    } else {
        Box::new(GraphView::new(resolve_run_dir(a)?))
    };
    if a.once {
        // Take a first reading so rates have something to compare with.
        let _ = view.frame();
        pause(every, None);
        let f = view.frame();
        print_plain(&f.lines)?;
        return match f.empty_because {
            Some(why) => Err(CliError::fail(why)),
            None => Ok(()),
        };
    }
    if !std::io::stdout().is_terminal() {
        let mut n = 0u64;
        loop {
            let f = view.frame();
            print_plain(&f.lines)?;
            n += 1;
            if a.iterations.is_some_and(|max| n >= max) || pause(every, None) {
                return Ok(());
            }
            print_plain(&[String::new()])?;
        }
    }
    live(view.as_mut(), every, a.iterations)
}

/// Where the graph's files are: `--run-dir`, or the target as a directory,
/// a graph file or a graph name.
fn resolve_run_dir(a: &TopArgs) -> CliResult<PathBuf> {
    if let Some(d) = &a.run_dir {
        return Ok(d.clone());
    }
    let Some(t) = &a.target else {
        return Err(CliError::usage(
            "say which graph to watch (run directory, graph file or name), or give --shm",
        ));
    };
    let p = Path::new(t);
    if p.is_dir() {
        return Ok(p.to_path_buf());
    }
    if p.is_file() {
        let v = crate::run::load_config(p, &Default::default())?;
        let (_, plan) = ptmp_graph::load(&v, &ptmp_graph::name_from_path(p), None)
            .map_err(|e| CliError::usage(e.to_string()))?;
        return Ok(plan.run_dir);
    }
    if t.contains('/') {
        return Err(CliError::usage(format!(
            "{t}: no such run directory or graph file"
        )));
    }
    Ok(ptmp_graph::plan::default_run_dir(t))
}

/// Print lines as they are, for a pipe or a file.
fn print_plain(lines: &[String]) -> CliResult {
    let mut o = std::io::stdout().lock();
    for l in lines {
        if let Err(e) = writeln!(o, "{l}") {
            return Err(write_err(e));
        }
    }
    o.flush().map_err(write_err)
}

fn write_err(e: std::io::Error) -> CliError {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        // The reader went away (`ptmp top --once | head`): end quietly.
        CliError {
            code: 0,
            msg: String::new(),
        }
    } else {
        CliError::fail(format!("write to standard output: {e}"))
    }
}

/// Wait `d`, in short steps so a stop signal or a key is seen at once;
/// true when the view should end.
fn pause(d: Duration, keys: Option<&mpsc::Receiver<Key>>) -> bool {
    let end = Instant::now() + d;
    loop {
        if stopping() {
            return true;
        }
        if let Some(k) = keys {
            match k.try_recv() {
                Ok(Key::Quit) => return true,
                Ok(Key::Redraw) => return false,
                Err(_) => {}
            }
        }
        let now = Instant::now();
        if now >= end {
            return false;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}

enum Key {
    Quit,
    Redraw,
}

/// The terminal as we found it, put back when dropped (also on a panic's
/// unwinding): cursor shown, main screen back, keyboard mode restored.
struct TermGuard {
    saved: Option<rustix::termios::Termios>,
}

impl TermGuard {
    fn enter() -> TermGuard {
        let stdin = std::io::stdin();
        // Keys one at a time, not echoed; Ctrl-C still raises SIGINT, which
        // ends the view like `q`.
        let saved = rustix::termios::tcgetattr(&stdin).ok();
        if let Some(t) = &saved {
            let mut raw = t.clone();
            raw.local_modes -=
                rustix::termios::LocalModes::ICANON | rustix::termios::LocalModes::ECHO;
            raw.special_codes[rustix::termios::SpecialCodeIndex::VMIN] = 1;
            raw.special_codes[rustix::termios::SpecialCodeIndex::VTIME] = 0;
            let _ = rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &raw);
        }
        // The alternate screen, the cursor hidden.
        let mut o = std::io::stdout().lock();
        let _ = write!(o, "\x1b[?1049h\x1b[?25l");
        let _ = o.flush();
        TermGuard { saved }
    }
}

impl Drop for TermGuard {
    fn drop(&mut self) {
        let mut o = std::io::stdout().lock();
        let _ = write!(o, "\x1b[?25h\x1b[?1049l");
        let _ = o.flush();
        if let Some(t) = &self.saved {
            let _ = rustix::termios::tcsetattr(
                std::io::stdin(),
                rustix::termios::OptionalActions::Now,
                t,
            );
        }
    }
}

/// The refreshing view on a terminal, until `q`, Ctrl-C or `iterations`.
fn live(view: &mut dyn View, every: Duration, iterations: Option<u64>) -> CliResult {
    let (tx, keys) = mpsc::channel();
    if std::io::stdin().is_terminal() {
        // A thread of its own reads the keys: it blocks in read() and is
        // simply left behind when the view ends.
        std::thread::spawn(move || {
            let mut b = [0u8; 64];
            let mut stdin = std::io::stdin();
            while let Ok(n) = stdin.read(&mut b) {
                if n == 0 {
                    return;
                }
                for &c in &b[..n] {
                    let k = match c {
                        b'q' | b'Q' | 0x03 => Key::Quit,
                        b' ' | 0x0c => Key::Redraw,
                        _ => continue,
                    };
                    if tx.send(k).is_err() {
                        return;
                    }
                }
            }
        });
    }
    let _guard = TermGuard::enter();
    let mut n = 0u64;
    loop {
        let f = view.frame();
        let (rows, cols) = rustix::termios::tcgetwinsize(std::io::stdout())
            .map(|w| (w.ws_row as usize, w.ws_col as usize))
            .unwrap_or((24, 80));
        let (rows, cols) = (rows.max(1), cols.max(10));
        let mut s = String::from("\x1b[H");
        let shown = f.lines.len().min(rows.saturating_sub(1));
        for (i, l) in f.lines[..shown].iter().enumerate() {
            let tone = match f.tones.get(&i) {
                Some(t) => *t,
                None if l.starts_with("! ") => Tone::Warn,
                None => Tone::Plain,
            };
            s.push_str(tone.escape());
            s.push_str(&clip(l, cols));
            if tone != Tone::Plain {
                s.push_str("\x1b[0m");
            }
            s.push_str("\x1b[K\r\n");
        }
        if shown < f.lines.len() {
            s.push_str(&clip(
                &format!(
                    "... {} more lines (a taller window shows them)",
                    f.lines.len() - shown
                ),
                cols,
            ));
            s.push_str("\x1b[K\r\n");
        }
        s.push_str("\x1b[J");
        {
            let mut o = std::io::stdout().lock();
            o.write_all(s.as_bytes()).map_err(write_err)?;
            o.flush().map_err(write_err)?;
        }
        n += 1;
        if iterations.is_some_and(|max| n >= max) || pause(every, Some(&keys)) {
            return Ok(());
        }
    }
}

/// The first `cols` characters of `l`.
fn clip(l: &str, cols: usize) -> String {
    l.chars().take(cols).collect()
}

fn clock() -> String {
    let s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!(
        "{:02}:{:02}:{:02} UTC",
        (s / 3600) % 24,
        (s / 60) % 60,
        s % 60
    )
}

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// A column: heading and whether it is right-aligned.
type Col = (&'static str, bool);

/// Lay out `rows` under `cols`, each column as wide as its widest cell.
fn table(cols: &[Col], rows: &[Vec<String>]) -> Vec<String> {
    let mut w: Vec<usize> = cols.iter().map(|c| c.0.len()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(w.len()) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if cols[i].1 {
                s.push_str(&format!("{c:>0$}", w[i]));
            } else {
                s.push_str(&format!("{c:<0$}", w[i]));
            }
        }
        s.trim_end().to_string()
    };
    let mut out = vec![line(cols.iter().map(|c| c.0).collect())];
    for r in rows {
        out.push(line(r.iter().map(String::as_str).collect()));
    }
    out
}

/// Microseconds, whole.
fn micros(v: Option<f64>) -> String {
    match v {
        Some(r) if r.is_finite() => format!("{r:.0}"),
        _ => "-".into(),
    }
}

/// Lay out a table (see [`table`]) at the end of `lines`, its heading and
/// each row toned.
fn add_table(
    lines: &mut Vec<String>,
    tones: &mut HashMap<usize, Tone>,
    cols: &[Col],
    rows: &[Vec<String>],
    tone: impl Fn(usize, &[String]) -> Tone,
) {
    let base = lines.len();
    tones.insert(base, Tone::Head);
    for (i, r) in rows.iter().enumerate() {
        tones.insert(base + 1 + i, tone(i, r));
    }
    lines.extend(table(cols, rows));
}

/// A cell as a number, 0 when it is none.
fn cell_u64(r: &[String], i: usize) -> u64 {
    r.get(i).and_then(|c| c.parse().ok()).unwrap_or(0)
}

fn num(v: Option<u64>) -> String {
    v.map_or("-".into(), |n| n.to_string())
}

fn rate(v: Option<f64>) -> String {
    match v {
        Some(r) if r.is_finite() => format!("{r:.1}"),
        _ => "-".into(),
    }
}

/// A counter at `v[key]`, accepting a number or an object with a `total`.
fn count_at(v: &Value, key: &str) -> Option<u64> {
    let x = &v[key];
    x.as_u64().or_else(|| x["total"].as_u64())
}

// ---------------------------------------------------------------- graphs

/// A node as its process's plan describes it.
struct PlanNode {
    name: String,
    kind: String,
    process: String,
}

/// One socket of a node: where it sends or receives.
struct PlanSocket {
    node: String,
    sends: bool,
    stype: String,
    addresses: Vec<String>,
}

/// The graph view: the run directory and what it remembers between frames.
struct GraphView {
    dir: PathBuf,
    /// Per process: the last pid seen and how often it changed.
    pids: HashMap<String, (u64, u64)>,
    /// Per node: (time, in, out) at the previous frame, for rates the
    /// status files do not carry.
    counts: HashMap<String, (Instant, u64, u64)>,
    /// Per shm channel: (time, published) at the previous frame.
    chans: HashMap<String, (Instant, u64)>,
}

/// A status file as read, or why it could not be.
struct ProcStatus {
    process: String,
    doc: Value,
}

impl GraphView {
    fn new(dir: PathBuf) -> GraphView {
        GraphView {
            dir,
            pids: HashMap::new(),
            counts: HashMap::new(),
            chans: HashMap::new(),
        }
    }

    /// Every `plan-*.json`: the graph's name, nodes and sockets.
    fn plans(&self, msgs: &mut Vec<String>) -> (Option<String>, Vec<PlanNode>, Vec<PlanSocket>) {
        let (mut graph, mut nodes, mut socks) = (None, Vec::new(), Vec::new());
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return (graph, nodes, socks);
        };
        let mut files: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|f| f.to_str())
                    .is_some_and(|f| f.starts_with("plan-") && f.ends_with(".json"))
            })
            .collect();
        files.sort();
        for f in files {
            let v = match ptmp::files::read_file(&f, ptmp_graph::rundir::PLAN_LIMIT)
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| e.to_string()))
            {
                Ok(v) => v,
                Err(e) => {
                    msgs.push(format!("{}: unreadable plan: {e}", f.display()));
                    continue;
                }
            };
            let process = v["process"].as_str().unwrap_or("?").to_string();
            if graph.is_none() {
                graph = v["graph"].as_str().map(String::from);
            }
            for p in v["config"]["proxies"].as_array().into_iter().flatten() {
                let name = p["name"].as_str().unwrap_or("?").to_string();
                nodes.push(PlanNode {
                    name: name.clone(),
                    kind: p["type"].as_str().unwrap_or("?").to_string(),
                    process: process.clone(),
                });
                sockets_of(&name, "", &p["data"], &mut socks);
            }
        }
        (graph, nodes, socks)
    }

    /// The supervisor's file of process states (`Null` when there is none
    /// or it cannot be read; the latter is reported).
    fn supervised(&self, msgs: &mut Vec<String>) -> Value {
        let f = self.dir.join("processes.json");
        match ptmp::files::read_file(&f, ptmp_graph::rundir::STATUS_LIMIT) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Null,
            Err(e) => {
                msgs.push(format!("{}: {e}", f.display()));
                Value::Null
            }
            Ok(b) => match serde_json::from_slice::<Value>(&b) {
                Ok(v) if v.is_object() => v,
                Ok(_) => {
                    msgs.push(format!("{}: not a JSON object", f.display()));
                    Value::Null
                }
                Err(e) => {
                    msgs.push(format!("{}: not JSON: {e}", f.display()));
                    Value::Null
                }
            },
        }
    }

    /// Every status file, each parsed or reported as a message.
    fn statuses(&self, msgs: &mut Vec<String>) -> Vec<ProcStatus> {
        let dir = ptmp_graph::status::status_dir(&self.dir);
        let mut out = Vec::new();
        let Ok(rd) = std::fs::read_dir(&dir) else {
            return out;
        };
        let mut files: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().and_then(|x| x.to_str()) == Some("json"))
            .collect();
        files.sort();
        for f in files {
            let stem = f
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("?")
                .to_string();
            match ptmp::files::read_file(&f, ptmp_graph::rundir::STATUS_LIMIT) {
                // Gone between the listing and the read: the process is
                // being restarted; its next file will be there next frame.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => msgs.push(format!("{}: {e}", f.display())),
                Ok(b) => match serde_json::from_slice::<Value>(&b) {
                    Ok(doc) if doc.is_object() => out.push(ProcStatus {
                        process: doc["process"].as_str().unwrap_or(&stem).to_string(),
                        doc,
                    }),
                    Ok(_) => msgs.push(format!(
                        "{}: not a status document (no JSON object)",
                        f.display()
                    )),
                    Err(e) => msgs.push(format!("{}: not JSON: {e}", f.display())),
                },
            }
        }
        out
    }
}

/// Find the sockets in a node's `data`: every object with a `socket`.
fn sockets_of(node: &str, key: &str, v: &Value, out: &mut Vec<PlanSocket>) {
    match v {
        Value::Object(m) => {
            if let Some(s) = m.get("socket").filter(|s| s.is_object()) {
                let stype = s["type"].as_str().unwrap_or("").to_ascii_uppercase();
                let sends = match stype.as_str() {
                    "PUSH" | "PUB" | "XPUB" => true,
                    "PULL" | "SUB" | "XSUB" => false,
                    // A pair: by the key it sits under (input / output).
                    _ => key.contains("out"),
                };
                let addresses = ["bind", "connect"]
                    .iter()
                    .flat_map(|k| s[*k].as_array().cloned().unwrap_or_default())
                    .filter_map(|a| a.as_str().map(String::from))
                    .collect();
                out.push(PlanSocket {
                    node: node.to_string(),
                    sends,
                    stype,
                    addresses,
                });
                return;
            }
            for (k, x) in m {
                sockets_of(node, k, x, out);
            }
        }
        Value::Array(a) => {
            for x in a {
                sockets_of(node, key, x, out);
            }
        }
        _ => {}
    }
}

fn pid_alive(pid: u64) -> bool {
    u32::try_from(pid).is_ok_and(ptmp_shm::pid_alive)
}

/// An edge's sockets: the senders', the receivers'.
type Ends<'a> = (Vec<&'a PlanSocket>, Vec<&'a PlanSocket>);

/// One socket a process reports in its status file.
struct SockFig {
    /// The plan's node it belongs to, when that can be told.
    node: Option<String>,
    recv: bool,
    endpoints: Vec<String>,
    rate: Option<f64>,
    lost: Option<u64>,
    /// Sends that found the queue full and had to wait (senders only).
    stalls: Option<u64>,
    /// Durable shm readers the sender's ring gave up (senders only).
    given_up: Option<u64>,
    p99_us: Option<f64>,
}

/// A node's row as the frame shows it.
struct NodeFig {
    state: String,
    pid: Option<u64>,
    restarts: Option<u64>,
    inn: Option<u64>,
    out: Option<u64>,
    in_rate: Option<f64>,
    out_rate: Option<f64>,
    lost: Option<u64>,
    p99_us: Option<f64>,
}

impl View for GraphView {
    fn frame(&mut self) -> Frame {
        let mut msgs = Vec::new();
        let mut lines = Vec::new();
        if !self.dir.is_dir() {
            let why = format!(
                "no run directory {}: is the graph running (with this --run-dir)?",
                self.dir.display()
            );
            lines.push(format!("ptmp top: {}   {}", self.dir.display(), clock()));
            lines.push(String::new());
            lines.push(why.clone());
            return Frame {
                lines,
                tones: HashMap::new(),
                empty_because: Some(why),
            };
        }
        let mut tones = HashMap::new();
        let (graph, plan_nodes, socks) = self.plans(&mut msgs);
        let stats = self.statuses(&mut msgs);
        let supervised = self.supervised(&mut msgs);
        let sup = supervised["supervisor_pid"].as_u64().or_else(|| {
            ptmp::files::read_file(
                &self.dir.join("supervisor.pid"),
                ptmp_graph::rundir::LOCK_LIMIT,
            )
            .ok()
            .and_then(|t| String::from_utf8_lossy(&t).trim().parse::<u64>().ok())
        });
        // The supervisor's word on each process: state and restarts.
        let proc_of: HashMap<&str, &Value> = supervised["processes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| Some((p["name"].as_str()?, p)))
            .collect();
        // Every socket the processes report, with the node it belongs to
        // (the plan's node of that process with a socket on the same
        // addresses).
        let mut sock_figs: Vec<SockFig> = Vec::new();
        for st in &stats {
            for x in st.doc["sockets"].as_array().into_iter().flatten() {
                let endpoints: Vec<String> = x["endpoints"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|e| e.as_str().map(String::from))
                    .collect();
                let recv = x["dir"].as_str() == Some("recv");
                let node = plan_nodes
                    .iter()
                    .filter(|n| n.process == st.process)
                    .find(|n| {
                        socks.iter().any(|p| {
                            p.node == n.name
                                && p.sends != recv
                                && p.addresses.iter().any(|a| endpoints.contains(a))
                        })
                    })
                    .map(|n| n.name.clone());
                sock_figs.push(SockFig {
                    node,
                    recv,
                    endpoints,
                    rate: x["rate"].as_f64(),
                    lost: x["lost"].as_u64(),
                    stalls: x["stalls"].as_u64(),
                    given_up: x["readers_given_up"].as_u64(),
                    p99_us: x["latency_us"]["p99"].as_f64(),
                });
            }
        }
        let graph = graph
            .or_else(|| {
                stats
                    .iter()
                    .find_map(|s| s.doc["graph"].as_str().map(String::from))
            })
            .unwrap_or_else(|| "?".into());
        let now = Instant::now();
        let wall = now_us();

        // Per node figures from the status files.
        let mut figs: BTreeMap<String, NodeFig> = BTreeMap::new();
        let mut node_proc: HashMap<String, String> = HashMap::new();
        for st in &stats {
            let d = &st.doc;
            let pid = d["pid"].as_u64();
            let sup_proc = proc_of.get(st.process.as_str());
            let restarts_given = d["restarts"]
                .as_u64()
                .or_else(|| sup_proc.and_then(|p| p["restarts"].as_u64()));
            let sup_state = sup_proc.and_then(|p| p["state"].as_str());
            let seen = match pid {
                Some(p) => {
                    let e = self.pids.entry(st.process.clone()).or_insert((p, 0));
                    if e.0 != p {
                        *e = (p, e.1 + 1);
                    }
                    Some(e.1)
                }
                None => None,
            };
            let fin = d["final"].as_bool() == Some(true);
            let age = d["time_us"]
                .as_u64()
                .map(|t| Duration::from_micros(wall.saturating_sub(t)));
            let alive = pid.is_some_and(pid_alive);
            for n in d["nodes"].as_array().into_iter().flatten() {
                let name = n["name"].as_str().unwrap_or("?").to_string();
                let (inn, out) = (count_at(n, "in"), count_at(n, "out"));
                let (mut in_rate, mut out_rate) = (n["in_rate"].as_f64(), n["out_rate"].as_f64());
                if in_rate.is_none() || out_rate.is_none() {
                    if let (Some(i), Some(o)) = (inn, out) {
                        if let Some((t0, i0, o0)) = self.counts.get(&name) {
                            let dt = now.duration_since(*t0).as_secs_f64();
                            if dt > 0.0 {
                                in_rate = in_rate.or(Some(i.saturating_sub(*i0) as f64 / dt));
                                out_rate = out_rate.or(Some(o.saturating_sub(*o0) as f64 / dt));
                            }
                        }
                        self.counts.insert(name.clone(), (now, i, o));
                    }
                }
                let state = if let Some(s) = n["state"].as_str() {
                    s.to_string()
                } else if let Some(s) = sup_state.filter(|s| *s != "running") {
                    // starting, restarting, failed, finished, stopped
                    s.to_string()
                } else if fin {
                    "exited".into()
                } else if n["ended"].as_bool() == Some(true) {
                    "ended".into()
                } else if pid.is_some() && !alive {
                    "gone".into()
                } else if age.is_some_and(|a| a > STALE) {
                    format!("stale {}s", age.map_or(0, |a| a.as_secs()))
                } else {
                    "running".into()
                };
                // Lost and latency: the node's own figures, else those of
                // the sockets it receives on.
                let mine = || {
                    sock_figs
                        .iter()
                        .filter(|x| x.recv && x.node.as_deref() == Some(name.as_str()))
                };
                let lost = count_at(n, "lost").or_else(|| {
                    mine()
                        .map(|x| x.lost)
                        .reduce(|a, b| Some(a? + b?))
                        .flatten()
                });
                let p99 = n["latency_us"]["p99"]
                    .as_f64()
                    .or_else(|| mine().filter_map(|x| x.p99_us).reduce(f64::max));
                figs.insert(
                    name.clone(),
                    NodeFig {
                        state,
                        pid,
                        restarts: n["restarts"].as_u64().or(restarts_given).or(seen),
                        inn,
                        out,
                        in_rate,
                        out_rate,
                        lost,
                        p99_us: p99,
                    },
                );
                node_proc.insert(name, st.process.clone());
            }
        }

        // Edges: an address with senders on one side, receivers on the other.
        let mut edges: BTreeMap<String, Ends> = BTreeMap::new();
        for s in &socks {
            for a in &s.addresses {
                let e = edges.entry(a.clone()).or_default();
                if s.sends {
                    e.0.push(s);
                } else {
                    e.1.push(s);
                }
            }
        }
        // How far downstream each node is (the longest path to it from a
        // node nothing feeds), so nodes and edges are listed in the order
        // the data flows. A cycle only stops the counting after a bound.
        let mut depth: HashMap<&str, usize> = HashMap::new();
        for _ in 0..=plan_nodes.len() {
            let mut moved = false;
            for (tx, rx) in edges.values() {
                for s in tx {
                    let d = depth.get(s.node.as_str()).copied().unwrap_or(0) + 1;
                    for r in rx {
                        let e = depth.entry(r.node.as_str()).or_insert(0);
                        if *e < d && d <= plan_nodes.len() {
                            *e = d;
                            moved = true;
                        }
                    }
                }
            }
            if !moved {
                break;
            }
        }
        let depth_of = |n: &str| depth.get(n).copied().unwrap_or(0);
        // Nodes: the plans' list, with any node only a status file names.
        let mut order: Vec<(String, String, String)> = plan_nodes
            .iter()
            .map(|n| (n.name.clone(), n.process.clone(), n.kind.clone()))
            .collect();
        for (name, p) in &node_proc {
            if !order.iter().any(|o| &o.0 == name) {
                order.push((name.clone(), p.clone(), "?".into()));
            }
        }
        order.sort_by(|a, b| depth_of(&a.0).cmp(&depth_of(&b.0)).then(a.0.cmp(&b.0)));
        let running = figs.values().filter(|f| f.state == "running").count();
        let no_status = |process: &str| -> (String, Option<u64>, Option<u64>) {
            match proc_of.get(process) {
                Some(p) => (
                    p["state"].as_str().unwrap_or("no status").to_string(),
                    p["pid"].as_u64(),
                    p["restarts"].as_u64(),
                ),
                None => ("no status".into(), None, None),
            }
        };
        let sup_state = match sup {
            Some(p) if pid_alive(p) => format!("supervisor pid {p}"),
            Some(p) => format!("supervisor pid {p} gone"),
            None => "no supervisor".into(),
        };
        lines.push(format!(
            "ptmp top: graph {graph}   {}   {sup_state}   {}",
            self.dir.display(),
            clock()
        ));
        lines.push(format!(
            "{} nodes ({running} running) in {} processes; q quits",
            order.len(),
            stats.len()
        ));
        lines.push(String::new());
        let mut rows = Vec::new();
        for (name, process, kind) in &order {
            let row = match figs.get(name) {
                Some(f) => vec![
                    name.clone(),
                    kind.clone(),
                    process.clone(),
                    num(f.pid),
                    f.state.clone(),
                    num(f.restarts),
                    num(f.inn),
                    rate(f.in_rate),
                    num(f.out),
                    rate(f.out_rate),
                    num(f.lost),
                    micros(f.p99_us),
                ],
                None => {
                    let (state, pid, restarts) = no_status(process);
                    let mut r = vec![
                        name.clone(),
                        kind.clone(),
                        process.clone(),
                        num(pid),
                        state,
                        num(restarts),
                    ];
                    r.extend(std::iter::repeat_n("-".to_string(), 6));
                    r
                }
            };
            rows.push(row);
        }
        add_table(
            &mut lines,
            &mut tones,
            &[
                ("NODE", false),
                ("TYPE", false),
                ("PROCESS", false),
                ("PID", true),
                ("STATE", false),
                ("RESTARTS", true),
                ("IN", true),
                ("IN/S", true),
                ("OUT", true),
                ("OUT/S", true),
                ("LOST", true),
                ("P99 US", true),
            ],
            &rows,
            |_, r| {
                let state = r.get(4).map_or("", String::as_str);
                if matches!(state, "failed" | "gone") || cell_u64(r, 10) > 0 {
                    Tone::Bad
                } else if state != "running" && state != "ended" && state != "exited"
                    || cell_u64(r, 5) > 0
                {
                    Tone::Warn
                } else {
                    Tone::Plain
                }
            },
        );

        let ports_of = |node: &str, sends: bool| {
            socks
                .iter()
                .filter(|s| s.node == node && s.sends == sends)
                .count()
        };
        let mut erows = Vec::new();
        // Rows of edges whose sending ring gave readers up.
        let mut given_up_rows = std::collections::HashSet::new();
        let mut edge_order: Vec<(&String, &Ends)> = edges.iter().collect();
        let key = |e: &Ends| {
            let d = e.0.iter().map(|s| depth_of(&s.node)).min().unwrap_or(0);
            let n = e.0.first().map_or("", |s| s.node.as_str());
            (d, n.to_string())
        };
        edge_order.sort_by_key(|(_, e)| key(e));
        for (addr, (tx, rx)) in edge_order {
            if tx.is_empty() || rx.is_empty() {
                continue;
            }
            let names = |v: &Vec<&PlanSocket>| {
                v.iter()
                    .map(|s| s.node.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            };
            let transport = addr.split("://").next().unwrap_or("?").to_string();
            // The receiving sockets on this address alone (a socket on
            // several addresses mixes their figures), else the sending ones.
            let on = |recv: bool| {
                sock_figs.iter().filter(move |x| {
                    x.recv == recv && x.endpoints.len() == 1 && &x.endpoints[0] == addr
                })
            };
            let sum_rate = |recv: bool| {
                on(recv)
                    .map(|x| x.rate)
                    .reduce(|a, b| Some(a? + b?))
                    .flatten()
            };
            let mut r = sum_rate(true).or_else(|| sum_rate(false));
            let lost = on(true)
                .map(|x| x.lost)
                .reduce(|a, b| Some(a? + b?))
                .flatten();
            let p99 = on(true).filter_map(|x| x.p99_us).reduce(f64::max);
            let stalls = on(false)
                .map(|x| x.stalls)
                .reduce(|a, b| Some(a? + b?))
                .flatten();
            // Rare, and about readers rather than messages: a line under
            // the tables, and the row marked, rather than a column.
            let given_up: u64 = on(false).filter_map(|x| x.given_up).sum();
            if given_up > 0 {
                given_up_rows.insert(erows.len());
                msgs.push(format!(
                    "edge {} -> {} ({addr}): {given_up} durable reader(s) given up: their process died and did not come back within its grace time, so the ring went on without them",
                    names(tx),
                    names(rx)
                ));
            }
            let mut lag = None;
            if let Some(name) = addr.strip_prefix("shm://") {
                match ptmp_shm::inspect(name) {
                    Ok((st, readers)) => {
                        if r.is_none() {
                            if let Some((t0, p0)) = self.chans.get(name) {
                                let dt = now.duration_since(*t0).as_secs_f64();
                                if dt > 0.0 {
                                    r = Some(st.published.saturating_sub(*p0) as f64 / dt);
                                }
                            }
                        }
                        self.chans.insert(name.to_string(), (now, st.published));
                        let behind = readers
                            .iter()
                            .filter(|x| x.alive)
                            .map(|x| st.published.saturating_sub(x.position))
                            .max();
                        lag = lag.or(behind);
                    }
                    Err(e) => msgs.push(format!("edge {addr}: {e}")),
                }
            }
            if r.is_none() {
                // Node counts stand for the edge when the receivers (or
                // else the senders) have no other port on that side.
                if rx.iter().all(|s| ports_of(&s.node, false) == 1) {
                    r = rx
                        .iter()
                        .map(|s| figs.get(&s.node).and_then(|f| f.in_rate))
                        .sum();
                } else if tx.iter().all(|s| ports_of(&s.node, true) == 1) {
                    r = tx
                        .iter()
                        .map(|s| figs.get(&s.node).and_then(|f| f.out_rate))
                        .sum();
                }
            }
            if lag.is_none()
                && tx
                    .iter()
                    .all(|s| s.stype == "PUSH" && ports_of(&s.node, true) == 1)
                && rx
                    .iter()
                    .all(|s| s.stype == "PULL" && ports_of(&s.node, false) == 1)
            {
                // Sent but not yet taken in: queued on the way.
                let sent: Option<u64> = tx
                    .iter()
                    .map(|s| figs.get(&s.node).and_then(|f| f.out))
                    .sum();
                let got: Option<u64> = rx
                    .iter()
                    .map(|s| figs.get(&s.node).and_then(|f| f.inn))
                    .sum();
                if let (Some(a), Some(b)) = (sent, got) {
                    lag = Some(a.saturating_sub(b));
                }
            }
            erows.push(vec![
                format!("{} -> {}", names(tx), names(rx)),
                transport,
                rate(r),
                num(lag),
                num(lost),
                num(stalls),
                micros(p99),
                addr.clone(),
            ]);
        }
        if !erows.is_empty() {
            lines.push(String::new());
            add_table(
                &mut lines,
                &mut tones,
                &[
                    ("EDGE", false),
                    ("TRANSPORT", false),
                    ("RATE/S", true),
                    ("BEHIND", true),
                    ("LOST", true),
                    ("STALLS", true),
                    ("P99 US", true),
                    ("ADDRESS", false),
                ],
                &erows,
                |i, r| {
                    if cell_u64(r, 4) > 0 || given_up_rows.contains(&i) {
                        Tone::Bad
                    } else {
                        Tone::Plain
                    }
                },
            );
        }
        let empty_because = if order.is_empty() {
            let why = format!(
                "no plans or status files in {}: is the graph running (with this --run-dir)?",
                self.dir.display()
            );
            msgs.insert(0, why.clone());
            Some(why)
        } else {
            None
        };
        if !msgs.is_empty() {
            lines.push(String::new());
            lines.extend(msgs.into_iter().map(|m| format!("! {m}")));
        }
        Frame {
            lines,
            tones,
            empty_because,
        }
    }
}

// ------------------------------------------------------------------- shm

/// A channel read at one time: when, messages published, and each
/// reader's (pid, position).
type Reading = (Instant, u64, Vec<(u32, u64)>);

/// The shm view: which channels to show and their previous readings.
struct ShmView {
    filter: Option<String>,
    /// Per channel: time, published, and each reader's (pid, position).
    prev: HashMap<String, Reading>,
}

impl ShmView {
    fn new(filter: Option<String>) -> ShmView {
        ShmView {
            filter,
            prev: HashMap::new(),
        }
    }
}

impl View for ShmView {
    fn frame(&mut self) -> Frame {
        let dir = ptmp_shm::shm_dir();
        let mut lines = vec![format!(
            "ptmp top: shared-memory channels in {}   {}",
            dir.display(),
            clock()
        )];
        let chans = match ptmp_shm::list() {
            Ok(c) => c,
            Err(e) => {
                let why = e.to_string();
                lines.push(String::new());
                lines.push(why.clone());
                return Frame {
                    lines,
                    tones: HashMap::new(),
                    empty_because: Some(why),
                };
            }
        };
        let chans: Vec<_> = chans
            .into_iter()
            .filter(|c| {
                self.filter
                    .as_ref()
                    .is_none_or(|f| c.name.contains(f.as_str()))
            })
            .collect();
        lines.push(format!(
            "{} channels; a reader's BEHIND is how many published messages it has not read yet; q quits",
            chans.len()
        ));
        lines.push(String::new());
        let now = Instant::now();
        let mut rows = Vec::new();
        let mut row_tones = Vec::new();
        let mut tones = HashMap::new();
        let mut msgs = Vec::new();
        for c in &chans {
            let (st, readers) = match ptmp_shm::inspect(&c.name) {
                Ok(x) => x,
                Err(e) => {
                    // Gone since the listing: a writer just removed it.
                    if c.state.is_ok() && !c.path.exists() {
                        continue;
                    }
                    msgs.push(format!("{}: {e}", c.name));
                    continue;
                }
            };
            let prev = self.prev.get(&c.name);
            let dt = prev.map(|p| now.duration_since(p.0).as_secs_f64());
            let r = match (prev, dt) {
                (Some(p), Some(dt)) if dt > 0.0 => {
                    Some(st.published.saturating_sub(p.1) as f64 / dt)
                }
                _ => None,
            };
            let overwrite = st.config.policy == ptmp_shm::Policy::Overwrite;
            row_tones.push(if st.writer_pid != 0 && !st.writer_alive {
                Tone::Warn
            } else {
                Tone::Plain
            });
            rows.push(vec![
                c.name.clone(),
                if overwrite { "pub" } else { "push" }.into(),
                st.config.slots.to_string(),
                match (st.writer_pid, st.writer_alive) {
                    (0, _) => "none".into(),
                    (p, true) => p.to_string(),
                    (p, false) => format!("{p} (dead)"),
                },
                st.published.to_string(),
                rate(r),
                String::new(),
                String::new(),
                String::new(),
            ]);
            for x in &readers {
                let behind = st.published.saturating_sub(x.position);
                let read_rate = match (prev, dt) {
                    (Some(p), Some(dt)) if dt > 0.0 => {
                        p.2.iter()
                            .find(|(pid, _)| *pid == x.pid)
                            .map(|(_, pos)| x.position.saturating_sub(*pos) as f64 / dt)
                    }
                    _ => None,
                };
                // A writer that overwrites has already reused the slots of
                // everything more than a ring behind: those are lost.
                let lost = if overwrite {
                    behind.saturating_sub(st.config.slots as u64).to_string()
                } else {
                    "-".into()
                };
                let slots = st.config.slots as u64;
                row_tones.push(if !x.alive || (overwrite && behind > slots) {
                    Tone::Bad
                } else if behind * 2 > slots {
                    // More than half a ring behind: near losing (pub) or
                    // holding the writer back (push).
                    Tone::Warn
                } else {
                    Tone::Plain
                });
                rows.push(vec![
                    format!("  reader {}", x.pid),
                    String::new(),
                    String::new(),
                    if x.alive { "" } else { "(dead)" }.into(),
                    x.position.to_string(),
                    rate(read_rate),
                    behind.to_string(),
                    lost,
                    String::new(),
                ]);
            }
            self.prev.insert(
                c.name.clone(),
                (
                    now,
                    st.published,
                    readers.iter().map(|x| (x.pid, x.position)).collect(),
                ),
            );
        }
        add_table(
            &mut lines,
            &mut tones,
            &[
                ("CHANNEL / READER", false),
                ("POLICY", false),
                ("SLOTS", true),
                ("WRITER", true),
                ("MESSAGES", true),
                ("RATE/S", true),
                ("BEHIND", true),
                ("LOST", true),
                ("", false),
            ],
            &rows,
            |i, _| row_tones[i],
        );
        if chans.is_empty() {
            lines.push("(no channels)".into());
        }
        if !msgs.is_empty() {
            lines.push(String::new());
            lines.extend(msgs.into_iter().map(|m| format!("! {m}")));
        }
        Frame {
            lines,
            tones,
            empty_because: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An edge whose sending ring gave a durable reader up: its row is
    /// red and a line under the tables says what happened, naming the
    /// edge; an edge without is plain and not named.
    #[test]
    fn readers_given_up_are_shown() {
        let d = tempfile::tempdir().unwrap();
        let rd = d.path();
        std::fs::create_dir(rd.join("status")).unwrap();
        let (gone, kept) = (
            format!("shm://top-given-up-{}-a", std::process::id()),
            format!("shm://top-given-up-{}-b", std::process::id()),
        );
        let sock = |t: &str, a: &str| json!({"socket": {"type": t, "connect": [a]}});
        let plan = |p: &str, proxies: Value| {
            let v = json!({"graph": "g", "process": p, "run_dir": rd,
                           "config": {"proxies": proxies}});
            std::fs::write(rd.join(format!("plan-{p}.json")), v.to_string()).unwrap();
        };
        plan(
            "src",
            json!([{"name": "a", "type": "source", "data": {"output": sock("PUSH", &gone)}},
                   {"name": "b", "type": "source", "data": {"output": sock("PUSH", &kept)}}]),
        );
        plan(
            "dst",
            json!([{"name": "x", "type": "sink", "data": {"input": sock("PULL", &gone)}},
                   {"name": "y", "type": "sink", "data": {"input": sock("PULL", &kept)}}]),
        );
        let send = |ep: &str, given_up: u64| {
            json!({"dir": "send", "endpoints": [ep], "messages": 10, "bytes": 100,
                   "errors": 0, "lost": 0, "stalls": 3, "readers_given_up": given_up,
                   "rate": 1.0, "byte_rate": 10.0, "latency_us": null})
        };
        let status = json!({"graph": "g", "process": "src", "pid": std::process::id(),
            "final": false,
            "nodes": [{"name": "a", "in": 0, "out": 10, "ended": false},
                      {"name": "b", "in": 0, "out": 10, "ended": false}],
            "sockets": [send(&gone, 2), send(&kept, 0)]});
        std::fs::write(rd.join("status/src.json"), status.to_string()).unwrap();
        let f = GraphView::new(rd.to_path_buf()).frame();
        let text = f.lines.join("\n");
        let row = |ep: &str| {
            f.lines
                .iter()
                .position(|l| l.contains(" -> ") && l.ends_with(ep))
                .unwrap_or_else(|| panic!("no row for {ep}:\n{text}"))
        };
        assert!(f.tones.get(&row(&gone)) == Some(&Tone::Bad), "{text}");
        assert!(f.tones.get(&row(&kept)) == Some(&Tone::Plain), "{text}");
        let said: Vec<&String> = f
            .lines
            .iter()
            .filter(|l| l.contains("durable reader(s) given up"))
            .collect();
        assert_eq!(said.len(), 1, "{text}");
        assert!(
            said[0].starts_with(&format!("! edge a -> x ({gone}): 2 durable reader(s)")),
            "{text}"
        );
    }
}
