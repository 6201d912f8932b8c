//! The Python binding's files of messages: read them whole, write them a
//! message at a time, or read their TPSets as table columns. The format
//! follows the file's extension, as everywhere in ptmp.

#[allow(unused_imports)]
use super::*;
use ptmp_formats::rows::{rows, TpRow, COLUMNS};
use ptmp_formats::{Record, Writer};

/// A file's error as Python sees it: damaged bytes are a `WireError`,
/// everything else a `PtmpError`, each naming the file.
fn file_err(e: ptmp_formats::Error) -> PyErr {
    match e {
        ptmp_formats::Error::Dump { .. } | ptmp_formats::Error::Unreadable { .. } => {
            WireError::new_err(e.to_string())
        }
        _ => PtmpError::new_err(e.to_string()),
    }
}

/// Every message of the file at `path`, each passed to `each` with its
/// number.
fn each_record(
    path: &std::path::Path,
    mut each: impl FnMut(u64, &Record) -> PyResult<()>,
) -> PyResult<()> {
    let mut r = ptmp_formats::open(path, None).map_err(file_err)?;
    let mut rec = Record::default();
    while r.read_into(&mut rec).map_err(file_err)? {
        each(r.records() - 1, &rec)?;
    }
    Ok(())
}

/// The TPSet in message `n` of `path`.
fn tpset_of(path: &std::path::Path, n: u64, rec: &Record) -> PyResult<TPSet> {
    let mut s = TPSet::default();
    ptmp_data::wire::decode_frames(&rec.frames, &mut s)
        .map_err(|e| WireError::new_err(format!("{}: record {n}: {e}", path.display())))?;
    Ok(s)
}

/// Read a file of messages: a list of messages, each a list of frames.
#[pyfunction]
pub(crate) fn read_dump<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
) -> PyResult<Vec<Vec<Bound<'py, PyBytes>>>> {
    let mut out = Vec::new();
    each_record(&path, |_, rec| {
        out.push(rec.frames.iter().map(|b| PyBytes::new(py, b)).collect());
        Ok(())
    })?;
    Ok(out)
}

/// Read a file of PTMP messages as TPSets.
#[pyfunction]
pub(crate) fn read_tpsets(path: std::path::PathBuf) -> PyResult<Vec<PyTPSet>> {
    let mut out = Vec::new();
    each_record(&path, |n, rec| {
        out.push(PyTPSet {
            inner: tpset_of(&path, n, rec)?,
        });
        Ok(())
    })?;
    Ok(out)
}

/// Read a file of PTMP messages as a table: a dict of columns (lists), one
/// row per TrigPrim with its set's fields, for `pandas.DataFrame(...)` or
/// `polars.DataFrame(...)`. A set of no TrigPrims is one row whose
/// TrigPrim columns are None.
#[pyfunction]
pub(crate) fn read_rows<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
) -> PyResult<Bound<'py, PyDict>> {
    let mut all: Vec<TpRow> = Vec::new();
    each_record(&path, |n, rec| {
        all.extend(rows(n, &tpset_of(&path, n, rec)?));
        Ok(())
    })?;
    let d = PyDict::new(py);
    macro_rules! column {
        ($($field:ident),*) => {$(
            d.set_item(stringify!($field), all.iter().map(|r| r.$field).collect::<Vec<_>>())?;
        )*};
    }
    column!(
        set, count, detid, created, set_tstart, set_tspan, chanbeg, chanend, totaladc, channel,
        tstart, tspan, adcsum, adcpeak, flags
    );
    debug_assert_eq!(d.len(), COLUMNS.len());
    Ok(d)
}

/// Writes a file of messages, in the format its extension says (a czmqat
/// dump unless it says otherwise).
#[pyclass(module = "ptmp._ptmp", name = "DumpWriter")]
pub struct PyDumpWriter {
    /// Behind a lock because Python may hand the object to any thread;
    /// the methods take it mutably, so the lock is never contended.
    w: Mutex<Option<Box<dyn Writer>>>,
}

impl PyDumpWriter {
    fn writer(&mut self) -> PyResult<&mut Box<dyn Writer>> {
        self.w
            .get_mut()
            .map_err(|_| PtmpError::new_err("a write failed in another thread"))?
            .as_mut()
            .ok_or_else(|| PtmpError::new_err("closed"))
    }
}

#[pymethods]
impl PyDumpWriter {
    #[new]
    fn new(path: std::path::PathBuf) -> PyResult<Self> {
        Ok(PyDumpWriter {
            w: Mutex::new(Some(ptmp_formats::create(&path, None).map_err(file_err)?)),
        })
    }

    /// Append one message given as its frames.
    fn write(&mut self, frames: Vec<Vec<u8>>) -> PyResult<()> {
        let w = self.writer()?;
        w.write("", None, &Frames::from_slices(&frames))
            .map_err(file_err)
    }

    /// Append one TPSet as a PTMP message.
    fn write_tpset(&mut self, tpset: PyRef<'_, PyTPSet>) -> PyResult<()> {
        let w = self.writer()?;
        let mut buf = Vec::new();
        ptmp_data::encode_tpset(&tpset.inner, &mut buf);
        let f = Frames::from_slices(&[&ptmp_data::VERSION_FRAME[..], &buf[..]]);
        w.write("", None, &f).map_err(file_err)
    }

    fn close(&mut self) -> PyResult<()> {
        let w = self.w.get_mut().map(Option::take).unwrap_or(None);
        if let Some(w) = w {
            w.finish().map_err(file_err)?;
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

/// The format a file is read as (its extension's, or `format`), checked
/// by opening it: a Parquet file of other columns is refused here.
#[pyfunction]
#[pyo3(signature = (path, format=None))]
pub(crate) fn _table_format(path: std::path::PathBuf, format: Option<&str>) -> PyResult<String> {
    let given = format
        .map(ptmp_formats::Format::named)
        .transpose()
        .map_err(|e| PtmpError::new_err(e.to_string()))?;
    let r = ptmp_formats::open(&path, given).map_err(file_err)?;
    Ok(r.format().name().to_string())
}

/// A file's TPSets as one Arrow IPC stream (a row per TrigPrim), built
/// without the GIL; `ptmp.read` hands it to pyarrow without a copy.
#[pyfunction]
#[pyo3(signature = (path, format=None))]
pub(crate) fn _read_arrow_ipc<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    format: Option<&str>,
) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
    let given = format
        .map(ptmp_formats::Format::named)
        .transpose()
        .map_err(|e| PtmpError::new_err(e.to_string()))?;
    let bytes = py
        .detach(|| ptmp_formats::table::arrow_ipc(&path, given))
        .map_err(file_err)?;
    Ok(pyo3::types::PyBytes::new(py, &bytes))
}
