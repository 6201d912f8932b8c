//! The Python binding's request and response: Client, Server and the
//! Request a server hands over. Every wait is in slices with the GIL
//! released, so Ctrl-C is seen; a request's failure raises a RequestError
//! subclass that says why.

#[allow(unused_imports)]
use super::*;

use ptmp::request::{ClientCounts, Failure, Reply, RequestId, ServerCounts};
use ptmp::{Client, Server, SocketConfig, SocketType};
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyTuple, PyType};
use std::borrow::Cow;
use std::collections::{HashSet, VecDeque};
use std::sync::Weak;

create_exception!(
    _ptmp,
    RequestError,
    PtmpError,
    "A request got no answer. The base of RequestTimeout, RequestRefused and \
     ServerGone; raised itself for a request over the size limit (the \
     config's max_message) or beyond the client's limit of requests out at \
     once. Its `id` is the request's id (None when it was never sent)."
);
create_exception!(
    _ptmp,
    RequestRefused,
    RequestError,
    "The server refused the request, or could not read it: `why` holds the \
     server's words."
);

/// The classes with two bases (a ptmp error and a built-in one), which
/// `create_exception!` cannot make: made at import by `register`.
static REQUEST_TIMEOUT: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static SERVER_GONE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// A request's outcome: its answer, or why there is none.
type Outcome = std::result::Result<Vec<u8>, Failure>;

/// A request's time unless told: five seconds.
const DEFAULT_TIMEOUT: f64 = 5.0;
/// A request's time when it is given as infinity: a century.
const CENTURY: Duration = Duration::from_secs(100 * 365 * 86400);

/// Add the classes and exceptions of requests to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("RequestError", py.get_type::<RequestError>())?;
    m.add("RequestRefused", py.get_type::<RequestRefused>())?;
    let two = |name: &str, other: Bound<'_, PyType>, doc: &str| -> PyResult<Py<PyType>> {
        let bases = PyTuple::new(py, [py.get_type::<RequestError>(), other])?;
        let ns = PyDict::new(py);
        ns.set_item("__module__", "_ptmp")?;
        ns.set_item("__doc__", doc)?;
        let t = py
            .import("builtins")?
            .getattr("type")?
            .call1((name, bases, ns))?;
        Ok(t.cast_into::<PyType>()?.unbind())
    };
    let timeout = two(
        "RequestTimeout",
        py.get_type::<pyo3::exceptions::PyTimeoutError>(),
        "A request got no answer in its time, or no server was there to \
         take it (the message says which). Also a TimeoutError.",
    )?;
    let gone = two(
        "ServerGone",
        py.get_type::<pyo3::exceptions::PyConnectionError>(),
        "A server's connection ended while the request was out: it will not \
         be answered. Also a ConnectionError.",
    )?;
    m.add("RequestTimeout", timeout.bind(py))?;
    m.add("ServerGone", gone.bind(py))?;
    // A second import of the module (a sub-interpreter) keeps the first.
    let _ = REQUEST_TIMEOUT.set(py, timeout);
    let _ = SERVER_GONE.set(py, gone);
    m.add_class::<PyClient>()?;
    m.add_class::<PyServer>()?;
    m.add_class::<PyRequest>()?;
    Ok(())
}

/// The Python exception for a request that failed: its class says why,
/// its message names the request and where it went; `id` and (refused)
/// `why` are attributes.
fn request_err(py: Python<'_>, address: &str, id: Option<u64>, failure: Failure) -> PyErr {
    let which = id.map_or("request".to_string(), |i| format!("request {i}"));
    let msg = format!("{which} to {address}: {failure}");
    let of = |cell: &PyOnceLock<Py<PyType>>| match cell.get(py) {
        Some(t) => PyErr::from_type(t.bind(py).clone(), msg.clone()),
        None => RequestError::new_err(msg.clone()),
    };
    let (e, why) = match failure {
        Failure::TimedOut { .. } | Failure::NoServer { .. } => (of(&REQUEST_TIMEOUT), None),
        Failure::ServerGone { .. } => (of(&SERVER_GONE), None),
        Failure::Refused(w) | Failure::Unreadable(w) => {
            (RequestRefused::new_err(msg.clone()), Some(w))
        }
        _ => (RequestError::new_err(msg.clone()), None),
    };
    let v = e.value(py);
    let set = v.setattr("id", id).and_then(|()| match why {
        Some(w) => v.setattr("why", w),
        None => Ok(()),
    });
    match set {
        Ok(()) => e,
        Err(other) => other,
    }
}

/// A ptmp error from a client: a request's failure as its class, the rest
/// as `perr` maps them.
fn client_err(py: Python<'_>, id: Option<u64>, e: ptmp::Error) -> PyErr {
    match e {
        ptmp::Error::Request { address, failure } => request_err(py, &address, id, failure),
        e => perr(e),
    }
}

/// The bytes of `data`: a bytes object's own, else a copy of any
/// C-contiguous buffer (bytearray, memoryview, a NumPy array ...).
fn body_of<'a>(data: &'a Bound<'_, PyAny>) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(b) = data.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    let buf = shm::byte_buffer(data)?;
    Ok(Cow::Owned(buf.to_vec(data.py())?))
}

/// A request's time in seconds: more than 0; infinity, or more than a
/// century, is a century.
fn request_time(t: f64) -> PyResult<Duration> {
    Ok(time_limit(Some(t), "timeout")?.unwrap_or(CENTURY))
}

/// A socket config from `address` or `config` (one of them), with the
/// type filled in when the config leaves it out; and its text, for the
/// presence it may ask for.
fn socket_config(
    stype: SocketType,
    addresses: Option<Vec<String>>,
    config: Option<&Bound<'_, PyAny>>,
    what: &str,
) -> PyResult<(SocketConfig, Option<String>)> {
    match (addresses, config) {
        (Some(all), None) => {
            if all.is_empty() {
                return Err(PyValueError::new_err(format!(
                    "{what}: give at least one address"
                )));
            }
            let mut b = SocketConfig::builder(stype);
            for a in &all {
                b = match stype {
                    SocketType::Router => b.bind(a),
                    _ => b.connect(a),
                };
            }
            Ok((b.build().map_err(perr)?, None))
        }
        (None, Some(c)) => {
            let text = config_text(c)?;
            let mut v = parse_config(&text)?;
            if let Some(s) = v.get_mut("socket").and_then(|s| s.as_object_mut()) {
                s.entry("type")
                    .or_insert_with(|| serde_json::Value::from(stype.name()));
            }
            Ok((SocketConfig::from_value(&v).map_err(perr)?, Some(text)))
        }
        (Some(_), Some(_)) => Err(PyValueError::new_err(format!(
            "{what}: give an address or config=, not both"
        ))),
        (None, None) => Err(PyValueError::new_err(format!(
            "{what}: give an address, or a socket config as config="
        ))),
    }
}

/// Turn on the presence a config's `"discovery"` key asks for (for
/// `name://` addresses), before its socket is made.
fn presence(text: Option<&str>) -> PyResult<()> {
    match text {
        Some(t) => ptmp_discovery::process::for_socket(t, "config")
            .map(|_| ())
            .map_err(peers::presence_err),
        None => Ok(()),
    }
}

/// The addresses of a config, as messages name them.
fn addresses(cfg: &SocketConfig) -> String {
    let all: Vec<&str> = cfg.endpoints().map(|(_, e)| e.address.as_str()).collect();
    all.join(",")
}

/// A client and what the binding keeps beside it: the requests whose
/// outcome Python has not had yet, those a `request` call waits for (on
/// this thread or another), and outcomes taken while waiting for another
/// request's.
struct Asking {
    c: Client,
    pending: HashSet<u64>,
    awaited: HashSet<u64>,
    held: VecDeque<(RequestId, Outcome)>,
}

/// The least wait given to the Rust client: one of zero returns before it
/// reads what has come.
const LEAST_WAIT: Duration = Duration::from_millis(1);

impl Asking {
    /// Send one request (waiting for room in the socket's queue): its id.
    /// `awaited`: a `request` call waits for its outcome, which `recv`
    /// leaves alone.
    fn send(&mut self, body: &[u8], t: Duration, awaited: bool) -> ptmp::Result<Option<u64>> {
        let id = self.c.send(body, t)?.0;
        self.pending.insert(id);
        if awaited {
            self.awaited.insert(id);
        }
        Ok(Some(id))
    }

    /// An outcome held, of request `id` or (None) of any not awaited.
    fn held(&mut self, id: Option<u64>) -> Option<(RequestId, Outcome)> {
        let at = self.held.iter().position(|r| match id {
            Some(id) => r.0 .0 == id,
            None => !self.awaited.contains(&r.0 .0),
        })?;
        let r = self.held.remove(at)?;
        self.pending.remove(&r.0 .0);
        self.awaited.remove(&r.0 .0);
        Some(r)
    }

    /// The next outcome, of request `id` or (None) of any not awaited,
    /// within `slice`; others that come meanwhile are held. `Some(None)`
    /// when it can never come (nothing is out), `None` when the slice
    /// passed.
    fn take(
        &mut self,
        id: Option<u64>,
        slice: Duration,
    ) -> ptmp::Result<Option<Option<(RequestId, Outcome)>>> {
        let until = Instant::now() + slice.max(LEAST_WAIT);
        loop {
            if let Some(r) = self.held(id) {
                return Ok(Some(Some(r)));
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            match self.c.recv(Some(left))? {
                Some(r) => self.held.push_back(r),
                None if self.c.in_flight() == 0 => return Ok(Some(None)),
                None => return Ok(None),
            }
        }
    }

    /// The next outcome of a request sent with `send` within `slice`:
    /// `Some(None)` when nothing is out.
    fn next(&mut self, slice: Duration) -> ptmp::Result<Option<Option<(RequestId, Outcome)>>> {
        self.take(None, slice)
    }

    /// The outcome of request `id` if it comes within `slice`.
    fn outcome_of(&mut self, id: u64, slice: Duration) -> ptmp::Result<Option<Outcome>> {
        Ok(self.take(Some(id), slice)?.map(|r| match r {
            Some((_, o)) => o,
            // Nothing out, and its outcome not held: not possible while
            // `id` is pending; said, rather than waited for.
            None => {
                self.pending.remove(&id);
                self.awaited.remove(&id);
                Err(Failure::TimedOut {
                    ms: slice.as_millis() as u64,
                })
            }
        }))
    }

    /// Forget request `id`: whether it was out.
    fn cancel(&mut self, id: u64) -> bool {
        self.held.retain(|r| r.0 .0 != id);
        self.c.cancel(RequestId(id));
        self.awaited.remove(&id);
        self.pending.remove(&id)
    }
}

/// Sends requests to one or more servers and gets their answers; many may
/// be out at once, each answer matched to its request by an id. Usable
/// from any Python thread (one call at a time).
#[pyclass(module = "ptmp._ptmp", name = "Client")]
pub struct PyClient {
    inner: Mutex<Option<Asking>>,
    address: String,
    /// Its counts when it closed.
    last: Mutex<ClientCounts>,
}

impl PyClient {
    /// Run `f` on the client in slices of at most `timeout` seconds in all
    /// (None: until it is done), the GIL released and signals looked for
    /// between slices (a signal ending a wait is a slice ended). A ptmp
    /// error is raised once the GIL is held again (a request's failure as
    /// its class, with `id`); none is made while the client is locked.
    fn wait<T: Send>(
        &self,
        py: Python<'_>,
        timeout: Option<f64>,
        id: Option<u64>,
        mut f: impl FnMut(&mut Asking, Duration) -> ptmp::Result<Option<T>> + Send,
    ) -> PyResult<Option<T>> {
        let m = &self.inner;
        let mut failed = None;
        let r = blocking(py, timeout, |slice| {
            with(m, "client", |a| match f(a, slice) {
                Ok(v) => Ok(v),
                Err(ptmp::Error::Interrupted) => Ok(None),
                Err(e) => {
                    failed = Some(e);
                    Err(PtmpError::new_err("(replaced)"))
                }
            })
        });
        match failed {
            Some(e) => Err(client_err(py, id, e)),
            None => r,
        }
    }

    /// Send one request, waiting for room in the socket's queue with the
    /// GIL released (a signal ends the wait, and Ctrl-C raises).
    fn send_one(&self, py: Python<'_>, body: &[u8], t: Duration, awaited: bool) -> PyResult<u64> {
        let id = self.wait(py, None, None, |a, _| a.send(body, t, awaited))?;
        Ok(id.expect("no time limit"))
    }

    /// The outcome of `(id, outcome)` for Python: `(id, answer)`, or the
    /// failure raised.
    fn outcome<'py>(
        &self,
        py: Python<'py>,
        id: u64,
        o: Outcome,
    ) -> PyResult<(u64, Bound<'py, PyBytes>)> {
        match o {
            Ok(body) => Ok((id, PyBytes::new(py, &body))),
            Err(f) => Err(request_err(py, &self.address, Some(id), f)),
        }
    }
}

fn client_counts<'py>(py: Python<'py>, c: ClientCounts) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("sent", c.sent)?;
    d.set_item("answered", c.answered)?;
    d.set_item("refused", c.refused)?;
    d.set_item("timed_out", c.timed_out)?;
    d.set_item("gone", c.gone)?;
    d.set_item("late", c.late)?;
    d.set_item("unreadable", c.unreadable)?;
    Ok(d)
}

#[pymethods]
impl PyClient {
    /// A client of the server(s) at `address` (`tcp://HOST:PORT`,
    /// `ipc://PATH`, `inproc://NAME`, `name://NODE/PORT` after
    /// `use_discovery()`), or from `config`, a DEALER socket config
    /// `{"socket": {...}}` as JSON text or a dict (the type may be left
    /// out; CURVE keys, several servers, `max_message`, a `"discovery"`
    /// key ...). Several servers share its requests in turn.
    #[new]
    #[pyo3(signature = (address=None, *, config=None))]
    fn new(
        py: Python<'_>,
        address: Option<String>,
        config: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let (cfg, text) = socket_config(
            SocketType::Dealer,
            address.map(|a| vec![a]),
            config,
            "Client",
        )?;
        // Presence may start and a name may be waited for: not while
        // holding the GIL.
        py.detach(|| presence(text.as_deref()))?;
        let c = py.detach(|| Client::new(cfg.clone())).map_err(perr)?;
        Ok(PyClient {
            inner: Mutex::new(Some(Asking {
                c,
                pending: HashSet::new(),
                awaited: HashSet::new(),
                held: VecDeque::new(),
            })),
            address: addresses(&cfg),
            last: Mutex::new(ClientCounts::default()),
        })
    }

    /// Send `data` (bytes or any bytes-like object) and wait for its
    /// answer, for at most `timeout` seconds in all (infinity: no limit);
    /// returns the answer. Raises RequestTimeout (a TimeoutError) when no
    /// answer came in time or no server was there to take it,
    /// RequestRefused when the server refused it (its words in `why`) or
    /// could not read it, ServerGone (a ConnectionError) when the server's
    /// connection ended meanwhile, RequestError for a request over the
    /// size limit. The GIL is released while waiting and Ctrl-C raises
    /// KeyboardInterrupt (the request is then forgotten). Answers to other
    /// requests out that come meanwhile are kept for `recv`.
    #[pyo3(signature = (data, timeout=DEFAULT_TIMEOUT))]
    fn request<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        timeout: f64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let body = body_of(data)?;
        let t = request_time(timeout)?;
        let id = self.send_one(py, &body, t, true)?;
        match self.wait(py, None, Some(id), |a, slice| a.outcome_of(id, slice)) {
            Ok(o) => Ok(self.outcome(py, id, o.expect("no time limit"))?.1),
            Err(e) => {
                // Interrupted: its answer, if one comes, is not for `recv`.
                let _ = with(&self.inner, "client", |a| Ok(a.cancel(id)));
                Err(e)
            }
        }
    }

    /// Send `data` as one request to be answered within `timeout` seconds,
    /// without waiting for its answer: returns its id, which `recv` gives
    /// back with the answer. Raises RequestError at once for a request
    /// over the size limit or beyond the client's limit of requests out
    /// (1024); a request waits in the socket's queue while no server is
    /// connected yet.
    #[pyo3(signature = (data, timeout=DEFAULT_TIMEOUT))]
    fn send(&self, py: Python<'_>, data: &Bound<'_, PyAny>, timeout: f64) -> PyResult<u64> {
        let body = body_of(data)?;
        let t = request_time(timeout)?;
        self.send_one(py, &body, t, false)
    }

    /// The next outcome of a request sent with `send`, in the order they
    /// come: `(id, answer)`, waiting up to `timeout` seconds (None: until
    /// one comes). None when the time passed, or at once when no request
    /// is out. A request that failed raises as `request` does, with its id
    /// in the message and in the exception's `id`; the other requests stay
    /// out, and the next call goes on with them. Outcomes of requests that
    /// a `request` call (on another thread) waits for are left to it.
    #[pyo3(signature = (timeout=None))]
    fn recv<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<f64>,
    ) -> PyResult<Option<(u64, Bound<'py, PyBytes>)>> {
        let got = self.wait(py, timeout, None, |a, slice| a.next(slice))?;
        match got.flatten() {
            Some((id, o)) => self.outcome(py, id.0, o).map(Some),
            None => Ok(None),
        }
    }

    /// Forget request `id`: its answer, if one comes, is dropped (counted
    /// as late). Whether it was out.
    fn cancel(&self, id: u64) -> PyResult<bool> {
        with(&self.inner, "client", |a| Ok(a.cancel(id)))
    }

    /// Requests sent whose outcome has not been returned yet.
    #[getter]
    fn in_flight(&self) -> usize {
        with(&self.inner, "client", |a| Ok(a.pending.len())).unwrap_or(0)
    }

    /// What happened to its requests so far: `{"sent", "answered",
    /// "refused", "timed_out", "gone", "late", "unreadable"}` (gone:
    /// failed as their server's connection ended; late: answers that came
    /// after their request's time, dropped). Kept after `close()`.
    fn counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = with(&self.inner, "client", |a| Ok(a.c.counts()))
            .unwrap_or_else(|_| *self.last.lock().unwrap_or_else(|p| p.into_inner()));
        client_counts(py, c)
    }

    /// Close: the requests out are forgotten. Calls after it raise
    /// PtmpError, but `counts()`.
    fn close(&self, py: Python<'_>) {
        let (m, last) = (&self.inner, &self.last);
        py.detach(|| {
            let a = m.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(a) = a {
                *last.lock().unwrap_or_else(|p| p.into_inner()) = a.c.counts();
            }
        });
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

/// A server, shared with the requests it handed over (which send their
/// answers through it when it is free).
type Shared = Arc<Mutex<Option<Server>>>;

/// Receives requests (each a `Request`) and sends their answers. Usable
/// from any Python thread (one call at a time); its requests may be
/// answered on any thread.
#[pyclass(module = "ptmp._ptmp", name = "Server")]
pub struct PyServer {
    inner: Shared,
    bound: Vec<String>,
    /// Its counts when it closed.
    last: Mutex<ServerCounts>,
}

/// Send what other threads answered, and refuse the requests that came
/// but were not taken, before a server closes (a few thousand at most).
fn flush_and_drop(mut s: Server) -> ServerCounts {
    for _ in 0..4096 {
        match s.recv(Some(Duration::ZERO)) {
            Ok(Some(r)) => {
                let _ = s.refuse(r.into_parts().1, "the server is closing");
            }
            _ => break,
        }
    }
    let counts = s.counts();
    drop(s);
    counts
}

impl PyServer {
    fn close_now(&self) {
        let s = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(s) = s {
            *self.last.lock().unwrap_or_else(|p| p.into_inner()) = flush_and_drop(s);
        }
    }
}

impl Drop for PyServer {
    fn drop(&mut self) {
        self.close_now();
    }
}

fn server_counts<'py>(py: Python<'py>, c: ServerCounts) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("received", c.received)?;
    d.set_item("answered", c.answered)?;
    d.set_item("refused", c.refused)?;
    d.set_item("unreadable", c.unreadable)?;
    d.set_item("undelivered", c.undelivered)?;
    Ok(d)
}

#[pymethods]
impl PyServer {
    /// A server listening at `address`, or at each of a list of them
    /// (`tcp://HOST:PORT`, `*` or 0 for any port; `ipc://PATH`,
    /// `inproc://NAME`, `name://NODE/PORT` after `use_discovery()`), or
    /// from `config`, a ROUTER socket config `{"socket": {...}}` as JSON
    /// text or a dict (the type may be left out).
    #[new]
    #[pyo3(signature = (address=None, *, config=None))]
    fn new(
        py: Python<'_>,
        address: Option<&Bound<'_, PyAny>>,
        config: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let addresses = match address {
            None => None,
            Some(a) => match a.extract::<String>() {
                Ok(one) => Some(vec![one]),
                Err(_) => Some(a.extract::<Vec<String>>().map_err(|_| {
                    PyValueError::new_err("Server: address is a str or a list of str")
                })?),
            },
        };
        let (cfg, text) = socket_config(SocketType::Router, addresses, config, "Server")?;
        py.detach(|| presence(text.as_deref()))?;
        let s = py.detach(|| Server::new(cfg)).map_err(perr)?;
        Ok(PyServer {
            bound: s.bound().to_vec(),
            inner: Arc::new(Mutex::new(Some(s))),
            last: Mutex::new(ServerCounts::default()),
        })
    }

    /// The endpoints bound, wildcards resolved (`tcp://127.0.0.1:40123`):
    /// what clients connect to.
    #[getter]
    fn bound(&self) -> Vec<String> {
        self.bound.clone()
    }

    /// The next request, waiting up to `timeout` seconds (None: until one
    /// comes); None when the time passed. The GIL is released while
    /// waiting, Ctrl-C raises KeyboardInterrupt, and answers given on
    /// other threads meanwhile are sent.
    #[pyo3(signature = (timeout=None))]
    fn recv(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<PyRequest>> {
        let m = &*self.inner;
        let got = blocking(py, timeout, |slice| {
            with(m, "server", |s| {
                s.recv(Some(slice)).or_else(|e| match e {
                    ptmp::Error::Interrupted => Ok(None),
                    e => Err(perr(e)),
                })
            })
        })?;
        Ok(got.map(|r| {
            let (body, reply) = r.into_parts();
            PyRequest {
                data: PyBytes::new(py, &body).unbind(),
                reply: Mutex::new(Some(reply)),
                server: Arc::downgrade(&self.inner),
            }
        }))
    }

    /// What happened to its requests so far: `{"received", "answered",
    /// "refused", "unreadable", "undelivered"}` (unreadable: messages that
    /// were not a request; undelivered: answers whose client was gone or
    /// not reading). Kept after `close()`.
    fn counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = with(&*self.inner, "server", |s| Ok(s.counts()))
            .unwrap_or_else(|_| *self.last.lock().unwrap_or_else(|p| p.into_inner()));
        server_counts(py, c)
    }

    /// Close: answers already given are sent first (delivered for up to
    /// the config's linger, a second unless set), and requests that came
    /// but were not taken by `recv` are refused ("the server is closing").
    /// Calls after it raise PtmpError, but `counts()`.
    fn close(&self, py: Python<'_>) {
        py.detach(|| self.close_now());
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

/// One request a server received: its bytes, and how to answer it once,
/// from any thread. Answered while its server is not waiting in `recv`
/// on another thread, the answer is sent at once; else it is sent by that
/// `recv`, which it wakes. A request dropped unanswered is refused, so its
/// client hears at once.
#[pyclass(module = "ptmp._ptmp", name = "Request")]
pub struct PyRequest {
    data: Py<PyBytes>,
    reply: Mutex<Option<Reply>>,
    server: Weak<Mutex<Option<Server>>>,
}

/// How a reply goes.
enum Give<'a> {
    Answer(&'a [u8]),
    Refuse(&'a str),
}

impl PyRequest {
    fn take(&self) -> PyResult<Reply> {
        self.reply
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| PtmpError::new_err("this request was already answered or refused"))
    }

    /// Send `reply` through the server now when no other thread holds it,
    /// else leave it for the server's `recv`.
    fn give(&self, reply: Reply, how: Give<'_>) -> PyResult<()> {
        let shared = self
            .server
            .upgrade()
            .ok_or_else(|| PtmpError::new_err("the server is closed: nothing can be answered"))?;
        let mut guard = match shared.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                match how {
                    Give::Answer(b) => reply.answer(b),
                    Give::Refuse(w) => reply.refuse(w),
                }
                return Ok(());
            }
        };
        let s = guard
            .as_mut()
            .ok_or_else(|| PtmpError::new_err("the server is closed: nothing can be answered"))?;
        match how {
            Give::Answer(b) => s.answer(reply, b),
            Give::Refuse(w) => s.refuse(reply, w),
        }
        .map_err(perr)
    }
}

impl Drop for PyRequest {
    fn drop(&mut self) {
        let reply = self
            .reply
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(r) = reply {
            let why = "the server let the request go without answering";
            let _ = self.give(r, Give::Refuse(why));
        }
    }
}

#[pymethods]
impl PyRequest {
    /// The request's bytes.
    #[getter]
    fn data(&self, py: Python<'_>) -> Py<PyBytes> {
        self.data.clone_ref(py)
    }

    /// Answer with `data` (bytes or any bytes-like object). An answer over
    /// the server's size limit goes as a refusal saying so. Raises
    /// PtmpError when the request was already answered or refused, or its
    /// server is closed.
    fn answer(&self, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let body = body_of(data)?;
        let reply = self.take()?;
        self.give(reply, Give::Answer(&body))
    }

    /// Refuse, saying why: the client's request raises RequestRefused with
    /// these words. Raises PtmpError as `answer` does.
    fn refuse(&self, why: &str) -> PyResult<()> {
        let reply = self.take()?;
        self.give(reply, Give::Refuse(why))
    }

    /// Whether it was answered or refused already.
    #[getter]
    fn answered(&self) -> bool {
        self.reply
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let n = self.data.bind(py).as_bytes().len();
        let a = if self.answered() { "True" } else { "False" };
        format!("<ptmp.Request of {n} bytes, answered={a}>")
    }
}
