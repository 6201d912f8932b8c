//! Rolling files: one recording written as a series of files, the next
//! begun when the current one holds a given number of bytes of messages
//! or has been open a given time. The files are named as a numbered
//! series ([`crate::numbered`]): `run.mcap`, `run.1.mcap`, `run.2.mcap`...,
//! so the extension, and so the format, stays known. Each file is
//! finished (an MCAP summary, a Parquet footer) before the next is begun,
//! and each opens on its own.

use crate::{create, numbered, Format, Result, Writer};
use ptmp_data::Frames;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// When a file is full.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of messages (their frames, before any compression) a file
    /// holds before the next is begun.
    pub bytes: Option<u64>,
    /// How long a file is written before the next is begun.
    pub every: Option<Duration>,
}

/// A [`Writer`] over a numbered series of files.
pub struct Rolling {
    base: PathBuf,
    format: Format,
    limits: Limits,
    /// The file being written; `None` only while the next is opened.
    cur: Option<Box<dyn Writer>>,
    opened: Instant,
    bytes: u64,
    /// Records of the files finished.
    before: u64,
    files: Vec<PathBuf>,
}

impl Rolling {
    /// Begin the series at `path` (in the format `given` or its
    /// extension's), writing its first file, `path` itself.
    pub fn create(path: &Path, given: Option<Format>, limits: Limits) -> Result<Rolling> {
        let format = Format::of(path, given)?;
        Ok(Rolling {
            base: path.into(),
            format,
            limits,
            cur: Some(create(path, Some(format))?),
            opened: Instant::now(),
            bytes: 0,
            before: 0,
            files: vec![path.into()],
        })
    }

    /// The files of the series so far, in order, the last being written.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    fn full(&self) -> bool {
        self.limits.bytes.is_some_and(|b| self.bytes >= b)
            || self
                .limits
                .every
                .is_some_and(|d| self.opened.elapsed() >= d)
    }

    /// Finish the current file and begin the next of the series.
    fn roll(&mut self) -> Result<()> {
        let done = self.cur.take().expect("a file is open between calls");
        self.before += done.finish()?;
        let next = numbered(&self.base, self.files.len() as u32);
        self.cur = Some(create(&next, Some(self.format))?);
        self.files.push(next);
        self.opened = Instant::now();
        self.bytes = 0;
        Ok(())
    }

    fn cur(&mut self) -> &mut Box<dyn Writer> {
        self.cur.as_mut().expect("a file is open between calls")
    }
}

impl Writer for Rolling {
    fn format(&self) -> Format {
        self.format
    }

    /// Write into the current file, first beginning the next one when the
    /// current is full and holds at least one record.
    fn write(&mut self, channel: &str, log_time_ns: Option<u64>, frames: &Frames) -> Result<()> {
        if self.full() && self.cur().records() > 0 {
            self.roll()?;
        }
        self.cur().write(channel, log_time_ns, frames)?;
        self.bytes += frames.total_bytes() as u64;
        Ok(())
    }

    fn records(&self) -> u64 {
        self.before + self.cur.as_ref().map_or(0, |w| w.records())
    }

    fn flush(&mut self) -> Result<()> {
        self.cur().flush()
    }

    fn finish(mut self: Box<Self>) -> Result<u64> {
        let last = self.cur.take().expect("a file is open between calls");
        Ok(self.before + last.finish()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_frames(i: u32) -> Frames {
        let s = ptmp_data::TPSet {
            count: i,
            ..Default::default()
        };
        let mut buf = Vec::new();
        ptmp_data::encode_tpset(&s, &mut buf);
        Frames::from_slices(&[&ptmp_data::VERSION_FRAME[..], &buf[..]])
    }

    #[test]
    fn a_series_rolls_at_its_size_and_every_file_reads_on_its_own() {
        let d = tempfile::tempdir().unwrap();
        for ext in ["mcap", "parquet", "dump"] {
            let p = d.path().join(format!("run.{ext}"));
            let per = set_frames(0).total_bytes() as u64;
            let limits = Limits {
                bytes: Some(10 * per),
                every: None,
            };
            let mut w = Box::new(Rolling::create(&p, None, limits).unwrap());
            for i in 0..35 {
                w.write("a", Some(u64::from(i)), &set_frames(i)).unwrap();
            }
            let files = w.files().to_vec();
            assert_eq!(w.finish().unwrap(), 35);
            let names: Vec<_> = files
                .iter()
                .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
                .collect();
            let want: Vec<String> = ["run", "run.1", "run.2", "run.3"]
                .iter()
                .map(|n| format!("{n}.{ext}"))
                .collect();
            assert_eq!(names, want);
            let mut counts = Vec::new();
            let mut next = 0;
            for f in &files {
                let mut r = crate::open(f, None).unwrap();
                let mut rec = crate::Record::default();
                let mut set = ptmp_data::TPSet::default();
                let mut n = 0;
                while r.read_into(&mut rec).unwrap() {
                    ptmp_data::wire::decode_frames(&rec.frames, &mut set).unwrap();
                    assert_eq!(set.count, next, "{}", f.display());
                    next += 1;
                    n += 1;
                }
                counts.push(n);
            }
            assert_eq!(counts, vec![10, 10, 10, 5], "{ext}");
        }
    }

    #[test]
    fn a_series_rolls_at_its_time_but_never_leaves_a_file_empty() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.mcap");
        let limits = Limits {
            bytes: None,
            every: Some(Duration::ZERO),
        };
        let mut w = Box::new(Rolling::create(&p, None, limits).unwrap());
        for i in 0..3 {
            w.write("a", None, &set_frames(i)).unwrap();
        }
        assert_eq!(w.files().len(), 3, "each write found the file full");
        assert_eq!(w.records(), 3);
        assert_eq!(w.finish().unwrap(), 3);
    }
}
