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

use ptmp_core::data::{decode_tpset_into, VERSION_FRAME};
use ptmp_core::{Error, Frames, Receiver, Sender, TPSet, TrigPrim, Undelivered};
use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

mod dump;
mod encode;
mod names;
mod run;
mod shm;

pub use dump::*;
pub use names::*;
pub use run::*;
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

/// Opens a sender from PTMP's JSON socket configuration, e.g.
/// `{"socket":{"type":"PUSH","bind":["tcp://127.0.0.1:5678"]}}`, and stores
/// the handle in `*out` (NULL on failure).
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`],
/// [`PTMP_ERR_CONFIG`] (the message names the key and value) or
/// [`PTMP_ERR_TRANSPORT`].
///
/// Thread-safety: may be called from any thread; the new handle is then
/// used by one thread at a time.
///
/// # Safety
/// `json_config` is NULL or a NUL-terminated string; `out` is NULL or
/// points to writable storage for a pointer.
#[no_mangle]
pub unsafe extern "C" fn ptmp_sender_new(
    json_config: *const c_char,
    out: *mut *mut ptmp_sender,
) -> c_int {
    guard("ptmp_sender_new", || {
        if out.is_null() {
            return Err(null("out"));
        }
        // SAFETY: `out` is not NULL and the caller promises it is writable.
        unsafe { *out = std::ptr::null_mut() };
        // SAFETY: the caller promises NULL or a NUL-terminated string.
        let json = unsafe { c_str(json_config, "json_config") }?;
        let inner = Sender::from_json(json)?;
        let handle = Box::new(ptmp_sender {
            endpoints: c_strings(inner.bound_endpoints()),
            inner,
            scratch: TPSet::default(),
            enc: encode::Encoder::default(),
        });
        // SAFETY: as above; the box is handed to the caller, who gives it
        // back to `ptmp_sender_free`.
        unsafe { *out = Box::into_raw(handle) };
        Ok(PTMP_OK)
    })
}

/// Sends one TPSet. Blocks while a PUSH or PAIR socket is at its high-water
/// mark; a PUB drops instead, as ZeroMQ does. The first send of a PUB
/// configured with `subscribers` waits for them.
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`] (`tps` NULL
/// with `ntps` > 0), [`PTMP_ERR_TRANSPORT`] or [`PTMP_ERR_INTERRUPTED`].
///
/// Thread-safety: one thread at a time per sender.
///
/// # Safety
/// `sender` is NULL or a live handle from `ptmp_sender_new`; `tpset` is NULL
/// or points to a readable `ptmp_tpset` whose `tps` holds `ntps` readable
/// primitives.
#[no_mangle]
pub unsafe extern "C" fn ptmp_sender_send(
    sender: *mut ptmp_sender,
    tpset: *const ptmp_tpset,
) -> c_int {
    guard("ptmp_sender_send", || {
        // SAFETY: the caller promises NULL or a live handle, used by this
        // thread alone for the duration of the call.
        let s = unsafe { sender.as_mut() }.ok_or_else(|| null("sender"))?;
        // SAFETY: the caller promises NULL or a readable struct.
        let t = unsafe { tpset.as_ref() }.ok_or_else(|| null("tpset"))?;
        // SAFETY: the caller promises `ntps` readable primitives at `tps`.
        let tps = unsafe { c_tps(t) }?;
        // Encoded from the C struct directly (the same bytes `Sender::send`
        // would make of it), then sent as those frames: no Rust set
        // between, so no copy of the primitives.
        let bytes = s.enc.encode(t, tps);
        s.inner.send_raw(&[&VERSION_FRAME[..], bytes])?;
        Ok(PTMP_OK)
    })
}

/// Sends one TPSet given as its protobuf encoding (`len` bytes at `data`),
/// as PTMP's C++ code serialises it. The bytes are checked first: ones that
/// are not a complete TPSet are refused with [`PTMP_ERR_ARG`] and nothing is
/// sent. Otherwise as `ptmp_sender_send`.
///
/// Thread-safety: one thread at a time per sender.
///
/// # Safety
/// `sender` is NULL or a live handle from `ptmp_sender_new`; `data` is NULL
/// or points to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn ptmp_sender_send_bytes(
    sender: *mut ptmp_sender,
    data: *const u8,
    len: usize,
) -> c_int {
    guard("ptmp_sender_send_bytes", || {
        // SAFETY: the caller promises NULL or a live handle, used by this
        // thread alone for the duration of the call.
        let s = unsafe { sender.as_mut() }.ok_or_else(|| null("sender"))?;
        let bytes: &[u8] = if len == 0 {
            &[]
        } else if data.is_null() {
            return Err(null("data"));
        } else {
            // SAFETY: not NULL, and the caller promises `len` readable bytes.
            unsafe { std::slice::from_raw_parts(data, len) }
        };
        decode_tpset_into(bytes, &mut s.scratch).map_err(|e| {
            Fail(
                PTMP_ERR_ARG,
                format!("data ({len} bytes) is not an encoded TPSet: {e}"),
            )
        })?;
        s.inner.send_raw(&[&VERSION_FRAME[..], bytes])?;
        Ok(PTMP_OK)
    })
}

/// Sends one message of `n` raw frames, schema-blind: frame `i` is the
/// `lens[i]` bytes at `datas[i]`. A PTMP TPSet message is two frames, the
/// version and the encoded set; other messages pass as they are (a
/// receiving `ptmp_receiver_recv` counts them as not TPSets).
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`] (`n` is 0),
/// [`PTMP_ERR_TRANSPORT`] or [`PTMP_ERR_INTERRUPTED`].
///
/// Thread-safety: one thread at a time per sender.
///
/// # Safety
/// `sender` is NULL or a live handle; `datas` and `lens` are NULL or point
/// to `n` entries each; `datas[i]` is NULL (only with `lens[i]` 0) or
/// points to `lens[i]` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn ptmp_sender_send_frames(
    sender: *mut ptmp_sender,
    datas: *const *const u8,
    lens: *const usize,
    n: usize,
) -> c_int {
    guard("ptmp_sender_send_frames", || {
        // SAFETY: the caller promises NULL or a live handle.
        let s = unsafe { sender.as_mut() }.ok_or_else(|| null("sender"))?;
        if n == 0 {
            return Err(Fail(
                PTMP_ERR_ARG,
                "n is 0: a message has at least one frame".into(),
            ));
        }
        if datas.is_null() {
            return Err(null("datas"));
        }
        if lens.is_null() {
            return Err(null("lens"));
        }
        // SAFETY: both not NULL, and the caller promises `n` entries each.
        let (ds, ls) = unsafe {
            (
                std::slice::from_raw_parts(datas, n),
                std::slice::from_raw_parts(lens, n),
            )
        };
        let frame = |i: usize| -> Result<&[u8], Fail> {
            match (ds[i].is_null(), ls[i]) {
                (_, 0) => Ok(&[]),
                (true, len) => Err(Fail(
                    PTMP_ERR_NULL,
                    format!("datas[{i}] is NULL but lens[{i}] = {len}"),
                )),
                // SAFETY: not NULL, and the caller promises `lens[i]`
                // readable bytes at `datas[i]` for the call.
                (false, len) => Ok(unsafe { std::slice::from_raw_parts(ds[i], len) }),
            }
        };
        // Up to 8 frames without allocating; more are rare.
        const FEW: usize = 8;
        if n <= FEW {
            let mut arr: [&[u8]; FEW] = [&[]; FEW];
            for (i, slot) in arr.iter_mut().enumerate().take(n) {
                *slot = frame(i)?;
            }
            s.inner.send_raw(&arr[..n])?;
        } else {
            let v = (0..n).map(frame).collect::<Result<Vec<_>, _>>()?;
            s.inner.send_raw(&v)?;
        }
        Ok(PTMP_OK)
    })
}

/// Sends one TPSet as `ptmp_sender_send` does, but waits at most
/// `timeout_ms` milliseconds (0: not at all) for room: when a PUSH or PAIR
/// socket stays at its high-water mark (or has no peer) that long, or an
/// shm:// PUSH channel stays full, nothing is sent and [`PTMP_TIMEOUT`]
/// is returned, so the caller can look at other work or a stop request
/// and try again. A PUB never waits (it drops, as ZeroMQ does). Over
/// shm:// a call also waits no longer than the socket's shm block timeout:
/// a `timeout_ms` past it fails there with [`PTMP_ERR_TRANSPORT`], as a
/// blocking send would.
///
/// Returns [`PTMP_OK`], [`PTMP_TIMEOUT`] (nothing sent; `ptmp_last_error`
/// unchanged), [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`] (`timeout_ms` < 0,
/// or `tps` NULL with `ntps` > 0), [`PTMP_ERR_TRANSPORT`] or
/// [`PTMP_ERR_INTERRUPTED`].
///
/// Thread-safety: one thread at a time per sender.
///
/// # Safety
/// As `ptmp_sender_send`.
#[no_mangle]
pub unsafe extern "C" fn ptmp_sender_send_within(
    sender: *mut ptmp_sender,
    tpset: *const ptmp_tpset,
    timeout_ms: c_int,
) -> c_int {
    guard("ptmp_sender_send_within", || {
        // SAFETY: the caller promises NULL or a live handle, used by this
        // thread alone for the duration of the call.
        let s = unsafe { sender.as_mut() }.ok_or_else(|| null("sender"))?;
        // SAFETY: the caller promises NULL or a readable struct.
        let t = unsafe { tpset.as_ref() }.ok_or_else(|| null("tpset"))?;
        let timeout = u64::try_from(timeout_ms).map_err(|_| {
            Fail(
                PTMP_ERR_ARG,
                format!("timeout_ms = {timeout_ms}: must be 0 or more"),
            )
        })?;
        // SAFETY: the caller promises `ntps` readable primitives at `tps`.
        let tps = unsafe { c_tps(t) }?;
        to_rust(t, tps, &mut s.scratch);
        // Over shm:// a full ring is then waited for no longer than the
        // timeout, as a zmq socket's high-water mark is, and the block
        // timeout counts from this call, not from an earlier one that gave
        // up on another message.
        s.inner.wait_in_slices();
        let sent = s
            .inner
            .send_within(&s.scratch, Duration::from_millis(timeout))?;
        Ok(if sent { PTMP_OK } else { PTMP_TIMEOUT })
    })
}

/// How many TPSets (or messages of frames) the sender has sent so far; 0
/// for a NULL handle.
///
/// Thread-safety: one thread at a time per sender, as its other calls.
///
/// # Safety
/// `sender` is NULL or a live handle from `ptmp_sender_new`.
#[no_mangle]
pub unsafe extern "C" fn ptmp_sender_sent(sender: *const ptmp_sender) -> u64 {
    // SAFETY: the caller promises NULL or a live handle; only read.
    unsafe { sender.as_ref() }.map_or(0, |s| s.inner.sent())
}

/// Waits until at least `k` subscribers have subscribed to this PUB
/// sender's PTMP messages, or `timeout_ms` has passed (negative: no limit),
/// and stores how many there are in `*seen` (unless `seen` is NULL). The
/// first send of a PUB configured with `subscribers` waits so by itself;
/// calling this first keeps the wait out of a timed loop. Not available
/// for shm:// (its readers need no subscription).
///
/// Returns [`PTMP_OK`], [`PTMP_TIMEOUT`] (fewer came; `*seen`
/// untouched), [`PTMP_ERR_NULL`], [`PTMP_ERR_CONFIG`] (not a PUB over
/// ZeroMQ) or [`PTMP_ERR_TRANSPORT`].
///
/// Thread-safety: one thread at a time per sender.
///
/// # Safety
/// `sender` is NULL or a live handle; `seen` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ptmp_sender_wait_subscribers(
    sender: *mut ptmp_sender,
    k: usize,
    timeout_ms: c_int,
    seen: *mut usize,
) -> c_int {
    guard("ptmp_sender_wait_subscribers", || {
        // SAFETY: the caller promises NULL or a live handle, used by this
        // thread alone for the duration of the call.
        let s = unsafe { sender.as_mut() }.ok_or_else(|| null("sender"))?;
        let timeout = u64::try_from(timeout_ms).map_or(Duration::MAX, Duration::from_millis);
        match s.inner.wait_for_subscribers(k, timeout) {
            Ok(n) => {
                // SAFETY: the caller promises NULL or writable storage.
                if let Some(out) = unsafe { seen.as_mut() } {
                    *out = n;
                }
                Ok(PTMP_OK)
            }
            Err(Error::Timeout { .. }) => Ok(PTMP_TIMEOUT),
            Err(e) => Err(e.into()),
        }
    })
}

/// No message is known to be undelivered (`ptmp_delivery.undelivered_kind`).
pub const PTMP_UNDELIVERED_NONE: c_int = 0;
/// Exactly `undelivered` messages were lost: no peer ever connected, so
/// nothing left this process (a PUB drops what it sends then).
pub const PTMP_UNDELIVERED_EXACTLY: c_int = 1;
/// Some messages were still queued when the linger ran out: at most
/// `undelivered` of them did not reach a peer.
pub const PTMP_UNDELIVERED_AT_MOST: c_int = 2;
/// Not tracked: a PUB drops what no subscriber wants without telling,
/// inproc:// peers are not watched, and a linger of 0 does not wait.
pub const PTMP_UNDELIVERED_UNKNOWN: c_int = 3;

/// What `ptmp_sender_finish` found out about delivery.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
#[allow(non_camel_case_types)]
pub struct ptmp_delivery {
    /// Messages the sender accepted for sending.
    pub sent: u64,
    /// One of the `PTMP_UNDELIVERED_*` codes: how `undelivered` reads.
    pub undelivered_kind: c_int,
    /// With [`PTMP_UNDELIVERED_EXACTLY`] or [`PTMP_UNDELIVERED_AT_MOST`],
    /// how many messages (at most) did not reach a peer; 0 otherwise.
    pub undelivered: u64,
}

/// Closes a sender as `ptmp_sender_free` does, waiting (bounded by the
/// socket's linger) until what was sent has left this process, and reports
/// in `*delivery` (unless NULL) how many messages may not have reached a
/// peer. The handle is freed in every case; it must not be used again.
///
/// Returns [`PTMP_OK`] or [`PTMP_ERR_NULL`] (`sender` NULL; nothing done).
///
/// Thread-safety: no other thread may use the handle during or after this.
///
/// # Safety
/// `sender` is NULL or a live handle from `ptmp_sender_new`, not used
/// again; `delivery` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ptmp_sender_finish(
    sender: *mut ptmp_sender,
    delivery: *mut ptmp_delivery,
) -> c_int {
    guard("ptmp_sender_finish", || {
        if sender.is_null() {
            return Err(null("sender"));
        }
        // SAFETY: the caller gives back a box made by `ptmp_sender_new`
        // and never uses it again.
        let s = unsafe { Box::from_raw(sender) };
        let d = s.inner.finish();
        let (kind, n) = match d.undelivered {
            Undelivered::None => (PTMP_UNDELIVERED_NONE, 0),
            Undelivered::Exactly(n) => (PTMP_UNDELIVERED_EXACTLY, n),
            Undelivered::AtMost(n) => (PTMP_UNDELIVERED_AT_MOST, n),
            Undelivered::Unknown => (PTMP_UNDELIVERED_UNKNOWN, 0),
        };
        // SAFETY: the caller promises NULL or writable storage.
        if let Some(out) = unsafe { delivery.as_mut() } {
            *out = ptmp_delivery {
                sent: d.sent,
                undelivered_kind: kind,
                undelivered: n,
            };
        }
        Ok(PTMP_OK)
    })
}

/// Messages this receiver knows were lost before it could receive them:
/// over shm://, those a PUB writer overwrote before this reader got to
/// them. Over ZeroMQ a PUB drops without telling, so this stays 0 there
/// (compare the TPSets' `count`s instead). 0 for a NULL handle.
///
/// Thread-safety: one thread at a time per receiver, as its other calls.
///
/// # Safety
/// `receiver` is NULL or a live handle from `ptmp_receiver_new`.
#[no_mangle]
pub unsafe extern "C" fn ptmp_receiver_lost(receiver: *const ptmp_receiver) -> u64 {
    // SAFETY: the caller promises NULL or a live handle; only read.
    unsafe { receiver.as_ref() }.map_or(0, |r| r.inner.lost())
}

/// Closes a sender and frees its handle. Like PTMP, it first waits (bounded
/// by the socket's linger) until what was sent has left this process, so
/// "send N and exit" loses nothing. NULL is accepted and does nothing.
///
/// Thread-safety: no other thread may use the handle during or after this.
///
/// # Safety
/// `sender` is NULL or a live handle from `ptmp_sender_new`, not used again.
#[no_mangle]
pub unsafe extern "C" fn ptmp_sender_free(sender: *mut ptmp_sender) {
    guard("ptmp_sender_free", || {
        if !sender.is_null() {
            // SAFETY: the caller gives back a box made by `ptmp_sender_new`
            // and never uses it again.
            drop(unsafe { Box::from_raw(sender) });
        }
        Ok(PTMP_OK)
    });
}

/// Opens a receiver from PTMP's JSON socket configuration, e.g.
/// `{"socket":{"type":"PULL","connect":["tcp://127.0.0.1:5678"]}}`, and
/// stores the handle in `*out` (NULL on failure).
///
/// Returns as `ptmp_sender_new`.
///
/// Thread-safety: may be called from any thread; the new handle is then
/// used by one thread at a time.
///
/// # Safety
/// As `ptmp_sender_new`.
#[no_mangle]
pub unsafe extern "C" fn ptmp_receiver_new(
    json_config: *const c_char,
    out: *mut *mut ptmp_receiver,
) -> c_int {
    guard("ptmp_receiver_new", || {
        if out.is_null() {
            return Err(null("out"));
        }
        // SAFETY: `out` is not NULL and the caller promises it is writable.
        unsafe { *out = std::ptr::null_mut() };
        // SAFETY: the caller promises NULL or a NUL-terminated string.
        let json = unsafe { c_str(json_config, "json_config") }?;
        let inner = Receiver::from_json(json)?;
        let handle = Box::new(ptmp_receiver {
            frames: Frames::new(),
            endpoints: c_strings(inner.bound_endpoints()),
            inner,
            scratch: TPSet::default(),
        });
        // SAFETY: as above; the box goes back through `ptmp_receiver_free`.
        unsafe { *out = Box::into_raw(handle) };
        Ok(PTMP_OK)
    })
}

/// Receives one TPSet into `*out`, waiting at most `timeout_ms`
/// milliseconds (a negative value waits forever, 0 only looks).
///
/// Returns [`PTMP_OK`] with `*out` filled; [`PTMP_TIMEOUT`] (positive) when
/// nothing came in time, `*out` untouched; or an error: [`PTMP_ERR_NULL`],
/// [`PTMP_ERR_ARG`] (`out->tps` NULL with a non-zero `tps_capacity`),
/// [`PTMP_ERR_MESSAGE`] (a message that is not a TPSet was skipped; call
/// again), [`PTMP_ERR_TRANSPORT`], [`PTMP_ERR_INTERRUPTED`] or
/// [`PTMP_ERR_ALLOC`]. On an error `*out` keeps its old `tps` block.
///
/// `out->tps` must be NULL or a `malloc` block of `out->tps_capacity`
/// primitives; it is grown with `realloc` when a set has more, and kept, so
/// receiving into the same struct allocates nothing once it has grown.
/// Free it with `ptmp_tpset_clear`.
///
/// Thread-safety: one thread at a time per receiver.
///
/// # Safety
/// `receiver` is NULL or a live handle from `ptmp_receiver_new`; `out` is
/// NULL or points to a writable `ptmp_tpset` obeying the rule above.
#[no_mangle]
pub unsafe extern "C" fn ptmp_receiver_recv(
    receiver: *mut ptmp_receiver,
    out: *mut ptmp_tpset,
    timeout_ms: c_int,
) -> c_int {
    guard("ptmp_receiver_recv", || {
        // SAFETY: the caller promises NULL or a live handle, used by this
        // thread alone for the duration of the call.
        let r = unsafe { receiver.as_mut() }.ok_or_else(|| null("receiver"))?;
        // SAFETY: the caller promises NULL or a writable struct.
        let o = unsafe { out.as_mut() }.ok_or_else(|| null("out"))?;
        if o.tps.is_null() && o.tps_capacity != 0 {
            return Err(Fail(
                PTMP_ERR_ARG,
                format!("out.tps is NULL but out.tps_capacity = {}", o.tps_capacity),
            ));
        }
        let timeout = u64::try_from(timeout_ms).ok().map(Duration::from_millis);
        if !r.inner.recv_into(&mut r.scratch, timeout)? {
            return Ok(PTMP_TIMEOUT);
        }
        // SAFETY: `o.tps` is NULL or a malloc block of `tps_capacity`
        // primitives, as the caller promises and this library keeps.
        unsafe { to_c(&r.scratch, o) }?;
        Ok(PTMP_OK)
    })
}

/// Receives one message as raw frames, schema-blind, waiting at most
/// `timeout_ms` (negative: forever); the number of frames goes to
/// `*nframes`, and `ptmp_receiver_frame` gives each. For a PTMP TPSet
/// message, frame 1 is the set's protobuf encoding.
///
/// Returns [`PTMP_OK`], [`PTMP_TIMEOUT`] (`*nframes` is 0),
/// [`PTMP_ERR_NULL`], [`PTMP_ERR_TRANSPORT`] or [`PTMP_ERR_INTERRUPTED`].
///
/// Thread-safety: one thread at a time per receiver.
///
/// # Safety
/// `receiver` is NULL or a live handle; `nframes` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ptmp_receiver_recv_frames(
    receiver: *mut ptmp_receiver,
    timeout_ms: c_int,
    nframes: *mut usize,
) -> c_int {
    guard("ptmp_receiver_recv_frames", || {
        // SAFETY: the caller promises NULL or a live handle.
        let r = unsafe { receiver.as_mut() }.ok_or_else(|| null("receiver"))?;
        // SAFETY: the caller promises NULL or writable storage.
        let n = unsafe { nframes.as_mut() }.ok_or_else(|| null("nframes"))?;
        *n = 0;
        r.frames.clear();
        let timeout = u64::try_from(timeout_ms).ok().map(Duration::from_millis);
        if !r.inner.recv_raw_into(&mut r.frames, timeout)? {
            return Ok(PTMP_TIMEOUT);
        }
        *n = r.frames.len();
        Ok(PTMP_OK)
    })
}

/// Frame `index` of the message the last `ptmp_receiver_recv_frames`
/// received: its bytes to `*data` and length to `*len`. The bytes belong to
/// the receiver and stay valid until its next receive or free.
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_NULL`] or [`PTMP_ERR_ARG`] (no such
/// frame).
///
/// Thread-safety: one thread at a time per receiver.
///
/// # Safety
/// `receiver` is NULL or a live handle; `data` and `len` are NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn ptmp_receiver_frame(
    receiver: *const ptmp_receiver,
    index: usize,
    data: *mut *const u8,
    len: *mut usize,
) -> c_int {
    guard("ptmp_receiver_frame", || {
        // SAFETY: the caller promises NULL or a live handle.
        let r = unsafe { receiver.as_ref() }.ok_or_else(|| null("receiver"))?;
        // SAFETY: the caller promises NULL or writable storage, each.
        let (d, l) = unsafe { (data.as_mut(), len.as_mut()) };
        let (d, l) = (
            d.ok_or_else(|| null("data"))?,
            l.ok_or_else(|| null("len"))?,
        );
        let f = r.frames.get(index).ok_or_else(|| {
            Fail(
                PTMP_ERR_ARG,
                format!(
                    "frame {index}: the last message received has {} frame(s)",
                    r.frames.len()
                ),
            )
        })?;
        *d = f.as_ptr();
        *l = f.len();
        Ok(PTMP_OK)
    })
}

/// Closes a receiver and frees its handle. NULL is accepted and does
/// nothing.
///
/// Thread-safety: no other thread may use the handle during or after this.
///
/// # Safety
/// `receiver` is NULL or a live handle from `ptmp_receiver_new`, not used
/// again.
#[no_mangle]
pub unsafe extern "C" fn ptmp_receiver_free(receiver: *mut ptmp_receiver) {
    guard("ptmp_receiver_free", || {
        if !receiver.is_null() {
            // SAFETY: the caller gives back a box made by
            // `ptmp_receiver_new` and never uses it again.
            drop(unsafe { Box::from_raw(receiver) });
        }
        Ok(PTMP_OK)
    });
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

/// The `index`th address the sender bound, with a `*` port resolved to
/// the port the system chose (e.g. `tcp://127.0.0.1:41234`), or NULL if it
/// bound fewer. The string belongs to the handle and lives as long as it.
///
/// Thread-safety: one thread at a time per sender, as its other calls.
///
/// # Safety
/// `sender` is NULL or a live handle from `ptmp_sender_new`.
#[no_mangle]
pub unsafe extern "C" fn ptmp_sender_endpoint(
    sender: *const ptmp_sender,
    index: usize,
) -> *const c_char {
    // SAFETY: the caller promises NULL or a live handle; only the
    // endpoints fixed at creation are read.
    unsafe { sender.as_ref() }
        .and_then(|s| s.endpoints.get(index))
        .map_or(std::ptr::null(), |e| e.as_ptr())
}

/// The `index`th address the receiver bound, as `ptmp_sender_endpoint`.
///
/// Thread-safety: one thread at a time per receiver, as its other calls.
///
/// # Safety
/// `receiver` is NULL or a live handle from `ptmp_receiver_new`.
#[no_mangle]
pub unsafe extern "C" fn ptmp_receiver_endpoint(
    receiver: *const ptmp_receiver,
    index: usize,
) -> *const c_char {
    // SAFETY: the caller promises NULL or a live handle; only the
    // endpoints fixed at creation are read.
    unsafe { receiver.as_ref() }
        .and_then(|r| r.endpoints.get(index))
        .map_or(std::ptr::null(), |e| e.as_ptr())
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
