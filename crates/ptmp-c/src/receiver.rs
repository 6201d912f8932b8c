//! Receivers: opened from PTMP's JSON, receiving typed sets or frames.

#[allow(unused_imports)]
use crate::*;
use ptmp_core::{Frames, Receiver, SocketConfig, TPSet};
use std::ffi::{c_char, c_int};
use std::time::{Duration, Instant};

/// How often an idle receive looks whether a CURVE server refused it or a
/// peer it connects to by name moved.
const IDLE_CHECK: Duration = Duration::from_millis(100);

/// Waits as `timeout` says (`None`: for ever) for one message through
/// `get`. A CURVE client is refused by its server without a message ever
/// coming (libzmq does not retry), and a peer connected to by name may
/// come back elsewhere, so while presence is on or the receiver is a CURVE
/// client the wait is taken in slices. Between them a refusal ends it
/// with [`PTMP_ERR_REFUSED`], and a moved peer is followed
/// ([`Receiver::follow_moved`], which reads everything the old socket
/// holds before the new one). Other receivers wait in one call.
fn wait_for(
    r: &mut ptmp_receiver,
    timeout: Option<Duration>,
    mut get: impl FnMut(&mut ptmp_receiver, Option<Duration>) -> ptmp_core::Result<bool>,
) -> Result<bool, Fail> {
    let client = matches!(
        r.inner.config().curve(),
        Some(ptmp_core::curve::Curve::Client { .. })
    );
    if !client && !ptmp_core::names::installed() {
        return Ok(get(r, timeout)?);
    }
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let left = deadline.map_or(IDLE_CHECK, |d| {
            d.saturating_duration_since(Instant::now()).min(IDLE_CHECK)
        });
        if get(r, Some(left))? {
            return Ok(true);
        }
        if let Some(why) = r.inner.refused() {
            return Err(Fail(PTMP_ERR_REFUSED, format!("refused: {why}")));
        }
        // A receiver made again where its peer moved reads the old
        // socket first: one more look at once.
        if r.inner.follow_moved()? && get(r, Some(Duration::ZERO))? {
            return Ok(true);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(false);
        }
    }
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
        let cfg = SocketConfig::from_json(json)?;
        crate::names::for_socket(json)?;
        let inner = Receiver::following(&cfg)?;
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
/// again), [`PTMP_ERR_REFUSED`] (a CURVE server refused this receiver's
/// connection), [`PTMP_ERR_TRANSPORT`], [`PTMP_ERR_INTERRUPTED`] or
/// [`PTMP_ERR_ALLOC`]. On an error `*out` keeps its old `tps` block.
///
/// A receiver that connects to a peer by name (`name://NODE/PORT`)
/// follows it: when the peer comes back announced elsewhere (another
/// host, port or process), the receiver is connected there while the call
/// waits, after one last look at what reached the old connection.
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
        if !wait_for(r, timeout, |r, t| r.inner.recv_into(&mut r.scratch, t))? {
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
/// [`PTMP_ERR_NULL`], [`PTMP_ERR_REFUSED`], [`PTMP_ERR_TRANSPORT`] or
/// [`PTMP_ERR_INTERRUPTED`].
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
        if !wait_for(r, timeout, |r, t| r.inner.recv_raw_into(&mut r.frames, t))? {
            return Ok(PTMP_TIMEOUT);
        }
        *n = r.frames.len();
        Ok(PTMP_OK)
    })
}

/// Receives one message and sends it on through `sender`, frames as they
/// came, waiting at most `timeout_ms` (negative: forever) for it. Between
/// two shm:// channels the message is copied once, from one ring's slot
/// into the other's, and never passed on if its slot was overwritten
/// while it was copied (a PUB channel lapping this receiver: counted in
/// `ptmp_receiver_lost`, and the next message taken); other transports go
/// through a buffer the receiver keeps. The sender waits for room as
/// `ptmp_sender_send` does.
///
/// Returns [`PTMP_OK`], [`PTMP_TIMEOUT`] (nothing came), [`PTMP_ERR_NULL`],
/// [`PTMP_ERR_REFUSED`], [`PTMP_ERR_TRANSPORT`] or
/// [`PTMP_ERR_INTERRUPTED`]. A message taken whose send failed is kept
/// by the receiver, and the next call sends it before it receives
/// anything: nothing this receiver took is lost.
///
/// Thread-safety: one thread at a time per receiver and per sender.
///
/// # Safety
/// `receiver` and `sender` are NULL or live handles from
/// `ptmp_receiver_new` and `ptmp_sender_new`.
#[no_mangle]
pub unsafe extern "C" fn ptmp_receiver_forward(
    receiver: *mut ptmp_receiver,
    sender: *mut ptmp_sender,
    timeout_ms: c_int,
) -> c_int {
    guard("ptmp_receiver_forward", || {
        // SAFETY: the caller promises NULL or a live handle, used by this
        // thread alone for the duration of the call.
        let r = unsafe { receiver.as_mut() }.ok_or_else(|| null("receiver"))?;
        // SAFETY: as for the receiver.
        let s = unsafe { sender.as_mut() }.ok_or_else(|| null("sender"))?;
        let timeout = u64::try_from(timeout_ms).ok().map(Duration::from_millis);
        if !wait_for(r, timeout, |r, t| r.inner.forward(&mut s.inner, t))? {
            return Ok(PTMP_TIMEOUT);
        }
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
