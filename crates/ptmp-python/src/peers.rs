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
            .map(|(name, address)| PortSpec { name, address })
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
