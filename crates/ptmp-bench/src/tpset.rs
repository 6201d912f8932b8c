//! The messages the suites send, and the pacing of a sender.

use ptmp::TPSet;

/// A TPSet of `ntps` TrigPrims spread over 25 ticks, filled as `ptmp send`
/// fills its first message, so a suite moves the sizes users see.
pub fn tpset(ntps: u32) -> TPSet {
    let mut t = TPSet {
        detid: 1,
        created: ptmp::data::now_us(),
        tspan: Some(25),
        ..TPSet::default()
    };
    if ntps > 0 {
        t.chanbeg = Some(0);
        t.chanend = Some(ntps - 1);
        t.totaladc = Some((0..ntps).map(|c| 100 + c).sum());
    }
    t.tps = (0..ntps)
        .map(|c| ptmp::TrigPrim {
            channel: c,
            tstart: u64::from(c % 25),
            tspan: Some(1),
            adcsum: Some(100 + c),
            adcpeak: Some(10),
            flags: Some(0),
        })
        .collect();
    t
}

/// The sleep-then-spin wait that paces a sender, shared with `ptmp send`.
pub use ptmp_agents::pace_until;
