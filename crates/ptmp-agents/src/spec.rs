//! The front of configuration: a proxy entry's `{name, type, data}`
//! parsed into a validated [`Proxy`] of some [`Kind`], and built into
//! runnable agents.

use crate::agent::Agent;
use crate::cfg;
use crate::error::{Error, Result};
use crate::filter::{self, plugin};
use crate::merge::{sorted, zipper};
use crate::{composer, czmqat, graphite, metrics, monitor, nodes, replay, stats, window};
use ptmp::SocketConfig;
use serde_json::Value;

/// The agent kinds, by PTMP factory alias.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `zipper`, `TPZipper`.
    Zipper,
    /// `sorted`, `TPSorted`.
    Sorted,
    /// `window`, `TPWindow`.
    Window,
    /// `replay`, `TPReplay`.
    Replay,
    /// `czmqat`, `cat`, `TPCat`.
    Czmqat,
    /// `monitor`, `TPMonitor`, `TPMonitorz`.
    Monitor,
    /// `stats`, `TPStats`.
    Stats,
    /// `stats_graphite`, `TPStatsGraphite`.
    StatsGraphite,
    /// `filter`, `TPFilter`.
    Filter,
    /// `composer`, `TPComposer`: a list of other agents.
    Composer,
    /// `source`, a graph node.
    Source,
    /// `sink`, a graph node.
    Sink,
    /// `worker`, a graph node.
    Worker,
    /// `proxy`, a worker with no work.
    Proxy,
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
    ("stats_graphite", Kind::StatsGraphite),
    ("TPStatsGraphite", Kind::StatsGraphite),
    ("filter", Kind::Filter),
    ("TPFilter", Kind::Filter),
    ("composer", Kind::Composer),
    ("TPComposer", Kind::Composer),
    ("source", Kind::Source),
    ("sink", Kind::Sink),
    ("worker", Kind::Worker),
    ("proxy", Kind::Proxy),
];

impl Kind {
    /// The kind a proxy's `type` names, if any.
    pub fn parse(s: &str) -> Option<Kind> {
        ALIASES.iter().find(|(a, _)| *a == s).map(|(_, k)| *k)
    }
    /// The kind's lower-case alias, as reports show it.
    pub fn name(self) -> &'static str {
        ALIASES
            .iter()
            .find(|(_, k)| *k == self)
            .map(|(a, _)| *a)
            .unwrap_or("?")
    }
    /// Whether an agent of this kind hands each set on before it takes
    /// the next and then commits its place in its `shm://` inputs (the
    /// graph nodes `worker`, `proxy` and `sink`). Only such an input may
    /// have a durable reader identity: others hold sets (a window, a
    /// merge), so their writer would wait for commits that never come.
    pub fn commits_inputs(self) -> bool {
        matches!(self, Kind::Worker | Kind::Proxy | Kind::Sink)
    }
    /// Whether an agent of this kind passes each set on as it came, with
    /// its number (`worker`, `proxy`): downstream of it, a set's number
    /// still tells a repeat from a new set.
    pub fn passes_sets_whole(self) -> bool {
        matches!(self, Kind::Worker | Kind::Proxy)
    }
    /// The lower-case aliases, comma separated, for error messages.
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
    /// A `zipper`.
    Zipper(zipper::Config),
    /// A `sorted`.
    Sorted(sorted::Config),
    /// A `window`.
    Window(window::Config),
    /// A `replay`.
    Replay(replay::Config),
    /// A `czmqat`.
    Czmqat(czmqat::Config),
    /// A `monitor`.
    Monitor(monitor::Config),
    /// A `stats`.
    Stats(stats::Config),
    /// A `stats_graphite`.
    StatsGraphite(graphite::Config),
    /// A `filter`.
    Filter(filter::Config),
    /// A `composer`: its agents, each validated.
    Composer(Vec<Proxy>),
    /// A `source`.
    Source(nodes::SourceConfig),
    /// A `sink`.
    Sink(nodes::SinkConfig),
    /// A worker, or a proxy (a worker with no work).
    Worker(nodes::WorkerConfig),
}

/// One entry of `proxies`: `{name, type, data}`, validated.
#[derive(Debug, Clone)]
pub struct Proxy {
    /// The agent's name (its place in `proxies` when the config gives none).
    pub name: String,
    /// The kind its `type` names.
    pub kind: Kind,
    /// Its validated `data`.
    pub spec: Spec,
    /// Keys in `data` the agent does not use (reported with `verbose`).
    pub unread: Vec<String>,
    /// Things PTMP runs but that likely are not what the user meant;
    /// `ptmp run` prints them.
    pub warnings: Vec<String>,
    /// The agent's periodic metric messages (`metrics`), if configured.
    pub metrics: Option<metrics::Config>,
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
            Kind::StatsGraphite => Spec::StatsGraphite(graphite::Config::parse(&c)?),
            Kind::Filter => Spec::Filter(filter::Config::parse(&c, data, plugins)?),
            Kind::Composer => Spec::Composer(composer::parse(&c, plugins)?),
            Kind::Source => Spec::Source(nodes::SourceConfig::parse(&c)?),
            Kind::Sink => Spec::Sink(nodes::SinkConfig::parse(&c)?),
            Kind::Worker => Spec::Worker(nodes::WorkerConfig::parse(&c, false)?),
            Kind::Proxy => Spec::Worker(nodes::WorkerConfig::parse(&c, true)?),
        };
        let warnings = match &spec {
            Spec::StatsGraphite(g) => g.warnings(),
            Spec::Monitor(m) => m.warnings.clone(),
            Spec::Stats(s) => s.warnings.clone(),
            _ => vec![],
        };
        // A composer is a list, not an agent: its own data has no metrics.
        let metrics = match kind {
            Kind::Composer => None,
            _ => metrics::Config::parse(&c)?,
        };
        c.refuse_typos()?;
        // A filter hands its data to its plugin, which reads keys of its
        // own: those are not unused.
        let unread = match kind {
            Kind::Filter => vec![],
            _ => c.unread(),
        };
        Ok(Proxy {
            name: name.to_string(),
            kind,
            spec,
            unread,
            warnings,
            metrics,
        })
    }

    /// The agents this proxy makes: itself, or a composer's, flattened, in
    /// the order [`Proxy::build`] makes them.
    pub fn leaves(&self) -> Vec<&Proxy> {
        match &self.spec {
            Spec::Composer(list) => list.iter().flat_map(|p| p.leaves()).collect(),
            _ => vec![self],
        }
    }

    /// The sockets this agent reads and writes (empty for a composer).
    pub fn io(&self) -> (Vec<&SocketConfig>, Vec<&SocketConfig>) {
        match &self.spec {
            Spec::Zipper(c) => (vec![&c.input], vec![&c.output]),
            Spec::Sorted(c) => (vec![&c.input], vec![&c.output]),
            Spec::Window(c) => (vec![&c.input], vec![&c.output]),
            Spec::Replay(c) => (vec![&c.input], vec![&c.output]),
            Spec::Czmqat(c) => (c.input.iter().collect(), c.output.iter().collect()),
            Spec::Monitor(c) => (
                c.taps.iter().map(|t| &t.input).collect(),
                c.taps.iter().map(|t| &t.output).collect(),
            ),
            Spec::Stats(c) => (vec![&c.input], vec![&c.output]),
            Spec::StatsGraphite(c) => (vec![&c.input], vec![&c.output]),
            Spec::Filter(c) => (vec![&c.input], vec![&c.output]),
            Spec::Composer(_) => (vec![], vec![]),
            Spec::Source(c) => (c.done.iter().collect(), vec![&c.output]),
            Spec::Sink(c) => (vec![&c.input], c.done.iter().collect()),
            Spec::Worker(c) => (vec![&c.input], vec![&c.output]),
        }
    }

    /// The sockets this agent writes, to change before it is built (empty
    /// for a composer: see [`Proxy::leaves_mut`]).
    pub fn outputs_mut(&mut self) -> Vec<&mut SocketConfig> {
        match &mut self.spec {
            Spec::Zipper(c) => vec![&mut c.output],
            Spec::Sorted(c) => vec![&mut c.output],
            Spec::Window(c) => vec![&mut c.output],
            Spec::Replay(c) => vec![&mut c.output],
            Spec::Czmqat(c) => c.output.iter_mut().collect(),
            Spec::Monitor(c) => c.taps.iter_mut().map(|t| &mut t.output).collect(),
            Spec::Stats(c) => vec![&mut c.output],
            Spec::StatsGraphite(c) => vec![&mut c.output],
            Spec::Filter(c) => vec![&mut c.output],
            Spec::Composer(_) => vec![],
            Spec::Source(c) => vec![&mut c.output],
            Spec::Sink(c) => c.done.iter_mut().collect(),
            Spec::Worker(c) => vec![&mut c.output],
        }
    }

    /// [`Proxy::leaves`], to change before they are built.
    pub fn leaves_mut(&mut self) -> Vec<&mut Proxy> {
        if matches!(self.spec, Spec::Composer(_)) {
            let Spec::Composer(list) = &mut self.spec else {
                unreachable!("checked just above")
            };
            return list.iter_mut().flat_map(|p| p.leaves_mut()).collect();
        }
        vec![self]
    }

    /// Whether this agent ends by itself: a source or sink with a `count`,
    /// a czmqat reading a file or copying a `number` (a composer: when all
    /// of its agents do).
    pub fn finite(&self) -> bool {
        match &self.spec {
            Spec::Source(c) => c.count > 0,
            Spec::Sink(c) => c.count.is_some(),
            Spec::Czmqat(c) => c.ifile.is_some() || c.number.is_some(),
            Spec::Composer(list) => !list.is_empty() && list.iter().all(|p| p.finite()),
            _ => false,
        }
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
            Spec::StatsGraphite(c) => Box::new(graphite::GraphiteAgent::new(n, c)?),
            Spec::Filter(c) => Box::new(filter::FilterAgent::new(n, c)?),
            Spec::Source(c) => Box::new(nodes::SourceAgent::new(n, c)?),
            Spec::Sink(c) => Box::new(nodes::SinkAgent::new(n, c)?),
            Spec::Worker(c) => {
                let kind = if self.kind == Kind::Proxy {
                    "proxy"
                } else {
                    "worker"
                };
                Box::new(nodes::WorkerAgent::new(n, kind, c)?)
            }
            Spec::Composer(list) => {
                let mut all = Vec::new();
                for p in list {
                    all.extend(p.build()?);
                }
                return Ok(all);
            }
        };
        Ok(vec![match &self.metrics {
            Some(m) => Box::new(crate::metered::Metered::new(one, m)?),
            None => one,
        }])
    }
}
