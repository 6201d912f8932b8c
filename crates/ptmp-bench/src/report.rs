//! `ptmp bench --out DIR`: every suite's Markdown tables also saved as
//! `DIR/SUITE.json` (headers, rows, the command line, the machine) and
//! `DIR/SUITE.svg` (a bar chart per numeric column).
//!
//! Suites print through [`out!`]; the recorder keeps those lines while a
//! suite runs and parses the Markdown tables from them, so what is saved is
//! exactly what was printed. The SVG is written directly (bars and text, no
//! fonts or plotting library needed).

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

struct Recorder {
    dir: PathBuf,
    suite: String,
    lines: Vec<String>,
}

static REC: Mutex<Option<Recorder>> = Mutex::new(None);
static DIR: Mutex<Option<PathBuf>> = Mutex::new(None);
/// The running suite's progress line (on a terminal only): elapsed time and
/// rows done, printed around by `line`.
static BAR: Mutex<Option<(indicatif::ProgressBar, u64)>> = Mutex::new(None);

/// Print a line of bench output (and record it when saving).
pub fn line(s: String) {
    let mut bar = BAR.lock().unwrap_or_else(|p| p.into_inner());
    match bar.as_mut() {
        Some((pb, rows)) => {
            pb.suspend(|| println!("{s}"));
            if s.starts_with("| ") && !s.starts_with("| -") {
                *rows += 1;
                pb.set_message(format!("{} rows", rows.saturating_sub(1)));
            }
        }
        None => println!("{s}"),
    }
    drop(bar);
    let mut r = REC.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(r) = r.as_mut() {
        r.lines.extend(s.lines().map(str::to_string));
    }
}

/// A progress bar on stderr, drawn only when stderr is a terminal and the
/// run is long enough to want one.
pub fn progress(len: u64, what: &str) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if len < 100_000 || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new(len);
    pb.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{what} {{bar:40}} {{pos}}/{{len}} {{per_sec}} eta {{eta}}"
        ))
        .expect("valid template"),
    );
    pb
}

/// Show a progress line for a suite that has no bar of its own.
pub fn spinner(suite: &str) {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return;
    }
    let pb = indicatif::ProgressBar::new_spinner();
    pb.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {prefix} {elapsed} {msg}")
            .expect("valid template"),
    );
    pb.set_prefix(format!("bench {suite}"));
    pb.enable_steady_tick(std::time::Duration::from_millis(120));
    *BAR.lock().unwrap_or_else(|p| p.into_inner()) = Some((pb, 0));
}

fn spinner_done() {
    if let Some((pb, _)) = BAR.lock().unwrap_or_else(|p| p.into_inner()).take() {
        pb.finish_and_clear();
    }
}

/// `println!` for bench output.
macro_rules! out {
    ($($t:tt)*) => { $crate::report::line(format!($($t)*)) };
}
pub(crate) use out;

/// Ask for files in `dir` (created if missing).
pub fn set_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    *DIR.lock().unwrap_or_else(|p| p.into_inner()) = Some(dir.to_path_buf());
    Ok(())
}

/// Start recording a suite (a no-op without `--out`).
pub fn begin(suite: &str) {
    let dir = DIR.lock().unwrap_or_else(|p| p.into_inner()).clone();
    if let Some(dir) = dir {
        *REC.lock().unwrap_or_else(|p| p.into_inner()) = Some(Recorder {
            dir,
            suite: suite.to_string(),
            lines: Vec::new(),
        });
    }
}

/// A Markdown table.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

fn cells(l: &str) -> Vec<String> {
    let t = l.trim().trim_start_matches('|').trim_end_matches('|');
    t.split('|').map(|c| c.trim().to_string()).collect()
}

/// The tables in Markdown text: a header row, a `|---|` row, data rows.
pub fn tables(lines: &[String]) -> Vec<Table> {
    let mut out: Vec<Table> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let is_row = |l: &str| l.trim_start().starts_with('|');
        let is_sep = |l: &str| is_row(l) && l.chars().all(|c| "|-: ".contains(c));
        if is_row(&lines[i]) && i + 1 < lines.len() && is_sep(&lines[i + 1]) {
            let mut t = Table {
                headers: cells(&lines[i]),
                rows: Vec::new(),
            };
            i += 2;
            while i < lines.len() && is_row(&lines[i]) && !is_sep(&lines[i]) {
                t.rows.push(cells(&lines[i]));
                i += 1;
            }
            out.push(t);
        } else {
            i += 1;
        }
    }
    out
}

/// The leading number of a cell ("1,526,974 (runs ...)" -> 1526974,
/// "0.51 / 2.56" -> 0.51); None for "-" or text.
pub fn number(cell: &str) -> Option<f64> {
    let s: String = cell
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',' || *c == '-' || *c == 'e')
        .filter(|c| *c != ',')
        .collect();
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Whether a column holds a measurement (charted) rather than a parameter
/// of the row (ntps, receivers, size), which labels the bars instead.
fn is_measurement(header: &str) -> bool {
    let h = format!(" {} ", header.to_lowercase());
    [
        "/s", "%", " mb", " us", " ns", "khz", "lost", " s ", " ms", "value", "received", "rate",
    ]
    .iter()
    .any(|k| h.contains(k))
}

/// Horizontal bar charts, one per measurement column whose every cell is a
/// number; bars are labelled by the row's other columns.
pub fn svg(title: &str, tables: &[Table]) -> String {
    let (w, bar_h, left, right) = (900.0, 18.0, 330.0, 110.0);
    let mut body = String::new();
    let mut y = 40.0;
    for t in tables {
        let numeric: Vec<usize> = (0..t.headers.len())
            .filter(|&c| {
                is_measurement(&t.headers[c])
                    && !t.rows.is_empty()
                    && t.rows
                        .iter()
                        .all(|r| r.get(c).and_then(|x| number(x)).is_some())
            })
            .collect();
        let label_cols: Vec<usize> = (0..t.headers.len())
            .filter(|c| !numeric.contains(c))
            .collect();
        for &c in &numeric {
            let vals: Vec<f64> = t
                .rows
                .iter()
                .map(|r| number(&r[c]).unwrap_or(0.0))
                .collect();
            let max = vals.iter().cloned().fold(0.0f64, f64::max).max(1e-12);
            body += &format!(
                "<text x=\"10\" y=\"{y}\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
                esc(&t.headers[c])
            );
            y += 8.0;
            for (r, v) in t.rows.iter().zip(&vals) {
                let label: Vec<&str> = label_cols
                    .iter()
                    .filter_map(|&k| r.get(k).map(String::as_str))
                    .collect();
                let len = (w - left - right) * (v / max).max(0.0);
                body += &format!(
                    "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>\
                     <rect x=\"{left}\" y=\"{}\" width=\"{len:.1}\" height=\"{}\" fill=\"#4a7ab5\"/>\
                     <text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>\n",
                    left - 6.0,
                    y + bar_h - 5.0,
                    esc(&label.join(" / ")),
                    y + 2.0,
                    bar_h - 4.0,
                    left + len + 4.0,
                    y + bar_h - 5.0,
                    esc(&r[c]),
                );
                y += bar_h;
            }
            y += 22.0;
        }
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{}\" font-family=\"sans-serif\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"10\" y=\"22\" font-size=\"16\" font-weight=\"bold\">{}</text>\n{body}</svg>\n",
        y + 10.0,
        esc(title)
    )
}

fn machine() -> Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    json!({
        "cpu": cpu,
        "cpus": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "kernel": kernel.trim(),
    })
}

/// Stop recording and write the suite's files.
pub fn end() -> std::io::Result<Option<(PathBuf, PathBuf)>> {
    spinner_done();
    let Some(r) = REC.lock().unwrap_or_else(|p| p.into_inner()).take() else {
        return Ok(None);
    };
    let tabs = tables(&r.lines);
    let args: Vec<String> = std::env::args().collect();
    let j = json!({
        "suite": r.suite,
        "command": args.join(" "),
        "when_unix_s": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        "machine": machine(),
        "tables": tabs.iter().map(|t| {
            let rows: Vec<Value> = t.rows.iter().map(|row| {
                let mut o = serde_json::Map::new();
                for (h, c) in t.headers.iter().zip(row) {
                    // Cells keep their printed text; a leading number is
                    // also given as a value.
                    o.insert(h.clone(), number(c).map_or(json!(c), |n| json!({"text": c, "value": n})));
                }
                Value::Object(o)
            }).collect();
            json!({"headers": t.headers, "rows": rows})
        }).collect::<Vec<_>>(),
        "notes": r.lines.iter().filter(|l| !l.trim_start().starts_with('|') && !l.trim().is_empty()).collect::<Vec<_>>(),
    });
    let jp = r.dir.join(format!("{}.json", r.suite));
    let sp = r.dir.join(format!("{}.svg", r.suite));
    std::fs::write(&jp, serde_json::to_string_pretty(&j).unwrap_or_default())?;
    std::fs::write(&sp, svg(&format!("ptmp bench {}", r.suite), &tabs))?;
    Ok(Some((jp, sp)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_and_numbers_are_parsed_from_markdown() {
        let text = "intro\n| a | b kHz | c |\n|---|---|---|\n| x | 1,234 | - |\n| y | 0.5 / 2 | 7 (runs 1, 2) |\n\nnote\n| p | q |\n|---|---|\n| z | 3 |";
        let lines: Vec<String> = text.lines().map(String::from).collect();
        let t = tables(&lines);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].headers, vec!["a", "b kHz", "c"]);
        assert_eq!(t[0].rows[1], vec!["y", "0.5 / 2", "7 (runs 1, 2)"]);
        assert_eq!(number("1,234"), Some(1234.0));
        assert_eq!(number("0.5 / 2"), Some(0.5));
        assert_eq!(number("-"), None);
        assert_eq!(number("inproc"), None);
        let s = svg("t", &t);
        assert!(
            s.starts_with("<svg") && s.contains(">b kHz<") && s.contains(">x / -<"),
            "{s}"
        );
        // Column c is not numeric in every row, and "a" is not a
        // measurement: no chart for them.
        assert!(!s.contains(">c<") && !s.contains(">a<"));
    }
}
