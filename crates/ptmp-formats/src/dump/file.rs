//! A dump file behind the [`Reader`] and [`Writer`] of every format.

use super::{DumpReader, DumpWriter};
use crate::{Error, Format, Reader, Record, Result, Writer};
use ptmp_data::Frames;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

/// A dump file read record by record.
pub struct FileReader {
    r: DumpReader<BufReader<File>>,
    path: PathBuf,
}

impl FileReader {
    /// Open `path`.
    pub fn open(path: &Path) -> Result<Self> {
        let f = File::open(path).map_err(|source| Error::Io {
            path: path.into(),
            source,
        })?;
        Ok(Self::from_file(f, path))
    }

    /// Read `file`, open at its start, as the dump at `path`.
    pub fn from_file(file: File, path: &Path) -> Self {
        FileReader {
            r: DumpReader::new(BufReader::new(file)),
            path: path.into(),
        }
    }

    /// Byte of the file where the next record starts.
    pub fn offset(&self) -> u64 {
        self.r.offset()
    }

    /// Read the next record's frames: the dump's own reader, without a
    /// [`Record`] around them.
    pub fn read_frames(&mut self, frames: &mut Frames) -> Result<bool> {
        self.r.read_into(frames).map_err(|source| Error::Dump {
            path: self.path.clone(),
            source,
        })
    }
}

impl Reader for FileReader {
    fn format(&self) -> Format {
        Format::Dump
    }

    fn read_into(&mut self, rec: &mut Record) -> Result<bool> {
        rec.channel.clear();
        rec.log_time_ns = None;
        self.read_frames(&mut rec.frames)
    }

    fn records(&self) -> u64 {
        self.r.records()
    }

    fn position(&self) -> Option<u64> {
        Some(self.r.offset())
    }
}

/// A dump file written record by record, through a buffer.
pub struct FileWriter {
    w: DumpWriter<BufWriter<File>>,
    path: PathBuf,
}

impl FileWriter {
    /// Create (or truncate) `path`.
    pub fn create(path: &Path) -> Result<Self> {
        let f = File::create(path).map_err(|source| Error::Io {
            path: path.into(),
            source,
        })?;
        Ok(Self::from_file(f, path))
    }

    /// Write into `file`, already open at `path` where the next record
    /// goes (at the end of those it holds, see [`super::open_append`]).
    pub fn from_file(file: File, path: &Path) -> Self {
        FileWriter {
            w: DumpWriter::new(BufWriter::new(file)),
            path: path.into(),
        }
    }

    fn io(&self, source: std::io::Error) -> Error {
        let path = self.path.clone();
        if source.kind() == std::io::ErrorKind::InvalidInput {
            Error::Refused {
                path,
                what: source.to_string(),
            }
        } else {
            Error::Io { path, source }
        }
    }
}

impl Writer for FileWriter {
    fn format(&self) -> Format {
        Format::Dump
    }

    fn write(&mut self, _channel: &str, _log_time_ns: Option<u64>, frames: &Frames) -> Result<()> {
        self.w.write(frames.iter()).map_err(|e| self.io(e))
    }

    fn records(&self) -> u64 {
        self.w.records()
    }

    fn flush(&mut self) -> Result<()> {
        self.w.flush().map_err(|e| self.io(e))
    }

    fn finish(mut self: Box<Self>) -> Result<u64> {
        self.flush()?;
        Ok(self.w.records())
    }
}

#[cfg(test)]
mod tests {
    use crate::{create, open, Error, Format, Record};
    use ptmp_data::Frames;

    #[test]
    fn records_go_through_the_interface_and_back() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("run.dump");
        let mut w = create(&p, None).unwrap();
        assert_eq!(w.format(), Format::Dump);
        for i in 0..3u8 {
            let f = Frames::from_slices(&[[0u8; 4].as_slice(), &[i; 300]]);
            w.write("edge", Some(7), &f).unwrap();
        }
        let e = w.write("edge", None, &Frames::new()).unwrap_err();
        assert!(matches!(e, Error::Refused { .. }), "{e}");
        assert!(e.to_string().contains("run.dump"), "{e}");
        assert_eq!(w.finish().unwrap(), 3);

        let mut r = open(&p, None).unwrap();
        let mut rec = Record::default();
        let mut n = 0u8;
        while r.read_into(&mut rec).unwrap() {
            // A dump keeps the frames only.
            assert_eq!((rec.channel.as_str(), rec.log_time_ns), ("", None));
            assert_eq!(rec.frames.get(1).unwrap(), &[n; 300][..]);
            n += 1;
        }
        assert_eq!((n, r.records()), (3, 3));
    }

    #[test]
    fn a_damaged_file_names_itself_the_record_and_the_byte() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("cut");
        let mut w = create(&p, None).unwrap();
        w.write("", None, &Frames::from_slices(&[b"one"])).unwrap();
        w.write("", None, &Frames::from_slices(&[b"two"])).unwrap();
        w.finish().unwrap();
        let len = std::fs::metadata(&p).unwrap().len();
        let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        f.set_len(len - 1).unwrap();
        let mut r = open(&p, None).unwrap();
        let mut rec = Record::default();
        assert!(r.read_into(&mut rec).unwrap());
        let e = r.read_into(&mut rec).unwrap_err();
        assert_eq!((e.record(), e.offset()), (Some(1), Some(12)));
        assert!(
            e.to_string().starts_with(&format!("{}: ", p.display())),
            "{e}"
        );
        assert!(!r.read_into(&mut rec).unwrap(), "nothing after an error");
    }

    #[test]
    fn appending_goes_on_after_what_the_file_holds() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sink.dump");
        let mut w = create(&p, None).unwrap();
        w.write("", None, &Frames::from_slices(&[b"one"])).unwrap();
        w.write("", None, &Frames::from_slices(&[b"two"])).unwrap();
        w.finish().unwrap();
        let mut seen = Vec::new();
        let mut a = crate::append(&p, None, &mut |f| seen.push(f.to_vecs())).unwrap();
        assert_eq!((a.records, a.cut, a.path.as_path()), (2, 0, p.as_path()));
        assert_eq!(seen, [vec![b"one".to_vec()], vec![b"two".to_vec()]]);
        a.writer
            .write("", None, &Frames::from_slices(&[b"three"]))
            .unwrap();
        assert_eq!(a.writer.finish().unwrap(), 1);
        let mut r = open(&p, None).unwrap();
        let mut rec = Record::default();
        let mut all = Vec::new();
        while r.read_into(&mut rec).unwrap() {
            all.push(rec.frames.get(0).unwrap().to_vec());
        }
        assert_eq!(all, [b"one".to_vec(), b"two".to_vec(), b"three".to_vec()]);
    }

    #[test]
    fn a_missing_file_is_named() {
        let e = open(std::path::Path::new("/nonexistent/x.dump"), None)
            .err()
            .unwrap();
        assert!(e.to_string().starts_with("/nonexistent/x.dump: "), "{e}");
    }
}
