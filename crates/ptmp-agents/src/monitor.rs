//! `monitor` (PTMP's TPMonitorz): taps that forward each message from their
//! input to their output unchanged and record one row per message.
//!
//! Keys: `filename` (required, the rows file, truncated at start), `taps`:
//! each `{id, input, output, name?}` (none, as PTMP allows, is run with a
//! warning: the file gets only its header); `attach` ("pushpull", the
//! default, or "pubsub"; any other value is refused, as PTMP's monitor
//! refuses it). PTMP uses `attach` for the inproc capture sockets between
//! each tap and the monitor (with "pubsub" the monitor can lose rows when it
//! falls behind); here every tap writes its rows itself, so both values
//! record every message.
//!
//! The file starts with PTMP's header line, [`HEADER`], so readers that
//! take columns by name (PTMP's plotting reads the file as space separated
//! CSV) work unchanged. Row (space separated, one line per message, as
//! PTMP's):
//! `tapid now nrecv nrecvtot count detid created tstart tspan ntps`, where
//! `now` is the receive time in microseconds since the Unix epoch, `nrecv`
//! counts this tap's messages from 1 and `nrecvtot` all taps'. Numbers are
//! printed unsigned (PTMP printed some with `%d`, so large ones went
//! negative). A message that is not a TPSet is forwarded and counted
//! (`not_tpsets`) but has no row.

use crate::cfg::Cfg;
use crate::error::{Error, Result};
use crate::{Agent, Ctl, Report};
use ptmp::{Frames, Receiver, Sender, SocketConfig, TPSet};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The first line of the rows file: the column names, space separated, as
/// PTMP's monitor writes them.
pub(crate) const HEADER: &str = "tapid now nrecv nrecvtot count detid created tstart tspan ntps\n";

#[derive(Debug, Clone)]
/// One tap: a pass-through whose messages are recorded.
pub struct TapConfig {
    /// The tap's id, the first column of its rows.
    pub id: i64,
    /// Socket the tap reads.
    pub input: SocketConfig,
    /// Socket the tap forwards to.
    pub output: SocketConfig,
}

#[derive(Debug, Clone)]
/// A validated monitor configuration (keys in the module docs).
pub struct Config {
    /// The rows file, truncated at start.
    pub filename: PathBuf,
    /// The taps (none: only the header line is written, as PTMP's).
    pub taps: Vec<TapConfig>,
    /// Accepted values that likely are not what was meant.
    pub warnings: Vec<String>,
}

impl Config {
    /// Validate the keys of a monitor's `data`.
    pub fn parse(c: &Cfg) -> Result<Config> {
        let filename = PathBuf::from(c.req_str("filename")?);
        let mut warnings = Vec::new();
        // PTMP throws on any other value ("unknown attachement type").
        c.choice("attach", "pushpull", &["pushpull", "pubsub"])?;
        let empty = Vec::new();
        let list = c.array_opt("taps")?.unwrap_or(&empty);
        if list.is_empty() {
            warnings.push("no taps: the rows file gets only its header line".into());
        }
        let mut taps = Vec::new();
        for (i, t) in list.iter().enumerate() {
            let tc = Cfg::new(format!("{} taps[{i}]", c.agent), t)?;
            let id = tc.int_or("id", i as i64, i64::MIN, i64::MAX)?;
            let _ = tc.str_opt("name")?;
            let _ = tc.get("layer");
            taps.push(TapConfig {
                id,
                input: tc.req_socket("input")?,
                output: tc.req_socket("output")?,
            });
        }
        Ok(Config {
            filename,
            taps,
            warnings,
        })
    }
}

struct Tap {
    id: i64,
    rx: Receiver,
    tx: Sender,
}

/// The monitor's taps and their rows file.
pub(crate) struct MonitorAgent {
    name: String,
    file: BufWriter<File>,
    path: PathBuf,
    taps: Vec<Tap>,
}

impl MonitorAgent {
    /// Open the rows file and every tap's sockets.
    pub(crate) fn new(name: String, c: &Config) -> Result<Self> {
        let mut taps = Vec::new();
        for t in &c.taps {
            taps.push(Tap {
                id: t.id,
                rx: crate::io::open_rx(&name, &t.input)?,
                tx: crate::io::open_tx(&name, &t.output)?,
            });
        }
        let f = File::create(&c.filename)
            .map_err(Error::io(&name, format!("create {}", c.filename.display())))?;
        let mut file = BufWriter::new(f);
        file.write_all(HEADER.as_bytes())
            .map_err(Error::io(&name, format!("write {}", c.filename.display())))?;
        Ok(MonitorAgent {
            name,
            file,
            path: c.filename.clone(),
            taps,
        })
    }
}

/// Format one row into `line` (cleared first).
pub(crate) fn format_row(
    line: &mut String,
    tapid: i64,
    now: i64,
    nrecv: u64,
    nrecvtot: u64,
    s: &TPSet,
) {
    use std::fmt::Write as _;
    line.clear();
    let _ = writeln!(
        line,
        "{tapid} {now} {nrecv} {nrecvtot} {} {} {} {} {} {}",
        s.count,
        s.detid,
        s.created,
        s.tstart,
        s.tspan(),
        s.tps.len()
    );
}

impl Agent for MonitorAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&mut self, ctl: &Ctl) -> Result<Report> {
        let total = AtomicU64::new(0);
        let not_tpsets = AtomicU64::new(0);
        let unsent = AtomicU64::new(0);
        let file = Mutex::new(&mut self.file);
        let name = self.name.as_str();
        let results: Vec<Result<u64>> = std::thread::scope(|sc| {
            let hs: Vec<_> = self
                .taps
                .iter_mut()
                .map(|tap| {
                    let (total, not_tpsets, file, unsent) = (&total, &not_tpsets, &file, &unsent);
                    sc.spawn(move || -> Result<u64> {
                        let mut frames = Frames::new();
                        let mut set = TPSet::default();
                        let mut line = String::new();
                        let mut n = 0u64;
                        while !ctl.done(false) {
                            match crate::recv_frames(&mut tap.rx, &mut frames, ctl, name)? {
                                crate::Got::Set => {}
                                crate::Got::Nothing => {
                                    // Rows reach the file when the stream
                                    // pauses, not only when the buffer fills.
                                    file.lock()
                                        .unwrap_or_else(|p| p.into_inner())
                                        .flush()
                                        .map_err(Error::io(name, "write rows"))?;
                                    continue;
                                }
                                crate::Got::Done => break,
                            }
                            let now = ptmp_data::now_us();
                            if !crate::send_frames(&mut tap.tx, &frames, ctl, name)? {
                                unsent.fetch_add(1, Ordering::Relaxed);
                            }
                            n += 1;
                            let tot = total.fetch_add(1, Ordering::Relaxed) + 1;
                            let ok = frames.len() == 2
                                && frames
                                    .get(0)
                                    .is_some_and(|v| ptmp_data::wire::check_version(v).is_ok())
                                && ptmp_data::decode_tpset_into(
                                    frames.get(1).unwrap_or(&[]),
                                    &mut set,
                                )
                                .is_ok();
                            if !ok {
                                not_tpsets.fetch_add(1, Ordering::Relaxed);
                                continue;
                            }
                            format_row(&mut line, tap.id, now, n, tot, &set);
                            let mut f = file.lock().unwrap_or_else(|p| p.into_inner());
                            f.write_all(line.as_bytes())
                                .map_err(Error::io(name, "write rows"))?;
                        }
                        Ok(n)
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::run(name, "a tap thread panicked")))
                })
                .collect()
        });
        self.file.flush().map_err(Error::io(
            &self.name,
            format!("flush {}", self.path.display()),
        ))?;
        let mut r = Report::new(&self.name, "monitor");
        for (tap, res) in self.taps.iter().zip(results) {
            r.counters.push((format!("tap{}", tap.id), res?));
        }
        Ok(r.count("total", total.into_inner())
            .count("not_tpsets", not_tpsets.into_inner())
            .count("unsent_at_stop", unsent.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What PTMP runs is accepted: no taps (warned), `attach` pushpull or
    /// pubsub; another `attach` is refused, as PTMP's monitor throws.
    #[test]
    fn no_taps_run_with_a_warning_and_unknown_attach_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("rows.txt");
        let v = json!({"filename": f.display().to_string(), "attach": "push-pull"});
        let e = Config::parse(&Cfg::new("mon", &v).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("attach") && e.contains("push-pull"), "{e}");
        let v = json!({"filename": f.display().to_string(), "attach": "pubsub"});
        let c = Config::parse(&Cfg::new("mon", &v).unwrap()).unwrap();
        assert!(c.taps.is_empty());
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        let mut a = MonitorAgent::new("mon".into(), &c).unwrap();
        a.run(&Ctl::default()).unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), HEADER);
    }
}
