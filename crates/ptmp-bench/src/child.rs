//! The hidden subcommands a two-process suite runs its sides with: the
//! binary that runs a suite (`ptmp`, or this crate's `ptmp-bench`) is started
//! again with one of these.

use crate::error::BenchResult;
use clap::Subcommand;

/// One side of a two-process row; the suites start these, users do not.
#[derive(Debug, Subcommand)]
pub enum ChildCmd {
    /// One side of a `bench throughput` row (internal).
    #[command(hide = true, name = "tput-child")]
    TputChild(crate::throughput::ChildArgs),
    /// One side of a `bench baseline` run (internal).
    #[command(hide = true, name = "bench-child")]
    BenchChild(crate::baseline::ChildArgs),
    /// The echo of a `bench latency --round-trip --processes` row (internal).
    #[command(hide = true, name = "lat-echo")]
    LatEcho(crate::latency::EchoArgs),
    /// The reader of a two-process ring run of `bench peers` (internal).
    #[command(hide = true, name = "ring-reader")]
    RingReader(crate::ring::processes::ReaderArgs),
}

/// Run one side, printing its result line on stdout for the parent.
pub fn run(c: &ChildCmd) -> BenchResult {
    match c {
        ChildCmd::TputChild(a) => crate::throughput::child(a),
        ChildCmd::BenchChild(a) => crate::baseline::child(a),
        ChildCmd::LatEcho(a) => crate::latency::echo_child(a),
        ChildCmd::RingReader(a) => crate::ring::processes::reader_child(a),
    }
}
