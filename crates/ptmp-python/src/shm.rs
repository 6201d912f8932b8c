//! The Python binding's shared memory: ShmWriter, ShmReader and the zero-copy ShmView, listing and removing channels.

#[allow(unused_imports)]
use super::*;

pub(crate) fn policy(p: &str) -> PyResult<Policy> {
    match p {
        "overwrite" | "pubsub" => Ok(Policy::Overwrite),
        "block" | "pushpull" => Ok(Policy::Block),
        _ => Err(ConfigError::new_err(format!(
            "policy {p:?}: use \"overwrite\" (PUB/SUB) or \"block\" (PUSH/PULL)"
        ))),
    }
}

/// The bytes of any C-contiguous buffer, whatever its item type (a NumPy
/// array of uint16 or float32 is published as its bytes), without a copy.
pub(crate) fn byte_buffer(data: &Bound<'_, PyAny>) -> PyResult<PyBuffer<u8>> {
    let contiguous = |ok: bool| {
        if ok {
            Ok(())
        } else {
            Err(PyValueError::new_err(
                "publish needs a C-contiguous buffer (numpy.ascontiguousarray makes one)",
            ))
        }
    };
    if let Ok(b) = PyBuffer::<u8>::get(data) {
        contiguous(b.is_c_contiguous())?;
        return Ok(b);
    }
    // Another item type: view the same memory as bytes.
    let mv = pyo3::types::PyMemoryView::from(data)?;
    contiguous(mv.getattr("c_contiguous")?.extract()?)?;
    PyBuffer::<u8>::get(&mv.call_method1("cast", ("B",))?)
}

/// The writer of a shared-memory channel (the one process that publishes).
#[pyclass(module = "ptmp._ptmp", name = "ShmWriter")]
pub struct PyShmWriter {
    w: Writer,
}

#[pymethods]
impl PyShmWriter {
    #[new]
    #[pyo3(signature = (name, slots=1024, max_message=65536, policy="overwrite"))]
    fn new(name: &str, slots: usize, max_message: usize, policy: &str) -> PyResult<Self> {
        let cfg = ChannelConfig {
            slots,
            max_message,
            policy: self::policy(policy)?,
        };
        Ok(PyShmWriter {
            w: Writer::create(name, cfg).map_err(serr)?,
        })
    }

    /// Publish one message (any bytes-like object: bytes, bytearray, a
    /// NumPy array ...), copied once into the ring; returns its sequence
    /// number.
    fn publish(&mut self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<u64> {
        let buf = byte_buffer(data)?;
        let (ptr, len) = (buf.buf_ptr() as usize, buf.len_bytes());
        // A full ring (policy "block") is waited for in slices with the GIL
        // released, looking for signals between them, so Ctrl-C interrupts
        // the wait; the block timeout still bounds the whole wait.
        let total = DEFAULT_BLOCK_TIMEOUT;
        let t0 = Instant::now();
        loop {
            let left = total.saturating_sub(t0.elapsed());
            self.w
                .set_block_timeout(left.min(Duration::from_millis(50)));
            let r = self.publish_once(py, ptr, len);
            self.w.set_block_timeout(total);
            match r {
                Err(ptmp_shm::ShmError::Timeout { .. }) if t0.elapsed() < total => {
                    py.check_signals()?
                }
                Err(ptmp_shm::ShmError::Timeout { name, pid, pos, .. }) => {
                    return Err(serr(ptmp_shm::ShmError::Timeout {
                        name,
                        waited_ms: t0.elapsed().as_millis() as u64,
                        pid,
                        pos,
                    }))
                }
                r => return r.map_err(serr),
            }
        }
    }

    /// The sequence number the next message will get.
    #[getter]
    fn next_seq(&self) -> u64 {
        self.w.next_seq()
    }

    #[getter]
    fn max_message(&self) -> usize {
        self.w.max_message()
    }
}

impl PyShmWriter {
    /// One publish with the GIL released, of the `len` bytes at `ptr`,
    /// which the caller's buffer export keeps alive and C-contiguous.
    fn publish_once(
        &mut self,
        py: Python<'_>,
        ptr: usize,
        len: usize,
    ) -> Result<u64, ptmp_shm::ShmError> {
        let w = &mut self.w;
        // The address crosses into the GIL-free closure as a number (a raw
        // pointer is not Send); the caller's `buf` keeps the export alive.
        py.detach(move || {
            let src: &[u8] = if len == 0 {
                // Nothing to read, and an empty exporter may give a null
                // pointer, which no slice may hold.
                &[]
            } else {
                // SAFETY: the caller's `buf` holds the buffer exported (it
                // is released only when `buf` drops, after this closure and
                // this call have returned),
                // and while exported the object may neither free nor move
                // nor resize that memory (bytearray and NumPy refuse to);
                // `byte_buffer` checked it is C-contiguous, so its
                // `len_bytes` bytes from `buf_ptr` are one readable range
                // of u8, for which any bit pattern is valid. The slice does
                // not outlive the closure. As with every C extension that
                // reads a buffer without the GIL, Python code writing into
                // the same object from another thread meanwhile is the
                // caller's race (the buffer protocol does not lock); it can
                // tear the message copied, nothing more.
                unsafe { std::slice::from_raw_parts(ptr as *const u8, len) }
            };
            w.publish(src)
        })
    }
}

/// A reader of a shared-memory channel.
#[pyclass(module = "ptmp._ptmp", name = "ShmReader")]
pub struct PyShmReader {
    r: Reader,
    viewing: bool,
}

pub(crate) fn start_at(s: &str) -> PyResult<StartAt> {
    match s {
        "next" => Ok(StartAt::Next),
        "newest" => Ok(StartAt::Newest),
        "oldest" => Ok(StartAt::Oldest),
        _ => Err(ConfigError::new_err(format!(
            "start {s:?}: use \"next\", \"newest\" or \"oldest\""
        ))),
    }
}

impl PyShmReader {
    fn check_free(&self) -> PyResult<()> {
        if self.viewing {
            return Err(ShmError::new_err(
                "a view of this reader is still held: release it (view.release() or a with block) before reading on",
            ));
        }
        Ok(())
    }
}

#[pymethods]
impl PyShmReader {
    /// Attach to channel `name`; `start` is "next" (default), "newest" or
    /// "oldest" (the whole history the ring still holds); waits up to
    /// `timeout` seconds for the channel to exist.
    #[new]
    #[pyo3(signature = (name, start="next", timeout=0.0))]
    fn new(py: Python<'_>, name: &str, start: &str, timeout: Option<f64>) -> PyResult<Self> {
        let start = start_at(start)?;
        let mut last = None;
        let r = blocking(py, timeout, |slice| {
            let t0 = Instant::now();
            loop {
                match Reader::attach(name, start) {
                    Ok(r) => return Ok(Some(r)),
                    Err(e @ ptmp_shm::ShmError::NotFound { .. }) => last = Some(e),
                    Err(e) => return Err(serr(e)),
                }
                if t0.elapsed() >= slice {
                    return Ok(None);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })?;
        match r {
            Some(r) => Ok(PyShmReader { r, viewing: false }),
            None => {
                Err(last.map_or_else(|| ShmError::new_err(format!("no channel {name:?}")), serr))
            }
        }
    }

    /// The next message copied into bytes, or None on timeout.
    #[pyo3(signature = (timeout=None))]
    fn recv<'py>(
        &mut self,
        py: Python<'py>,
        timeout: Option<f64>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        self.check_free()?;
        let r = &mut self.r;
        let mut buf = Vec::new();
        let got = blocking(py, timeout, |slice| {
            r.recv(&mut buf, Some(slice))
                .map(|got| got.map(|_| ()))
                .map_err(serr)
        })?;
        Ok(got.map(|()| PyBytes::new(py, &buf)))
    }

    /// The next message as a zero-copy view of its slot, or None on
    /// timeout. Use `memoryview(v)` or `numpy.frombuffer(v, ...)`; check
    /// `v.valid()` after using the data; release it before the next read.
    #[pyo3(signature = (timeout=None))]
    fn view(slf: Bound<'_, Self>, timeout: Option<f64>) -> PyResult<Option<PyShmView>> {
        let py = slf.py();
        let mut me = slf.borrow_mut();
        me.check_free()?;
        // Wait for data without holding a view, then take the view at once.
        let ready = {
            let rr = &me.r;
            blocking(py, timeout, |slice| {
                let t0 = Instant::now();
                loop {
                    if rr.has_data() {
                        return Ok(Some(()));
                    }
                    if t0.elapsed() >= slice {
                        return Ok(None);
                    }
                    std::thread::sleep(Duration::from_micros(50).min(slice));
                }
            })?
        };
        if ready.is_none() {
            return Ok(None);
        }
        // An owned view holds the mapping itself; `viewing` still keeps the
        // reader from reading on (and releasing the slot) while it is held.
        let v =
            me.r.view_checked(Some(Duration::ZERO))
                .map_err(serr)?
                .map(View::into_owned);
        let Some(v) = v else {
            return Ok(None);
        };
        me.viewing = true;
        drop(me);
        Ok(Some(PyShmView {
            view: Some(SendView(v)),
            exports: 0,
            owner: slf.unbind(),
        }))
    }

    /// Message `seq` from the ring's history copied into bytes; None if it
    /// is not published yet; raises if it has already left the ring.
    fn read_at<'py>(&self, py: Python<'py>, seq: u64) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let mut buf = Vec::new();
        match self.r.read_at(seq, &mut buf) {
            Ok(true) => Ok(Some(PyBytes::new(py, &buf))),
            Ok(false) => Ok(None),
            Err(oldest) => Err(ShmError::new_err(format!(
                "message {seq} has left the ring; the oldest still held is {oldest}"
            ))),
        }
    }

    /// Sequence number of the next message this reader will get.
    #[getter]
    fn position(&self) -> u64 {
        self.r.position()
    }
    /// Messages published on the channel so far.
    #[getter]
    fn published(&self) -> u64 {
        self.r.published()
    }
    /// Messages this reader lost to overruns.
    #[getter]
    fn lost(&self) -> u64 {
        self.r.lost()
    }
    /// (address, length) of this reader's mapping of the channel.
    #[getter]
    fn mapping(&self) -> (usize, usize) {
        self.r.mapping()
    }
}

/// An [`OwnedView`] that may move to, and be read from, another thread,
/// so a view handed to another Python thread works there.
pub(crate) struct SendView(OwnedView);

// SAFETY: the view's raw pointer points into the shared mapping, which the
// view's own `Arc` of the attachment keeps mapped wherever the view goes;
// nothing about it is tied to the thread that took it (the reader's
// registry entry is per process, updated with atomics). Through `&self` the
// bytes are only read, and concurrent writes by the ring's writer are the
// seqlock's business (`valid`), from any thread alike.
unsafe impl Send for SendView {}
// SAFETY: as above: shared access only reads the mapping and loads atomics.
unsafe impl Sync for SendView {}

/// A zero-copy view of one message in a shared-memory ring.
#[pyclass(module = "ptmp._ptmp", name = "ShmView")]
pub struct PyShmView {
    view: Option<SendView>,
    exports: usize,
    owner: Py<PyShmReader>,
}

impl PyShmView {
    fn v(&self) -> PyResult<&OwnedView> {
        self.view
            .as_ref()
            .map(|v| &v.0)
            .ok_or_else(|| ShmError::new_err("the view was released"))
    }
}

#[pymethods]
impl PyShmView {
    /// True while the writer has not overwritten the slot: check it after
    /// using the data, as in Rust (a false means the data read was torn).
    fn valid(&self) -> PyResult<bool> {
        Ok(self.v()?.valid())
    }

    /// The message's sequence number.
    #[getter]
    fn seq(&self) -> PyResult<u64> {
        Ok(self.v()?.received.seq)
    }

    /// Messages lost (overrun) just before this one.
    #[getter]
    fn lost(&self) -> PyResult<u64> {
        Ok(self.v()?.received.lost)
    }

    /// Address of the data (inside the reader's `mapping`: no copy).
    #[getter]
    fn address(&self) -> PyResult<usize> {
        Ok(self.v()?.bytes().as_ptr() as usize)
    }

    fn __len__(&self) -> PyResult<usize> {
        Ok(self.v()?.bytes().len())
    }

    /// A copy of the data as bytes.
    fn tobytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, self.v()?.bytes()))
    }

    /// The data as a read-only NumPy uint8 array sharing the slot (needs
    /// NumPy installed).
    fn numpy<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let np = slf.py().import("numpy")?;
        np.call_method1("frombuffer", (slf, np.getattr("uint8")?))
    }

    /// Give the slot back to the writer; the reader can read on.
    fn release(&mut self, py: Python<'_>) -> PyResult<()> {
        if self.exports > 0 {
            return Err(ShmError::new_err(format!(
                "{} buffer(s) (memoryview, NumPy array) still use this view; delete them first",
                self.exports
            )));
        }
        if self.view.take().is_some() {
            self.owner.borrow_mut(py).viewing = false;
        }
        Ok(())
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(
        &mut self,
        py: Python<'_>,
        _t: Option<Bound<'_, PyAny>>,
        _v: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.release(py)
    }

    /// Export the slot, read-only and without a copy, through the buffer
    /// protocol (`memoryview(v)`, `numpy.frombuffer(v)`). CPython calls
    /// this with the GIL held and the consumer's `Py_buffer` to fill; each
    /// export is counted until `__releasebuffer__`, and `release()` refuses
    /// while any is left.
    unsafe fn __getbuffer__(
        slf: PyRefMut<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if (flags & pyo3::ffi::PyBUF_WRITABLE) == pyo3::ffi::PyBUF_WRITABLE {
            return Err(pyo3::exceptions::PyBufferError::new_err(
                "a shared-memory view is read-only",
            ));
        }
        let bytes = slf.v()?.bytes();
        let (ptr, len) = (bytes.as_ptr(), bytes.len());
        let obj = slf.as_ptr();
        let mut slf = slf;
        slf.exports += 1;
        // SAFETY: `view` is the consumer's Py_buffer, valid and writable
        // for this call (the buffer protocol's contract with the exporter),
        // and every field is set before we return, as PyBuffer_FillInfo
        // would set it. The memory handed out stays valid as long as the
        // consumer holds it: `view.obj` takes a new reference to this
        // object, which PyBuffer_Release gives back, so the PyShmView and
        // the OwnedView inside it (which keeps the mapping) cannot be
        // dropped before; and `release()` refuses while `exports` (counted
        // up here, down in `__releasebuffer__`) is above 0, so the slot is
        // not given back to the writer either. `len` is a slice length, so
        // it fits an isize. The buffer is marked read-only and a writable
        // request was refused above, so nothing writes through `buf`; a
        // writer overwriting the slot meanwhile is what `valid()` reports,
        // as for a Rust View. `format` points to a static NUL-terminated
        // "B" that consumers only read (the field is `char *` in C, hence
        // the cast). `shape` and `strides` point at this Py_buffer's own
        // `len` and `itemsize`, as PyBuffer_FillInfo does: the protocol
        // requires a consumer to keep the Py_buffer in place until it
        // releases it.
        unsafe {
            (*view).obj = obj;
            pyo3::ffi::Py_INCREF(obj);
            (*view).buf = ptr as *mut std::os::raw::c_void;
            (*view).len = len as isize;
            (*view).readonly = 1;
            (*view).itemsize = 1;
            (*view).format = if (flags & pyo3::ffi::PyBUF_FORMAT) == pyo3::ffi::PyBUF_FORMAT {
                c"B".as_ptr() as *mut _
            } else {
                std::ptr::null_mut()
            };
            (*view).ndim = 1;
            (*view).shape = if (flags & pyo3::ffi::PyBUF_ND) == pyo3::ffi::PyBUF_ND {
                &mut (*view).len
            } else {
                std::ptr::null_mut()
            };
            (*view).strides = if (flags & pyo3::ffi::PyBUF_STRIDES) == pyo3::ffi::PyBUF_STRIDES {
                &mut (*view).itemsize
            } else {
                std::ptr::null_mut()
            };
            (*view).suboffsets = std::ptr::null_mut();
            (*view).internal = std::ptr::null_mut();
        }
        Ok(())
    }

    /// A consumer released one export taken by `__getbuffer__` (CPython
    /// drops the reference in `view.obj` itself).
    unsafe fn __releasebuffer__(mut slf: PyRefMut<'_, Self>, _view: *mut pyo3::ffi::Py_buffer) {
        slf.exports = slf.exports.saturating_sub(1);
    }
}

impl Drop for PyShmView {
    fn drop(&mut self) {
        if self.view.take().is_some() {
            Python::attach(|py| {
                if let Ok(mut o) = self.owner.try_borrow_mut(py) {
                    o.viewing = false;
                }
            });
        }
    }
}

/// One channel of `shm_list()` as a dict, with the fields `ptmp shm ls
/// --json` prints.
pub(crate) fn channel_dict<'py>(
    py: Python<'py>,
    c: &ptmp_shm::ChannelInfo,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &c.name)?;
    d.set_item("path", c.path.to_string_lossy())?;
    d.set_item("bytes", c.bytes)?;
    match &c.state {
        Ok(s) => {
            d.set_item("slots", s.config.slots)?;
            d.set_item("max_message", s.config.max_message)?;
            d.set_item("policy", s.config.policy.label())?;
            d.set_item("published", s.published)?;
            d.set_item("writer_pid", s.writer_pid)?;
            d.set_item("writer_alive", s.writer_alive)?;
            d.set_item("publish_fence", s.publish_fence.label())?;
        }
        Err(e) => d.set_item("error", e)?,
    }
    d.set_item("untrusted", c.untrusted)?;
    Ok(d)
}

/// The shared-memory channels in the shm directory (`PTMP_SHM_DIR`, else
/// /dev/shm), as `ptmp shm ls --json` lists them: one dict per channel,
/// sorted by name.
#[pyfunction]
pub(crate) fn shm_list(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let chans = py.detach(ptmp_shm::list).map_err(serr)?;
    chans.iter().map(|c| channel_dict(py, c)).collect()
}

/// Remove channel `name`, or with `stale=True` every channel whose writer
/// is gone and every unreadable segment (not links nor other users'
/// segments: name those), as `ptmp shm rm` does. Returns the names removed.
/// Processes attached keep their mapping; new ones no longer find it.
#[pyfunction]
#[pyo3(signature = (name=None, *, stale=false))]
pub(crate) fn shm_remove(
    py: Python<'_>,
    name: Option<String>,
    stale: bool,
) -> PyResult<Vec<String>> {
    let names: Vec<String> = match (name, stale) {
        (Some(_), true) => {
            return Err(PyValueError::new_err(
                "give a channel name or stale=True, not both",
            ))
        }
        (None, false) => {
            return Err(PyValueError::new_err(
                "name the channel to remove, or give stale=True",
            ))
        }
        (Some(n), false) => vec![n],
        (None, true) => py
            .detach(ptmp_shm::list)
            .map_err(serr)?
            .into_iter()
            .filter(|c| !c.untrusted && c.state.as_ref().map_or(true, |s| !s.writer_alive))
            .map(|c| c.name)
            .collect(),
    };
    for n in &names {
        ptmp_shm::remove(n).map_err(serr)?;
    }
    Ok(names)
}
