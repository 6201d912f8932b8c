//! Codec cost per TPSet: `cargo bench -p ptmp-data --bench codec`.
//! The encoder is compared with prost's generated one on the same sets, and
//! the system clock with [`Clock`], which stamps a set's `created`.

use criterion::{BenchmarkId, Criterion, Throughput};
use prost::Message;
use ptmp_data::{decode_tpset_into, encode_tpset, now_us, Clock, TPSet, TrigPrim};
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

fn codec(c: &mut Criterion) {
    let mut g = c.benchmark_group("tpset");
    for ntps in [0usize, 10, 100] {
        let t = set(ntps);
        let mut buf = Vec::new();
        encode_tpset(&t, &mut buf);
        g.throughput(Throughput::Elements(1));
        g.bench_with_input(BenchmarkId::new("encode", ntps), &t, |b, t| {
            b.iter(|| encode_tpset(black_box(t), &mut buf))
        });
        g.bench_with_input(BenchmarkId::new("encode_prost", ntps), &t, |b, t| {
            b.iter(|| {
                buf.clear();
                black_box(t).encode_raw(&mut buf)
            })
        });
        encode_tpset(&t, &mut buf);
        let mut out = TPSet::default();
        g.bench_with_input(BenchmarkId::new("decode_into", ntps), &buf, |b, bytes| {
            b.iter(|| decode_tpset_into(black_box(bytes), &mut out).unwrap())
        });
        g.bench_with_input(BenchmarkId::new("decode_prost", ntps), &buf, |b, bytes| {
            b.iter(|| TPSet::decode(black_box(&bytes[..])).unwrap())
        });
    }
    g.bench_function("now_us", |b| b.iter(now_us));
    let mut clock = Clock::new();
    let name = if clock.uses_counter() {
        "clock_counter"
    } else {
        "clock_system"
    };
    g.bench_function(name, |b| b.iter(|| clock.now_us()));
    g.finish();
}

// What `criterion_group!` and `criterion_main!` expand to, written out: the
// group macro defines a `pub fn` that cannot carry documentation.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    codec(&mut c);
    c.final_summary();
}
