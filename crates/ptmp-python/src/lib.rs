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

mod agents;
mod dump;
mod graphs;
mod peers;
mod request;
mod schema;
mod shm;
mod sockets;

use agents::*;
use dump::*;
use graphs::*;
use schema::*;
use shm::*;
use sockets::*;

use ptmp::{Frames, Receiver, Sender, TPSet, TrigPrim};
use ptmp_shm::{
    ChannelConfig, OwnedView, Policy, Reader, StartAt, View, Writer, DEFAULT_BLOCK_TIMEOUT,
};
use pyo3::buffer::PyBuffer;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
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

pub(crate) fn perr(e: ptmp::Error) -> PyErr {
    match e {
        ptmp::Error::Config { .. } => ConfigError::new_err(e.to_string()),
        ptmp::Error::Wire(_) => WireError::new_err(e.to_string()),
        _ => PtmpError::new_err(e.to_string()),
    }
}

pub(crate) fn aerr(e: ptmp_agents::Error) -> PyErr {
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
pub(crate) fn intr(r: ptmp::Result<bool>) -> PyResult<bool> {
    match r {
        Err(ptmp::Error::Interrupted) => Ok(false),
        r => r.map_err(perr),
    }
}

pub(crate) fn serr(e: ptmp_shm::ShmError) -> PyErr {
    ShmError::new_err(e.to_string())
}

/// A config given as a JSON text or as a dict (or anything json.dumps takes).
pub(crate) fn config_text(cfg: &Bound<'_, PyAny>) -> PyResult<String> {
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
                ptmp::MAX_DEPTH
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
pub(crate) struct JsonnetArgs {
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
pub(crate) fn time_limit(t: Option<f64>, what: &str) -> PyResult<Option<Duration>> {
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
pub(crate) fn load_file(
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
pub(crate) fn parse_config(text: &str) -> PyResult<serde_json::Value> {
    ptmp_agents::jsonnet::parse_json(text)
        .map_err(|e| ConfigError::new_err(format!("(config): {e}")))
}

/// Wait in slices of at most 100 ms with the GIL released, checking for
/// signals between slices. `f(slice)` returns `Some` when done.
pub(crate) fn blocking<T, F>(py: Python<'_>, timeout: Option<f64>, mut f: F) -> PyResult<Option<T>>
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
    request::register(m)?;
    m.add_function(wrap_pyfunction!(peers::use_discovery, m)?)?;
    m.add_function(wrap_pyfunction!(peers::announced_names, m)?)?;
    m.add_function(wrap_pyfunction!(peers::withdraw_names, m)?)?;
    m.add_function(wrap_pyfunction!(read_dump, m)?)?;
    m.add_function(wrap_pyfunction!(read_tpsets, m)?)?;
    m.add_function(wrap_pyfunction!(read_rows, m)?)?;
    m.add_function(wrap_pyfunction!(dump::_table_format, m)?)?;
    m.add_function(wrap_pyfunction!(dump::_read_arrow_ipc, m)?)?;
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
