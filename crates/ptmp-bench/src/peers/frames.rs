//! Round trips of large frames (a camera's 6.2 MB image) over two of
//! ptmp's rings, between two pinned threads, both busy-polling: zero-copy
//! (the writer fills only the frame's first 8 bytes in its loan, the reader
//! reads them from its view; the rest of the frame is left as it is in the
//! slot) and copying (the whole frame copied into the loan, with
//! `Loan::copy_in`, and out of the view, at both ends: four copies per
//! round trip).

use crate::error::{BenchError, BenchResult};
use hdrhistogram::Histogram;
use ptmp_shm::{ChannelConfig, Policy, Reader, StartAt, Writer};
use std::time::{Duration, Instant};

/// How a frame crosses the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Only the frame's first 8 bytes are written and read.
    ZeroCopy,
    /// The whole frame is copied in and out.
    Copying,
}

/// Longest a side waits for the other's frame before the run fails.
const PATIENCE: Duration = Duration::from_secs(5);

/// Both rings of a run, removed when the run ends, however it ends.
struct Rings([String; 2]);

impl Drop for Rings {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = ptmp_shm::remove(n);
        }
    }
}

fn shm(e: ptmp_shm::ShmError) -> BenchError {
    BenchError::fail(e.to_string())
}

/// One leg's ends: a lossless two-slot ring of `bytes`-byte frames.
fn leg(name: &str, bytes: usize) -> BenchResult<(Writer, Reader)> {
    let cfg = ChannelConfig {
        slots: 2,
        max_message: bytes,
        policy: Policy::Block,
    };
    let w = Writer::create(name, cfg).map_err(shm)?;
    let mut r = Reader::attach(name, StartAt::Next).map_err(shm)?;
    r.set_spin(u32::MAX);
    Ok((w, r))
}

/// Send frame number `i` of `src.len()` bytes.
fn send(w: &mut Writer, i: u64, src: &[u8], mode: Mode) -> BenchResult {
    let mut loan = w.loan(src.len()).map_err(shm)?;
    if mode == Mode::Copying {
        loan.copy_in(src);
    }
    loan[..8].copy_from_slice(&i.to_le_bytes());
    loan.commit();
    Ok(())
}

/// Receive the next frame: its number, the frame copied into `dst` when
/// copying.
fn recv(r: &mut Reader, dst: &mut [u8], mode: Mode) -> BenchResult<u64> {
    loop {
        let v = r
            .view_checked(Some(PATIENCE))
            .map_err(shm)?
            .ok_or_else(|| BenchError::fail("a frame did not come within 5 s"))?;
        let b = v.bytes();
        if b.len() != dst.len() {
            return Err(BenchError::fail(format!(
                "a frame of {} bytes, not {}",
                b.len(),
                dst.len()
            )));
        }
        let i = u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
        if mode == Mode::Copying {
            dst.copy_from_slice(b);
        }
        // A frame overwritten while it was read is passed over and the next
        // one taken, so the round trip then fails by its number ("sent frame
        // i, got j back"); a lossless ring with one frame in flight never
        // overwrites one.
        if v.valid() {
            return Ok(i);
        }
    }
}

/// `count` round trips of `bytes`-byte frames after `warmup` more, the
/// echo on `cpus.1`: p50 and p99.9 of the round trip, microseconds.
pub fn round_trip(
    bytes: usize,
    count: u64,
    warmup: u64,
    mode: Mode,
    cpus: (Option<usize>, Option<usize>),
) -> BenchResult<(f64, f64)> {
    if bytes < 8 {
        return Err(BenchError::usage("frames carry at least 8 bytes"));
    }
    let tag = format!("bench-frames-{}", std::process::id());
    let rings = Rings([format!("{tag}-go"), format!("{tag}-back")]);
    let (mut go_w, go_r) = leg(&rings.0[0], bytes)?;
    let (back_w, mut back_r) = leg(&rings.0[1], bytes)?;
    let total = count + warmup;
    let echo = std::thread::spawn(move || -> BenchResult {
        crate::sys::pin(cpus.1)?;
        let (mut r, mut w) = (go_r, back_w);
        let mut buf = vec![0u8; bytes];
        for _ in 0..total {
            let i = recv(&mut r, &mut buf, mode)?;
            send(&mut w, i, &buf, mode)?;
        }
        Ok(())
    });
    crate::sys::pin(cpus.0)?;
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)
        .map_err(|e| BenchError::fail(format!("histogram: {e}")))?;
    let src = vec![0x5au8; bytes];
    let mut dst = vec![0u8; bytes];
    let mut result = Ok(());
    for i in 0..total {
        let t0 = Instant::now();
        let back = send(&mut go_w, i, &src, mode).and_then(|()| recv(&mut back_r, &mut dst, mode));
        let ns = t0.elapsed().as_nanos() as u64;
        match back {
            // A copied frame comes back whole: its last byte too.
            Ok(_) if mode == Mode::Copying && dst.last() != src.last() => {
                result = Err(BenchError::fail(format!("frame {i} came back altered")));
                break;
            }
            Ok(j) if j == i => {}
            Ok(j) => {
                result = Err(BenchError::fail(format!("sent frame {i}, got {j} back")));
                break;
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
        if i >= warmup {
            hist.record(ns.max(1))
                .map_err(|e| BenchError::fail(format!("histogram: {e}")))?;
        }
    }
    // Ends the echo's wait if this side stopped early.
    drop(go_w);
    let joined = echo
        .join()
        .map_err(|_| BenchError::fail("echo thread panicked"))?;
    result?;
    joined?;
    let q = |p: f64| hist.value_at_quantile(p) as f64 / 1000.0;
    Ok((q(0.5), q(0.999)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both modes bring every frame back, in order and (copying) whole.
    #[test]
    fn frames_come_back() {
        let bytes = 4 << 20;
        for (mode, n) in [(Mode::ZeroCopy, 200), (Mode::Copying, 20)] {
            let (p50, p999) = round_trip(bytes, n, 2, mode, (None, None)).unwrap();
            assert!(p50 > 0.0 && p50 <= p999, "{mode:?}: {p50} {p999}");
        }
    }

    #[test]
    fn tiny_frames_are_refused() {
        assert!(round_trip(4, 1, 0, Mode::ZeroCopy, (None, None)).is_err());
    }
}
