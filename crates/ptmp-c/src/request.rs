//! Request and response: a client asks a server and gets its answer, or a
//! code that says why there is none; a server hands each request over to
//! be answered, or refused, from any thread.

#[allow(unused_imports)]
use crate::*;
use ptmp_core::request::{Failure, Reply, RequestId};
use ptmp_core::{Client, Server, SocketConfig};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::time::{Duration, Instant};

/// A request got no answer within its time (a server was connected).
pub const PTMP_ERR_REQ_TIMEOUT: c_int = -13;
/// No server was connected to take a request within its time (over
/// inproc://, where connections are not watched, this reads as
/// [`PTMP_ERR_REQ_TIMEOUT`]).
pub const PTMP_ERR_REQ_NO_SERVER: c_int = -14;
/// A server's connection ended while the request was out: it will not be
/// answered. Every request out at that moment fails so.
pub const PTMP_ERR_REQ_SERVER_GONE: c_int = -15;
/// The server refused the request; `ptmp_last_error()` carries its words
/// (after "refused by the server: ").
pub const PTMP_ERR_REQ_REFUSED: c_int = -16;
/// The server could not read the request (the peer speaks another
/// protocol); the message carries its words.
pub const PTMP_ERR_REQ_UNREADABLE: c_int = -17;
/// The request is over the client's `max_message` limit in bytes; nothing
/// was sent.
pub const PTMP_ERR_REQ_TOO_BIG: c_int = -18;
/// The client already has as many requests out as it may (see
/// `ptmp_client_set_max_in_flight`); nothing was sent.
pub const PTMP_ERR_REQ_TOO_MANY: c_int = -19;

/// The code a request's failure is returned as.
pub(crate) fn failure_code(f: &Failure) -> c_int {
    match f {
        Failure::TimedOut { .. } => PTMP_ERR_REQ_TIMEOUT,
        Failure::NoServer { .. } => PTMP_ERR_REQ_NO_SERVER,
        Failure::ServerGone { .. } => PTMP_ERR_REQ_SERVER_GONE,
        Failure::Refused(_) => PTMP_ERR_REQ_REFUSED,
        Failure::Unreadable(_) => PTMP_ERR_REQ_UNREADABLE,
        Failure::TooBig { .. } => PTMP_ERR_REQ_TOO_BIG,
        Failure::TooMany { .. } => PTMP_ERR_REQ_TOO_MANY,
    }
}

/// Bytes the library hands over: an answer. `data` points to `len` bytes
/// followed by a NUL byte (not counted in `len`), so a text answer reads
/// as a C string; `capacity` is the size of the `malloc` block at `data`.
///
/// Start from a zeroed struct. A call that fills it grows the block with
/// `realloc` when needed and keeps it, so asking in a loop into the same
/// struct allocates nothing once it has grown; `ptmp_bytes_clear` frees it
/// (with `free`).
#[repr(C)]
#[derive(Debug)]
#[allow(non_camel_case_types)]
pub struct ptmp_bytes {
    /// The bytes: NULL, or a `malloc` block of `capacity` bytes.
    pub data: *mut u8,
    /// How many bytes the answer has.
    pub len: usize,
    /// The size of the block at `data`.
    pub capacity: usize,
}

/// A client (opaque): sends requests to one or more servers and gets their
/// answers. Made by `ptmp_client_new` or `ptmp_client_new_config`.
#[allow(non_camel_case_types)]
pub struct ptmp_client {
    inner: Client,
    address: String,
}

/// A server (opaque): receives requests to answer. Made by
/// `ptmp_server_new` or `ptmp_server_new_config`.
#[allow(non_camel_case_types)]
pub struct ptmp_server {
    inner: Server,
    endpoints: Vec<CString>,
}

/// One request a server received (opaque): its bytes, and how to answer
/// it. Given by `ptmp_server_recv`; consumed by `ptmp_request_answer`,
/// `ptmp_request_refuse` or `ptmp_request_free`.
#[allow(non_camel_case_types)]
pub struct ptmp_request {
    /// The request's bytes, then a NUL byte not counted in `len`.
    body: Vec<u8>,
    len: usize,
    reply: Reply,
}

/// A request's time: 0 or more milliseconds.
fn request_time(timeout_ms: c_int) -> Result<Duration, Fail> {
    u64::try_from(timeout_ms)
        .map(Duration::from_millis)
        .map_err(|_| {
            Fail(
                PTMP_ERR_ARG,
                format!("timeout_ms = {timeout_ms}: a request's time must be 0 or more"),
            )
        })
}

/// Reads `len` bytes at `data` (NULL allowed when `len` is 0).
///
/// # Safety
/// `data` is NULL or points to `len` readable bytes that outlive the
/// borrow.
unsafe fn c_bytes<'a>(data: *const c_void, len: usize, what: &str) -> Result<&'a [u8], Fail> {
    if len == 0 {
        Ok(&[])
    } else if data.is_null() {
        Err(Fail(
            PTMP_ERR_NULL,
            format!("{what} is NULL but its length is {len}"),
        ))
    } else {
        // SAFETY: not NULL, and the caller promises `len` readable bytes.
        Ok(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) })
    }
}

/// Refuses a struct to fill whose `data` is NULL while `capacity` is not 0.
fn check_bytes(o: &ptmp_bytes, what: &str) -> Result<(), Fail> {
    if o.data.is_null() && o.capacity != 0 {
        return Err(Fail(
            PTMP_ERR_ARG,
            format!("{what}.data is NULL but {what}.capacity = {}", o.capacity),
        ));
    }
    Ok(())
}

/// Copies `body` into `o`, growing its block, and ends it with a NUL.
///
/// # Safety
/// `o.data` is NULL or a `malloc` block of `o.capacity` bytes.
unsafe fn fill(body: &[u8], o: &mut ptmp_bytes) -> Result<(), Fail> {
    let need = body.len().saturating_add(1);
    if o.data.is_null() || need > o.capacity {
        // SAFETY: `o.data` is NULL or a malloc block (the function's
        // contract); realloc(NULL, n) is malloc(n).
        let p = unsafe { libc::realloc(o.data.cast(), need) }.cast::<u8>();
        if p.is_null() {
            return Err(Fail(
                PTMP_ERR_ALLOC,
                format!("cannot allocate {need} bytes for the answer"),
            ));
        }
        o.data = p;
        o.capacity = need;
    }
    // SAFETY: the block holds `capacity >= body.len() + 1` bytes, and a
    // Rust slice never overlaps a malloc block the caller owns.
    unsafe {
        std::ptr::copy_nonoverlapping(body.as_ptr(), o.data, body.len());
        o.data.add(body.len()).write(0);
    }
    o.len = body.len();
    Ok(())
}

/// The message of a failed request, as `Error::Request` says it.
fn failed(c: &ptmp_client, id: RequestId, f: &Failure) -> Fail {
    Fail(
        failure_code(f),
        format!("request {} to {}: {f}", id.0, c.address),
    )
}

/// Frees `bytes->data` (with `free`) and sets every field of `*bytes` to
/// zero. NULL is accepted and does nothing.
///
/// Thread-safety: touches only `*bytes`; any thread that owns it.
///
/// # Safety
/// `bytes` is NULL or points to a writable `ptmp_bytes` whose `data` is
/// NULL or a `malloc` block (as this library leaves it).
#[no_mangle]
pub unsafe extern "C" fn ptmp_bytes_clear(bytes: *mut ptmp_bytes) {
    guard("ptmp_bytes_clear", || {
        // SAFETY: the caller promises NULL or a writable struct.
        if let Some(b) = unsafe { bytes.as_mut() } {
            // SAFETY: `data` is NULL or a malloc block, as the caller
            // promises; free(NULL) does nothing.
            unsafe { libc::free(b.data.cast()) };
            *b = ptmp_bytes {
                data: std::ptr::null_mut(),
                len: 0,
                capacity: 0,
            };
        }
        Ok(PTMP_OK)
    });
}

/// The place a new handle goes: `*out`, set to NULL until it is made.
///
/// # Safety
/// `out` is NULL or writable storage for a pointer, for the lifetime.
unsafe fn out_slot<'a, T>(out: *mut *mut T) -> Result<&'a mut *mut T, Fail> {
    // SAFETY: the caller promises NULL or writable storage.
    let slot = unsafe { out.as_mut() }.ok_or_else(|| null("out"))?;
    *slot = std::ptr::null_mut();
    Ok(slot)
}

/// Opens a client of the server(s) at `address` (`tcp://HOST:PORT`,
/// `ipc://PATH`, `inproc://NAME`, or `name://NODE/PORT` once presence is
/// on) and stores the handle in `*out` (NULL on failure). A server need
/// not be there yet: requests wait for one within their time.
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`] (not UTF-8),
/// [`PTMP_ERR_CONFIG`] (an address that is not one) or
/// [`PTMP_ERR_TRANSPORT`].
///
/// Thread-safety: any thread; the new handle is then used by one thread
/// at a time.
///
/// # Safety
/// `address` is NULL or a NUL-terminated string; `out` is NULL or points
/// to writable storage for a pointer.
#[no_mangle]
pub unsafe extern "C" fn ptmp_client_new(
    address: *const c_char,
    out: *mut *mut ptmp_client,
) -> c_int {
    guard("ptmp_client_new", || {
        // SAFETY: the caller promises NULL or writable storage.
        let out = unsafe { out_slot(out) }?;
        // SAFETY: the caller promises NULL or a NUL-terminated string.
        let address = unsafe { c_str(address, "address") }?;
        let h = ptmp_client {
            inner: Client::connect(address)?,
            address: address.to_string(),
        };
        // The box goes back through `ptmp_client_free`.
        *out = Box::into_raw(Box::new(h));
        Ok(PTMP_OK)
    })
}

/// Opens a client from PTMP's JSON socket configuration, of type DEALER:
/// for CURVE keys, several servers (requests are dealt among them), a
/// `max_message` limit, heartbeats, e.g.
/// `{"socket":{"type":"DEALER","connect":["tcp://127.0.0.1:5680"]}}`.
/// A `"discovery"` key beside `"socket"` turns presence on for names, as
/// for `ptmp_sender_new`. Stores the handle in `*out` (NULL on failure).
///
/// Returns as `ptmp_client_new`; [`PTMP_ERR_CONFIG`] also for a type other
/// than DEALER or an shm:// address (requests do not go over shm:// yet).
///
/// Thread-safety: as `ptmp_client_new`.
///
/// # Safety
/// As `ptmp_client_new`, with `json_config` for `address`.
#[no_mangle]
pub unsafe extern "C" fn ptmp_client_new_config(
    json_config: *const c_char,
    out: *mut *mut ptmp_client,
) -> c_int {
    guard("ptmp_client_new_config", || {
        // SAFETY: the caller promises NULL or writable storage.
        let out = unsafe { out_slot(out) }?;
        // SAFETY: the caller promises NULL or a NUL-terminated string.
        let json = unsafe { c_str(json_config, "json_config") }?;
        let cfg = SocketConfig::from_json(json)?;
        crate::names::for_socket(json)?;
        let address: Vec<&str> = cfg.endpoints().map(|(_, e)| e.address.as_str()).collect();
        let address = address.join(",");
        let h = ptmp_client {
            inner: Client::new(cfg)?,
            address,
        };
        // The box goes back through `ptmp_client_free`.
        *out = Box::into_raw(Box::new(h));
        Ok(PTMP_OK)
    })
}

/// Sends one request of `len` bytes at `data` and waits for its answer,
/// for at most `timeout_ms` milliseconds in all (0 or more). The answer
/// goes to `*answer` (see `ptmp_bytes`: start from a zeroed struct, free
/// with `ptmp_bytes_clear`). Answers to requests sent before with
/// `ptmp_client_send` that come meanwhile are kept for `ptmp_client_recv`.
///
/// Returns [`PTMP_OK`] with the answer, or why there is none, each with
/// its words in `ptmp_last_error()`: [`PTMP_ERR_REQ_TIMEOUT`],
/// [`PTMP_ERR_REQ_NO_SERVER`], [`PTMP_ERR_REQ_SERVER_GONE`],
/// [`PTMP_ERR_REQ_REFUSED`] (the server's words in the message),
/// [`PTMP_ERR_REQ_UNREADABLE`], [`PTMP_ERR_REQ_TOO_BIG`],
/// [`PTMP_ERR_REQ_TOO_MANY`]; or [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`]
/// (`timeout_ms` < 0, `answer->data` NULL with a non-zero `capacity`),
/// [`PTMP_ERR_TRANSPORT`], [`PTMP_ERR_INTERRUPTED`], [`PTMP_ERR_ALLOC`].
/// On a failure `answer->len` is 0 and its block is kept.
///
/// Thread-safety: one thread at a time per client.
///
/// # Safety
/// `client` is NULL or a live handle; `data` is NULL (only with `len` 0)
/// or points to `len` readable bytes; `answer` is NULL or points to a
/// writable `ptmp_bytes` whose `data` is NULL or a `malloc` block of
/// `capacity` bytes.
#[no_mangle]
pub unsafe extern "C" fn ptmp_client_request(
    client: *mut ptmp_client,
    data: *const c_void,
    len: usize,
    timeout_ms: c_int,
    answer: *mut ptmp_bytes,
) -> c_int {
    guard("ptmp_client_request", || {
        // SAFETY: the caller promises NULL or a live handle, used by this
        // thread alone for the duration of the call.
        let c = unsafe { client.as_mut() }.ok_or_else(|| null("client"))?;
        // SAFETY: the caller promises NULL or a writable struct.
        let o = unsafe { answer.as_mut() }.ok_or_else(|| null("answer"))?;
        check_bytes(o, "answer")?;
        o.len = 0;
        // SAFETY: the caller promises `len` readable bytes at `data`.
        let body = unsafe { c_bytes(data, len, "data") }?;
        let timeout = request_time(timeout_ms)?;
        let got = c.inner.request(body, timeout)?;
        // SAFETY: `o.data` is NULL or a malloc block of `capacity` bytes,
        // as the caller promises and this library keeps.
        unsafe { fill(&got, o) }?;
        Ok(PTMP_OK)
    })
}

/// Sends one request without waiting for its answer, to be answered
/// within `timeout_ms` milliseconds (0 or more), and stores its id (never
/// 0) in `*id`; its answer, or why there is none, comes from
/// `ptmp_client_recv` with that id. Many requests may be out at once,
/// answered in any order. Waits up to `timeout_ms` for room when the
/// socket's queue is full.
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_REQ_TOO_BIG`], [`PTMP_ERR_REQ_TOO_MANY`],
/// [`PTMP_ERR_REQ_NO_SERVER`] (no room for it within its time),
/// [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`] (`timeout_ms` < 0),
/// [`PTMP_ERR_TRANSPORT`] or [`PTMP_ERR_INTERRUPTED`]; `*id` is 0 unless
/// it was sent.
///
/// Thread-safety: one thread at a time per client.
///
/// # Safety
/// `client` is NULL or a live handle; `data` is NULL (only with `len` 0)
/// or points to `len` readable bytes; `id` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ptmp_client_send(
    client: *mut ptmp_client,
    data: *const c_void,
    len: usize,
    timeout_ms: c_int,
    id: *mut u64,
) -> c_int {
    guard("ptmp_client_send", || {
        // SAFETY: the caller promises NULL or a live handle, used by this
        // thread alone for the duration of the call.
        let c = unsafe { client.as_mut() }.ok_or_else(|| null("client"))?;
        // SAFETY: the caller promises NULL or writable storage.
        let id = unsafe { id.as_mut() }.ok_or_else(|| null("id"))?;
        *id = 0;
        // SAFETY: the caller promises `len` readable bytes at `data`.
        let body = unsafe { c_bytes(data, len, "data") }?;
        let timeout = request_time(timeout_ms)?;
        *id = c.inner.send(body, timeout)?.0;
        Ok(PTMP_OK)
    })
}

/// The next outcome of a request sent with `ptmp_client_send`, waiting at
/// most `timeout_ms` milliseconds (negative: until one comes): its id goes
/// to `*id`, and an answer to `*answer` (as for `ptmp_client_request`).
///
/// Returns [`PTMP_OK`] with the answer to request `*id`; one of the
/// `PTMP_ERR_REQ_*` codes when request `*id` failed (its words in
/// `ptmp_last_error()`); [`PTMP_TIMEOUT`] (`*id` is 0) when nothing came
/// in time, or at once when no request is out; or, `*id` 0,
/// [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`], [`PTMP_ERR_TRANSPORT`] or
/// [`PTMP_ERR_INTERRUPTED`]; or [`PTMP_ERR_ALLOC`] when the answer to
/// `*id` came but could not be stored (it is lost). `answer->len` is 0
/// unless an answer came.
///
/// Thread-safety: one thread at a time per client.
///
/// # Safety
/// `client` is NULL or a live handle; `id` is NULL or writable; `answer`
/// as for `ptmp_client_request`.
#[no_mangle]
pub unsafe extern "C" fn ptmp_client_recv(
    client: *mut ptmp_client,
    timeout_ms: c_int,
    id: *mut u64,
    answer: *mut ptmp_bytes,
) -> c_int {
    guard("ptmp_client_recv", || {
        // SAFETY: the caller promises NULL or a live handle, used by this
        // thread alone for the duration of the call.
        let c = unsafe { client.as_mut() }.ok_or_else(|| null("client"))?;
        // SAFETY: the caller promises NULL or writable storage.
        let id = unsafe { id.as_mut() }.ok_or_else(|| null("id"))?;
        *id = 0;
        // SAFETY: the caller promises NULL or a writable struct.
        let o = unsafe { answer.as_mut() }.ok_or_else(|| null("answer"))?;
        check_bytes(o, "answer")?;
        o.len = 0;
        let wait = u64::try_from(timeout_ms).ok().map(Duration::from_millis);
        let Some((rid, outcome)) = c.inner.recv(wait)? else {
            return Ok(PTMP_TIMEOUT);
        };
        *id = rid.0;
        match outcome {
            // SAFETY: `o.data` is NULL or a malloc block of `capacity`
            // bytes, as the caller promises and this library keeps.
            Ok(got) => unsafe { fill(&got, o) }.map(|()| PTMP_OK),
            Err(f) => Err(failed(c, rid, &f)),
        }
    })
}

/// Allows at most `n` requests out at once (at least 1; 1024 unless set):
/// a `ptmp_client_send` beyond fails with [`PTMP_ERR_REQ_TOO_MANY`].
///
/// Returns [`PTMP_OK`] or [`PTMP_ERR_NULL`].
///
/// Thread-safety: one thread at a time per client.
///
/// # Safety
/// `client` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn ptmp_client_set_max_in_flight(
    client: *mut ptmp_client,
    n: usize,
) -> c_int {
    guard("ptmp_client_set_max_in_flight", || {
        // SAFETY: the caller promises NULL or a live handle.
        let c = unsafe { client.as_mut() }.ok_or_else(|| null("client"))?;
        c.inner.set_max_in_flight(n);
        Ok(PTMP_OK)
    })
}

/// How many requests sent with `ptmp_client_send` are out, waiting for an
/// answer; 0 for a NULL handle.
///
/// Thread-safety: one thread at a time per client.
///
/// # Safety
/// `client` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn ptmp_client_in_flight(client: *const ptmp_client) -> usize {
    // SAFETY: the caller promises NULL or a live handle; only read.
    unsafe { client.as_ref() }.map_or(0, |c| c.inner.in_flight())
}

/// Closes a client and frees its handle at once: answers to requests
/// still out are not waited for. NULL is accepted and does nothing.
///
/// Thread-safety: no other thread may use the handle during or after this.
///
/// # Safety
/// `client` is NULL or a live handle, not used again.
#[no_mangle]
pub unsafe extern "C" fn ptmp_client_free(client: *mut ptmp_client) {
    guard("ptmp_client_free", || {
        if !client.is_null() {
            // SAFETY: the caller gives back a box made by `ptmp_client_new`
            // and never uses it again.
            drop(unsafe { Box::from_raw(client) });
        }
        Ok(PTMP_OK)
    });
}

fn server_handle(inner: Server) -> ptmp_server {
    let endpoints = inner
        .bound()
        .iter()
        .map(|s| CString::new(s.replace('\0', " ")).unwrap_or_default())
        .collect();
    ptmp_server { inner, endpoints }
}

/// Opens a server listening at `address` (`tcp://HOST:PORT`, `*` or 0 as
/// the port letting the system choose, `ipc://PATH`, `inproc://NAME`, or
/// `name://NODE/PORT` once presence is on) and stores the handle in
/// `*out` (NULL on failure). `ptmp_server_endpoint` gives the address
/// bound.
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`] (not UTF-8),
/// [`PTMP_ERR_CONFIG`] or [`PTMP_ERR_TRANSPORT`] (e.g. the address is in
/// use).
///
/// Thread-safety: any thread; the new handle is then used by one thread
/// at a time (requests it gives may be answered from any thread).
///
/// # Safety
/// `address` is NULL or a NUL-terminated string; `out` is NULL or points
/// to writable storage for a pointer.
#[no_mangle]
pub unsafe extern "C" fn ptmp_server_new(
    address: *const c_char,
    out: *mut *mut ptmp_server,
) -> c_int {
    guard("ptmp_server_new", || {
        // SAFETY: the caller promises NULL or writable storage.
        let out = unsafe { out_slot(out) }?;
        // SAFETY: the caller promises NULL or a NUL-terminated string.
        let address = unsafe { c_str(address, "address") }?;
        let h = server_handle(Server::bind(address)?);
        // The box goes back through `ptmp_server_free`.
        *out = Box::into_raw(Box::new(h));
        Ok(PTMP_OK)
    })
}

/// Opens a server from PTMP's JSON socket configuration, of type ROUTER
/// (for CURVE keys, a `max_message` limit, the linger, names), e.g.
/// `{"socket":{"type":"ROUTER","bind":["tcp://127.0.0.1:*"]}}`. A
/// `"discovery"` key turns presence on, as for `ptmp_sender_new`.
///
/// Returns as `ptmp_server_new`; [`PTMP_ERR_CONFIG`] also for a type other
/// than ROUTER or an shm:// address.
///
/// Thread-safety: as `ptmp_server_new`.
///
/// # Safety
/// As `ptmp_server_new`, with `json_config` for `address`.
#[no_mangle]
pub unsafe extern "C" fn ptmp_server_new_config(
    json_config: *const c_char,
    out: *mut *mut ptmp_server,
) -> c_int {
    guard("ptmp_server_new_config", || {
        // SAFETY: the caller promises NULL or writable storage.
        let out = unsafe { out_slot(out) }?;
        // SAFETY: the caller promises NULL or a NUL-terminated string.
        let json = unsafe { c_str(json_config, "json_config") }?;
        let cfg = SocketConfig::from_json(json)?;
        crate::names::for_socket(json)?;
        let h = server_handle(Server::new(cfg)?);
        // The box goes back through `ptmp_server_free`.
        *out = Box::into_raw(Box::new(h));
        Ok(PTMP_OK)
    })
}

/// The `index`th address the server bound, a `*` port resolved (e.g.
/// `tcp://127.0.0.1:41234`), or NULL if it bound fewer. The string belongs
/// to the handle and lives as long as it.
///
/// Thread-safety: one thread at a time per server, as its other calls.
///
/// # Safety
/// `server` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn ptmp_server_endpoint(
    server: *const ptmp_server,
    index: usize,
) -> *const c_char {
    // SAFETY: the caller promises NULL or a live handle; only the
    // endpoints fixed at creation are read.
    unsafe { server.as_ref() }
        .and_then(|s| s.endpoints.get(index))
        .map_or(std::ptr::null(), |e| e.as_ptr())
}

/// Waits at most `timeout_ms` milliseconds (negative: until one comes) for
/// the next request and stores it in `*request` (NULL when none came).
/// Meanwhile, and first, it sends the answers and refusals given since the
/// last call, on any thread: a server delivers answers only from within
/// this call (and `ptmp_server_free`), so keep calling it.
///
/// The request belongs to the caller, who gives it back by answering it
/// (`ptmp_request_answer`), refusing it (`ptmp_request_refuse`) or freeing
/// it (`ptmp_request_free`, a refusal), on this thread or any other, in
/// any order.
///
/// Returns [`PTMP_OK`] with a request; [`PTMP_TIMEOUT`] when none came in
/// time, or a signal ended the wait; [`PTMP_ERR_NULL`],
/// [`PTMP_ERR_TRANSPORT`].
///
/// Thread-safety: one thread at a time per server.
///
/// # Safety
/// `server` is NULL or a live handle; `request` is NULL or points to
/// writable storage for a pointer.
#[no_mangle]
pub unsafe extern "C" fn ptmp_server_recv(
    server: *mut ptmp_server,
    timeout_ms: c_int,
    request: *mut *mut ptmp_request,
) -> c_int {
    guard("ptmp_server_recv", || {
        // SAFETY: the caller promises NULL or writable storage.
        let out = unsafe { request.as_mut() }.ok_or_else(|| null("request"))?;
        *out = std::ptr::null_mut();
        // SAFETY: the caller promises NULL or a live handle, used by this
        // thread alone for the duration of the call.
        let s = unsafe { server.as_mut() }.ok_or_else(|| null("server"))?;
        let timeout = u64::try_from(timeout_ms).ok().map(Duration::from_millis);
        let Some(r) = s.inner.recv(timeout)? else {
            return Ok(PTMP_TIMEOUT);
        };
        let (mut body, reply) = r.into_parts();
        let len = body.len();
        body.push(0);
        *out = Box::into_raw(Box::new(ptmp_request { body, len, reply }));
        Ok(PTMP_OK)
    })
}

/// The longest `ptmp_server_free` goes on taking requests that came (to
/// refuse them) and sending what was given, before it closes.
const CLOSING: Duration = Duration::from_millis(200);

/// Closes a server and frees its handle. First it sends the answers and
/// refusals already given, and refuses requests that came but were not
/// received; then what was sent is delivered for up to the socket's
/// linger (a second unless configured). A request still held is answered
/// (or refused, or freed) afterwards to no effect, and must still be
/// given back. NULL is accepted and does nothing.
///
/// Thread-safety: no other thread may use the handle during or after this.
///
/// # Safety
/// `server` is NULL or a live handle, not used again.
#[no_mangle]
pub unsafe extern "C" fn ptmp_server_free(server: *mut ptmp_server) {
    guard("ptmp_server_free", || {
        if server.is_null() {
            return Ok(PTMP_OK);
        }
        // SAFETY: the caller gives back a box made by `ptmp_server_new`
        // and never uses it again.
        let mut s = unsafe { Box::from_raw(server) };
        // Each look sends what was given, then takes one request if there
        // is one, refused when it drops; the last sends those refusals.
        let until = Instant::now() + CLOSING;
        while let Ok(Some(r)) = s.inner.recv(Some(Duration::ZERO)) {
            drop(r);
            if Instant::now() >= until {
                break;
            }
        }
        let _ = s.inner.recv(Some(Duration::ZERO));
        drop(s);
        Ok(PTMP_OK)
    });
}

/// The bytes of a request: a pointer to them (followed by a NUL byte not
/// counted, so a text request reads as a C string) and their number in
/// `*len` (unless `len` is NULL). The bytes belong to the request and
/// stay valid until it is answered, refused or freed. NULL for a NULL
/// request (`*len` then 0).
///
/// Thread-safety: whichever thread holds the request.
///
/// # Safety
/// `request` is NULL or a live request; `len` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ptmp_request_data(
    request: *const ptmp_request,
    len: *mut usize,
) -> *const c_void {
    // SAFETY: the caller promises NULL or a live request; only read.
    let r = unsafe { request.as_ref() };
    // SAFETY: the caller promises NULL or writable storage.
    if let Some(l) = unsafe { len.as_mut() } {
        *l = r.map_or(0, |r| r.len);
    }
    r.map_or(std::ptr::null(), |r| r.body.as_ptr().cast())
}

/// Takes a request back from C; a NULL one is an error.
///
/// # Safety
/// `request` is NULL or a live request, not used again.
unsafe fn take_request(request: *mut ptmp_request) -> Result<Box<ptmp_request>, Fail> {
    if request.is_null() {
        return Err(null("request"));
    }
    // SAFETY: the caller gives back a box made by `ptmp_server_recv` and
    // never uses it again.
    Ok(unsafe { Box::from_raw(request) })
}

/// Answers a request with `len` bytes at `data` (copied), and consumes it.
/// The answer is sent by the server's thread, at its next
/// `ptmp_server_recv` (which this wakes) or as it is freed. An answer over
/// the server's `max_message` goes to the client as a refusal saying so.
///
/// Returns [`PTMP_OK`]; [`PTMP_ERR_NULL`] for a NULL request, or for
/// `data` NULL with `len` > 0 (the request is then refused, saying so).
/// Whatever it returns, a request given is consumed: do not use it again.
///
/// Thread-safety: any thread, one at a time per request; safe while the
/// server's thread receives.
///
/// # Safety
/// `request` is NULL or a live request from `ptmp_server_recv`, not used
/// again; `data` is NULL or points to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn ptmp_request_answer(
    request: *mut ptmp_request,
    data: *const c_void,
    len: usize,
) -> c_int {
    guard("ptmp_request_answer", || {
        // SAFETY: the caller promises NULL or a live request, not used again.
        let r = unsafe { take_request(request) }?;
        // SAFETY: the caller promises `len` readable bytes at `data`.
        match unsafe { c_bytes(data, len, "data") } {
            Ok(body) => {
                r.reply.answer(body);
                Ok(PTMP_OK)
            }
            Err(e) => {
                r.reply
                    .refuse(&format!("the server's answer was not given: {}", e.1));
                Err(e)
            }
        }
    })
}

/// Refuses a request, saying why (`why` goes to the client, which sees it
/// in its error message), and consumes it. Sent as answers are (see
/// `ptmp_request_answer`). Bytes of `why` that are not UTF-8 are replaced.
///
/// Returns [`PTMP_OK`] or [`PTMP_ERR_NULL`] (a NULL request; or a NULL
/// `why`, the request then refused in general words). Whatever it
/// returns, a request given is consumed.
///
/// Thread-safety: as `ptmp_request_answer`.
///
/// # Safety
/// `request` is NULL or a live request, not used again; `why` is NULL or a
/// NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ptmp_request_refuse(
    request: *mut ptmp_request,
    why: *const c_char,
) -> c_int {
    guard("ptmp_request_refuse", || {
        // SAFETY: the caller promises NULL or a live request, not used again.
        let r = unsafe { take_request(request) }?;
        if why.is_null() {
            // Dropped, it is refused in general words.
            drop(r);
            return Err(null("why"));
        }
        // SAFETY: not NULL, and the caller promises a NUL-terminated string.
        let why = unsafe { CStr::from_ptr(why) }.to_string_lossy();
        r.reply.refuse(&why);
        Ok(PTMP_OK)
    })
}

/// Gives back a request without answering it: it is refused ("the server
/// let the request go without answering"), so its client hears at once.
/// NULL is accepted and does nothing.
///
/// Thread-safety: as `ptmp_request_answer`.
///
/// # Safety
/// `request` is NULL or a live request, not used again.
#[no_mangle]
pub unsafe extern "C" fn ptmp_request_free(request: *mut ptmp_request) {
    guard("ptmp_request_free", || {
        if !request.is_null() {
            // SAFETY: the caller gives back a box made by
            // `ptmp_server_recv` and never uses it again.
            drop(unsafe { Box::from_raw(request) });
        }
        Ok(PTMP_OK)
    });
}
