//! Surviving a segment truncated under a live process (invariant 7).
//!
//! Touching a page of a shared file mapping that lies wholly beyond the end
//! of the file raises SIGBUS, which by default kills the process. Another
//! process can shorten the file at any time (`truncate`, `ptmp shm rm` then a
//! new channel of the same name does not, but any program with write access
//! can). So every mapping of a segment is registered here, and a process-wide
//! SIGBUS handler, installed once, replaces the faulting page of a registered
//! mapping with a private page of zeros and sets that mapping's `truncated`
//! flag. The faulting access then completes on zeros; the ring code checks
//! the flag (one relaxed load) wherever it would trust what it read, and
//! reports the truncation as an error. A SIGBUS at any other address goes to
//! the handler that was installed before (Rust's own, or the default, which
//! kills as before).
//!
//! Everything the handler touches is a fixed-size static array of atomics:
//! no allocation, no lock, nothing that is not async-signal-safe.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Once;

/// Most segment mappings one process can hold at once.
pub const MAX_MAPPINGS: usize = 1024;

struct Slot {
    /// Taken by a mapping (claimed by compare-and-swap).
    used: AtomicBool,
    /// Start address; 0 while the slot is being filled or emptied.
    start: AtomicUsize,
    len: AtomicUsize,
    truncated: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    used: AtomicBool::new(false),
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    truncated: AtomicBool::new(false),
};

static SLOTS: [Slot; MAX_MAPPINGS] = [EMPTY; MAX_MAPPINGS];
static PAGE: AtomicUsize = AtomicUsize::new(4096);
static INSTALL: Once = Once::new();
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The SIGBUS action found when ours was installed; written once, before
/// the handler that reads it can run.
struct Prev(UnsafeCell<std::mem::MaybeUninit<libc::sigaction>>);
// SAFETY: (invariant 7) written once inside `INSTALL` before the handler
// is installed, only read afterwards.
unsafe impl Sync for Prev {}
static PREV: Prev = Prev(UnsafeCell::new(std::mem::MaybeUninit::uninit()));

/// A registered mapping; unregisters on drop (which must come before the
/// mapping is unmapped: declare it before the map in the owning struct).
#[derive(Debug)]
pub struct Guard {
    slot: usize,
}

impl Guard {
    /// Whether a page of this mapping was found beyond the end of its file.
    #[inline]
    pub fn truncated(&self) -> bool {
        SLOTS[self.slot].truncated.load(Ordering::Relaxed)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let s = &SLOTS[self.slot];
        s.start.store(0, Ordering::SeqCst);
        s.len.store(0, Ordering::SeqCst);
        s.used.store(false, Ordering::SeqCst);
    }
}

/// Register the mapping `start..start + len`, installing the handler on
/// first use. `None` when the registry is full or the handler could not be
/// installed.
pub fn register(start: usize, len: usize) -> Option<Guard> {
    install();
    if !INSTALLED.load(Ordering::SeqCst) {
        return None;
    }
    for (i, s) in SLOTS.iter().enumerate() {
        if s.used
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            s.truncated.store(false, Ordering::SeqCst);
            s.len.store(len, Ordering::SeqCst);
            s.start.store(start, Ordering::SeqCst);
            return Some(Guard { slot: i });
        }
    }
    None
}

fn install() {
    INSTALL.call_once(|| {
        PAGE.store(rustix::param::page_size(), Ordering::SeqCst);
        // Installing a signal handler is one of the few calls rustix leaves
        // to the C library.
        // SAFETY: (invariant 7) an all-zero sigaction is a valid value;
        // `PREV` is written here, once, before our handler (its only reader)
        // is installed; the sigaction calls get valid pointers.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sigbus as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
            libc::sigemptyset(&mut sa.sa_mask);
            let prev = (*PREV.0.get()).as_mut_ptr();
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), prev) != 0 {
                return;
            }
            if libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut()) == 0 {
                INSTALLED.store(true, Ordering::SeqCst);
            }
        }
    });
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler
    // (installed for invariant 7).
    let addr = unsafe { (*info).si_addr() } as usize;
    let page = PAGE.load(Ordering::Relaxed);
    for s in SLOTS.iter() {
        let start = s.start.load(Ordering::SeqCst);
        let len = s.len.load(Ordering::SeqCst);
        if start == 0 || addr < start || addr - start >= len {
            continue;
        }
        let at = addr & !(page - 1);
        // SAFETY: `at` is a page of a live registered mapping (its owner
        // holds it mapped while registered, invariant 7); replacing that page
        // with private zeros changes only memory this library owns. mmap is
        // async-signal-safe (rustix makes the system call directly, with no
        // errno and no allocation).
        let p = unsafe {
            rustix::mm::mmap_anonymous(
                at as *mut std::ffi::c_void,
                page,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::FIXED | rustix::mm::MapFlags::PRIVATE,
            )
        };
        if p.is_ok() {
            s.truncated.store(true, Ordering::SeqCst);
            return;
        }
        break;
    }
    // Not ours (or the page could not be replaced): what would have happened
    // without this handler.
    // SAFETY: (invariant 7) PREV was written before this handler was
    // installed; calling
    // the previous handler with the kernel's arguments, or restoring the
    // default action so the faulting access re-faults and ends the process
    // as it would have, are both what the previous disposition asked for.
    unsafe {
        let prev = &*(*PREV.0.get()).as_ptr();
        let h = prev.sa_sigaction;
        if h == libc::SIG_DFL || h == libc::SIG_IGN {
            let mut dfl: libc::sigaction = std::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(libc::SIGBUS, &dfl, std::ptr::null_mut());
        } else if prev.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                std::mem::transmute(h);
            f(sig, info, ctx);
        } else {
            let f: extern "C" fn(libc::c_int) = std::mem::transmute(h);
            f(sig);
        }
    }
}
