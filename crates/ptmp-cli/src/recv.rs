//! `ptmp recv`: PTMP's check_recv, with gap reporting and a summary.

use crate::common::{progress, stopping, CliError, CliResult, SockArgs};
use ptmp::duration as units;
use ptmp::{Receiver, TPSet};
use std::io::Write;
use std::time::{Duration, Instant};

#[derive(Debug, clap::Args)]
pub struct RecvArgs {
    /// Number of TPSets to receive before exiting.
    #[arg(short = 'n', long = "ntpsets", default_value_t = 10000)]
    pub count: u64,
    #[command(flatten)]
    pub sock: SockArgs,
    /// Give up when no message arrives for this long (e.g. 500ms, 2s; a
    /// bare number is milliseconds; -1: never).
    #[arg(
        short = 'T',
        long = "timeout",
        value_name = "DURATION",
        default_value = "1000",
        allow_negative_numbers = true,
        value_parser = units::millis_limit
    )]
    pub timeout: units::Limit,
    /// Print at most this many gap lines (the totals still count every gap).
    #[arg(long, default_value_t = 1000)]
    pub max_gap_lines: u64,
    /// End with a JSON summary as the last line on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Sequence accounting over received counts.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    pub received: u64,
    pub lost: u64,
    pub gaps: u64,
    /// Sets whose count was lower than expected (repeats, reordering, restarts).
    pub backwards: u64,
    pub first: Option<u32>,
    pub last: Option<u32>,
    expected: u64,
}

impl Tally {
    /// Record `count`; returns `Some((expected, count))` when it is not the
    /// expected next count. The first count received is where the stream
    /// starts, whatever it is: senders start at 0 or 1 (C++ PTMP's), and a
    /// receiver that joins a running stream starts in its middle; none of
    /// these is a loss. Gaps after it are counted (and printed as PTMP
    /// does: `1800 - 1805 = -5`, expected 1800, got 1805).
    pub fn note(&mut self, count: u32) -> Option<(u64, u32)> {
        self.received += 1;
        let c = u64::from(count);
        if self.first.is_none() {
            self.first = Some(count);
            self.expected = c;
        }
        self.last = Some(count);
        let expected = self.expected;
        self.expected = c + 1;
        if c == expected {
            return None;
        }
        self.gaps += 1;
        if c > expected {
            self.lost += c - expected;
        } else {
            self.backwards += 1;
        }
        Some((expected, count))
    }
}

pub fn run(a: &RecvArgs) -> CliResult {
    let cfg = a.sock.to_config(None)?;
    // Presence first: the names the socket connects to are resolved (each
    // waited for) before the socket is made, so it can follow them.
    let presence = a.sock.presence(&cfg)?;
    let out = receive(a, &cfg);
    if let Some(p) = &presence {
        p.withdraw_all();
    }
    out
}

/// The line `-v` prints for each set received.
fn write_set(out: &mut impl Write, t: &TPSet) -> std::io::Result<()> {
    writeln!(
        out,
        "count={} detid={} created={} tstart={} ntps={}",
        t.count,
        t.detid,
        t.created,
        t.tstart,
        t.tps.len()
    )
}

fn receive(a: &RecvArgs, cfg: &ptmp::SocketConfig) -> CliResult {
    let mut rx = Receiver::following(cfg)?;
    let pb = progress(a.count, "recv");
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    let mut r = Reception::new();
    let ended_by = r.receive_all(a, &mut rx, &pb, &mut out)?;
    pb.finish_and_clear();
    // Everything counted is shown as committed before the summary.
    rx.commit_now();
    r.summarize(a, &rx, &mut out, ended_by)?;
    out.flush()?;
    if r.tally.received == 0 {
        return Err(CliError::fail("nothing was received"));
    }
    Ok(())
}

/// What receiving keeps from one set to the next.
struct Reception {
    tally: Tally,
    /// The set received into, reused.
    t: TPSet,
    /// Gap lines printed so far.
    gap_lines: u64,
    /// When the first set came.
    start: Option<Instant>,
    /// When the last set came.
    last_at: Instant,
    /// When the last message came, a set or a bad one: --timeout counts
    /// from it.
    last_msg: Instant,
}

impl Reception {
    fn new() -> Reception {
        Reception {
            tally: Tally::default(),
            t: TPSet::default(),
            gap_lines: 0,
            start: None,
            last_at: Instant::now(),
            last_msg: Instant::now(),
        }
    }

    /// Receives from `rx`, printing on `out` and moving `pb`, until
    /// --ntpsets sets have come, a stop is asked or nothing has come for
    /// --timeout; gives what ended it: "count", "signal" or "timeout".
    fn receive_all(
        &mut self,
        a: &RecvArgs,
        rx: &mut Receiver,
        pb: &indicatif::ProgressBar,
        out: &mut impl Write,
    ) -> CliResult<&'static str> {
        let idle = a.timeout.0;
        // Receive in slices of at most 100 ms so a signal is noticed promptly.
        let wait = idle.map_or(Duration::from_millis(100), |d| {
            d.min(Duration::from_millis(100))
        });
        let mut refusals = crate::refusals::RefusalLog::new("ptmp recv");
        while self.tally.received < a.count {
            match rx.recv_into(&mut self.t, Some(wait)) {
                Ok(true) => {
                    self.took(a, out)?;
                    if self.tally.received & 1023 == 0 {
                        pb.set_position(self.tally.received);
                        refusals.note(rx.curve_admissions());
                    }
                    // Counted (and printed): handed on. A receiver with an
                    // identity in its shm rings holds its writer back by what
                    // it has not committed; for any other this does nothing.
                    rx.commit();
                }
                Ok(false) => paused(rx, out, &mut refusals)?,
                Err(ptmp::Error::Wire(e)) => {
                    self.last_msg = Instant::now();
                    let n = rx.errors();
                    if n <= 10 {
                        tracing::warn!("ptmp recv: bad message #{n}: {e}");
                    }
                }
                Err(ptmp::Error::Interrupted) => {}
                Err(e) => return Err(e.into()),
            }
            if stopping() {
                return Ok("signal");
            }
            if idle.is_some_and(|d| self.last_msg.elapsed() >= d) {
                return Ok("timeout");
            }
        }
        Ok("count")
    }

    /// A set came, in `self.t`: notes when and its count, prints a gap
    /// line while fewer than --max-gap-lines have been, and with -v the
    /// set.
    #[inline]
    fn took(&mut self, a: &RecvArgs, out: &mut impl Write) -> std::io::Result<()> {
        let now = Instant::now();
        self.start.get_or_insert(now);
        self.last_at = now;
        self.last_msg = now;
        if let Some((exp, got)) = self.tally.note(self.t.count) {
            if self.gap_lines < a.max_gap_lines {
                writeln!(out, "{exp} - {got} = {}", exp as i64 - i64::from(got))?;
                self.gap_lines += 1;
            }
        }
        if crate::log::verbose() > 0 {
            write_set(out, &self.t)?;
        }
        Ok(())
    }

    /// Writes the end on `out`: the gaps not shown, the summary line
    /// (ended by `ended_by`), a CURVE server's counts from `rx` and, with
    /// --json, the summary as JSON.
    fn summarize(
        &self,
        a: &RecvArgs,
        rx: &Receiver,
        out: &mut impl Write,
        ended_by: &str,
    ) -> CliResult {
        let tally = &self.tally;
        let errors = rx.errors();
        let elapsed = self.start.map_or(0.0, |s| (self.last_at - s).as_secs_f64());
        let rate = if elapsed > 0.0 {
            (tally.received.saturating_sub(1)) as f64 / elapsed
        } else {
            0.0
        };
        if self.gap_lines < tally.gaps {
            writeln!(
                out,
                "... {} more gap(s) not shown",
                tally.gaps - self.gap_lines
            )?;
        }
        let fmt_opt = |x: Option<u32>| x.map_or("-".to_string(), |v| v.to_string());
        writeln!(
            out,
            "received {} of {} TPSets, lost {}, gaps {}, backwards {}, errors {}, first {}, last {}, {:.3} s, {:.0} Hz (ended by {})",
            tally.received,
            a.count,
            tally.lost,
            tally.gaps,
            tally.backwards,
            errors,
            fmt_opt(tally.first),
            fmt_opt(tally.last),
            elapsed,
            rate,
            ended_by
        )?;
        let curve = crate::refusals::write_summary(out, rx.curve_admissions())?;
        if a.json {
            let j = serde_json::json!({
                    "received": tally.received,
                    "expected": a.count,
                    "lost": tally.lost,
                    "gaps": tally.gaps,
                    "backwards": tally.backwards,
                    "errors": errors,
                    "first_count": tally.first,
                    "last_count": tally.last,
                    "elapsed_s": elapsed,
                    "rate_hz": rate,
                    "ended_by": ended_by,
            });
            writeln!(out, "{}", crate::refusals::with_counts(j, curve))?;
        }
        Ok(())
    }
}

/// Nothing came within one wait: what was printed is flushed on `out`
/// (it reaches a pipe when the stream pauses, not only when the buffer
/// fills: nothing per message), new CURVE refusals are told, a server's
/// refusal of `rx` ends the command, and a socket that moved is followed
/// (the old one read first).
fn paused(
    rx: &mut Receiver,
    out: &mut impl Write,
    refusals: &mut crate::refusals::RefusalLog,
) -> CliResult {
    out.flush()?;
    refusals.note(rx.curve_admissions());
    if let Some(why) = rx.refused() {
        return Err(CliError::fail(format!("refused: {why}")));
    }
    rx.follow_moved()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Tally;

    #[test]
    fn gaps_and_losses() {
        let mut t = Tally::default();
        assert_eq!(t.note(1797), None, "a stream may start anywhere");
        assert_eq!(t.note(1798), None);
        assert_eq!(t.note(1800), Some((1799, 1800)));
        assert_eq!(t.note(5), Some((1801, 5)));
        assert_eq!(t.note(6), None);
        assert_eq!((t.received, t.lost, t.gaps, t.backwards), (5, 1, 2, 1));
        assert_eq!((t.first, t.last), (Some(1797), Some(6)));
        // Streams starting at 0 and at 1 (C++ PTMP's senders) lose nothing.
        for from in [0, 1] {
            let mut t = Tally::default();
            for i in from..from + 10 {
                assert_eq!(t.note(i), None);
            }
            assert_eq!((t.lost, t.gaps, t.backwards), (0, 0, 0));
        }
        // A stream starting at 1 with one set missing in its middle.
        let mut t = Tally::default();
        for i in [1, 2, 3, 5, 6] {
            t.note(i);
        }
        assert_eq!((t.lost, t.gaps, t.backwards), (1, 1, 0));
        // A first count of 0 after which the stream goes back to it.
        let mut t = Tally::default();
        assert_eq!(t.note(0), None);
        assert_eq!(t.note(0), Some((1, 0)));
        assert_eq!((t.lost, t.gaps, t.backwards), (0, 1, 1));
    }
}
