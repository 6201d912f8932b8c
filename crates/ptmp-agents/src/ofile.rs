//! An agent's output file (`ofile`), opened through the formats: anew, or
//! after the records it already holds.

use crate::error::{Error, Result};
use crate::seen::{again, Seen};
use ptmp::{Frames, TPSet};
use ptmp_formats::Writer;
use std::path::{Path, PathBuf};

/// Open an agent's `ofile`: created anew (emptied if it exists), or with
/// `append` written after the records it holds ([`ptmp_formats::append`]:
/// for a czmqat dump, a torn last record, left by a writer that died while
/// writing it, is cut off; a file damaged before its end is left alone and
/// `PATH.1` written instead). With `seen`, each TPSet the file holds is
/// marked seen in it, so that one sent again is not written twice. Gives
/// the writer, the file it writes, and lines for the agent's report saying
/// what was found.
pub(crate) fn open(
    agent: &str,
    f: &Path,
    append: bool,
    mut seen: Option<&mut Seen>,
) -> Result<(Box<dyn Writer>, PathBuf, Vec<String>)> {
    if !append {
        let w = ptmp_formats::create(f, None).map_err(Error::file(agent, "ofile"))?;
        return Ok((w, f.to_path_buf(), Vec::new()));
    }
    let mut scratch = TPSet::default();
    let mut visit = |fr: &Frames| {
        if let Some(s) = seen.as_deref_mut() {
            again(s, fr, &mut scratch);
        }
    };
    let a = ptmp_formats::append(f, None, &mut visit).map_err(Error::file(agent, "ofile"))?;
    let mut lines = Vec::new();
    for why in &a.passed_over {
        lines.push(format!("ofile left as it is: {why}"));
    }
    lines.push(format!(
        "ofile {}: appended after the {} records it held{}",
        a.path.display(),
        a.records,
        if a.cut > 0 {
            format!(" (cut off a torn last record of {} bytes)", a.cut)
        } else {
            String::new()
        }
    ));
    Ok((a.writer, a.path, lines))
}
