//! `ptmp top`: a terminal view, refreshed every second, of a running graph
//! or of this host's shared-memory channels.
//!
//! A graph is read from its run directory, the same files `ptmp graph
//! status` reads: the plan of each process (`plan-PROCESS.json`, which
//! names its nodes and their sockets, from which the edges are found) and
//! the status file each process rewrites a few times a second
//! (`status/PROCESS.json`: pid, per node counts and rates), gathered into
//! the graph library's `GraphState` (by `status::Planned`), the state
//! every other view shows. Figures a status file does not carry are
//! worked out where they can be (restarts from a process's pid changing,
//! an shm edge's rate and lag from its channel's header) and shown as `-`
//! where they cannot. Nothing here needs the graph's cooperation beyond
//! those files: no HTTP, no socket.
//!
//! The shm view reads every channel's header and reader registry: writer,
//! messages published and their rate, and per registered reader how far it
//! is behind the writer and, on a channel whose writer overwrites, how many
//! of those the ring no longer holds.

mod graph;
mod shm;

use crate::common::{stopping, CliError, CliResult};
use clap::Args;
use graph::GraphView;
use serde_json::Value;
use shm::ShmView;
use std::collections::HashMap;
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
    /// With --once: print the frame as one JSON document (its heading, each
    /// table as an array of rows, and any messages) instead of text.
    #[arg(long, requires = "once")]
    json: bool,
    /// Print this many frames and exit.
    #[arg(short = 'n', long, value_name = "N")]
    iterations: Option<u64>,
    /// Time between frames (e.g. 500ms; a bare number is seconds).
    #[arg(short = 'i', long, value_name = "DURATION", default_value = "1s", value_parser = ptmp::duration::secs)]
    interval: std::time::Duration,
}

/// One screenful: lines of text, plus whether it shows anything at all (a
/// frame that is only an error message makes `--once` fail).
struct Frame {
    lines: Vec<String>,
    /// The tables among the lines, by name, as JSON (for `--once --json`).
    tables: Vec<(&'static str, Value)>,
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
    if !(Duration::from_millis(50)..=Duration::from_secs(3600)).contains(&a.interval) {
        return Err(CliError::usage(format!(
            "--interval {:?}: must be from 50ms to 1h",
            a.interval
        )));
    }
    if a.iterations == Some(0) {
        return Err(CliError::usage("-n must be at least 1"));
    }
    let every = a.interval;
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
        if a.json {
            print_plain(&[frame_json(&f).to_string()])?;
        } else {
            print_plain(&f.lines)?;
        }
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

/// A frame as JSON: `{"heading", "tables": {NAME: [ROW...]}, "messages",
/// "empty_because"}`.
fn frame_json(f: &Frame) -> Value {
    let tables: serde_json::Map<String, Value> = f
        .tables
        .iter()
        .map(|(n, t)| (n.to_string(), t.clone()))
        .collect();
    let messages: Vec<&str> = f
        .lines
        .iter()
        .filter_map(|l| l.strip_prefix("! "))
        .collect();
    serde_json::json!({
        "heading": f.lines.first(),
        "tables": tables,
        "messages": messages,
        "empty_because": f.empty_because,
    })
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
    (lines, tones, tables): (&mut Vec<String>, &mut HashMap<usize, Tone>, &mut Tables),
    name: &'static str,
    cols: &[Col],
    rows: &[Vec<String>],
    tone: impl Fn(usize, &[String]) -> Tone,
) {
    tables.push((name, table_json(cols, rows)));
    let base = lines.len();
    tones.insert(base, Tone::Head);
    for (i, r) in rows.iter().enumerate() {
        tones.insert(base + 1 + i, tone(i, r));
    }
    lines.extend(table(cols, rows));
}

/// A frame's tables as JSON, by name.
type Tables = Vec<(&'static str, Value)>;

/// A table as JSON: one object a row, keyed by its column's heading in
/// lower case (`IN/S` as `in_per_s`, `P99 US` as `p99_us`); a cell of a
/// right-aligned column is a number, "-" is null.
fn table_json(cols: &[Col], rows: &[Vec<String>]) -> Value {
    let key = |h: &str| {
        let h = match h.strip_suffix("/S") {
            Some(x) => format!("{x} per s"),
            None if h.is_empty() => "note".into(),
            None => h.to_string(),
        };
        h.to_lowercase()
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join("_")
    };
    let cell = |c: &str, numeric: bool| -> Value {
        let c = c.trim();
        if c.is_empty() || c == "-" {
            return Value::Null;
        }
        if numeric {
            if let Ok(n) = c.parse::<u64>() {
                return n.into();
            }
            if let Some(f) = c.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
                return Value::Number(f);
            }
        }
        c.into()
    };
    rows.iter()
        .map(|r| {
            let o: serde_json::Map<String, Value> = cols
                .iter()
                .zip(r)
                .map(|((h, right), c)| (key(h), cell(c, *right)))
                .collect();
            Value::Object(o)
        })
        .collect()
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
