//! `ptmp graph soak`: a graph run under faults (see ptmp_graph::soak).

use super::GraphSource;
use crate::common::{out, outln, stopping, CliError, CliResult};
use clap::Args;
use ptmp_graph::soak::{self, Fault};
use std::time::Duration;

#[derive(Args)]
pub struct SoakArgs {
    #[command(flatten)]
    src: GraphSource,
    /// The host this is (a graph with several hosts runs one part per host).
    #[arg(long)]
    host: Option<String>,
    /// Inject faults for SECS seconds, then stop the graph cleanly (sooner
    /// if the graph finishes by itself).
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    seconds: f64,
    /// Mean time between faults, milliseconds (each wait is drawn between
    /// half and one and a half of it).
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    every_ms: u64,
    /// Kinds of fault, comma-separated: kill (SIGKILL; the supervisor
    /// restarts the process), stop (SIGSTOP, then SIGCONT).
    #[arg(long, value_name = "LIST", default_value = "kill,stop")]
    faults: String,
    /// How long a stopped process stays stopped, milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 300)]
    stop_ms: u64,
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
    /// messages within SECS seconds, or the soak fails as stalled.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    recover: f64,
    /// Print the report as one JSON line too (the last line of output).
    #[arg(long)]
    json: bool,
}

fn positive(v: f64, flag: &str, max: f64) -> CliResult<Duration> {
    if v.is_finite() && v > 0.0 && v <= max {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(CliError::usage(format!(
            "{flag} {v}: must be more than 0 and at most {max}"
        )))
    }
}

pub fn run(a: &SoakArgs) -> CliResult {
    let faults = soak::parse_faults(&a.faults).map_err(CliError::usage)?;
    let duration = positive(a.seconds, "--seconds", 7.0 * 86400.0)?;
    let recover = positive(a.recover, "--recover", 3600.0)?;
    if !(10..=3_600_000).contains(&a.every_ms) {
        return Err(CliError::usage(format!(
            "--every-ms {}: must be from 10 to 3600000",
            a.every_ms
        )));
    }
    if !(1..=600_000).contains(&a.stop_ms) {
        return Err(CliError::usage(format!(
            "--stop-ms {}: must be from 1 to 600000",
            a.stop_ms
        )));
    }
    // Faults at most every every_ms / 2: enough restarts for all of them.
    let most = (duration.as_millis() as u64 / (a.every_ms / 2).max(1) + 2).min(u32::MAX as u64);
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
        eprintln!("graph {}: soak: {n}", g.name);
    }
    let opts = soak::Options {
        duration,
        every: Duration::from_millis(a.every_ms),
        faults,
        stop_for: Duration::from_millis(a.stop_ms),
        start,
        kill_only,
        recover,
    };
    let mut sup = super::supervise_options(a.host.clone(), None, None)?;
    sup.stop_timeout = Duration::from_secs(10);
    let mut log = std::io::stderr();
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
