//! TPSet encoding and checked, allocation-free decoding.
//!
//! Encoding uses prost's generated code (required fields are always written,
//! optional ones when set, in field-number order: the same bytes the C++
//! library produces). Decoding is hand-written over the protobuf wire format
//! because it must (a) report a missing required field, as the C++ parser
//! does, and (b) decode into a caller's existing [`TPSet`] reusing its `tps`
//! storage so that the receive hot path allocates nothing per message.
//!
//! Like every protobuf parser, the decoder skips unknown fields, treats a
//! known field seen with an unexpected wire type as unknown, and lets the last
//! occurrence of a scalar field win.

use crate::{TPSet, TrigPrim};
use prost::Message;

/// Why a payload is not a valid `ptmp.data.TPSet`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("payload truncated at byte {offset}: {what} runs past the end")]
    Truncated { offset: usize, what: &'static str },
    #[error("malformed varint at byte {offset}")]
    BadVarint { offset: usize },
    #[error("invalid field key at byte {offset}: field number {field}, wire type {wire_type}")]
    BadKey {
        offset: usize,
        field: u64,
        wire_type: u8,
    },
    #[error("{message} is missing required field '{field}'")]
    MissingRequired {
        message: &'static str,
        field: &'static str,
    },
    #[error("TrigPrim #{index} in the TPSet is missing required field '{field}'")]
    MissingRequiredTp { index: usize, field: &'static str },
}

/// Serialize `tpset` into `buf`, replacing its contents.
pub fn encode_tpset(tpset: &TPSet, buf: &mut Vec<u8>) {
    buf.clear();
    tpset.encode_raw(buf);
}

/// Decode a payload into a fresh [`TPSet`].
pub fn decode_tpset(bytes: &[u8]) -> Result<TPSet, DecodeError> {
    let mut t = TPSet::default();
    decode_tpset_into(bytes, &mut t)?;
    Ok(t)
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Offset of `buf[0]` in the whole payload, for error messages.
    base: usize,
}

const WT_VARINT: u8 = 0;
const WT_I64: u8 = 1;
const WT_LEN: u8 = 2;
const WT_I32: u8 = 5;

impl<'a> Cursor<'a> {
    #[inline]
    fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    #[inline]
    fn varint(&mut self) -> Result<u64, DecodeError> {
        let start = self.pos;
        let mut v: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(DecodeError::Truncated {
                    offset: self.base + start,
                    what: "a varint",
                });
            };
            self.pos += 1;
            if i == 9 && b > 1 {
                return Err(DecodeError::BadVarint {
                    offset: self.base + start,
                });
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(DecodeError::BadVarint {
            offset: self.base + start,
        })
    }

    #[inline]
    fn key(&mut self) -> Result<(u64, u8), DecodeError> {
        let offset = self.base + self.pos;
        let k = self.varint()?;
        let field = k >> 3;
        let wt = (k & 7) as u8;
        if field == 0 || field > 0x1fff_ffff || !matches!(wt, 0 | 1 | 2 | 5) {
            return Err(DecodeError::BadKey {
                offset,
                field,
                wire_type: wt,
            });
        }
        Ok((field, wt))
    }

    #[inline]
    fn take(&mut self, n: u64, what: &'static str) -> Result<Cursor<'a>, DecodeError> {
        let start = self.pos;
        let end = (start as u64).checked_add(n).filter(|&e| e <= self.buf.len() as u64);
        let Some(end) = end else {
            return Err(DecodeError::Truncated {
                offset: self.base + start,
                what,
            });
        };
        self.pos = end as usize;
        Ok(Cursor {
            buf: &self.buf[start..end as usize],
            pos: 0,
            base: self.base + start,
        })
    }

    fn skip(&mut self, wt: u8) -> Result<(), DecodeError> {
        match wt {
            WT_VARINT => self.varint().map(drop),
            WT_I64 => self.take(8, "a fixed64 field").map(drop),
            WT_I32 => self.take(4, "a fixed32 field").map(drop),
            _ => {
                let n = self.varint()?;
                self.take(n, "a length-delimited field").map(drop)
            }
        }
    }
}

/// Decode `bytes` into `out`, reusing `out.tps`'s allocation.
///
/// On error `out` holds unspecified (but valid) contents.
pub fn decode_tpset_into(bytes: &[u8], out: &mut TPSet) -> Result<(), DecodeError> {
    out.tspan = None;
    out.chanbeg = None;
    out.chanend = None;
    out.totaladc = None;
    out.tps.clear();
    let mut seen = 0u8;
    let mut c = Cursor {
        buf: bytes,
        pos: 0,
        base: 0,
    };
    while !c.at_end() {
        let (field, wt) = c.key()?;
        match (field, wt) {
            (1, WT_VARINT) => {
                out.count = c.varint()? as u32;
                seen |= 1;
            }
            (2, WT_VARINT) => {
                out.detid = c.varint()? as u32;
                seen |= 2;
            }
            (3, WT_VARINT) => {
                out.created = c.varint()? as i64;
                seen |= 4;
            }
            (4, WT_VARINT) => {
                out.tstart = c.varint()?;
                seen |= 8;
            }
            (5, WT_VARINT) => out.tspan = Some(c.varint()? as u32),
            (6, WT_VARINT) => out.chanbeg = Some(c.varint()? as u32),
            (7, WT_VARINT) => out.chanend = Some(c.varint()? as u32),
            (8, WT_VARINT) => out.totaladc = Some(c.varint()? as u32),
            (9, WT_LEN) => {
                let n = c.varint()?;
                let mut sub = c.take(n, "a TrigPrim")?;
                let index = out.tps.len();
                out.tps.push(decode_tp(&mut sub, index)?);
            }
            (_, wt) => c.skip(wt)?,
        }
    }
    for (bit, field) in [(1, "count"), (2, "detid"), (4, "created"), (8, "tstart")] {
        if seen & bit == 0 {
            return Err(DecodeError::MissingRequired {
                message: "TPSet",
                field,
            });
        }
    }
    Ok(())
}

#[inline]
fn decode_tp(c: &mut Cursor<'_>, index: usize) -> Result<TrigPrim, DecodeError> {
    let mut tp = TrigPrim::default();
    let mut seen = 0u8;
    while !c.at_end() {
        let (field, wt) = c.key()?;
        match (field, wt) {
            (1, WT_VARINT) => {
                tp.channel = c.varint()? as u32;
                seen |= 1;
            }
            (2, WT_VARINT) => {
                tp.tstart = c.varint()?;
                seen |= 2;
            }
            (3, WT_VARINT) => tp.tspan = Some(c.varint()? as u32),
            (4, WT_VARINT) => tp.adcsum = Some(c.varint()? as u32),
            (5, WT_VARINT) => tp.adcpeak = Some(c.varint()? as u32),
            (6, WT_VARINT) => tp.flags = Some(c.varint()? as u32),
            (_, wt) => c.skip(wt)?,
        }
    }
    if seen & 1 == 0 {
        return Err(DecodeError::MissingRequiredTp {
            index,
            field: "channel",
        });
    }
    if seen & 2 == 0 {
        return Err(DecodeError::MissingRequiredTp {
            index,
            field: "tstart",
        });
    }
    Ok(tp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TPSet {
        TPSet {
            count: 7,
            detid: 42,
            created: 1_700_000_000_000_000,
            tstart: 123_456_789_012,
            tspan: Some(25),
            chanbeg: Some(100),
            chanend: Some(101),
            totaladc: Some(300),
            tps: vec![
                TrigPrim {
                    channel: 100,
                    tstart: 123_456_789_012,
                    tspan: Some(10),
                    adcsum: Some(100),
                    adcpeak: Some(20),
                    flags: Some(0),
                },
                TrigPrim {
                    channel: 101,
                    tstart: 123_456_789_020,
                    ..Default::default()
                },
            ],
        }
    }

    #[test]
    fn round_trip_matches_prost() {
        let t = sample();
        let mut buf = Vec::new();
        encode_tpset(&t, &mut buf);
        assert_eq!(buf, t.encode_to_vec());
        assert_eq!(decode_tpset(&buf).unwrap(), t);
        assert_eq!(TPSet::decode(&buf[..]).unwrap(), t);
    }

    #[test]
    fn decode_into_reuses_and_resets() {
        let t = sample();
        let mut buf = Vec::new();
        encode_tpset(&t, &mut buf);
        let mut out = TPSet::default();
        decode_tpset_into(&buf, &mut out).unwrap();
        let cap = out.tps.capacity();
        let ptr = out.tps.as_ptr();
        let small = TPSet {
            count: 1,
            ..Default::default()
        };
        encode_tpset(&small, &mut buf);
        decode_tpset_into(&buf, &mut out).unwrap();
        assert_eq!(out, small, "optional fields and tps from the previous set must not leak");
        assert_eq!(out.tps.capacity(), cap);
        assert_eq!(out.tps.as_ptr(), ptr);
    }

    #[test]
    fn empty_set_encodes_required_zeros() {
        let mut buf = Vec::new();
        encode_tpset(&TPSet::default(), &mut buf);
        assert_eq!(buf, [0x08, 0, 0x10, 0, 0x18, 0, 0x20, 0]);
    }

    #[test]
    fn missing_required_fields_are_errors() {
        // count, detid, created only: no tstart.
        let e = decode_tpset(&[0x08, 1, 0x10, 2, 0x18, 3]).unwrap_err();
        assert_eq!(
            e,
            DecodeError::MissingRequired {
                message: "TPSet",
                field: "tstart"
            }
        );
        assert!(e.to_string().contains("tstart"));
        // A TrigPrim without a channel.
        let e = decode_tpset(&[0x08, 0, 0x10, 0, 0x18, 0, 0x20, 0, 0x4a, 2, 0x10, 5]).unwrap_err();
        assert_eq!(
            e,
            DecodeError::MissingRequiredTp {
                index: 0,
                field: "channel"
            }
        );
        assert!(decode_tpset(&[]).is_err());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(matches!(
            decode_tpset(&[0x08]),
            Err(DecodeError::Truncated { offset: 1, .. })
        ));
        assert!(matches!(
            decode_tpset(&[0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            Err(DecodeError::BadVarint { offset: 1 })
        ));
        assert!(matches!(
            decode_tpset(&[0x4a, 50, 1]),
            Err(DecodeError::Truncated { offset: 2, .. })
        ));
        assert!(matches!(
            decode_tpset(&[0x0b]),
            Err(DecodeError::BadKey { wire_type: 3, .. })
        ));
        // Every prefix and every single-byte corruption of a valid payload
        // either decodes or errors; never panics.
        let mut buf = Vec::new();
        encode_tpset(&sample(), &mut buf);
        for n in 0..buf.len() {
            let _ = decode_tpset(&buf[..n]);
        }
        for i in 0..buf.len() {
            for b in [0u8, 0x7f, 0x80, 0xff] {
                let mut x = buf.clone();
                x[i] = b;
                let _ = decode_tpset(&x);
            }
        }
    }

    #[test]
    fn unknown_fields_are_skipped() {
        // Required fields plus field 15 (varint), 16 (fixed64), 17 (len), 18 (fixed32).
        let mut b = vec![0x08, 1, 0x10, 2, 0x18, 3, 0x20, 4];
        b.extend([0x78, 0x96, 0x01]);
        b.extend([0x81, 0x01, 1, 2, 3, 4, 5, 6, 7, 8]);
        b.extend([0x8a, 0x01, 2, 0xaa, 0xbb]);
        b.extend([0x95, 0x01, 1, 2, 3, 4]);
        let t = decode_tpset(&b).unwrap();
        assert_eq!((t.count, t.detid, t.created, t.tstart), (1, 2, 3, 4));
    }
}
