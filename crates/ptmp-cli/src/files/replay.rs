//! `ptmp replay FILE`: send a recording's messages out of a socket again,
//! paced as they were recorded: by data time (each set's `tstart`, as
//! PTMP's TPReplay), by receive time (where the format keeps it), or as
//! fast as the socket takes them; `--speed` scales the pace.
//!
//! Pacing is anchored at the first message: one whose time is `dt` after
//! the first goes out `dt / speed` after it was sent. A message whose time
//! is earlier than the first's (channels interleaved in data time), or one
//! without a time (a message that is not a TPSet, paced by data time),
//! goes out at once, after those before it: the order of the file is kept,
//! nothing is dropped.

use super::{fail, parse_format};
use crate::common::{stopping, CliError, CliResult, SockArgs};
use ptmp::duration as units;
use ptmp::{Sender, SocketType};
use ptmp_formats::{Format, Record};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What paces a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum By {
    /// Each set's tstart, in data-clock ticks (--clock-mhz).
    Data,
    /// When each message was received, where the format keeps it (MCAP,
    /// Parquet; not a czmqat dump).
    Log,
    /// No pacing: as fast as the socket takes them.
    None,
}

#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// The recording (.mcap, .parquet, anything else a czmqat dump).
    pub file: PathBuf,
    /// Read the file as this format whatever its extension.
    #[arg(long, value_parser = parse_format)]
    pub format: Option<Format>,
    #[command(flatten)]
    pub sock: SockArgs,
    /// What paces the messages.
    #[arg(long, value_enum, default_value = "data")]
    pub by: By,
    /// How much faster than recorded (2: twice as fast, 0.5: half).
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// As fast as the socket takes them (the same as --by none).
    #[arg(long, conflicts_with_all = ["by", "speed"])]
    pub fast: bool,
    /// The data clock in MHz, for --by data (PTMP's protoDUNE clock is 50
    /// MHz, DUNE's 62.5).
    #[arg(long, value_name = "MHZ", default_value_t = 50.0)]
    pub clock_mhz: f64,
    /// Send only the messages of this channel (repeat for more; default:
    /// all).
    #[arg(long = "channel", value_name = "NAME")]
    pub channels: Vec<String>,
    /// Send at most this many messages.
    #[arg(short = 'n', long)]
    pub number: Option<u64>,
    /// How long to wait after setting up, before sending (so subscribers
    /// connect; a bare number is milliseconds).
    #[arg(short = 'B', long = "begin-wait", value_name = "DURATION", default_value = "0", value_parser = units::millis)]
    pub begin_wait: Duration,
}

/// When each message is due: anchored at the first timed one.
struct Pace {
    per_sec: f64,
    anchor: Option<(Instant, u64)>,
}

impl Pace {
    /// The instant a message of time `t` is due, `None` for at once.
    fn due(&mut self, t: Option<u64>, now: Instant) -> Option<Instant> {
        let t = t?;
        let (t0, v0) = *self.anchor.get_or_insert((now, t));
        let secs = t.checked_sub(v0)? as f64 / self.per_sec;
        Duration::try_from_secs_f64(secs)
            .ok()
            .and_then(|d| t0.checked_add(d))
    }
}

/// Sleep until `due` in slices, so a stop is noticed; false when stopped.
fn wait_until(due: Instant) -> bool {
    loop {
        let now = Instant::now();
        if now >= due {
            return true;
        }
        if stopping() {
            return false;
        }
        std::thread::sleep((due - now).min(Duration::from_millis(50)));
    }
}

fn check(a: &ReplayArgs) -> CliResult<By> {
    for (name, v) in [("--speed", a.speed), ("--clock-mhz", a.clock_mhz)] {
        if !(v.is_finite() && v > 0.0) {
            return Err(CliError::usage(format!(
                "{name} {v}: must be a positive number"
            )));
        }
    }
    Ok(if a.fast { By::None } else { a.by })
}

pub fn run(a: &ReplayArgs) -> CliResult {
    let by = check(a)?;
    let mut r = ptmp_formats::open(&a.file, a.format).map_err(fail)?;
    if by == By::Log && r.format() == Format::Dump {
        return Err(CliError::usage(format!(
            "{}: a czmqat dump keeps no receive time; pace it --by data or --fast",
            a.file.display()
        )));
    }
    let cfg = a.sock.to_config(Some(SocketType::Push))?;
    if !cfg.socket_type().can_send() {
        return Err(CliError::usage(format!(
            "a {} socket cannot send; use PUSH, PUB or PAIR",
            cfg.socket_type()
        )));
    }
    let presence = a.sock.presence(&cfg)?;
    let mut tx = Sender::new(cfg.clone())?;
    tx.wait_in_slices();
    std::thread::sleep(a.begin_wait);
    let per_sec = match by {
        By::Data => a.clock_mhz * 1e6 * a.speed,
        _ => 1e9 * a.speed,
    };
    let mut pace = Pace {
        per_sec,
        anchor: None,
    };
    let out = send_all(a, by, &mut *r, &mut tx, &mut pace);
    let refused = tx.finish().refused;
    if let Some(p) = &presence {
        p.withdraw_all();
    }
    let sent = out?;
    eprintln!("ptmp replay: sent {sent} messages of {}", a.file.display());
    if let Some(why) = refused {
        return Err(CliError::fail(format!("refused: {why}")));
    }
    Ok(())
}

/// Send the file's messages (of the chosen channels) paced by `by`;
/// returns how many were sent.
fn send_all(
    a: &ReplayArgs,
    by: By,
    r: &mut dyn ptmp_formats::Reader,
    tx: &mut Sender,
    pace: &mut Pace,
) -> CliResult<u64> {
    let limit = a.number.unwrap_or(u64::MAX);
    let mut rec = Record::default();
    let mut set = ptmp_data::TPSet::default();
    let mut sent = 0u64;
    while sent < limit && !stopping() {
        if !r.read_into(&mut rec).map_err(fail)? {
            break;
        }
        if !a.channels.is_empty() && !a.channels.contains(&rec.channel) {
            continue;
        }
        let t = match by {
            By::None => None,
            By::Log => rec.log_time_ns,
            By::Data => ptmp_data::wire::decode_frames(&rec.frames, &mut set)
                .ok()
                .map(|()| set.tstart),
        };
        if let Some(due) = pace.due(t, Instant::now()) {
            if !wait_until(due) {
                break;
            }
        }
        if !crate::cat::send_out(tx, &rec.frames, "the socket")? {
            break;
        }
        sent += 1;
    }
    Ok(sent)
}
