//! `replay` (PTMP's TPReplay): paces a stream by its data time, so a dump
//! file replays at the rate it was recorded.
//!
//! Keys: `input`, `output` (required); `speed` data ticks per real
//! microsecond (default 50, the 50 MHz protoDUNE clock; 2x faster is 100);
//! `rewrite_count` (non-zero: `count` becomes the number of sets sent before,
//! from 0); `rewrite_tstart` (non-zero: data times are shifted so the first
//! set's `tstart` is the wall clock at its send, in ticks at `speed`, and
//! every later set and its TrigPrims by the same amount, making a replay
//! look like live data).
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
pub const MIN_SPEED: f64 = 1e-3;
/// Fastest accepted `speed` (a tera-tick per microsecond).
pub const MAX_SPEED: f64 = 1e12;
/// Fastest `speed` with `rewrite_tstart`: u64::MAX / (microseconds from
/// 1970 to 2100), rounded down.
pub const MAX_REWRITE_SPEED: f64 = 4400.0;

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
    /// Shift data times so the stream looks live.
    pub rewrite_tstart: bool,
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
        let rewrite_tstart = c.bool_or("rewrite_tstart", false).or_else(|_| {
            c.int_or("rewrite_tstart", 0, i64::MIN, i64::MAX)
                .map(|v| v != 0)
        })?;
        // rewrite_tstart makes data times wall-clock microseconds * speed:
        // that product must fit in 64-bit ticks for the next century.
        if rewrite_tstart && speed > MAX_REWRITE_SPEED {
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
    rewrite_tstart: bool,
    anchor: Option<(Instant, u64)>,
    shift: i128,
    last: Option<u64>,
    /// Sets given a send time.
    pub sent: u64,
    /// Sets dropped for a `tstart` before the previous one.
    pub out_of_order: u64,
}

/// What to do with a set.
pub enum Step {
    /// Send it at this instant (rewritten in place).
    At(Instant),
    /// Drop it: its tstart is before the last sent.
    Drop,
    /// Its due time is beyond any representable instant: send it only
    /// when stopping.
    Never,
}

impl Pacer {
    /// A pacer at `speed` ticks per microsecond, rewriting counts and data
    /// times as asked; anchored at the first set it sees.
    pub fn new(speed: f64, rewrite_count: bool, rewrite_tstart: bool) -> Self {
        Pacer {
            speed,
            rewrite_count,
            rewrite_tstart,
            anchor: None,
            shift: 0,
            last: None,
            sent: 0,
            out_of_order: 0,
        }
    }

    /// Decide about `set` arriving at `now`.
    pub fn step(&mut self, set: &TPSet, now: Instant) -> Step {
        if self.last.is_some_and(|l| set.tstart < l) {
            self.out_of_order += 1;
            return Step::Drop;
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
            Some(t) => Step::At(t),
            None => Step::Never,
        }
    }

    /// Rewrite the set just before sending it at wall time `now_us`.
    pub fn rewrite(&mut self, set: &mut TPSet, now_us: i64) {
        set.created = now_us;
        if self.rewrite_count {
            set.count = self.sent as u32; // wraps, as PTMP's 32-bit count
        }
        if self.rewrite_tstart {
            if self.sent == 0 {
                let wall_ticks = (now_us as f64 * self.speed) as i128;
                self.shift = wall_ticks - set.tstart as i128;
            }
            let sh = |t: u64| (t as i128 + self.shift).clamp(0, u64::MAX as i128) as u64;
            set.tstart = sh(set.tstart);
            for tp in &mut set.tps {
                tp.tstart = sh(tp.tstart);
            }
        }
        self.sent = self.sent.saturating_add(1);
    }
}

/// The pacer between its sockets.
pub struct ReplayAgent {
    name: String,
    rx: Receiver,
    tx: Sender,
    pacer: Pacer,
}

impl ReplayAgent {
    /// Open the sockets of `c`.
    pub fn new(name: String, c: &Config) -> Result<Self> {
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
                Step::Drop => continue,
                Step::At(t) => Some(t),
                Step::Never => None,
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
            self.pacer.rewrite(&mut set, ptmp_data::now_us());
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
        let mut p = Pacer::new(50.0, true, false);
        let t0 = Instant::now();
        let Step::At(a) = p.step(&s(9, 1000), t0) else {
            panic!()
        };
        assert_eq!(a, t0);
        // 50_000 ticks at 50 ticks/us = 1000 us later, whatever "now" is.
        let Step::At(b) = p.step(&s(10, 51_000), t0 + Duration::from_micros(3)) else {
            panic!()
        };
        assert_eq!(b - t0, Duration::from_micros(1000));
        // Out of order: dropped and counted.
        assert!(matches!(p.step(&s(11, 50_999), t0), Step::Drop));
        assert_eq!(p.out_of_order, 1);
        let mut x = s(77, 51_000);
        p.rewrite(&mut x, 123);
        assert_eq!((x.count, x.created), (0, 123));
        p.rewrite(&mut x, 124);
        assert_eq!(x.count, 1);
    }

    #[test]
    fn rewrite_tstart_shifts_to_wall_clock_ticks() {
        let mut p = Pacer::new(2.0, false, true);
        let mut a = s(0, 1000);
        p.rewrite(&mut a, 5_000);
        assert_eq!(a.tstart, 10_000);
        assert_eq!(a.tps[0].tstart, 10_005);
        let mut b = s(1, 1600);
        p.rewrite(&mut b, 5_300);
        assert_eq!(b.tstart, 10_600);
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
                        let mut p = Pacer::new(speed, true, speed <= MAX_REWRITE_SPEED);
                        let t0 = Instant::now();
                        let mut x = s(u32::MAX, a);
                        assert!(matches!(p.step(&x, t0), Step::At(t) if t == t0));
                        p.rewrite(&mut x, now_us);
                        let mut y = s(0, b);
                        match p.step(&y, t0) {
                            Step::Drop => assert!(b < a),
                            Step::At(t) => assert!(b >= a && t >= t0),
                            Step::Never => assert!(b > a),
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
