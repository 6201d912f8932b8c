//! `ptmp bench ring`: the shared-memory ring's own throughput, fully
//! contended: one writer publishing as fast as it can, 1 or more readers
//! copying out (or viewing in place) as fast as they can, as smx_perf
//! (<https://github.com/UltraMessaging/smx_perf>) measures Ultra Messaging's
//! shared-memory transport.

use crate::error::{BenchError, BenchResult};
use crate::report::{Cell, Row};
use ptmp_shm::{ChannelConfig, Policy, Reader, StartAt, Writer};
use std::time::{Duration, Instant};

pub(crate) mod processes;

#[derive(Debug, clap::Args)]
pub struct RingArgs {
    /// Messages to publish per run.
    #[arg(short = 'n', long, default_value_t = 5_000_000)]
    pub count: u64,
    /// Message sizes in bytes.
    #[arg(short = 'm', long = "sizes", num_args = 1.., default_values = ["64", "1024"])]
    pub sizes: Vec<usize>,
    /// Reader counts.
    #[arg(long, num_args = 1.., default_values = ["1", "3"])]
    pub readers: Vec<usize>,
    /// Slots in the ring.
    #[arg(long, default_value_t = 4096)]
    pub slots: usize,
    /// Lossless (writer waits for the slowest reader) instead of overwrite.
    #[arg(long)]
    pub block: bool,
}

/// One ring run: a message size, a number of readers, what they managed.
#[derive(Debug, Clone)]
pub struct RingRow {
    /// Message size, bytes.
    pub size: usize,
    /// Readers contending with the writer.
    pub readers: usize,
    /// Lossless (block) or overwrite.
    pub block: bool,
    /// The writer's rate, millions of messages per second.
    pub writer_mps: f64,
    /// Each reader's rate, millions of messages per second.
    pub reader_mps: Vec<f64>,
    /// Each reader's share of messages overwritten before it read them, %.
    pub lost_pct: Vec<f64>,
    /// System calls the writer's thread made per message (NaN: not
    /// counted).
    pub writer_syscalls: f64,
    /// Each reader thread's, per message published.
    pub reader_syscalls: Vec<f64>,
    /// The writer thread's context switches per second.
    pub writer_csw_s: f64,
    /// Each reader thread's.
    pub reader_csw_s: Vec<f64>,
}

impl Row for RingRow {
    fn headers() -> &'static [&'static str] {
        &[
            "size B",
            "readers",
            "policy",
            "writer M msg/s",
            "per-reader received M msg/s",
            "per-reader lost %",
            "writer syscalls/msg",
            "per-reader syscalls/msg",
            "writer csw/s",
            "per-reader csw/s",
        ]
    }
    fn cells(&self) -> Vec<Cell> {
        let f2 = |x: f64| format!("{x:.2}");
        vec![
            Cell::param(self.size as f64),
            Cell::param(self.readers as f64),
            Cell::label(if self.block { "block" } else { "overwrite" }),
            Cell::measure(self.writer_mps, f2(self.writer_mps)),
            Cell::list(&self.reader_mps, f2),
            Cell::list(&self.lost_pct, f2),
            Cell::maybe(self.writer_syscalls, |x| format!("{x:.4}")),
            Cell::list(&self.reader_syscalls, |x| format!("{x:.4}")),
            Cell::maybe(self.writer_csw_s, |x| format!("{x:.0}")),
            Cell::list(&self.reader_csw_s, |x| format!("{x:.0}")),
        ]
    }
}

/// Run the ring suite: every size with every reader count.
pub fn run(a: &RingArgs) -> BenchResult<Vec<RingRow>> {
    crate::report::table::<RingRow>();
    let mut out = Vec::new();
    for &size in &a.sizes {
        for &nr in &a.readers {
            let row = one_run(size, nr, a.slots, a.block, a.count, None)?;
            crate::report::row(&row);
            out.push(row);
        }
    }
    crate::report::note(format!(
        "\n{} messages per run, {}-slot ring; readers copy each message out; system calls per message published and context switches per second of each thread (perf_event_open on the raw_syscalls:sys_enter tracepoint, \"-\" where the kernel does not allow it; getrusage).",
        a.count, a.slots
    ));
    Ok(out)
}

/// One run: `n` messages of `size` bytes through a ring of `slots` slots to
/// `nr` readers, each copying every message out, the writer as fast as it
/// can (waiting for the slowest reader with `block`); the readers pinned
/// to `reader_cpu` when given.
pub(crate) fn one_run(
    size: usize,
    nr: usize,
    slots: usize,
    block: bool,
    n: u64,
    reader_cpu: Option<usize>,
) -> BenchResult<RingRow> {
    let fail = |e: ptmp_shm::ShmError| BenchError::fail(e.to_string());
    if size == 0 || nr == 0 {
        return Err(BenchError::usage(
            "sizes and reader counts must be at least 1",
        ));
    }
    let name = format!("bench-ring-{}-{size}-{nr}", std::process::id());
    let policy = if block {
        Policy::Block
    } else {
        Policy::Overwrite
    };
    let cfg = ChannelConfig {
        slots,
        max_message: size,
        policy,
    };
    let mut w = Writer::create(&name, cfg).map_err(fail)?;

    let readers: Vec<_> = (0..nr)
        .map(|_| {
            let mut r = Reader::attach(&name, StartAt::Next).map_err(fail)?;
            Ok(std::thread::spawn(move || -> BenchResult<_> {
                crate::sys::pin(reader_cpu)?;
                let ctr = crate::sys::Syscalls::open(false);
                let k0 = crate::sys::kernel(&ctr, true);
                let t0 = Instant::now();
                let mut buf = Vec::with_capacity(size);
                let mut got = 0u64;
                let mut first: Option<Instant> = None;
                while r.position() < n {
                    match r.recv_into(&mut buf, Some(Duration::from_secs(2))) {
                        Some(_) => {
                            first.get_or_insert_with(Instant::now);
                            got += 1;
                        }
                        None => break,
                    }
                }
                let secs = first.map_or(0.0, |f| f.elapsed().as_secs_f64());
                let k = k0.since(crate::sys::kernel(&ctr, true));
                Ok((got, r.lost(), secs, k, t0.elapsed().as_secs_f64()))
            }))
        })
        .collect::<BenchResult<_>>()?;
    let msg = vec![0x5au8; size];
    let ctr = crate::sys::Syscalls::open(false);
    let k0 = crate::sys::kernel(&ctr, true);
    let t0 = Instant::now();
    for _ in 0..n {
        w.publish(&msg).map_err(fail)?;
    }
    w.flush();
    let wsecs = t0.elapsed().as_secs_f64();
    let wk = k0.since(crate::sys::kernel(&ctr, true));
    let per_msg = |k: &crate::sys::Kernel| k.syscalls.map_or(f64::NAN, |c| c as f64 / n as f64);
    let per_s = |k: &crate::sys::Kernel, secs: f64| {
        if secs > 0.0 {
            k.switches() as f64 / secs
        } else {
            f64::NAN
        }
    };
    let (mut rsys, mut rcsw) = (Vec::new(), Vec::new());
    let mut rates = Vec::new();
    let mut lost = Vec::new();
    for h in readers {
        let (got, l, secs, k, loop_s) = h
            .join()
            .map_err(|_| BenchError::fail("reader panicked"))??;
        rsys.push(per_msg(&k));
        rcsw.push(per_s(&k, loop_s));
        rates.push(if secs > 0.0 {
            got as f64 / secs / 1e6
        } else {
            0.0
        });
        lost.push(100.0 * l as f64 / n as f64);
    }
    drop(w);
    let _ = ptmp_shm::remove(&name);
    let row = RingRow {
        size,
        readers: nr,
        block,
        writer_mps: n as f64 / wsecs / 1e6,
        reader_mps: rates,
        lost_pct: lost,
        writer_syscalls: per_msg(&wk),
        reader_syscalls: rsys,
        writer_csw_s: per_s(&wk, wsecs),
        reader_csw_s: rcsw,
    };
    Ok(row)
}
