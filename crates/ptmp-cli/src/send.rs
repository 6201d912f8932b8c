//! `ptmp send`: PTMP's check_send / check_send_rates.

use crate::common::{outln, progress, stopping, CliError, CliResult, SockArgs};
use ptmp::duration as units;
use ptmp::{Delivery, Sender, SocketType, TPSet, TrigPrim, Undelivered};
use ptmp_agents::pace_until;
use std::time::{Duration, Instant};

/// Exit status of `ptmp send` when messages were, or may have been, lost.
pub const EXIT_UNDELIVERED: i32 = 3;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: 0 when every TPSet left for a connected peer (or, \
for PUB and inproc://, when delivery is not tracked: \"undelivered: unknown\"); \
3 when some were not delivered (exactly N when no peer ever connected, \"at most N\" \
when the linger ran out with data queued, when a connection ended while TPSets were still \
being sent (its peer reset it, or went silent and heartbeats dropped it), or, over shm://, \
with a reader the ring keeps not yet past them: one with shm_reader_id must have committed \
them); 2 for bad arguments; 1 for other failures.

On a data clock (--clock 50: PTMP's 50 MHz hardware clock, 50 ticks per microsecond),
each TPSet's tstart is the wall clock in ticks when it is due, and it is sent then: set i
has tstart T0 + i x STEP, where T0 is the clock at start rounded up to a multiple of STEP,
and STEP is --tspan ticks, or the clock's ticks per 1/--rate seconds with --rate. Two
independent senders on the same clock interleave in time order, as a zipper expects.",
    mut_arg("hwm", |a| a.help(
        "High-water mark: how many TPSets may queue on the socket (per peer) before a \
send waits (PUSH) or drops them (PUB); sets both the send and the receive mark (PTMP's \
\"hwm\" sets only the receive mark, which a sender does not use)"
    ))
)]
pub struct SendArgs {
    /// Number of TPSets to send.
    #[arg(short = 'n', long = "ntpsets", default_value_t = 10000)]
    pub count: u64,
    #[command(flatten)]
    pub sock: SockArgs,
    /// TrigPrims in each TPSet.
    #[arg(short = 'N', long = "ntps", default_value_t = 0)]
    pub ntps: u32,
    /// Detector id of the sets.
    #[arg(short = 'd', long, default_value_t = 0)]
    pub detid: u32,
    /// Ticks between the tstart of consecutive sets (each set's tspan).
    #[arg(long, default_value_t = 25)]
    pub tspan: u32,
    /// Stamp tstart from the wall clock at this many ticks per microsecond
    /// (50 for PTMP's 50 MHz clock) and send each set when the clock reaches
    /// it; without --rate, one set per --tspan ticks.
    #[arg(long, value_name = "TICKS_PER_US")]
    pub clock: Option<u32>,
    /// How long to wait after creating the socket before sending (e.g.
    /// 500ms, 2s; a bare number is milliseconds).
    #[arg(short = 'B', long = "begin-wait", value_name = "DURATION", default_value = "0", value_parser = units::millis)]
    pub begin_wait: Duration,
    /// How long to wait after the last send before closing (a bare number
    /// is milliseconds).
    #[arg(short = 'E', long = "end-wait", value_name = "DURATION", default_value = "0", value_parser = units::millis)]
    pub end_wait: Duration,
    /// Send at this many TPSets per second (default: as fast as possible).
    #[arg(short = 'r', long)]
    pub rate: Option<f64>,
    /// PUB only: wait until this many subscribers are subscribed before the
    /// first send (no message lost to slow joiners).
    #[arg(long)]
    pub subscribers: Option<usize>,
    /// Give up waiting for subscribers after this long (a bare number is
    /// milliseconds).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = units::millis)]
    pub subscribers_timeout: Duration,
    /// How long closing waits for queued messages to be delivered (a bare
    /// number is milliseconds; -1: forever).
    #[arg(long, value_name = "DURATION", allow_negative_numbers = true, value_parser = units::millis_limit)]
    pub linger: Option<units::Limit>,
    /// Print a JSON summary as the last line on stdout: sent, elapsed_s,
    /// rate_hz, drain_s, undelivered (a count, or null when unknown) and
    /// undelivered_is ("exact", "at_most" or "unknown"), undelivered_why
    /// (why some may not have been delivered, where known, else null).
    #[arg(long)]
    pub json: bool,
}

/// Fill `t` for message `i` with the given set tstart (TrigPrims' tstarts
/// are within `tspan` of it), reusing its storage. `created` is left to the
/// caller, who stamps it from its own [`ptmp::data::Clock`].
pub fn fill_at(t: &mut TPSet, i: u64, tstart: u64, detid: u32, ntps: u32, tspan: u32) {
    t.count = i as u32;
    t.detid = detid;
    t.tstart = tstart;
    t.tspan = Some(tspan);
    if ntps > 0 {
        t.chanbeg = Some(0);
        t.chanend = Some(ntps - 1);
        t.totaladc = Some((0..ntps).map(|c| 100 + c).sum());
    }
    t.tps.resize(ntps as usize, TrigPrim::default());
    for (c, tp) in t.tps.iter_mut().enumerate() {
        *tp = TrigPrim {
            channel: c as u32,
            tstart: tstart + c as u64 % u64::from(tspan.max(1)),
            tspan: Some(1),
            adcsum: Some(100 + c as u32),
            adcpeak: Some(10),
            flags: Some(0),
        };
    }
}

pub fn run(a: &SendArgs) -> CliResult {
    let cfg = a.sock.to_config(None)?;
    // Presence first: a name bound is announced, and a name connected to
    // is waited for, as the socket is made.
    let presence = a.sock.presence(&cfg)?;
    let out = send(a, cfg);
    // Our names leave now, not at the peers' next liveness check.
    if let Some(p) = &presence {
        p.withdraw_all();
    }
    out
}

/// The socket configuration with what the arguments change in it.
fn configure(a: &SendArgs, mut cfg: ptmp::SocketConfig) -> CliResult<ptmp::SocketConfig> {
    if let Some(k) = a.subscribers {
        if !matches!(cfg.socket_type(), SocketType::Pub | SocketType::XPub) {
            return Err(CliError::usage(format!(
                "--subscribers {k}: only a PUB sender waits for subscribers, this one is {}",
                cfg.socket_type()
            )));
        }
        cfg = cfg
            .to_builder()
            .subscribers(k)
            .subscribers_timeout(a.subscribers_timeout)
            .build()?;
    }
    if let Some(units::Limit(linger)) = a.linger {
        // -1, as in the JSON, waits without limit.
        cfg = cfg.to_builder().linger(linger).build()?;
    }
    if let Some(r) = a.rate {
        if !(r.is_finite() && r > 0.0) {
            return Err(CliError::usage(format!(
                "--rate {r}: must be a positive number"
            )));
        }
    }
    if let Some(h) = a.sock.hwm {
        // A sender's queue is bounded by the send mark; the receive mark
        // alone (all PTMP's "hwm" sets) would leave --hwm doing nothing.
        cfg = cfg.to_builder().sndhwm(h).build()?;
    }
    Ok(cfg)
}

fn send(a: &SendArgs, cfg: ptmp::SocketConfig) -> CliResult {
    let cfg = configure(a, cfg)?;
    let clock = match a.clock {
        None => None,
        Some(c) => Some(Clock::new(c, a.tspan, a.rate)?),
    };
    let mut tx = open(a, &cfg)?;
    let pb = progress(a.count, "send");
    let schedule = Schedule::new(a, clock);
    let sent = send_all(a, &mut tx, &pb, &schedule)?;
    let elapsed = schedule.start.elapsed().as_secs_f64();
    pb.finish_and_clear();
    std::thread::sleep(a.end_wait);
    let end = Ending::close(tx, sent, elapsed);
    end.tell(a.json);
    end.verdict(a.count)
}

/// The sender of `cfg`, ready to send: made (names connected to are
/// resolved last, once the arguments are known to be good: each may be
/// waited for), then --begin-wait slept, then, for a PUB told to, its
/// subscribers waited for.
fn open(a: &SendArgs, cfg: &ptmp::SocketConfig) -> CliResult<Sender> {
    let waits = cfg.subscribers() > 0;
    let mut tx = Sender::following(cfg)?;
    std::thread::sleep(a.begin_wait);
    if waits {
        let n = tx.wait_configured()?;
        tracing::info!("{n} subscriber(s) ready");
    }
    Ok(tx)
}

/// When each set is due and the tstart it carries: on a data clock's
/// grid; else at --rate (or at once) with tstarts --tspan apart.
struct Schedule {
    /// When sending began.
    start: Instant,
    /// The time between sets at --rate.
    period: Option<Duration>,
    /// On a data clock: the clock, where the grid starts, in ticks, and
    /// the Instant it corresponds to (wall-clock ticks are turned into
    /// Instants once).
    grid: Option<(Clock, u64, Instant)>,
    /// Ticks between the tstarts of sets off a data clock.
    tspan: u32,
}

impl Schedule {
    /// The schedule of `a`'s --rate and --tspan, on `clock` if given,
    /// starting now.
    fn new(a: &SendArgs, clock: Option<Clock>) -> Schedule {
        let period = a.rate.map(|r| Duration::from_secs_f64(1.0 / r));
        let start = Instant::now();
        let grid = clock.map(Clock::start);
        Schedule {
            start,
            period,
            grid,
            tspan: a.tspan,
        }
    }

    /// Waits until set `i` is due, and gives its tstart.
    #[inline]
    fn due(&self, i: u64) -> u64 {
        if let Some((c, t0, at)) = self.grid {
            let tstart = t0 + i * c.step;
            pace_until(at + c.after(tstart - t0));
            tstart
        } else {
            if let Some(p) = self.period {
                let due = self.start + p.mul_f64(i as f64);
                pace_until(due);
            }
            i * u64::from(self.tspan)
        }
    }
}

/// Sends sets 0 to --ntpsets - 1 on `tx`, each when `schedule` has it due,
/// filled and stamped in one reused TPSet, until all have left or a stop
/// is asked; gives how many left. Every 1024 sets it looks for a stop,
/// moves `pb` and tells new CURVE refusals.
fn send_all(
    a: &SendArgs,
    tx: &mut Sender,
    pb: &indicatif::ProgressBar,
    schedule: &Schedule,
) -> CliResult<u64> {
    let mut t = TPSet::default();
    let mut sent = 0u64;
    let mut clock = ptmp::data::Clock::new();
    let mut refusals = crate::refusals::RefusalLog::new("ptmp send");
    for i in 0..a.count {
        let tstart = schedule.due(i);
        if i & 1023 == 0 {
            if stopping() {
                break;
            }
            pb.set_position(i);
            refusals.note(tx.curve_admissions());
        }
        fill_at(&mut t, i, tstart, a.detid, a.ntps, a.tspan);
        t.created = clock.now_us();
        if !deliver(tx, &t, &mut refusals, sent)? {
            break;
        }
        sent += 1;
    }
    Ok(sent)
}

/// Sends `t` on `tx`, in bounded waits, so that a PUSH nobody connects to
/// still stops on SIGINT/SIGTERM instead of blocking forever. Between
/// waits it tells new CURVE refusals, fails if a server refused `tx`,
/// says after two seconds what the wait is for (`sent` so far) and
/// follows a name that moved. Gives false when a stop came first.
#[inline]
fn deliver(
    tx: &mut Sender,
    t: &TPSet,
    refusals: &mut crate::refusals::RefusalLog,
    sent: u64,
) -> CliResult<bool> {
    let mut waited = 0u32;
    loop {
        // A signal that ends a wait is seen just below, as any other.
        match tx.send_within(t, Duration::from_millis(100)) {
            Ok(true) => return Ok(true),
            Ok(false) | Err(ptmp::Error::Interrupted) => {}
            Err(e) => return Err(e.into()),
        }
        if stopping() {
            return Ok(false);
        }
        waited += 1;
        refusals.note(tx.curve_admissions());
        if let Some(why) = tx.refused() {
            return Err(CliError::fail(format!("refused: {why}")));
        }
        if waited == 20 {
            // Two seconds without room: say what the wait is for.
            tracing::info!("{}", waiting_for(tx, sent));
        }
        tx.follow_moved()?;
    }
}

/// How a run ended: what was sent, how fast, and what closing the sender
/// reported.
struct Ending {
    sent: u64,
    /// Seconds from the start of sending to the last set.
    elapsed: f64,
    /// Sets a second over `elapsed`.
    rate: f64,
    /// Seconds closing took.
    drain_s: f64,
    report: Delivery,
}

impl Ending {
    /// Closes `tx`, after `sent` sets in `elapsed` seconds: a CURVE
    /// server's summary is logged, then closing waits (up to linger) until
    /// the queue has drained and says what may not have been delivered.
    fn close(mut tx: Sender, sent: u64, elapsed: f64) -> Ending {
        let drain = Instant::now();
        crate::refusals::summarize(tx.curve_admissions());
        let report = tx.finish();
        let drain_s = drain.elapsed().as_secs_f64();
        let rate = if elapsed > 0.0 {
            sent as f64 / elapsed
        } else {
            0.0
        };
        Ending {
            sent,
            elapsed,
            rate,
            drain_s,
            report,
        }
    }

    /// Logs the summary, and with `json` prints it as JSON on stdout.
    fn tell(&self, json: bool) {
        let Ending {
            sent,
            elapsed,
            rate,
            drain_s,
            ..
        } = *self;
        let und = self.report.undelivered;
        tracing::info!(
            "sent {sent} TPSets in {elapsed:.3} s ({rate:.0} Hz), drained in {drain_s:.3} s, undelivered: {und}"
        );
        if json {
            let (n, how) = match und {
                Undelivered::None => (Some(0), "exact"),
                Undelivered::Exactly(n) => (Some(n), "exact"),
                Undelivered::AtMost(n) => (Some(n), "at_most"),
                Undelivered::Unknown => (None, "unknown"),
            };
            let _ = outln!(
                "{}",
                serde_json::json!({"sent": sent, "elapsed_s": elapsed, "rate_hz": rate,
                    "drain_s": drain_s, "undelivered": n, "undelivered_is": how,
                    "undelivered_why": self.report.reason})
            );
        }
    }

    /// The command's end with `count` sets asked for: an error when a
    /// server refused the sender, when nothing was sent, or (exit status
    /// [`EXIT_UNDELIVERED`]) when some sets may not have been delivered.
    fn verdict(&self, count: u64) -> CliResult {
        let (sent, und, report) = (self.sent, self.report.undelivered, &self.report);
        if let Some(why) = &report.refused {
            return Err(CliError::fail(format!(
                "refused: {why}; {und} of {sent} TPSets not delivered"
            )));
        }
        if sent == 0 && count > 0 {
            return Err(CliError::fail(
                "sent nothing: no receiver took a set before the stop",
            ));
        }
        if und.any() {
            let why = match (und, &report.reason) {
                (_, Some(why)) => why.as_str(),
                (Undelivered::Exactly(_), None) => "no peer connected before the linger ran out",
                _ => "still queued when the linger ran out",
            };
            return Err(CliError {
                code: EXIT_UNDELIVERED,
                msg: format!("{und} of {sent} TPSets not delivered: {why}"),
            });
        }
        Ok(())
    }
}

/// What a sender that has had no room for two seconds is waiting for.
fn waiting_for(tx: &Sender, sent: u64) -> String {
    let c = tx.config();
    let eps: Vec<&str> = c.endpoints().map(|(_, e)| e.address.as_str()).collect();
    let who = if sent == 0 {
        "no receiver has taken a set yet"
    } else {
        "the receivers take no more sets"
    };
    format!(
        "waiting: {who} from {} on {} ({} waits for room rather than drop; Ctrl-C stops)",
        c.socket_type(),
        eps.join(", "),
        c.socket_type()
    )
}

/// A data clock: `per_us` ticks per microsecond of wall-clock time, and a
/// grid of `step` ticks between consecutive sets.
#[derive(Debug, Clone, Copy)]
struct Clock {
    per_us: u64,
    step: u64,
}

impl Clock {
    fn new(per_us: u32, tspan: u32, rate: Option<f64>) -> Result<Clock, CliError> {
        if per_us == 0 {
            return Err(CliError::usage(
                "--clock 0: must be at least 1 tick per microsecond",
            ));
        }
        let step = match rate {
            Some(r) => (f64::from(per_us) * 1e6 / r).round(),
            None => f64::from(tspan),
        };
        if step < 1.0 {
            return Err(CliError::usage(format!(
                "--clock {per_us} with {}: sets would be less than one tick apart \
                 (lower --rate, or raise --tspan or --clock)",
                match rate {
                    Some(r) => format!("--rate {r}"),
                    None => format!("--tspan {tspan}"),
                }
            )));
        }
        Ok(Clock {
            per_us: u64::from(per_us),
            step: step as u64,
        })
    }

    /// The first grid tick at or after now, and the Instant it falls due.
    ///
    /// The wall clock is read before the monotonic one: a pause between the
    /// two reads (a preemption) then makes the sets late by the pause, never
    /// early, so no set is sent before its tstart has passed on the wall
    /// clock.
    fn start(self) -> (Clock, u64, Instant) {
        let ticks = (ptmp::data::now_us().max(0) as u64).saturating_mul(self.per_us);
        let now = Instant::now();
        let t0 = ticks.div_ceil(self.step).saturating_mul(self.step);
        (self, t0, now + self.after(t0.saturating_sub(ticks)))
    }

    /// Wall-clock time `ticks` ticks take.
    fn after(self, ticks: u64) -> Duration {
        Duration::from_nanos(ticks.saturating_mul(1000) / self.per_us)
    }
}
