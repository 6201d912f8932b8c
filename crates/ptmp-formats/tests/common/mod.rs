//! What the format tests share: TPSets made by proptest, and records of
//! them as a recorder writes them.

#![allow(dead_code)]

use proptest::prelude::*;
use ptmp_data::{Frames, TPSet, TrigPrim};
use ptmp_formats::{Reader, Record, Writer};

/// Any TrigPrim.
pub fn tp() -> impl Strategy<Value = TrigPrim> {
    (
        any::<u32>(),
        any::<u64>(),
        any::<Option<u32>>(),
        any::<Option<u32>>(),
        any::<Option<u32>>(),
        any::<Option<u32>>(),
    )
        .prop_map(
            |(channel, tstart, tspan, adcsum, adcpeak, flags)| TrigPrim {
                channel,
                tstart,
                tspan,
                adcsum,
                adcpeak,
                flags,
            },
        )
}

/// Any TPSet of up to `most` TrigPrims (none included).
pub fn set(most: usize) -> impl Strategy<Value = TPSet> {
    (
        (any::<u32>(), any::<u32>(), any::<i64>(), any::<u64>()),
        (
            any::<Option<u32>>(),
            any::<Option<u32>>(),
            any::<Option<u32>>(),
            any::<Option<u32>>(),
        ),
        proptest::collection::vec(tp(), 0..=most),
    )
        .prop_map(
            |((count, detid, created, tstart), (tspan, chanbeg, chanend, totaladc), tps)| TPSet {
                count,
                detid,
                created,
                tstart,
                tspan,
                chanbeg,
                chanend,
                totaladc,
                tps,
            },
        )
}

/// A record as a recorder writes it: a channel (of a few), a receive
/// time and a set.
pub fn record(most: usize) -> impl Strategy<Value = (String, Option<u64>, TPSet)> {
    (
        prop_oneof![Just(""), Just("apa1"), Just("apa2/tpsets"), Just("zone ✓")],
        any::<Option<u64>>(),
        set(most),
    )
        .prop_map(|(c, t, s)| (c.to_string(), t, s))
}

/// PTMP's two frames of `s`.
pub fn frames(s: &TPSet) -> Frames {
    let mut buf = Vec::new();
    ptmp_data::encode_tpset(s, &mut buf);
    Frames::from_slices(&[&ptmp_data::VERSION_FRAME[..], &buf[..]])
}

/// A simple set: number `i`, `n` TrigPrims.
pub fn numbered(i: u32, n: u32) -> TPSet {
    TPSet {
        count: i,
        detid: 7,
        created: 1_700_000_000_000_000 + i64::from(i),
        tstart: 50_000 * u64::from(i),
        tspan: Some(25),
        chanbeg: (n > 0).then_some(100),
        chanend: (n > 0).then_some(100 + n - 1),
        totaladc: Some(10 * n),
        tps: (0..n)
            .map(|k| TrigPrim {
                channel: 100 + k,
                tstart: 50_000 * u64::from(i) + u64::from(k),
                tspan: Some(3),
                adcsum: Some(10),
                adcpeak: Some(4),
                flags: Some(0),
            })
            .collect(),
    }
}

/// Write `recs` and finish.
pub fn write_all(mut w: Box<dyn Writer>, recs: &[(String, Option<u64>, TPSet)]) -> u64 {
    for (c, t, s) in recs {
        w.write(c, *t, &frames(s)).unwrap();
    }
    w.finish().unwrap()
}

/// Every record of `r` until its end or its first error.
pub fn read_all(r: &mut dyn Reader) -> (Vec<Record>, Option<ptmp_formats::Error>) {
    let mut out = Vec::new();
    let mut rec = Record::default();
    loop {
        match r.read_into(&mut rec) {
            Ok(true) => out.push(rec.clone()),
            Ok(false) => return (out, None),
            Err(e) => return (out, Some(e)),
        }
    }
}
