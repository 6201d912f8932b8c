//! Where every suite's results are rendered, from the typed rows the suites
//! produce: the Markdown tables printed on stdout as rows come in, and with
//! `ptmp bench --out DIR` also `DIR/SUITE.json` (headers, rows, the command
//! line, the machine) and `DIR/SUITE.svg` (a bar chart per measured column).
//!
//! A suite starts a table with [`table`], hands each row to [`row`] and
//! prints remarks with [`note`]; a row says what its cells are through
//! [`Row`]: the text printed, the number behind it, and whether the column
//! is a measurement (charted) or a parameter of the row (labelling the
//! bars). The SVG is written directly (bars and text, no fonts or plotting
//! library needed).

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One cell of a table row.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// What is printed.
    pub text: String,
    /// The number the text stands for (the first one, for a list), saved in
    /// the JSON beside the text.
    pub value: Option<f64>,
    /// A measurement, charted; otherwise a parameter that labels the bars.
    pub measure: bool,
}

impl Cell {
    /// Text that labels the row (a pattern, a transport name).
    pub fn label(text: impl ToString) -> Cell {
        Cell {
            text: text.to_string(),
            value: None,
            measure: false,
        }
    }
    /// A number that labels the row (a size, a count of readers).
    pub fn param(v: f64) -> Cell {
        Cell {
            text: v.to_string(),
            value: Some(v),
            measure: false,
        }
    }
    /// A measured number, printed as `text`.
    pub fn measure(value: f64, text: String) -> Cell {
        Cell {
            text,
            value: value.is_finite().then_some(value),
            measure: true,
        }
    }
    /// A measured count.
    pub fn count(v: u64) -> Cell {
        Cell::measure(v as f64, v.to_string())
    }
    /// A measurement with no value in this row, printed as "-".
    pub fn none() -> Cell {
        Cell {
            text: "-".into(),
            value: None,
            measure: true,
        }
    }
    /// A measurement that may be missing (NaN): "-" then.
    pub fn maybe(value: f64, text: impl FnOnce(f64) -> String) -> Cell {
        if value.is_nan() {
            Cell::none()
        } else {
            Cell::measure(value, text(value))
        }
    }
    /// Several measurements in one cell, "a, b, c" (one per reader, say);
    /// its value is the first.
    pub fn list<T: Copy + Into<f64>>(v: &[T], fmt: impl Fn(T) -> String) -> Cell {
        Cell {
            text: v.iter().map(|&x| fmt(x)).collect::<Vec<_>>().join(", "),
            value: v.first().map(|&x| x.into()).filter(|x: &f64| x.is_finite()),
            measure: true,
        }
    }
}

/// A suite's table row: its column headers and its cells.
pub trait Row {
    /// The column headers, in order.
    fn headers() -> &'static [&'static str];
    /// The cells, one per header.
    fn cells(&self) -> Vec<Cell>;
}

/// A table as recorded: headers and rows of cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<Cell>>,
}

struct Recorder {
    dir: PathBuf,
    suite: String,
    tables: Vec<Table>,
    notes: Vec<String>,
}

static REC: Mutex<Option<Recorder>> = Mutex::new(None);
static DIR: Mutex<Option<PathBuf>> = Mutex::new(None);
/// The running suite's progress line (on a terminal only): elapsed time and
/// rows done, printed around by `print`.
static BAR: Mutex<Option<(indicatif::ProgressBar, u64)>> = Mutex::new(None);

/// Print a line of output around the progress line, counting rows on it.
fn print(s: &str, is_row: bool) {
    let mut bar = BAR.lock().unwrap_or_else(|p| p.into_inner());
    match bar.as_mut() {
        Some((pb, rows)) => {
            pb.suspend(|| println!("{s}"));
            if is_row {
                *rows += 1;
                pb.set_message(format!("{rows} rows"));
            }
        }
        None => println!("{s}"),
    }
}

fn recording(f: impl FnOnce(&mut Recorder)) {
    if let Some(r) = REC.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
        f(r);
    }
}

fn markdown(cells: &[&str]) -> String {
    format!("| {} |", cells.join(" | "))
}

/// Start a table of `R` rows: print its header.
pub fn table<R: Row>() {
    let h = R::headers();
    print(&markdown(h), false);
    print(&format!("|{}", "---|".repeat(h.len())), false);
    recording(|r| {
        r.tables.push(Table {
            headers: h.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        })
    });
}

/// Print a row of the table last started (and record it when saving).
pub fn row<R: Row>(row: &R) {
    let cells = row.cells();
    let text: Vec<&str> = cells.iter().map(|c| c.text.as_str()).collect();
    print(&markdown(&text), true);
    recording(|r| {
        if let Some(t) = r.tables.last_mut() {
            t.rows.push(cells);
        }
    });
}

/// Print a remark below a table (and record its non-empty lines).
pub fn note(s: String) {
    print(&s, false);
    recording(|r| {
        r.notes.extend(
            s.lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_string),
        )
    });
}

/// A progress bar on stderr, for long runs on a terminal only.
pub use ptmp_agents::progress_bar as progress;

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
            tables: Vec::new(),
            notes: Vec::new(),
        });
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The unit a column's values are in, for the axis under its bars: the
/// unit its header ends with, else what the header counts.
fn unit(header: &str) -> &'static str {
    // "> 1 us" (jitter) counts gaps longer than 1 us: a count, not a time.
    if header.starts_with('>') {
        return "count";
    }
    const UNITS: &[&str] = &[
        "M msg/s", "msg/s", "MB/s", "kHz", "us", "ns", "ms", "MB", "%", "s",
    ];
    if let Some(u) = UNITS
        .iter()
        .find(|u| header == **u || header.ends_with(&format!(" {u}")))
    {
        return u;
    }
    if header.contains('/') {
        return "ratio";
    }
    match header.rsplit(' ').next().unwrap_or(header) {
        "lost" | "received" | "messages" | "published" | "loops" | "receivers" => "count",
        _ => "as each bar's label says",
    }
}

/// Rough width in pixels of `s` at `size` px in a sans-serif font, so the
/// chart is made wide enough for its longest label and value.
fn text_w(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.56
}

/// Horizontal bar charts, one per measurement column whose every cell has
/// a value. Bars are labelled by the row's parameters (the columns that
/// are not measurements), named in a line under each chart's title; under
/// the bars an axis with ticks at 0, half and the largest value, captioned
/// with the column's unit. The label margin and the width grow to fit the
/// longest label and value, so no text overlaps a bar or falls off.
fn svg(title: &str, tables: &[Table]) -> String {
    let (bar_h, plot) = (18.0, 460.0);
    let mut body = String::new();
    let mut y = 40.0;
    let mut width: f64 = 900.0;
    // One label margin for the whole file, so the charts line up.
    let mut left: f64 = 120.0;
    let mut charts = Vec::new();
    for t in tables {
        let numeric: Vec<usize> = (0..t.headers.len())
            .filter(|&c| {
                !t.rows.is_empty()
                    && t.rows
                        .iter()
                        .all(|r| r.get(c).is_some_and(|x| x.measure && x.value.is_some()))
            })
            .collect();
        // Measurements left out of the charts (a "-" in some row) do not
        // label bars either: only the row's parameters do.
        let label_cols: Vec<usize> = (0..t.headers.len())
            .filter(|&c| t.rows.iter().all(|r| r.get(c).is_none_or(|x| !x.measure)))
            .collect();
        let labels: Vec<String> = t
            .rows
            .iter()
            .map(|r| {
                label_cols
                    .iter()
                    .filter_map(|&k| r.get(k).map(|x| x.text.as_str()))
                    .collect::<Vec<_>>()
                    .join(" / ")
            })
            .collect();
        for l in &labels {
            left = left.max(16.0 + text_w(l, 11.0));
        }
        charts.push((t, numeric, label_cols, labels));
    }
    for (t, numeric, label_cols, labels) in &charts {
        let legend: Vec<&str> = label_cols.iter().map(|&k| t.headers[k].as_str()).collect();
        for &c in numeric {
            let vals: Vec<f64> = t.rows.iter().map(|r| r[c].value.unwrap_or(0.0)).collect();
            let max = vals.iter().cloned().fold(0.0f64, f64::max).max(1e-12);
            let u = unit(&t.headers[c]);
            body += &format!(
                "<text x=\"10\" y=\"{y}\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
                esc(&t.headers[c])
            );
            if !legend.is_empty() {
                y += 16.0;
                body += &format!(
                    "<text x=\"10\" y=\"{y}\" font-size=\"11\" fill=\"#555\">bars: {}</text>\n",
                    esc(&legend.join(" / "))
                );
            }
            y += 8.0;
            for ((r, v), label) in t.rows.iter().zip(&vals).zip(labels) {
                let len = plot * (v / max).max(0.0);
                body += &format!(
                    "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>\
                     <rect x=\"{left}\" y=\"{}\" width=\"{len:.1}\" height=\"{}\" fill=\"#4a7ab5\"/>\
                     <text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>\n",
                    left - 6.0,
                    y + bar_h - 5.0,
                    esc(label),
                    y + 2.0,
                    bar_h - 4.0,
                    left + len + 4.0,
                    y + bar_h - 5.0,
                    esc(&r[c].text),
                );
                width = width.max(left + len + 14.0 + text_w(&r[c].text, 11.0));
                y += bar_h;
            }
            // The axis: 0, half and the largest value, and the unit.
            let ay = y + 4.0;
            body += &format!(
                "<line x1=\"{left}\" y1=\"{ay}\" x2=\"{}\" y2=\"{ay}\" stroke=\"#888\"/>\n",
                left + plot
            );
            for f in [0.0, 0.5, 1.0] {
                let x = left + plot * f;
                body += &format!(
                    "<line x1=\"{x}\" y1=\"{ay}\" x2=\"{x}\" y2=\"{}\" stroke=\"#888\"/>\
                     <text x=\"{x}\" y=\"{}\" font-size=\"10\" fill=\"#555\" text-anchor=\"middle\">{}</text>\n",
                    ay + 4.0,
                    ay + 15.0,
                    tick(max * f)
                );
            }
            body += &format!(
                "<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#555\" text-anchor=\"middle\">{}</text>\n",
                left + plot / 2.0,
                ay + 29.0,
                esc(&format!("{} ({u})", t.headers[c]))
            );
            y = ay + 29.0 + 26.0;
        }
    }
    width = width.max(left + plot + 40.0);
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{}\" font-family=\"sans-serif\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"10\" y=\"22\" font-size=\"16\" font-weight=\"bold\">{}</text>\n{body}</svg>\n",
        y + 10.0,
        esc(title)
    )
}

/// A tick value, short: 3 significant digits, k/M for large numbers.
fn tick(v: f64) -> String {
    let (v, sfx) = if v >= 1e6 {
        (v / 1e6, "M")
    } else if v >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let s = if v == 0.0 || v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    format!("{s}{sfx}")
}

/// The tables as JSON: a cell with a value is `{"text", "value"}`, one
/// without is its text.
fn tables_json(tables: &[Table]) -> Value {
    Value::Array(
        tables
            .iter()
            .map(|t| {
                let rows: Vec<Value> = t
                    .rows
                    .iter()
                    .map(|row| {
                        let mut o = serde_json::Map::new();
                        for (h, c) in t.headers.iter().zip(row) {
                            o.insert(
                                h.clone(),
                                c.value
                                    .map_or(json!(c.text), |v| json!({"text": c.text, "value": v})),
                            );
                        }
                        Value::Object(o)
                    })
                    .collect();
                json!({"headers": t.headers, "rows": rows})
            })
            .collect(),
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
    let args: Vec<String> = std::env::args().collect();
    let j = json!({
        "suite": r.suite,
        "command": args.join(" "),
        "when_unix_s": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        "machine": machine(),
        "tables": tables_json(&r.tables),
        "notes": r.notes,
    });
    let jp = r.dir.join(format!("{}.json", r.suite));
    let sp = r.dir.join(format!("{}.svg", r.suite));
    std::fs::write(&jp, serde_json::to_string_pretty(&j).unwrap_or_default())?;
    std::fs::write(&sp, svg(&format!("ptmp bench {}", r.suite), &r.tables))?;
    Ok(Some((jp, sp)))
}

/// The median of `v` (the mean of the middle two for an even count; 0 for
/// none).
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct T(&'static str, f64, Option<u64>);

    impl Row for T {
        fn headers() -> &'static [&'static str] {
            &["a", "b kHz", "c"]
        }
        fn cells(&self) -> Vec<Cell> {
            vec![
                Cell::label(self.0),
                Cell::measure(self.1, format!("{:.0}", self.1)),
                self.2.map_or(Cell::none(), Cell::count),
            ]
        }
    }

    fn recorded() -> Table {
        let rows = [T("x", 1234.0, None), T("y", 0.5, Some(7))];
        Table {
            headers: T::headers().iter().map(|s| s.to_string()).collect(),
            rows: rows.iter().map(Row::cells).collect(),
        }
    }

    #[test]
    fn json_keeps_text_and_value() {
        let j = tables_json(&[recorded()]);
        assert_eq!(j[0]["headers"][1], "b kHz");
        assert_eq!(j[0]["rows"][0]["a"], "x");
        assert_eq!(j[0]["rows"][0]["b kHz"]["value"], 1234.0);
        assert_eq!(j[0]["rows"][0]["c"], "-");
        assert_eq!(j[0]["rows"][1]["c"]["value"], 7.0);
    }

    #[test]
    fn svg_charts_measured_columns_with_every_value() {
        let s = svg("t", &[recorded()]);
        assert!(
            s.starts_with("<svg") && s.contains(">b kHz<") && s.contains(">x<"),
            "{s}"
        );
        // Column c has no value in every row, and "a" is not a
        // measurement: no chart for them.
        assert!(!s.contains(">c<") && !s.contains(">a<"));
        // Bars are labelled by the parameters only (not by c's "-"),
        // named under the title; the axis says the unit.
        assert!(!s.contains("x / -") && s.contains(">bars: a<"), "{s}");
        assert!(s.contains(">b kHz (kHz)<") && s.contains(">1234<"), "{s}");
    }

    #[test]
    fn units_come_from_the_headers() {
        for (h, u) in [
            ("p99 us", "us"),
            ("writer M msg/s", "M msg/s"),
            ("msg/s", "msg/s"),
            ("per-reader lost %", "%"),
            ("reader elapsed s", "s"),
            ("> 1 us", "count"),
            ("lost", "count"),
            ("ptmp/raw", "ratio"),
        ] {
            assert_eq!(unit(h), u, "{h}");
        }
        assert_eq!(tick(1_234_567.0), "1.23M");
        assert_eq!(tick(0.0), "0");
    }

    #[test]
    fn lists_take_their_first_value() {
        let c = Cell::list(&[0.5f64, 2.0], |x| format!("{x:.2}"));
        assert_eq!((c.text.as_str(), c.value), ("0.50, 2.00", Some(0.5)));
    }
}
