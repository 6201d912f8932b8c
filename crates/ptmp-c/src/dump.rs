//! Files of messages from C, read as TPSets and written from TPSets: the
//! czmqat format PTMP records message streams in, or whichever format the
//! file's extension names.

use crate::{c_str, c_tps, guard, null, ptmp_tpset, to_c, to_rust, Fail};
use crate::{PTMP_END, PTMP_ERR_ARG, PTMP_ERR_IO, PTMP_ERR_MESSAGE, PTMP_OK};
use ptmp_core::data::{encode_tpset, wire, VERSION_FRAME};
use ptmp_core::TPSet;
use ptmp_formats::{Reader, Record, Writer};
use std::ffi::{c_char, c_int};

/// A dump file open for reading (opaque), made by `ptmp_dump_reader_new`.
#[allow(non_camel_case_types)]
pub struct ptmp_dump_reader {
    path: String,
    inner: Box<dyn Reader>,
    rec: Record,
    scratch: TPSet,
}

/// A dump file open for writing (opaque), made by `ptmp_dump_writer_new`.
#[allow(non_camel_case_types)]
pub struct ptmp_dump_writer {
    inner: Box<dyn Writer>,
    buf: Vec<u8>,
    frames: ptmp_core::Frames,
    scratch: TPSet,
}

fn io(path: &str, what: &str, e: impl std::fmt::Display) -> Fail {
    Fail(PTMP_ERR_IO, format!("{path}: {what}: {e}"))
}

/// A file's error for C: a format ptmp does not write is a bad argument;
/// everything else, damaged bytes included, an I/O error. The message
/// names the file.
fn file(e: ptmp_formats::Error) -> Fail {
    match e {
        ptmp_formats::Error::Format { .. } => Fail(PTMP_ERR_ARG, e.to_string()),
        _ => Fail(PTMP_ERR_IO, e.to_string()),
    }
}

/// Opens the dump file at `path` for reading and stores the handle in
/// `*out` (NULL on failure).
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`] (not UTF-8, or
/// named for a format ptmp does not read yet: `.h5`, `.hdf5`; the format
/// follows the extension: `.mcap` is MCAP, `.parquet` Parquet, anything
/// else a czmqat dump) or
/// [`PTMP_ERR_IO`] (the message names the path and why: missing,
/// unreadable, or not a regular file, "a FIFO" or "a directory" say; a
/// link is followed). The call never waits: a FIFO is refused, not
/// opened.
///
/// Thread-safety: any thread; the handle is then used by one thread at a
/// time.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ptmp_dump_reader_new(
    path: *const c_char,
    out: *mut *mut ptmp_dump_reader,
) -> c_int {
    guard("ptmp_dump_reader_new", || {
        if out.is_null() {
            return Err(null("out"));
        }
        // SAFETY: not NULL, and the caller promises it is writable.
        unsafe { *out = std::ptr::null_mut() };
        // SAFETY: the caller promises NULL or a NUL-terminated string.
        let path = unsafe { c_str(path, "path") }?;
        // A regular file only, opened without waiting: a FIFO (which
        // would wait for a writer) or a directory is refused, named.
        let at = std::path::Path::new(path);
        // The format first, so a file of one ptmp does not read is refused
        // before it is opened.
        let format = ptmp_formats::Format::of(at, None).map_err(file)?;
        let f = ptmp_core::files::open_regular(at)
            .map_err(|e| io(path, "cannot open a dump file", e))?;
        let h = Box::new(ptmp_dump_reader {
            path: path.to_string(),
            inner: ptmp_formats::open_file(f, at, Some(format)).map_err(file)?,
            rec: Record::default(),
            scratch: TPSet::default(),
        });
        // SAFETY: as above; the box goes back through `ptmp_dump_reader_free`.
        unsafe { *out = Box::into_raw(h) };
        Ok(PTMP_OK)
    })
}

/// Reads the next record as a TPSet into `*out`, with the same ownership
/// rule for `out->tps` as `ptmp_receiver_recv`.
///
/// Returns [`PTMP_OK`]; [`PTMP_END`] (positive) at the end of the file;
/// or an error: [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`], [`PTMP_ERR_IO`] (a
/// read failed, or the file is cut inside a record), [`PTMP_ERR_MESSAGE`]
/// (the record is not a PTMP TPSet message; the message names the record;
/// reading on gives the next one) or [`PTMP_ERR_ALLOC`].
///
/// Thread-safety: one thread at a time per reader.
///
/// # Safety
/// `reader` is NULL or a live handle; `out` as for `ptmp_receiver_recv`.
#[no_mangle]
pub unsafe extern "C" fn ptmp_dump_reader_next(
    reader: *mut ptmp_dump_reader,
    out: *mut ptmp_tpset,
) -> c_int {
    guard("ptmp_dump_reader_next", || {
        // SAFETY: the caller promises NULL or a live handle.
        let r = unsafe { reader.as_mut() }.ok_or_else(|| null("reader"))?;
        // SAFETY: the caller promises NULL or a writable struct.
        let o = unsafe { out.as_mut() }.ok_or_else(|| null("out"))?;
        if o.tps.is_null() && o.tps_capacity != 0 {
            return Err(Fail(
                PTMP_ERR_ARG,
                format!("out.tps is NULL but out.tps_capacity = {}", o.tps_capacity),
            ));
        }
        let rec = r.inner.records();
        let more = r.inner.read_into(&mut r.rec).map_err(file)?;
        if !more {
            return Ok(PTMP_END);
        }
        let bad = |why: String| Fail(PTMP_ERR_MESSAGE, format!("{}: record {rec}: {why}", r.path));
        wire::decode_frames(&r.rec.frames, &mut r.scratch).map_err(|e| bad(e.to_string()))?;
        // SAFETY: `o.tps` is NULL or a malloc block of `tps_capacity`, as
        // the caller promises.
        unsafe { to_c(&r.scratch, o) }?;
        Ok(PTMP_OK)
    })
}

/// Closes a dump file being read and frees the handle. NULL does nothing.
///
/// Thread-safety: no other thread may use the handle during or after this.
///
/// # Safety
/// `reader` is NULL or a live handle, not used again.
#[no_mangle]
pub unsafe extern "C" fn ptmp_dump_reader_free(reader: *mut ptmp_dump_reader) {
    guard("ptmp_dump_reader_free", || {
        if !reader.is_null() {
            // SAFETY: the caller gives back the box from
            // `ptmp_dump_reader_new` and never uses it again.
            drop(unsafe { Box::from_raw(reader) });
        }
        Ok(PTMP_OK)
    });
}

/// Creates (or truncates) the dump file at `path` for writing and stores
/// the handle in `*out` (NULL on failure).
///
/// Returns as `ptmp_dump_reader_new`.
///
/// Thread-safety: any thread; the handle is then used by one thread at a
/// time.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ptmp_dump_writer_new(
    path: *const c_char,
    out: *mut *mut ptmp_dump_writer,
) -> c_int {
    guard("ptmp_dump_writer_new", || {
        if out.is_null() {
            return Err(null("out"));
        }
        // SAFETY: not NULL, and the caller promises it is writable.
        unsafe { *out = std::ptr::null_mut() };
        // SAFETY: the caller promises NULL or a NUL-terminated string.
        let path = unsafe { c_str(path, "path") }?;
        let w = ptmp_formats::create(path.as_ref(), None).map_err(file)?;
        let h = Box::new(ptmp_dump_writer {
            inner: w,
            buf: Vec::new(),
            frames: ptmp_core::Frames::new(),
            scratch: TPSet::default(),
        });
        // SAFETY: as above; the box goes back through `ptmp_dump_writer_free`.
        unsafe { *out = Box::into_raw(h) };
        Ok(PTMP_OK)
    })
}

/// Appends one TPSet as a PTMP message (its two frames) to the file.
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`] (`tps` NULL
/// with `ntps` > 0) or [`PTMP_ERR_IO`].
///
/// Thread-safety: one thread at a time per writer.
///
/// # Safety
/// `writer` is NULL or a live handle; `tpset` as for `ptmp_sender_send`.
#[no_mangle]
pub unsafe extern "C" fn ptmp_dump_writer_write(
    writer: *mut ptmp_dump_writer,
    tpset: *const ptmp_tpset,
) -> c_int {
    guard("ptmp_dump_writer_write", || {
        // SAFETY: the caller promises NULL or a live handle.
        let w = unsafe { writer.as_mut() }.ok_or_else(|| null("writer"))?;
        // SAFETY: the caller promises NULL or a readable struct.
        let t = unsafe { tpset.as_ref() }.ok_or_else(|| null("tpset"))?;
        // SAFETY: the caller promises `ntps` readable primitives at `tps`.
        let tps = unsafe { c_tps(t) }?;
        to_rust(t, tps, &mut w.scratch);
        w.buf.clear();
        encode_tpset(&w.scratch, &mut w.buf);
        w.frames.clear();
        w.frames.push(&VERSION_FRAME[..]);
        w.frames.push(&w.buf);
        w.inner.write("", None, &w.frames).map_err(file)?;
        Ok(PTMP_OK)
    })
}

/// Writes out what is buffered. Call it before `ptmp_dump_writer_free` to
/// learn of a failed write: the free flushes too, but cannot report.
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_NULL`] or [`PTMP_ERR_IO`].
///
/// Thread-safety: one thread at a time per writer.
///
/// # Safety
/// `writer` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn ptmp_dump_writer_flush(writer: *mut ptmp_dump_writer) -> c_int {
    guard("ptmp_dump_writer_flush", || {
        // SAFETY: the caller promises NULL or a live handle.
        let w = unsafe { writer.as_mut() }.ok_or_else(|| null("writer"))?;
        w.inner.flush().map_err(file)?;
        Ok(PTMP_OK)
    })
}

/// Flushes (ignoring errors; see `ptmp_dump_writer_flush`), closes the file
/// and frees the handle. NULL does nothing.
///
/// Thread-safety: no other thread may use the handle during or after this.
///
/// # Safety
/// `writer` is NULL or a live handle, not used again.
#[no_mangle]
pub unsafe extern "C" fn ptmp_dump_writer_free(writer: *mut ptmp_dump_writer) {
    guard("ptmp_dump_writer_free", || {
        if !writer.is_null() {
            // SAFETY: the caller gives back the box from
            // `ptmp_dump_writer_new` and never uses it again.
            let w = unsafe { Box::from_raw(writer) };
            let _ = w.inner.finish();
        }
        Ok(PTMP_OK)
    });
}
