//! `ptmp._ptmp`: the native core of the Python package `ptmp`.
//!
//! Design: thin wrappers over the Rust API, so Python gets the same wire
//! format, configs and shared memory as the `ptmp` command. Every call that
//! can block (receiving, sending into a full queue, running agents) releases
//! the GIL and waits in slices of at most 100 ms, checking for signals
//! between slices, so Ctrl-C raises `KeyboardInterrupt` promptly. Errors
//! raise `ptmp.PtmpError` subclasses carrying the Rust message (which names
//! the key and value of a bad config).
//!
//! Shared memory: `ShmReader.view()` returns a `ShmView` exporting the slot
//! itself through the buffer protocol (`memoryview(v)`, `numpy.frombuffer`),
//! no copy. While a view is held its reader cannot read further (it raises),
//! which is what keeps the slot reserved and the borrow sound; `v.valid()`
//! says whether the writer has overwritten the slot meanwhile (the same
//! seqlock check as Rust's `View::valid`).

mod peers;

use ptmp::{Frames, Receiver, Sender, TPSet, TrigPrim};
use ptmp_data::dump::{DumpReader, DumpWriter};
use ptmp_shm::{
    ChannelConfig, OwnedView, Policy, Reader, StartAt, View, Writer, DEFAULT_BLOCK_TIMEOUT,
};
use pyo3::buffer::PyBuffer;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

create_exception!(_ptmp, PtmpError, PyException, "Any ptmp failure.");
create_exception!(_ptmp, ConfigError, PtmpError, "An invalid configuration.");
create_exception!(
    _ptmp,
    WireError,
    PtmpError,
    "A message that is not a PTMP message."
);
create_exception!(
    _ptmp,
    ShmError,
    PtmpError,
    "A shared-memory channel failure."
);

fn perr(e: ptmp::Error) -> PyErr {
    match e {
        ptmp::Error::Config { .. } => ConfigError::new_err(e.to_string()),
        ptmp::Error::Wire(_) => WireError::new_err(e.to_string()),
        _ => PtmpError::new_err(e.to_string()),
    }
}

fn aerr(e: ptmp_agents::Error) -> PyErr {
    match e {
        ptmp_agents::Error::Config { .. } | ptmp_agents::Error::Jsonnet { .. } => {
            ConfigError::new_err(e.to_string())
        }
        _ => PtmpError::new_err(e.to_string()),
    }
}

/// A blocking call's outcome: a signal interrupting the wait is "nothing
/// yet", so `blocking` runs the signal handlers (raising KeyboardInterrupt
/// for Ctrl-C) instead of reporting an error.
fn intr(r: ptmp::Result<bool>) -> PyResult<bool> {
    match r {
        Err(ptmp::Error::Interrupted) => Ok(false),
        r => r.map_err(perr),
    }
}

fn serr(e: ptmp_shm::ShmError) -> PyErr {
    ShmError::new_err(e.to_string())
}

/// A config given as a JSON text or as a dict (or anything json.dumps takes).
fn config_text(cfg: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(s) = cfg.extract::<String>() {
        return Ok(s);
    }
    let py = cfg.py();
    let json = py.import("json")?;
    match json.call_method1("dumps", (cfg,)) {
        Ok(t) => t.extract(),
        // Python's own recursion limit stopped json.dumps: far deeper than
        // a configuration may nest.
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyRecursionError>(py) => {
            Err(ConfigError::new_err(format!(
                "(config): nested deeper than {} levels, the limit for configurations",
                ptmp::config::MAX_DEPTH
            )))
        }
        Err(e) => Err(e),
    }
}

/// Jsonnet top-level arguments, external variables and library paths, as
/// the keywords `tla_str`, `tla_code`, `ext_str` and `jpath` of `run`,
/// `graph_check` and `run_graph` give them (the CLI's `--tla-str`,
/// `--tla-code`, `-V` and `-J`).
#[derive(Default)]
struct JsonnetArgs {
    tla_str: Vec<(String, String)>,
    tla_code: Vec<(String, String)>,
    ext_str: Vec<(String, String)>,
    jpath: Vec<std::path::PathBuf>,
}

impl JsonnetArgs {
    fn new(
        tla_str: Option<&Bound<'_, PyDict>>,
        tla_code: Option<&Bound<'_, PyDict>>,
        ext_str: Option<&Bound<'_, PyDict>>,
        jpath: Option<Vec<std::path::PathBuf>>,
    ) -> PyResult<Self> {
        fn pairs(d: Option<&Bound<'_, PyDict>>, what: &str) -> PyResult<Vec<(String, String)>> {
            let Some(d) = d else { return Ok(Vec::new()) };
            d.iter()
                .map(|(k, v)| {
                    let key: String = k.extract().map_err(|_| {
                        PyValueError::new_err(format!("{what}: key {k:?} is not a str"))
                    })?;
                    if key.is_empty() {
                        return Err(PyValueError::new_err(format!("{what}: empty name")));
                    }
                    let val: String = v.extract().map_err(|_| {
                        PyValueError::new_err(format!(
                            "{what}[{key:?}] = {v}: give a str (Jsonnet code as text for tla_code)"
                        ))
                    })?;
                    Ok((key, val))
                })
                .collect()
        }
        Ok(JsonnetArgs {
            tla_str: pairs(tla_str, "tla_str")?,
            tla_code: pairs(tla_code, "tla_code")?,
            ext_str: pairs(ext_str, "ext_str")?,
            jpath: jpath.unwrap_or_default(),
        })
    }

    fn is_empty(&self) -> bool {
        self.tla_str.is_empty()
            && self.tla_code.is_empty()
            && self.ext_str.is_empty()
            && self.jpath.is_empty()
    }

    /// Refuse the arguments for a configuration given as a dict or JSON
    /// text, which has no Jsonnet to apply them to.
    fn only_for_files(&self) -> PyResult<()> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(PyValueError::new_err(
                "tla_str, tla_code, ext_str and jpath apply to a Jsonnet file; \
                 this configuration is a dict or JSON text",
            ))
        }
    }
}

/// A time limit in seconds: more than 0; infinity, or more than a century,
/// is no limit (None), as None is.
fn time_limit(t: Option<f64>, what: &str) -> PyResult<Option<Duration>> {
    match t {
        None => Ok(None),
        Some(t) if t.is_nan() || t <= 0.0 => Err(PyValueError::new_err(format!(
            "{what} {t}: must be more than 0 (None: no limit)"
        ))),
        Some(t) if t > 100.0 * 365.0 * 86400.0 => Ok(None),
        Some(t) => Ok(Some(Duration::from_secs_f64(t))),
    }
}

/// Load a JSON/Jsonnet file with the GIL released, stopping a Jsonnet
/// evaluation on Ctrl-C (which then raises) or after `timeout` seconds
/// (ConfigError). The evaluation thread is told to stop too (see
/// `ptmp_agents::jsonnet`), so it does not compute on in the background.
fn load_file(
    py: Python<'_>,
    p: &std::path::Path,
    timeout: Option<f64>,
    args: JsonnetArgs,
) -> PyResult<serde_json::Value> {
    let opts = ptmp_agents::jsonnet::Options {
        timeout: time_limit(timeout, "config_timeout")?,
        ext_str: args.ext_str,
        jpath: args.jpath,
        tla_str: args.tla_str,
        tla_code: args.tla_code,
        ext_code: Vec::new(),
    };
    let signal: std::sync::Mutex<Option<PyErr>> = std::sync::Mutex::new(None);
    let r = py.detach(|| {
        ptmp_agents::jsonnet::load_until(p, &opts, &|| {
            Python::attach(|py| match py.check_signals() {
                Ok(()) => false,
                Err(e) => {
                    *signal.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                    true
                }
            })
        })
    });
    if let Some(e) = signal.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    r.map_err(aerr)
}

/// Parse a configuration given as JSON text (or a dict made JSON).
fn parse_config(text: &str) -> PyResult<serde_json::Value> {
    ptmp_agents::jsonnet::parse_json(text)
        .map_err(|e| ConfigError::new_err(format!("(config): {e}")))
}

/// Wait in slices of at most 100 ms with the GIL released, checking for
/// signals between slices. `f(slice)` returns `Some` when done.
fn blocking<T, F>(py: Python<'_>, timeout: Option<f64>, mut f: F) -> PyResult<Option<T>>
where
    T: Send,
    F: FnMut(Duration) -> PyResult<Option<T>> + Send,
{
    // None, infinity or a time too far to represent: wait for ever. NaN is refused (it is no amount of time).
    let deadline = match timeout {
        Some(t) if t.is_nan() => {
            return Err(PyValueError::new_err(
                "timeout nan: give seconds, or None to wait for ever",
            ))
        }
        // A negative time is a deadline already passed (callers compute
        // `deadline - now`): look once, do not wait.
        Some(t) if t < 0.0 => Some(Instant::now()),
        Some(t) => Duration::try_from_secs_f64(t)
            .ok()
            .and_then(|d| Instant::now().checked_add(d)),
        None => None,
    };
    loop {
        let slice = match deadline {
            Some(d) => d
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100)),
            None => Duration::from_millis(100),
        };
        if let Some(v) = py.detach(|| f(slice))? {
            return Ok(Some(v));
        }
        py.check_signals()?;
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(None);
        }
    }
}

// ---------------------------------------------------------------- schema

/// One trigger primitive (ptmp.data.TrigPrim).
#[pyclass(module = "ptmp._ptmp", name = "TrigPrim", eq)]
#[derive(Clone, PartialEq)]
pub struct PyTrigPrim {
    inner: TrigPrim,
}

#[pymethods]
impl PyTrigPrim {
    #[new]
    #[pyo3(signature = (channel=0, tstart=0, tspan=0, adcsum=0, adcpeak=0, flags=0))]
    fn new(channel: u32, tstart: u64, tspan: u32, adcsum: u32, adcpeak: u32, flags: u32) -> Self {
        PyTrigPrim {
            inner: TrigPrim {
                channel,
                tstart,
                tspan: Some(tspan),
                adcsum: Some(adcsum),
                adcpeak: Some(adcpeak),
                flags: Some(flags),
            },
        }
    }
    #[getter]
    fn channel(&self) -> u32 {
        self.inner.channel
    }
    #[setter]
    fn set_channel(&mut self, v: u32) {
        self.inner.channel = v
    }
    #[getter]
    fn tstart(&self) -> u64 {
        self.inner.tstart
    }
    #[setter]
    fn set_tstart(&mut self, v: u64) {
        self.inner.tstart = v
    }
    #[getter]
    fn tspan(&self) -> u32 {
        self.inner.tspan()
    }
    #[setter]
    fn set_tspan(&mut self, v: u32) {
        self.inner.tspan = Some(v)
    }
    #[getter]
    fn adcsum(&self) -> u32 {
        self.inner.adcsum()
    }
    #[setter]
    fn set_adcsum(&mut self, v: u32) {
        self.inner.adcsum = Some(v)
    }
    #[getter]
    fn adcpeak(&self) -> u32 {
        self.inner.adcpeak()
    }
    #[setter]
    fn set_adcpeak(&mut self, v: u32) {
        self.inner.adcpeak = Some(v)
    }
    #[getter]
    fn flags(&self) -> u32 {
        self.inner.flags()
    }
    #[setter]
    fn set_flags(&mut self, v: u32) {
        self.inner.flags = Some(v)
    }

    /// The fields as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        tp_dict(py, &self.inner)
    }

    /// Build from a dict with the field names as keys (missing ones are 0).
    #[staticmethod]
    fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<Self> {
        Ok(PyTrigPrim {
            inner: tp_from_dict(d)?,
        })
    }

    fn __repr__(&self) -> String {
        let t = &self.inner;
        format!(
            "TrigPrim(channel={}, tstart={}, tspan={}, adcsum={}, adcpeak={}, flags={})",
            t.channel,
            t.tstart,
            t.tspan(),
            t.adcsum(),
            t.adcpeak(),
            t.flags()
        )
    }
}

fn tp_dict<'py>(py: Python<'py>, t: &TrigPrim) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("channel", t.channel)?;
    d.set_item("tstart", t.tstart)?;
    d.set_item("tspan", t.tspan())?;
    d.set_item("adcsum", t.adcsum())?;
    d.set_item("adcpeak", t.adcpeak())?;
    d.set_item("flags", t.flags())?;
    Ok(d)
}

fn get<'py, T: FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, k: &str) -> PyResult<Option<T>> {
    match d.get_item(k)? {
        None => Ok(None),
        Some(v) => v.extract::<T>().map(Some).map_err(|e| {
            let e: PyErr = e.into();
            PyValueError::new_err(format!("{k}: {e}"))
        }),
    }
}

use pyo3::conversion::FromPyObjectOwned;

fn tp_from_dict(d: &Bound<'_, PyDict>) -> PyResult<TrigPrim> {
    for k in d.keys() {
        let k: String = k.extract()?;
        if !["channel", "tstart", "tspan", "adcsum", "adcpeak", "flags"].contains(&k.as_str()) {
            return Err(PyValueError::new_err(format!(
                "TrigPrim has no field {k:?}"
            )));
        }
    }
    Ok(TrigPrim {
        channel: get(d, "channel")?.unwrap_or(0),
        tstart: get(d, "tstart")?.unwrap_or(0),
        tspan: Some(get(d, "tspan")?.unwrap_or(0)),
        adcsum: Some(get(d, "adcsum")?.unwrap_or(0)),
        adcpeak: Some(get(d, "adcpeak")?.unwrap_or(0)),
        flags: Some(get(d, "flags")?.unwrap_or(0)),
    })
}

/// A set of trigger primitives (ptmp.data.TPSet).
#[pyclass(module = "ptmp._ptmp", name = "TPSet", eq)]
#[derive(Clone, PartialEq, Default)]
pub struct PyTPSet {
    inner: TPSet,
}

#[pymethods]
impl PyTPSet {
    #[new]
    #[pyo3(signature = (count=0, detid=0, created=0, tstart=0, tspan=0, chanbeg=0, chanend=0, totaladc=0, tps=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        count: u32,
        detid: u32,
        created: i64,
        tstart: u64,
        tspan: u32,
        chanbeg: u32,
        chanend: u32,
        totaladc: u32,
        tps: Option<Vec<PyRef<'_, PyTrigPrim>>>,
    ) -> Self {
        PyTPSet {
            inner: TPSet {
                count,
                detid,
                created,
                tstart,
                tspan: Some(tspan),
                chanbeg: Some(chanbeg),
                chanend: Some(chanend),
                totaladc: Some(totaladc),
                tps: tps.unwrap_or_default().iter().map(|t| t.inner).collect(),
            },
        }
    }
    #[getter]
    fn count(&self) -> u32 {
        self.inner.count
    }
    #[setter]
    fn set_count(&mut self, v: u32) {
        self.inner.count = v
    }
    #[getter]
    fn detid(&self) -> u32 {
        self.inner.detid
    }
    #[setter]
    fn set_detid(&mut self, v: u32) {
        self.inner.detid = v
    }
    #[getter]
    fn created(&self) -> i64 {
        self.inner.created
    }
    #[setter]
    fn set_created(&mut self, v: i64) {
        self.inner.created = v
    }
    #[getter]
    fn tstart(&self) -> u64 {
        self.inner.tstart
    }
    #[setter]
    fn set_tstart(&mut self, v: u64) {
        self.inner.tstart = v
    }
    #[getter]
    fn tspan(&self) -> u32 {
        self.inner.tspan()
    }
    #[setter]
    fn set_tspan(&mut self, v: u32) {
        self.inner.tspan = Some(v)
    }
    #[getter]
    fn chanbeg(&self) -> u32 {
        self.inner.chanbeg()
    }
    #[setter]
    fn set_chanbeg(&mut self, v: u32) {
        self.inner.chanbeg = Some(v)
    }
    #[getter]
    fn chanend(&self) -> u32 {
        self.inner.chanend()
    }
    #[setter]
    fn set_chanend(&mut self, v: u32) {
        self.inner.chanend = Some(v)
    }
    #[getter]
    fn totaladc(&self) -> u32 {
        self.inner.totaladc()
    }
    #[setter]
    fn set_totaladc(&mut self, v: u32) {
        self.inner.totaladc = Some(v)
    }
    /// The trigger primitives (a new list of copies; assign a list to set).
    #[getter]
    fn tps(&self) -> Vec<PyTrigPrim> {
        self.inner
            .tps
            .iter()
            .map(|t| PyTrigPrim { inner: *t })
            .collect()
    }
    #[setter]
    fn set_tps(&mut self, v: Vec<PyRef<'_, PyTrigPrim>>) {
        self.inner.tps = v.iter().map(|t| t.inner).collect();
    }

    fn __len__(&self) -> usize {
        self.inner.tps.len()
    }

    /// The fields as a dict, `tps` as a list of dicts.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = &self.inner;
        let d = PyDict::new(py);
        d.set_item("count", s.count)?;
        d.set_item("detid", s.detid)?;
        d.set_item("created", s.created)?;
        d.set_item("tstart", s.tstart)?;
        d.set_item("tspan", s.tspan())?;
        d.set_item("chanbeg", s.chanbeg())?;
        d.set_item("chanend", s.chanend())?;
        d.set_item("totaladc", s.totaladc())?;
        let tps = PyList::empty(py);
        for t in &s.tps {
            tps.append(tp_dict(py, t)?)?;
        }
        d.set_item("tps", tps)?;
        Ok(d)
    }

    /// Build from a dict as `to_dict` makes (missing fields are 0).
    #[staticmethod]
    fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<Self> {
        const KEYS: &[&str] = &[
            "count", "detid", "created", "tstart", "tspan", "chanbeg", "chanend", "totaladc", "tps",
        ];
        for k in d.keys() {
            let k: String = k.extract()?;
            if !KEYS.contains(&k.as_str()) {
                return Err(PyValueError::new_err(format!("TPSet has no field {k:?}")));
            }
        }
        let mut tps = Vec::new();
        if let Some(list) = d.get_item("tps")? {
            for item in list.try_iter()? {
                let item = item?;
                let td = item
                    .cast::<PyDict>()
                    .map_err(|_| PyValueError::new_err("tps: each entry must be a dict"))?;
                tps.push(tp_from_dict(td)?);
            }
        }
        Ok(PyTPSet {
            inner: TPSet {
                count: get(d, "count")?.unwrap_or(0),
                detid: get(d, "detid")?.unwrap_or(0),
                created: get(d, "created")?.unwrap_or(0),
                tstart: get(d, "tstart")?.unwrap_or(0),
                tspan: Some(get(d, "tspan")?.unwrap_or(0)),
                chanbeg: Some(get(d, "chanbeg")?.unwrap_or(0)),
                chanend: Some(get(d, "chanend")?.unwrap_or(0)),
                totaladc: Some(get(d, "totaladc")?.unwrap_or(0)),
                tps,
            },
        })
    }

    /// The serialized protobuf (the payload frame of a PTMP message).
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let mut buf = Vec::new();
        ptmp_data::encode_tpset(&self.inner, &mut buf);
        PyBytes::new(py, &buf)
    }

    /// Parse a serialized TPSet; raises WireError naming what is wrong.
    #[staticmethod]
    fn from_bytes(b: &[u8]) -> PyResult<Self> {
        ptmp_data::decode_tpset(b)
            .map(|inner| PyTPSet { inner })
            .map_err(|e| WireError::new_err(e.to_string()))
    }

    fn __repr__(&self) -> String {
        let s = &self.inner;
        format!(
            "TPSet(count={}, detid={}, created={}, tstart={}, tspan={}, chanbeg={}, chanend={}, totaladc={}, ntps={})",
            s.count,
            s.detid,
            s.created,
            s.tstart,
            s.tspan(),
            s.chanbeg(),
            s.chanend(),
            s.totaladc(),
            s.tps.len()
        )
    }
}

// ---------------------------------------------------------------- sockets

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
fn slices(py: Python<'_>, m: &Mutex<Option<Sender>>) {
    py.detach(|| {
        let _ = with(m, "sender", |tx| {
            tx.wait_in_slices();
            Ok(())
        });
    });
}

/// Run `f` on the locked socket (the lock is taken inside the GIL-free
/// closure, so a thread blocked in a send never holds the GIL).
fn with<S, T>(
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
    /// `config`: `{"socket": {...}}` as a JSON text or a dict.
    #[new]
    fn new(config: &Bound<'_, PyAny>) -> PyResult<Self> {
        let text = config_text(config)?;
        // A name connected to may be waited for: not while holding the GIL.
        let tx = config
            .py()
            .detach(|| peers::resolved(&text).and_then(Sender::new))
            .map_err(perr)?;
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
                    peers::follow_tx(tx)?;
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
                        peers::follow_tx(tx)?;
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
                    peers::follow_tx(tx)?;
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
    /// "at_most" or "unknown"}` (unknown for PUB and inproc://, which do
    /// not track delivery). A closed sender reports nothing sent.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = &self.tx;
        let d = py.detach(|| {
            let tx = m.lock().unwrap_or_else(|p| p.into_inner()).take();
            tx.map(Sender::finish)
        });
        let (sent, und) = d.map_or((0, ptmp::Undelivered::None), |d| (d.sent, d.undelivered));
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
        let text = config_text(config)?;
        // A name connected to may be waited for: not while holding the GIL.
        let rx = config
            .py()
            .detach(|| peers::resolved(&text).and_then(Receiver::new))
            .map_err(perr)?;
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
                    || peers::followed(rx, |old| {
                        old.recv_into(&mut set, Some(Duration::ZERO))
                            .unwrap_or(false)
                    })?;
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
                    || peers::followed(rx, |old| {
                        old.recv_into(&mut set, Some(Duration::ZERO))
                            .unwrap_or(false)
                    })?)
                {
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
                    || peers::followed(rx, |old| {
                        old.recv_raw_into(&mut f, Some(Duration::ZERO))
                            .unwrap_or(false)
                    })?;
                Ok(got.then_some(()))
            })
        })?;
        Ok(got.map(|()| f.iter().map(|b| PyBytes::new(py, b)).collect()))
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

// ---------------------------------------------------------------- dump files

/// Read a czmqat dump file: a list of messages, each a list of frames.
#[pyfunction]
fn read_dump<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
) -> PyResult<Vec<Vec<Bound<'py, PyBytes>>>> {
    let f =
        File::open(&path).map_err(|e| PtmpError::new_err(format!("{}: {e}", path.display())))?;
    let mut r = DumpReader::new(BufReader::new(f));
    let mut frames = Frames::new();
    let mut out = Vec::new();
    while r
        .read_into(&mut frames)
        .map_err(|e| WireError::new_err(format!("{}: {e}", path.display())))?
    {
        out.push(frames.iter().map(|b| PyBytes::new(py, b)).collect());
    }
    Ok(out)
}

/// Read a dump file of PTMP messages as TPSets.
#[pyfunction]
fn read_tpsets(path: std::path::PathBuf) -> PyResult<Vec<PyTPSet>> {
    let f =
        File::open(&path).map_err(|e| PtmpError::new_err(format!("{}: {e}", path.display())))?;
    let mut r = DumpReader::new(BufReader::new(f));
    let mut frames = Frames::new();
    let mut out = Vec::new();
    while r
        .read_into(&mut frames)
        .map_err(|e| WireError::new_err(format!("{}: {e}", path.display())))?
    {
        let rec = out.len();
        let bad =
            |why: String| WireError::new_err(format!("{}: record {rec}: {why}", path.display()));
        if frames.len() != 2 {
            return Err(bad(format!(
                "{} frames, a PTMP message has 2",
                frames.len()
            )));
        }
        ptmp_data::wire::check_version(frames.get(0).unwrap_or(&[]))
            .map_err(|e| bad(e.to_string()))?;
        let s = ptmp_data::decode_tpset(frames.get(1).unwrap_or(&[]))
            .map_err(|e| bad(e.to_string()))?;
        out.push(PyTPSet { inner: s });
    }
    Ok(out)
}

/// Writes a czmqat dump file.
#[pyclass(module = "ptmp._ptmp", name = "DumpWriter")]
pub struct PyDumpWriter {
    w: Option<DumpWriter<BufWriter<File>>>,
}

#[pymethods]
impl PyDumpWriter {
    #[new]
    fn new(path: std::path::PathBuf) -> PyResult<Self> {
        let f = File::create(&path)
            .map_err(|e| PtmpError::new_err(format!("{}: {e}", path.display())))?;
        Ok(PyDumpWriter {
            w: Some(DumpWriter::new(BufWriter::new(f))),
        })
    }

    /// Append one message given as its frames.
    fn write(&mut self, frames: Vec<Vec<u8>>) -> PyResult<()> {
        let w = self
            .w
            .as_mut()
            .ok_or_else(|| PtmpError::new_err("closed"))?;
        w.write(frames.iter())
            .map_err(|e| PtmpError::new_err(e.to_string()))
    }

    /// Append one TPSet as a PTMP message.
    fn write_tpset(&mut self, tpset: PyRef<'_, PyTPSet>) -> PyResult<()> {
        let w = self
            .w
            .as_mut()
            .ok_or_else(|| PtmpError::new_err("closed"))?;
        let mut buf = Vec::new();
        ptmp_data::encode_tpset(&tpset.inner, &mut buf);
        w.write([&ptmp_data::VERSION_FRAME[..], &buf[..]])
            .map_err(|e| PtmpError::new_err(e.to_string()))
    }

    fn close(&mut self) -> PyResult<()> {
        if let Some(mut w) = self.w.take() {
            w.flush().map_err(|e| PtmpError::new_err(e.to_string()))?;
        }
        Ok(())
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(
        &mut self,
        _t: Option<Bound<'_, PyAny>>,
        _v: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.close()
    }
}

// ---------------------------------------------------------------- shm

fn policy(p: &str) -> PyResult<Policy> {
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
fn byte_buffer(data: &Bound<'_, PyAny>) -> PyResult<PyBuffer<u8>> {
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

fn start_at(s: &str) -> PyResult<StartAt> {
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
struct SendView(OwnedView);

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
fn channel_dict<'py>(py: Python<'py>, c: &ptmp_shm::ChannelInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &c.name)?;
    d.set_item("path", c.path.to_string_lossy())?;
    d.set_item("bytes", c.bytes)?;
    match &c.state {
        Ok(s) => {
            d.set_item("slots", s.config.slots)?;
            d.set_item("max_message", s.config.max_message)?;
            d.set_item(
                "policy",
                match s.config.policy {
                    Policy::Overwrite => "overwrite",
                    Policy::Block => "block",
                },
            )?;
            d.set_item("published", s.published)?;
            d.set_item("writer_pid", s.writer_pid)?;
            d.set_item("writer_alive", s.writer_alive)?;
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
fn shm_list(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let chans = py.detach(ptmp_shm::list).map_err(serr)?;
    chans.iter().map(|c| channel_dict(py, c)).collect()
}

/// Remove channel `name`, or with `stale=True` every channel whose writer
/// is gone and every unreadable segment (not links nor other users'
/// segments: name those), as `ptmp shm rm` does. Returns the names removed.
/// Processes attached keep their mapping; new ones no longer find it.
#[pyfunction]
#[pyo3(signature = (name=None, *, stale=false))]
fn shm_remove(py: Python<'_>, name: Option<String>, stale: bool) -> PyResult<Vec<String>> {
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

// ---------------------------------------------------------------- agents

/// Run `f` on a thread of its own while this one, GIL released, checks for
/// signals every 20 ms: on Ctrl-C the stop flag given to `f` is raised, `f`
/// is waited for (it stops cleanly), and the KeyboardInterrupt is raised.
fn interruptible<T: Send + 'static>(
    py: Python<'_>,
    what: &str,
    f: impl FnOnce(Arc<AtomicBool>) -> T + Send + 'static,
) -> PyResult<T> {
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let h = std::thread::spawn(move || f(s2));
    let mut interrupted = None;
    while !h.is_finished() {
        py.detach(|| std::thread::sleep(Duration::from_millis(20)));
        if let Err(e) = py.check_signals() {
            stop.store(true, Ordering::Relaxed);
            interrupted = Some(e);
        }
    }
    let out = h
        .join()
        .map_err(|_| PtmpError::new_err(format!("{what} panicked")))?;
    match interrupted {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Run a ptmper configuration (a path to JSON/Jsonnet, or a dict) until its
/// ttl (or `ttl` given here), until every agent ends, or Ctrl-C; returns
/// each agent's final counters as dicts.
#[pyfunction]
#[pyo3(signature = (config, ttl=None, config_timeout=None, *, tla_str=None, tla_code=None, ext_str=None, jpath=None))]
#[allow(clippy::too_many_arguments)]
fn run<'py>(
    py: Python<'py>,
    config: &Bound<'py, PyAny>,
    ttl: Option<f64>,
    config_timeout: Option<f64>,
    tla_str: Option<&Bound<'py, PyDict>>,
    tla_code: Option<&Bound<'py, PyDict>>,
    ext_str: Option<&Bound<'py, PyDict>>,
    jpath: Option<Vec<std::path::PathBuf>>,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let args = JsonnetArgs::new(tla_str, tla_code, ext_str, jpath)?;
    let mut v: serde_json::Value = if let Ok(p) = config.extract::<std::path::PathBuf>() {
        if config.is_instance_of::<pyo3::types::PyString>() || p.exists() {
            load_file(py, &p, config_timeout, args)?
        } else {
            return Err(ConfigError::new_err(format!(
                "{}: no such file",
                p.display()
            )));
        }
    } else {
        args.only_for_files()?;
        let text = config_text(config)?;
        parse_config(&text)?
    };
    if let (Some(t), Some(o)) = (ttl, v.as_object_mut()) {
        if t.is_nan() {
            return Err(PyValueError::new_err(
                "ttl nan: give seconds, or None for the config's own",
            ));
        }
        // Infinity: run until stopped, which ptmper spells as a negative ttl.
        let t = if t.is_infinite() && t > 0.0 { -1.0 } else { t };
        o.insert("ttl".into(), serde_json::json!(t));
    }
    let rc = ptmp_agents::ptmper::RunConfig::parse(&v).map_err(aerr)?;
    let out = interruptible(py, "the runner", move |stop| {
        let mut log = std::io::sink();
        ptmp_agents::ptmper::run(&rc, &|| stop.load(Ordering::Relaxed), &mut log)
    })?
    .map_err(aerr)?;
    if let Some(f) = out.failures.first() {
        return Err(PtmpError::new_err(f.to_string()));
    }
    out.reports
        .iter()
        .map(|r| {
            let d = PyDict::new(py);
            d.set_item("name", &r.name)?;
            d.set_item("kind", r.kind)?;
            for (k, v) in &r.counters {
                d.set_item(k, v)?;
            }
            Ok(d)
        })
        .collect()
}

// ---------------------------------------------------------------- graphs

/// A graph from a path (JSON/Jsonnet) or a dict, validated and wired.
fn load_graph(
    config: &Bound<'_, PyAny>,
    run_dir: Option<std::path::PathBuf>,
    config_timeout: Option<f64>,
    args: JsonnetArgs,
) -> PyResult<(ptmp_graph::Graph, ptmp_graph::plan::Plan)> {
    let (v, stem) = if let Ok(p) = config.extract::<std::path::PathBuf>() {
        if !p.exists() {
            return Err(ConfigError::new_err(format!(
                "{}: no such file",
                p.display()
            )));
        }
        let v = load_file(config.py(), &p, config_timeout, args)?;
        let stem = ptmp_graph::name_from_path(&p);
        (v, stem)
    } else {
        args.only_for_files()?;
        let text = config_text(config)?;
        (parse_config(&text)?, "graph".to_string())
    };
    ptmp_graph::load(&v, &stem, run_dir.as_deref()).map_err(|e| ConfigError::new_err(e.to_string()))
}

/// Validate a graph (a path to JSON/Jsonnet, or a dict) and describe its
/// processes, transports and addresses, as `ptmp graph check` does.
#[pyfunction]
#[pyo3(signature = (config, run_dir=None, config_timeout=None, *, tla_str=None, tla_code=None, ext_str=None, jpath=None))]
fn graph_check(
    config: &Bound<'_, PyAny>,
    run_dir: Option<std::path::PathBuf>,
    config_timeout: Option<f64>,
    tla_str: Option<&Bound<'_, PyDict>>,
    tla_code: Option<&Bound<'_, PyDict>>,
    ext_str: Option<&Bound<'_, PyDict>>,
    jpath: Option<Vec<std::path::PathBuf>>,
) -> PyResult<String> {
    let args = JsonnetArgs::new(tla_str, tla_code, ext_str, jpath)?;
    let (g, p) = load_graph(config, run_dir, config_timeout, args)?;
    Ok(ptmp_graph::plan::describe(&g, &p))
}

/// Run this host's processes of a graph and supervise them, as `ptmp graph
/// run` does, each process a `python -m ptmp._part` child. Returns when the
/// graph finishes (every process that ends by itself has), after `ttl`
/// seconds, or on Ctrl-C (which stops the parts cleanly, then raises):
/// `{"reason", "ok", "restarts": {process: n}, "processes": [final status
/// of each process, with its nodes' counts and reports]}`.
#[pyfunction]
#[pyo3(signature = (config, host=None, ttl=None, run_dir=None, config_timeout=None, *, tla_str=None, tla_code=None, ext_str=None, jpath=None))]
#[allow(clippy::too_many_arguments)]
fn run_graph<'py>(
    py: Python<'py>,
    config: &Bound<'py, PyAny>,
    host: Option<String>,
    ttl: Option<f64>,
    run_dir: Option<std::path::PathBuf>,
    config_timeout: Option<f64>,
    tla_str: Option<&Bound<'py, PyDict>>,
    tla_code: Option<&Bound<'py, PyDict>>,
    ext_str: Option<&Bound<'py, PyDict>>,
    jpath: Option<Vec<std::path::PathBuf>>,
) -> PyResult<Bound<'py, PyAny>> {
    let args = JsonnetArgs::new(tla_str, tla_code, ext_str, jpath)?;
    let (g, p) = load_graph(config, run_dir, config_timeout, args)?;
    let exe: std::path::PathBuf = py.import("sys")?.getattr("executable")?.extract()?;
    let opts = ptmp_graph::supervise::Options {
        part_command: vec![exe.into(), "-m".into(), "ptmp._part".into()],
        host,
        ttl: time_limit(ttl, "ttl")?,
        ..Default::default()
    };
    let run_dir = p.run_dir.clone();
    let out = interruptible(py, "the supervisor", move |stop| {
        let mut log = std::io::stderr();
        ptmp_graph::supervise::run(
            &g,
            &p,
            &opts,
            &|| stop.load(Ordering::Relaxed),
            &|| false,
            &mut log,
        )
    })?
    .map_err(|e| PtmpError::new_err(e.to_string()))?;
    let restarts: serde_json::Map<String, serde_json::Value> = out
        .restarts
        .iter()
        .map(|(k, n)| (k.clone(), serde_json::json!(n)))
        .collect();
    let v = serde_json::json!({
        "reason": out.reason,
        "ok": out.ok,
        "restarts": restarts,
        "processes": ptmp_graph::status::read_all(&run_dir),
    });
    py.import("json")?.call_method1("loads", (v.to_string(),))
}

/// One process of a graph (used by `python -m ptmp._part PLAN`): runs its
/// nodes until SIGINT/SIGTERM or until they end; returns the exit status.
#[pyfunction]
fn _graph_part(py: Python<'_>, plan: std::path::PathBuf) -> PyResult<i32> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let pp = ptmp_graph::part::PartPlan::read(&plan).map_err(ConfigError::new_err)?;
    // This process exists to run the part: its stop signals are ours.
    // Python's own SIGINT handler is put back to the default first, so the
    // handler registered next does not pass the signal on to it (which
    // would raise KeyboardInterrupt once the part has ended).
    let signal = py.import("signal")?;
    signal.call_method1("signal", (SIGINT, signal.getattr("SIG_DFL")?))?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())
            .map_err(|e| PtmpError::new_err(format!("cannot handle signal {sig}: {e}")))?;
    }
    Ok(py.detach(|| {
        let mut log = std::io::stderr();
        ptmp_graph::part::run(&pp, &|| stop.load(Ordering::Relaxed), &mut log)
    }))
}

/// Microseconds since the Unix epoch (as TPSet.created holds).
#[pyfunction]
fn now_us() -> i64 {
    ptmp_data::now_us()
}

#[pymodule]
fn _ptmp(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("PtmpError", py.get_type::<PtmpError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("WireError", py.get_type::<WireError>())?;
    m.add("ShmError", py.get_type::<ShmError>())?;
    m.add_class::<PyTrigPrim>()?;
    m.add_class::<PyTPSet>()?;
    m.add_class::<PySender>()?;
    m.add_class::<PyReceiver>()?;
    m.add_class::<PyDumpWriter>()?;
    m.add_class::<PyShmWriter>()?;
    m.add_class::<PyShmReader>()?;
    m.add_class::<PyShmView>()?;
    m.add_class::<peers::PyPeers>()?;
    m.add_function(wrap_pyfunction!(peers::use_discovery, m)?)?;
    m.add_function(wrap_pyfunction!(peers::announced_names, m)?)?;
    m.add_function(wrap_pyfunction!(peers::withdraw_names, m)?)?;
    m.add_function(wrap_pyfunction!(read_dump, m)?)?;
    m.add_function(wrap_pyfunction!(read_tpsets, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(graph_check, m)?)?;
    m.add_function(wrap_pyfunction!(run_graph, m)?)?;
    m.add_function(wrap_pyfunction!(_graph_part, m)?)?;
    m.add_function(wrap_pyfunction!(now_us, m)?)?;
    m.add_function(wrap_pyfunction!(shm_list, m)?)?;
    m.add_function(wrap_pyfunction!(shm_remove, m)?)?;
    m.add("VERSION_FRAME", PyBytes::new(py, &ptmp_data::VERSION_FRAME))?;
    Ok(())
}
