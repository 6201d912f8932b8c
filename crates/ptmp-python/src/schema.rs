//! The Python binding's the TPSet and TrigPrim classes, and their dict forms.

#[allow(unused_imports)]
use super::*;

/// One trigger primitive (ptmp.data.TrigPrim).
#[pyclass(module = "ptmp._ptmp", name = "TrigPrim", eq)]
#[derive(Clone, PartialEq)]
pub struct PyTrigPrim {
    pub(crate) inner: TrigPrim,
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

pub(crate) fn tp_dict<'py>(py: Python<'py>, t: &TrigPrim) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("channel", t.channel)?;
    d.set_item("tstart", t.tstart)?;
    d.set_item("tspan", t.tspan())?;
    d.set_item("adcsum", t.adcsum())?;
    d.set_item("adcpeak", t.adcpeak())?;
    d.set_item("flags", t.flags())?;
    Ok(d)
}

pub(crate) fn get<'py, T: FromPyObjectOwned<'py>>(
    d: &Bound<'py, PyDict>,
    k: &str,
) -> PyResult<Option<T>> {
    match d.get_item(k)? {
        None => Ok(None),
        Some(v) => v.extract::<T>().map(Some).map_err(|e| {
            let e: PyErr = e.into();
            PyValueError::new_err(format!("{k}: {e}"))
        }),
    }
}

use pyo3::conversion::FromPyObjectOwned;

pub(crate) fn tp_from_dict(d: &Bound<'_, PyDict>) -> PyResult<TrigPrim> {
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
    pub(crate) inner: TPSet,
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
