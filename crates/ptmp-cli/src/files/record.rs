//! `ptmp record -o FILE`: keep what an endpoint carries in a file, each
//! message with its receive time and the channel it came on, until `-n`
//! messages, `--timeout` of quiet or a stop signal, then finish the file.
//!
//! The endpoint is given as to `ptmp recv`: subscribing to a PUB edge
//! takes nothing from its other subscribers, over zmq or as one more
//! reader of an `shm://` PUB ring (which never holds its writer back: what
//! the writer overwrites before the recorder reads it is counted). What
//! was written is handed to the system
//! every `--flush-every`, so a recorder killed without warning leaves a
//! file readable up to that point (an MCAP file up to its last whole
//! chunk, a czmqat dump up to its last whole message; a Parquet file
//! needs its footer, which only a clean stop writes).
//!
//! With `--roll-size` or `--roll-every` the recording is a numbered
//! series of files (`run.mcap`, `run.1.mcap`, ...), each finished before
//! the next is begun (`ptmp_formats::roll`).
//!
//! What cannot be kept is counted and told at the end, never dropped
//! silently: messages a ring's writer overwrote before they were read,
//! TPSets lost upstream (gaps in their counts, as `ptmp recv` counts them)
//! and messages the format cannot hold (an MCAP or Parquet
//! file keeps TPSets only).

use super::{fail, parse_format};
use crate::common::{stopping, CliError, CliResult, SockArgs};
use crate::recv::Tally;
use ptmp::duration as units;
use ptmp::{Frames, Receiver};
use ptmp_formats::roll::{Limits, Rolling};
use ptmp_formats::{Format, Writer};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    /// The file to write (.mcap, .parquet, anything else a czmqat dump).
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
    /// Write this format whatever the extension (dump, mcap, parquet).
    #[arg(long, value_parser = parse_format)]
    pub format: Option<Format>,
    #[command(flatten)]
    pub sock: SockArgs,
    /// The channel the messages are kept under (default: the endpoint).
    #[arg(long)]
    pub channel: Option<String>,
    /// Stop after this many messages (default: until a stop signal).
    #[arg(short = 'n', long)]
    pub number: Option<u64>,
    /// Stop when nothing has come for this long (e.g. 5s; a bare number
    /// is milliseconds; default: never).
    #[arg(short = 'T', long, value_name = "DURATION", value_parser = units::millis)]
    pub timeout: Option<Duration>,
    /// Hand what is written to the system this often (a bare number is
    /// milliseconds).
    #[arg(long, value_name = "DURATION", default_value = "1000", value_parser = units::millis)]
    pub flush_every: Duration,
    /// Begin the next file of a numbered series (run.mcap, run.1.mcap,
    /// run.2.mcap...) once the current one holds this many bytes of
    /// messages, before compression (e.g. 100MB, 1GiB).
    #[arg(long, value_name = "SIZE", value_parser = super::parse_size)]
    pub roll_size: Option<u64>,
    /// Begin the next file of the series once the current one has been
    /// written this long (e.g. 10m, 1h; a bare number is seconds).
    #[arg(long, value_name = "DURATION", value_parser = units::secs_positive)]
    pub roll_every: Option<Duration>,
    /// Write over OUTPUT if it exists.
    #[arg(short = 'f', long)]
    pub force: bool,
    /// End with a JSON summary on stdout.
    #[arg(long)]
    pub json: bool,
}

/// What a recording counted.
#[derive(Default)]
struct Counts {
    kept: u64,
    /// Overwritten in an shm:// ring before they were read.
    overrun: u64,
    not_kept: u64,
    tally: Tally,
    /// The files written, in order.
    files: Vec<String>,
}

pub fn run(a: &RecordArgs) -> CliResult {
    let format = Format::of(&a.output, a.format).map_err(fail)?;
    let rolls = a.roll_size.is_some() || a.roll_every.is_some();
    let second = ptmp_formats::numbered(&a.output, 1);
    for f in [&a.output, &second] {
        if !a.force && f.exists() && (rolls || f == &a.output) {
            return Err(CliError::usage(format!(
                "{}: exists; give --force to write over it",
                f.display()
            )));
        }
    }
    let cfg = a.sock.to_config(None)?;
    if !cfg.socket_type().can_recv() {
        return Err(CliError::usage(format!(
            "a {} socket cannot receive; use SUB, PULL or PAIR",
            cfg.socket_type()
        )));
    }
    let channel = a.channel.clone().unwrap_or_else(|| {
        let eps: Vec<String> = cfg.endpoints().map(|(_, e)| e.address.clone()).collect();
        eps.join(",")
    });
    let presence = a.sock.presence(&cfg)?;
    let mut rx = Receiver::following(&cfg)?;
    let limits = Limits {
        bytes: a.roll_size,
        every: a.roll_every,
    };
    let mut w = Box::new(Rolling::create(&a.output, Some(format), limits).map_err(fail)?);
    let mut c = Counts::default();
    let ended = record(a, &channel, &mut rx, &mut *w, &mut c);
    c.files = w.files().iter().map(|f| f.display().to_string()).collect();
    rx.commit_now();
    c.overrun = rx.lost();
    // What was kept is finished into the file, whatever ended the run.
    let finished = w.finish().map_err(fail);
    if let Some(p) = &presence {
        p.withdraw_all();
    }
    let ended_by = ended?;
    finished?;
    report(a, format, &c, ended_by)
}

fn now_ns() -> Option<u64> {
    let d = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok()?;
    u64::try_from(d.as_nanos()).ok()
}

/// Receive and write until the end; gives what ended it.
fn record(
    a: &RecordArgs,
    channel: &str,
    rx: &mut Receiver,
    w: &mut dyn Writer,
    c: &mut Counts,
) -> CliResult<&'static str> {
    let limit = a.number.unwrap_or(u64::MAX);
    let slice = a.timeout.map_or(Duration::from_millis(100), |t| {
        t.min(Duration::from_millis(100))
    });
    let mut frames = Frames::default();
    let mut set = ptmp_data::TPSet::default();
    let (mut last_msg, mut last_flush) = (Instant::now(), Instant::now());
    while c.kept + c.not_kept < limit {
        if stopping() {
            return Ok("signal");
        }
        let got = match rx.recv_raw_into(&mut frames, Some(slice)) {
            Ok(g) => g,
            Err(ptmp::Error::Interrupted) => false,
            Err(e) => return Err(e.into()),
        };
        let now = Instant::now();
        if got {
            last_msg = now;
            if ptmp_data::wire::decode_frames(&frames, &mut set).is_ok() {
                c.tally.note(set.count);
            }
            match w.write(channel, now_ns(), &frames) {
                Ok(()) => c.kept += 1,
                Err(ptmp_formats::Error::Refused { .. }) => c.not_kept += 1,
                Err(e) => return Err(fail(e)),
            }
            rx.commit();
        } else if let Some(why) = rx.refused() {
            return Err(CliError::fail(format!("refused: {why}")));
        } else if a.timeout.is_some_and(|t| now - last_msg >= t) {
            return Ok("timeout");
        }
        if now - last_flush >= a.flush_every {
            w.flush().map_err(fail)?;
            last_flush = now;
        }
    }
    Ok("count")
}

fn report(a: &RecordArgs, format: Format, c: &Counts, ended_by: &str) -> CliResult {
    let t = &c.tally;
    println!(
        "recorded {} messages into {} ({}), {} overwritten before read, {} TPSets lost upstream (count gaps {}, backwards {}), {} not kept (not TPSets) (ended by {ended_by})",
        c.kept,
        c.files.join(", "),
        format.long_name(),
        c.overrun,
        t.lost,
        t.gaps,
        t.backwards,
        c.not_kept
    );
    if a.json {
        let j = serde_json::json!({
            "files": c.files,
            "format": format.name(),
            "kept": c.kept,
            "not_kept": c.not_kept,
            "overwritten": c.overrun,
            "tpsets": t.received,
            "lost": t.lost,
            "gaps": t.gaps,
            "backwards": t.backwards,
            "ended_by": ended_by,
        });
        println!("{j}");
    }
    Ok(())
}
