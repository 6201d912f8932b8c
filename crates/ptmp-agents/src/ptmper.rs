//! The `ptmper` runner behind `ptmp run FILE`: validate a whole
//! configuration, build its agents, run them for `ttl`, stop them cleanly.
//!
//! Top-level keys (PTMP's, with its units):
//! * `proxies`: the agents, each `{name, type, data}` (required);
//! * `plugins`: libraries of filter engines (see [`crate::filter::plugin`]);
//! * `ttl`: seconds to run; negative (the default -1) runs until SIGINT or
//!   SIGTERM, or until every agent has ended by itself (file replays done);
//!   0 stops at once, as the C++ ptmper does;
//! * `snooze`: milliseconds between checks (default 1000; with `verbose`
//!   each check prints `tick N`);
//! * `pause`: seconds to wait before building the agents;
//! * `reprieve`: milliseconds the agents keep running after `ttl` expires,
//!   before they are stopped (the C++ code sleeps milliseconds here, though
//!   its docs say seconds; we follow the code so configs behave the same);
//! * `verbose`: non-zero for ticks, unused-key notes and per-agent detail;
//! * `name`: a label for the log.
//!
//! Stopping (see [`crate::Running::stop_in_order`]): every agent is first
//! told the pipeline is stopping, so merges stop releasing sets by timeout;
//! then the agents are stopped one at a time, sources first and each after
//! everything feeding it ([`crate::upstream_first`]); each drains its input,
//! flushes what it holds (the window its last windows, the zipper its queue
//! in order) and returns its counters, which are printed.

use crate::cfg::Cfg;
use crate::composer;
use crate::error::{Error, Result};
use crate::filter::plugin::Plugins;
use crate::{Ctl, Proxy, Report, Running};
use serde_json::Value;
use std::io::Write;
use std::time::{Duration, Instant};

/// A validated ptmper configuration.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// A label for the log (`name`).
    pub name: String,
    /// How long to run (`ttl`); `None` runs until a signal or until every
    /// agent ends by itself.
    pub ttl: Option<Duration>,
    /// Time between checks (`snooze`).
    pub snooze: Duration,
    /// Time to wait before building the agents (`pause`).
    pub pause: Duration,
    /// Time the agents keep running after `ttl` expires (`reprieve`).
    pub reprieve: Duration,
    /// Print ticks, unused-key notes and per-agent detail.
    pub verbose: bool,
    /// Plugin libraries to load, as named (`plugins`).
    pub plugins: Vec<String>,
    /// The agents, validated, in configuration order.
    pub proxies: Vec<Proxy>,
}

const TOP_KEYS: &[&str] = &[
    "name",
    "ttl",
    "snooze",
    "pause",
    "reprieve",
    "verbose",
    "plugins",
    "proxies",
    // Read by the runner before the agents start (presence on the network).
    "discovery",
];

impl RunConfig {
    /// Validate everything (types, ranges, sockets, engines) without
    /// starting anything.
    pub fn parse(v: &Value) -> Result<RunConfig> {
        let c = Cfg::new("(top level)", v)?;
        let name = c.str_opt("name")?.unwrap_or("ptmper").to_string();
        let ttl = c.num_or("ttl", -1.0, f64::MIN, 1.0e9)?;
        let snooze = c.int_or("snooze", 1000, 1, 3_600_000)? as u64;
        let pause = c.num_or("pause", 0.0, 0.0, 86400.0)?;
        let reprieve = c.int_or("reprieve", 0, 0, 3_600_000)? as u64;
        let verbose = match c.get("verbose") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => c.int_or("verbose", 0, 0, i64::MAX)? > 0,
        };
        let mut plugins = Vec::new();
        if let Some(list) = c.array_opt("plugins")? {
            for (i, p) in list.iter().enumerate() {
                match p.as_str() {
                    Some(s) => plugins.push(s.to_string()),
                    None => {
                        return Err(c.err(
                            &format!("plugins[{i}]"),
                            p.to_string(),
                            "must be a string",
                        ))
                    }
                }
            }
        }
        let loaded = Plugins::load(&plugins)?;
        let list = c.array_opt("proxies")?.ok_or_else(|| {
            c.err(
                "proxies",
                "(missing)",
                "nothing to run: give a proxies list",
            )
        })?;
        let proxies = composer::parse_list("", list, &loaded)?;
        Ok(RunConfig {
            name,
            ttl: (ttl >= 0.0).then(|| Duration::from_secs_f64(ttl)),
            snooze: Duration::from_millis(snooze),
            pause: Duration::from_secs_f64(pause),
            reprieve: Duration::from_millis(reprieve),
            verbose,
            plugins,
            proxies,
        })
    }

    /// Top-level and per-agent keys that nothing reads (likely typos).
    pub fn unused_keys(&self, v: &Value) -> Vec<String> {
        let mut out: Vec<String> = v
            .as_object()
            .map(|o| {
                o.keys()
                    .filter(|k| !TOP_KEYS.contains(&k.as_str()))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        fn walk(p: &Proxy, out: &mut Vec<String>) {
            out.extend(p.unread.iter().map(|k| format!("{}.{k}", p.name)));
            if let crate::Spec::Composer(list) = &p.spec {
                for q in list {
                    walk(q, out);
                }
            }
        }
        for p in &self.proxies {
            walk(p, &mut out);
        }
        out
    }
}

/// How a run ended.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Every agent's final report, in start order.
    pub reports: Vec<Report>,
    /// Agents that failed, with why.
    pub failures: Vec<Error>,
    /// Why the run stopped.
    pub reason: String,
}

/// Run a validated configuration. `stop_requested` is polled (a signal
/// flag); `log` receives progress lines.
pub fn run(
    rc: &RunConfig,
    stop_requested: &dyn Fn() -> bool,
    log: &mut dyn Write,
) -> Result<Outcome> {
    let ctl = Ctl::new(rc.verbose);
    let t0 = Instant::now();
    while t0.elapsed() < rc.pause && !stop_requested() {
        std::thread::sleep(Duration::from_millis(10).min(rc.pause));
    }
    let mut proxies = rc.proxies.clone();
    let waiting = crate::start::wait_for_own_subscribers(&mut proxies);
    if waiting > 0 {
        let _ = writeln!(
            log,
            "{}: {waiting} PUB output(s) wait for their subscribers in this run before the first send",
            rc.name
        );
    }
    let mut agents = Vec::new();
    for p in &proxies {
        agents.extend(p.build()?);
    }
    let leaves: Vec<&Proxy> = proxies.iter().flat_map(|p| p.leaves()).collect();
    let order = crate::upstream_first(&leaves);
    let n = agents.len();
    let mut running = Running::start(agents, &ctl)
        .map_err(|e| Error::run(&rc.name, format!("cannot start threads: {e}")))?;
    let _ = writeln!(log, "{}: {n} agents running", rc.name);
    let start = Instant::now();
    let mut next_tick = start + rc.snooze;
    let mut tick = 0u64;
    let step = Duration::from_millis(10);
    let mut expired = false;
    let reason = loop {
        if stop_requested() {
            break "interrupted".to_string();
        }
        if running.alive() == 0 {
            break "every agent ended".to_string();
        }
        if running.any_failed_early() {
            break "an agent failed".to_string();
        }
        let now = Instant::now();
        if let Some(ttl) = rc.ttl {
            if !expired && now.duration_since(start) >= ttl {
                expired = true;
            }
            if expired && now.duration_since(start) >= ttl + rc.reprieve {
                break format!("ttl of {} s reached", ttl.as_secs_f64());
            }
        }
        if now >= next_tick {
            tick += 1;
            next_tick += rc.snooze;
            if rc.verbose {
                let _ = writeln!(log, "{}: tick {tick}", rc.name);
            }
        }
        std::thread::sleep(step);
    };
    let _ = writeln!(log, "{}: stopping: {reason}", rc.name);
    let mut out = Outcome {
        reason,
        ..Default::default()
    };
    for (_, r) in running.stop_in_order(&order) {
        match r {
            Ok(rep) => out.reports.push(rep),
            Err(e) => out.failures.push(e),
        }
    }
    Ok(out)
}
