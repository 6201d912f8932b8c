//! `czmqat` (PTMP's TPCat): a schema-blind copier between a socket or a dump
//! file and a socket and/or a dump file.
//!
//! Keys: `input` (socket) or `ifile` (dump file to read), one of the two;
//! `output` (socket) and/or `ofile` (dump file to write), at least one;
//! `number` messages to copy (0 or less, the default -1: all); `delayus`
//! microseconds to wait before each message sent (pacing a file replay). Messages are copied
//! frame for frame, not parsed, so any message (not only TPSets) passes. The
//! agent ends by itself when `number` is reached or `ifile` is read to its
//! end; the dump file is flushed then and on stop.

use crate::cfg::Cfg;
use crate::error::{Error, Result};
use crate::{Agent, Ctl, Report};
use ptmp::{Frames, Receiver, Sender, SocketConfig};
use ptmp_data::dump::{DumpReader, DumpWriter};
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct Config {
    pub input: Option<SocketConfig>,
    pub ifile: Option<PathBuf>,
    pub output: Option<SocketConfig>,
    pub ofile: Option<PathBuf>,
    /// Messages to copy; `None` for all.
    pub number: Option<u64>,
    pub delayus: u64,
}

impl Config {
    pub fn parse(c: &Cfg) -> Result<Config> {
        let input = c.socket_opt("input")?;
        let output = c.socket_opt("output")?;
        let ifile = c
            .str_opt("ifile")?
            .filter(|s| !s.is_empty())
            .map(PathBuf::from);
        let ofile = c
            .str_opt("ofile")?
            .filter(|s| !s.is_empty())
            .map(PathBuf::from);
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
        if output.is_none() && ofile.is_none() {
            return Err(c.err(
                "output",
                "(missing)",
                "czmqat needs an output socket and/or an ofile",
            ));
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
        let delayus = c.int_or("delayus", 0, i64::MIN, i64::MAX)?.max(0) as u64;
        Ok(Config {
            input,
            ifile,
            output,
            ofile,
            number: (number > 0).then_some(number as u64),
            delayus,
        })
    }
}

enum Source {
    Sock(Box<Receiver>),
    File(DumpReader<BufReader<File>>, PathBuf),
}

pub struct CatAgent {
    name: String,
    src: Source,
    tx: Option<Sender>,
    out: Option<(DumpWriter<BufWriter<File>>, PathBuf)>,
    number: Option<u64>,
    delay: Duration,
}

impl CatAgent {
    pub fn new(name: String, c: &Config) -> Result<Self> {
        let src = match (&c.input, &c.ifile) {
            (Some(s), _) => Source::Sock(Box::new(
                Receiver::from_config(s).map_err(Error::socket(&name))?,
            )),
            (None, Some(f)) => {
                let file = File::open(f)
                    .map_err(Error::io(&name, format!("open ifile {}", f.display())))?;
                Source::File(DumpReader::new(BufReader::new(file)), f.clone())
            }
            (None, None) => unreachable!("validated"),
        };
        let tx = match &c.output {
            Some(s) => Some(Sender::from_config(s).map_err(Error::socket(&name))?),
            None => None,
        };
        let out = match &c.ofile {
            Some(f) => {
                let file = File::create(f)
                    .map_err(Error::io(&name, format!("create ofile {}", f.display())))?;
                Some((DumpWriter::new(BufWriter::new(file)), f.clone()))
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
        })
    }
}

impl Agent for CatAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&mut self, ctl: &Ctl) -> Result<Report> {
        let mut frames = Frames::new();
        let mut n = 0u64;
        let mut next = Instant::now();
        let mut file_done = false;
        let mut unsent = 0u64;
        let res: Result<()> = (|| {
            while !ctl.done(false) && self.number.is_none_or(|m| n < m) {
                let got = match &mut self.src {
                    Source::Sock(rx) => match crate::recv_frames(rx, &mut frames, ctl, &self.name)?
                    {
                        crate::Got::Set => true,
                        crate::Got::Nothing => false,
                        crate::Got::Done => break,
                    },
                    Source::File(_, _) if ctl.stopped() => break,
                    Source::File(r, path) => {
                        let g = r.read_into(&mut frames).map_err(|e| {
                            Error::run(&self.name, format!("ifile {}: {e}", path.display()))
                        })?;
                        if !g {
                            file_done = true;
                            break;
                        }
                        ctl.counts.add_in();
                        g
                    }
                };
                if !got {
                    continue;
                }
                if !self.delay.is_zero() {
                    next += self.delay;
                    let now = Instant::now();
                    if next > now {
                        std::thread::sleep(next - now);
                    } else {
                        next = now;
                    }
                }
                if let Some((w, path)) = &mut self.out {
                    w.write(frames.iter()).map_err(Error::io(
                        &self.name,
                        format!("write ofile {}", path.display()),
                    ))?;
                }
                if let Some(tx) = &mut self.tx {
                    if !crate::send_frames(tx, &frames, ctl, &self.name)? {
                        unsent += 1;
                    }
                }
                n += 1;
            }
            Ok(())
        })();
        // Flush what was accepted even when the loop failed.
        if let Some((w, path)) = &mut self.out {
            w.flush().map_err(Error::io(
                &self.name,
                format!("flush ofile {}", path.display()),
            ))?;
        }
        res?;
        let mut r = Report::new(&self.name, "czmqat")
            .count("copied", n)
            .count("unsent_at_stop", unsent);
        if file_done {
            r.lines.push("input file read to its end".into());
        }
        Ok(r)
    }
}
