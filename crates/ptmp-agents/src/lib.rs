//! # ptmp-agents: PTMP's agents and its `ptmper` runner
//!
//! An *agent* (PTMP calls them actors or proxies) is a thread with input and
//! output sockets that transforms a stream of TPSets: [`zipper`], [`sorted`],
//! [`window`], [`replay`], [`czmqat`], [`monitor`], [`stats`], [`filter`],
//! and [`composer`], which builds a list of the others. Each is configured by
//! the same JSON keys as its C++ PTMP counterpart, so PTMP configurations run
//! unmodified; the keys, defaults and where our behaviour differs from the
//! C++ code are documented on each module.
//!
//! Design:
//! * **Validate, then build, then run.** [`Proxy::parse`] checks a whole
//!   configuration (types, ranges, socket configs, filter engines) without
//!   touching the network; [`Proxy::build`] makes the sockets; [`Running`]
//!   runs each agent on its own thread. A config with any error starts
//!   nothing.
//! * **Algorithms apart from sockets.** Each agent's core (the zipper's queue,
//!   the window's binning, the replay's pacing, the stats' integration) is a
//!   plain struct fed TPSets and a clock, so its semantics are unit-tested
//!   with crafted streams and benchmarked without I/O; the agent wraps it
//!   with a [`ptmp::Receiver`] and [`ptmp::Sender`].
//! * **Cooperative stop.** Agents poll their inputs with a short timeout
//!   ([`POLL`]) and check [`Ctl::stopped`]; on stop they flush what they hold
//!   (the zipper's queue, the window's buffer) before returning a [`Report`]
//!   of their counters, so nothing already accepted is silently lost.

pub mod cfg;
pub mod composer;
pub mod czmqat;
pub mod error;
pub mod filter;
pub mod jsonnet;
pub mod monitor;
pub mod plugin;
pub mod ptmper;
pub mod replay;
pub mod sorted;
pub mod stats;
pub mod window;
pub mod zipper;

pub use error::{Error, Result};

use serde_json::Value;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long an agent waits on its input before checking for stop.
pub const POLL: Duration = Duration::from_millis(20);

/// Shared run control: the stop flag and verbosity.
#[derive(Clone, Default)]
pub struct Ctl {
    stop: Arc<AtomicBool>,
    pub verbose: bool,
}

impl Ctl {
    pub fn new(verbose: bool) -> Self {
        Ctl {
            stop: Arc::new(AtomicBool::new(false)),
            verbose,
        }
    }
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed)
    }
}

/// An agent's final counters.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub name: String,
    pub kind: &'static str,
    pub counters: Vec<(String, u64)>,
    /// Free-form lines (per-input statistics and the like).
    pub lines: Vec<String>,
}

impl Report {
    pub fn new(name: &str, kind: &'static str) -> Self {
        Report {
            name: name.to_string(),
            kind,
            ..Default::default()
        }
    }
    pub fn count(mut self, key: &str, n: u64) -> Self {
        self.counters.push((key.to_string(), n));
        self
    }
    pub fn get(&self, key: &str) -> Option<u64> {
        self.counters
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| *v)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name, self.kind)?;
        for (k, v) in &self.counters {
            write!(f, " {k}={v}")?;
        }
        for l in &self.lines {
            write!(f, "\n    {l}")?;
        }
        Ok(())
    }
}

/// A runnable agent: owns its sockets, runs on one thread.
pub trait Agent: Send {
    fn name(&self) -> &str;
    /// Run until `ctl` says stop or the input is exhausted (a file read to
    /// its end, `number` messages copied), flush, and report.
    fn run(&mut self, ctl: &Ctl) -> Result<Report>;
}

/// The agent kinds, by PTMP factory alias.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Zipper,
    Sorted,
    Window,
    Replay,
    Czmqat,
    Monitor,
    Stats,
    Filter,
    Composer,
}

/// Aliases accepted in a proxy's `type`: PTMP's factory aliases and the C++
/// class names.
const ALIASES: &[(&str, Kind)] = &[
    ("zipper", Kind::Zipper),
    ("TPZipper", Kind::Zipper),
    ("sorted", Kind::Sorted),
    ("TPSorted", Kind::Sorted),
    ("window", Kind::Window),
    ("TPWindow", Kind::Window),
    ("replay", Kind::Replay),
    ("TPReplay", Kind::Replay),
    ("czmqat", Kind::Czmqat),
    ("cat", Kind::Czmqat),
    ("TPCat", Kind::Czmqat),
    ("monitor", Kind::Monitor),
    ("TPMonitor", Kind::Monitor),
    ("TPMonitorz", Kind::Monitor),
    ("stats", Kind::Stats),
    ("TPStats", Kind::Stats),
    ("filter", Kind::Filter),
    ("TPFilter", Kind::Filter),
    ("composer", Kind::Composer),
    ("TPComposer", Kind::Composer),
];

impl Kind {
    pub fn parse(s: &str) -> Option<Kind> {
        ALIASES.iter().find(|(a, _)| *a == s).map(|(_, k)| *k)
    }
    pub fn name(self) -> &'static str {
        ALIASES
            .iter()
            .find(|(_, k)| *k == self)
            .map(|(a, _)| *a)
            .unwrap_or("?")
    }
    pub fn known() -> String {
        let mut v: Vec<&str> = ALIASES
            .iter()
            .map(|(a, _)| *a)
            .filter(|a| a.chars().next().is_some_and(|c| c.is_lowercase()))
            .collect();
        v.dedup();
        v.join(", ")
    }
}

/// A validated agent configuration.
#[derive(Debug, Clone)]
pub enum Spec {
    Zipper(zipper::Config),
    Sorted(sorted::Config),
    Window(window::Config),
    Replay(replay::Config),
    Czmqat(czmqat::Config),
    Monitor(monitor::Config),
    Stats(stats::Config),
    Filter(filter::Config),
    Composer(Vec<Proxy>),
}

/// One entry of `proxies`: `{name, type, data}`, validated.
#[derive(Debug, Clone)]
pub struct Proxy {
    pub name: String,
    pub kind: Kind,
    pub spec: Spec,
    /// Keys in `data` the agent does not use (reported with `verbose`).
    pub unread: Vec<String>,
}

impl Proxy {
    /// Validate `{name, type, data}`; `at` says where it sits
    /// (e.g. `proxies[3]`) for errors when it has no name.
    pub fn parse(at: &str, v: &Value, plugins: &plugin::Plugins) -> Result<Proxy> {
        let obj = v.as_object().ok_or_else(|| {
            Error::config(
                at,
                at,
                v.to_string(),
                "a proxy must be an object {name, type, data}",
            )
        })?;
        let name = match obj.get("name") {
            None => at.to_string(),
            Some(Value::String(s)) => s.clone(),
            Some(o) => return Err(Error::config(at, "name", o.to_string(), "must be a string")),
        };
        let tname = match obj.get("type") {
            Some(Value::String(s)) => s.as_str(),
            None => {
                return Err(Error::config(
                    &name,
                    "type",
                    "(missing)",
                    "a proxy needs a type",
                ))
            }
            Some(o) => {
                return Err(Error::config(
                    &name,
                    "type",
                    o.to_string(),
                    "must be a string",
                ))
            }
        };
        let kind = Kind::parse(tname).ok_or_else(|| {
            Error::config(
                &name,
                "type",
                format!("{tname:?}"),
                format!("unknown agent type; known: {}", Kind::known()),
            )
        })?;
        let empty = Value::Object(Default::default());
        let data = obj.get("data").unwrap_or(&empty);
        Self::parse_data(&name, kind, data, plugins)
    }

    /// Validate an agent's `data` given its kind.
    pub fn parse_data(
        name: &str,
        kind: Kind,
        data: &Value,
        plugins: &plugin::Plugins,
    ) -> Result<Proxy> {
        let c = cfg::Cfg::new(name, data)?;
        // The thread name PTMP reads from data.name; we only use it in logs.
        let _ = c.get("name");
        let spec = match kind {
            Kind::Zipper => Spec::Zipper(zipper::Config::parse(&c)?),
            Kind::Sorted => Spec::Sorted(sorted::Config::parse(&c)?),
            Kind::Window => Spec::Window(window::Config::parse(&c)?),
            Kind::Replay => Spec::Replay(replay::Config::parse(&c)?),
            Kind::Czmqat => Spec::Czmqat(czmqat::Config::parse(&c)?),
            Kind::Monitor => Spec::Monitor(monitor::Config::parse(&c)?),
            Kind::Stats => Spec::Stats(stats::Config::parse(&c)?),
            Kind::Filter => Spec::Filter(filter::Config::parse(&c, data, plugins)?),
            Kind::Composer => Spec::Composer(composer::parse(&c, plugins)?),
        };
        Ok(Proxy {
            name: name.to_string(),
            kind,
            spec,
            unread: c.unread(),
        })
    }

    /// Make the sockets (and filter engines) of this agent, or of every
    /// agent of a composer.
    pub fn build(&self) -> Result<Vec<Box<dyn Agent>>> {
        let n = self.name.clone();
        let one: Box<dyn Agent> = match &self.spec {
            Spec::Zipper(c) => Box::new(zipper::ZipperAgent::new(n, c)?),
            Spec::Sorted(c) => Box::new(sorted::SortedAgent::new(n, c)?),
            Spec::Window(c) => Box::new(window::WindowAgent::new(n, c)?),
            Spec::Replay(c) => Box::new(replay::ReplayAgent::new(n, c)?),
            Spec::Czmqat(c) => Box::new(czmqat::CatAgent::new(n, c)?),
            Spec::Monitor(c) => Box::new(monitor::MonitorAgent::new(n, c)?),
            Spec::Stats(c) => Box::new(stats::StatsAgent::new(n, c)?),
            Spec::Filter(c) => Box::new(filter::FilterAgent::new(n, c)?),
            Spec::Composer(list) => {
                let mut all = Vec::new();
                for p in list {
                    all.extend(p.build()?);
                }
                return Ok(all);
            }
        };
        Ok(vec![one])
    }
}

/// Agents running, one thread each.
pub struct Running {
    ctl: Ctl,
    threads: Vec<(String, JoinHandle<Result<Report>>)>,
    done: Vec<(String, Result<Report>)>,
}

impl Running {
    /// Start every agent on its own named thread.
    pub fn start(agents: Vec<Box<dyn Agent>>, ctl: &Ctl) -> std::io::Result<Running> {
        let mut threads = Vec::new();
        let mut r = Running {
            ctl: ctl.clone(),
            threads: Vec::new(),
            done: Vec::new(),
        };
        for mut a in agents {
            let name = a.name().to_string();
            let c = ctl.clone();
            let h = std::thread::Builder::new()
                .name(name.chars().take(15).collect())
                .spawn(move || {
                    let r = a.run(&c);
                    drop(a);
                    r
                });
            match h {
                Ok(h) => threads.push((name, h)),
                Err(e) => {
                    r.threads = threads;
                    r.stop();
                    return Err(e);
                }
            }
        }
        r.threads = threads;
        Ok(r)
    }

    /// Number of agents still running.
    pub fn alive(&self) -> usize {
        self.threads
            .iter()
            .filter(|(_, h)| !h.is_finished())
            .count()
    }

    /// True when some agent has ended while others still run (an agent
    /// only ends early by itself when its input is exhausted or it failed;
    /// the runner then stops the rest so a failure is not hidden).
    pub fn any_failed_early(&mut self) -> bool {
        let mut failed = false;
        let mut i = 0;
        while i < self.threads.len() {
            if self.threads[i].1.is_finished() {
                let (n, h) = self.threads.remove(i);
                let r = h
                    .join()
                    .unwrap_or_else(|_| Err(Error::run(&n, "the agent's thread panicked")));
                failed |= r.is_err();
                self.done.push((n, r));
            } else {
                i += 1;
            }
        }
        failed
    }

    /// Ask every agent to stop, wait for them, and return their reports
    /// (in start order).
    pub fn stop(self) -> Vec<(String, Result<Report>)> {
        self.ctl.stop();
        self.join()
    }

    /// Wait for every agent to end by itself.
    pub fn join(self) -> Vec<(String, Result<Report>)> {
        let mut out = self.done;
        out.extend(self.threads.into_iter().map(|(n, h)| {
            let r = h
                .join()
                .unwrap_or_else(|_| Err(Error::run(&n, "the agent's thread panicked")));
            (n, r)
        }));
        out
    }
}
