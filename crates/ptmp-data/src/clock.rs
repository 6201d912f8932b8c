//! A wall clock in microseconds that is cheap enough to read for every
//! message.
//!
//! A TPSet's `created` is the wall-clock time in microseconds when it was
//! made, so a source stamps every set it sends. Through the vDSO,
//! `clock_gettime(CLOCK_REALTIME)` takes about 24 ns on a virtual machine
//! (it fences the time-stamp counter and reads the kernel's time under a
//! sequence lock); at 15 million sets a second that is a third of the
//! sender's budget. Reading the counter alone takes about 10 ns.
//!
//! [`Clock`] reads the processor's time-stamp counter and turns ticks into
//! time with a rate it measures against the system clock. It goes back to
//! the system clock once a millisecond of ticks has passed, so a step or a
//! slew of the system clock shows within a millisecond, and the error of the
//! rate never builds up over more than one millisecond (a few nanoseconds).
//!
//! The counter is used only where the kernel itself trusts it: an x86-64
//! processor whose counter runs at a constant rate through power states
//! (CPUID's invariant-TSC bit) and a kernel whose clock source is `tsc`,
//! which Linux chooses only when the counters of all processors agree.
//! Anywhere else a [`Clock`] reads the system clock every time, as
//! [`now_us`](crate::now_us) does.

use std::sync::OnceLock;

/// Realtime nanoseconds covered by one rate measurement and one stretch of
/// extrapolation.
const SPAN_NS: i64 = 1_000_000;
/// A reading whose two counter reads lie further apart than this many
/// nanoseconds (measured with the rate known so far) was interrupted: it
/// neither moves the anchor nor measures the rate.
const PAIR_NS: u64 = 2_000;
/// The same bound in ticks, before any rate is known: 2 us at 25 GHz, 20 us
/// at 2.5 GHz (a clean reading takes some 100 ticks).
const PAIR_TICKS: u64 = 50_000;
/// A measured rate that differs from the one in use by more than this
/// fraction (1/2^7, under 1 %) is taken only when the next measurement
/// agrees with it: once alone it comes from a step of the system clock,
/// twice in a row from a counter that now runs at another rate (a virtual
/// machine moved to another host).
const RATE_SHIFT: u32 = 7;

/// Wall-clock microseconds since the Unix epoch, read from the time-stamp
/// counter where the kernel trusts it (see the module's documentation).
///
/// One per thread that stamps messages: reading needs `&mut self`.
#[derive(Debug, Clone)]
pub struct Clock {
    tsc: Option<Tsc>,
    last_us: i64,
}

#[derive(Debug, Clone)]
struct Tsc {
    /// Counter and realtime nanoseconds read together at the last return to
    /// the system clock.
    tick: u64,
    ns: i64,
    /// Nanoseconds per tick, fixed point with 32 fractional bits; 0 until
    /// the first half millisecond has been measured.
    mult: u64,
    /// Ticks after `tick` before the next return to the system clock.
    span: u64,
    /// A rate measured once that disagreed with `mult` (0: none).
    doubt: u64,
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock {
    /// A clock on the time-stamp counter where it can be trusted, else on
    /// the system clock.
    pub fn new() -> Self {
        if counter_trusted() {
            // An interrupted first reading only makes the first rate
            // measured less exact, which the next ones put right.
            let (tick, ns, _) = pair(0);
            Clock {
                tsc: Some(Tsc {
                    tick,
                    ns,
                    mult: 0,
                    span: 0,
                    doubt: 0,
                }),
                last_us: i64::MIN,
            }
        } else {
            Self::system()
        }
    }

    /// A clock that reads the system clock every time.
    pub fn system() -> Self {
        Clock {
            tsc: None,
            last_us: i64::MIN,
        }
    }

    /// Whether this clock reads the time-stamp counter.
    pub fn uses_counter(&self) -> bool {
        self.tsc.is_some()
    }

    /// Microseconds since the Unix epoch.
    ///
    /// Never less than the value returned before, unless the system clock
    /// was set back by a millisecond or more: the error of the counter's
    /// rate and the truncation to microseconds can otherwise make a reading
    /// just after a return to the system clock one microsecond early.
    #[inline]
    pub fn now_us(&mut self) -> i64 {
        let us = match &mut self.tsc {
            Some(t) => {
                let d = ticks().wrapping_sub(t.tick);
                if d < t.span {
                    t.ns + ((u128::from(d) * u128::from(t.mult)) >> 32) as i64
                } else {
                    t.resync()
                }
            }
            None => realtime_ns(),
        } / 1000;
        if us >= self.last_us || us <= self.last_us.saturating_sub(SPAN_NS / 1000) {
            self.last_us = us;
        }
        self.last_us
    }
}

impl Tsc {
    /// Read the system clock, measure the rate over the ticks since the
    /// previous reading when they cover half a millisecond or more, and
    /// return the realtime nanoseconds read.
    #[cold]
    fn resync(&mut self) -> i64 {
        let (tick, ns, sound) = pair(self.mult);
        if !sound {
            // The system's time is right for this read; the next read
            // tries again.
            return ns;
        }
        let (dt, dn) = (tick.wrapping_sub(self.tick), ns - self.ns);
        // The counter moved forward (a wrapped difference means it went
        // back, which a trusted counter does not do).
        let counted = dt > 0 && dt < 1 << 62;
        if counted && dn >= SPAN_NS / 2 {
            let mult = u64::try_from(((dn as u128) << 32) / u128::from(dt)).unwrap_or(0);
            let near = |a: u64, b: u64| a.abs_diff(b) <= a >> RATE_SHIFT;
            if self.mult == 0 || near(self.mult, mult) || near(self.doubt, mult) {
                (self.mult, self.doubt) = (mult, 0);
            } else {
                self.doubt = mult;
            }
        } else if counted && self.mult == 0 {
            // Still measuring the first half millisecond from the first
            // reading: every read goes to the system clock.
            return ns;
        }
        if self.mult > 0 {
            self.span = ((SPAN_NS as u128) << 32).div_ceil(u128::from(self.mult)) as u64;
        }
        (self.tick, self.ns) = (tick, ns);
        ns
    }
}

/// The counter and the realtime nanoseconds at one moment: the system clock
/// read between two counter reads, three times, and the midpoint of the
/// closest two taken. Also whether that reading is sound: its counter reads
/// at most [`PAIR_NS`] apart by the rate `mult` (or [`PAIR_TICKS`] while
/// no rate is known). A reading that is not was interrupted.
fn pair(mult: u64) -> (u64, i64, bool) {
    let mut best = (0, 0, u64::MAX);
    for _ in 0..3 {
        let a = ticks();
        let ns = realtime_ns();
        let gap = ticks().wrapping_sub(a);
        if gap < best.2 {
            best = (a.wrapping_add(gap / 2), ns, gap);
        }
    }
    let (tick, ns, gap) = best;
    let sound = if mult == 0 {
        gap <= PAIR_TICKS
    } else {
        ((u128::from(gap) * u128::from(mult)) >> 32) as u64 <= PAIR_NS
    };
    (tick, ns, sound)
}

fn realtime_ns() -> i64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Realtime);
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn ticks() -> u64 {
    // SAFETY: RDTSC exists on every x86-64 processor; it reads the counter
    // and touches no memory.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn ticks() -> u64 {
    0
}

/// Whether the counter runs at a constant rate and the kernel keeps time
/// with it (checked once per process).
fn counter_trusted() -> bool {
    static TRUSTED: OnceLock<bool> = OnceLock::new();
    *TRUSTED.get_or_init(|| {
        invariant_tsc()
            && std::fs::read_to_string(
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            )
            .is_ok_and(|s| s.trim() == "tsc")
    })
}

#[cfg(target_arch = "x86_64")]
fn invariant_tsc() -> bool {
    use core::arch::x86_64::__cpuid;
    // SAFETY: CPUID exists on every x86-64 processor, and leaf 0x8000_0007
    // is read only when leaf 0x8000_0000 says it exists. (The block is for
    // the toolchains before `__cpuid` became a safe function.)
    #[allow(unused_unsafe)]
    unsafe {
        __cpuid(0x8000_0000).eax >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn invariant_tsc() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::now_us;

    /// Microseconds the clock may read ahead of, or behind, the system
    /// clock read just after or just before it. Preemption between two
    /// reads only makes the later one later, so this holds on a busy host.
    const SLACK_US: i64 = 20;

    fn agrees_for(clock: &mut Clock, ms: i64) -> u64 {
        let end = now_us() + ms * 1000;
        let mut n = 0;
        loop {
            let before = now_us();
            let c = clock.now_us();
            let after = now_us();
            assert!(
                c + SLACK_US >= before,
                "clock {c} behind the system's {before}"
            );
            assert!(
                c <= after + SLACK_US,
                "clock {c} ahead of the system's {after}"
            );
            n += 1;
            if after > end {
                return n;
            }
        }
    }

    #[test]
    fn the_counter_clock_agrees_with_the_system_clock() {
        let mut clock = Clock::new();
        // Long enough for the first measurement and tens of returns to the
        // system clock.
        let n = agrees_for(&mut clock, 50);
        assert!(n > 1000, "{n} reads");
        if clock.uses_counter() {
            let t = clock.tsc.as_ref().unwrap();
            assert!(t.mult > 0 && t.span > 0, "never measured a rate: {t:?}");
        }
    }

    #[test]
    fn the_system_clock_is_used_where_the_counter_is_not_trusted() {
        let mut clock = Clock::system();
        assert!(!clock.uses_counter());
        agrees_for(&mut clock, 5);
    }

    #[test]
    fn after_an_idle_spell_the_clock_is_still_right() {
        let mut clock = Clock::new();
        agrees_for(&mut clock, 3);
        std::thread::sleep(std::time::Duration::from_millis(30));
        agrees_for(&mut clock, 3);
    }

    #[test]
    fn readings_never_go_back() {
        let mut clock = Clock::new();
        let mut last = clock.now_us();
        let end = last + 20_000;
        while last < end {
            let now = clock.now_us();
            assert!(now >= last, "{now} after {last}");
            last = now;
        }
    }

    #[test]
    fn a_small_step_back_is_held_and_a_large_one_followed() {
        for mut clock in [Clock::new(), Clock::system()] {
            let now = clock.now_us();
            // As if the last reading had been 0.5 ms ahead (the rate's
            // error, truncation): held there.
            clock.last_us = now + 500;
            assert_eq!(clock.now_us(), now + 500);
            // As if the system clock had been set back by 10 ms since:
            // followed.
            clock.last_us = now + 10_000;
            let got = clock.now_us();
            assert!((now..now + 5_000).contains(&got), "{got} after {now}");
        }
    }

    #[test]
    fn a_step_of_the_rate_is_not_believed() {
        // Simulate a system clock set forward by a second between two
        // returns to it: the rate measured over that interval is refused.
        let mut t = Tsc {
            tick: 0,
            ns: 0,
            mult: 1 << 32,
            span: SPAN_NS as u64,
            doubt: 0,
        };
        let (tick, ns, _) = pair(0);
        t.tick = tick.wrapping_sub(SPAN_NS as u64);
        t.ns = realtime_ns() - SPAN_NS - 1_000_000_000;
        let got = t.resync();
        assert!((got - ns).abs() < 1_000_000, "{got} against {ns}");
        assert_eq!(t.mult, 1 << 32, "the stepped rate was taken");
    }

    #[test]
    fn a_new_rate_measured_twice_is_taken() {
        // A counter that now runs at another rate: the first measurement
        // is doubted, the second agrees with it and is taken.
        let mut clock = Clock::new();
        if !clock.uses_counter() {
            return;
        }
        agrees_for(&mut clock, 2);
        let right = clock.tsc.as_ref().unwrap().mult;
        let t = clock.tsc.as_mut().unwrap();
        (t.mult, t.doubt, t.span) = (right * 3 / 2, 0, 0);
        std::thread::sleep(std::time::Duration::from_millis(2));
        t.resync();
        assert_eq!(t.mult, right * 3 / 2, "taken at once");
        std::thread::sleep(std::time::Duration::from_millis(2));
        t.resync();
        assert!(
            t.mult.abs_diff(right) <= right / 64,
            "{} against {right}",
            t.mult
        );
        agrees_for(&mut clock, 3);
    }

    #[test]
    fn the_counter_is_used_where_the_kernel_keeps_time_with_it() {
        let src = std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .unwrap_or_default();
        if cfg!(target_arch = "x86_64") && src.trim() == "tsc" && invariant_tsc() {
            assert!(Clock::new().uses_counter());
        } else {
            assert!(!Clock::new().uses_counter());
        }
    }
}
