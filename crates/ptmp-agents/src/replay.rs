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

#[derive(Debug, Clone)]
pub struct Config {
    pub input: SocketConfig,
    pub output: SocketConfig,
    pub speed: f64,
    pub rewrite_count: bool,
    pub rewrite_tstart: bool,
}

impl Config {
    pub fn parse(c: &Cfg) -> Result<Config> {
        let speed = c.num_or("speed", 50.0, f64::MIN, f64::MAX)?;
        if speed.is_nan() || speed <= 0.0 {
            return Err(c.err(
                "speed",
                speed.to_string(),
                "must be positive (data ticks per real microsecond)",
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
            rewrite_tstart: c.bool_or("rewrite_tstart", false).or_else(|_| {
                c.int_or("rewrite_tstart", 0, i64::MIN, i64::MAX)
                    .map(|v| v != 0)
            })?,
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
    pub sent: u64,
    pub out_of_order: u64,
}

/// What to do with a set.
pub enum Step {
    /// Send it at this instant (rewritten in place).
    At(Instant),
    /// Drop it: its tstart is before the last sent.
    Drop,
}

impl Pacer {
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
        let us = (set.tstart - ts0) as f64 / self.speed;
        Step::At(t0 + Duration::from_secs_f64(us / 1e6))
    }

    /// Rewrite the set just before sending it at wall time `now_us`.
    pub fn rewrite(&mut self, set: &mut TPSet, now_us: i64) {
        set.created = now_us;
        if self.rewrite_count {
            set.count = self.sent as u32;
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
        self.sent += 1;
    }
}

pub struct ReplayAgent {
    name: String,
    rx: Receiver,
    tx: Sender,
    pacer: Pacer,
}

impl ReplayAgent {
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
                Step::At(t) => t,
            };
            // Sleep in slices so a stop is noticed; once stopping, pacing
            // ends and what is accepted is sent at once (not dropped).
            loop {
                let now = Instant::now();
                if now >= when {
                    if now - when > Duration::from_millis(1) {
                        late += 1;
                    }
                    break;
                }
                if ctl.stopped() {
                    break;
                }
                std::thread::sleep((when - now).min(POLL));
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
                tstart: tstart + 5,
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
}
