//! `ptmp cat`: PTMP's czmqat. Copies messages, schema-blind, between a
//! socket or a dump file and a socket, a dump file or text on stdout;
//! from a socket to a socket through `Receiver::forward`.

use crate::common::{parse_socket_type, progress, stopping, CliError, CliResult};
use ptmp::duration as units;
use ptmp::{Attach, Frames, Receiver, Sender, SocketConfig, TPSet};
use ptmp_formats::{Reader, Record, Writer};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["ifile", "isock"])))]
#[command(group(clap::ArgGroup::new("output").args(["ofile", "osock"])))]
pub struct CatArgs {
    /// Copy at most this many messages (default: all; forever for a socket).
    #[arg(short = 'n', long)]
    pub number: Option<u64>,
    /// How long to wait after setting up, before copying (e.g. 500ms, 2s;
    /// a bare number is milliseconds).
    #[arg(short = 'B', long = "begin-wait", value_name = "DURATION", default_value = "0", value_parser = units::millis)]
    pub begin_wait: Duration,
    /// How long to wait after copying, before closing (a bare number is
    /// milliseconds).
    #[arg(short = 'E', long = "end-wait", value_name = "DURATION", default_value = "0", value_parser = units::millis)]
    pub end_wait: Duration,
    /// Socket input: stop when nothing arrives for this long (a bare number
    /// is milliseconds; default: wait until -n messages or Ctrl-C).
    #[arg(short = 'T', long, value_name = "DURATION", value_parser = units::millis)]
    pub timeout: Option<Duration>,
    /// Pause this long after each message written (a bare number is
    /// microseconds, as czmqat's option).
    #[arg(long, value_name = "DURATION", default_value = "0", value_parser = units::micros)]
    pub delayus: Duration,
    /// Read messages from this file; the format follows the extension:
    /// .mcap (MCAP), .parquet (Parquet, a row per TrigPrim), anything else
    /// a czmqat dump.
    #[arg(long)]
    pub ifile: Option<PathBuf>,
    /// Read messages from a socket: JSON config or TYPE,bind|connect,ENDPOINT[,ENDPOINT...].
    #[arg(long)]
    pub isock: Option<String>,
    /// Write messages to this file; the format follows the extension:
    /// .mcap (MCAP, readable by MCAP's own tools), .parquet (Parquet, for
    /// pandas, polars, DuckDB), anything else a czmqat dump.
    #[arg(long)]
    pub ofile: Option<PathBuf>,
    /// Send messages to a socket: JSON config or TYPE,bind|connect,ENDPOINT[,ENDPOINT...].
    /// From --isock each message is passed on as it came; between two
    /// shm:// channels it is copied once, from slot to slot.
    #[arg(long)]
    pub osock: Option<String>,
    /// In text output, also print each TrigPrim.
    #[arg(long)]
    pub tps: bool,
}

/// Parse `--isock`/`--osock`: a JSON socket config or the compact form.
fn sock_spec(opt: &str, spec: &str) -> CliResult<SocketConfig> {
    let bad = |why: String| CliError::usage(format!("--{opt} {spec:?}: {why}"));
    if spec.trim_start().starts_with('{') {
        return SocketConfig::from_json(spec).map_err(|e| bad(e.to_string()));
    }
    let parts: Vec<&str> = spec.split(',').map(str::trim).collect();
    if parts.len() < 3 {
        return Err(bad(
            "expected a JSON socket config or TYPE,bind|connect,ENDPOINT[,ENDPOINT...]".into(),
        ));
    }
    let stype = parse_socket_type(parts[0]).map_err(bad)?;
    let attach = match parts[1].to_ascii_lowercase().as_str() {
        "bind" => Attach::Bind,
        "connect" => Attach::Connect,
        other => return Err(bad(format!("{other:?} is neither bind nor connect"))),
    };
    SocketConfig::new(stype, attach, &parts[2..]).map_err(|e| bad(e.to_string()))
}

enum Input {
    File(Box<dyn Reader>),
    Sock(Box<Receiver>),
}

impl Input {
    /// What was received has been handed on (written, printed or sent): a
    /// receiver with an identity in its shm rings lets its writer
    /// overwrite it, and shows it in full when dropped.
    fn commit(&self) {
        if let Input::Sock(rx) = self {
            rx.commit();
        }
    }
}

enum Output {
    File(Box<dyn Writer>),
    Sock(Box<Sender>),
    Text(BufWriter<std::io::StdoutLock<'static>>),
}

/// Check both ends, then open them: nothing is opened when either is
/// wrong.
fn open(a: &CatArgs) -> CliResult<(Input, Output)> {
    // Validate everything before opening anything.
    let icfg = a
        .isock
        .as_deref()
        .map(|s| sock_spec("isock", s))
        .transpose()?;
    let ocfg = a
        .osock
        .as_deref()
        .map(|s| sock_spec("osock", s))
        .transpose()?;
    if let Some(c) = &icfg {
        if !c.socket_type().can_recv() {
            return Err(CliError::usage(format!(
                "--isock: a {} socket cannot receive; use PULL, SUB or PAIR",
                c.socket_type()
            )));
        }
    }
    if let Some(c) = &ocfg {
        if !c.socket_type().can_send() {
            return Err(CliError::usage(format!(
                "--osock: a {} socket cannot send; use PUSH, PUB or PAIR",
                c.socket_type()
            )));
        }
    }
    let format = |opt: &str, p: &Option<PathBuf>| {
        p.as_deref()
            .map(|p| ptmp_formats::Format::of(p, None))
            .transpose()
            .map_err(|e| CliError::usage(format!("--{opt} {e}")))
    };
    let (iformat, oformat) = (format("ifile", &a.ifile)?, format("ofile", &a.ofile)?);
    let input = match (&a.ifile, icfg) {
        (Some(p), _) => Input::File(
            ptmp_formats::open(p, iformat).map_err(|e| CliError::fail(format!("--ifile {e}")))?,
        ),
        (None, Some(c)) => Input::Sock(Box::new(Receiver::new(c)?)),
        (None, None) => unreachable!("clap requires an input"),
    };
    let output = match (&a.ofile, ocfg) {
        (Some(p), _) => Output::File(
            ptmp_formats::create(p, oformat).map_err(|e| CliError::fail(format!("--ofile {e}")))?,
        ),
        (None, Some(c)) => {
            let mut tx = Sender::new(c)?;
            // Every wait for room in slices, so a stop request ends it.
            tx.wait_in_slices();
            Output::Sock(Box::new(tx))
        }
        (None, None) => Output::Text(BufWriter::new(std::io::stdout().lock())),
    };
    Ok((input, output))
}

pub fn run(a: &CatArgs) -> CliResult {
    let (mut input, mut output) = open(a)?;
    std::thread::sleep(a.begin_wait);
    let pb = match (&output, a.number) {
        (Output::Text(_), _) | (_, None) => indicatif::ProgressBar::hidden(),
        (_, Some(n)) => progress(n, "cat"),
    };
    let limit = a.number.unwrap_or(u64::MAX);
    let slice = Duration::from_millis(100);
    let mut rec = Record::default();
    let mut tpset = TPSet::default();
    let mut copied = 0u64;
    let mut not_tpsets = 0u64;
    let mut last = Instant::now();
    let mut failure: Option<CliError> = None;
    // Set when stdout is closed by its reader (`ptmp cat ... | head`): the
    // reader wanted no more, so stop quietly, as a success.
    let mut closed = false;
    while copied < limit && !stopping() {
        let wait = a.timeout.map_or(slice, |t| slice.min(t));
        if let (Input::Sock(rx), Output::Sock(tx)) = (&mut input, &mut output) {
            match relay(rx, tx, wait) {
                Step::Copied => {
                    rx.commit();
                    last = Instant::now();
                    copied += 1;
                    if copied & 1023 == 0 {
                        pb.set_position(copied);
                    }
                    if !a.delayus.is_zero() {
                        std::thread::sleep(a.delayus);
                    }
                }
                Step::Idle if a.timeout.is_some_and(|t| last.elapsed() >= t) => break,
                Step::Idle | Step::Waiting => {}
                Step::Fail(e) => {
                    failure = Some(e);
                    break;
                }
            }
            continue;
        }
        let offset = match &input {
            Input::File(r) => r.position(),
            Input::Sock(_) => None,
        };
        let got = match &mut input {
            Input::File(r) => match r.read_into(&mut rec) {
                Ok(g) => g,
                Err(e) => {
                    failure = Some(CliError::fail(e.to_string()));
                    break;
                }
            },
            Input::Sock(rx) => match rx.recv_raw_into(&mut rec.frames, Some(wait)) {
                Ok(true) => true,
                Ok(false) => {
                    if let Some(why) = rx.refused() {
                        failure = Some(CliError::fail(format!("--isock refused: {why}")));
                        break;
                    }
                    if a.timeout.is_some_and(|t| last.elapsed() >= t) {
                        break;
                    }
                    continue;
                }
                Err(ptmp::Error::Interrupted) => continue,
                Err(e) => {
                    failure = Some(e.into());
                    break;
                }
            },
        };
        if !got {
            break;
        }
        last = Instant::now();
        let r = match &mut output {
            Output::File(w) => w
                .write(&rec.channel, rec.log_time_ns, &rec.frames)
                .map_err(|e| CliError::fail(format!("--ofile {e}"))),
            Output::Sock(tx) => match send_out(tx, &rec.frames, "--osock") {
                Ok(true) => Ok(()),
                Ok(false) => break,
                Err(e) => Err(e),
            },
            Output::Text(out) => {
                match print_text(out, copied, offset, &rec.frames, &mut tpset, a.tps) {
                    Ok(valid) => {
                        not_tpsets += u64::from(!valid);
                        Ok(())
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                        closed = true;
                        break;
                    }
                    Err(e) => Err(e.into()),
                }
            }
        };
        if let Err(e) = r {
            failure = Some(e);
            break;
        }
        input.commit();
        copied += 1;
        if copied & 1023 == 0 {
            pb.set_position(copied);
        }
        if !a.delayus.is_zero() {
            std::thread::sleep(a.delayus);
        }
    }
    pb.finish_and_clear();
    let end = Ending {
        copied,
        not_tpsets,
        closed,
        failure,
    };
    close(output, a.end_wait, end)
}

/// How the copy ended, for [`close`].
struct Ending {
    copied: u64,
    not_tpsets: u64,
    /// Standard output was closed by its reader.
    closed: bool,
    failure: Option<CliError>,
}

/// Deliver what was accepted, wait `end_wait`, close the output and say
/// how the copy ended: the first failure, or a refusal that left what was
/// sent undelivered.
fn close(mut output: Output, end_wait: Duration, end: Ending) -> CliResult {
    let Ending {
        copied,
        not_tpsets,
        closed,
        failure,
    } = end;
    // Deliver what was accepted before reporting any failure.
    let flushed = match &mut output {
        Output::File(w) => w
            .flush()
            .map_err(|e| CliError::fail(format!("--ofile {e}"))),
        Output::Text(_) if closed => Ok(()),
        Output::Text(out) => match out.flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            r => r.map_err(Into::into),
        },
        Output::Sock(_) => Ok(()),
    };
    std::thread::sleep(end_wait);
    // A sender drains its queue here; one refused by its CURVE server
    // delivered nothing there, which is a failure even if all was sent.
    let (refused, finished) = match output {
        Output::Sock(tx) => ((*tx).finish().refused, Ok(0)),
        Output::File(w) => (None, w.finish()),
        Output::Text(_) => (None, Ok(0)),
    };
    let mut summary = format!("ptmp cat: copied {copied} message(s)");
    if not_tpsets > 0 {
        summary += &format!(", {not_tpsets} of them not TPSets");
    }
    tracing::info!("{summary}");
    flushed?;
    finished.map_err(|e| CliError::fail(format!("--ofile {e}")))?;
    if let (None, Some(why)) = (&failure, refused) {
        return Err(CliError::fail(format!(
            "--osock refused: {why}; the {copied} message(s) sent there were not delivered"
        )));
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// What one pass of a socket-to-socket copy did.
enum Step {
    /// A message was passed on.
    Copied,
    /// Nothing came within the slice.
    Idle,
    /// A message waits for room at the output (or a signal came).
    Waiting,
    /// The copy ends with this error.
    Fail(CliError),
}

/// Socket to socket: pass one message on with `Receiver::forward` (between
/// shm:// rings one copy, slot to slot), waiting up to `wait` for input
/// and, the sender waiting in slices, for room. A message that found no
/// room stays with the receiver, which sends it first next time; one
/// still waiting when a stop request comes is lost, as when copying
/// through a buffer.
fn relay(rx: &mut Receiver, tx: &mut Sender, wait: Duration) -> Step {
    match rx.forward(tx, Some(wait)) {
        Ok(true) => Step::Copied,
        Ok(false) if rx.holding() => match tx.refused() {
            Some(why) => Step::Fail(CliError::fail(format!("--osock refused: {why}"))),
            None => Step::Waiting,
        },
        Ok(false) => match rx.refused() {
            Some(why) => Step::Fail(CliError::fail(format!("--isock refused: {why}"))),
            None => Step::Idle,
        },
        Err(ptmp::Error::Interrupted) => Step::Waiting,
        Err(e) => Step::Fail(e.into()),
    }
}

/// Sends one message, waiting for room in slices so that a stop request
/// or a CURVE server's refusal ends the wait (libzmq never retries a
/// refused client, and a PUSH would queue into it, then block for ever).
/// `false` when told to stop before it was sent. A refusal is told as
/// `side`'s.
pub(crate) fn send_out(tx: &mut Sender, frames: &Frames, side: &str) -> CliResult<bool> {
    loop {
        if tx.send_frames_within(frames, Duration::from_millis(100))? {
            return Ok(true);
        }
        if let Some(why) = tx.refused() {
            return Err(CliError::fail(format!("{side} refused: {why}")));
        }
        if stopping() {
            return Ok(false);
        }
    }
}

/// Print one message as text; returns whether it was a valid TPSet.
fn print_text(
    out: &mut impl Write,
    index: u64,
    offset: Option<u64>,
    frames: &Frames,
    t: &mut TPSet,
    tps: bool,
) -> std::io::Result<bool> {
    let at = offset.map(|o| format!(" @{o}")).unwrap_or_default();
    let parts: Vec<&[u8]> = frames.iter().collect();
    match ptmp_data::wire::decode_message(&parts, t) {
        Ok(()) => {
            let mut line = format!(
                "#{index}{at} TPSet count={} detid={} created={} tstart={}",
                t.count, t.detid, t.created, t.tstart
            );
            for (k, v) in [
                ("tspan", t.tspan),
                ("chanbeg", t.chanbeg),
                ("chanend", t.chanend),
                ("totaladc", t.totaladc),
            ] {
                if let Some(v) = v {
                    line += &format!(" {k}={v}");
                }
            }
            writeln!(out, "{line} ntps={}", t.tps.len())?;
            if tps {
                for tp in &t.tps {
                    let mut l = format!("    channel={} tstart={}", tp.channel, tp.tstart);
                    for (k, v) in [
                        ("tspan", tp.tspan),
                        ("adcsum", tp.adcsum),
                        ("adcpeak", tp.adcpeak),
                        ("flags", tp.flags),
                    ] {
                        if let Some(v) = v {
                            l += &format!(" {k}={v}");
                        }
                    }
                    writeln!(out, "{l}")?;
                }
            }
            Ok(true)
        }
        Err(e) => {
            let sizes: Vec<usize> = parts.iter().map(|f| f.len()).collect();
            let heads: Vec<String> = parts
                .iter()
                .map(|f| f.iter().take(16).map(|b| format!("{b:02x}")).collect())
                .collect();
            writeln!(
                out,
                "#{index}{at} not a TPSet ({e}): {} frame(s), sizes {sizes:?}, first bytes [{}]",
                parts.len(),
                heads.join(" ")
            )?;
            Ok(false)
        }
    }
}
