//! # ptmp-agents: PTMP's agents and its `ptmper` runner
//!
//! An *agent* (PTMP calls them actors or proxies) is a thread with input and
//! output sockets that transforms a stream of TPSets: [`zipper`], [`sorted`],
//! [`window`], [`replay`], [`czmqat`], [`monitor`], [`stats`], [`filter`],
//! and [`composer`], which builds a list of the others; and the data-flow
//! graph's built-in [`nodes`] (source, sink, worker, proxy). Each is configured by
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
//!   [`Running::stop_in_order`] first tells every agent the pipeline is
//!   stopping ([`Ctl::holding`]: merges stop releasing sets by timeout,
//!   since their upstream is draining), then stops the agents one at a time
//!   in topological order, each drained and flushed before the next.
//!
//! Module map:
//! * `agent`: the [`Agent`] trait, run control ([`Ctl`]), live
//!   [`Counts`] and the final [`Report`].
//! * [`io`]: opening an agent's sockets; reads and writes that count and
//!   honour stop.
//! * `spec`: a proxy entry parsed and validated ([`Proxy`], [`Kind`],
//!   [`Spec`]) and built into agents; [`mod@cfg`] reads the keys of its `data`.
//! * `run`: agents running on their threads ([`Running`]).
//! * `stop_order`: stopping upstream first ([`upstream_first`]).
//! * [`merge`]: the merges, [`zipper`] and [`sorted`], and their shared loop.
//! * [`filter`]: the filter agent, its built-in engines, and C [`plugin`]s.
//! * The other agents, one module each: [`window`], [`replay`], [`czmqat`],
//!   [`monitor`], [`stats`], [`graphite`] (`stats_graphite`), [`composer`], and the graph's [`nodes`].
//! * [`metrics`]: the periodic metric messages any agent sends when its
//!   config has PTMP's `metrics` key; `metered` wraps an agent with the
//!   thread that sends them.
//! * [`ptmper`]: the runner of a whole configuration; [`jsonnet`]: loading
//!   configurations written in Jsonnet; `error`: the crate's errors ([`Error`]).
//! * `progress` (with the feature of that name): the terminal progress bar
//!   the `ptmp` command and the benchmark suites share.
//!
//! The modules named in code above (`agent`, `spec`, `run`, `stop_order`,
//! `error`, `seen`) are private: their public items are re-exported at the
//! crate root. Each agent keeps a public module for its configuration.

mod agent;
pub mod cfg;
pub mod composer;
pub mod czmqat;
mod error;
pub mod filter;
pub mod graphite;
pub mod io;
pub mod jsonnet;
pub mod merge;
mod metered;
pub mod metrics;
pub mod monitor;
pub mod nodes;
mod ofile;
mod ports;
#[cfg(feature = "progress")]
pub mod progress;
pub mod ptmper;
pub mod replay;
mod run;
mod seen;
mod spec;
mod start;
pub mod stats;
mod stop_order;
pub mod window;

pub use agent::{Agent, Counts, Ctl, Report, DRAIN_MAX, POLL};
pub use error::{Error, Result};
pub use filter::plugin;
pub use io::{open_io, recv_frames, recv_set, send_frames, send_set, Got};
pub use merge::{sorted, zipper};
pub use ports::{Dir, PortSpec};
pub use run::Running;
pub use spec::{Kind, Proxy, Spec};
pub use start::wait_for_own_subscribers;
pub use stop_order::{upstream_first, upstream_order};
