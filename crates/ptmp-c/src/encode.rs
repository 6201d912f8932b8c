//! A C set straight to its protobuf bytes, for `ptmp_sender_send`.
//!
//! Going through a Rust `TPSet` first (fill it from the C struct, then
//! encode it) costs a copy of every primitive per message, about a
//! twentieth of a C sender's instructions at ten primitives. This hands
//! the C struct's fields to `ptmp-data`'s encoder as they are read
//! (`encode_tpset_parts`, the same code `encode_tpset` runs), so the bytes
//! are `ptmp-data`'s by construction: the four required fields, then the
//! four optional ones (a C set always has them), then each primitive as a
//! length-delimited message with all six fields. The tests check them
//! against encoding the converted set, byte for byte, on many sets.

use crate::{ptmp_tpset, ptmp_trigprim};
use ptmp_core::data::codec::{encode_tpset_parts, SetHead};
use ptmp_core::TrigPrim;

/// Encodes C sets into a buffer it keeps: no allocation once the buffer
/// has grown to the largest set seen.
#[derive(Default)]
pub(crate) struct Encoder {
    buf: Vec<u8>,
}

impl Encoder {
    /// The protobuf encoding of `t` with the primitives `tps`.
    pub(crate) fn encode(&mut self, t: &ptmp_tpset, tps: &[ptmp_trigprim]) -> &[u8] {
        let head = SetHead {
            count: t.count,
            detid: t.detid,
            created: t.created,
            tstart: t.tstart,
            tspan: Some(t.tspan),
            chanbeg: Some(t.chanbeg),
            chanend: Some(t.chanend),
            totaladc: Some(t.totaladc),
        };
        // Built field by field as each primitive is written: no copy of
        // the primitives in memory.
        let tp = |p: &ptmp_trigprim| TrigPrim {
            channel: p.channel,
            tstart: p.tstart,
            tspan: Some(p.tspan),
            adcsum: Some(p.adcsum),
            adcpeak: Some(p.adcpeak),
            flags: Some(p.flags),
        };
        encode_tpset_parts(&head, tps, tp, &mut self.buf);
        &self.buf
    }
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
