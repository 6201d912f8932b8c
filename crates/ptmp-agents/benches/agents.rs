//! Agent cores without I/O: `cargo bench -p ptmp-agents --bench agents`.
//! The zipper merging 10 streams, the window re-binning sets of 10 TPs and
//! the adjacency engine on a window; `ptmp bench agents` measures the same
//! cores and the running agents between sockets.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ptmp_agents::filter::{Adjacency, Engine};
use ptmp_agents::merge::{Pushed, TardyPolicy, Zipper};
use ptmp_agents::Windower;
use ptmp_data::{TPSet, TrigPrim};
use std::hint::black_box;
use std::time::Duration;

fn zipper(c: &mut Criterion) {
    const STREAMS: usize = 10;
    const ROUNDS: u64 = 1000;
    let mut g = c.benchmark_group("zipper");
    g.throughput(Throughput::Elements(STREAMS as u64 * ROUNDS));
    g.bench_function("10 streams, push+pop", |b| {
        let mut pool: Vec<TPSet> = (0..64).map(|_| TPSet::default()).collect();
        b.iter(|| {
            let mut z = Zipper::new(STREAMS, Duration::from_millis(10), TardyPolicy::Drop);
            let mut out = 0u64;
            for k in 0..ROUNDS {
                for i in 0..STREAMS {
                    let mut s = pool.pop().unwrap_or_default();
                    s.detid = i as u32;
                    s.tstart = k * 1000 + i as u64;
                    if let Pushed::Tardy { set, .. } = z.push(s, 0) {
                        pool.push(set);
                    }
                    while let Some(s) = z.pop(0) {
                        out += 1;
                        pool.push(s);
                    }
                }
            }
            while let Some(s) = z.flush_one(0) {
                out += 1;
                pool.push(s);
            }
            black_box(out)
        })
    });
    g.finish();
}

fn window(c: &mut Criterion) {
    const SETS: u64 = 1000;
    const NTPS: usize = 10;
    let mut g = c.benchmark_group("window");
    g.throughput(Throughput::Elements(SETS * NTPS as u64));
    g.bench_function("sets of 10 TPs", |b| {
        let mut set = TPSet {
            detid: 1,
            tps: vec![TrigPrim::default(); NTPS],
            ..Default::default()
        };
        b.iter(|| {
            let mut w = Windower::new(2500, 0, 25_000, None);
            let mut n = 0u64;
            for k in 0..SETS {
                for (j, tp) in set.tps.iter_mut().enumerate() {
                    tp.channel = j as u32;
                    tp.tstart = k * 100 + j as u64 * 7;
                }
                w.add(&set, &mut |o| n += o.tps.len() as u64);
            }
            w.flush(&mut |o| n += o.tps.len() as u64);
            black_box(n)
        })
    });
    g.finish();
}

fn adjacency(c: &mut Criterion) {
    // A 2500-tick window of 200 TPs: 188 on channels 5 apart, one 12-channel cluster.
    let mut tps: Vec<TrigPrim> = (0..188u32)
        .map(|i| TrigPrim {
            channel: i * 5,
            tstart: i as u64 * 13,
            tspan: Some(20),
            adcsum: Some(50),
            ..Default::default()
        })
        .collect();
    tps.extend((0..12u32).map(|k| TrigPrim {
        channel: 1000 + k,
        tstart: 500,
        tspan: Some(20),
        adcsum: Some(300),
        ..Default::default()
    }));
    let set = TPSet {
        tps,
        ..Default::default()
    };
    let mut e = Adjacency::new(8, 1, 0);
    let mut out = Vec::new();
    let mut g = c.benchmark_group("adjacency");
    g.throughput(Throughput::Elements(set.tps.len() as u64));
    g.bench_function("200 TPs", |b| {
        b.iter(|| {
            out.clear();
            e.process(black_box(&set), &mut out).unwrap();
            assert_eq!(out.len(), 1);
        })
    });
    g.finish();
}

// criterion_group! makes a public function it cannot document; inside a
// private module it is not part of any public interface.
mod group {
    use super::{adjacency, criterion_group, window, zipper};
    criterion_group!(benches, zipper, window, adjacency);
}
criterion_main!(group::benches);
