//! `filter` (PTMP's TPFilter): runs an *engine* on each input TPSet; the
//! engine turns it into zero or more output TPSets (trigger candidates,
//! decisions ...).
//!
//! Keys: `input`, `output` (sockets, required), `engine` (the engine's name;
//! PTMP's generated configs call it `method`, which is accepted too),
//! `detid` (default -1: keep the engine's). The whole `data` object is
//! handed to the engine, which reads its own keys.
//!
//! As PTMP's later TPFilter: input sets with no TrigPrims are counted and
//! not given to the engine; outputs get `count` numbered from 0 by the
//! agent, `detid` when configured, and `created` = now when the engine left
//! it 0.
//!
//! Built-in engines:
//! * `passthrough` (alias `pass`): outputs each input unchanged.
//! * `adjacency` (alias `pdune-adjacency-tc`, the engine of PTMP's `ptmp-tcs`
//!   plugin): a channel-adjacency trigger-candidate finder. Within each input
//!   set (a time window, as `window` makes), TPs are grouped into runs of
//!   channels where neighbours differ by at most `max_gap` + 1 (default
//!   `max_gap` 1); a run touching at least `adjacency` distinct channels
//!   (default 5) with an ADC sum of at least `min_adcsum` (default 0) becomes
//!   one output TPSet holding its TPs, with `tstart`/`tspan` covering them,
//!   `chanbeg`/`chanend` its channel range, `totaladc` its ADC sum, the input's
//!   `detid`, and `count` numbering the candidates from 0.
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
