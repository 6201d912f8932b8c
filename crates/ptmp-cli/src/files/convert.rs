//! `ptmp convert IN OUT`: copy a recording into another format, each
//! format chosen by its file's extension or by `--from`/`--to`. What both
//! formats hold is kept as it was: the frames of every TPSet, its channel
//! and its receive time. What the output cannot hold is told, not
//! invented: a czmqat dump keeps no channel or time (they are dropped,
//! and the command says so), and a file read from a dump into MCAP gets
//! each set's `created` as its receive time, saying so. A message that is
//! not a TPSet cannot go into MCAP or Parquet: the conversion stops at it,
//! naming it, unless `--skip-other` counts and skips it.

use super::{check_output, fail, parse_format};
use crate::common::{stopping, CliError, CliResult};
use ptmp_formats::{Format, Record};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct ConvertArgs {
    /// The file to read.
    pub input: PathBuf,
    /// The file to write (.mcap, .parquet, anything else a czmqat dump).
    pub output: PathBuf,
    /// Read the input as this format whatever its extension (dump, mcap,
    /// parquet).
    #[arg(long, value_parser = parse_format)]
    pub from: Option<Format>,
    /// Write the output in this format whatever its extension.
    #[arg(long = "to", alias = "format", value_parser = parse_format)]
    pub to: Option<Format>,
    /// Channel for records that have none (read from a czmqat dump).
    #[arg(long, default_value = ptmp_formats::mcap::DEFAULT_TOPIC)]
    pub channel: String,
    /// Skip (and count) messages that are not TPSets when the output holds
    /// TPSets only, instead of stopping at the first.
    #[arg(long)]
    pub skip_other: bool,
    /// Write over OUTPUT if it exists.
    #[arg(short = 'f', long)]
    pub force: bool,
}

pub fn run(a: &ConvertArgs) -> CliResult {
    let ofmt = Format::of(&a.output, a.to).map_err(fail)?;
    let mut r = ptmp_formats::open(&a.input, a.from).map_err(fail)?;
    check_output(&a.input, &a.output, a.force)?;
    let ifmt = r.format();
    let mut w = ptmp_formats::create(&a.output, Some(ofmt)).map_err(fail)?;
    let mut rec = Record::default();
    let mut set = ptmp_data::TPSet::default();
    let (mut skipped, mut timed_by_created) = (0u64, 0u64);
    let mut failure = None;
    while !stopping() {
        match r.read_into(&mut rec) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                failure = Some(fail(e));
                break;
            }
        }
        let is_set = ptmp_data::wire::decode_frames(&rec.frames, &mut set).is_ok();
        if !is_set && ofmt != Format::Dump && a.skip_other {
            skipped += 1;
            continue;
        }
        if rec.channel.is_empty() {
            rec.channel.clone_from(&a.channel);
        }
        if rec.log_time_ns.is_none() && is_set && ofmt != Format::Dump {
            rec.log_time_ns = ptmp_formats::mcap::created_ns(set.created);
            timed_by_created += 1;
        }
        if let Err(e) = w.write(&rec.channel, rec.log_time_ns, &rec.frames) {
            failure = Some(CliError::fail(format!(
                "{e} (--skip-other skips such messages)"
            )));
            break;
        }
    }
    let read = r.records();
    // What was written is kept, finished, whatever ended the copy.
    let written = w.finish().map_err(fail)?;
    let mut said = format!(
        "ptmp convert: {written} of {read} records from {} ({}) into {} ({})",
        a.input.display(),
        ifmt.long_name(),
        a.output.display(),
        ofmt.long_name()
    );
    if skipped > 0 {
        said += &format!("; {skipped} messages that are not TPSets skipped");
    }
    if ofmt == Format::Dump && ifmt != Format::Dump {
        said += "; a czmqat dump keeps no channel or receive time: they were dropped";
    }
    if timed_by_created > 0 {
        said += &format!(
            "; {timed_by_created} records had no receive time: each got its set's created time"
        );
    }
    eprintln!("{said}");
    match failure {
        Some(e) => Err(e),
        None if stopping() => Err(CliError::fail("stopped by a signal before the end")),
        None => Ok(()),
    }
}
