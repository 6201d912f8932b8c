//! Encodes one TPSet many times, so instructions per encoding can be
//! counted with callgrind: run it for two counts and divide the difference
//! of the totals by the difference of the counts (start-up cancels out).
//!
//! ```text
//! cargo build --release -p ptmp-data --example encode_loop
//! valgrind --tool=callgrind target/release/examples/encode_loop 20000 10
//! valgrind --tool=callgrind target/release/examples/encode_loop 40000 10
//! ```
//!
//! Arguments: how many encodings, and how many TrigPrims in the set (the
//! same set as the codec bench makes).

use ptmp_data::{encode_tpset, TPSet, TrigPrim};
use std::hint::black_box;

fn set(ntps: usize) -> TPSet {
    TPSet {
        count: 123_456,
        detid: 3,
        created: 1_700_000_000_123_456,
        tstart: 88_000_000_000,
        tspan: Some(25),
        chanbeg: (ntps > 0).then_some(0),
        chanend: (ntps > 0).then_some(ntps as u32 - 1),
        totaladc: (ntps > 0).then_some(1000),
        tps: (0..ntps)
            .map(|c| TrigPrim {
                channel: c as u32,
                tstart: 88_000_000_000 + c as u64,
                tspan: Some(4),
                adcsum: Some(300),
                adcpeak: Some(40),
                flags: Some(0),
            })
            .collect(),
    }
}

fn main() {
    let arg = |i: usize, default: usize| -> usize {
        match std::env::args().nth(i) {
            None => default,
            Some(s) => s.parse().unwrap_or_else(|_| {
                eprintln!("encode_loop: argument {i} must be a count, not {s:?}");
                std::process::exit(2)
            }),
        }
    };
    let (n, ntps) = (arg(1, 1_000_000), arg(2, 10));
    let t = set(ntps);
    let mut buf = Vec::new();
    for _ in 0..n {
        encode_tpset(black_box(&t), &mut buf);
        black_box(&buf);
    }
    println!("{} encodings of {} bytes", n, buf.len());
}
