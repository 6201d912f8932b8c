//! `ptmp graph soak`: a graph run under faults (see ptmp_graph::soak).

use super::GraphSource;
use crate::common::{out, outln, stopping, CliError, CliResult};
use clap::Args;
use ptmp_soak::{self as soak, Fault};
use std::time::Duration;

#[derive(Args)]
pub struct SoakArgs {
    #[command(flatten)]
    src: GraphSource,
    /// The host this is (a graph with several hosts runs one part per host).
    #[arg(long)]
    host: Option<String>,
    /// Inject faults for this long (e.g. 10m; a bare number is seconds),
    /// then stop the graph cleanly (sooner if the graph finishes by itself).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = ptmp::duration::secs)]
    seconds: Duration,
    /// Mean time between faults (e.g. 1s; a bare number is milliseconds);
    /// each wait is drawn between half and one and a half of it.
    #[arg(long, alias = "every-ms", value_name = "DURATION", default_value = "1s", value_parser = ptmp::duration::millis)]
    every: Duration,
    /// Kinds of fault, comma-separated: kill (SIGKILL; the supervisor
    /// restarts the process), stop (SIGSTOP, then SIGCONT).
    #[arg(long, value_name = "LIST", default_value = "kill,stop")]
    faults: String,
    /// How long a stopped process stays stopped (e.g. 300ms; a bare number
    /// is milliseconds).
    #[arg(long, alias = "stop-ms", value_name = "DURATION", default_value = "300ms", value_parser = ptmp::duration::millis)]
    stop_for: Duration,
    /// Start of the random sequence of choices (the same start and graph
    /// give the same sequence of picks); default from the clock, printed in
    /// the report.
    #[arg(long, value_name = "N")]
    start: Option<u64>,
    /// Processes that may be killed, comma-separated (default: every
    /// process without a sink; a process holding a sink is never killed).
    #[arg(long, value_name = "PROCS")]
    kill_only: Option<String>,
    /// After the last fault the graph must be running again and moving
    /// messages within this long (e.g. 10s; a bare number is seconds), or
    /// the soak fails as stalled.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = ptmp::duration::secs)]
    recover: Duration,
    /// Print the report as one JSON line too (the last line of output).
    #[arg(long)]
    json: bool,
}

/// `v` when it is within `range`, else a usage error naming `flag`.
fn within(
    v: Duration,
    flag: &str,
    range: std::ops::RangeInclusive<Duration>,
) -> CliResult<Duration> {
    if range.contains(&v) {
        Ok(v)
    } else {
        Err(CliError::usage(format!(
            "{flag} {v:?}: must be from {:?} to {:?}",
            range.start(),
            range.end()
        )))
    }
}

pub fn run(a: &SoakArgs) -> CliResult {
    let faults = soak::parse_faults(&a.faults).map_err(CliError::usage)?;
    let s = Duration::from_secs;
    let ms = Duration::from_millis;
    let duration = within(a.seconds, "--seconds", ms(1)..=s(7 * 86_400))?;
    let recover = within(a.recover, "--recover", ms(1)..=s(3600))?;
    let every = within(a.every, "--every", ms(10)..=s(3600))?;
    let stop_for = within(a.stop_for, "--stop-for", ms(1)..=s(600))?;
    // Faults at most every `every / 2`: enough restarts for all of them.
    let half = (every.as_millis() as u64 / 2).max(1);
    let most = (duration.as_millis() as u64 / half + 2).min(u32::MAX as u64);
    let mut notes = Vec::new();
    let (g, p) = a.src.load_edited(|v, dir| {
        notes = soak::prepare(v, dir, most as u32).map_err(CliError::usage)?;
        Ok(())
    })?;
    let kill_only = match &a.kill_only {
        None => None,
        Some(list) => {
            let names: Vec<String> = list.split(',').map(|s| s.trim().to_string()).collect();
            for n in &names {
                if !g.processes.iter().any(|p| &p.name == n) {
                    return Err(CliError::usage(format!(
                        "--kill-only {list:?}: graph {} has no process {n:?}; processes: {}",
                        g.name,
                        g.processes
                            .iter()
                            .map(|p| p.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
            }
            Some(names)
        }
    };
    if faults == [Fault::Kill] && kill_only.as_ref().is_some_and(|l| l.is_empty()) {
        return Err(CliError::usage("--kill-only: no process named"));
    }
    let start = a.start.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(1)
    });
    for n in &notes {
        tracing::info!("graph {}: soak: {n}", g.name);
    }
    let opts = soak::Options {
        duration,
        every,
        faults,
        stop_for,
        start,
        kill_only,
        recover,
    };
    let mut sup = super::supervise_options(a.host.clone(), None, None)?;
    sup.stop_timeout = Duration::from_secs(10);
    let mut log = crate::log::Lines::default();
    let r = soak::run(&g, &p, &sup, &opts, &stopping, &mut log).map_err(|e| match e {
        ptmp_graph::Error::Invalid { .. } => CliError::usage(e.to_string()),
        _ => CliError::fail(e.to_string()),
    })?;
    // A closed stdout must not hide the verdict: the exit status below
    // still says whether the soak passed.
    let _ = out!("{}", soak::text(&r.json));
    if a.json {
        let _ = outln!("{}", r.json);
    }
    if r.ok {
        Ok(())
    } else {
        Err(CliError::fail(format!(
            "graph {}: soak failed: {}",
            g.name,
            r.failures.join("; ")
        )))
    }
}
