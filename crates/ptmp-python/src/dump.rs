//! The Python binding's dump files: read them whole, write them a set at a time.

#[allow(unused_imports)]
use super::*;

/// Read a czmqat dump file: a list of messages, each a list of frames.
#[pyfunction]
pub(crate) fn read_dump<'py>(
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
pub(crate) fn read_tpsets(path: std::path::PathBuf) -> PyResult<Vec<PyTPSet>> {
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
        let mut s = ptmp_data::TPSet::default();
        ptmp_data::wire::decode_frames(&frames, &mut s).map_err(|e| bad(e.to_string()))?;
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
