//! The Python binding's graphs: check, run and supervise them, and one part of one.

#[allow(unused_imports)]
use super::*;

/// A graph from a path (JSON/Jsonnet) or a dict, validated and wired.
pub(crate) fn load_graph(
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
pub(crate) fn graph_check(
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
/// seconds, or on Ctrl-C (which stops the parts cleanly, then raises), or
/// on SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 or SIGALRM when the
/// program has no handler of its own for it (stops them likewise, removes
/// the rings, then raises `PtmpError` naming the signal):
/// `{"reason", "ok", "restarts": {process: n}, "processes": [final status
/// of each process, with its nodes' counts and reports], "status": the
/// graph's state as `ptmp graph status --json` gives it (each node's and
/// process's state, each edge's figures)}`.
#[pyfunction]
#[pyo3(signature = (config, host=None, ttl=None, run_dir=None, config_timeout=None, *, tla_str=None, tla_code=None, ext_str=None, jpath=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_graph<'py>(
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
    let guard = StopSignals::install(py)?;
    let out = interruptible(py, "the supervisor", move |stop| {
        let mut log = std::io::stderr();
        let out = ptmp_graph::supervise::run(
            &g,
            &p,
            &opts,
            &|| stop.load(Ordering::Relaxed),
            &|| false,
            &mut log,
        );
        // The state the parts left, by the rules `ptmp graph status` uses.
        out.map(|o| (o, ptmp_graph::status::Report::read(&g, &p)))
    });
    guard.restore(py);
    let (out, report) = out?.map_err(|e| PtmpError::new_err(e.to_string()))?;
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
        "status": report,
    });
    py.import("json")?.call_method1("loads", (v.to_string(),))
}

/// The signals that would end the Python process (their handler is the
/// default) while `run_graph` supervises, leaving the graph's parts to die
/// with it and its shm rings behind: each is given, for the run, a handler
/// that raises `PtmpError` naming it, so the supervisor stops the parts
/// cleanly, removes the rings, and the error is raised. Handlers of the
/// program's own are left alone; outside the main thread (where Python
/// cannot set handlers) nothing is changed.
struct StopSignals(Vec<(i32, Py<PyAny>)>);

impl StopSignals {
    fn install(py: Python<'_>) -> PyResult<StopSignals> {
        use signal_hook::consts::{SIGALRM, SIGHUP, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
        let signal = py.import("signal")?;
        let dfl = signal.getattr("SIG_DFL")?;
        let mut set = Vec::new();
        for sig in [SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM] {
            let old = signal.call_method1("getsignal", (sig,))?;
            if !old.eq(&dfl)? {
                continue;
            }
            let name = ptmp_graph::part::signal_name(sig);
            let raise = pyo3::types::PyCFunction::new_closure(py, None, None, move |_, _| {
                Err::<(), _>(PtmpError::new_err(format!(
                    "run_graph: stopped by {name}; the graph's processes were stopped and its shm rings removed"
                )))
            })?;
            // Not the main thread: Python refuses; leave the signal be.
            if signal.call_method1("signal", (sig, raise)).is_ok() {
                set.push((sig, old.unbind()));
            }
        }
        Ok(StopSignals(set))
    }

    /// Put the handlers back as they were.
    fn restore(self, py: Python<'_>) {
        if let Ok(signal) = py.import("signal") {
            for (sig, old) in self.0 {
                let _ = signal.call_method1("signal", (sig, old));
            }
        }
    }
}

/// One process of a graph (used by `python -m ptmp._part PLAN`): runs its
/// nodes until a stop signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) or until
/// they end; returns the exit status: 128 + the signal's number after a
/// stop by a signal, so the supervisor restarts a part told to stop by
/// anyone but itself. SIGUSR1, SIGUSR2 and SIGALRM are ignored.
#[pyfunction]
pub(crate) fn _graph_part(py: Python<'_>, plan: std::path::PathBuf) -> PyResult<i32> {
    use signal_hook::consts::{SIGALRM, SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
    use std::sync::atomic::AtomicUsize;
    let pp =
        ptmp_graph::part::PartPlan::read(&plan).map_err(|e| ConfigError::new_err(e.to_string()))?;
    // This process exists to run the part: its stop signals are ours.
    // Python's own SIGINT handler is put back to the default first, so the
    // handler registered next does not pass the signal on to it (which
    // would raise KeyboardInterrupt once the part has ended).
    let signal = py.import("signal")?;
    signal.call_method1("signal", (SIGINT, signal.getattr("SIG_DFL")?))?;
    let cannot = |sig: i32, e: std::io::Error| {
        PtmpError::new_err(format!("cannot handle signal {sig}: {e}"))
    };
    // The last stop signal that came (0: none).
    let got = Arc::new(AtomicUsize::new(0));
    for sig in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] {
        signal_hook::flag::register_usize(sig, got.clone(), sig as usize)
            .map_err(|e| cannot(sig, e))?;
    }
    for sig in [SIGUSR1, SIGUSR2, SIGALRM] {
        // A flag no one reads: the signal is caught, and so ignored.
        signal_hook::flag::register(sig, Arc::new(AtomicBool::new(false)))
            .map_err(|e| cannot(sig, e))?;
    }
    Ok(py.detach(|| {
        let mut log = std::io::stderr();
        let stop = || Some(got.load(Ordering::Relaxed) as i32).filter(|&s| s != 0);
        ptmp_graph::part::run_until(&pp, &stop, &mut log)
    }))
}

/// Microseconds since the Unix epoch (as TPSet.created holds).
#[pyfunction]
pub(crate) fn now_us() -> i64 {
    ptmp_data::now_us()
}
