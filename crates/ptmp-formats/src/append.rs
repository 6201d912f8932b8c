//! Going on after the records a file holds ([`append`]): what a writer
//! that restarts (after a crash, or told to go on) must do, so nothing
//! written before is lost. A czmqat dump is written on after its last
//! whole record ([`dump::open_append_reading`]). An MCAP or Parquet file
//! ends with what its writer writes when it finishes (a summary, a
//! footer), so it is left as it is and the next numbered file beside it
//! is written, keeping the extension so the format stays known:
//! `run.mcap`, then `run.1.mcap`, `run.2.mcap`... Every record of the
//! files already there is shown to the caller first, so a writer that
//! drops what it already wrote learns it; a file cut short (its writer was
//! killed) is read to its last whole record, and said so.

use crate::record::{create, open, Record, Writer};
use crate::{dump, Error, Format, Result};
use ptmp_data::Frames;
use std::path::{Path, PathBuf};

/// A file opened by [`append`] to go on after the records it holds.
pub struct Appended {
    /// Writes after the last whole record.
    pub writer: Box<dyn Writer>,
    /// The file written: the one asked for, or the next of a numbered
    /// series (`PATH.N` past damaged dumps, `STEM.N.EXT` after MCAP and
    /// Parquet files, which are not appended to).
    pub path: PathBuf,
    /// Records the file held.
    pub records: u64,
    /// Bytes of a torn last record cut off (a writer died writing it).
    pub cut: u64,
    /// Files left as they were (damaged before their end, or of a format
    /// not appended to), each with why.
    pub passed_over: Vec<String>,
}

/// Open `path` (in the format `given` or its extension's) to write after
/// the records it holds, creating it if missing, showing each record it
/// holds to `visit` first. How a format goes on after a writer that died
/// is its own: a czmqat dump cuts a torn last record off and writes
/// `PATH.1` (`.2`, ...) in place of a file damaged before its end
/// ([`dump::open_append_reading`]). MCAP and Parquet files end with what
/// their writer writes when it finishes (a summary, a footer), so they are
/// not appended to: they are read through and left as they are, and the
/// records go to the next numbered file beside them (`run.1.mcap`, ...;
/// each file left is said in [`Appended::passed_over`]).
pub fn append(
    path: &Path,
    given: Option<Format>,
    visit: &mut dyn FnMut(&Frames),
) -> Result<Appended> {
    match Format::of(path, given)? {
        Format::Dump => {
            let a = dump::open_append_reading(path, visit).map_err(|source| Error::Io {
                path: path.into(),
                source,
            })?;
            Ok(Appended {
                writer: Box::new(dump::FileWriter::from_file(a.file, &a.path)),
                path: a.path,
                records: a.records,
                cut: a.cut,
                passed_over: a.passed_over,
            })
        }
        f @ (Format::Mcap | Format::Parquet) => append_beside(path, f, visit),
    }
}

/// How many numbered files may pile up beside one name.
const MAX_FILES: u32 = 100_000;

/// The `n`th file of the series named `path`: `path` itself for 0, else
/// `STEM.n.EXT` (or `PATH.n` with no extension).
pub fn numbered(path: &Path, n: u32) -> PathBuf {
    if n == 0 {
        return path.to_path_buf();
    }
    match (path.file_stem(), path.extension()) {
        (Some(stem), Some(ext)) => {
            let mut name = stem.to_owned();
            name.push(format!(".{n}."));
            name.push(ext);
            path.with_file_name(name)
        }
        _ => {
            let mut s = path.as_os_str().to_owned();
            s.push(format!(".{n}"));
            PathBuf::from(s)
        }
    }
}

/// Read every file of the series named `path` that is there, showing each
/// record to `visit`, and create the first one missing.
fn append_beside(path: &Path, format: Format, visit: &mut dyn FnMut(&Frames)) -> Result<Appended> {
    let mut records = 0;
    let mut passed_over = Vec::new();
    for n in 0..MAX_FILES {
        let p = numbered(path, n);
        if std::fs::symlink_metadata(&p).is_err() {
            let writer = create(&p, Some(format))?;
            return Ok(Appended {
                writer,
                path: p,
                records,
                cut: 0,
                passed_over,
            });
        }
        let (held, damage) = read_through(&p, format, visit);
        records += held;
        passed_over.push(match damage {
            None => format!(
                "{}: {} files are not appended to; its {held} records stay as they are",
                p.display(),
                format.long_name()
            ),
            Some(e) => format!(
                "{}: kept as it is, read to its last whole record: {e}",
                p.display()
            ),
        });
    }
    Err(crate::Error::Format {
        path: path.into(),
        what: format!("{MAX_FILES} numbered files beside it already; write to a new name"),
    })
}

/// Every record of `p` shown to `visit`: how many, and the error that
/// ended the reading early (a file cut short or damaged, or one that does
/// not open as the format at all), if one did.
fn read_through(
    p: &Path,
    format: Format,
    visit: &mut dyn FnMut(&Frames),
) -> (u64, Option<crate::Error>) {
    let mut r = match open(p, Some(format)) {
        Ok(r) => r,
        Err(e) => return (0, Some(e)),
    };
    let mut rec = Record::default();
    loop {
        match r.read_into(&mut rec) {
            Ok(true) => visit(&rec.frames),
            Ok(false) => return (r.records(), None),
            Err(e) => return (r.records(), Some(e)),
        }
    }
}
