//! TPSet encoding and checked, allocation-free decoding.
//!
//! Encoding is hand-written, one pass into a reused buffer, and gives the
//! bytes prost's generated code gives (required fields are always written,
//! optional ones when set, in field-number order: the same bytes the C++
//! library produces). Decoding is hand-written over the protobuf wire format
//! because it must (a) report a missing required field, as the C++ parser
//! does, and (b) decode into a caller's existing [`TPSet`] reusing its `tps`
//! storage so that the receive hot path allocates nothing per message.
//!
//! Like every protobuf parser, the decoder skips unknown fields, treats a
//! known field seen with an unexpected wire type as unknown, and lets the last
//! occurrence of a scalar field win. It accepts what the reference protobuf
//! implementations (C++ and upb) accept for this schema, and refuses what
//! they refuse:
//!
//! * unknown fields of every wire type are skipped: varint, 64-bit,
//!   length-delimited, 32-bit, and groups (start-group .. end-group, nested,
//!   each end tag matching its start tag's field number);
//! * a varint value takes up to 10 bytes and keeps its low 64 bits (the 10th
//!   byte's bits past bit 63 are dropped); a 32-bit field keeps the low 32
//!   bits of the value; an 11-byte varint is refused;
//! * a field key takes at most 5 bytes and fits 32 bits; a length prefix
//!   takes at most 5 bytes and is below 2^31;
//! * groups and messages nest at most [`MAX_DEPTH`] deep (the TPSet itself is
//!   level 0, a TrigPrim level 1);
//! * refused: truncated data, wire types 6 and 7, field number 0, an
//!   end-group tag outside a group or for another field, a missing required
//!   field.

use crate::{TPSet, TrigPrim};
use std::borrow::Borrow;

/// Why a payload is not a valid `ptmp.data.TPSet`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// A value, key, length-delimited field or group runs past the end of the
    /// payload.
    #[error("payload truncated at byte {offset}: {what} runs past the end")]
    Truncated {
        /// Byte offset in the payload where the cut-off item (or the key of the
        /// cut-off group) starts.
        offset: usize,
        /// What was being read there, e.g. "a varint" or "a TrigPrim".
        what: &'static str,
    },
    /// A varint longer than protobuf's 10-byte maximum.
    #[error("malformed varint at byte {offset}")]
    BadVarint {
        /// Byte offset in the payload where the varint starts.
        offset: usize,
    },
    /// A field key with field number 0 or wire type 6 or 7, none of which
    /// protobuf defines.
    #[error("invalid field key at byte {offset}: field number {field}, wire type {wire_type}")]
    BadKey {
        /// Byte offset in the payload where the key starts.
        offset: usize,
        /// The field number the key carries.
        field: u64,
        /// The wire type the key carries (its low 3 bits).
        wire_type: u8,
    },
    /// A field key or length prefix written in more than 5 bytes, or a field
    /// key above 32 bits: the reference parsers refuse both even though a
    /// varint may take 10 bytes.
    #[error("over-long {what} at byte {offset}: protobuf allows at most 5 bytes")]
    TooLong {
        /// Byte offset in the payload where the varint starts.
        offset: usize,
        /// Which of the two it was: "field key" or "length prefix".
        what: &'static str,
    },
    /// A length prefix of 2^31 bytes or more.
    #[error("length {len} at byte {offset} is beyond protobuf's 2 GiB limit")]
    BadLength {
        /// Byte offset in the payload where the length prefix starts.
        offset: usize,
        /// The length it declares, in bytes.
        len: u64,
    },
    /// An end-group tag with no group open.
    #[error("end-group tag for field {field} at byte {offset} closes no group")]
    StrayEndGroup {
        /// Byte offset in the payload of the end-group tag.
        offset: usize,
        /// The field number in the end-group tag.
        field: u64,
    },
    /// An end-group tag whose field number differs from the open group's.
    #[error("end-group tag for field {field} at byte {offset} closes the group of field {open}")]
    EndGroupMismatch {
        /// Byte offset in the payload of the end-group tag.
        offset: usize,
        /// The field number in the end-group tag.
        field: u64,
        /// The field number of the innermost open group.
        open: u64,
    },
    /// Groups and messages nested deeper than [`MAX_DEPTH`], refused so a
    /// hostile payload cannot exhaust the stack.
    #[error("groups and messages nested more than {MAX_DEPTH} deep at byte {offset}")]
    TooDeep {
        /// Byte offset in the payload where the level too many starts.
        offset: usize,
    },
    /// The TPSet lacks one of its required fields (count, detid, created,
    /// tstart).
    #[error("{message} is missing required field '{field}'")]
    MissingRequired {
        /// The protobuf message name ("TPSet").
        message: &'static str,
        /// The name of the first missing field, as in the .proto.
        field: &'static str,
    },
    /// A TrigPrim inside the set lacks a required field (channel or tstart).
    #[error("TrigPrim #{index} in the TPSet is missing required field '{field}'")]
    MissingRequiredTp {
        /// Zero-based position of the TrigPrim in the set's `tps`.
        index: usize,
        /// The name of the first missing field, as in the .proto.
        field: &'static str,
    },
}

/// Serialize `tpset` into `buf`, replacing its contents.
///
/// Gives the bytes prost's generated `encode` gives (the tests check the two
/// byte for byte on arbitrary sets): required fields always, optional ones
/// when set, in field-number order, as the C++ library writes them.
///
/// It is one pass over the set. `buf` is grown once to the most bytes a set
/// of this many TrigPrims can take, so a caller that keeps `buf` between
/// messages allocates nothing once it has grown; then every byte is written
/// through a pointer, without a bounds check per byte. A TrigPrim's fields
/// take at most 41 bytes, under 128, so its length prefix is always one
/// byte: that byte is left open, the TrigPrim written after it, and the
/// length filled in, instead of measuring the fields first.
pub fn encode_tpset(tpset: &TPSet, buf: &mut Vec<u8>) {
    encode_tpset_parts(&SetHead::of(tpset), &tpset.tps, |t| t, buf);
}

/// The most bytes [`encode_tpset`] can write for a set of `ntps`
/// TrigPrims, whatever their values; `None` past `usize`.
pub fn tpset_max_len(ntps: usize) -> Option<usize> {
    ntps.checked_mul(MAX_TP)?.checked_add(MAX_SET_HEAD)
}

/// Serialize `tpset` at the start of `out` (a slot of shared memory being
/// written, say) and return how many bytes it took: the bytes
/// [`encode_tpset`] gives. `None`, and nothing written, when `out` is
/// shorter than [`tpset_max_len`] of the set's TrigPrims, even if the set
/// itself would have fitted: the encoder writes without a bounds check per
/// byte, trusting that bound.
pub fn encode_tpset_into(tpset: &TPSet, out: &mut [u8]) -> Option<usize> {
    let max = tpset_max_len(tpset.tps.len())?;
    if out.len() < max {
        return None;
    }
    // SAFETY: `out` holds at least `max` bytes, the bound `write_set` needs
    // for a set of this many TrigPrims.
    Some(unsafe { write_set(out.as_mut_ptr(), &SetHead::of(tpset), &tpset.tps, |t| t) })
}

/// A TPSet's own fields, all but its TrigPrims, for [`encode_tpset_parts`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SetHead {
    /// As [`TPSet::count`].
    pub count: u32,
    /// As [`TPSet::detid`].
    pub detid: u32,
    /// As [`TPSet::created`].
    pub created: i64,
    /// As [`TPSet::tstart`].
    pub tstart: u64,
    /// As [`TPSet::tspan`]; `None` leaves the field out.
    pub tspan: Option<u32>,
    /// As [`TPSet::chanbeg`]; `None` leaves the field out.
    pub chanbeg: Option<u32>,
    /// As [`TPSet::chanend`]; `None` leaves the field out.
    pub chanend: Option<u32>,
    /// As [`TPSet::totaladc`]; `None` leaves the field out.
    pub totaladc: Option<u32>,
}

impl SetHead {
    /// The own fields of `tpset`.
    #[inline(always)]
    fn of(tpset: &TPSet) -> SetHead {
        SetHead {
            count: tpset.count,
            detid: tpset.detid,
            created: tpset.created,
            tstart: tpset.tstart,
            tspan: tpset.tspan,
            chanbeg: tpset.chanbeg,
            chanend: tpset.chanend,
            totaladc: tpset.totaladc,
        }
    }
}

/// Serialize a TPSet given as its own fields and a slice of TrigPrims in
/// any form, each turned into a [`TrigPrim`] (or a reference to one) by
/// `tp` as it is written:
/// the bytes [`encode_tpset`] gives for the same set, for callers that keep
/// sets in their own structs (the C API) and would otherwise copy them into
/// a [`TPSet`] first. `tp` is inlined, so a `TrigPrim` built from a struct's
/// fields costs no copy in memory.
#[inline]
pub fn encode_tpset_parts<'a, T, P: Borrow<TrigPrim>>(
    head: &SetHead,
    tps: &'a [T],
    tp: impl Fn(&'a T) -> P,
    buf: &mut Vec<u8>,
) {
    buf.clear();
    // A set that large could not be held in memory: refused as `Vec` does.
    let max = tpset_max_len(tps.len()).expect("capacity overflow");
    buf.reserve(max);
    // SAFETY: `buf` has room for `max` bytes from its start (reserved
    // above, and empty); `write_set` writes at most that many and all the
    // bytes up to the length it returns.
    unsafe {
        let n = write_set(buf.as_mut_ptr(), head, tps, tp);
        buf.set_len(n);
    }
}

/// Write the set's fields and TrigPrims from `start`; return how many bytes
/// were written.
///
/// # Safety
/// `start` is valid for writing [`tpset_max_len`]`(tps.len())` bytes.
/// `MAX_SET_HEAD` bounds what the eight fields of the set write (the
/// largest key and varint of each, added up) and `MAX_TP` bounds each
/// TrigPrim with its key and length byte, so no write below reaches past
/// that: each helper writes at most its key and a varint of its value's
/// width (`put` documents it) and returns the pointer just past what it
/// wrote.
#[inline(always)]
unsafe fn write_set<'a, T, P: Borrow<TrigPrim>>(
    start: *mut u8,
    head: &SetHead,
    tps: &'a [T],
    tp: impl Fn(&'a T) -> P,
) -> usize {
    // SAFETY: as the function's contract says.
    unsafe {
        let mut p = start;
        p = put(p, 0x08, u64::from(head.count));
        p = put(p, 0x10, u64::from(head.detid));
        p = put(p, 0x18, head.created as u64);
        p = put(p, 0x20, head.tstart);
        p = put_opt(p, 0x28, head.tspan);
        p = put_opt(p, 0x30, head.chanbeg);
        p = put_opt(p, 0x38, head.chanend);
        p = put_opt(p, 0x40, head.totaladc);
        for t in tps {
            let tp = tp(t);
            let tp = tp.borrow();
            p.write(TPS_KEY);
            let body = p.add(2);
            let mut q = body;
            q = put(q, 0x08, u64::from(tp.channel));
            q = put(q, 0x10, tp.tstart);
            q = put_opt(q, 0x18, tp.tspan);
            q = put_opt(q, 0x20, tp.adcsum);
            q = put_opt(q, 0x28, tp.adcpeak);
            q = put_opt(q, 0x30, tp.flags);
            // At most `MAX_TP_BODY` (< 128) bytes: a one-byte varint.
            p.add(1).write(q.offset_from(body) as u8);
            p = q;
        }
        p.offset_from(start) as usize
    }
}

/// The key of the set's repeated `tps` field (9, length-delimited).
const TPS_KEY: u8 = 0x4a;

/// Largest encoding of a TPSet without its TrigPrims: count and detid
/// (key + 5-byte varint), created and tstart (key + 10), four optional u32.
const MAX_SET_HEAD: usize = 2 * 6 + 2 * 11 + 4 * 6;
/// Largest encoding of one TrigPrim's fields: channel (1 + 5), tstart
/// (1 + 10), four optional u32 (1 + 5 each) = 41 bytes.
const MAX_TP_BODY: usize = 6 + 11 + 4 * 6;
/// Largest encoding of one TrigPrim with its key and length byte.
const MAX_TP: usize = 2 + MAX_TP_BODY;
// The one-byte length prefix depends on it.
const _: () = assert!(MAX_TP_BODY < 128);

/// Write the one-byte field key `key` (field numbers below 16, wire type
/// varint) and the varint `v` at `p`; return the pointer past them.
///
/// # Safety
/// `p` is valid for writing `1 + varint_len(v)` bytes: at most 6 when `v`
/// fits 32 bits, 11 otherwise.
#[inline(always)]
unsafe fn put(p: *mut u8, key: u8, v: u64) -> *mut u8 {
    // SAFETY: the caller gives room for the key and the varint.
    unsafe {
        p.write(key);
        varint(p.add(1), v)
    }
}

/// [`put`] for an optional field: nothing when it is unset.
///
/// # Safety
/// `p` is valid for writing 6 bytes.
#[inline(always)]
unsafe fn put_opt(p: *mut u8, key: u8, v: Option<u32>) -> *mut u8 {
    match v {
        // SAFETY: a u32 takes at most 5 varint bytes, plus its key.
        Some(v) => unsafe { put(p, key, u64::from(v)) },
        None => p,
    }
}

/// Write `v` as a varint at `p`; return the pointer past it.
///
/// # Safety
/// `p` is valid for writing `varint_len(v)` bytes.
#[inline(always)]
unsafe fn varint(mut p: *mut u8, mut v: u64) -> *mut u8 {
    // SAFETY: one byte per started group of 7 bits of `v`, which is
    // `varint_len(v)` bytes in all.
    unsafe {
        while v >= 0x80 {
            p.write(v as u8 | 0x80);
            p = p.add(1);
            v >>= 7;
        }
        p.write(v as u8);
        p.add(1)
    }
}

/// How many bytes the varint of `v` takes.
#[cfg(test)]
fn varint_len(v: u64) -> usize {
    // 1 byte per started group of 7 bits, at least 1.
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
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
const WT_START_GROUP: u8 = 3;
const WT_END_GROUP: u8 = 4;
const WT_I32: u8 = 5;

/// Deepest nesting of groups and messages accepted, counting the TPSet as
/// level 0: the limit the reference protobuf parsers apply by default.
pub const MAX_DEPTH: u32 = 100;

/// Largest length prefix protobuf accepts (2^31 - 1).
const MAX_LEN: u64 = i32::MAX as u64;

impl<'a> Cursor<'a> {
    #[inline]
    fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

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
            // The 10th byte's bits past bit 63 shift out, as in protobuf.
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(DecodeError::BadVarint {
            offset: self.base + start,
        })
    }

    /// A field key: at most 5 bytes, fitting 32 bits, field number not 0,
    /// wire type 0 to 5. An end-group key (wire type 4) is returned for the
    /// caller to match against the open group.
    #[inline]
    fn key(&mut self) -> Result<(u64, u8), DecodeError> {
        let start = self.pos;
        let offset = self.base + start;
        let k = self.varint()?;
        if self.pos - start > 5 || k > u64::from(u32::MAX) {
            return Err(DecodeError::TooLong {
                offset,
                what: "field key",
            });
        }
        let field = k >> 3;
        let wt = (k & 7) as u8;
        if field == 0 || wt > WT_I32 {
            return Err(DecodeError::BadKey {
                offset,
                field,
                wire_type: wt,
            });
        }
        Ok((field, wt))
    }

    /// A length prefix: at most 5 bytes, below 2^31.
    #[inline]
    fn len(&mut self) -> Result<u64, DecodeError> {
        let start = self.pos;
        let n = self.varint()?;
        if self.pos - start > 5 {
            return Err(DecodeError::TooLong {
                offset: self.base + start,
                what: "length prefix",
            });
        }
        if n > MAX_LEN {
            return Err(DecodeError::BadLength {
                offset: self.base + start,
                len: n,
            });
        }
        Ok(n)
    }

    #[inline]
    fn take(&mut self, n: u64, what: &'static str) -> Result<Cursor<'a>, DecodeError> {
        let start = self.pos;
        let end = (start as u64)
            .checked_add(n)
            .filter(|&e| e <= self.buf.len() as u64);
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

    /// Skip the value of an unknown field whose key (at `key_at`) was just
    /// read. `depth` is the nesting level of the message holding it.
    fn skip(&mut self, field: u64, wt: u8, key_at: usize, depth: u32) -> Result<(), DecodeError> {
        match wt {
            WT_VARINT => self.varint().map(drop),
            WT_I64 => self.take(8, "a fixed64 field").map(drop),
            WT_I32 => self.take(4, "a fixed32 field").map(drop),
            WT_LEN => {
                let n = self.len()?;
                self.take(n, "a length-delimited field").map(drop)
            }
            WT_START_GROUP => self.group(field, key_at, depth + 1),
            _ => Err(DecodeError::StrayEndGroup {
                offset: self.base + key_at,
                field,
            }),
        }
    }

    /// Skip a group of `field` opened by the key at `key_at`, up to and
    /// including its end-group tag. Recursion is bounded by [`MAX_DEPTH`].
    fn group(&mut self, field: u64, key_at: usize, depth: u32) -> Result<(), DecodeError> {
        if depth > MAX_DEPTH {
            return Err(DecodeError::TooDeep {
                offset: self.base + key_at,
            });
        }
        loop {
            if self.at_end() {
                return Err(DecodeError::Truncated {
                    offset: self.base + key_at,
                    what: "a group (no end-group tag)",
                });
            }
            let at = self.pos;
            let (f, wt) = self.key()?;
            if wt == WT_END_GROUP {
                if f == field {
                    return Ok(());
                }
                return Err(DecodeError::EndGroupMismatch {
                    offset: self.base + at,
                    field: f,
                    open: field,
                });
            }
            self.skip(f, wt, at, depth)?;
        }
    }
}

/// Decode `bytes` into `out`, reusing `out.tps`'s allocation.
///
/// A lean pass decodes valid payloads; only when it fails does a second,
/// careful pass run to say exactly what is wrong and where. Both accept
/// exactly the same inputs (the tests check this on corrupted payloads).
///
/// On error `out` holds unspecified (but valid) contents.
#[inline]
pub fn decode_tpset_into(bytes: &[u8], out: &mut TPSet) -> Result<(), DecodeError> {
    match fast::decode(bytes, out) {
        Some(()) => Ok(()),
        None => decode_detailed(bytes, out),
    }
}

mod fast;

/// The careful decoder: the same acceptance as [`fast`], with a precise error.
fn decode_detailed(bytes: &[u8], out: &mut TPSet) -> Result<(), DecodeError> {
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
        let at = c.pos;
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
                let n = c.len()?;
                let mut sub = c.take(n, "a TrigPrim")?;
                let index = out.tps.len();
                out.tps.push(decode_tp(&mut sub, index)?);
            }
            (field, wt) => c.skip(field, wt, at, 0)?,
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
        let at = c.pos;
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
            (field, wt) => c.skip(field, wt, at, 1)?,
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
mod tests;
