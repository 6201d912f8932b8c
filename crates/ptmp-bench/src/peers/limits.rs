//! The machine's physical limits for moving messages between two cores,
//! measured in the same run as the peers: the time to hand one cache line
//! from one core to the other and back, and memcpy's bandwidth.

use crate::error::BenchResult;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// One cache line, alone on its line.
#[repr(align(128))]
struct Line(AtomicU64);

/// Two threads (pinned to `cpus`) pass a counter in one cache line back and
/// forth `n` times: nanoseconds for one hand-over (half a round trip), the
/// least any message between the two cores can take.
pub fn cache_line_handover_ns(n: u64, cpus: (Option<usize>, Option<usize>)) -> BenchResult<f64> {
    let line = Arc::new(Line(AtomicU64::new(0)));
    let other = line.clone();
    let echo = std::thread::spawn(move || -> BenchResult {
        crate::sys::pin(cpus.1)?;
        for i in 0..n {
            while other.0.load(Ordering::Acquire) != 2 * i + 1 {
                std::hint::spin_loop();
            }
            other.0.store(2 * i + 2, Ordering::Release);
        }
        Ok(())
    });
    crate::sys::pin(cpus.0)?;
    let t0 = Instant::now();
    for i in 0..n {
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
    }
}
