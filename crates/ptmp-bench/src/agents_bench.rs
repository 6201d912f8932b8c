//! `ptmp bench agents`: the agents' speed, cores alone and as running
//! agents between real sockets.
//!
//! * zipper core: N streams merged with no I/O (sets/s);
//! * zipper agent: N sender threads -> one zipper agent -> a sink, over
//!   `--transport` (aggregate sets/s, loss and order checked);
//! * zipper latency: N paced senders at `--rate` in aggregate, sink-side
//!   latency (receive - created) percentiles, with every input live and with
//!   one input silent (then every set waits for `sync_time`);
//! * window core and agent: TrigPrims/s re-binned.
//!
//! Issue targets: zipper with 10 inputs at >= 1,000,000 TPSets/s aggregate,
//! window at >= 1,000,000 TrigPrims/s, zipper added latency <= sync_time.

use crate::error::{BenchError, BenchResult};
use crate::report::{Cell, Row};
use crate::sys::stopping;
use hdrhistogram::Histogram;
use ptmp::{Receiver, Sender, SocketConfig, TPSet, TrigPrim};
use ptmp_agents::merge::{Pushed, TardyPolicy, Zipper};
use ptmp_agents::{Ctl, Proxy, Running, Windower};
use serde_json::json;
use std::time::{Duration, Instant};

#[derive(Debug, clap::Args)]
pub struct AgentsArgs {
    /// TPSets per input for the throughput runs.
    #[arg(short = 'n', long, default_value_t = 200_000)]
    pub count: u64,
    /// Zipper inputs.
    #[arg(long, default_value_t = 10)]
    pub inputs: usize,
    /// TrigPrims per TPSet in the window runs.
    #[arg(long, default_value_t = 10)]
    pub ntps: u32,
    /// Zipper sync_time, ms.
    #[arg(long, default_value_t = 10)]
    pub sync_ms: u64,
    /// Aggregate rate of the latency runs, TPSets/s.
    #[arg(short = 'r', long, default_value_t = 20_000)]
    pub rate: u64,
    /// Seconds of each latency run.
    #[arg(long, default_value_t = 3.0)]
    pub duration: f64,
    /// Runs of each flat-out row (the median rate is reported).
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Transport between the agents and their peers: inproc, ipc or tcp.
    #[arg(short = 't', long, default_value = "inproc")]
    pub transport: String,
}

/// One agents figure: what was measured, its headline number and the
/// details printed beside it, and the figure aimed for.
#[derive(Debug, Clone)]
pub struct AgentsRow {
    /// What ran.
    pub bench: String,
    /// What the number is.
    pub figure: &'static str,
    /// The headline number (a rate, or a median latency in ms).
    pub value: f64,
    /// The number as printed, with the runs or counts behind it.
    pub text: String,
    /// The figure aimed for.
    pub target: String,
}

impl Row for AgentsRow {
    fn headers() -> &'static [&'static str] {
        &["bench", "figure", "value", "target"]
    }
    fn cells(&self) -> Vec<Cell> {
        vec![
            Cell::label(&self.bench),
            Cell::label(self.figure),
            Cell::measure(self.value, self.text.clone()),
            Cell::label(&self.target),
        ]
    }
}

/// Print a row and keep it.
fn row(
    out: &mut Vec<AgentsRow>,
    bench: String,
    figure: &'static str,
    (value, text): (f64, String),
    target: &str,
) {
    let r = AgentsRow {
        bench,
        figure,
        value,
        text,
        target: target.to_string(),
    };
    crate::report::row(&r);
    out.push(r);
}

/// An endpoint; inproc and ipc names are new on every call (a closed
/// socket's name is released asynchronously, so runs never reuse one).
fn ep(t: &str, tag: &str, i: usize) -> String {
    static GEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let g = GEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    match t {
        "inproc" => format!("inproc://bench-{tag}-{i}-{g}"),
        "ipc" => format!(
            "ipc:///tmp/ptmp-bench-{}-{tag}-{i}-{g}.ipc",
            std::process::id()
        ),
        // A port the kernel reports free now (the bench binds it at once);
        // should the kernel hand none out, a fixed one whose bind then
        // reports the trouble by its number.
        _ => match std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
            Ok(a) => format!("tcp://127.0.0.1:{}", a.port()),
            Err(_) => format!("tcp://127.0.0.1:{}", 29000 + g % 3000),
        },
    }
}

fn sock(t: &str, attach: &str, eps: &[String], hwm: i32) -> serde_json::Value {
    json!({"socket": {"type": t, attach: eps, "hwm": hwm, "sndhwm": hwm}})
}

fn median(v: &[f64]) -> f64 {
    crate::report::median(v.to_vec())
}

fn spread(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{:.2}M", x / 1e6))
        .collect::<Vec<_>>()
        .join(", ")
}

fn zipper_core(inputs: usize, n: u64) -> f64 {
    let mut z = Zipper::new(inputs, Duration::from_millis(10), TardyPolicy::Drop);
    let mut pool: Vec<TPSet> = Vec::new();
    let t0 = Instant::now();
    let mut out = 0u64;
    for k in 0..n {
        for i in 0..inputs {
            let mut s = pool.pop().unwrap_or_default();
            s.detid = i as u32;
            s.tstart = k * 1000 + (i as u64 * 37) % 1000;
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
    assert_eq!(out, n * inputs as u64);
    out as f64 / t0.elapsed().as_secs_f64()
}

fn window_core(ntps: u32, n: u64) -> f64 {
    let mut w = Windower::new(2500, 0, 25_000, None);
    let mut set = TPSet {
        detid: 1,
        tps: vec![TrigPrim::default(); ntps as usize],
        ..Default::default()
    };
    let mut sent_tps = 0u64;
    let t0 = Instant::now();
    for k in 0..n {
        set.tstart = k * 100;
        for (j, tp) in set.tps.iter_mut().enumerate() {
            tp.channel = j as u32;
            tp.tstart = k * 100 + j as u64 * 7;
            tp.adcsum = Some(10);
        }
        w.add(&set, &mut |o| sent_tps += o.tps.len() as u64);
    }
    w.flush(&mut |o| sent_tps += o.tps.len() as u64);
    assert_eq!(sent_tps, n * ntps as u64);
    sent_tps as f64 / t0.elapsed().as_secs_f64()
}

struct Flow {
    reports: Vec<ptmp_agents::Report>,
    received: u64,
    order_errors: u64,
    secs: f64,
    hist: Histogram<u64>,
}

/// Start `proxy`, run `senders` threads each sending `per` sets built by
/// `make(i, k)`, paced at `rate_each` per second (0 = flat out), and count
/// at the sink until `expect` arrived or a quiet second passed.
fn flow(
    proxy: serde_json::Value,
    out_ep: &str,
    in_eps: &[String],
    per: u64,
    rate_each: f64,
    make: impl Fn(usize, u64, &mut TPSet) + Sync,
    expect: u64,
) -> Result<Flow, BenchError> {
    let p = Proxy::parse("bench", &proxy, &ptmp_agents::Plugins::builtin())
        .map_err(|e| BenchError::fail(e.to_string()))?;
    let mut sink = Receiver::new(
        SocketConfig::from_value(&sock("PULL", "connect", &[out_ep.to_string()], 100_000))
            .map_err(BenchError::from)?,
    )?;
    let agents = p.build().map_err(|e| BenchError::fail(e.to_string()))?;
    let ctl = Ctl::new(false);
    let running = Running::start(agents, &ctl).map_err(|e| BenchError::fail(e.to_string()))?;
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("bounds");
    let mut got = TPSet::default();
    let (mut received, mut order_errors, mut last) = (0u64, 0u64, 0u64);
    let t_start = Instant::now();
    let mut t_last = t_start;
    std::thread::scope(|sc| -> Result<(), BenchError> {
        if rate_each == 0.0 {
            // Flat out: one thread sends round-robin over all inputs, so the
            // streams stay in step as live links do (free-running threads on
            // two cores drift apart by seconds, which measures the scheduler).
            let make = &make;
            sc.spawn(move || {
                let mut txs: Vec<Sender> = in_eps
                    .iter()
                    .map(|e| {
                        let cfg = SocketConfig::from_value(&sock(
                            "PUSH",
                            "bind",
                            std::slice::from_ref(e),
                            100_000,
                        ))
                        .expect("config");
                        Sender::new(cfg).expect("sender")
                    })
                    .collect();
                let mut s = TPSet::default();
                for k in 0..per {
                    for (i, tx) in txs.iter_mut().enumerate() {
                        make(i, k, &mut s);
                        s.created = ptmp_data::now_us();
                        tx.send(&s).expect("send");
                    }
                }
            });
        }
        for (i, e) in in_eps.iter().enumerate().filter(|_| rate_each > 0.0) {
            let make = &make;
            let e = e.clone();
            sc.spawn(move || {
                let cfg =
                    SocketConfig::from_value(&sock("PUSH", "bind", &[e], 100_000)).expect("config");
                let mut tx = Sender::new(cfg).expect("sender");
                let mut s = TPSet::default();
                let t0 = Instant::now();
                for k in 0..per {
                    if rate_each > 0.0 {
                        let due = t0 + Duration::from_secs_f64(k as f64 / rate_each);
                        // Sleep, not spin: ten paced senders share two cores
                        // with the agent and the sink here.
                        let now = Instant::now();
                        if due > now {
                            std::thread::sleep(due - now);
                        }
                    }
                    make(i, k, &mut s);
                    s.created = ptmp_data::now_us();
                    tx.send(&s).expect("send");
                }
            });
        }
        while received < expect && !stopping() {
            match sink.recv_into(&mut got, Some(Duration::from_secs(2)))? {
                false => break,
                true => {
                    t_last = Instant::now();
                    received += 1;
                    if got.tstart < last {
                        order_errors += 1;
                    }
                    last = got.tstart;
                    let lat = (ptmp_data::now_us() - got.created).max(1) as u64;
                    let _ = hist.record(lat);
                }
            }
        }
        Ok(())
    })?;
    let mut reports = Vec::new();
    for (n, r) in running.stop() {
        reports.push(r.map_err(|e| BenchError::fail(format!("{n}: {e}")))?);
    }
    // From the senders' start to the last set at the sink.
    let secs = (t_last - t_start).as_secs_f64();
    Ok(Flow {
        reports,
        received,
        order_errors,
        secs,
        hist,
    })
}

/// Run the agents suite: the cores, the running agents flat out, the
/// zipper's latency.
/// Fresh endpoints for a zipper with `n` inputs over transport `t`, and
/// its configuration.
fn zipper_io(a: &AgentsArgs, t: &str, n: usize) -> (Vec<String>, String, serde_json::Value) {
    let ins: Vec<String> = (0..n).map(|i| ep(t, "z", i)).collect();
    let out = ep(t, "z", 11);
    let cfg = json!({"name": "zip", "type": "zipper", "data": {"sync_time": a.sync_ms,
        "input": sock("PULL", "connect", &ins, 100_000),
        "output": sock("PUSH", "bind", std::slice::from_ref(&out), 100_000)}});
    (ins, out, cfg)
}

/// Set `k` of stream `i` into a zipper: its tstarts interleave the streams.
fn zipper_set(i: usize, k: u64, s: &mut TPSet) {
    s.count = k as u32;
    s.detid = i as u32;
    s.tstart = k * 1000 + i as u64;
}

/// The zipper agent flat out, `a.reps` times: the median aggregate rate.
fn zipper_flat(a: &AgentsArgs, t: &str, rows: &mut Vec<AgentsRow>) -> BenchResult {
    let total = a.count * a.inputs as u64;
    let mut rates = Vec::new();
    let (mut received, mut tardy, mut disorder) = (0, 0, 0);
    for _ in 0..a.reps.max(1) {
        let (ins, out, cfg) = zipper_io(a, t, a.inputs);
        let f = flow(cfg, &out, &ins, a.count, 0.0, zipper_set, total)?;
        tardy += f.reports.first().and_then(|r| r.get("tardy")).unwrap_or(0);
        received += f.received;
        disorder += f.order_errors;
        rates.push(f.received as f64 / f.secs.max(1e-9));
    }
    let n = a.reps.max(1) as u64;
    row(
        rows,
        format!("zipper agent, {} inputs over {t}", a.inputs),
        "TPSets/s aggregate, median",
        (
            median(&rates),
            format!(
                "{:.0} (runs {}; {} of {} received, {tardy} tardy, {disorder} out of order)",
                median(&rates),
                spread(&rates),
                received,
                total * n
            ),
        ),
        ">= 1,000,000",
    );

    Ok(())
}

/// The zipper's latency with every input live, then with one silent (its
/// sets wait for sync_time).
fn zipper_latency(a: &AgentsArgs, t: &str, rows: &mut Vec<AgentsRow>) -> BenchResult {
    // Zipper latency, all inputs live, paced.
    let per = ((a.rate as f64 / a.inputs as f64) * a.duration) as u64;
    let rate_each = a.rate as f64 / a.inputs as f64;
    let (ins, out, cfg) = zipper_io(a, t, a.inputs);
    let f = flow(
        cfg,
        &out,
        &ins,
        per.max(1),
        rate_each,
        zipper_set,
        per.max(1) * a.inputs as u64,
    )?;
    let pct = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    row(
        rows,
        format!("zipper latency, {} live inputs at {} /s", a.inputs, a.rate),
        "ms p50 / p99 / max",
        (
            pct(&f.hist, 0.5),
            format!(
                "{:.3} / {:.3} / {:.3} ({} of {} received, {} tardy)",
                pct(&f.hist, 0.5),
                pct(&f.hist, 0.99),
                f.hist.max() as f64 / 1000.0,
                f.received,
                per.max(1) * a.inputs as u64,
                f.reports.first().and_then(|r| r.get("tardy")).unwrap_or(0)
            ),
        ),
        &format!("<= sync_time {} ms", a.sync_ms),
    );
    // One input silent: sets wait for sync_time.
    let live = a.inputs.saturating_sub(1).max(1);
    // The zipper expects all inputs (its config lists them) but only
    // `live` of them send.
    let (ins, out, cfg) = zipper_io(a, t, a.inputs);
    let ins_live: Vec<String> = ins[..live].to_vec();
    let f = flow(
        cfg,
        &out,
        &ins_live,
        per.max(1),
        rate_each,
        zipper_set,
        per.max(1) * live as u64,
    )?;
    row(
        rows,
        format!("zipper latency, {live} of {} inputs live", a.inputs),
        "ms p50 / p99 / max",
        (
            pct(&f.hist, 0.5),
            format!(
                "{:.3} / {:.3} / {:.3} ({} of {} received, {} tardy)",
                pct(&f.hist, 0.5),
                pct(&f.hist, 0.99),
                f.hist.max() as f64 / 1000.0,
                f.received,
                per.max(1) * live as u64,
                f.reports.first().and_then(|r| r.get("tardy")).unwrap_or(0)
            ),
        ),
        &format!("~ sync_time {} ms", a.sync_ms),
    );

    Ok(())
}

/// The window agent flat out, `a.reps` times: the median TrigPrim rate.
fn window_flat(a: &AgentsArgs, t: &str, rows: &mut Vec<AgentsRow>) -> BenchResult {
    // Window agent flat out.
    let wio = || {
        let win_in = vec![ep(t, "w", 0)];
        let win_out = ep(t, "w", 1);
        let cfg = json!({"name": "win", "type": "window", "data": {"tspan": 2500, "tbuf": 25000,
            "input": sock("PULL", "connect", &win_in, 100_000),
            "output": sock("PUSH", "bind", std::slice::from_ref(&win_out), 100_000)}});
        (win_in, win_out, cfg)
    };
    let ntps = a.ntps;
    let wmake = move |_i: usize, k: u64, s: &mut TPSet| {
        s.count = k as u32;
        s.detid = 1;
        s.tstart = k * 100;
        s.tps.resize(ntps as usize, TrigPrim::default());
        for (j, tp) in s.tps.iter_mut().enumerate() {
            tp.channel = j as u32;
            tp.tstart = k * 100 + j as u64 * 7;
        }
    };
    // Each output window holds 25 input sets (2500 / 100). Windows go out
    // once data 27500 ticks past their start is seen; the last few wait for
    // the stop, so the sink expects the ones the data itself completes.
    let max_seen = (a.count.max(1) - 1) * 100 + (a.ntps.max(1) as u64 - 1) * 7;
    let expect_windows = max_seen.saturating_sub(27_500) / 2500 + 1;
    let mut rates = Vec::new();
    let mut windows = 0;
    for _ in 0..a.reps.max(1) {
        let (win_in, win_out, cfg) = wio();
        let f = flow(cfg, &win_out, &win_in, a.count, 0.0, wmake, expect_windows)?;
        windows += f.received;
        rates.push((f.received * 25 * a.ntps as u64) as f64 / f.secs.max(1e-9));
    }
    row(
        rows,
        format!("window agent, {} TPs/set over {t}", a.ntps),
        "TrigPrims/s, median",
        (
            median(&rates),
            format!(
                "{:.0} (runs {}; {windows} of {} windows)",
                median(&rates),
                spread(&rates),
                expect_windows * a.reps.max(1) as u64
            ),
        ),
        ">= 1,000,000",
    );
    Ok(())
}

pub fn run(a: &AgentsArgs) -> BenchResult<Vec<AgentsRow>> {
    if !["inproc", "ipc", "tcp"].contains(&a.transport.as_str()) {
        return Err(BenchError::usage(format!(
            "--transport {:?}: use inproc, ipc or tcp",
            a.transport
        )));
    }
    if a.inputs == 0 || a.inputs > 10 {
        return Err(BenchError::usage("--inputs: 1 to 10"));
    }
    let t = a.transport.as_str();
    crate::report::table::<AgentsRow>();
    let mut rows = Vec::new();
    let r = zipper_core(a.inputs, a.count);
    row(
        &mut rows,
        format!("zipper core, {} streams", a.inputs),
        "TPSets/s",
        (r, format!("{:.0}", r)),
        ">= 1,000,000",
    );
    let r = window_core(a.ntps, a.count);
    row(
        &mut rows,
        format!("window core, {} TPs/set", a.ntps),
        "TrigPrims/s",
        (r, format!("{:.0}", r)),
        ">= 1,000,000",
    );

    zipper_flat(a, t, &mut rows)?;
    zipper_latency(a, t, &mut rows)?;
    window_flat(a, t, &mut rows)?;
    Ok(rows)
}
