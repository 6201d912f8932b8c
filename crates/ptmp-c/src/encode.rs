//! A C set straight to its protobuf bytes, for `ptmp_sender_send`.
//!
//! Going through a Rust `TPSet` first (fill it from the C struct, then
//! encode it) costs a copy of every primitive per message, about a
//! twentieth of a C sender's instructions at ten primitives. This writes
//! the bytes from the C struct directly, in the layout `ptmp-data`'s
//! encoder gives: the four required fields, then the four optional ones
//! (a C set always has them), then each primitive as a length-delimited
//! message with all six fields, all in field-number order. The tests check
//! the two byte for byte on many sets.
//!
//! A primitive's encoding is at most 41 bytes, so its length always fits
//! in one byte: that byte is left open, the primitive written after it,
//! and the length filled in, without measuring the fields first.

use crate::{ptmp_tpset, ptmp_trigprim};

/// Most bytes the set's own fields take: two 32-bit fields (key and up to
/// 5 bytes), two 64-bit ones (key and up to 10), four optional 32-bit ones.
const MAX_HEAD: usize = 2 * 6 + 2 * 11 + 4 * 6;
/// Most bytes one primitive takes with its key and length byte: channel
/// (1 + 5), tstart (1 + 10) and four 32-bit fields (1 + 5 each) make 41,
/// under 128, so the length is one byte.
const MAX_TP: usize = 2 + 6 + 11 + 4 * 6;

/// The key of the set's repeated `tps` field (9, length-delimited).
const TPS_KEY: u8 = 0x4a;

/// Encodes C sets into a buffer it keeps: no allocation once the buffer
/// has grown to the largest set seen.
#[derive(Default)]
pub(crate) struct Encoder {
    // Kept at its largest length: bytes past the current message are
    // left over from earlier ones and never sent.
    buf: Vec<u8>,
}

impl Encoder {
    /// The protobuf encoding of `t` with the primitives `tps`.
    pub(crate) fn encode(&mut self, t: &ptmp_tpset, tps: &[ptmp_trigprim]) -> &[u8] {
        // `tps` is a slice in memory, so this cannot overflow (a
        // primitive is 32 bytes, its encoding at most 43); saturating
        // keeps it so without an argument.
        let max = MAX_HEAD.saturating_add(tps.len().saturating_mul(MAX_TP));
        if self.buf.len() < max {
            self.buf.resize(max, 0);
        }
        let b = &mut self.buf[..max];
        let mut n = 0;
        n = field(b, n, 0x08, u64::from(t.count));
        n = field(b, n, 0x10, u64::from(t.detid));
        n = field(b, n, 0x18, t.created as u64);
        n = field(b, n, 0x20, t.tstart);
        n = field(b, n, 0x28, u64::from(t.tspan));
        n = field(b, n, 0x30, u64::from(t.chanbeg));
        n = field(b, n, 0x38, u64::from(t.chanend));
        n = field(b, n, 0x40, u64::from(t.totaladc));
        for p in tps {
            b[n] = TPS_KEY;
            let start = n + 2;
            let mut m = start;
            m = field(b, m, 0x08, u64::from(p.channel));
            m = field(b, m, 0x10, p.tstart);
            m = field(b, m, 0x18, u64::from(p.tspan));
            m = field(b, m, 0x20, u64::from(p.adcsum));
            m = field(b, m, 0x28, u64::from(p.adcpeak));
            m = field(b, m, 0x30, u64::from(p.flags));
            // At most 41: one byte, no continuation bit.
            b[n + 1] = (m - start) as u8;
            n = m;
        }
        &self.buf[..n]
    }
}

/// Writes a one-byte key and the varint `v` at `at`; returns the position
/// after them.
#[inline(always)]
fn field(b: &mut [u8], at: usize, key: u8, v: u64) -> usize {
    b[at] = key;
    varint(b, at + 1, v)
}

#[inline(always)]
fn varint(b: &mut [u8], mut at: usize, mut v: u64) -> usize {
    while v >= 0x80 {
        b[at] = v as u8 | 0x80;
        v >>= 7;
        at += 1;
    }
    b[at] = v as u8;
    at + 1
}

#[cfg(test)]
mod tests {
    use super::Encoder;
    use crate::{ptmp_tpset, ptmp_trigprim, to_rust};
    use ptmp_core::data::{decode_tpset, encode_tpset};
    use ptmp_core::TPSet;

    /// A small generator (xorshift), so the sets differ run to run only
    /// by the seed given.
    struct Gen(u64);
    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        /// A value of a random bit width, so every varint length comes up,
        /// with the extremes often.
        fn wide(&mut self) -> u64 {
            match self.next() % 8 {
                0 => 0,
                1 => u64::MAX,
                _ => self.next() >> (self.next() % 64),
            }
        }
    }

    fn c_set(g: &mut Gen, tps: &mut Vec<ptmp_trigprim>) -> ptmp_tpset {
        tps.clear();
        for _ in 0..g.next() % 40 {
            tps.push(ptmp_trigprim {
                channel: g.wide() as u32,
                tstart: g.wide(),
                tspan: g.wide() as u32,
                adcsum: g.wide() as u32,
                adcpeak: g.wide() as u32,
                flags: g.wide() as u32,
            });
        }
        ptmp_tpset {
            count: g.wide() as u32,
            detid: g.wide() as u32,
            created: g.wide() as i64,
            tstart: g.wide(),
            tspan: g.wide() as u32,
            chanbeg: g.wide() as u32,
            chanend: g.wide() as u32,
            totaladc: g.wide() as u32,
            tps: tps.as_mut_ptr(),
            ntps: tps.len(),
            tps_capacity: 0,
        }
    }

    #[test]
    fn same_bytes_as_the_rust_encoder_on_many_sets() {
        let mut g = Gen(0x9e37_79b9_7f4a_7c15);
        let mut enc = Encoder::default();
        let (mut tps, mut via, mut want) = (Vec::new(), TPSet::default(), Vec::new());
        for i in 0..20_000 {
            let t = c_set(&mut g, &mut tps);
            to_rust(&t, &tps, &mut via);
            encode_tpset(&via, &mut want);
            let got = enc.encode(&t, &tps);
            assert_eq!(got, &want[..], "set {i}: {via:?}");
            assert_eq!(decode_tpset(got).unwrap(), via, "set {i}");
        }
    }

    #[test]
    fn a_smaller_set_after_a_larger_one_is_only_its_own_bytes() {
        let mut enc = Encoder::default();
        let big = vec![
            ptmp_trigprim {
                channel: u32::MAX,
                tstart: u64::MAX,
                tspan: u32::MAX,
                adcsum: u32::MAX,
                adcpeak: u32::MAX,
                flags: u32::MAX,
            };
            100
        ];
        let mut t = ptmp_tpset {
            count: 1,
            detid: 2,
            created: -1,
            tstart: 3,
            tspan: 4,
            chanbeg: 5,
            chanend: 6,
            totaladc: 7,
            tps: big.as_ptr().cast_mut(),
            ntps: big.len(),
            tps_capacity: 0,
        };
        let n = enc.encode(&t, &big).len();
        // Every primitive at its largest: 41 bytes and its key and length.
        assert!(n > 100 * 43, "{n}");
        t.ntps = 0;
        let mut via = TPSet::default();
        to_rust(&t, &[], &mut via);
        let mut want = Vec::new();
        encode_tpset(&via, &mut want);
        assert_eq!(enc.encode(&t, &[]), &want[..]);
    }
}
