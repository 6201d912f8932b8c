//! Copying a large message into a slot with streaming stores.
//!
//! What a writer copies into a slot is read next by another core. For a
//! small message the copy should stay in this core's caches, where the
//! reader takes it from. A message of megabytes does not fit there with
//! the rest of the ring, so an ordinary copy first fetches each line of the
//! slot (from memory, or from the reader's caches, where the same slot was
//! read a lap ago) only to overwrite it, then writes it back. Streaming
//! (non-temporal) stores write whole lines to memory without fetching them
//! and leave no copy in any cache, so the reader's core takes them from
//! memory with nobody else holding them.
//!
//! A 6.2 MB frame's round trip between two threads over two-slot rings
//! (the copying row of `ptmp bench peers`) took a fifth less time this way
//! when their cores shared an L3, and a third less when they shared no
//! cache (docs/benchmarks.md). Below about an eighth of the L3 an ordinary
//! copy was faster when the two cores share it, so that is where streaming
//! starts ([`stream_threshold`]).
//!
//! Streaming stores are not ordered with other stores, so a streamed copy
//! is fenced on both sides (`sfence`): the slot's odd stamp is visible
//! before any of the payload, and all of the payload before the stamp that
//! completes the message (invariant 3).

use std::sync::OnceLock;

/// No message shorter than this is streamed, whatever the cache.
const STREAM_MIN: usize = 1 << 20;

/// The threshold when the L3's size cannot be read.
const STREAM_FALLBACK: usize = 4 << 20;

/// Messages of at least this many bytes are copied into a slot with
/// streaming stores ([`copy_into_slot`]): an eighth of this machine's
/// (first CPU's) L3, at least 1 MiB, 4 MiB when the size of the L3 cannot
/// be read from sysfs. Read once per process.
pub fn stream_threshold() -> usize {
    static AT: OnceLock<usize> = OnceLock::new();
    *AT.get_or_init(|| l3_bytes().map_or(STREAM_FALLBACK, |b| (b / 8).max(STREAM_MIN)))
}

/// The size of the first CPU's unified level-3 cache, from sysfs.
fn l3_bytes() -> Option<usize> {
    let base = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    (0..8).find_map(|i| {
        let dir = base.join(format!("index{i}"));
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
        if read("level")?.trim() != "3" {
            return None;
        }
        parse_size(read("size")?.trim())
    })
}

/// "32768K", "32M" or "33554432" in bytes.
fn parse_size(s: &str) -> Option<usize> {
    let (digits, unit) = match s.as_bytes().last()? {
        b'K' => (&s[..s.len() - 1], 1 << 10),
        b'M' => (&s[..s.len() - 1], 1 << 20),
        b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.parse::<usize>().ok()?.checked_mul(unit)
}

/// Copy `src` into the start of `dst`, a slot being written (after its
/// odd stamp, before its commit): with streaming stores when `src` is at
/// least [`stream_threshold`] bytes long on x86-64, an ordinary copy
/// otherwise. Panics, as `copy_from_slice` does, when `dst` is shorter.
#[inline]
pub fn copy_into_slot(dst: &mut [u8], src: &[u8]) {
    let dst = &mut dst[..src.len()];
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    if src.len() >= STREAM_MIN && src.len() >= stream_threshold() {
        // SAFETY: `dst` and `src` are valid for `src.len()` bytes (the
        // slice above has that length) and cannot overlap, one borrowed
        // mutably; SSE2 is part of x86-64.
        unsafe { stream_copy(dst.as_mut_ptr(), src.as_ptr(), src.len()) };
        return;
    }
    dst.copy_from_slice(src);
}

/// Copy `n` bytes with 16-byte streaming stores, fenced before and after.
///
/// # Safety
/// `dst` and `src` valid for `n` bytes each, not overlapping.
#[cfg(all(target_arch = "x86_64", not(loom)))]
unsafe fn stream_copy(dst: *mut u8, src: *const u8, n: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
    // Up to the first 16-byte boundary of `dst`, an ordinary copy:
    // streaming stores need their address aligned.
    let head = dst.align_offset(16).min(n);
    // SAFETY: every access is within the first `n` bytes of `dst` or
    // `src` (the caller's promise): `at + 64 <= n` in the loop, the head
    // and tail copies end at `n`. The stores through `d` are 16-byte
    // aligned (`dst + head` is). SSE and SSE2 are part of x86-64.
    unsafe {
        // Every store before this one (the slot's odd stamp) is visible
        // before any streamed one.
        _mm_sfence();
        std::ptr::copy_nonoverlapping(src, dst, head);
        let mut at = head;
        while at + 64 <= n {
            let s = src.add(at).cast::<__m128i>();
            let d = dst.add(at).cast::<__m128i>();
            let (a, b) = (_mm_loadu_si128(s), _mm_loadu_si128(s.add(1)));
            let (c, e) = (_mm_loadu_si128(s.add(2)), _mm_loadu_si128(s.add(3)));
            _mm_stream_si128(d, a);
            _mm_stream_si128(d.add(1), b);
            _mm_stream_si128(d.add(2), c);
            _mm_stream_si128(d.add(3), e);
            at += 64;
        }
        std::ptr::copy_nonoverlapping(src.add(at), dst.add(at), n - at);
        // Every streamed store is visible before any store after this one
        // (the stamp that completes the message).
        _mm_sfence();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_parse() {
        assert_eq!(parse_size("32768K"), Some(32 << 20));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("1048576"), Some(1 << 20));
        assert_eq!(parse_size("K"), None);
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("12Q"), None);
    }

    #[test]
    fn the_threshold_is_at_least_the_minimum() {
        assert!(stream_threshold() >= STREAM_MIN);
    }

    /// Streamed and ordinary copies alike land whole, at every alignment
    /// of the destination and for lengths that are not whole blocks; the
    /// bytes after the copied ones are left alone.
    #[test]
    fn copies_land_whole() {
        let t = stream_threshold();
        let src: Vec<u8> = (0..t + 200).map(|i| (i * 31 % 251) as u8).collect();
        let mut dst = vec![0u8; t + 300];
        for len in [0, 1, 63, 4096, t - 1, t, t + 1, t + 63, t + 200] {
            for off in [0, 1, 7, 15, 16, 33] {
                dst.fill(0xEE);
                copy_into_slot(&mut dst[off..], &src[..len]);
                assert!(dst[off..off + len] == src[..len], "len {len} at {off}");
                assert!(
                    dst[..off].iter().all(|&b| b == 0xEE),
                    "before, len {len} at {off}"
                );
                assert!(
                    dst[off + len..].iter().all(|&b| b == 0xEE),
                    "after, len {len} at {off}"
                );
            }
        }
    }

    #[test]
    #[should_panic]
    fn a_short_destination_panics_as_copy_from_slice_does() {
        copy_into_slot(&mut [0u8; 3], &[1, 2, 3, 4]);
    }
}
