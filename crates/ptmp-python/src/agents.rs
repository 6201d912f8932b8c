//! The Python binding's running agents (`ptmp.run`), as `ptmp run` does.

#[allow(unused_imports)]
use super::*;

/// Run `f` on a thread of its own while this one, GIL released, checks for
/// signals every 20 ms: on Ctrl-C the stop flag given to `f` is raised, `f`
/// is waited for (it stops cleanly), and the KeyboardInterrupt is raised.
pub(crate) fn interruptible<T: Send + 'static>(
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
pub(crate) fn run<'py>(
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
    // A "discovery" key turns presence on (or checks it against the
    // process's), as `ptmp run` does; the names the agents announce go
    // when they end.
    let before = ptmp_discovery::process::announced_now();
    if let Err(e) = ptmp_discovery::process::for_config(&v, "ptmp.run") {
        ptmp_discovery::process::withdraw_since(&before);
        return Err(crate::peers::presence_err(e));
    }
    let out = interruptible(py, "the runner", move |stop| {
        let mut log = std::io::sink();
        ptmp_agents::ptmper::run(&rc, &|| stop.load(Ordering::Relaxed), &mut log)
    });
    ptmp_discovery::process::withdraw_since(&before);
    let out = out?.map_err(aerr)?;
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
