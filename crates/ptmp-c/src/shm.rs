//! Shared-memory channels from C: a writer that lends its next slot to be
//! filled in place (zero-copy) and a reader that looks at a message in its
//! slot, with the seqlock check that says whether what was read is whole.

use crate::{c_str, guard, null, Fail, PTMP_ERR_ARG, PTMP_ERR_CONFIG, PTMP_ERR_STATE};
use crate::{PTMP_ERR_TRANSPORT, PTMP_OK, PTMP_TIMEOUT};
use ptmp_shm::{ChannelConfig, Loan, OwnedView, Policy, Reader, ShmError, StartAt, Writer};
use std::ffi::{c_char, c_int};
use std::time::{Duration, Instant};

/// Shared-memory policy: the writer never waits and a slow reader loses the
/// oldest messages (PUB/SUB).
pub const PTMP_SHM_OVERWRITE: c_int = 0;
/// Shared-memory policy: the writer waits for the slowest reader (PUSH/PULL).
pub const PTMP_SHM_BLOCK: c_int = 1;

/// A new reader starts at the next message published after it attaches.
pub const PTMP_SHM_START_NEXT: c_int = 0;
/// A new reader starts at the newest message already published.
pub const PTMP_SHM_START_NEWEST: c_int = 1;
/// A new reader starts at the oldest message the ring still holds.
pub const PTMP_SHM_START_OLDEST: c_int = 2;

impl From<ShmError> for Fail {
    fn from(e: ShmError) -> Self {
        let code = match &e {
            ShmError::BadName { .. } | ShmError::BadConfig { .. } => PTMP_ERR_CONFIG,
            ShmError::TooLarge { .. } => PTMP_ERR_ARG,
            _ => PTMP_ERR_TRANSPORT,
        };
        Fail(code, e.to_string())
    }
}

/// The writer of a shared-memory channel (opaque), made by
/// `ptmp_shm_writer_new`.
#[allow(non_camel_case_types)]
pub struct ptmp_shm_writer {
    // The open loan borrows the writer that `writer` points to. Declared
    // first so it is dropped first; while it is open nothing else touches
    // the writer.
    loan: Option<Loan<'static>>,
    writer: *mut Writer,
    // Kept here so it can be read while a loan borrows the writer.
    max_message: usize,
}

impl Drop for ptmp_shm_writer {
    fn drop(&mut self) {
        // An open loan is given up (it publishes nothing) before the writer
        // it borrows goes.
        self.loan = None;
        // SAFETY: `writer` came from `Box::into_raw` in
        // `ptmp_shm_writer_new` and is freed only here, once; the loan that
        // borrowed it is gone.
        drop(unsafe { Box::from_raw(self.writer) });
    }
}

impl ptmp_shm_writer {
    /// The writer, refused while a loan borrows it.
    fn writer(&mut self) -> Result<&mut Writer, Fail> {
        if self.loan.is_some() {
            return Err(Fail(
                PTMP_ERR_STATE,
                "a loan is open: commit or abort it first".into(),
            ));
        }
        // SAFETY: the pointer is live for the handle's life (see Drop), and
        // no loan borrows it (checked above); `&mut self` makes this the
        // only reference.
        Ok(unsafe { &mut *self.writer })
    }
}

/// Creates shared-memory channel `name` and becomes its one writer, with
/// `slots` slots (a power of two, at least 2) of up to `max_message` bytes
/// each, and `policy` [`PTMP_SHM_OVERWRITE`] or [`PTMP_SHM_BLOCK`]. Stores
/// the handle in `*out` (NULL on failure).
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`] (a bad policy,
/// a name that is not UTF-8), [`PTMP_ERR_CONFIG`] (a bad name or shape) or
/// [`PTMP_ERR_TRANSPORT`] (the channel has a live writer, no space ...).
///
/// Thread-safety: any thread; the handle is then used by one thread at a
/// time.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ptmp_shm_writer_new(
    name: *const c_char,
    slots: usize,
    max_message: usize,
    policy: c_int,
    out: *mut *mut ptmp_shm_writer,
) -> c_int {
    guard("ptmp_shm_writer_new", || {
        if out.is_null() {
            return Err(null("out"));
        }
        // SAFETY: not NULL, and the caller promises it is writable.
        unsafe { *out = std::ptr::null_mut() };
        // SAFETY: the caller promises NULL or a NUL-terminated string.
        let name = unsafe { c_str(name, "name") }?;
        let policy = match policy {
            PTMP_SHM_OVERWRITE => Policy::Overwrite,
            PTMP_SHM_BLOCK => Policy::Block,
            p => {
                return Err(Fail(
                    PTMP_ERR_ARG,
                    format!("policy = {p}: use PTMP_SHM_OVERWRITE (0) or PTMP_SHM_BLOCK (1)"),
                ))
            }
        };
        let cfg = ChannelConfig {
            slots,
            max_message,
            policy,
        };
        let w = Writer::create(name, cfg)?;
        let h = Box::new(ptmp_shm_writer {
            loan: None,
            max_message: w.max_message(),
            writer: Box::into_raw(Box::new(w)),
        });
        // SAFETY: as above; the box goes back through `ptmp_shm_writer_free`.
        unsafe { *out = Box::into_raw(h) };
        Ok(PTMP_OK)
    })
}

/// Lends the next slot for a message of exactly `len` bytes, written in
/// place through `*data` (zero-copy). Nothing is visible to readers until
/// `ptmp_shm_writer_commit`; `ptmp_shm_writer_abort` gives the slot back
/// unpublished. Under [`PTMP_SHM_BLOCK`] this may wait for the slowest
/// reader (bounded; a timeout is [`PTMP_ERR_TRANSPORT`]).
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`] (`len` above
/// the channel's `max_message`), [`PTMP_ERR_STATE`] (a loan is already
/// open) or [`PTMP_ERR_TRANSPORT`].
///
/// The `len` bytes at `*data` belong to the caller until the commit or
/// abort; they start with whatever the slot held before.
///
/// Thread-safety: one thread at a time per writer.
///
/// # Safety
/// `writer` is NULL or a live handle; `data` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ptmp_shm_writer_loan(
    writer: *mut ptmp_shm_writer,
    len: usize,
    data: *mut *mut u8,
) -> c_int {
    guard("ptmp_shm_writer_loan", || {
        // SAFETY: the caller promises NULL or a live handle used by this
        // thread alone during the call.
        let h = unsafe { writer.as_mut() }.ok_or_else(|| null("writer"))?;
        if data.is_null() {
            return Err(null("data"));
        }
        let w: *mut Writer = h.writer()?;
        // SAFETY: `w` is live until the handle is freed, and the handle
        // drops the loan before the writer (see Drop); while the loan is
        // open every other use of the writer is refused (`writer()`), so
        // the 'static borrow never aliases another reference.
        let mut loan: Loan<'static> = unsafe { &mut *w }.loan(len)?;
        // SAFETY: the caller promises `data` is writable (checked non-NULL).
        unsafe { *data = loan.as_mut_ptr() };
        h.loan = Some(loan);
        Ok(PTMP_OK)
    })
}

/// Publishes the open loan; its sequence number goes to `*seq` unless
/// `seq` is NULL. Then checks the channel was not truncated under the
/// writer ([`PTMP_ERR_TRANSPORT`] if it was).
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_NULL`], [`PTMP_ERR_STATE`] (no loan
/// open) or [`PTMP_ERR_TRANSPORT`].
///
/// Thread-safety: one thread at a time per writer.
///
/// # Safety
/// `writer` is NULL or a live handle; `seq` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ptmp_shm_writer_commit(
    writer: *mut ptmp_shm_writer,
    seq: *mut u64,
) -> c_int {
    guard("ptmp_shm_writer_commit", || {
        // SAFETY: the caller promises NULL or a live handle.
        let h = unsafe { writer.as_mut() }.ok_or_else(|| null("writer"))?;
        let loan = h
            .loan
            .take()
            .ok_or_else(|| Fail(PTMP_ERR_STATE, "no loan is open".into()))?;
        let s = loan.commit();
        h.writer()?.check()?;
        // SAFETY: the caller promises NULL or writable storage.
        if let Some(out) = unsafe { seq.as_mut() } {
            *out = s;
        }
        Ok(PTMP_OK)
    })
}

/// Gives the open loan back without publishing anything.
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_NULL`] or [`PTMP_ERR_STATE`] (no loan).
///
/// Thread-safety: one thread at a time per writer.
///
/// # Safety
/// `writer` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn ptmp_shm_writer_abort(writer: *mut ptmp_shm_writer) -> c_int {
    guard("ptmp_shm_writer_abort", || {
        // SAFETY: the caller promises NULL or a live handle.
        let h = unsafe { writer.as_mut() }.ok_or_else(|| null("writer"))?;
        h.loan
            .take()
            .ok_or_else(|| Fail(PTMP_ERR_STATE, "no loan is open".into()))?;
        Ok(PTMP_OK)
    })
}

/// Copies `len` bytes from `data` into the next slot and publishes them;
/// the sequence number goes to `*seq` unless `seq` is NULL.
///
/// Returns as `ptmp_shm_writer_loan` and `ptmp_shm_writer_commit`.
///
/// Thread-safety: one thread at a time per writer.
///
/// # Safety
/// `writer` is NULL or a live handle; `data` is NULL or `len` readable
/// bytes; `seq` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ptmp_shm_writer_publish(
    writer: *mut ptmp_shm_writer,
    data: *const u8,
    len: usize,
    seq: *mut u64,
) -> c_int {
    guard("ptmp_shm_writer_publish", || {
        // SAFETY: the caller promises NULL or a live handle.
        let h = unsafe { writer.as_mut() }.ok_or_else(|| null("writer"))?;
        let bytes: &[u8] = if len == 0 {
            &[]
        } else if data.is_null() {
            return Err(null("data"));
        } else {
            // SAFETY: not NULL, and the caller promises `len` readable bytes.
            unsafe { std::slice::from_raw_parts(data, len) }
        };
        let s = h.writer()?.publish(bytes)?;
        // SAFETY: the caller promises NULL or writable storage.
        if let Some(out) = unsafe { seq.as_mut() } {
            *out = s;
        }
        Ok(PTMP_OK)
    })
}

/// The largest message the channel takes, in bytes; 0 for a NULL handle.
///
/// Thread-safety: one thread at a time per writer.
///
/// # Safety
/// `writer` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn ptmp_shm_writer_max_message(writer: *const ptmp_shm_writer) -> usize {
    // SAFETY: the caller promises NULL or a live handle.
    unsafe { writer.as_ref() }.map_or(0, |h| h.max_message)
}

/// Gives up an open loan (unpublished), leaves the channel (its file stays
/// for readers and later writers) and frees the handle. NULL does nothing.
///
/// Thread-safety: no other thread may use the handle during or after this.
///
/// # Safety
/// `writer` is NULL or a live handle, not used again.
#[no_mangle]
pub unsafe extern "C" fn ptmp_shm_writer_free(writer: *mut ptmp_shm_writer) {
    guard("ptmp_shm_writer_free", || {
        if !writer.is_null() {
            // SAFETY: the caller gives back the box from
            // `ptmp_shm_writer_new` and never uses it again.
            drop(unsafe { Box::from_raw(writer) });
        }
        Ok(PTMP_OK)
    });
}

/// A message looked at in place, in the channel's shared memory.
///
/// `data` points to `len` bytes that the writer may overwrite at any time
/// (under [`PTMP_SHM_OVERWRITE`]): after using them, call
/// `ptmp_shm_reader_valid`; only if it returns 1 was what was read the
/// whole message. The pointer stays mapped until the next view, release or
/// free on the same reader.
#[repr(C)]
#[derive(Debug)]
#[allow(non_camel_case_types)]
pub struct ptmp_shm_view {
    /// First byte of the message in the shared segment.
    pub data: *const u8,
    /// Length of the message in bytes.
    pub len: usize,
    /// The message's sequence number on the channel.
    pub seq: u64,
    /// How many messages this reader lost to overruns just before it.
    pub lost: u64,
}

/// A reader of a shared-memory channel (opaque), made by
/// `ptmp_shm_reader_new`.
#[allow(non_camel_case_types)]
pub struct ptmp_shm_reader {
    // Declared first: the view is let go before the reader.
    view: Option<OwnedView>,
    reader: Reader,
}

/// Attaches a reader to channel `name`, starting at
/// [`PTMP_SHM_START_NEXT`], [`PTMP_SHM_START_NEWEST`] or
/// [`PTMP_SHM_START_OLDEST`], waiting up to `timeout_ms` for the channel to
/// be created (negative: forever; 0: not at all). Stores the handle in
/// `*out` (NULL on failure).
///
/// Returns [`PTMP_OK`], [`PTMP_TIMEOUT`] (no such channel in time),
/// [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`], [`PTMP_ERR_CONFIG`] or
/// [`PTMP_ERR_TRANSPORT`].
///
/// Thread-safety: any thread; the handle is then used by one thread at a
/// time.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ptmp_shm_reader_new(
    name: *const c_char,
    start: c_int,
    timeout_ms: c_int,
    out: *mut *mut ptmp_shm_reader,
) -> c_int {
    guard("ptmp_shm_reader_new", || {
        if out.is_null() {
            return Err(null("out"));
        }
        // SAFETY: not NULL, and the caller promises it is writable.
        unsafe { *out = std::ptr::null_mut() };
        // SAFETY: the caller promises NULL or a NUL-terminated string.
        let name = unsafe { c_str(name, "name") }?;
        let start = match start {
            PTMP_SHM_START_NEXT => StartAt::Next,
            PTMP_SHM_START_NEWEST => StartAt::Newest,
            PTMP_SHM_START_OLDEST => StartAt::Oldest,
            s => {
                return Err(Fail(
                    PTMP_ERR_ARG,
                    format!("start = {s}: use PTMP_SHM_START_NEXT, _NEWEST or _OLDEST"),
                ))
            }
        };
        let limit = u64::try_from(timeout_ms).ok().map(Duration::from_millis);
        let t0 = Instant::now();
        let reader = loop {
            match Reader::attach(name, start) {
                Ok(r) => break r,
                Err(ShmError::NotFound { .. }) if limit.is_none_or(|l| t0.elapsed() < l) => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(ShmError::NotFound { .. }) => return Ok(PTMP_TIMEOUT),
                Err(e) => return Err(e.into()),
            }
        };
        let h = Box::new(ptmp_shm_reader { view: None, reader });
        // SAFETY: as above; the box goes back through `ptmp_shm_reader_free`.
        unsafe { *out = Box::into_raw(h) };
        Ok(PTMP_OK)
    })
}

/// Releases the view held (if any) and looks at the next message in
/// place, waiting up to `timeout_ms` (negative: forever; 0: only looks).
/// Fills `*view` on [`PTMP_OK`]; on [`PTMP_TIMEOUT`] `*view` is zeroed.
/// After using the bytes, `ptmp_shm_reader_valid` says whether they were
/// the whole message.
///
/// Returns [`PTMP_OK`], [`PTMP_TIMEOUT`], [`PTMP_ERR_NULL`] or
/// [`PTMP_ERR_TRANSPORT`] (a corrupt or truncated segment).
///
/// Thread-safety: one thread at a time per reader.
///
/// # Safety
/// `reader` is NULL or a live handle; `view` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ptmp_shm_reader_view(
    reader: *mut ptmp_shm_reader,
    view: *mut ptmp_shm_view,
    timeout_ms: c_int,
) -> c_int {
    guard("ptmp_shm_reader_view", || {
        // SAFETY: the caller promises NULL or a live handle.
        let h = unsafe { reader.as_mut() }.ok_or_else(|| null("reader"))?;
        // SAFETY: the caller promises NULL or writable storage.
        let out = unsafe { view.as_mut() }.ok_or_else(|| null("view"))?;
        *out = ptmp_shm_view {
            data: std::ptr::null(),
            len: 0,
            seq: 0,
            lost: 0,
        };
        h.view = None;
        let timeout = u64::try_from(timeout_ms).ok().map(Duration::from_millis);
        let Some(v) = h.reader.view_checked(timeout)? else {
            return Ok(PTMP_TIMEOUT);
        };
        let v = v.into_owned();
        *out = ptmp_shm_view {
            data: v.bytes().as_ptr(),
            len: v.bytes().len(),
            seq: v.received.seq,
            lost: v.received.lost,
        };
        h.view = Some(v);
        Ok(PTMP_OK)
    })
}

/// The seqlock check of the view held: 1 if the writer has not touched its
/// slot since the view was taken (everything read from it so far was the
/// whole message), 0 if it has (discard what was read). Cheap: one atomic
/// load. Negative on error: [`PTMP_ERR_NULL`], [`PTMP_ERR_STATE`] (no view
/// is held).
///
/// Thread-safety: one thread at a time per reader.
///
/// # Safety
/// `reader` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn ptmp_shm_reader_valid(reader: *const ptmp_shm_reader) -> c_int {
    guard("ptmp_shm_reader_valid", || {
        // SAFETY: the caller promises NULL or a live handle.
        let h = unsafe { reader.as_ref() }.ok_or_else(|| null("reader"))?;
        let v = h
            .view
            .as_ref()
            .ok_or_else(|| Fail(PTMP_ERR_STATE, "no view is held".into()))?;
        Ok(c_int::from(v.valid()))
    })
}

/// Lets go of the view held, if any (under [`PTMP_SHM_BLOCK`] the writer
/// may then reuse its slot). The view's pointer must not be used after.
///
/// Returns [`PTMP_OK`] or [`PTMP_ERR_NULL`].
///
/// Thread-safety: one thread at a time per reader.
///
/// # Safety
/// `reader` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn ptmp_shm_reader_release(reader: *mut ptmp_shm_reader) -> c_int {
    guard("ptmp_shm_reader_release", || {
        // SAFETY: the caller promises NULL or a live handle.
        let h = unsafe { reader.as_mut() }.ok_or_else(|| null("reader"))?;
        h.view = None;
        Ok(PTMP_OK)
    })
}

/// Messages this reader lost to overruns so far; 0 for NULL.
///
/// Thread-safety: one thread at a time per reader.
///
/// # Safety
/// `reader` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn ptmp_shm_reader_lost(reader: *const ptmp_shm_reader) -> u64 {
    // SAFETY: the caller promises NULL or a live handle.
    unsafe { reader.as_ref() }.map_or(0, |h| h.reader.lost())
}

/// Releases the view held, detaches and frees the handle. NULL does nothing.
///
/// Thread-safety: no other thread may use the handle during or after this.
///
/// # Safety
/// `reader` is NULL or a live handle, not used again.
#[no_mangle]
pub unsafe extern "C" fn ptmp_shm_reader_free(reader: *mut ptmp_shm_reader) {
    guard("ptmp_shm_reader_free", || {
        if !reader.is_null() {
            // SAFETY: the caller gives back the box from
            // `ptmp_shm_reader_new` and never uses it again.
            drop(unsafe { Box::from_raw(reader) });
        }
        Ok(PTMP_OK)
    });
}

/// Removes channel `name`'s file (as `ptmp shm rm NAME`). A writer or
/// readers still attached keep their mapping; new ones no longer find it.
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`],
/// [`PTMP_ERR_CONFIG`] (a bad name) or [`PTMP_ERR_TRANSPORT`] (no such
/// channel, or it could not be removed).
///
/// Thread-safety: any thread.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ptmp_shm_remove(name: *const c_char) -> c_int {
    guard("ptmp_shm_remove", || {
        // SAFETY: the caller promises NULL or a NUL-terminated string.
        let name = unsafe { c_str(name, "name") }?;
        ptmp_shm::remove(name)?;
        Ok(PTMP_OK)
    })
}
