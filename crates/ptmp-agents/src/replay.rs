//! `replay` (PTMP's TPReplay): paces a stream by its data time, so a dump
//! file replays at the rate it was recorded.
//!
//! Keys: `input`, `output` (required); `speed` data ticks per real
//! microsecond (default 50, the 50 MHz protoDUNE clock; 2x faster is 100);
//! `rewrite_count` (non-zero: `count` becomes the number of sets sent before,
//! from 0); `rewrite_tstart` (an integer number of microseconds, default 0
//! = off; as PTMP: when non-zero, each set's `tstart` becomes
//! (`created` - `rewrite_tstart`) * `speed`, its send time pushed back by
//! that many microseconds in data ticks, so a replay looks like live data a
//! little in the past; the set's TrigPrims keep their own times). `true` and
//! `false`, which older ptmp configurations used, mean 1 and 0. The
//! arithmetic saturates: a result below 0 is 0, one past the tick range is
//! the largest tick.
//!
//! Pacing is anchored at the first set (as PTMP's later TPReplay): set `k`
//! goes out at `t0 + (tstart_k - tstart_0) / speed` (real time), sleeping
//! until then, or at once when running late. A set whose `tstart` is before
//! the previous one sent is out of order: dropped and counted. `created` is
//! set to the send time.

use crate::cfg::Cfg;
use crate::error::Result;
use crate::{Agent, Ctl, Report, POLL};
use ptmp::{Receiver, Sender, SocketConfig, TPSet};
use std::time::{Duration, Instant};

/// Slowest accepted `speed`: u64::MAX ticks at it is about 585 million
/// years, still a `Duration`.
pub(crate) const MIN_SPEED: f64 = 1e-3;
/// Fastest accepted `speed` (a tera-tick per microsecond).
pub(crate) const MAX_SPEED: f64 = 1e12;
/// Fastest `speed` with `rewrite_tstart`: u64::MAX / (microseconds from
/// 1970 to 2100), rounded down.
pub(crate) const MAX_REWRITE_SPEED: f64 = 4400.0;

#[derive(Debug, Clone)]
/// A validated replay configuration (keys in the module docs).
pub struct Config {
    /// Socket the recorded stream arrives on.
    pub input: SocketConfig,
    /// Socket the paced stream goes out on.
    pub output: SocketConfig,
    /// Data-clock ticks per real microsecond.
    pub speed: f64,
    /// Renumber `count` from 0 in send order.
    pub rewrite_count: bool,
    /// Microseconds subtracted from `created` before it becomes `tstart`
    /// (in ticks at `speed`); 0: `tstart` is left alone.
    pub rewrite_tstart: i64,
}

impl Config {
    /// Validate the keys of a replay's `data`.
    pub fn parse(c: &Cfg) -> Result<Config> {
        let speed = c.num_or("speed", 50.0, f64::MIN, f64::MAX)?;
        if speed.is_nan() || speed <= 0.0 {
            return Err(c.err(
                "speed",
                speed.to_string(),
                "must be positive (data ticks per real microsecond)",
            ));
        }
        // Pacing divides data-time gaps by speed: the largest gap, u64::MAX
        // ticks, must still be a wait a Duration can hold.
        if !(MIN_SPEED..=MAX_SPEED).contains(&speed) {
            return Err(c.err(
                "speed",
                speed.to_string(),
                format!("must be in [{MIN_SPEED}, {MAX_SPEED}] data ticks per real microsecond"),
            ));
        }
        let rewrite_tstart = c
            .bool_or("rewrite_tstart", false)
            .map(i64::from)
            .or_else(|_| c.int_or("rewrite_tstart", 0, i64::MIN, i64::MAX))?;
        // rewrite_tstart makes data times wall-clock microseconds * speed:
        // that product must fit in 64-bit ticks for the next century.
        if rewrite_tstart != 0 && speed > MAX_REWRITE_SPEED {
            return Err(c.err(
                "speed",
                speed.to_string(),
                format!(
                    "with rewrite_tstart, wall-clock microseconds * speed must fit in 64-bit \
                     ticks until the year 2100: speed at most {MAX_REWRITE_SPEED}"
                ),
            ));
        }
        Ok(Config {
            input: c.req_socket("input")?,
            output: c.req_socket("output")?,
            speed,
            rewrite_count: c.bool_or("rewrite_count", false).or_else(|_| {
                c.int_or("rewrite_count", 0, i64::MIN, i64::MAX)
                    .map(|v| v != 0)
            })?,
            rewrite_tstart,
        })
    }
}

/// The pacing core: says when each set is due and rewrites it.
pub struct Pacer {
    speed: f64,
    rewrite_count: bool,
    rewrite_tstart: i64,
    anchor: Option<(Instant, u64)>,
    last: Option<u64>,
    /// Sets given a send time.
    pub sent: u64,
    /// Sets dropped for a `tstart` before the previous one.
    pub out_of_order: u64,
}

/// What to do with a set.
pub enum PaceStep {
    /// Send it at this instant (rewritten in place).
    At(Instant),
    /// Drop it: its tstart is before the last sent.
    Drop,
    /// Its due time is beyond any representable instant: send it only
    /// when stopping.
    Never,
}

impl Pacer {
    /// A pacer at `speed` ticks per microsecond, renumbering counts if
    /// asked and, when `rewrite_tstart` is not 0, setting each `tstart` from
    /// the send time less that many microseconds; anchored at the first set
    /// it sees.
    pub fn new(speed: f64, rewrite_count: bool, rewrite_tstart: i64) -> Self {
        Pacer {
            speed,
            rewrite_count,
            rewrite_tstart,
            anchor: None,
            last: None,
            sent: 0,
            out_of_order: 0,
        }
    }

    /// Decide about `set` arriving at `now`.
    pub fn step(&mut self, set: &TPSet, now: Instant) -> PaceStep {
        if self.last.is_some_and(|l| set.tstart < l) {
            self.out_of_order += 1;
            return PaceStep::Drop;
        }
        self.last = Some(set.tstart);
        let (t0, ts0) = *self.anchor.get_or_insert((now, set.tstart));
        // tstart >= last >= ts0 here. A due time past what an Instant can
        // hold (a data-time jump of centuries) is "later than any stop".
        let us = set.tstart.saturating_sub(ts0) as f64 / self.speed;
        match Duration::try_from_secs_f64(us / 1e6)
            .ok()
            .and_then(|d| t0.checked_add(d))
        {
            Some(t) => PaceStep::At(t),
            None => PaceStep::Never,
        }
    }

    /// Rewrite the set just before sending it at wall time `now_us`.
    pub fn rewrite(&mut self, set: &mut TPSet, now_us: i64) {
        set.created = now_us;
        if self.rewrite_count {
            set.count = self.sent as u32; // wraps, as PTMP's 32-bit count
        }
        if self.rewrite_tstart != 0 {
            // PTMP multiplies the 64-bit difference by its floating speed
            // and stores the product as 64-bit ticks. Here the difference is
            // taken without overflow and the product converted saturating
            // (a float-to-integer `as` clamps to 0..=u64::MAX).
            let us = i128::from(now_us) - i128::from(self.rewrite_tstart);
            set.tstart = (us as f64 * self.speed) as u64;
        }
        self.sent = self.sent.saturating_add(1);
    }
}

/// The pacer between its sockets.
pub(crate) struct ReplayAgent {
    name: String,
    rx: Receiver,
    tx: Sender,
    pacer: Pacer,
}

impl ReplayAgent {
    /// Open the sockets of `c`.
    pub(crate) fn new(name: String, c: &Config) -> Result<Self> {
        let (rx, tx) = crate::open_io(&name, &c.input, &c.output)?;
        Ok(ReplayAgent {
            name,
            rx,
            tx,
            pacer: Pacer::new(c.speed, c.rewrite_count, c.rewrite_tstart),
        })
    }
}

impl Agent for ReplayAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&mut self, ctl: &Ctl) -> Result<Report> {
        let mut clock = ptmp_data::Clock::new();
        let mut set = TPSet::default();
        let (mut nin, mut bad, mut late, mut unsent) = (0u64, 0u64, 0u64, 0u64);
        while !ctl.done(false) {
            match crate::recv_set(&mut self.rx, &mut set, POLL, ctl, &mut bad, &self.name)? {
                crate::Got::Set => {}
                crate::Got::Nothing => continue,
                crate::Got::Done => break,
            }
            nin += 1;
            let when = match self.pacer.step(&set, Instant::now()) {
                PaceStep::Drop => continue,
                PaceStep::At(t) => Some(t),
                PaceStep::Never => None,
            };
            // Sleep in slices so a stop is noticed; once stopping, pacing
            // ends and what is accepted is sent at once (not dropped).
            loop {
                let now = Instant::now();
                if let Some(when) = when.filter(|w| now >= *w) {
                    if now - when > Duration::from_millis(1) {
                        late += 1;
                    }
                    break;
                }
                if ctl.stopped() {
                    break;
                }
                let left = when.map_or(POLL, |w| w.saturating_duration_since(now));
                std::thread::sleep(left.min(POLL));
            }
            self.pacer.rewrite(&mut set, clock.now_us());
            if !crate::send_set(&mut self.tx, &set, ctl, &self.name)? {
                unsent += 1;
            }
        }
        Ok(Report::new(&self.name, "replay")
            .count("in", nin)
            .count("out", self.pacer.sent)
            .count("out_of_order", self.pacer.out_of_order)
            .count("late_over_1ms", late)
            .count("unsent_at_stop", unsent)
            .count("bad_messages", bad))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(count: u32, tstart: u64) -> TPSet {
        TPSet {
            count,
            tstart,
            tps: vec![ptmp::TrigPrim {
                tstart: tstart.saturating_add(5),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn due_times_follow_data_time_over_speed() {
        let mut p = Pacer::new(50.0, true, 0);
        let t0 = Instant::now();
        let PaceStep::At(a) = p.step(&s(9, 1000), t0) else {
            panic!()
        };
        assert_eq!(a, t0);
        // 50_000 ticks at 50 ticks/us = 1000 us later, whatever "now" is.
        let PaceStep::At(b) = p.step(&s(10, 51_000), t0 + Duration::from_micros(3)) else {
            panic!()
        };
        assert_eq!(b - t0, Duration::from_micros(1000));
        // Out of order: dropped and counted.
        assert!(matches!(p.step(&s(11, 50_999), t0), PaceStep::Drop));
        assert_eq!(p.out_of_order, 1);
        let mut x = s(77, 51_000);
        p.rewrite(&mut x, 123);
        assert_eq!((x.count, x.created), (0, 123));
        p.rewrite(&mut x, 124);
        assert_eq!(x.count, 1);
    }

    /// PTMP's arithmetic: tstart = (created - rewrite_tstart) * speed, the
    /// TrigPrims untouched; saturating at both ends of the tick range.
    #[test]
    fn rewrite_tstart_is_created_less_the_value_times_speed() {
        let mut p = Pacer::new(2.0, false, 1000);
        let mut a = s(0, 1000);
        p.rewrite(&mut a, 5_000);
        assert_eq!((a.created, a.tstart), (5_000, 8_000));
        assert_eq!(a.tps[0].tstart, 1005, "TrigPrims keep their times");
        let mut b = s(1, 1600);
        p.rewrite(&mut b, 5_300);
        assert_eq!((b.tstart, b.tps[0].tstart), (8_600, 1605));
        // protoDUNE: 50 ticks per microsecond, one microsecond back.
        let mut p = Pacer::new(50.0, false, 1);
        let now = 1_700_000_000_000_000;
        let mut c = s(0, 7);
        p.rewrite(&mut c, now);
        // In double precision, as PTMP: exact to within the 53-bit mantissa.
        assert_eq!(c.tstart, ((now - 1) as f64 * 50.0) as u64);
        assert!(c.tstart.abs_diff((now as u64 - 1) * 50) < 64);
        // A negative value pushes forward; 0 leaves tstart alone.
        let mut p = Pacer::new(1.5, false, -10);
        let mut d = s(0, 7);
        p.rewrite(&mut d, 100);
        assert_eq!(d.tstart, 165);
        let mut p = Pacer::new(50.0, false, 0);
        let mut e = s(0, 7);
        p.rewrite(&mut e, now);
        assert_eq!(e.tstart, 7);
        // Saturation: before the epoch is 0, past the range the largest tick.
        for (value, now_us, want) in [
            (1, 0, 0),
            (i64::MAX, i64::MIN, 0),
            (i64::MIN, i64::MAX, u64::MAX),
            (-1, i64::MAX, u64::MAX),
        ] {
            let mut p = Pacer::new(MAX_SPEED, false, value);
            let mut x = s(0, 7);
            p.rewrite(&mut x, now_us);
            assert_eq!(x.tstart, want, "{value} {now_us}");
        }
    }

    /// `rewrite_tstart` is read as PTMP's integer; older true/false mean 1/0.
    #[test]
    fn rewrite_tstart_values() {
        let sock = serde_json::json!({"socket": {"type": "PULL", "bind": ["inproc://x"]}});
        let parse = |v: serde_json::Value| {
            let d = serde_json::json!({"input": sock, "output": sock, "rewrite_tstart": v});
            Config::parse(&Cfg::new("r", &d).unwrap())
                .unwrap()
                .rewrite_tstart
        };
        assert_eq!(parse(1.into()), 1);
        assert_eq!(parse(250_000.into()), 250_000);
        assert_eq!(parse(true.into()), 1);
        assert_eq!(parse(false.into()), 0);
        assert_eq!(parse(0.into()), 0);
    }

    /// Extreme tstarts and speeds: no panic, due times never before the
    /// anchor, order enforced; a jump beyond any instant is `Never`.
    #[test]
    fn extreme_times_and_speeds_never_panic() {
        let ticks = [0, 1, 1 << 32, 1 << 63, u64::MAX - 1, u64::MAX];
        let mut cases = 0;
        for speed in [MIN_SPEED, 1e-3, 1.0, 50.0, MAX_REWRITE_SPEED, MAX_SPEED] {
            for &a in &ticks {
                for &b in &ticks {
                    for now_us in [i64::MIN, -1, 0, 1_700_000_000_000_000, i64::MAX] {
                        cases += 1;
                        let mut p = Pacer::new(speed, true, i64::from(speed <= MAX_REWRITE_SPEED));
                        let t0 = Instant::now();
                        let mut x = s(u32::MAX, a);
                        assert!(matches!(p.step(&x, t0), PaceStep::At(t) if t == t0));
                        p.rewrite(&mut x, now_us);
                        let mut y = s(0, b);
                        match p.step(&y, t0) {
                            PaceStep::Drop => assert!(b < a),
                            PaceStep::At(t) => assert!(b >= a && t >= t0),
                            PaceStep::Never => assert!(b > a),
                        }
                        p.rewrite(&mut y, now_us);
                        assert_eq!((x.count, y.count), (0, 1));
                    }
                }
            }
        }
        assert_eq!(cases, 6 * 36 * 5);
    }

    #[test]
    fn speeds_out_of_range_are_refused_naming_key_and_value() {
        let sock = serde_json::json!({"socket": {"type": "PULL", "bind": ["inproc://x"]}});
        let parse = |speed: f64, rewrite: bool| {
            let d = serde_json::json!({"input": sock, "output": sock, "speed": speed,
                "rewrite_tstart": rewrite});
            let c = Cfg::new("r", &d).unwrap();
            Config::parse(&c).map(|_| ()).map_err(|e| e.to_string())
        };
        for (speed, rewrite) in [
            (f64::MIN_POSITIVE, false),
            (1e-300, false),
            (0.0009, false),
            (1e13, false),
            (f64::MAX, false),
            (4401.0, true),
            (1e12, true),
        ] {
            let e = parse(speed, rewrite).unwrap_err();
            assert!(e.starts_with(&format!("agent r: speed = {speed}: ")), "{e}");
        }
        for (speed, rewrite) in [(MIN_SPEED, false), (MAX_SPEED, false), (4400.0, true)] {
            parse(speed, rewrite).unwrap();
        }
    }
}
