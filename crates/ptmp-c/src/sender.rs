//! Senders: opened from PTMP's JSON, sending typed sets, raw bytes and
//! frames, finishing with what was delivered.

#[allow(unused_imports)]
use crate::*;
use ptmp_core::data::{decode_tpset_into, VERSION_FRAME};
use ptmp_core::{Error, Sender, SocketConfig, TPSet, Undelivered};
use std::ffi::{c_char, c_int};
use std::time::Duration;

/// Opens a sender from PTMP's JSON socket configuration, e.g.
/// `{"socket":{"type":"PUSH","bind":["tcp://127.0.0.1:5678"]}}`, and stores
/// the handle in `*out` (NULL on failure).
///
/// A `"discovery"` key beside `"socket"` turns presence on for names
/// (`name://NODE/PORT`), as `ptmp_use_discovery` does, with the keys of
/// `ptmp_run_start`'s (`group`, `secret_file`, `timeout`,
/// `liveness_timeout`; not `announce`): e.g.
/// `{"discovery":{"group":"exp1"},"socket":{"type":"PUSH","bind":["name://src/out"]}}`.
/// When presence is on already, the key must ask for the same group and
/// secret. Call `ptmp_withdraw_names` before the program exits.
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`],
/// [`PTMP_ERR_CONFIG`] (the message names the key and value; also a
/// `"discovery"` key that is wrong or asks for another group than the one
/// on) or [`PTMP_ERR_TRANSPORT`] (also presence that could not start, or
/// a name connected to that did not appear in time).
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
        let cfg = SocketConfig::from_json(json)?;
        crate::names::for_socket(json)?;
        let inner = Sender::following(&cfg)?;
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
/// unchanged), [`PTMP_ERR_REFUSED`] (nothing sent, and nothing will be:
/// a CURVE server refused the connection), [`PTMP_ERR_NULL`],
/// [`PTMP_ERR_ARG`] (`timeout_ms` < 0, or `tps` NULL with `ntps` > 0),
/// [`PTMP_ERR_TRANSPORT`] or [`PTMP_ERR_INTERRUPTED`].
///
/// A sender that connects to a peer by name (`name://NODE/PORT`) follows
/// it: after a send that timed out because the peer is gone, and the
/// peer is announced elsewhere now, the sender is connected there and the
/// next send goes to it.
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
        if !sent {
            if let Some(why) = s.inner.refused() {
                return Err(Fail(PTMP_ERR_REFUSED, format!("refused: {why}")));
            }
            // No room: a peer connected to by name may have come back
            // elsewhere; the next send goes there.
            s.inner.follow_moved()?;
        }
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
    /// 1 when a CURVE server refused this sender's connection (what was
    /// sent there never left; `ptmp_sender_finish` then returns
    /// [`PTMP_ERR_REFUSED`] naming it), 0 otherwise.
    pub refused: c_int,
}

/// Closes a sender as `ptmp_sender_free` does, waiting (bounded by the
/// socket's linger) until what was sent has left this process, and reports
/// in `*delivery` (unless NULL) how many messages may not have reached a
/// peer. The handle is freed in every case; it must not be used again.
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_REFUSED`] (a CURVE server refused the
/// connection; `*delivery` is filled all the same) or [`PTMP_ERR_NULL`]
/// (`sender` NULL; nothing done).
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
                refused: c_int::from(d.refused.is_some()),
            };
        }
        match d.refused {
            Some(why) => Err(Fail(PTMP_ERR_REFUSED, format!("refused: {why}"))),
            None => Ok(PTMP_OK),
        }
    })
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
