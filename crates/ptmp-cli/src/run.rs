//! `ptmp run FILE`: PTMP's ptmper. Validates the whole configuration, runs
//! its agents, stops them on SIGINT/SIGTERM or when `ttl` runs out, and
//! prints each agent's final counters.

use crate::common::{outln, stopping, CliError};
use clap::Args;
use ptmp_agents::jsonnet::{self, Options};
use ptmp_agents::ptmper::{self, RunConfig};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Parse a `--config-timeout` value: a duration above zero (a bare number
/// is seconds).
pub fn parse_timeout(s: &str) -> Result<Duration, ptmp::duration::DurationError> {
    ptmp::duration::secs_positive(s)
}

/// Load a JSON/Jsonnet configuration, stopping a Jsonnet evaluation on
/// SIGINT/SIGTERM (exit 1) or at its time limit; any other failure
/// (including the nesting limits) is a bad configuration (exit 2).
pub fn load_config(file: &Path, opts: &Options) -> Result<serde_json::Value, CliError> {
    jsonnet::load_until(file, opts, &stopping).map_err(|e| {
        if stopping() {
            CliError::fail(format!("{e} (by a signal)"))
        } else {
            CliError::usage(e.to_string())
        }
    })
}

/// Split `KEY=VALUE` arguments of `flag`; an argument without `=` is a
/// usage error naming the flag. Shared by `ptmp run` and `ptmp graph`.
pub fn kv(list: &[String], flag: &str) -> Result<Vec<(String, String)>, CliError> {
    list.iter()
        .map(|s| {
            s.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| CliError::usage(format!("{flag} {s:?}: expected KEY=VALUE")))
        })
        .collect()
}

/// A note for a string variable whose value looks like Jsonnet code (a list
/// or an object), which was probably meant as code.
pub fn code_like_note(flag: &str, code_flag: &str, (k, v): &(String, String)) -> Option<String> {
    let t = v.trim_start();
    (t.starts_with('[') || t.starts_with('{')).then(|| {
        format!(
            "ptmp run: warning: {flag} {k}={v} is passed as a text string; \
             if it is a list or an object, give it as code: {code_flag} {k}={v}"
        )
    })
}

#[derive(Args)]
pub struct RunArgs {
    /// The configuration: JSON, or Jsonnet (`.jsonnet`), with PTMP's keys.
    file: PathBuf,
    /// Validate only: report the first error, or print the agents and exit.
    #[arg(long)]
    check: bool,
    /// Print the configuration after Jsonnet evaluation and exit.
    #[arg(long)]
    dump: bool,
    /// Jsonnet external string variable, KEY=VALUE (repeatable).
    #[arg(short = 'V', long = "ext-str", value_name = "KEY=VALUE")]
    ext_str: Vec<String>,
    /// Jsonnet external variable as code, e.g. input='["tcp://h:1"]' or
    /// n=3 (repeatable).
    #[arg(long = "ext-code", value_name = "KEY=CODE")]
    ext_code: Vec<String>,
    /// Jsonnet top-level argument as a string, KEY=VALUE (repeatable).
    #[arg(short = 'A', long = "tla-str", value_name = "KEY=VALUE")]
    tla_str: Vec<String>,
    /// Jsonnet top-level argument as code, e.g. ntpsets=100 (repeatable).
    #[arg(long = "tla-code", value_name = "KEY=CODE")]
    tla_code: Vec<String>,
    /// Jsonnet library search path (repeatable).
    #[arg(short = 'J', long = "jpath", value_name = "DIR")]
    jpath: Vec<PathBuf>,
    /// Give up evaluating the Jsonnet after this long (e.g. 30s; a bare
    /// number is seconds; exit 2). SIGINT/SIGTERM stop an evaluation at any
    /// time (exit 1).
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout)]
    config_timeout: Option<Duration>,
    /// Override the config's ttl (e.g. 90s, 5m; a bare number is seconds;
    /// -1: until interrupted).
    #[arg(long, value_name = "DURATION", allow_negative_numbers = true, value_parser = ptmp::duration::secs_limit)]
    ttl: Option<ptmp::duration::Limit>,
    #[command(flatten)]
    http: crate::http::HttpArgs,
}

pub fn run(a: &RunArgs) -> Result<(), CliError> {
    let opts = Options {
        jpath: a.jpath.clone(),
        timeout: a.config_timeout,
        ext_str: kv(&a.ext_str, "-V")?,
        ext_code: kv(&a.ext_code, "--ext-code")?,
        tla_str: kv(&a.tla_str, "-A")?,
        tla_code: kv(&a.tla_code, "--tla-code")?,
    };
    for x in &opts.ext_str {
        if let Some(n) = code_like_note("-V", "--ext-code", x) {
            tracing::info!("{n}");
        }
    }
    for x in &opts.tla_str {
        if let Some(n) = code_like_note("-A", "--tla-code", x) {
            tracing::info!("{n}");
        }
    }
    let mut v = load_config(&a.file, &opts)?;
    if a.dump {
        outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default())?;
        return Ok(());
    }
    if let (Some(ptmp::duration::Limit(t)), Some(o)) = (a.ttl, v.as_object_mut()) {
        // The config's own ttl: seconds, negative for no limit.
        let secs = t.map_or(-1.0, |d| d.as_secs_f64());
        o.insert("ttl".into(), serde_json::json!(secs));
    }
    let mut rc =
        RunConfig::parse(&v).map_err(|e| CliError::usage(format!("{}: {e}", a.file.display())))?;
    rc.verbose |= crate::log::verbose() > 0;
    for p in rc.proxies.iter().flat_map(|p| p.leaves()) {
        for w in &p.warnings {
            tracing::warn!(
                "ptmp run: warning: agent {} ({}): {w}",
                p.name,
                p.kind.name()
            );
        }
    }
    let unused = rc.unused_keys(&v);
    let origin = a.file.display().to_string();
    crate::peers::check_discovery(&v, &origin)?;
    if a.check {
        outln!("{}: valid: {} proxies", a.file.display(), rc.proxies.len())?;
        for p in &rc.proxies {
            outln!("  {} ({})", p.name, p.kind.name())?;
        }
        if !unused.is_empty() {
            outln!("  keys not used by any agent: {}", unused.join(", "))?;
        }
        return Ok(());
    }
    if !unused.is_empty() {
        // Said every time: PTMP's generated configurations carry keys their
        // agents do not read, so these run, but a typo among them would
        // otherwise pass unseen (near misses of known keys are refused).
        tracing::info!(
            "ptmp run: note: keys not used by any agent: {}",
            unused.join(", ")
        );
    }
    let _monitor = a.http.start_local(&v)?;
    // Presence first: the agents' sockets resolve and announce names
    // through it as they are made.
    let presence = crate::peers::presence_for(&v, &origin)?;
    crate::common::ignore_stray_signals()?;
    let mut log = crate::log::Lines::default();
    let out = ptmper::run(&rc, &stopping, &mut log).map_err(|e| CliError::fail(e.to_string()));
    // The agents are done: their names leave now, not at the peers' next
    // liveness check.
    if let Some(p) = &presence {
        p.withdraw_all();
    }
    let out = out?;
    for r in &out.reports {
        let _ = outln!("{r}");
    }
    if out.failures.is_empty() {
        Ok(())
    } else {
        let msgs: Vec<String> = out.failures.iter().map(|e| e.to_string()).collect();
        Err(CliError::fail(msgs.join("; ")))
    }
}
