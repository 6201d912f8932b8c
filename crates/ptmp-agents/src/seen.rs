//! Telling sets already delivered from new ones by their sequence number.
//!
//! A graph source numbers its sets in `count` from 0, per `detid`, and a
//! restarted source goes on from where it stopped. Downstream, a node that
//! receives a set whose (`detid`, `count`) it has already seen drops it:
//! that is a set delivered again, by a restarted reader starting over at
//! the oldest message of a ring or by a restarted source reusing numbers it
//! sent just before it died. Numbers that never arrive are counted as
//! missing (a gap), which is how losses on an edge are told.
//!
//! Each stream keeps a window of the last [`WINDOW`] numbers as a bit set,
//! so numbers arriving out of order (a fan-in of round-robin shares) are
//! judged exactly within it; a number older than the window cannot be
//! judged and is let through. Nothing is allocated per message: only the
//! first set of a new `detid` allocates its window.

/// How many numbers behind the newest a stream remembers.
pub(crate) const WINDOW: u64 = 1 << 16;

struct Stream {
    detid: u32,
    /// One past the highest number seen, extended past 32 bits.
    top: u64,
    /// The first number seen: gaps are counted from there on.
    base: u64,
    bits: Box<[u64]>,
    /// Numbers that left the window without arriving.
    missing: u64,
}

impl Stream {
    fn bit(&self, n: u64) -> bool {
        let i = n % WINDOW;
        self.bits[(i / 64) as usize] & (1 << (i % 64)) != 0
    }
    fn set(&mut self, n: u64, on: bool) {
        let i = n % WINDOW;
        let w = &mut self.bits[(i / 64) as usize];
        if on {
            *w |= 1 << (i % 64);
        } else {
            *w &= !(1 << (i % 64));
        }
    }
    /// The 64-bit number nearest to `top` whose low 32 bits are `c`.
    fn extend(&self, c: u32) -> u64 {
        let hi = self.top & !0xffff_ffff;
        let cands = [
            hi.wrapping_sub(1 << 32) | c as u64,
            hi | c as u64,
            hi.wrapping_add(1 << 32) | c as u64,
        ];
        cands
            .into_iter()
            .filter(|&n| {
                n <= self.top.saturating_add(1 << 31) && self.top <= n.saturating_add(1 << 31)
            })
            .min_by_key(|&n| n.abs_diff(self.top))
            .unwrap_or(c as u64)
    }
}

/// What [`Seen::check`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Not seen before (or too old to tell): deliver it.
    New,
    /// Seen before: drop it.
    Again,
}

/// Sets seen so far, per `detid`.
#[derive(Default)]
pub(crate) struct Seen {
    streams: Vec<Stream>,
    /// Sets dropped as seen before.
    pub dropped: u64,
}

impl Seen {
    /// Nothing seen yet.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Judge set (`detid`, `count`) and remember it.
    pub(crate) fn check(&mut self, detid: u32, count: u32) -> Verdict {
        let s = match self.streams.iter().position(|s| s.detid == detid) {
            Some(i) => &mut self.streams[i],
            None => {
                let n = count as u64;
                let mut s = Stream {
                    detid,
                    top: n + 1,
                    base: n,
                    bits: vec![0u64; (WINDOW / 64) as usize].into_boxed_slice(),
                    missing: 0,
                };
                s.set(n, true);
                self.streams.push(s);
                return Verdict::New;
            }
        };
        let n = s.extend(count);
        if n >= s.top {
            // The window moves up to n: numbers leaving it unseen are gaps.
            let leave_to = (n + 1).saturating_sub(WINDOW);
            let leave_from = s.top.saturating_sub(WINDOW).max(s.base);
            let mut m = leave_from;
            while m < leave_to && m < s.top {
                if !s.bit(m) {
                    s.missing += 1;
                }
                m += 1;
            }
            // Numbers skipped past the whole window never entered it.
            s.missing += leave_to.saturating_sub(s.top.max(leave_from));
            // Clear the slots of the numbers now entering the window.
            let clear_from = s.top.max(leave_to);
            if n + 1 - clear_from >= WINDOW {
                s.bits.fill(0);
            } else {
                for m in clear_from..n {
                    s.set(m, false);
                }
            }
            s.set(n, true);
            s.top = n + 1;
            return Verdict::New;
        }
        if n < s.base || n + WINDOW < s.top {
            return Verdict::New;
        }
        if s.bit(n) {
            self.dropped += 1;
            return Verdict::Again;
        }
        s.set(n, true);
        Verdict::New
    }

    /// Numbers not (yet) arrived, over every stream: those that left the
    /// window unseen and the holes inside it.
    pub(crate) fn missing(&self) -> u64 {
        self.streams
            .iter()
            .map(|s| {
                let from = s.top.saturating_sub(WINDOW).max(s.base);
                s.missing + (from..s.top).filter(|&m| !s.bit(m)).count() as u64
            })
            .sum()
    }
}

/// The `count` and `detid` of an encoded TPSet, read from its first bytes
/// when they are the two leading fields (as ptmp and PTMP write them), else
/// by decoding it into `scratch`. `None` when the bytes are not a TPSet.
pub(crate) fn count_and_detid(bytes: &[u8], scratch: &mut ptmp::TPSet) -> Option<(u32, u32)> {
    fn varint(b: &[u8], pos: &mut usize) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let x = *b.get(*pos)?;
            *pos += 1;
            v |= u64::from(x & 0x7f) << shift;
            if x & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    if bytes.first() == Some(&0x08) {
        let mut pos = 1;
        if let Some(c) = varint(bytes, &mut pos) {
            if bytes.get(pos) == Some(&0x10) {
                pos += 1;
                if let Some(d) = varint(bytes, &mut pos) {
                    return Some((c as u32, d as u32));
                }
            }
        }
    }
    ptmp_data::decode_tpset_into(bytes, scratch).ok()?;
    Some((scratch.count, scratch.detid))
}

/// Whether the message in `f` is a TPSet `seen` has seen before (a
/// message that is not a TPSet passes).
pub(crate) fn again(seen: &mut Seen, f: &ptmp::Frames, scratch: &mut ptmp::TPSet) -> bool {
    f.get(1)
        .and_then(|b| count_and_detid(b, scratch))
        .is_some_and(|(count, detid)| seen.check(detid, count) == Verdict::Again)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_dropped_and_gaps_counted() {
        let mut s = Seen::new();
        for c in 0..10 {
            assert_eq!(s.check(1, c), Verdict::New);
        }
        // A restarted reader starting again at 5.
        for c in 5..10 {
            assert_eq!(s.check(1, c), Verdict::Again, "{c}");
        }
        assert_eq!(s.dropped, 5);
        // Another stream is its own.
        assert_eq!(s.check(2, 5), Verdict::New);
        // 10..12 lost, 12 arrives; then 11 late (a fan-in share).
        assert_eq!(s.check(1, 12), Verdict::New);
        assert_eq!(s.missing(), 2);
        assert_eq!(s.check(1, 11), Verdict::New);
        assert_eq!(s.check(1, 11), Verdict::Again);
        assert_eq!(s.missing(), 1);
        // A jump far past the window: everything skipped is missing.
        assert_eq!(s.check(1, 12 + 3 * WINDOW as u32), Verdict::New);
        assert_eq!(s.missing(), 1 + 3 * WINDOW - 1);
        // Too old to judge: let through.
        assert_eq!(s.check(1, 13), Verdict::New);
    }

    #[test]
    fn counts_wrap_past_32_bits() {
        let mut s = Seen::new();
        for c in (u32::MAX - 3)..=u32::MAX {
            assert_eq!(s.check(0, c), Verdict::New);
        }
        for c in 0..3 {
            assert_eq!(s.check(0, c), Verdict::New);
        }
        assert_eq!(s.check(0, u32::MAX), Verdict::Again);
        assert_eq!(s.check(0, 1), Verdict::Again);
        assert_eq!(s.missing(), 0);
    }

    #[test]
    fn count_and_detid_read_fast_or_decoded() {
        let mut buf = Vec::new();
        let set = ptmp::TPSet {
            count: 300_000,
            detid: 77,
            created: 5,
            ..Default::default()
        };
        ptmp_data::encode_tpset(&set, &mut buf);
        let mut scratch = ptmp::TPSet::default();
        assert_eq!(count_and_detid(&buf, &mut scratch), Some((300_000, 77)));
        assert_eq!(count_and_detid(b"\xff\xff", &mut scratch), None);
    }
}
