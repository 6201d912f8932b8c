//! # ptmp-c: the C ABI of ptmp
//!
//! A C program sends and receives PTMP TPSets through `libptmp.so` or
//! `libptmp.a` and the header `include/ptmp.h`, generated from this file by
//! cbindgen. The API is deliberately small: a sender and a receiver made
//! from PTMP's JSON socket configuration, plain C structs for a TPSet and
//! its trigger primitives, and integer return codes.
//!
//! Rules every function keeps:
//!
//! * No panic crosses the boundary: each entry point runs inside
//!   `catch_unwind`, and a panic becomes [`PTMP_ERR_PANIC`].
//! * `0` ([`PTMP_OK`]) is success, a negative code is an error, and the one
//!   positive code, [`PTMP_TIMEOUT`], means a bounded wait ran out with
//!   nothing received, as PTMP's `TPReceiver` returns false.
//! * After an error, `ptmp_last_error()` on the same thread says what was
//!   wrong, naming the key and value for a bad configuration.
//! * A NULL handle or pointer argument is an error ([`PTMP_ERR_NULL`]),
//!   never a crash; the `_free` functions accept NULL and do nothing.
//! * A handle is used by one thread at a time; different handles may be
//!   used on different threads at once.
//!
//! Ownership of `ptmp_tpset.tps`: the array is either NULL or allocated
//! with the C library's `malloc` (`tps_capacity` elements). A receive grows
//! it with `realloc` when needed and keeps it for the next receive;
//! `ptmp_tpset_clear` frees it. To send, `tps` may point anywhere readable.

use ptmp_core::{Error, Frames, Receiver, Sender, TPSet, TrigPrim};
use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

mod dump;
mod encode;
mod names;
mod receiver;
mod request;
mod run;
mod sender;
mod shm;

pub use dump::*;
pub use names::*;
pub use receiver::*;
pub use request::*;
pub use run::*;
pub use sender::*;
pub use shm::*;

/// Success.
pub const PTMP_OK: c_int = 0;
/// A receive waited `timeout_ms` and nothing came; not an error, and
/// `ptmp_last_error()` is left unchanged.
pub const PTMP_TIMEOUT: c_int = 1;
/// A required pointer argument (a handle, a TPSet, a string) was NULL.
pub const PTMP_ERR_NULL: c_int = -1;
/// An argument is not valid: a string that is not UTF-8, a TPSet whose
/// `tps` is NULL while `ntps` is not zero, bytes that are not an encoded
/// TPSet.
pub const PTMP_ERR_ARG: c_int = -2;
/// The JSON socket configuration is not valid; the message names the key,
/// the value and the reason.
pub const PTMP_ERR_CONFIG: c_int = -3;
/// The transport failed: bind, connect, send or receive (the message says
/// which and why).
pub const PTMP_ERR_TRANSPORT: c_int = -4;
/// A received message is not a PTMP TPSet. It was counted and skipped; the
/// receiver can go on receiving.
pub const PTMP_ERR_MESSAGE: c_int = -5;
/// A blocking call was interrupted by a signal.
pub const PTMP_ERR_INTERRUPTED: c_int = -6;
/// Memory for the received trigger primitives could not be allocated.
pub const PTMP_ERR_ALLOC: c_int = -7;
/// A bug in ptmp: a Rust panic was caught at the boundary.
pub const PTMP_ERR_PANIC: c_int = -8;
/// The call does not fit the handle's state: a shared-memory commit with no
/// loan open, a second loan before the first is committed, a validity check
/// with no view held.
pub const PTMP_ERR_STATE: c_int = -9;
/// A file could not be opened, read or written (a dump file, a
/// configuration); the message names the path.
pub const PTMP_ERR_IO: c_int = -10;
/// Agents or a graph ran and failed; the message says which and why.
pub const PTMP_ERR_RUN: c_int = -11;
/// A CURVE server refused this socket's connection (its key is not on the
/// server's list, or it holds the wrong server key); the message names the
/// endpoint and why. libzmq never retries such a connection: nothing sent
/// there leaves, nothing will arrive from there.
pub const PTMP_ERR_REFUSED: c_int = -12;
/// A dump-file read reached the end of the file: not an error.
pub const PTMP_END: c_int = 2;

/// One trigger primitive, the fields of PTMP's `TrigPrim` message.
///
/// The protobuf message's optional fields (`tspan`, `adcsum`, `adcpeak`,
/// `flags`) are always sent; one missing from a received message reads 0.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub struct ptmp_trigprim {
    /// The channel number.
    pub channel: u32,
    /// Start time, in the detector's clock ticks.
    pub tstart: u64,
    /// Time over threshold, in ticks.
    pub tspan: u32,
    /// Sum of ADC over the span.
    pub adcsum: u32,
    /// Peak ADC over the span.
    pub adcpeak: u32,
    /// Producer-defined flags.
    pub flags: u32,
}

/// A set of trigger primitives, the fields of PTMP's `TPSet` message.
///
/// `tps` points to `ntps` primitives. For sending it may point to any
/// readable memory (or be NULL when `ntps` is 0). For receiving it must be
/// NULL or a block from `malloc` holding `tps_capacity` primitives, as a
/// zero-initialised struct or a previous receive leaves it: the library
/// reallocates it with `realloc` when a set has more primitives, and
/// `ptmp_tpset_clear` frees it.
#[repr(C)]
#[derive(Debug)]
#[allow(non_camel_case_types)]
pub struct ptmp_tpset {
    /// Sequence number of the set from its producer.
    pub count: u32,
    /// Detector identifier.
    pub detid: u32,
    /// Wall-clock time the set was made, microseconds since the Unix epoch.
    pub created: i64,
    /// Start time of the set, in ticks.
    pub tstart: u64,
    /// Time span of the set, in ticks.
    pub tspan: u32,
    /// First channel covered.
    pub chanbeg: u32,
    /// Last channel covered.
    pub chanend: u32,
    /// Sum of the primitives' ADC.
    pub totaladc: u32,
    /// The primitives: `ntps` of them, room for `tps_capacity`.
    pub tps: *mut ptmp_trigprim,
    /// How many primitives `tps` holds.
    pub ntps: usize,
    /// How many primitives fit in the `malloc` block at `tps` (receive side).
    pub tps_capacity: usize,
}

/// A sending socket (opaque), made by `ptmp_sender_new`.
#[allow(non_camel_case_types)]
pub struct ptmp_sender {
    inner: Sender,
    endpoints: Vec<CString>,
    // Reused for every send, so converting from the C struct allocates
    // nothing once it has grown.
    scratch: TPSet,
    // Encodes a C set for `ptmp_sender_send` without the Rust set.
    enc: encode::Encoder,
}

/// A receiving socket (opaque), made by `ptmp_receiver_new`.
#[allow(non_camel_case_types)]
pub struct ptmp_receiver {
    inner: Receiver,
    endpoints: Vec<CString>,
    // The frames of the last `ptmp_receiver_recv_frames`, reused.
    frames: Frames,
    scratch: TPSet,
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// An error on its way to C: the code to return and the message to keep.
pub(crate) struct Fail(pub(crate) c_int, pub(crate) String);

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        let code = match &e {
            Error::Config { .. } => PTMP_ERR_CONFIG,
            Error::Wire(_) => PTMP_ERR_MESSAGE,
            Error::Interrupted => PTMP_ERR_INTERRUPTED,
            Error::Request { failure, .. } => request::failure_code(failure),
            _ => PTMP_ERR_TRANSPORT,
        };
        Fail(code, e.to_string())
    }
}

fn set_last_error(msg: &str) {
    // A message with an interior NUL would be cut there by C anyway.
    let msg = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|l| *l.borrow_mut() = msg);
}

/// Runs one entry point: a panic or an error becomes its code, and the
/// message is kept for `ptmp_last_error`.
pub(crate) fn guard(what: &str, f: impl FnOnce() -> Result<c_int, Fail>) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(code)) => code,
        Ok(Err(Fail(code, msg))) => {
            set_last_error(&format!("{what}: {msg}"));
            code
        }
        Err(panic) => {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_last_error(&format!("{what}: internal error (panic): {why}"));
            PTMP_ERR_PANIC
        }
    }
}

pub(crate) fn null(what: &str) -> Fail {
    Fail(PTMP_ERR_NULL, format!("{what} is NULL"))
}

/// Reads a C string argument as UTF-8.
///
/// # Safety
/// `s` is NULL or points to a NUL-terminated string.
pub(crate) unsafe fn c_str<'a>(s: *const c_char, what: &str) -> Result<&'a str, Fail> {
    if s.is_null() {
        return Err(null(what));
    }
    // SAFETY: not NULL, and the caller promises a NUL-terminated string that
    // outlives this call.
    let s = unsafe { CStr::from_ptr(s) };
    s.to_str()
        .map_err(|e| Fail(PTMP_ERR_ARG, format!("{what} is not UTF-8: {e}")))
}

/// The message of the most recent failed call on this thread, or an empty
/// string if none failed yet.
///
/// Thread-safety: each thread has its own message. The pointer stays valid
/// until the next failing ptmp call on the same thread; copy it to keep it.
/// Never NULL.
#[no_mangle]
pub extern "C" fn ptmp_last_error() -> *const c_char {
    // No panic is possible here short of the thread-local being gone (at
    // thread exit); then a static empty string is returned.
    LAST_ERROR
        .try_with(|l| l.borrow().as_ptr())
        .unwrap_or(c"".as_ptr())
}

/// Frees `tpset->tps` (with `free`) and sets every field of `*tpset` to
/// zero, so the struct can be received into again or dropped. NULL is
/// accepted and does nothing.
///
/// Thread-safety: touches only `*tpset`; any thread that owns it.
///
/// # Safety
/// `tpset` is NULL or points to a writable `ptmp_tpset` whose `tps` is NULL
/// or a `malloc` block (as a receive leaves it).
#[no_mangle]
pub unsafe extern "C" fn ptmp_tpset_clear(tpset: *mut ptmp_tpset) {
    guard("ptmp_tpset_clear", || {
        // SAFETY: the caller promises NULL or a writable struct.
        if let Some(t) = unsafe { tpset.as_mut() } {
            // SAFETY: `tps` is NULL or a malloc block, as the caller
            // promises; free(NULL) does nothing.
            unsafe { libc::free(t.tps.cast()) };
            *t = ptmp_tpset {
                count: 0,
                detid: 0,
                created: 0,
                tstart: 0,
                tspan: 0,
                chanbeg: 0,
                chanend: 0,
                totaladc: 0,
                tps: std::ptr::null_mut(),
                ntps: 0,
                tps_capacity: 0,
            };
        }
        Ok(PTMP_OK)
    });
}

/// Borrows the primitives of a C set as a slice, refusing `tps` NULL with
/// `ntps` > 0.
///
/// # Safety
/// `t.tps` is NULL or points to `t.ntps` readable, initialised primitives
/// that nothing writes during the borrow.
pub(crate) unsafe fn c_tps(t: &ptmp_tpset) -> Result<&[ptmp_trigprim], Fail> {
    if t.ntps == 0 {
        Ok(&[])
    } else if t.tps.is_null() {
        Err(Fail(
            PTMP_ERR_ARG,
            format!("tpset.tps is NULL but tpset.ntps = {}", t.ntps),
        ))
    } else {
        // SAFETY: not NULL, and the caller promises `ntps` readable,
        // initialised primitives that nothing writes during the borrow.
        Ok(unsafe { std::slice::from_raw_parts(t.tps, t.ntps) })
    }
}

fn c_strings(v: &[String]) -> Vec<CString> {
    v.iter()
        .map(|s| CString::new(s.replace('\0', " ")).unwrap_or_default())
        .collect()
}

/// Fills the reused Rust set from the C struct; every optional field is set.
pub(crate) fn to_rust(t: &ptmp_tpset, tps: &[ptmp_trigprim], out: &mut TPSet) {
    out.count = t.count;
    out.detid = t.detid;
    out.created = t.created;
    out.tstart = t.tstart;
    out.tspan = Some(t.tspan);
    out.chanbeg = Some(t.chanbeg);
    out.chanend = Some(t.chanend);
    out.totaladc = Some(t.totaladc);
    out.tps.clear();
    out.tps.extend(tps.iter().map(|p| TrigPrim {
        channel: p.channel,
        tstart: p.tstart,
        tspan: Some(p.tspan),
        adcsum: Some(p.adcsum),
        adcpeak: Some(p.adcpeak),
        flags: Some(p.flags),
    }));
}

/// Copies a received set into the C struct, growing its `tps` block.
///
/// # Safety
/// `o.tps` is NULL or a `malloc` block of `o.tps_capacity` primitives.
pub(crate) unsafe fn to_c(t: &TPSet, o: &mut ptmp_tpset) -> Result<(), Fail> {
    let n = t.tps.len();
    if n > o.tps_capacity {
        let bytes = n
            .checked_mul(std::mem::size_of::<ptmp_trigprim>())
            .ok_or_else(|| Fail(PTMP_ERR_ALLOC, format!("{n} primitives overflow")))?;
        // SAFETY: `o.tps` is NULL or a malloc block (the function's
        // contract); realloc(NULL, n) is malloc(n).
        let p = unsafe { libc::realloc(o.tps.cast(), bytes) }.cast::<ptmp_trigprim>();
        if p.is_null() {
            return Err(Fail(
                PTMP_ERR_ALLOC,
                format!("cannot allocate {n} primitives ({bytes} bytes)"),
            ));
        }
        o.tps = p;
        o.tps_capacity = n;
    }
    for (i, p) in t.tps.iter().enumerate() {
        let c = ptmp_trigprim {
            channel: p.channel,
            tstart: p.tstart,
            tspan: p.tspan.unwrap_or(0),
            adcsum: p.adcsum.unwrap_or(0),
            adcpeak: p.adcpeak.unwrap_or(0),
            flags: p.flags.unwrap_or(0),
        };
        // SAFETY: `i < n <= tps_capacity`, so the slot lies inside the
        // block; malloc'd memory is suitably aligned for the struct, and
        // `write` does not read the uninitialised old contents.
        unsafe { o.tps.add(i).write(c) };
    }
    o.ntps = n;
    o.count = t.count;
    o.detid = t.detid;
    o.created = t.created;
    o.tstart = t.tstart;
    o.tspan = t.tspan.unwrap_or(0);
    o.chanbeg = t.chanbeg.unwrap_or(0);
    o.chanend = t.chanend.unwrap_or(0);
    o.totaladc = t.totaladc.unwrap_or(0);
    Ok(())
}
