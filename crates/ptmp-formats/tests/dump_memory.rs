//! Reading a hostile dump file costs memory in proportion to the bytes the
//! file holds, not to the lengths it claims. Measured with a counting global
//! allocator: the peak of live heap bytes while one file is read.

use ptmp_data::Frames;
use ptmp_formats::dump::{DumpError, DumpReader, MAX_RECORD};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};
use std::sync::Mutex;

struct Counting;

// Counts are kept for the measuring thread only: the test harness runs the
// other tests on their own threads at the same time, and their allocations
// must not show up in this one's peak.
thread_local! {
    static MEASURING: Cell<bool> = const { Cell::new(false) };
}

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn measuring() -> bool {
    MEASURING.try_with(Cell::get).unwrap_or(false)
}

fn grew(n: usize) {
    if measuring() {
        let now = LIVE.fetch_add(n as isize, Relaxed) + n as isize;
        PEAK.fetch_max(now, Relaxed);
    }
}

fn shrank(n: usize) {
    if measuring() {
        LIVE.fetch_sub(n as isize, Relaxed);
    }
}

// SAFETY: every call is forwarded to the system allocator unchanged; the
// wrapper only keeps counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: our caller upholds `alloc`'s contract (a non-zero-size
        // layout), which is all `System.alloc` asks.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`: the caller's layout is passed on unchanged.
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from this allocator, i.e. from `System` (every
        // allocation is forwarded there), with layout `l`, as the caller
        // guarantees.
        unsafe { System.dealloc(p, l) };
        shrank(l.size());
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        // SAFETY: `p` was allocated by `System` with layout `l` (see
        // `dealloc`), and the caller guarantees `new` is a valid non-zero size
        // for `l`'s alignment.
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            if new > l.size() {
                grew(new - l.size());
            } else {
                shrank(l.size() - new);
            }
        }
        q
    }
}

#[global_allocator]
static A: Counting = Counting;

/// One measurement at a time: the counters themselves are shared.
static ONE: Mutex<()> = Mutex::new(());

/// Peak heap bytes allocated by `f`, on this thread, beyond what was live
/// when it started.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    LIVE.store(0, Relaxed);
    PEAK.store(0, Relaxed);
    MEASURING.with(|m| m.set(true));
    let t = f();
    MEASURING.with(|m| m.set(false));
    (t, PEAK.load(Relaxed).max(0) as usize)
}

/// Write `bytes` to a fresh file and open it as a buffered reader, the way
/// the tools open dump files.
fn file_with(name: &str, bytes: &[u8]) -> (std::path::PathBuf, std::io::BufReader<std::fs::File>) {
    let path = std::env::temp_dir().join(format!("ptmp-dump-memory-{}-{name}", std::process::id()));
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(bytes))
        .unwrap();
    let f = std::fs::File::open(&path).unwrap();
    (path, std::io::BufReader::new(f))
}

#[test]
fn a_13_byte_file_claiming_a_gib_fails_fast_in_bounded_memory() {
    let mut bytes = MAX_RECORD.to_le_bytes().to_vec();
    bytes.extend([3, b'a', b'b', b'c', 0]);
    assert_eq!(bytes.len(), 13);
    let (path, input) = file_with("gib", &bytes);
    let (r, peak) = peak_of(|| DumpReader::new(input).read_into(&mut Frames::new()));
    std::fs::remove_file(path).unwrap();
    let e = r.unwrap_err();
    assert!(
        matches!(
            e,
            DumpError::Truncated {
                record: 0,
                offset: 0,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("ends after 5"), "{e}");
    assert!(peak < 1 << 20, "reading 13 bytes took {peak} bytes of heap");
}

#[test]
fn a_record_of_millions_of_empty_frames_costs_in_proportion_to_the_file() {
    // One record of 2^22 + 1 empty frames: each is a single length byte.
    let n = (1 << 22) + 1;
    let mut bytes = (n as u64).to_le_bytes().to_vec();
    bytes.resize(8 + n, 0);
    let (path, input) = file_with("empty-frames", &bytes);
    drop(bytes);
    let mut frames = Frames::new();
    let (r, peak) = peak_of(|| DumpReader::new(input).read_into(&mut frames));
    std::fs::remove_file(path).unwrap();
    assert!(r.unwrap());
    assert_eq!(frames.len(), n);
    assert!(frames.iter().all(|f| f.is_empty()));
    // The record's bytes plus one 8-byte index entry per frame, and the
    // reader's buffers: nothing that grows with more than the file.
    let bound = 9 * n + (1 << 20);
    assert!(
        peak <= bound,
        "{n}-byte record took {peak} bytes of heap (bound {bound})"
    );
}

#[test]
fn a_record_claiming_more_than_the_file_holds_costs_what_the_file_holds() {
    // 3 MiB of a record claiming the largest accepted length: the reader
    // holds what it read, in chunks, never the claimed gibibyte.
    let have = 3 << 20;
    let mut bytes = MAX_RECORD.to_le_bytes().to_vec();
    bytes.resize(8 + have, 7);
    let (path, input) = file_with("short", &bytes);
    drop(bytes);
    let (r, peak) = peak_of(|| DumpReader::new(input).read_into(&mut Frames::new()));
    std::fs::remove_file(path).unwrap();
    let e = r.unwrap_err();
    assert!(e.to_string().contains(&format!("ends after {have}")), "{e}");
    assert!(
        peak <= 2 * have + (1 << 20),
        "{have} bytes read took {peak} bytes of heap"
    );
}
