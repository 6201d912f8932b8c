//! The machine's physical limits for moving messages between two cores,
//! measured in the same run as what they bound: the time to hand one cache
//! line from one core to the other and back, and memcpy's bandwidth.

use crate::error::BenchResult;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// One cache line, alone on its line.
#[repr(align(128))]
struct Line(AtomicU64);

/// Two threads (pinned to `cpus`) pass a counter in one cache line back and
/// forth `n` times: nanoseconds for one hand-over (half a round trip), the
/// least any message between the two cores can take. Pins the calling
/// thread to `cpus.0` (see [`handover_apart_ns`]).
pub fn cache_line_handover_ns(n: u64, cpus: (Option<usize>, Option<usize>)) -> BenchResult<f64> {
    let line = Arc::new(Line(AtomicU64::new(0)));
    let other = line.clone();
    let echo = std::thread::spawn(move || -> BenchResult {
        crate::sys::pin(cpus.1)?;
        for i in 0..=n {
            while other.0.load(Ordering::Acquire) != 2 * i + 1 {
                std::hint::spin_loop();
            }
            other.0.store(2 * i + 2, Ordering::Release);
        }
        Ok(())
    });
    crate::sys::pin(cpus.0)?;
    // Round trip 0 waits for the echo thread to start and move to its CPU,
    // which can take longer than a short window's whole count: the clock
    // starts after it.
    let mut t0 = Instant::now();
    for i in 0..=n {
        if i == 1 {
            t0 = Instant::now();
        }
        line.0.store(2 * i + 1, Ordering::Release);
        while line.0.load(Ordering::Acquire) != 2 * i + 2 {
            std::hint::spin_loop();
        }
    }
    let ns = t0.elapsed().as_nanos() as f64;
    echo.join()
        .map_err(|_| crate::error::BenchError::fail("hand-over thread panicked"))??;
    Ok(ns / n as f64 / 2.0)
}

/// [`cache_line_handover_ns`] from two threads of its own, leaving the
/// caller's CPUs as they were.
pub fn handover_apart_ns(n: u64, cpus: (Option<usize>, Option<usize>)) -> BenchResult<f64> {
    std::thread::spawn(move || cache_line_handover_ns(n, cpus))
        .join()
        .map_err(|_| crate::error::BenchError::fail("hand-over thread panicked"))?
}

/// The hand-over between two pinned CPUs in a short window (20,000 round
/// trips, a few milliseconds), taken beside a run to say where the host had
/// placed the two CPUs during it; NaN unless `cpus` names two different
/// CPUs.
pub fn handover_window_ns(cpus: (Option<usize>, Option<usize>)) -> BenchResult<f64> {
    match cpus {
        (Some(s), Some(r)) if s != r => handover_apart_ns(20_000, cpus),
        _ => Ok(f64::NAN),
    }
}

/// memcpy of `bytes` from one buffer to another, `reps` times: microseconds
/// for one copy (the best of the reps: the others paid for page faults or
/// a neighbour).
pub fn memcpy_us(bytes: usize, reps: u32) -> f64 {
    let src = vec![0x5au8; bytes];
    let mut dst = vec![0u8; bytes];
    let mut best = f64::INFINITY;
    for _ in 0..reps.max(1) {
        let t0 = Instant::now();
        dst.copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&dst);
        best = best.min(t0.elapsed().as_secs_f64() * 1e6);
    }
    best
}

/// A frame of `bytes` copied into a shared buffer on `cpus.0` and out of
/// it on `cpus.1`, `reps` times: the median microseconds of one copy in and
/// out, the least a copying transport pays for one way of a round trip
/// (the lines copied out come from the other core's cache, not this one's).
pub fn handed_copy_us(
    bytes: usize,
    reps: u32,
    cpus: (Option<usize>, Option<usize>),
) -> BenchResult<f64> {
    use std::sync::Mutex;
    let reps = u64::from(reps.max(1));
    let shared = Arc::new((Mutex::new(vec![0u8; bytes]), Line(AtomicU64::new(0))));
    let other = shared.clone();
    let out = std::thread::spawn(move || -> BenchResult {
        crate::sys::pin(cpus.1)?;
        let mut dst = vec![0u8; bytes];
        for i in 0..reps {
            while other.1 .0.load(Ordering::Acquire) != 2 * i + 1 {
                std::hint::spin_loop();
            }
            let buf = other
                .0
                .lock()
                .map_err(|_| crate::error::BenchError::fail("copy lock"))?;
            dst.copy_from_slice(&buf);
            drop(buf);
            std::hint::black_box(&dst);
            other.1 .0.store(2 * i + 2, Ordering::Release);
        }
        Ok(())
    });
    crate::sys::pin(cpus.0)?;
    let src = vec![0x5au8; bytes];
    let mut took = Vec::new();
    for i in 0..reps {
        let t0 = Instant::now();
        shared
            .0
            .lock()
            .map_err(|_| crate::error::BenchError::fail("copy lock"))?
            .copy_from_slice(std::hint::black_box(&src));
        shared.1 .0.store(2 * i + 1, Ordering::Release);
        while shared.1 .0.load(Ordering::Acquire) != 2 * i + 2 {
            std::hint::spin_loop();
        }
        took.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    out.join()
        .map_err(|_| crate::error::BenchError::fail("copying thread panicked"))??;
    Ok(crate::report::median(took))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-over takes some time and finishes; a copy of 1 MiB takes
    /// longer than a copy of 1 KiB.
    #[test]
    fn limits_are_measured() {
        let ns = cache_line_handover_ns(200, (None, None)).unwrap();
        assert!(ns > 0.0 && ns.is_finite(), "{ns}");
        assert!(memcpy_us(1 << 20, 5) > memcpy_us(1 << 10, 5));
        let handed = handed_copy_us(1 << 20, 5, (None, None)).unwrap();
        assert!(handed > memcpy_us(1 << 10, 5), "{handed}");
    }
}
