//! `ptmp.Peers`: presence on the local network from Python (DNS-SD over
//! multicast DNS): who is there, join and leave events as an iterator,
//! announcing ports, resolving a name.

use crate::{blocking, ConfigError, PtmpError};
use ptmp_discovery::{Announcement, Config, Discovery, Event, Peer, PortSpec, DEFAULT_GROUP};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::Duration;

/// A configuration's or a call's presence refused (ConfigError), or
/// presence that could not start (PtmpError).
pub(crate) fn presence_err(e: ptmp_discovery::process::PresenceError) -> PyErr {
    match e {
        ptmp_discovery::process::PresenceError::Settings(m) => ConfigError::new_err(m),
        ptmp_discovery::process::PresenceError::Start(m) => PtmpError::new_err(m),
    }
}

fn derr(e: ptmp_discovery::Error) -> PyErr {
    match e {
        ptmp_discovery::Error::Config(_) => ConfigError::new_err(e.to_string()),
        _ => PtmpError::new_err(e.to_string()),
    }
}

fn peer_dict<'py>(py: Python<'py>, p: &Peer) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", p.name())?;
    d.set_item("node", &p.node)?;
    d.set_item("port", &p.port)?;
    d.set_item("address", &p.address)?;
    d.set_item("endpoint", p.endpoint())?;
    d.set_item("transport", &p.transport)?;
    d.set_item("host", &p.host)?;
    d.set_item("pid", p.pid)?;
    d.set_item("start", p.start)?;
    d.set_item("uptime", p.uptime().as_secs_f64())?;
    d.set_item("group", &p.group)?;
    d.set_item("curve_key", p.curve_key.as_deref())?;
    Ok(d)
}

fn event_dict<'py>(py: Python<'py>, e: &Event) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match e {
        Event::Joined(p) => {
            d.set_item("event", "joined")?;
            d.set_item("peer", peer_dict(py, p)?)?;
        }
        Event::Left(p) => {
            d.set_item("event", "left")?;
            d.set_item("peer", peer_dict(py, p)?)?;
        }
        Event::Duplicate { kept, refused } => {
            d.set_item("event", "duplicate")?;
            d.set_item("peer", peer_dict(py, kept)?)?;
            d.set_item("refused", peer_dict(py, refused)?)?;
        }
    }
    Ok(d)
}

/// Presence on the local network. Iterating gives one dict per change:
/// `{"event": "joined" | "left" | "duplicate", "peer": {...}}` (a
/// duplicate also has "refused"), waiting for the next; `close()` ends it.
#[pyclass(module = "ptmp._ptmp", name = "Peers")]
pub struct PyPeers {
    d: Option<Discovery>,
    events: Mutex<mpsc::Receiver<Event>>,
    announcements: Vec<Announcement>,
}

impl PyPeers {
    fn disc(&self) -> PyResult<&Discovery> {
        self.d
            .as_ref()
            .ok_or_else(|| PtmpError::new_err("Peers is closed"))
    }
}

#[pymethods]
impl PyPeers {
    #[new]
    #[pyo3(signature = (group=DEFAULT_GROUP.to_string(), secret=None, liveness_timeout=2.0))]
    fn new(group: String, secret: Option<Vec<u8>>, liveness_timeout: f64) -> PyResult<Self> {
        let lt = Duration::try_from_secs_f64(liveness_timeout)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "liveness_timeout {liveness_timeout}: give seconds above zero"
                ))
            })?;
        let d = Discovery::start(Config {
            group,
            secret,
            liveness_timeout: lt,
            ..Config::default()
        })
        .map_err(derr)?;
        let events = Mutex::new(d.subscribe());
        Ok(PyPeers {
            d: Some(d),
            events,
            announcements: Vec::new(),
        })
    }

    /// The ports present now, one dict each.
    fn list<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.disc()?
            .peers()
            .iter()
            .map(|p| peer_dict(py, p))
            .collect()
    }

    /// Counts of announcements ignored, by reason.
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.disc()?.counters();
        let d = PyDict::new(py);
        d.set_item("malformed", c.malformed)?;
        d.set_item("forged", c.forged)?;
        d.set_item("oversized", c.oversized)?;
        d.set_item("other_group", c.other_group)?;
        d.set_item("duplicates", c.duplicates)?;
        d.set_item("table_full", c.table_full)?;
        Ok(d)
    }

    /// Announces `node`'s ports, a mapping of port name to address, until
    /// `close()`; a name already present raises PtmpError naming both
    /// locations.
    fn announce(
        &mut self,
        py: Python<'_>,
        node: String,
        ports: BTreeMap<String, String>,
    ) -> PyResult<()> {
        let specs: Vec<PortSpec> = ports
            .into_iter()
            .map(|(name, address)| PortSpec {
                name,
                address,
                curve_key: None,
            })
            .collect();
        let d = self.disc()?;
        let a = py.detach(|| d.announce(&node, &specs)).map_err(derr)?;
        self.announcements.push(a);
        Ok(())
    }

    /// The port `node`/`port` as a dict, waiting up to `timeout` seconds;
    /// PtmpError naming it if it did not appear.
    fn resolve<'py>(
        &self,
        py: Python<'py>,
        node: String,
        port: String,
        timeout: f64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let t = Duration::try_from_secs_f64(timeout)
            .map_err(|_| PyValueError::new_err(format!("timeout {timeout}: give seconds")))?;
        let d = self.disc()?;
        let p = py.detach(|| d.resolve(&node, &port, t)).map_err(derr)?;
        peer_dict(py, &p)
    }

    /// The next change, waiting up to `timeout` seconds (None: for ever);
    /// None when the time passes first.
    #[pyo3(signature = (timeout=None))]
    fn next_event<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<f64>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.disc()?;
        let events = &self.events;
        let got = blocking(py, timeout, |slice| {
            let rx = events.lock().unwrap_or_else(|p| p.into_inner());
            match rx.recv_timeout(slice) {
                Ok(e) => Ok(Some(e)),
                Err(mpsc::RecvTimeoutError::Timeout) => Ok(None),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    Err(PtmpError::new_err("presence stopped"))
                }
            }
        })?;
        got.map(|e| event_dict(py, &e)).transpose()
    }

    /// Withdraws our announcements (goodbye packets) and stops.
    fn close(&mut self) {
        self.announcements.clear();
        self.d = None;
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        if self.d.is_none() {
            return Ok(None);
        }
        self.next_event(py, None)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(&mut self, _a: &Bound<'_, PyAny>, _b: &Bound<'_, PyAny>, _c: &Bound<'_, PyAny>) {
        self.close();
    }
}

fn seconds(what: &str, v: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(v)
        .ok()
        .filter(|d| !d.is_zero() && *d <= Duration::from_secs(86_400))
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "{what} {v}: give seconds above zero, at most a day"
            ))
        })
}

/// Turns presence on for every socket this process makes from then on, so
/// that their configs may use names: `"connect": ["name://NODE/PORT"]`
/// waits up to `timeout` seconds for a peer announcing that port (and
/// fails naming the name), `"bind": ["name://NODE/PORT"]` binds a tcp port
/// the system picks and announces it. `group` keeps two experiments
/// apart; a shared secret (`secret` bytes, or the contents of
/// `secret_file`) signs ours and accepts only signed ones. Once per
/// process: a second call raises ConfigError.
#[pyfunction]
#[pyo3(signature = (group=DEFAULT_GROUP.to_string(), secret=None, secret_file=None,
                    timeout=30.0, liveness_timeout=2.0))]
pub fn use_discovery(
    group: String,
    secret: Option<Vec<u8>>,
    secret_file: Option<std::path::PathBuf>,
    timeout: f64,
    liveness_timeout: f64,
) -> PyResult<()> {
    let timeout = seconds("timeout", timeout)?;
    let liveness_timeout = seconds("liveness_timeout", liveness_timeout)?;
    if let Some(p) = ptmp_discovery::name_problem("group", &group) {
        return Err(PyValueError::new_err(p));
    }
    let secret = match (secret, secret_file) {
        (Some(_), Some(_)) => {
            return Err(PyValueError::new_err(
                "give the secret either as bytes (secret) or in a file (secret_file)",
            ))
        }
        (Some(s), None) if s.is_empty() => {
            return Err(PyValueError::new_err("secret: empty"));
        }
        (s @ Some(_), None) => s,
        (None, Some(f)) => {
            let s = ptmp::files::read_secret(&f, ptmp::files::SECRET_LIMIT)
                .map_err(|e| PyValueError::new_err(format!("secret_file {}: {e}", f.display())))?;
            let s = s.trim_ascii().to_vec();
            if s.is_empty() {
                return Err(PyValueError::new_err(format!(
                    "secret_file {}: the file is empty",
                    f.display()
                )));
            }
            Some(s)
        }
        (None, None) => None,
    };
    let config = Config {
        group,
        secret,
        liveness_timeout,
        ..Config::default()
    };
    ptmp_discovery::process::turn_on(config, timeout).map_err(presence_err)?;
    Ok(())
}

/// The names this process announces for its named binds, `node/port`,
/// sorted (empty when presence is off).
#[pyfunction]
pub fn announced_names() -> Vec<String> {
    ptmp_discovery::process::announced_now()
}

/// Withdraws every name this process announced (goodbye packets), so its
/// peers see it leave at once; `ptmp` calls it at interpreter exit.
#[pyfunction]
pub fn withdraw_names() {
    if let Some(s) = ptmp_discovery::process::service() {
        s.withdraw_all();
    }
}

/// After a receive that found nothing: when a peer `rx` connects to by
/// name is announced elsewhere now, `rx` is made again connected there
/// ([`ptmp::Receiver::follow_moved`], which keeps the old socket and
/// reads it first), and `look` takes one more look through it at once
/// (what it returns is returned).
pub(crate) fn followed(
    rx: &mut ptmp::Receiver,
    look: impl FnOnce(&mut ptmp::Receiver) -> bool,
) -> PyResult<bool> {
    match rx.follow_moved() {
        Ok(true) => Ok(look(rx)),
        Ok(false) => Ok(false),
        Err(e) => Err(PtmpError::new_err(e.to_string())),
    }
}

/// After a send that found no room: when a peer `tx` connects to by name
/// is announced elsewhere now, `tx` is made again connected there
/// ([`ptmp::Sender::follow_moved`]).
pub(crate) fn follow_tx(tx: &mut ptmp::Sender) -> PyResult<()> {
    tx.follow_moved()
        .map(|_| ())
        .map_err(|e| PtmpError::new_err(e.to_string()))
}
