//! The lean decoder: `None` on any problem, no diagnostics.

use crate::{TPSet, TrigPrim};

/// Read a varint. Up to 8 bytes are decoded a word at a time: find the
/// first byte without the continuation bit, mask, then squeeze the
/// 7-bit groups together in three shift-and-mask steps.
#[inline(always)]
pub(super) fn varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let p = *pos;
    let b0 = *buf.get(p)?;
    if b0 < 0x80 {
        *pos = p + 1;
        return Some(u64::from(b0));
    }
    let Some(b) = buf.get(p..p + 8) else {
        // Near the end of the buffer: byte by byte.
        return varint_long(buf, pos);
    };
    let w = u64::from_le_bytes(b.try_into().expect("8 bytes"));
    let stop = !w & 0x8080_8080_8080_8080;
    if stop == 0 {
        return varint_long(buf, pos);
    }
    let len = (stop.trailing_zeros() as usize + 1) / 8;
    let x = w & (u64::MAX >> (64 - 8 * len)) & 0x7f7f_7f7f_7f7f_7f7f;
    let x = (x & 0x007f_007f_007f_007f) | ((x & 0x7f00_7f00_7f00_7f00) >> 1);
    let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
    let x = (x & 0x0000_0000_0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4);
    *pos = p + len;
    Some(x)
}

/// Varints of 9 or 10 bytes, or near the end of the buffer, byte by byte.
/// The 10th byte's bits past bit 63 shift out, as in protobuf.
#[inline(never)]
fn varint_long(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut p = *pos;
    for i in 0..10 {
        let b = *buf.get(p)?;
        p += 1;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            *pos = p;
            return Some(v);
        }
    }
    None
}

/// A field key: one byte in the common case; otherwise at most 5 bytes
/// and fitting 32 bits.
#[inline(always)]
pub(super) fn key(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let p = *pos;
    let b0 = *buf.get(p)?;
    if b0 < 0x80 {
        *pos = p + 1;
        return Some(u64::from(b0));
    }
    let k = varint(buf, pos)?;
    (*pos - p <= 5 && k <= u64::from(u32::MAX)).then_some(k)
}

/// A length prefix: at most 5 bytes, below 2^31.
#[inline(always)]
fn len(buf: &[u8], pos: &mut usize) -> Option<usize> {
    let p = *pos;
    let n = varint(buf, pos)?;
    (*pos - p <= 5 && n <= super::MAX_LEN).then_some(n as usize)
}

/// Skip the value of an unknown field with key `key` in a message at
/// nesting level `depth`.
#[inline(always)]
fn skip(buf: &[u8], pos: &mut usize, key: u64, depth: u32) -> Option<()> {
    let field = key >> 3;
    if field == 0 {
        return None;
    }
    let n = match key & 7 {
        0 => return varint(buf, pos).map(drop),
        1 => 8,
        2 => len(buf, pos)?,
        3 => return group(buf, pos, field, depth + 1),
        5 => 4,
        _ => return None,
    };
    let end = pos.checked_add(n)?;
    if end > buf.len() {
        return None;
    }
    *pos = end;
    Some(())
}

/// Skip a group of `field` at nesting level `depth`, through its
/// matching end-group tag.
#[inline(never)]
fn group(buf: &[u8], pos: &mut usize, field: u64, depth: u32) -> Option<()> {
    if depth > super::MAX_DEPTH {
        return None;
    }
    loop {
        let k = key(buf, pos)?;
        if k & 7 == 4 {
            return (k >> 3 == field).then_some(());
        }
        skip(buf, pos, k, depth)?;
    }
}

/// The lean path's step for a field in field-number order: if the byte
/// at `$pos` is the one-byte key `$key`, read its varint as `$v` and do
/// `$set`; otherwise nothing.
macro_rules! in_order {
    ($buf:ident, $pos:ident, $key:literal, $v:ident => $set:expr) => {
        if $buf.get($pos) == Some(&$key) {
            $pos += 1;
            let $v = varint($buf, &mut $pos)?;
            $set;
        }
    };
}

pub(super) fn decode(buf: &[u8], out: &mut TPSet) -> Option<()> {
    out.tspan = None;
    out.chanbeg = None;
    out.chanend = None;
    out.totaladc = None;
    out.tps.clear();
    let mut seen = 0u8;
    let mut pos = 0;
    // The set's own fields in field-number order, as every encoder writes
    // them, are taken in turn without looking each key up (any of them may
    // be missing); anything else (another order, repeats, unknown fields,
    // the TrigPrims) is left to the loop, which gives the same result for
    // them.
    in_order!(buf, pos, 0x08, v => { out.count = v as u32; seen |= 1 });
    in_order!(buf, pos, 0x10, v => { out.detid = v as u32; seen |= 2 });
    in_order!(buf, pos, 0x18, v => { out.created = v as i64; seen |= 4 });
    in_order!(buf, pos, 0x20, v => { out.tstart = v; seen |= 8 });
    in_order!(buf, pos, 0x28, v => out.tspan = Some(v as u32));
    in_order!(buf, pos, 0x30, v => out.chanbeg = Some(v as u32));
    in_order!(buf, pos, 0x38, v => out.chanend = Some(v as u32));
    in_order!(buf, pos, 0x40, v => out.totaladc = Some(v as u32));
    while pos < buf.len() {
        let key = key(buf, &mut pos)?;
        match key {
            0x08 => {
                out.count = varint(buf, &mut pos)? as u32;
                seen |= 1;
            }
            0x10 => {
                out.detid = varint(buf, &mut pos)? as u32;
                seen |= 2;
            }
            0x18 => {
                out.created = varint(buf, &mut pos)? as i64;
                seen |= 4;
            }
            0x20 => {
                out.tstart = varint(buf, &mut pos)?;
                seen |= 8;
            }
            0x28 => out.tspan = Some(varint(buf, &mut pos)? as u32),
            0x30 => out.chanbeg = Some(varint(buf, &mut pos)? as u32),
            0x38 => out.chanend = Some(varint(buf, &mut pos)? as u32),
            0x40 => out.totaladc = Some(varint(buf, &mut pos)? as u32),
            0x4a => {
                let n = len(buf, &mut pos)?;
                let end = pos.checked_add(n)?;
                let tp = tp(buf.get(pos..end)?)?;
                out.tps.push(tp);
                pos = end;
            }
            k => skip(buf, &mut pos, k, 0)?,
        }
    }
    (seen == 15).then_some(())
}

#[inline(always)]
fn tp(buf: &[u8]) -> Option<TrigPrim> {
    let mut tp = TrigPrim::default();
    let mut seen = 0u8;
    let mut pos = 0;
    // In field-number order first, as in `decode`.
    in_order!(buf, pos, 0x08, v => { tp.channel = v as u32; seen |= 1 });
    in_order!(buf, pos, 0x10, v => { tp.tstart = v; seen |= 2 });
    in_order!(buf, pos, 0x18, v => tp.tspan = Some(v as u32));
    in_order!(buf, pos, 0x20, v => tp.adcsum = Some(v as u32));
    in_order!(buf, pos, 0x28, v => tp.adcpeak = Some(v as u32));
    in_order!(buf, pos, 0x30, v => tp.flags = Some(v as u32));
    while pos < buf.len() {
        let key = key(buf, &mut pos)?;
        match key {
            0x08 => {
                tp.channel = varint(buf, &mut pos)? as u32;
                seen |= 1;
            }
            0x10 => {
                tp.tstart = varint(buf, &mut pos)?;
                seen |= 2;
            }
            0x18 => tp.tspan = Some(varint(buf, &mut pos)? as u32),
            0x20 => tp.adcsum = Some(varint(buf, &mut pos)? as u32),
            0x28 => tp.adcpeak = Some(varint(buf, &mut pos)? as u32),
            0x30 => tp.flags = Some(varint(buf, &mut pos)? as u32),
            k => skip(buf, &mut pos, k, 1)?,
        }
    }
    (seen == 3).then_some(tp)
}
