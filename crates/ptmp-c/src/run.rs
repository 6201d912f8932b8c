//! Agents and graphs from C: what `ptmp run` and `ptmp graph run` do, on a
//! configuration given as a path (JSON or Jsonnet) or as JSON text.

use crate::{c_str, guard, null, Fail};
use crate::{PTMP_ERR_CONFIG, PTMP_ERR_IO, PTMP_ERR_RUN, PTMP_OK, PTMP_TIMEOUT};
use ptmp_agents::ptmper::{self, RunConfig};
use std::ffi::{c_char, c_int, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

impl From<ptmp_agents::Error> for Fail {
    fn from(e: ptmp_agents::Error) -> Self {
        let code = match &e {
            ptmp_agents::Error::Config { .. } | ptmp_agents::Error::Jsonnet { .. } => {
                PTMP_ERR_CONFIG
            }
            ptmp_agents::Error::Io { .. } => PTMP_ERR_IO,
            _ => PTMP_ERR_RUN,
        };
        Fail(code, e.to_string())
    }
}

/// A configuration argument: JSON text if it starts with `{` (after
/// blanks), else the path of a JSON or Jsonnet file.
fn load(config: &str, stop: &dyn Fn() -> bool) -> Result<(serde_json::Value, String), Fail> {
    if config.trim_start().starts_with('{') {
        let v = ptmp_agents::jsonnet::parse_json(config)
            .map_err(|e| Fail(PTMP_ERR_CONFIG, format!("(config): {e}")))?;
        return Ok((v, "config".into()));
    }
    let p = std::path::Path::new(config);
    if !p.exists() {
        return Err(Fail(
            PTMP_ERR_IO,
            format!("{config}: no such file (give a path, or JSON text starting with '{{')"),
        ));
    }
    let opts = ptmp_agents::jsonnet::Options::default();
    let v = ptmp_agents::jsonnet::load_until(p, &opts, stop)?;
    Ok((v, ptmp_graph::name_from_path(p)))
}

/// The outcome of a run of agents kept for `ptmp_run_wait`.
type RunResult = Result<(), Fail>;

/// Agents or a graph running on a thread of their own (opaque), made by
/// `ptmp_run_start` or `ptmp_graph_start`.
#[allow(non_camel_case_types)]
pub struct ptmp_run {
    stop: Arc<AtomicBool>,
    // Behind a lock so `ptmp_run_stop` may share the handle with a waiter.
    state: Mutex<RunState>,
}

/// The agents' thread until it is joined, then how it ended.
struct RunState {
    thread: Option<JoinHandle<RunResult>>,
    done: Option<(c_int, String)>,
}

impl RunState {
    /// Joins the thread if it has ended (or `block`), keeping its outcome.
    fn reap(&mut self, block: bool) {
        if let Some(t) = self.thread.take_if(|t| block || t.is_finished()) {
            self.done = Some(match t.join() {
                Ok(Ok(())) => (PTMP_OK, String::new()),
                Ok(Err(Fail(code, msg))) => (code, msg),
                Err(_) => (PTMP_ERR_RUN, "the agents' thread panicked".into()),
            });
        }
    }
}

impl Drop for ptmp_run {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.state
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .reap(true);
    }
}

/// Starts the agents of a ptmper configuration (what `ptmp run` takes; the
/// C++ PTMP's `ptmper` JSON) on a thread of their own and stores the handle
/// in `*out` (NULL on failure). `config` is JSON text if it starts with
/// `{`, else the path of a JSON or Jsonnet file. `ttl_ms` >= 0 replaces
/// the configuration's own `ttl`; a negative value keeps it.
///
/// The configuration is read and checked before this returns: a bad one is
/// [`PTMP_ERR_CONFIG`] naming the agent, key and value. A failure while
/// running is reported by `ptmp_run_wait`.
///
/// A top-level `"discovery"` key turns presence on for names, as `ptmp
/// run` does (`true`, or `{group, secret_file, timeout, liveness_timeout,
/// announce}`; see `ptmp_use_discovery`). When presence is on already in
/// this process, the key must ask for the same group and secret
/// ([`PTMP_ERR_CONFIG`] otherwise). The names the agents announce are
/// withdrawn when they end.
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`],
/// [`PTMP_ERR_CONFIG`], [`PTMP_ERR_IO`], [`PTMP_ERR_TRANSPORT`] (presence
/// could not start) or [`PTMP_ERR_RUN`].
///
/// Thread-safety: any thread.
///
/// # Safety
/// `config` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ptmp_run_start(
    config: *const c_char,
    ttl_ms: i64,
    out: *mut *mut ptmp_run,
) -> c_int {
    guard("ptmp_run_start", || {
        if out.is_null() {
            return Err(null("out"));
        }
        // SAFETY: not NULL, and the caller promises it is writable.
        unsafe { *out = std::ptr::null_mut() };
        // SAFETY: the caller promises NULL or a NUL-terminated string.
        let config = unsafe { c_str(config, "config") }?;
        let (mut v, _) = load(config, &|| false)?;
        check_ttl(ttl_ms)?;
        if ttl_ms >= 0 {
            let o = v
                .as_object_mut()
                .ok_or_else(|| Fail(PTMP_ERR_CONFIG, "(config): not a JSON object".to_string()))?;
            o.insert("ttl".into(), serde_json::json!(ttl_ms as f64 / 1000.0));
        }
        let rc = RunConfig::parse(&v)?;
        // A "discovery" key turns presence on (or checks it against the
        // process's), as `ptmp run` does; the names the agents announce go
        // when they end.
        let before = ptmp_discovery::process::announced_now();
        if let Err(e) = ptmp_discovery::process::for_config(&v, "(config)") {
            // Binds announced before the one that failed go too.
            ptmp_discovery::process::withdraw_since(&before);
            return Err(crate::names::presence_fail(e));
        }
        let h = spawn_run("ptmp-run", move |stop| {
            let mut log = std::io::sink();
            let out = ptmper::run(&rc, stop, &mut log);
            ptmp_discovery::process::withdraw_since(&before);
            let out = out?;
            match out.failures.first() {
                Some(f) => Err(Fail(PTMP_ERR_RUN, f.to_string())),
                None => Ok(()),
            }
        })?;
        // SAFETY: as above; the box goes back through `ptmp_run_free`.
        unsafe { *out = Box::into_raw(h) };
        Ok(PTMP_OK)
    })
}

/// Runs `job` on a thread of its own, handing it the stop request to poll;
/// the handle stops, waits for and frees it.
fn spawn_run(
    name: &str,
    job: impl FnOnce(&dyn Fn() -> bool) -> RunResult + Send + 'static,
) -> Result<Box<ptmp_run>, Fail> {
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let thread = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || job(&|| s2.load(Ordering::Relaxed)))
        .map_err(|e| Fail(PTMP_ERR_RUN, format!("cannot start a thread: {e}")))?;
    Ok(Box::new(ptmp_run {
        stop,
        state: Mutex::new(RunState {
            thread: Some(thread),
            done: None,
        }),
    }))
}

/// Asks the agents (or the graph, for a handle from `ptmp_graph_start`)
/// to stop: they end cleanly, as on Ctrl-C in `ptmp run` or `ptmp graph
/// run`; returns at once. `ptmp_run_wait` then waits for them.
///
/// Returns [`PTMP_OK`] or [`PTMP_ERR_NULL`].
///
/// Thread-safety: any thread, also while another thread is in
/// `ptmp_run_wait` on the same handle. With a live handle it is also
/// async-signal-safe: it only stores to an atomic flag (no lock, no
/// allocation), so a signal handler may call it (a NULL handle is not:
/// the error message it leaves allocates).
///
/// # Safety
/// `run` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn ptmp_run_stop(run: *const ptmp_run) -> c_int {
    guard("ptmp_run_stop", || {
        // SAFETY: the caller promises NULL or a live handle; only the
        // atomic flag is touched, so other threads may use the handle.
        let h = unsafe { run.as_ref() }.ok_or_else(|| null("run"))?;
        h.stop.store(true, Ordering::Relaxed);
        Ok(PTMP_OK)
    })
}

/// Waits up to `timeout_ms` (negative: until they end) for the agents (or
/// the graph) to end, by their ttl, by themselves or after
/// `ptmp_run_stop`.
///
/// Returns [`PTMP_OK`] once they ended well (and every later call too),
/// [`PTMP_TIMEOUT`] if they still run, or the error they ended with
/// ([`PTMP_ERR_RUN`] naming the agent, or another code), again on every
/// later call.
///
/// Thread-safety: one thread at a time per handle (`ptmp_run_stop` may be
/// called meanwhile from others).
///
/// # Safety
/// `run` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn ptmp_run_wait(run: *mut ptmp_run, timeout_ms: c_int) -> c_int {
    guard("ptmp_run_wait", || {
        // SAFETY: the caller promises NULL or a live handle; it is only
        // shared (the state is behind its lock, the stop flag atomic).
        let h = unsafe { run.as_ref() }.ok_or_else(|| null("run"))?;
        let limit = u64::try_from(timeout_ms).ok().map(Duration::from_millis);
        let t0 = Instant::now();
        loop {
            let mut st = h.state.lock().unwrap_or_else(|e| e.into_inner());
            st.reap(false);
            if let Some((code, msg)) = &st.done {
                return if *code == PTMP_OK {
                    Ok(PTMP_OK)
                } else {
                    Err(Fail(*code, msg.clone()))
                };
            }
            drop(st);
            if limit.is_some_and(|l| t0.elapsed() >= l) {
                return Ok(PTMP_TIMEOUT);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    })
}

/// Stops the agents (or the graph) if they still run, waits for them and
/// frees the handle. NULL does nothing.
///
/// Thread-safety: no other thread may use the handle during or after this.
///
/// # Safety
/// `run` is NULL or a live handle, not used again.
#[no_mangle]
pub unsafe extern "C" fn ptmp_run_free(run: *mut ptmp_run) {
    guard("ptmp_run_free", || {
        if !run.is_null() {
            // SAFETY: the caller gives back the box from `ptmp_run_start`
            // and never uses it again.
            drop(unsafe { Box::from_raw(run) });
        }
        Ok(PTMP_OK)
    });
}

/// Checks a graph configuration (what `ptmp graph check` takes; a path or
/// JSON text as for `ptmp_run_start`) and, unless `description` is NULL,
/// stores in `*description` a text describing its processes, transports
/// and addresses, to be freed with `ptmp_string_free`.
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`],
/// [`PTMP_ERR_CONFIG`] (naming the node, port or edge) or [`PTMP_ERR_IO`].
///
/// Thread-safety: any thread.
///
/// # Safety
/// `config` is NULL or a NUL-terminated string; `description` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn ptmp_graph_check(
    config: *const c_char,
    description: *mut *mut c_char,
) -> c_int {
    guard("ptmp_graph_check", || {
        // SAFETY: the caller promises NULL or writable storage.
        if let Some(d) = unsafe { description.as_mut() } {
            *d = std::ptr::null_mut();
        }
        // SAFETY: the caller promises NULL or a NUL-terminated string.
        let config = unsafe { c_str(config, "config") }?;
        let (v, stem) = load(config, &|| false)?;
        let (g, p) =
            ptmp_graph::load(&v, &stem, None).map_err(|e| Fail(PTMP_ERR_CONFIG, e.to_string()))?;
        // SAFETY: as above.
        if let Some(d) = unsafe { description.as_mut() } {
            let text = ptmp_graph::plan::describe(&g, &p).replace('\0', " ");
            *d = CString::new(text).unwrap_or_default().into_raw();
        }
        Ok(PTMP_OK)
    })
}

/// A graph made ready to run: what `ptmp_graph_run` and
/// `ptmp_graph_start` check before they start anything.
struct GraphJob {
    graph: ptmp_graph::Graph,
    plan: ptmp_graph::plan::Plan,
    opts: ptmp_graph::supervise::Options,
}

/// The longest `ttl_ms` taken: a configuration's `ttl` is at most 10^9 s.
const MAX_TTL_MS: i64 = 1_000_000_000_000;

/// A `ttl_ms` argument beyond [`MAX_TTL_MS`] is a configuration error that
/// names it (negative values mean "keep the configuration's own").
fn check_ttl(ttl_ms: i64) -> Result<(), Fail> {
    if ttl_ms > MAX_TTL_MS {
        return Err(Fail(
            PTMP_ERR_CONFIG,
            format!(
                "ttl_ms {ttl_ms}: at most {MAX_TTL_MS} (10^9 s); a negative ttl_ms keeps the configuration's own"
            ),
        ));
    }
    Ok(())
}

impl GraphJob {
    /// Reads the arguments and loads and plans the graph.
    ///
    /// # Safety
    /// `config` is NULL or a NUL-terminated string; `host`, `run_dir` and
    /// `ptmp_program` are NULL or NUL-terminated strings.
    unsafe fn prepare(
        config: *const c_char,
        host: *const c_char,
        run_dir: *const c_char,
        ptmp_program: *const c_char,
        ttl_ms: i64,
    ) -> Result<GraphJob, Fail> {
        // SAFETY: the caller promises NULL or a NUL-terminated string.
        let config = unsafe { c_str(config, "config") }?;
        let opt = |s: *const c_char, what: &str| -> Result<Option<String>, Fail> {
            if s.is_null() {
                Ok(None)
            } else {
                // SAFETY: the caller promises a NUL-terminated string.
                Ok(Some(unsafe { c_str(s, what) }?.to_string()))
            }
        };
        let host = opt(host, "host")?;
        let run_dir = opt(run_dir, "run_dir")?;
        check_ttl(ttl_ms)?;
        let program = opt(ptmp_program, "ptmp_program")?.unwrap_or_else(|| "ptmp".into());
        let (v, stem) = load(config, &|| false)?;
        let (graph, plan) =
            ptmp_graph::load(&v, &stem, run_dir.as_deref().map(std::path::Path::new))
                .map_err(|e| Fail(PTMP_ERR_CONFIG, e.to_string()))?;
        // A host the graph does not have is a mistake in the arguments,
        // found before anything starts.
        if let Some(h) = &host {
            graph
                .host_index(h)
                .map_err(|e| Fail(PTMP_ERR_CONFIG, e.to_string()))?;
        }
        let opts = ptmp_graph::supervise::Options {
            part_command: vec![program.into(), "graph".into(), "part".into()],
            host,
            ttl: u64::try_from(ttl_ms).ok().map(Duration::from_millis),
            ..Default::default()
        };
        Ok(GraphJob { graph, plan, opts })
    }

    /// Runs and supervises the graph until it ends, its ttl passes or
    /// `stop` says so.
    fn run(&self, stop: &dyn Fn() -> bool) -> RunResult {
        let mut log = std::io::sink();
        let g = &self.graph;
        let out = ptmp_graph::supervise::run(g, &self.plan, &self.opts, stop, &|| false, &mut log)
            .map_err(|e| Fail(PTMP_ERR_RUN, e.to_string()))?;
        if !out.ok {
            return Err(Fail(
                PTMP_ERR_RUN,
                format!(
                    "graph {}: {} (not every process ended well)",
                    g.name, out.reason
                ),
            ));
        }
        Ok(())
    }
}

/// Runs this host's processes of a graph and supervises them, as `ptmp
/// graph run` does, until the graph ends, `ttl_ms` passes (negative: no
/// limit) or a process fails for good. Each process is a child running
/// `ptmp graph part`: `ptmp_program` is the `ptmp` program to use (NULL:
/// `ptmp` found on the PATH). `host` names this host in a graph spanning
/// several (NULL for a one-host graph); `run_dir` is where plans and status
/// go (NULL: the default). To stop it early, use `ptmp_graph_start`.
///
/// Returns [`PTMP_OK`] when the graph ran and ended well, or
/// [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`], [`PTMP_ERR_CONFIG`],
/// [`PTMP_ERR_IO`] or [`PTMP_ERR_RUN`] (the message says why).
///
/// Thread-safety: any thread; blocks the calling one.
///
/// # Safety
/// `config` is NULL or a NUL-terminated string; `host`, `run_dir` and
/// `ptmp_program` are NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn ptmp_graph_run(
    config: *const c_char,
    host: *const c_char,
    run_dir: *const c_char,
    ptmp_program: *const c_char,
    ttl_ms: i64,
) -> c_int {
    guard("ptmp_graph_run", || {
        // SAFETY: the caller's promises are those `prepare` asks for.
        let job = unsafe { GraphJob::prepare(config, host, run_dir, ptmp_program, ttl_ms) }?;
        job.run(&|| false)?;
        Ok(PTMP_OK)
    })
}

/// Starts a graph as `ptmp_graph_run` does (same arguments), but on a
/// thread of its own, and stores a handle in `*out` (NULL on failure):
/// `ptmp_run_stop` asks the graph to stop (each process is stopped
/// cleanly, upstream first, as on Ctrl-C in `ptmp graph run`), from any
/// thread or a signal handler; `ptmp_run_wait` waits for the end and says
/// how it went; `ptmp_run_free` stops, waits and frees. A graph stopped so
/// ends well ([`PTMP_OK`]) if every process stopped cleanly.
///
/// The configuration is read, checked and planned before this returns: a
/// bad one is [`PTMP_ERR_CONFIG`] (or [`PTMP_ERR_IO`] for a missing file)
/// and nothing is started. A failure while running (a part program that
/// cannot start, a process that keeps failing) is `ptmp_run_wait`'s.
///
/// Returns [`PTMP_OK`], [`PTMP_ERR_NULL`], [`PTMP_ERR_ARG`],
/// [`PTMP_ERR_CONFIG`], [`PTMP_ERR_IO`] or [`PTMP_ERR_RUN`].
///
/// Thread-safety: any thread; the handle then follows the rules of
/// `ptmp_run_start`'s.
///
/// # Safety
/// As `ptmp_graph_run`; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ptmp_graph_start(
    config: *const c_char,
    host: *const c_char,
    run_dir: *const c_char,
    ptmp_program: *const c_char,
    ttl_ms: i64,
    out: *mut *mut ptmp_run,
) -> c_int {
    guard("ptmp_graph_start", || {
        if out.is_null() {
            return Err(null("out"));
        }
        // SAFETY: not NULL, and the caller promises it is writable.
        unsafe { *out = std::ptr::null_mut() };
        // SAFETY: the caller's promises are those `prepare` asks for.
        let job = unsafe { GraphJob::prepare(config, host, run_dir, ptmp_program, ttl_ms) }?;
        let h = spawn_run("ptmp-graph", move |stop| job.run(stop))?;
        // SAFETY: as above; the box goes back through `ptmp_run_free`.
        unsafe { *out = Box::into_raw(h) };
        Ok(PTMP_OK)
    })
}

/// Frees a string this library returned (e.g. by `ptmp_graph_check`).
/// NULL does nothing.
///
/// Thread-safety: any thread.
///
/// # Safety
/// `s` is NULL or a string from this library, not used again.
#[no_mangle]
pub unsafe extern "C" fn ptmp_string_free(s: *mut c_char) {
    guard("ptmp_string_free", || {
        if !s.is_null() {
            // SAFETY: the caller gives back a string made by
            // `CString::into_raw` here and never uses it again.
            drop(unsafe { CString::from_raw(s) });
        }
        Ok(PTMP_OK)
    });
}
