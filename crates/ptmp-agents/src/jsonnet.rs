//! Loading configurations: JSON, or Jsonnet evaluated in-process (jrsonnet),
//! with the `ptmp.libsonnet` helper library built in.
//!
//! A file ending in `.jsonnet` or `.libsonnet` is Jsonnet; anything else is
//! parsed as JSON first and, when that fails, as Jsonnet (JSON is valid
//! Jsonnet, so a JSON file with a syntax error gets Jsonnet's clearer
//! located message). `import "ptmp.libsonnet"` resolves to the library
//! embedded in this crate (`jsonnet/ptmp.libsonnet`); other imports resolve
//! relative to the importing file, then along the library paths given.
//!
//! Limits, so that no configuration can crash or hang the process:
//! * configuration values nest at most [`MAX_DEPTH`] (127) levels of
//!   objects and arrays, what serde_json's recursion limit lets through, and Jsonnet
//!   source nests at most [`MAX_SOURCE_DEPTH`] (512) brackets; deeper input
//!   is an error naming the limit;
//! * Jsonnet function calls nest at most 200 deep (jrsonnet's stack limit);
//! * evaluation runs on its own thread with a large stack, and the caller
//!   waits for it while polling a stop request (SIGINT/SIGTERM in the CLI,
//!   Ctrl-C in Python) and an optional time limit ([`Options::timeout`]).
//!   A stopped or timed-out evaluation ends with an error at once; the
//!   evaluation thread is sent a signal ([`interrupt_signal`]), repeated
//!   until it ends, whose handler pushes jrsonnet's call-depth count far
//!   past its limit, so its next function call fails and the thread ends
//!   instead of computing on.

use crate::error::{Error, Result};
use jrsonnet_evaluator::manifest::JsonFormat;
use jrsonnet_evaluator::tla::TlaArg;
use jrsonnet_evaluator::trace::PathResolver;
use jrsonnet_evaluator::{
    AsPathLike, FileImportResolver, ImportResolver, SourcePath, SourceVirtual, State,
};
use jrsonnet_gcmodule::Acyclic;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Deepest nesting of objects and arrays a configuration may have (127).
pub use ptmp::MAX_DEPTH;
/// Deepest nesting of brackets (`(`, `[`, `{`) in Jsonnet source.
pub const MAX_SOURCE_DEPTH: usize = 512;
/// Stack of the evaluation thread: deep enough for [`MAX_SOURCE_DEPTH`]
/// in the parser and for dropping what it built (the memory is reserved,
/// and only the part used is ever touched).
const EVAL_STACK: usize = 256 << 20;

/// The helper library, importable as `ptmp.libsonnet`.
pub const PTMP_LIBSONNET: &str = include_str!("../jsonnet/ptmp.libsonnet");

#[derive(Acyclic)]
struct Resolver {
    files: FileImportResolver,
}

impl ImportResolver for Resolver {
    fn resolve_from(
        &self,
        from: &SourcePath,
        path: &dyn AsPathLike,
    ) -> jrsonnet_evaluator::Result<SourcePath> {
        let p = path.as_path();
        let s: &Path = p.as_ref();
        if s == Path::new("ptmp.libsonnet") {
            return Ok(SourcePath::new(SourceVirtual("ptmp.libsonnet".into())));
        }
        self.files.resolve_from(from, path)
    }

    fn load_file_contents(&self, id: &SourcePath) -> jrsonnet_evaluator::Result<Vec<u8>> {
        if id.downcast_ref::<SourceVirtual>().is_some() {
            return Ok(PTMP_LIBSONNET.as_bytes().to_vec());
        }
        // A file is read bounded, and only when it is a file or a pipe
        // (an import of /dev/zero would fill memory).
        let text = match id.path() {
            Some(p) => ptmp::files::read_given(p, ptmp::files::CONFIG_LIMIT).map_err(|e| {
                jrsonnet_evaluator::error::ErrorKind::ImportIo(format!("{id}: {e}"))
            })?,
            None => self.files.load_file_contents(id)?,
        };
        // An imported file is parsed like the main one: the same limit.
        if let Some(d) = too_deep(&text, MAX_SOURCE_DEPTH, true) {
            return Err(jrsonnet_evaluator::error::ErrorKind::ImportIo(format!(
                "{id}: Jsonnet source nests brackets {d} deep; the limit is {MAX_SOURCE_DEPTH}"
            ))
            .into());
        }
        Ok(text)
    }
}

/// Options for evaluating Jsonnet.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `std.extVar` strings (PTMP's generators use e.g. `context`).
    pub ext_str: Vec<(String, String)>,
    /// `std.extVar` values given as Jsonnet code (`--ext-code`), by name:
    /// lists, numbers, objects.
    pub ext_code: Vec<(String, String)>,
    /// Extra library search paths (`-J`).
    pub jpath: Vec<PathBuf>,
    /// Top-level arguments: a file that evaluates to a function is called
    /// with these (`--tla-str`/`--tla-code` of the jsonnet tool); a function
    /// is called even with none, so its parameters' defaults apply.
    pub tla_str: Vec<(String, String)>,
    /// Top-level arguments given as Jsonnet code (`--tla-code`), by name.
    pub tla_code: Vec<(String, String)>,
    /// Give up evaluating after this long (`--config-timeout`).
    pub timeout: Option<Duration>,
}

/// Evaluate a Jsonnet file to JSON.
pub fn evaluate_file(path: &Path, opts: &Options) -> Result<Value> {
    evaluate_file_until(path, opts, &|| false)
}

/// [`evaluate_file`], ending early with an error when `stop()` turns true
/// or `opts.timeout` runs out (see the module docs).
pub fn evaluate_file_until(path: &Path, opts: &Options, stop: &dyn Fn() -> bool) -> Result<Value> {
    let file = path.display().to_string();
    let jerr = |reason: String| Error::Jsonnet {
        file: file.clone(),
        reason,
    };
    if !path.exists() {
        return Err(jerr("no such file".into()));
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let (p, o) = (path.to_path_buf(), opts.clone());
    let worker = std::thread::Builder::new()
        .name("jsonnet".into())
        .stack_size(EVAL_STACK)
        .spawn(move || {
            // A mask inherited from the caller must not hold back the stop
            // signal.
            // SAFETY: plain signal-mask calls on this thread.
            unsafe {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, interrupt_signal());
                libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            }
            let r = evaluate_here(&p, &o);
            let _ = tx.send(r);
        })
        .map_err(|e| jerr(format!("cannot start the evaluation thread: {e}")))?;
    let deadline = opts.timeout.map(|t| Instant::now() + t);
    loop {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(r) => {
                let _ = worker.join();
                return r;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                let _ = worker.join();
                return Err(jerr("the Jsonnet evaluation failed unexpectedly".into()));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        let why = if stop() {
            "Jsonnet evaluation interrupted".to_string()
        } else if deadline.is_some_and(|d| Instant::now() >= d) {
            format!(
                "Jsonnet evaluation took longer than the time limit of {} s",
                opts.timeout.unwrap_or_default().as_secs_f64()
            )
        } else {
            continue;
        };
        // The thread ends at its next Jsonnet call; do not wait for it.
        interrupt(worker);
        return Err(jerr(why));
    }
}

/// The signal that stops an evaluation thread (a real-time signal, so that
/// it is not one the program or Python uses for anything else).
pub fn interrupt_signal() -> libc::c_int {
    libc::SIGRTMIN() + 4
}

/// The interrupt handler's action. Runs on the evaluation thread, the one
/// the signal is sent to.
fn on_interrupt() {
    // jrsonnet counts call depth in a thread-local and fails any call made
    // at or beyond its limit (200). Raise the count far past the limit, so
    // that every later call fails however far the evaluation unwinds first:
    // lift the limit, take (and keep) that many depth slots, then put the
    // limit back.
    use jrsonnet_evaluator::stack::{check_depth, limit_stack_depth};
    const BEYOND: usize = 1 << 16;
    let lifted = limit_stack_depth(BEYOND);
    while let Ok(slot) = check_depth() {
        std::mem::forget(slot);
    }
    drop(lifted);
}

/// Install the handler once, through signal-hook like the programs' other
/// signal handlers; false when the signal already has a handler of
/// someone else's (then a stopped evaluation's thread is left to finish by
/// itself: the caller still returns at once).
fn interrupt_handler() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| {
        let sig = interrupt_signal();
        // SAFETY: sigaction with a null new action only reads the current
        // one into `old`, a zeroed (valid: plain integers and pointers)
        // struct that lives across the call.
        let free = unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_DFL
        };
        // SAFETY: the action runs in the signal handler of the evaluation
        // thread it interrupts. It takes no lock and does not allocate: it
        // only sets jrsonnet's depth limit and counter, plain thread-local
        // cells of that same thread, and jrsonnet's bookkeeping may at worst
        // overwrite the count, which `interrupt` covers by signalling again.
        free && unsafe { signal_hook::low_level::register(sig, on_interrupt) }.is_ok()
    })
}

/// Tell the evaluation thread to stop, and keep telling it until it has
/// (a signal landing inside jrsonnet's own depth bookkeeping can be
/// overwritten by it), from a small thread that then joins it.
fn interrupt(worker: std::thread::JoinHandle<()>) {
    use std::os::unix::thread::JoinHandleExt;
    if !interrupt_handler() {
        return;
    }
    let _ = std::thread::Builder::new()
        .name("jsonnet-stop".into())
        .spawn(move || {
            while !worker.is_finished() {
                // SAFETY: the thread is not joined or detached yet (we own
                // its handle), so its id stays valid even once it ends.
                unsafe {
                    libc::pthread_kill(worker.as_pthread_t(), interrupt_signal());
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = worker.join();
        });
}

/// The first line of a jrsonnet error (its stack trace can run to hundreds
/// of lines), with a word on the limit when it was one.
fn brief(e: impl std::fmt::Display) -> String {
    let full = e.to_string();
    let more = full.lines().count().saturating_sub(1);
    let mut out = first_line(&full);
    if more > 0 {
        out.push_str(&format!(" ({more} more lines of trace)"));
    }
    out
}

/// The first line of a jrsonnet error alone.
fn first_line(full: &str) -> String {
    let first = full.lines().next().unwrap_or("");
    if first.contains("stack overflow") {
        "stack overflow: Jsonnet calls or manifested values nest deeper than the limit of 200 levels".into()
    } else {
        first.to_string()
    }
}

fn evaluate_here(path: &Path, opts: &Options) -> Result<Value> {
    let file = path.display().to_string();
    let jerr = |reason: String| Error::Jsonnet {
        file: file.clone(),
        reason,
    };
    let source = ptmp::files::read_given(path, ptmp::files::CONFIG_LIMIT)
        .map_err(|e| jerr(format!("cannot read: {e}")))?;
    if let Some(d) = too_deep(&source, MAX_SOURCE_DEPTH, true) {
        return Err(jerr(format!(
            "Jsonnet source nests brackets {d} deep; the limit is {MAX_SOURCE_DEPTH}"
        )));
    }
    let mut b = State::builder();
    b.import_resolver(Resolver {
        files: FileImportResolver::new(opts.jpath.clone()),
    });
    let ctx = jrsonnet_stdlib::ContextInitializer::new(PathResolver::new_cwd_fallback());
    for (k, v) in &opts.ext_str {
        ctx.add_ext_str(k.as_str().into(), v.as_str().into());
    }
    // The initializer shares its settings with this clone, so code
    // variables evaluated once the state exists are still seen.
    b.context_initializer(ctx.clone());
    let st = b.build();
    let _guard = st.enter();
    for (k, v) in &opts.ext_code {
        // Evaluated now, on its own, so that a bad value is named as the
        // variable it is, in one line, before the file is evaluated.
        let val = TlaArg::InlineCode(v.clone())
            .evaluate_tailstrict()
            .map_err(|e| {
                let first = first_line(&e.to_string());
                jerr(format!(
                    "external variable {k} = {v:?} (given as code) is not valid Jsonnet: \
                     {first}; for a text value give it as a string (--ext-str)"
                ))
            })?;
        ctx.add_ext_var(k.as_str().into(), val);
    }
    let abs = std::fs::canonicalize(path).map_err(|e| jerr(e.to_string()))?;
    let v = st
        .import(abs.as_path())
        .map_err(|e| jerr(format!("Jsonnet evaluation failed: {}", brief(e))))?;
    // IStr hashes by its interned pointer, which interior mutability of
    // the interner does not change.
    #[allow(clippy::mutable_key_type)]
    let mut tla = std::collections::HashMap::new();
    for (k, v) in &opts.tla_str {
        tla.insert(k.as_str().into(), TlaArg::String(v.as_str().into()));
    }
    for (k, v) in &opts.tla_code {
        // Evaluated here, on its own (as Jsonnet would, lazily, later), so
        // that a bad value is named as the argument it is, in one line.
        let val = TlaArg::InlineCode(v.clone())
            .evaluate_tailstrict()
            .map_err(|e| {
                let first = first_line(&e.to_string());
                jerr(format!(
                    "top-level argument {k} = {v:?} (given as code) is not valid Jsonnet: \
                     {first}; for a text value give it as a string (--tla-str)"
                ))
            })?;
        tla.insert(k.as_str().into(), TlaArg::Val(val));
    }
    let v = jrsonnet_evaluator::apply_tla(&tla, v)
        .map_err(|e| jerr(format!("Jsonnet top-level arguments: {}", brief(e))))?;
    let text = v
        .manifest(JsonFormat::minify())
        .map_err(|e| jerr(format!("Jsonnet manifest failed: {}", brief(e))))?;
    parse_json(&text).map_err(|reason| jerr(format!("Jsonnet produced {reason}")))
}

/// Why a JSON configuration text was refused by [`parse_json`].
#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    /// Brackets nested deeper than [`MAX_DEPTH`] (`depth` is the limit
    /// plus one: reading stops there).
    #[error("a configuration nested {depth} levels deep; the limit is {limit}")]
    TooDeep {
        /// How deep the text was found to be.
        depth: usize,
        /// The limit, [`MAX_DEPTH`].
        limit: usize,
    },
    /// Not JSON; serde_json's message names the line and column.
    #[error("invalid JSON: {0}")]
    Invalid(#[from] serde_json::Error),
}

/// Parse a JSON configuration text, refusing nesting deeper than
/// [`MAX_DEPTH`] with an error that names the limit.
pub fn parse_json(text: &str) -> std::result::Result<Value, JsonError> {
    if let Some(depth) = too_deep(text.as_bytes(), MAX_DEPTH, false) {
        return Err(JsonError::TooDeep {
            depth,
            limit: MAX_DEPTH,
        });
    }
    Ok(serde_json::from_str(text)?)
}

/// The nesting depth of brackets in `src` when it exceeds `limit` (then
/// reported as `limit + 1`), skipping strings and, for Jsonnet, comments,
/// verbatim strings and text blocks. No recursion: safe on any input.
pub fn too_deep(src: &[u8], limit: usize, jsonnet: bool) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = 0;
    let n = src.len();
    while i < n {
        let c = src[i];
        match c {
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return Some(depth);
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b'"' | b'\'' if jsonnet || c == b'"' => {
                let verbatim = jsonnet && i > 0 && src[i - 1] == b'@';
                i += 1;
                while i < n {
                    if src[i] == c {
                        // In a verbatim string a doubled quote is a quote.
                        if verbatim && src.get(i + 1) == Some(&c) {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += if src[i] == b'\\' && !verbatim { 2 } else { 1 };
                }
            }
            b'/' if jsonnet && src.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < n && !(src[i] == b'*' && src[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'/' | b'#' if jsonnet && (c == b'#' || src.get(i + 1) == Some(&b'/')) => {
                while i < n && src[i] != b'\n' {
                    i += 1;
                }
            }
            b'|' if jsonnet && src[i..].starts_with(b"|||") => {
                i += 3;
                while i < n && !src[i..].starts_with(b"|||") {
                    i += 1;
                }
                i += 2;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Load a configuration file: JSON, or Jsonnet (see the module docs).
pub fn load(path: &Path, opts: &Options) -> Result<Value> {
    load_until(path, opts, &|| false)
}

/// [`load`], stopping a Jsonnet evaluation when `stop()` turns true or
/// `opts.timeout` runs out.
pub fn load_until(path: &Path, opts: &Options, stop: &dyn Fn() -> bool) -> Result<Value> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if ext == "jsonnet" || ext == "libsonnet" {
        return evaluate_file_until(path, opts, stop);
    }
    let text = ptmp::files::read_given_text(path, ptmp::files::CONFIG_LIMIT).map_err(|e| {
        Error::Jsonnet {
            file: path.display().to_string(),
            reason: format!("cannot read: {e}"),
        }
    })?;
    if let Some(d) = too_deep(text.as_bytes(), MAX_DEPTH, false) {
        return Err(Error::Jsonnet {
            file: path.display().to_string(),
            reason: format!("a configuration nested {d} levels deep; the limit is {MAX_DEPTH}"),
        });
    }
    match serde_json::from_str(&text) {
        Ok(v) => Ok(v),
        Err(json_err) => evaluate_file_until(path, opts, stop).map_err(|e| match e {
            Error::Jsonnet { file, reason } => Error::Jsonnet {
                file,
                reason: format!("not valid JSON ({json_err}) nor Jsonnet: {reason}"),
            },
            other => other,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `std.extVar` given as code: a list and a number arrive as such; bad
    /// code is one line naming the variable.
    #[test]
    fn ext_code_gives_values_not_text() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("c.jsonnet");
        std::fs::write(&f, r#"{ eps: std.extVar("eps"), n: std.extVar("n") + 1 }"#).unwrap();
        let opts = Options {
            ext_code: vec![
                ("eps".into(), r#"["tcp://a:1", "tcp://b:2"]"#.into()),
                ("n".into(), "41".into()),
            ],
            ..Default::default()
        };
        let v = load(&f, &opts).unwrap();
        assert_eq!(v["eps"][1], "tcp://b:2");
        assert_eq!(v["n"], 42);
        let opts = Options {
            ext_code: vec![("eps".into(), "[1,".into()), ("n".into(), "1".into())],
            ..Default::default()
        };
        let e = load(&f, &opts).unwrap_err().to_string();
        assert!(e.contains("external variable eps"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn jsonnet_with_library_and_ext_var() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("c.jsonnet");
        std::fs::write(
            &f,
            r#"local ptmp = import "ptmp.libsonnet";
               { n: std.length([1,2,3]), ctx: std.extVar("context"),
                 s: ptmp.socket("PUSH", "bind", ["tcp://127.0.0.1:5555"]) }"#,
        )
        .unwrap();
        let opts = Options {
            ext_str: vec![("context".into(), "test".into())],
            ..Default::default()
        };
        let v = load(&f, &opts).unwrap();
        assert_eq!(v["n"], 3);
        assert_eq!(v["ctx"], "test");
        assert_eq!(v["s"]["socket"]["type"], "PUSH");
        assert_eq!(v["s"]["socket"]["bind"][0], "tcp://127.0.0.1:5555");
        // A function of top-level arguments, with and without them.
        std::fs::write(&f, "function(n=2, s='a') { n: n * 10, s: s }").unwrap();
        let v = load(&f, &Options::default()).unwrap();
        assert_eq!((v["n"].as_i64(), v["s"].as_str()), (Some(20), Some("a")));
        let opts = Options {
            tla_code: vec![("n".into(), "3".into())],
            tla_str: vec![("s".into(), "b".into())],
            ..Default::default()
        };
        let v = load(&f, &opts).unwrap();
        assert_eq!((v["n"].as_i64(), v["s"].as_str()), (Some(30), Some("b")));
        let opts = Options {
            tla_code: vec![("nope".into(), "3".into())],
            ..Default::default()
        };
        let e = load(&f, &opts).unwrap_err().to_string();
        assert!(e.contains("nope"), "{e}");
        // A code argument that is not valid Jsonnet: one line naming the
        // argument and its value, no evaluator trace.
        let opts = Options {
            tla_code: vec![("n".into(), "two".into())],
            ..Default::default()
        };
        let e = load(&f, &opts).unwrap_err().to_string();
        assert!(
            e.contains("top-level argument n = \"two\"") && e.contains("undefined local: two"),
            "{e}"
        );
        assert!(!e.contains('\n') && !e.contains("trace"), "{e}");
    }

    #[test]
    fn errors_name_the_file() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("bad.jsonnet");
        std::fs::write(&f, "{ a: 1 + }").unwrap();
        let e = load(&f, &Options::default()).unwrap_err().to_string();
        assert!(e.contains("bad.jsonnet"), "{e}");
        let f = d.path().join("bad.json");
        std::fs::write(&f, "{\"a\": }").unwrap();
        let e = load(&f, &Options::default()).unwrap_err().to_string();
        assert!(e.contains("not valid JSON"), "{e}");
    }

    #[test]
    fn nesting_is_measured_outside_strings_and_comments() {
        assert_eq!(too_deep(b"[[[1]]]", 3, false), None);
        assert_eq!(too_deep(b"[[[[1]]]]", 3, false), Some(4));
        assert_eq!(too_deep(br#"["[[[[\"[[[["]"#, 2, false), None);
        let src = "// [[[[\n# {{{{\n/* (((( */ {a: '[[[[', b: @'x''[[[[', c: |||\n  [[[[\n|||}";
        assert_eq!(too_deep(src.as_bytes(), 1, true), None);
        assert_eq!(too_deep(b"{a: [(1)]}", 2, true), Some(3));
    }

    #[test]
    fn deep_values_and_sources_are_refused_naming_the_limit() {
        let d = tempfile::tempdir().unwrap();
        let n = 100_000;
        let nested = format!("{{\"a\": {}{}}}", "[".repeat(n), "]".repeat(n));
        for name in ["deep.json", "deep.jsonnet"] {
            let f = d.path().join(name);
            std::fs::write(&f, &nested).unwrap();
            let e = load(&f, &Options::default()).unwrap_err().to_string();
            assert!(e.contains("the limit is"), "{e}");
        }
        // An imported file too.
        let f = d.path().join("imports.jsonnet");
        std::fs::write(&f, "(import 'deep.jsonnet') + {b: 1}").unwrap();
        let e = load(&f, &Options::default()).unwrap_err().to_string();
        assert!(e.contains("the limit is 512"), "{e}");
        let e = parse_json(&nested).unwrap_err();
        assert!(e.to_string().contains("the limit is 127"), "{e}");
        assert!(matches!(e, JsonError::TooDeep { limit: 127, .. }), "{e:?}");
        let e = parse_json("{\"a\": }").unwrap_err();
        assert!(matches!(e, JsonError::Invalid(_)), "{e:?}");
        assert!(e.to_string().starts_with("invalid JSON: "), "{e}");
        let f = d.path().join("built.jsonnet");
        for depth in [150, 100_000] {
            std::fs::write(
                &f,
                format!("{{a: std.foldl(function(a, _) [a], std.range(1, {depth}), [])}}"),
            )
            .unwrap();
            let e = load(&f, &Options::default()).unwrap_err().to_string();
            assert!(e.contains("limit"), "{e}");
            assert!(e.lines().count() == 1, "{e}");
        }
    }

    /// Threads of this process named like the evaluation thread.
    fn evaluation_threads() -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|c| matches!(c.trim(), "jsonnet" | "jsonnet-stop"))
            .count()
    }

    #[test]
    fn a_stopped_or_timed_out_evaluation_ends_its_thread() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("endless.jsonnet");
        std::fs::write(
            &f,
            "local f(n) = if n == 0 then 0 else f(n - 1) + f(n - 1); {x: f(60)}",
        )
        .unwrap();
        let opts = Options {
            timeout: Some(Duration::from_millis(300)),
            ..Default::default()
        };
        let e = load(&f, &opts).unwrap_err().to_string();
        assert!(e.contains("time limit of 0.3 s"), "{e}");
        let t0 = Instant::now();
        let e = load_until(&f, &Options::default(), &|| {
            t0.elapsed() > Duration::from_millis(300)
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("interrupted"), "{e}");
        // Both threads were told to stop and do, instead of computing on.
        let t0 = Instant::now();
        while evaluation_threads() > 0 {
            assert!(t0.elapsed() < Duration::from_secs(20), "still evaluating");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
