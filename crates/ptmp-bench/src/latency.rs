//! `ptmp bench latency`: one-way latency, measured as smx_perf does
//! (Informatica's benchmark of Ultra Messaging's shared-memory transport,
//! <https://github.com/UltraMessaging/smx_perf>). The sending
//! thread writes a CLOCK_MONOTONIC timestamp into each message, paced by
//! busy-waiting; the receiving thread records now minus that stamp in an HDR
//! histogram. Both ends are in one process, so they share the clock.
//! `--round-trip` instead has the receiver echo each message back on a
//! second channel and the sender record the round trip (one message in
//! flight); with `--processes` the echo is a second process, so the
//! round trip crosses processes both ways and still reads one clock.
//! `--sizes` sweeps the message size.

use crate::error::{BenchError, BenchResult};
use crate::report::{Cell, Row};
use crate::sys::mono_ns;
use crate::sys::stopping;
use crate::tpset::pace_until;
use clap::ValueEnum;
use hdrhistogram::Histogram;
use ptmp::{Frames, Receiver, Sender, SocketConfig, TPSet};

mod echo;
pub use echo::{child as echo_child, EchoArgs};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LatTransport {
    /// ptmp's shared-memory ring, reader busy-polling.
    ShmSpin,
    /// ptmp's shared-memory ring, reader sleeping on the futex.
    ShmFutex,
    Inproc,
    Ipc,
    Tcp,
}

impl LatTransport {
    fn name(self) -> &'static str {
        match self {
            LatTransport::ShmSpin => "shm (busy-poll)",
            LatTransport::ShmFutex => "shm (futex)",
            LatTransport::Inproc => "zmq inproc",
            LatTransport::Ipc => "zmq ipc",
            LatTransport::Tcp => "zmq tcp",
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct LatencyArgs {
    /// Messages per transport (after warmup).
    #[arg(short = 'n', long, default_value_t = 100_000)]
    pub count: u64,
    /// Message size in bytes (at least 8, for the timestamp).
    #[arg(short = 'm', long = "size", default_value_t = 64)]
    pub size: usize,
    /// Messages per second, paced by busy-waiting.
    #[arg(short = 'r', long, default_value_t = 20_000.0)]
    pub rate: f64,
    /// Warmup messages, not recorded.
    #[arg(short = 'w', long, default_value_t = 1000)]
    pub warmup: u64,
    /// Transports to measure.
    #[arg(long, value_enum, num_args = 1.., default_values = ["shm-spin", "shm-futex", "inproc", "ipc", "tcp"])]
    pub transports: Vec<LatTransport>,
    /// Write the results as JSON to this file.
    #[arg(long)]
    pub json_out: Option<std::path::PathBuf>,
    /// smx_perf's -a: pin the sender's and the receiver's thread, SEND,RECV
    /// (CPU numbers).
    #[arg(long = "affinity", value_name = "SEND,RECV")]
    pub affinity: Option<String>,
    /// smx_perf's -s: receiver polls per message before it sleeps (shm-futex:
    /// ring spins before the futex; zmq: non-blocking tries before a blocking
    /// receive). shm-spin always busy-polls.
    #[arg(short = 's', long = "spin", value_name = "N")]
    pub spin: Option<u32>,
    /// smx_perf's -l: how long a zmq sender lingers at exit for undelivered
    /// messages, ms (the socket's linger_ms).
    #[arg(
        short = 'l',
        long = "linger",
        value_name = "MS",
        default_value_t = 2000
    )]
    pub linger_ms: i32,
    /// Round trip: the receiver echoes each message back (ptmp Sender and
    /// Receiver on both legs; shm rows use PUSH/PULL channels).
    #[arg(long)]
    pub round_trip: bool,
    /// With --round-trip: the echo runs in a second process (this program
    /// started again), not a thread; not for inproc.
    #[arg(long, requires = "round_trip")]
    pub processes: bool,
    /// With --round-trip: the echo passes each message on with
    /// `Receiver::forward` and the measuring side reads its stamp where it
    /// lies (`Receiver::recv_raw_with`): over shm two copies a round trip,
    /// one per send, as Aeron's Ping/Pong makes. Without it both ends copy
    /// each message out of its ring and back in: four.
    #[arg(long, requires = "round_trip")]
    pub in_place: bool,
    /// With --round-trip: send TPSets of N TrigPrims instead of raw
    /// frames, the send time in each set's `tstart`; both ends decode what
    /// they receive and encode what they send, as an agent does (with
    /// --in-place the echo forwards each set undecoded and the measuring
    /// side still decodes). The size column gives the set's bytes.
    #[arg(long, value_name = "N", requires = "round_trip", conflicts_with_all = ["sizes", "size"])]
    pub tpsets: Option<u32>,
    /// Message sizes to sweep, e.g. 64,1024,65536 (instead of -m).
    #[arg(long, value_delimiter = ',', value_name = "B,B,...")]
    pub sizes: Vec<usize>,
}

/// One echo round trip per message over ptmp's front (zmq or shm://).
fn round_trip(
    t: LatTransport,
    a: &LatencyArgs,
    size: usize,
    cpus: (Option<usize>, Option<usize>),
) -> BenchResult<Measured> {
    let total = a.count + a.warmup;
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)
        .map_err(|e| BenchError::fail(format!("histogram: {e}")))?;
    let leg = |tag: &str| -> BenchResult<String> {
        Ok(match t {
            LatTransport::ShmSpin | LatTransport::ShmFutex => format!("shm://{}", unique(tag)),
            LatTransport::Inproc => format!("inproc://{}", unique(tag)),
            LatTransport::Ipc => {
                format!("ipc://{}", std::env::temp_dir().join(unique(tag)).display())
            }
            LatTransport::Tcp => {
                let port = std::net::TcpListener::bind("127.0.0.1:0")?
                    .local_addr()?
                    .port();
                format!("tcp://127.0.0.1:{port}")
            }
        })
    };
    let (go, back) = (leg("rt-go")?, leg("rt-back")?);
    let (send_cpu, recv_cpu) = cpus;
    // Both legs' receivers poll as the row says: shm-spin never sleeps,
    // shm-futex sleeps after -s polls (0: at once), as in one-way rows.
    let spin = match t {
        LatTransport::ShmSpin => u32::MAX,
        _ => a.spin.unwrap_or(0),
    };
    let legs = echo::Legs {
        go: go.clone(),
        back: back.clone(),
        size,
        linger_ms: a.linger_ms,
        spin,
        in_place: a.in_place,
        tpsets: a.tpsets.is_some(),
    };
    let (mut rx, mut tx) = legs.measuring_ends()?;
    let echo = echo::Echo::start(&legs, total, recv_cpu, a.processes)?;
    crate::sys::pin(send_cpu)?;
    let mut msg = vec![0u8; size];
    let mut f = Frames::new();
    let (mut seen, mut got) = (0u64, 0u64);
    let period = Duration::from_secs_f64(1.0 / a.rate);
    let start = Instant::now();
    let (mut set, mut echoed) = (crate::tpset::tpset(a.tpsets.unwrap_or(0)), TPSet::default());
    for i in 0..total {
        if stopping() {
            break;
        }
        pace_until(start + period.mul_f64(i as f64));
        if a.tpsets.is_some() {
            set.count = i as u32;
            set.tstart = mono_ns();
            tx.send(&set)?;
            if !rx.recv_into(&mut echoed, Some(Duration::from_secs(2)))? {
                break;
            }
            got += 1;
            record(&mut hist, echoed.tstart, a.warmup, &mut seen);
            continue;
        }
        msg[..8].copy_from_slice(&mono_ns().to_le_bytes());
        tx.send_raw(&[&msg[..]])?;
        let wait = Some(Duration::from_secs(2));
        let sent = if a.in_place {
            let Some(sent) = rx.recv_raw_with(wait, |v| stamp(v.get(0).unwrap_or(&[])))? else {
                break;
            };
            sent
        } else {
            if !rx.recv_raw_into(&mut f, wait)? {
                break;
            }
            stamp(f.get(0).unwrap_or(&[]))
        };
        got += 1;
        record(&mut hist, sent, a.warmup, &mut seen);
    }
    drop(tx);
    echo.finish()?;
    for ep in [&go, &back] {
        if let Some(p) = ep.strip_prefix("shm://") {
            let _ = ptmp_shm::remove(p);
        }
        if let Some(p) = ep.strip_prefix("ipc://") {
            let _ = std::fs::remove_file(p);
        }
    }
    Ok(Measured {
        hist,
        lost: total - got,
    })
}

struct Measured {
    hist: Histogram<u64>,
    /// Messages sent but not recorded (overrun, torn, or never arrived).
    lost: u64,
}

fn unique(tag: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Send `total` stamped messages through `send`, paced at `rate`.
fn sender_loop(
    total: u64,
    size: usize,
    rate: f64,
    mut send: impl FnMut(&[u8]) -> BenchResult,
) -> BenchResult {
    let mut msg = vec![0u8; size];
    let period = Duration::from_secs_f64(1.0 / rate);
    let start = Instant::now();
    for i in 0..total {
        pace_until(start + period.mul_f64(i as f64));
        msg[..8].copy_from_slice(&mono_ns().to_le_bytes());
        msg[8..16.min(size)].copy_from_slice(&i.to_le_bytes()[..(16.min(size) - 8)]);
        send(&msg)?;
    }
    Ok(())
}

/// The bytes of a round trip's TPSet of `ntps` TrigPrims, both frames, as
/// a zmq receiver counts them.
fn tpset_bytes(ntps: u32) -> usize {
    let mut set = crate::tpset::tpset(ntps);
    set.count = 1 << 20;
    set.tstart = mono_ns();
    let mut buf = Vec::new();
    ptmp::data::encode_tpset(&set, &mut buf);
    ptmp::data::VERSION_FRAME.len() + buf.len()
}

/// The send time in a message's first 8 bytes (0 if it is shorter).
fn stamp(bytes: &[u8]) -> u64 {
    bytes
        .get(..8)
        .map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
}

fn record(hist: &mut Histogram<u64>, sent: u64, warmup: u64, seen: &mut u64) {
    let now = mono_ns();
    *seen += 1;
    if *seen > warmup {
        let _ = hist.record(now.saturating_sub(sent).max(1));
    }
}

/// One shm busy-poll round-trip run of `count` messages of `size` bytes
/// (after 1,000 warmup) at `rate` a second, the echo in a second process
/// with `processes`, copying each message once per leg with `in_place`
/// (see [`LatencyArgs::in_place`]): (p50, p99.9) of the round trip in
/// microseconds, and the messages that did not come back.
pub(crate) fn shm_round_trip(
    count: u64,
    size: usize,
    rate: f64,
    cpus: (Option<usize>, Option<usize>),
    processes: bool,
    in_place: bool,
) -> BenchResult<(f64, f64, u64)> {
    let a = LatencyArgs {
        count,
        size,
        rate,
        warmup: 1000,
        transports: vec![LatTransport::ShmSpin],
        json_out: None,
        affinity: None,
        spin: None,
        linger_ms: 2000,
        round_trip: true,
        processes,
        in_place,
        tpsets: None,
        sizes: Vec::new(),
    };
    let m = round_trip(LatTransport::ShmSpin, &a, size, cpus)?;
    let q = |p: f64| m.hist.value_at_quantile(p) as f64 / 1000.0;
    Ok((q(0.5), q(0.999), m.lost))
}

fn measure(
    t: LatTransport,
    a: &LatencyArgs,
    size: usize,
    cpus: (Option<usize>, Option<usize>),
) -> BenchResult<Measured> {
    if a.round_trip {
        return round_trip(t, a, size, cpus);
    }
    let total = a.count + a.warmup;
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)
        .map_err(|e| BenchError::fail(format!("histogram: {e}")))?;
    let mut seen = 0u64;
    let rate = a.rate;
    let (send_cpu, recv_cpu) = cpus;
    crate::sys::pin(recv_cpu)?;
    match t {
        LatTransport::ShmSpin | LatTransport::ShmFutex => {
            let name = unique("latency");
            let cfg = ptmp_shm::ChannelConfig {
                slots: 1024,
                max_message: size.max(8),
                policy: ptmp_shm::Policy::Overwrite,
            };
            let fail = |e: ptmp_shm::ShmError| BenchError::fail(e.to_string());
            let mut w = ptmp_shm::Writer::create(&name, cfg).map_err(fail)?;
            let mut r = ptmp_shm::Reader::attach(&name, ptmp_shm::StartAt::Next).map_err(fail)?;
            r.set_spin(if t == LatTransport::ShmSpin {
                u32::MAX
            } else {
                a.spin.unwrap_or(0)
            });
            let h = std::thread::spawn(move || {
                crate::sys::pin(send_cpu)?;
                sender_loop(total, size, rate, |m| {
                    w.publish(m)
                        .map(drop)
                        .map_err(|e| BenchError::fail(e.to_string()))
                })
            });
            while seen < total && !stopping() {
                match r.view(Some(Duration::from_secs(2))) {
                    Some(v) => {
                        let sent = stamp(v.bytes());
                        if v.valid() {
                            record(&mut hist, sent, a.warmup, &mut seen);
                        }
                    }
                    None => break,
                }
            }
            h.join()
                .map_err(|_| BenchError::fail("sender panicked"))??;
            let _ = ptmp_shm::remove(&name);
            Ok(Measured {
                hist,
                lost: total - seen,
            })
        }
        _ => {
            let addr = match t {
                LatTransport::Inproc => format!("inproc://{}", unique("latency")),
                LatTransport::Ipc => format!(
                    "ipc://{}",
                    std::env::temp_dir().join(unique("ptmp-latency")).display()
                ),
                _ => "tcp://127.0.0.1:*".into(),
            };
            // Sizes go up to 64 MiB, beyond a zmq socket's default bound.
            let max_message = size.max(ptmp::DEFAULT_MAX_MESSAGE);
            let mut rx = Receiver::new(SocketConfig::from_value(
                &json!({"socket": {"type": "PULL", "bind": [addr], "max_message": max_message}}),
            )?)?;
            let ep = rx.bound_endpoints()[0].clone();
            let scfg =
                SocketConfig::from_value(&json!({"socket": {"type": "PUSH", "connect": [ep],
                "linger_ms": a.linger_ms, "max_message": max_message}}))?;
            let h = std::thread::spawn(move || -> BenchResult {
                crate::sys::pin(send_cpu)?;
                let mut tx = Sender::new(scfg)?;
                sender_loop(total, size, rate, |m| tx.send_raw(&[m]).map_err(Into::into))
            });
            let mut f = Frames::new();
            let spins = a.spin.unwrap_or(0);
            while seen < total && !stopping() {
                let mut got = false;
                for _ in 0..spins {
                    if rx.recv_raw_into(&mut f, Some(Duration::ZERO))? {
                        got = true;
                        break;
                    }
                }
                if !got && !rx.recv_raw_into(&mut f, Some(Duration::from_secs(2)))? {
                    break;
                }
                let b = f.get(0).unwrap_or(&[]);
                if b.len() >= 8 {
                    record(&mut hist, stamp(b), a.warmup, &mut seen);
                }
            }
            h.join()
                .map_err(|_| BenchError::fail("sender panicked"))??;
            if let Some(p) = ep.strip_prefix("ipc://") {
                let _ = std::fs::remove_file(p);
            }
            Ok(Measured {
                hist,
                lost: total - seen,
            })
        }
    }
}

/// One latency row: a transport and size, its percentiles, microseconds.
#[derive(Debug, Clone)]
pub struct LatencyRow {
    /// The transport's name as printed.
    pub transport: &'static str,
    /// Message size, bytes.
    pub size: usize,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest.
    pub max_us: f64,
    /// Messages recorded.
    pub samples: u64,
    /// Messages sent but not recorded.
    pub lost: u64,
}

impl Row for LatencyRow {
    fn headers() -> &'static [&'static str] {
        &[
            "transport",
            "size B",
            "p50 us",
            "p90 us",
            "p99 us",
            "p99.9 us",
            "max us",
            "lost",
        ]
    }
    fn cells(&self) -> Vec<Cell> {
        let us = |x: f64| Cell::measure(x, format!("{x:.2}"));
        vec![
            Cell::label(self.transport),
            Cell::param(self.size as f64),
            us(self.p50_us),
            us(self.p90_us),
            us(self.p99_us),
            us(self.p999_us),
            Cell::measure(self.max_us, format!("{:.1}", self.max_us)),
            Cell::count(self.lost),
        ]
    }
}

/// Run the latency suite: every transport at every size.
pub fn run(a: &LatencyArgs) -> BenchResult<Vec<LatencyRow>> {
    let sizes = if let Some(n) = a.tpsets {
        // Room for the set in its slot; the rows give what it takes.
        let max = ptmp::data::tpset_max_len(n as usize)
            .filter(|m| *m <= 64 << 20)
            .ok_or_else(|| BenchError::usage(format!("--tpsets {n}: too many TrigPrims")))?;
        vec![max + 8]
    } else if a.sizes.is_empty() {
        vec![a.size]
    } else {
        a.sizes.clone()
    };
    if let Some(bad) = sizes.iter().find(|s| **s < 8 || **s > 64 << 20) {
        return Err(BenchError::usage(format!(
            "--size {bad}: from 8 bytes (the timestamp) to 64 MiB"
        )));
    }
    if !(a.rate.is_finite() && a.rate > 0.0) {
        return Err(BenchError::usage(format!(
            "--rate {}: must be positive",
            a.rate
        )));
    }
    let cpus = crate::sys::parse_affinity(&a.affinity)?;
    crate::report::table::<LatencyRow>();
    let mut out = Vec::new();
    for &size in &sizes {
        for &t in &a.transports {
            if a.processes && t == LatTransport::Inproc {
                eprintln!("note: zmq inproc row skipped: inproc joins threads of one process, and --processes asks for two");
                continue;
            }
            let r = measure(t, a, size, cpus)?;
            let q = |p: f64| r.hist.value_at_quantile(p) as f64 / 1000.0;
            let row = LatencyRow {
                transport: t.name(),
                size: a.tpsets.map_or(size, tpset_bytes),
                p50_us: q(0.5),
                p90_us: q(0.9),
                p99_us: q(0.99),
                p999_us: q(0.999),
                max_us: r.hist.max() as f64 / 1000.0,
                samples: r.hist.len(),
                lost: r.lost,
            };
            crate::report::row(&row);
            out.push(row);
        }
    }
    let sizes_s: Vec<String> = match a.tpsets {
        Some(n) => vec![format!("{} (TPSets of {n} TrigPrims)", tpset_bytes(n))],
        None => sizes.iter().map(|s| s.to_string()).collect(),
    };
    crate::report::note(format!(
        "\n{} messages of {} bytes at {} per second after {} warmup, {}, {}{}{}.",
        a.count,
        sizes_s.join("/"),
        a.rate,
        a.warmup,
        if a.in_place {
            "round trip (echoed, forwarded in place: one copy per send)"
        } else if a.round_trip {
            "round trip (echoed)"
        } else {
            "one-way"
        },
        if a.processes {
            "the echo in a second process"
        } else {
            "sender and receiver threads in one process"
        },
        a.affinity
            .as_ref()
            .map_or(String::new(), |c| format!(", pinned to CPUs {c}")),
        a.spin
            .map_or(String::new(), |s| format!(", receiver spin {s}"))
    ));
    if let Some(p) = &a.json_out {
        let rows: Vec<_> = out
            .iter()
            .map(|r| {
                json!({"transport": r.transport, "size": r.size, "round_trip": a.round_trip,
                "processes": a.processes, "in_place": a.in_place, "tpsets": a.tpsets,
                "p50_us": r.p50_us, "p90_us": r.p90_us, "p99_us": r.p99_us,
                "p999_us": r.p999_us, "max_us": r.max_us,
                "samples": r.samples, "lost": r.lost})
            })
            .collect();
        std::fs::write(p, json!({"suite": "latency", "rows": rows}).to_string())
            .map_err(|e| BenchError::fail(format!("{}: {e}", p.display())))?;
    }
    Ok(out)
}

/// The jitter loop's result.
#[derive(Debug, Clone)]
pub struct JitterRow {
    /// Pairs of clock reads.
    pub loops: u64,
    /// Smallest gap between two reads, ns.
    pub min_ns: u64,
    /// Largest gap, ns.
    pub max_ns: u64,
    /// Gaps over 1 us, 10 us, 100 us and 1 ms.
    pub over: [u64; 4],
}

impl Row for JitterRow {
    fn headers() -> &'static [&'static str] {
        &[
            "loops", "min ns", "max ns", "> 1 us", "> 10 us", "> 100 us", "> 1 ms",
        ]
    }
    fn cells(&self) -> Vec<Cell> {
        let mut c = vec![
            Cell::param(self.loops as f64),
            Cell::count(self.min_ns),
            Cell::count(self.max_ns),
        ];
        c.extend(self.over.iter().map(|&n| Cell::count(n)));
        c
    }
}

#[derive(Debug, clap::Args)]
pub struct JitterArgs {
    /// Loops of two back-to-back clock reads (smx_perf's -j).
    #[arg(short = 'j', long, default_value_t = 10_000_000)]
    pub loops: u64,
}

/// smx_perf's jitter loop: read CLOCK_MONOTONIC twice in a tight loop and
/// keep the smallest and largest difference; large ones are the machine
/// taking the core away (interrupts, preemption), the floor under every
/// latency figure.
pub fn jitter(a: &JitterArgs) -> BenchResult<Vec<JitterRow>> {
    if a.loops == 0 {
        return Err(BenchError::usage("-j must be at least 1"));
    }
    let (mut min, mut max) = (u64::MAX, 0u64);
    let mut over = [0u64; 4]; // > 1 us, > 10 us, > 100 us, > 1 ms
    for _ in 0..a.loops {
        let t1 = mono_ns();
        let t2 = mono_ns();
        let d = t2.saturating_sub(t1);
        min = min.min(d);
        max = max.max(d);
        for (k, lim) in [1_000, 10_000, 100_000, 1_000_000].iter().enumerate() {
            if d > *lim {
                over[k] += 1;
            }
        }
    }
    crate::report::table::<JitterRow>();
    let row = JitterRow {
        loops: a.loops,
        min_ns: min,
        max_ns: max,
        over,
    };
    crate::report::row(&row);
    Ok(vec![row])
}
