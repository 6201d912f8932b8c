//! `filter` (PTMP's TPFilter): runs an *engine* on each input TPSet; the
//! engine turns it into zero or more output TPSets (trigger candidates,
//! decisions ...).
//!
//! Keys: `input`, `output` (sockets, required), `engine` (the engine's name;
//! PTMP's generated configs call it `method`, which is accepted too),
//! `detid` (default -1: the first input's), `keep_detid` (default false;
//! ptmp's own: true leaves each output's detid as the engine made it, so a
//! pass-through filter on a merged stream keeps its links told apart). The
//! whole `data` object is handed to the engine, which reads its own keys.
//!
//! As PTMP's later TPFilter: input sets with no TrigPrims are counted and
//! not given to the engine; the agent stamps every output, whatever the
//! engine put there: `count` numbered from 0, `detid` the configured one or
//! else the `detid` of the first input set with TrigPrims (one detid for the
//! whole output stream, even when the input merges several links), and
//! `created` the time it is sent.
//!
//! Built-in engines:
//! * `passthrough` (aliases `pass` and PTMP's `dummy_filter`): outputs each
//!   input unchanged.
//! * `adjacency` (aliases `pdune_adjacency_tc`, the name of the engine of
//!   PTMP's `ptmp-tcs` plugin, and `pdune-adjacency-tc`): a channel-adjacency
//!   trigger-candidate finder. It keeps the idea of PTMP's engine (runs of
//!   neighbouring channels) but not its details: PTMP's gathers input sets
//!   over 2500 ticks and emits one summary per gathering. Within each input
//!   set (a time window, as `window` makes), TPs are grouped into runs of
//!   channels where neighbours differ by at most `max_gap` + 1 (default
//!   `max_gap` 1); a run touching at least `adjacency` distinct channels
//!   (default 5) with an ADC sum of at least `min_adcsum` (default 0) becomes
//!   one output TPSet holding its TPs, with `tstart`/`tspan` covering them,
//!   `chanbeg`/`chanend` its channel range, `totaladc` its ADC sum, the input's
//!   `detid`, and `count` numbering the candidates from 0.
//!
//! PTMP's trigger-decision engine, `pdune_adjacency_td`, is not built in: a
//! configuration naming it is refused, saying so, unless a plugin library
//! provides an engine of that name.
//!
//! Plugin engines come through the C ABI of [`plugin`].

mod agent;
mod engines;
pub mod plugin;

pub use agent::{Config, FilterAgent};
pub use engines::{Adjacency, Passthrough};

use ptmp::TPSet;

/// A filter engine: input TPSet in, output TPSets appended to `out`.
///
/// Not `Send`: a filter agent makes its engine on its own thread and keeps
/// it there (a plugin engine must not change threads, see [`plugin`]).
pub trait Engine {
    /// Turn `input` (a set with at least one TrigPrim) into zero or more
    /// sets appended to `out`; an `Err` is counted by the agent, which goes
    /// on with the next input.
    fn process(&mut self, input: &TPSet, out: &mut Vec<TPSet>) -> std::result::Result<(), String>;
}
