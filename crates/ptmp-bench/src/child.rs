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
    /// The subscriber of the iceoryx2 two-process rate row of `bench peers`
    /// (internal).
    #[cfg(feature = "iceoryx2")]
    #[command(hide = true, name = "iox2-sub")]
    Iox2Sub(crate::peers::iceoryx2::SubArgs),
    /// The echo of the iceoryx2 round trips of `bench peers` (internal).
    #[cfg(feature = "iceoryx2")]
    #[command(hide = true, name = "iox2-echo")]
    Iox2Echo(crate::peers::iceoryx2::EchoArgs),
}

/// Run one side, printing its result line on stdout for the parent.
pub fn run(c: &ChildCmd) -> BenchResult {
    match c {
        ChildCmd::TputChild(a) => crate::throughput::child(a),
        ChildCmd::BenchChild(a) => crate::baseline::child(a),
        ChildCmd::LatEcho(a) => crate::latency::echo_child(a),
        ChildCmd::RingReader(a) => crate::ring::processes::reader_child(a),
        #[cfg(feature = "iceoryx2")]
        ChildCmd::Iox2Sub(a) => crate::peers::iceoryx2::sub_child(a),
        #[cfg(feature = "iceoryx2")]
        ChildCmd::Iox2Echo(a) => crate::peers::iceoryx2::echo_child(a),
    }
}
