//! `ptmp info FILE...`: what a recording holds, as `mcap info` tells an
//! MCAP file, for every format: its records by channel, sets, TrigPrims,
//! the receive and data times spanned, compression and layout.

use super::{fail, parse_format, utc};
use crate::common::{CliError, CliResult};
use ptmp_formats::info::{summarize, Channel, Span, Summary};
use ptmp_formats::Format;
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// The files (.mcap, .parquet, anything else a czmqat dump).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Read every file as this format whatever its extension (dump, mcap,
    /// parquet).
    #[arg(long, value_parser = parse_format)]
    pub format: Option<Format>,
    /// The data clock, in MHz, to tell `tstart` spans in seconds (PTMP's
    /// protoDUNE clock is 50 MHz, DUNE's 62.5).
    #[arg(long, value_name = "MHZ", default_value_t = 50.0)]
    pub clock_mhz: f64,
    /// Print one JSON object per file instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &InfoArgs) -> CliResult {
    if !(a.clock_mhz.is_finite() && a.clock_mhz > 0.0) {
        return Err(CliError::usage(format!(
            "--clock-mhz {}: must be a positive number of MHz",
            a.clock_mhz
        )));
    }
    let mut out = std::io::stdout().lock();
    let mut damaged = Vec::new();
    for (i, f) in a.files.iter().enumerate() {
        let s = summarize(f, a.format).map_err(fail)?;
        if a.json {
            writeln!(out, "{}", to_json(&s))?;
        } else {
            if i > 0 {
                writeln!(out)?;
            }
            write_text(&mut out, &s, a.clock_mhz)?;
        }
        if s.damaged.is_some() {
            damaged.push(f.display().to_string());
        }
    }
    if !damaged.is_empty() {
        return Err(CliError::fail(format!(
            "damaged, summarized up to the damage: {}",
            damaged.join(", ")
        )));
    }
    Ok(())
}

fn span_json(s: Option<Span>) -> Value {
    s.map_or(Value::Null, |s| json!({"min": s.min, "max": s.max}))
}

fn channel_json(c: &Channel) -> Value {
    json!({
        "name": c.name,
        "records": c.records,
        "tpsets": c.tpsets,
        "trigprims": c.trigprims,
        "log_time_ns": span_json(c.log_time_ns),
        "tstart": span_json(c.tstart),
    })
}

/// The summary as `--json` prints it.
pub fn to_json(s: &Summary) -> Value {
    let details: serde_json::Map<String, Value> = s
        .details
        .iter()
        .map(|d| (d.name.to_string(), Value::from(d.value.clone())))
        .collect();
    json!({
        "path": s.path.display().to_string(),
        "format": s.format.name(),
        "bytes": s.bytes,
        "records": s.records,
        "tpsets": s.tpsets,
        "trigprims": s.trigprims,
        "other_messages": s.other,
        "detids": s.detids,
        "log_time_ns": span_json(s.log_time_ns),
        "tstart": span_json(s.tstart),
        "channels": s.channels.iter().map(channel_json).collect::<Vec<_>>(),
        "details": details,
        "damaged": s.damaged,
    })
}

fn write_text(out: &mut impl Write, s: &Summary, mhz: f64) -> std::io::Result<()> {
    let row = |out: &mut dyn Write, k: &str, v: &str| writeln!(out, "{:<13} {v}", format!("{k}:"));
    row(out, "file", &s.path.display().to_string())?;
    row(
        out,
        "format",
        &format!("{} ({} bytes)", s.format.long_name(), s.bytes),
    )?;
    let mut recs = format!(
        "{} ({} TPSets, {} TrigPrims",
        s.records, s.tpsets, s.trigprims
    );
    if s.other > 0 {
        recs += &format!(", {} other messages", s.other);
    }
    row(out, "records", &(recs + ")"))?;
    if let Some(t) = s.log_time_ns {
        let secs = (t.max - t.min) as f64 / 1e9;
        let v = format!("{} to {} ({secs:.3} s)", utc(t.min), utc(t.max));
        row(out, "received", &v)?;
    }
    if let Some(t) = s.tstart {
        let secs = (t.max - t.min) as f64 / (mhz * 1e6);
        let v = format!("{} to {} ticks ({secs:.6} s at {mhz} MHz)", t.min, t.max);
        row(out, "tstart", &v)?;
    }
    if !s.detids.is_empty() {
        let ids: Vec<String> = s.detids.iter().map(u32::to_string).collect();
        row(out, "detids", &ids.join(", "))?;
    }
    for d in &s.details {
        row(out, d.name, &d.value)?;
    }
    if let Some(why) = &s.damaged {
        row(out, "damaged", why)?;
    }
    writeln!(out, "channels:")?;
    let width = s
        .channels
        .iter()
        .map(|c| c.name.len())
        .max()
        .unwrap_or(0)
        .max(6);
    for c in &s.channels {
        let name = if c.name.is_empty() { "(none)" } else { &c.name };
        writeln!(
            out,
            "  {name:<width$}  {} records, {} TPSets, {} TrigPrims",
            c.records, c.tpsets, c.trigprims
        )?;
    }
    Ok(())
}
