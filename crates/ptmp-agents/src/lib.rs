//! # ptmp-agents: PTMP's agents and its `ptmper` runner
//!
//! An *agent* (PTMP calls them actors or proxies) is a thread with input and
//! output sockets that transforms a stream of TPSets: the merges `zipper`
//! and `sorted` ([`merge`]), `window`, `replay`, `czmqat`, `monitor`,
//! `stats`, `stats_graphite`, [`filter`], and `composer`, which builds a
//! list of the others; and the data-flow graph's built-in nodes (`source`,
//! `sink`, `worker`, `proxy`). Each is configured by the same JSON keys as
//! its C++ PTMP counterpart, so PTMP configurations run unmodified; the
//! keys, defaults and where our behaviour differs from the C++ code are
//! listed in `docs/agents.md` and documented in full on each agent's source
//! module.
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
//!   [`Running::stop_in_order`] first tells every agent the pipeline is
//!   stopping ([`Ctl::holding`]: merges stop releasing sets by timeout,
//!   since their upstream is draining), then stops the agents one at a time
//!   in topological order, each drained and flushed before the next.
//!
//! Public surface: what a user names is at the crate root
//! (`ptmp_agents::Thing`): the agent runtime ([`Agent`], [`Ctl`],
//! [`Counts`], [`Report`], [`Running`], [`upstream_first`]), configuration
//! ([`Proxy`], [`Kind`], [`Spec`], [`Cfg`], [`Plugins`], [`PortSpec`]), the
//! socket reads and writes an agent is built from ([`open_io`],
//! [`recv_set`], [`send_set`], [`hold_outputs`] ...), the agents' cores
//! that run without sockets ([`Windower`], [`Pacer`], [`Stats`],
//! [`Moments`], [`graphite_lines`]), the pacing of fast senders
//! ([`pace_until`]), the errors ([`Error`]) and, with the `progress`
//! feature, `progress_bar`. Five modules stay public, as namespaces whose
//! items would collide at the root or read badly there:
//! * [`filter`]: the filter agent, its engines and their [`filter::Engine`]
//!   trait, and the C ABI of engine plugins ([`filter::plugin`]). Its
//!   `Config` would collide with the other configurations at the root.
//! * [`merge`]: the two merges, [`merge::Zipper`] and [`merge::Sorted`], the
//!   [`merge::Merge`] trait they implement, and what it speaks in
//!   ([`merge::Pushed`], [`merge::TardyPolicy`], [`merge::StreamStats`]);
//!   names that say little outside the merges.
//! * [`metrics`]: the periodic metric messages any agent sends when its
//!   config has PTMP's `metrics` key: its own `Config` and `Proto`, the
//!   [`metrics::Meter`] an agent's reads and writes feed, and
//!   [`metrics::wrap`].
//! * [`ptmper`]: the runner of a whole configuration ([`ptmper::RunConfig`],
//!   [`ptmper::run`], [`ptmper::Outcome`]); a bare `run` at the root would
//!   not say what it runs.
//! * [`jsonnet`]: loading configurations written in JSON or Jsonnet
//!   ([`jsonnet::load`], [`jsonnet::Options`], [`jsonnet::parse_json`]),
//!   names as unclear at the root.
//!
//! Every other module is private, its items re-exported above where users
//! need them:
//! * one per agent: `window`, `replay`, `czmqat`, `monitor`, `stats`,
//!   `graphite` (`stats_graphite`), `composer`, and `nodes`, the graph's
//!   built-in nodes. The keys each reads are in `docs/agents.md`; its
//!   validated configuration travels inside [`Spec`].
//! * the runtime: `agent` ([`Agent`], [`Ctl`], [`Counts`], [`Report`]),
//!   `spec` ([`Proxy`], [`Kind`], [`Spec`]) and `cfg` ([`Cfg`]), `run`
//!   ([`Running`]), `stop_order` ([`upstream_first`]), `start`
//!   ([`wait_for_own_subscribers`]), `io` (opening an agent's sockets;
//!   reads and writes that count and honour stop), `ports` ([`PortSpec`]),
//!   `error` ([`Error`]).
//! * `metered`, which wraps an agent with the thread that sends its
//!   metrics; `seen`, telling sets already delivered from new ones by
//!   number; `ofile`, an agent's output file; `progress` (with the feature
//!   of that name), the terminal progress bar the `ptmp` command and the
//!   benchmark suites share.

mod agent;
mod cfg;
mod composer;
mod czmqat;
mod error;
pub mod filter;
mod graphite;
mod io;
pub mod jsonnet;
pub mod merge;
mod metered;
pub mod metrics;
mod monitor;
mod nodes;
mod ofile;
mod ports;
#[cfg(feature = "progress")]
mod progress;
pub mod ptmper;
mod replay;
mod run;
mod seen;
mod spec;
mod start;
mod stats;
mod stop_order;
mod window;

pub use agent::{Agent, Counts, Ctl, Report, DRAIN_MAX, POLL};
pub use cfg::Cfg;
pub use error::{Error, Result};
pub use filter::plugin::Plugins;
pub use graphite::flatten as graphite_lines;
pub use io::{
    hold_outputs, open_io, outputs_held, recv_frames, recv_set, send_frames, send_set, Got,
};
pub use nodes::pace_until;
pub use ports::{Dir, PortSpec};
#[cfg(feature = "progress")]
pub use progress::bar as progress_bar;
pub use replay::{PaceStep, Pacer};
pub use run::Running;
pub use spec::{Kind, Proxy, Spec};
pub use start::wait_for_own_subscribers;
pub use stats::{Moments, Stats};
pub use stop_order::{upstream_first, upstream_order};
pub use window::Windower;
