//! `ptmp sendrecv`: both ends in one process (PTMP's check_sendrecv), and
//! the same run over raw libzmq moving identical frames, for comparison. The
//! run itself is the benchmark crate's, shared with `ptmp bench tuning`.

use crate::common::{outln, CliError, CliResult};
use ptmp_bench::sendrecv::{run_ptmp, run_raw, Pattern, TransportArg};

#[derive(Debug, clap::Args)]
pub struct SendRecvArgs {
    /// Number of TPSets.
    #[arg(short = 'n', long = "ntpsets", default_value_t = 1_000_000)]
    pub count: u64,
    #[arg(long, value_enum, default_value = "pushpull")]
    pub pattern: Pattern,
    #[arg(long, value_enum, default_value = "inproc")]
    pub transport: TransportArg,
    /// TrigPrims per TPSet.
    #[arg(short = 'N', long = "ntps", default_value_t = 0)]
    pub ntps: u32,
    /// Receive high-water mark.
    #[arg(long, default_value_t = 1000)]
    pub hwm: i32,
    /// Move the identical frames with raw libzmq instead of ptmp (baseline).
    #[arg(long)]
    pub raw: bool,
    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &SendRecvArgs) -> CliResult {
    if a.hwm < 0 {
        return Err(CliError::usage(format!(
            "--hwm {}: must be 0 or more",
            a.hwm
        )));
    }
    let o = if a.raw {
        run_raw(a.pattern, a.transport, a.count, a.ntps, a.hwm)?
    } else {
        run_ptmp(a.pattern, a.transport, a.count, a.ntps, a.hwm)?
    };
    if a.json {
        outln!("{}", o.to_json())?;
    } else {
        outln!(
            "{} {} {}: {} of {} TPSets ({} TPs each) in {:.3} s: {:.0} Hz, lost {}, errors {}",
            o.impl_name,
            o.pattern.name(),
            o.transport.name(),
            o.received,
            o.sent,
            o.ntps,
            o.elapsed_s,
            o.rate_hz(),
            o.lost(),
            o.errors
        )?;
    }
    if o.received == 0 {
        return Err(CliError::fail("nothing was received"));
    }
    if o.lost() > 0 {
        if matches!(a.pattern, Pattern::Pubsub) {
            // Not a fault: PUB/SUB's rule, said so that a low count is not
            // taken for one (PTMP's check_sendrecv says nothing).
            tracing::info!(
                "note: lost {} of {}: a PUB drops what a subscriber's queue cannot take \
                 (its high-water mark, --hwm {}); PUSH/PULL or PAIR wait instead and lose nothing",
                o.lost(),
                o.sent,
                a.hwm
            );
        } else if a.raw {
            tracing::info!(
                "note: lost {} of {}: raw libzmq has no drain before its sockets close, \
                 so a fast end can lose the tail (ptmp's sender drains first)",
                o.lost(),
                o.sent
            );
        } else {
            return Err(CliError::fail(format!(
                "lost {} of {} TPSets over {} {}, which waits and should lose nothing",
                o.lost(),
                o.sent,
                o.pattern.name(),
                o.transport.name()
            )));
        }
    }
    Ok(())
}
