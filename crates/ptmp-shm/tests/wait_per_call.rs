//! A full lossless ring waits as long as each call says: `loan` up to the
//! writer's block timeout, `loan_within` up to its own time, whatever the
//! block timeout is.

mod common;

use common::Chan;
use ptmp_shm::{ChannelConfig, Policy, Reader, ShmError, StartAt, Writer};
use std::time::{Duration, Instant};

#[test]
fn a_loan_waits_the_time_its_call_gives() {
    let c = Chan::new("within");
    let cfg = ChannelConfig {
        slots: 2,
        max_message: 64,
        policy: Policy::Block,
    };
    let mut w = Writer::create(&c.0, cfg).unwrap();
    // A reader that never reads: two messages fill the ring.
    let r = Reader::attach(&c.0, StartAt::Next).unwrap();
    w.publish(b"a").unwrap();
    w.publish(b"b").unwrap();
    w.set_block_timeout(Duration::from_secs(30));

    let t0 = Instant::now();
    let e = w.loan_within(1, Duration::from_millis(100)).err().unwrap();
    let waited = t0.elapsed();
    assert!(matches!(e, ShmError::Timeout { .. }), "{e}");
    assert!(waited >= Duration::from_millis(100), "{waited:?}");
    assert!(
        waited < Duration::from_secs(10),
        "{waited:?}: the block timeout was used"
    );

    // The writer's own bound is unchanged by the call.
    w.set_block_timeout(Duration::from_millis(50));
    let t0 = Instant::now();
    assert!(matches!(w.loan(1).err(), Some(ShmError::Timeout { .. })));
    assert!(t0.elapsed() < Duration::from_secs(10));

    // Room again once the reader is gone: both loans go through at once.
    drop(r);
    w.loan_within(1, Duration::ZERO).unwrap().commit();
    w.loan(1).unwrap().commit();
}
