//! `czmqat` (PTMP's TPCat): a schema-blind copier between a socket or a dump
//! file and a socket and/or a dump file.
//!
//! Keys: `input` (socket) or `ifile` (dump file to read), one of the two;
//! `output` (socket) and/or `ofile` (dump file to write; started anew,
//! unless `append` is true, as for the sink), or neither: as
//! PTMP's, a czmqat with no destination reads and counts (a sink that
//! counts what arrives, or a reader that checks a dump file to its end);
//! `number` messages to copy (0 or less, the default -1: all); `delayus`
//! microseconds to wait before each message sent (pacing a file replay). Messages are copied
//! frame for frame, not parsed, so any message (not only TPSets) passes. The
//! agent ends by itself when `number` is reached or `ifile` is read to its
//! end; the dump file is flushed then and on stop.

use crate::cfg::Cfg;
use crate::error::{Error, Result};
use crate::{Agent, Ctl, Report, POLL};
use ptmp::{Receiver, Sender, SocketConfig};
use ptmp_formats::{Reader, Record, Writer};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
/// A validated czmqat configuration (keys in the module docs).
pub struct Config {
    /// Socket to read from; `None` when reading `ifile`.
    pub input: Option<SocketConfig>,
    /// Dump file to read from; `None` when reading `input`.
    pub ifile: Option<PathBuf>,
    /// Socket to copy to, if any.
    pub output: Option<SocketConfig>,
    /// Dump file to copy to, if any.
    pub ofile: Option<PathBuf>,
    /// Write after the records `ofile` holds instead of starting it anew.
    pub append: bool,
    /// Messages to copy; `None` for all.
    pub number: Option<u64>,
    /// Microseconds to wait before each message sent.
    pub delayus: u64,
}

impl Config {
    /// Validate the keys of a czmqat's `data`.
    pub fn parse(c: &Cfg) -> Result<Config> {
        let input = c.socket_opt("input")?;
        let output = c.socket_opt("output")?;
        let ifile = c.file_opt("ifile")?;
        let ofile = c.file_opt("ofile")?;
        match (&input, &ifile) {
            (Some(_), Some(f)) => {
                return Err(c.err(
                    "ifile",
                    format!("{:?}", f.display().to_string()),
                    "give input or ifile, not both",
                ))
            }
            (None, None) => {
                return Err(c.err(
                    "input",
                    "(missing)",
                    "czmqat needs an input socket or an ifile",
                ))
            }
            _ => {}
        }
        if let Some(f) = &ifile {
            if !f.is_file() {
                return Err(c.err(
                    "ifile",
                    format!("{:?}", f.display().to_string()),
                    "no such file",
                ));
            }
        }
        // As in PTMP: number <= 0 copies everything, delayus <= 0 waits not.
        let number = c.int_or("number", -1, i64::MIN, i64::MAX)?;
        let delayus = c.int_or("delayus", 0, i64::MIN, MAX_DELAYUS)?.max(0) as u64;
        Ok(Config {
            input,
            ifile,
            output,
            ofile,
            append: c.bool_or("append", false)?,
            number: (number > 0).then_some(number as u64),
            delayus,
        })
    }
}

/// Longest accepted `delayus`: one day.
pub(crate) const MAX_DELAYUS: i64 = 86_400_000_000;

enum Source {
    Sock(Box<Receiver>),
    File(Box<dyn Reader>),
}

/// The copier between its source and its destinations.
pub(crate) struct CatAgent {
    name: String,
    src: Source,
    tx: Option<Sender>,
    out: Option<Box<dyn Writer>>,
    number: Option<u64>,
    delay: Duration,
    /// What opening the dump file found, for the report.
    notes: Vec<String>,
}

impl CatAgent {
    /// Open the sockets and files `c` names.
    pub(crate) fn new(name: String, c: &Config) -> Result<Self> {
        let src = match (&c.input, &c.ifile) {
            (Some(s), _) => Source::Sock(Box::new(crate::io::open_rx(&name, s)?)),
            (None, Some(f)) => {
                Source::File(ptmp_formats::open(f, None).map_err(Error::file(&name, "ifile"))?)
            }
            (None, None) => unreachable!("validated"),
        };
        let tx = match &c.output {
            Some(s) => Some(crate::io::open_tx(&name, s)?),
            None => None,
        };
        let mut notes = Vec::new();
        let out = match &c.ofile {
            Some(f) => {
                let (w, _, lines) = crate::ofile::open(&name, f, c.append, None)?;
                notes = lines;
                Some(w)
            }
            None => None,
        };
        Ok(CatAgent {
            name,
            src,
            tx,
            out,
            number: c.number,
            delay: Duration::from_micros(c.delayus),
            notes,
        })
    }
}

impl Agent for CatAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&mut self, ctl: &Ctl) -> Result<Report> {
        let mut rec = Record::default();
        let mut n = 0u64;
        let mut next = Instant::now();
        let mut file_done = false;
        let mut unsent = 0u64;
        let res: Result<()> = (|| {
            while !ctl.done(false) && self.number.is_none_or(|m| n < m) {
                let got = match &mut self.src {
                    Source::Sock(rx) => {
                        match crate::recv_frames(rx, &mut rec.frames, ctl, &self.name)? {
                            crate::Got::Set => true,
                            crate::Got::Nothing => false,
                            crate::Got::Done => break,
                        }
                    }
                    Source::File(_) if ctl.stopped() => break,
                    Source::File(r) => {
                        let g = r
                            .read_into(&mut rec)
                            .map_err(Error::file(&self.name, "ifile"))?;
                        if !g {
                            file_done = true;
                            break;
                        }
                        ctl.took_in(None);
                        g
                    }
                };
                if !got {
                    continue;
                }
                if !self.delay.is_zero() {
                    // Sleep in slices so a stop is noticed; once stopping,
                    // what was read is written at once.
                    next = next.checked_add(self.delay).unwrap_or(next);
                    loop {
                        let now = Instant::now();
                        if next <= now {
                            next = now;
                            break;
                        }
                        if ctl.stopped() {
                            break;
                        }
                        std::thread::sleep((next - now).min(POLL));
                    }
                }
                if let Some(w) = &mut self.out {
                    w.write(&rec.channel, rec.log_time_ns, &rec.frames)
                        .map_err(Error::file(&self.name, "ofile"))?;
                }
                if let Some(tx) = &mut self.tx {
                    if !crate::send_frames(tx, &rec.frames, ctl, &self.name)? {
                        unsent += 1;
                    }
                }
                n += 1;
            }
            Ok(())
        })();
        // Flush what was accepted even when the loop failed.
        if let Some(w) = &mut self.out {
            w.flush().map_err(Error::file(&self.name, "ofile"))?;
        }
        res?;
        let mut r = Report::new(&self.name, "czmqat")
            .count("copied", n)
            .count("unsent_at_stop", unsent);
        r.lines.append(&mut self.notes);
        if file_done {
            r.lines.push("input file read to its end".into());
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptmp::Frames;
    use ptmp_formats::dump::{DumpReader, DumpWriter};
    use serde_json::json;
    use std::fs::File;
    use std::io::BufReader;

    fn parse(v: &serde_json::Value) -> std::result::Result<Config, String> {
        let c = Cfg::new("cat", v).unwrap();
        Config::parse(&c).map_err(|e| e.to_string())
    }

    /// Like PTMP's: no output and no ofile reads and counts, sending
    /// nowhere.
    #[test]
    fn a_reader_with_no_destination_counts() {
        let d = tempfile::tempdir().unwrap();
        let ifile = d.path().join("i.dump");
        let mut w = DumpWriter::new(File::create(&ifile).unwrap());
        for i in 0..5u8 {
            w.write([&[0u8, 0, 0, 0][..], &[i][..]]).unwrap();
        }
        w.flush().unwrap();
        let c = parse(&json!({"ifile": ifile.display().to_string()})).unwrap();
        assert!(c.output.is_none() && c.ofile.is_none());
        let mut a = CatAgent::new("cat".into(), &c).unwrap();
        let r = a.run(&Ctl::default()).unwrap();
        assert_eq!(r.get("copied"), Some(5));
        let inp = json!({"socket": {"type": "PULL", "bind": "inproc://cat-sink-only"}});
        parse(&json!({"input": inp})).unwrap();
    }

    #[test]
    fn delays_over_a_day_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let ofile = d.path().join("o.dump").display().to_string();
        let inp = json!({"socket": {"type": "PULL", "bind": "inproc://cat-x"}});
        for bad in [MAX_DELAYUS + 1, i64::MAX] {
            let e = parse(&json!({"input": inp, "ofile": ofile, "delayus": bad})).unwrap_err();
            assert!(
                e.starts_with(&format!("agent cat: delayus = {bad}: must be in")),
                "{e}"
            );
        }
        for ok in [i64::MIN, -1, 0, MAX_DELAYUS] {
            parse(&json!({"input": inp, "ofile": ofile, "delayus": ok})).unwrap();
        }
    }

    /// A day's delay per message ends at stop: what was read is written.
    #[test]
    fn a_long_delay_ends_at_stop() {
        let d = tempfile::tempdir().unwrap();
        let ifile = d.path().join("i.dump");
        let mut w = DumpWriter::new(File::create(&ifile).unwrap());
        for i in 0..3u8 {
            w.write([&[i][..]]).unwrap();
        }
        w.flush().unwrap();
        let ofile = d.path().join("o.dump");
        let c = parse(&json!({"ifile": ifile.display().to_string(),
            "ofile": ofile.display().to_string(), "delayus": MAX_DELAYUS}))
        .unwrap();
        let mut a = CatAgent::new("cat".into(), &c).unwrap();
        let ctl = Ctl::default();
        let c2 = ctl.clone();
        let t0 = Instant::now();
        let h = std::thread::spawn(move || a.run(&c2).unwrap());
        std::thread::sleep(Duration::from_millis(300));
        ctl.stop();
        let r = h.join().unwrap();
        assert!(t0.elapsed() < Duration::from_secs(20));
        assert_eq!(r.get("copied"), Some(1));
        let mut rd = DumpReader::new(BufReader::new(File::open(&ofile).unwrap()));
        let mut f = Frames::new();
        assert!(rd.read_into(&mut f).unwrap());
        assert_eq!(f.get(0), Some(&[0u8][..]));
    }
}
