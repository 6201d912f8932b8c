//! The messages the suites send, and the pacing of a sender.

use ptmp::TPSet;
use std::time::{Duration, Instant};

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

/// Wait until `due`: sleep while far, then spin for precision.
pub fn pace_until(due: Instant) {
    loop {
        let now = Instant::now();
        if now >= due {
            return;
        }
        let left = due - now;
        if left > Duration::from_micros(200) {
            std::thread::sleep(left - Duration::from_micros(100));
        } else {
            std::hint::spin_loop();
        }
    }
}
