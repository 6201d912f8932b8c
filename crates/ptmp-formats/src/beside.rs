//! Going on after the records of a file whose format cannot be appended
//! to: an MCAP or Parquet file ends with what its writer writes when it
//! finishes (a summary, a footer), so a writer that restarts (after a
//! crash, or told to go on) leaves it as it is and writes the next
//! numbered file beside it, keeping the extension so the format stays
//! known: `run.mcap`, then `run.1.mcap`, `run.2.mcap`... Every record of
//! the files already there is shown to the caller first, so a writer that
//! drops what it already wrote learns it; a file cut short (its writer was
//! killed) is read to its last whole record, and said so.

use crate::record::{create, open, Appended, Record};
use crate::{Format, Result};
use ptmp_data::Frames;
use std::path::{Path, PathBuf};

/// How many numbered files may pile up beside one name.
const MAX_FILES: u32 = 100_000;

/// The `n`th file of the series named `path`: `path` itself for 0, else
/// `STEM.n.EXT` (or `PATH.n` with no extension).
pub(crate) fn numbered(path: &Path, n: u32) -> PathBuf {
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
pub(crate) fn append_beside(
    path: &Path,
    format: Format,
    visit: &mut dyn FnMut(&Frames),
) -> Result<Appended> {
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
