//! The Python binding's Sender and Receiver: PTMP sockets from a JSON config; every wait in slices so Ctrl-C is seen.

#[allow(unused_imports)]
use super::*;

/// Sends TPSets (or raw frames) on a socket made from a PTMP JSON config.
/// Usable from any Python thread (one call at a time).
#[pyclass(module = "ptmp._ptmp", name = "Sender")]
pub struct PySender {
    tx: Mutex<Option<Sender>>,
}

/// Make a sender's shm:// waits for a full ring return after each slice
/// too (so `blocking` can look for Ctrl-C between them), forgetting a wait
/// an interrupted call left behind; the block timeout still bounds the
/// whole wait for each message.
pub(crate) fn slices(py: Python<'_>, m: &Mutex<Option<Sender>>) {
    py.detach(|| {
        let _ = with(m, "sender", |tx| {
            tx.wait_in_slices();
            Ok(())
        });
    });
}

/// Presence asked for by a `"discovery"` key beside the config's
/// `"socket"` (the keys of `ptmp.run`'s, without `announce`), turned on
/// before the socket is made so that its names are resolved and announced.
fn socket_presence(text: &str) -> PyResult<()> {
    ptmp_discovery::process::for_socket(text, "config")
        .map(|_| ())
        .map_err(peers::presence_err)
}

/// After a slice in which a send found no room: a CURVE server that
/// refused this client ends the wait (libzmq never retries it, and a PUSH
/// would wait for ever), else a peer connected to by name is followed.
fn stalled(tx: &mut Sender) -> PyResult<()> {
    if let Some(why) = tx.refused() {
        return Err(PtmpError::new_err(format!("refused: {why}")));
    }
    peers::follow_tx(tx)
}

/// After a slice in which nothing came: a CURVE server that refused this
/// receiver ends the wait, since nothing will ever come.
fn quiet(rx: &mut Receiver) -> PyResult<()> {
    match rx.refused() {
        Some(why) => Err(PtmpError::new_err(format!("refused: {why}"))),
        None => Ok(()),
    }
}

/// Run `f` on the locked socket (the lock is taken inside the GIL-free
/// closure, so a thread blocked in a send never holds the GIL).
pub(crate) fn with<S, T>(
    m: &Mutex<Option<S>>,
    what: &str,
    f: impl FnOnce(&mut S) -> PyResult<T>,
) -> PyResult<T> {
    let mut g = m.lock().unwrap_or_else(|p| p.into_inner());
    match g.as_mut() {
        Some(s) => f(s),
        None => Err(PtmpError::new_err(format!("the {what} is closed"))),
    }
}

#[pymethods]
impl PySender {
    /// `config`: `{"socket": {...}}` as a JSON text or a dict; a
    /// `"discovery"` key beside `"socket"` turns presence on for names.
    #[new]
    fn new(config: &Bound<'_, PyAny>) -> PyResult<Self> {
        let (py, text) = (config.py(), config_text(config)?);
        let cfg = ptmp::SocketConfig::from_json(&text).map_err(perr)?;
        // Presence may start and a name connected to may be waited for:
        // not while holding the GIL.
        py.detach(|| socket_presence(&text))?;
        let tx = py.detach(|| Sender::following(&cfg)).map_err(perr)?;
        Ok(PySender {
            tx: Mutex::new(Some(tx)),
        })
    }

    /// Send one TPSet; blocks (GIL released, Ctrl-C honoured) while a PUSH
    /// or PAIR is at its high-water mark.
    fn send(&self, py: Python<'_>, tpset: PyRef<'_, PyTPSet>) -> PyResult<()> {
        let set = &tpset.inner;
        let m = &self.tx;
        slices(py, m);
        blocking(py, None, |slice| {
            with(m, "sender", |tx| {
                let sent = intr(tx.send_within(set, slice))?;
                if !sent {
                    stalled(tx)?;
                }
                Ok(sent.then_some(()))
            })
        })?;
        Ok(())
    }

    /// Send many TPSets in one call (one GIL release for all).
    fn send_many(&self, py: Python<'_>, tpsets: Vec<PyRef<'_, PyTPSet>>) -> PyResult<()> {
        let sets: Vec<&TPSet> = tpsets.iter().map(|t| &t.inner).collect();
        let m = &self.tx;
        slices(py, m);
        let mut i = 0;
        blocking(py, None, |slice| {
            with(m, "sender", |tx| {
                while i < sets.len() {
                    if !intr(tx.send_within(sets[i], slice))? {
                        stalled(tx)?;
                        return Ok(None);
                    }
                    i += 1;
                }
                Ok(Some(()))
            })
        })?;
        Ok(())
    }

    /// Send one message given as its frames (schema-blind).
    fn send_frames(&self, py: Python<'_>, frames: Vec<Vec<u8>>) -> PyResult<()> {
        let f = Frames::from_slices(&frames);
        let m = &self.tx;
        slices(py, m);
        blocking(py, None, |slice| {
            with(m, "sender", |tx| {
                let sent = intr(tx.send_frames_within(&f, slice))?;
                if !sent {
                    stalled(tx)?;
                }
                Ok(sent.then_some(()))
            })
        })?;
        Ok(())
    }

    /// Messages sent so far.
    #[getter]
    fn sent(&self) -> u64 {
        with(&self.tx, "sender", |t| Ok(t.sent())).unwrap_or(0)
    }

    /// Endpoints bound, wildcards resolved (`tcp://127.0.0.1:*`).
    #[getter]
    fn bound_endpoints(&self) -> Vec<String> {
        with(&self.tx, "sender", |t| Ok(t.bound_endpoints().to_vec())).unwrap_or_default()
    }

    /// Close, first waiting (up to the config's linger_ms) for what was sent
    /// to leave the process.
    fn close(&self, py: Python<'_>) {
        let m = &self.tx;
        py.detach(|| {
            let tx = m.lock().unwrap_or_else(|p| p.into_inner()).take();
            drop(tx)
        });
    }

    /// Close like `close()`, and report what may not have reached a peer:
    /// `{"sent": n, "undelivered": n or None, "undelivered_is": "exact",
    /// "at_most" or "unknown", "refused": None or "ENDPOINT: why"}`
    /// (unknown for PUB and inproc://, which do not track delivery;
    /// refused for a CURVE client whose handshake failed). A closed sender
    /// reports nothing sent.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = &self.tx;
        let d = py.detach(|| {
            let tx = m.lock().unwrap_or_else(|p| p.into_inner()).take();
            tx.map(Sender::finish)
        });
        let (sent, und, refused) = d.map_or((0, ptmp::Undelivered::None, None), |d| {
            (d.sent, d.undelivered, d.refused)
        });
        let (n, how) = match und {
            ptmp::Undelivered::None => (Some(0), "exact"),
            ptmp::Undelivered::Exactly(n) => (Some(n), "exact"),
            ptmp::Undelivered::AtMost(n) => (Some(n), "at_most"),
            ptmp::Undelivered::Unknown => (None, "unknown"),
        };
        let out = PyDict::new(py);
        out.set_item("sent", sent)?;
        out.set_item("undelivered", n)?;
        out.set_item("undelivered_is", how)?;
        out.set_item("refused", refused)?;
        Ok(out)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _t: Option<Bound<'_, PyAny>>,
        _v: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) {
        self.close(py)
    }
}

/// Receives TPSets (or raw frames) on a socket made from a PTMP JSON config.
/// Usable from any Python thread (one call at a time).
#[pyclass(module = "ptmp._ptmp", name = "Receiver")]
pub struct PyReceiver {
    rx: Mutex<Option<Receiver>>,
}

#[pymethods]
impl PyReceiver {
    #[new]
    fn new(config: &Bound<'_, PyAny>) -> PyResult<Self> {
        let (py, text) = (config.py(), config_text(config)?);
        let cfg = ptmp::SocketConfig::from_json(&text).map_err(perr)?;
        // Presence may start and a name connected to may be waited for:
        // not while holding the GIL.
        py.detach(|| socket_presence(&text))?;
        let rx = py.detach(|| Receiver::following(&cfg)).map_err(perr)?;
        Ok(PyReceiver {
            rx: Mutex::new(Some(rx)),
        })
    }

    /// The next TPSet, or None when `timeout` seconds pass first (None:
    /// wait forever). A message that is not a TPSet raises WireError (the
    /// receiver counts it and can go on).
    #[pyo3(signature = (timeout=None))]
    fn recv(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<PyTPSet>> {
        let m = &self.rx;
        let mut set = TPSet::default();
        let got = blocking(py, timeout, |slice| {
            with(m, "receiver", |rx| {
                let got = intr(rx.recv_into(&mut set, Some(slice)))?
                    || peers::followed(rx, |r| {
                        r.recv_into(&mut set, Some(Duration::ZERO)).unwrap_or(false)
                    })?;
                if !got {
                    quiet(rx)?;
                }
                Ok(got.then_some(()))
            })
        })?;
        Ok(got.map(|()| PyTPSet { inner: set }))
    }

    /// Up to `max` TPSets: waits up to `timeout` for the first, then takes
    /// what is already queued (one GIL release for the batch).
    #[pyo3(signature = (max, timeout=None))]
    fn recv_many(
        &self,
        py: Python<'_>,
        max: usize,
        timeout: Option<f64>,
    ) -> PyResult<Vec<PyTPSet>> {
        let m = &self.rx;
        let mut out: Vec<TPSet> = Vec::new();
        blocking(py, timeout, |slice| {
            with(m, "receiver", |rx| {
                let mut set = TPSet::default();
                if !(intr(rx.recv_into(&mut set, Some(slice)))?
                    || peers::followed(rx, |r| {
                        r.recv_into(&mut set, Some(Duration::ZERO)).unwrap_or(false)
                    })?)
                {
                    quiet(rx)?;
                    return Ok(None);
                }
                out.push(set);
                while out.len() < max {
                    let mut set = TPSet::default();
                    match intr(rx.recv_into(&mut set, Some(Duration::ZERO))) {
                        Ok(true) => out.push(set),
                        // A bad message after good ones: return the good ones
                        // (the receiver counted the bad one in `errors`).
                        Ok(false) | Err(_) => break,
                    }
                }
                Ok(Some(()))
            })
        })?;
        Ok(out.into_iter().map(|inner| PyTPSet { inner }).collect())
    }

    /// The next message's frames as a list of bytes, or None on timeout.
    #[pyo3(signature = (timeout=None))]
    fn recv_frames<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<f64>,
    ) -> PyResult<Option<Vec<Bound<'py, PyBytes>>>> {
        let m = &self.rx;
        let mut f = Frames::new();
        let got = blocking(py, timeout, |slice| {
            with(m, "receiver", |rx| {
                let got = intr(rx.recv_raw_into(&mut f, Some(slice)))?
                    || peers::followed(rx, |r| {
                        r.recv_raw_into(&mut f, Some(Duration::ZERO))
                            .unwrap_or(false)
                    })?;
                if !got {
                    quiet(rx)?;
                }
                Ok(got.then_some(()))
            })
        })?;
        Ok(got.map(|()| f.iter().map(|b| PyBytes::new(py, b)).collect()))
    }

    /// Pass the next message on to `sender` without bringing it into
    /// Python, frames as they came: over shm:// from ring to ring in one
    /// copy. True when one was passed on, False when `timeout` seconds
    /// passed first (None: wait for ever). A message taken but not yet sent
    /// (no room at the sender within the wait) is kept, and the next call
    /// sends it first; a send that fails raises PtmpError, the message
    /// kept the same way.
    #[pyo3(signature = (sender, timeout=None))]
    fn forward(
        &self,
        py: Python<'_>,
        sender: PyRef<'_, PySender>,
        timeout: Option<f64>,
    ) -> PyResult<bool> {
        let (m, t) = (&self.rx, &sender.tx);
        slices(py, t);
        let got = blocking(py, timeout, |slice| {
            with(m, "receiver", |rx| {
                with(t, "sender", |tx| {
                    let sent = intr(rx.forward(tx, Some(slice)))?;
                    if !sent {
                        quiet(rx)?;
                        if rx.holding() {
                            stalled(tx)?;
                        }
                    }
                    Ok(sent.then_some(()))
                })
            })
        })?;
        Ok(got.is_some())
    }

    /// Say that every TPSet returned so far has been handed on. A receiver
    /// with an identity in its shm:// rings (`shm_reader_id`) opened after
    /// a crash then resumes after them; what was returned but not committed
    /// is delivered again. Cheap (no system call): the ring is told every
    /// few sets unless `now` is true. No effect on other receivers.
    #[pyo3(signature = (now=false))]
    fn commit(&self, now: bool) -> PyResult<()> {
        with(&self.rx, "receiver", |r| {
            if now {
                r.commit_now();
            } else {
                r.commit();
            }
            Ok(())
        })
    }

    #[getter]
    fn received(&self) -> u64 {
        with(&self.rx, "receiver", |r| Ok(r.received())).unwrap_or(0)
    }
    #[getter]
    fn errors(&self) -> u64 {
        with(&self.rx, "receiver", |r| Ok(r.errors())).unwrap_or(0)
    }
    /// Messages lost to overruns (shm:// PUB/SUB only).
    #[getter]
    fn lost(&self) -> u64 {
        with(&self.rx, "receiver", |r| Ok(r.lost())).unwrap_or(0)
    }
    #[getter]
    fn bound_endpoints(&self) -> Vec<String> {
        with(&self.rx, "receiver", |r| Ok(r.bound_endpoints().to_vec())).unwrap_or_default()
    }

    fn close(&self) {
        self.rx.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(
        &self,
        _t: Option<Bound<'_, PyAny>>,
        _v: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) {
        self.close()
    }
}
