//! `ptmp bench babus`: the benchmark profile of Babus, a shared-memory
//! message bus in C++ (<https://github.com/steplee/babus>), over ptmp's shared
//! memory, and with `--redis` over Redis streams in the same run. Producers:
//! imu 128 B at 1 kHz, image 1920x1080x3 = 6,220,800 B at 30 Hz,
//! med01..med05 356 B at 40..44 Hz. Consumers, each one thread waiting on all
//! its channels at once: imu; image; image+med01; image+med0[1-5];
//! imu+image+med0[1-5]. Latency is receive time minus a CLOCK_MONOTONIC stamp
//! the producer writes into the payload just before publishing; "view" is
//! taken before copying the message out, "view+copy" after. A plain memcpy of
//! an image is measured beside.

mod redis;

use crate::error::{BenchError, BenchResult};
use crate::report::{Cell, Row};
use crate::sys::mono_ns;
use crate::sys::stopping;
use hdrhistogram::Histogram;
use ptmp_shm::{wait_any, ChannelConfig, Policy, Reader, StartAt, Writer};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, clap::Args)]
pub struct BabusArgs {
    /// Seconds to run each transport (Babus used 30).
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Image size in bytes (Babus: 1920x1080x3; 1080 for its small-message run).
    #[arg(long, default_value_t = 6_220_800)]
    pub image_bytes: usize,
    /// Also run the scenario over Redis streams (XADD / XREAD BLOCK) on a
    /// redis-server the harness starts on loopback, over TCP and a Unix
    /// socket; skipped with a note when redis-server is not installed.
    #[arg(long)]
    pub redis: bool,
}

pub(crate) struct Producer {
    pub name: &'static str,
    pub bytes: usize,
    pub hz: f64,
    pub slots: usize,
}

pub(crate) fn producers(image_bytes: usize) -> [Producer; 7] {
    let p = |name, bytes, hz, slots| Producer {
        name,
        bytes,
        hz,
        slots,
    };
    [
        p("imu", 128, 1000.0, 1024),
        p("image", image_bytes, 30.0, 8),
        p("med01", 356, 40.0, 64),
        p("med02", 356, 41.0, 64),
        p("med03", 356, 42.0, 64),
        p("med04", 356, 43.0, 64),
        p("med05", 356, 44.0, 64),
    ]
}

pub(crate) type Consumer = (&'static str, &'static [&'static str]);

pub(crate) const CONSUMERS: [Consumer; 5] = [
    ("imu", &["imu"]),
    ("image", &["image"]),
    ("image+med01", &["image", "med01"]),
    (
        "image+med0[1-5]",
        &["image", "med01", "med02", "med03", "med04", "med05"],
    ),
    (
        "imu+image+med0[1-5]",
        &["imu", "image", "med01", "med02", "med03", "med04", "med05"],
    ),
];

pub(crate) fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

/// Latencies of one consumer on one channel.
pub(crate) struct Stats {
    pub view: Histogram<u64>,
    pub copy: Histogram<u64>,
    pub lost: u64,
}

impl Stats {
    pub fn new() -> Self {
        Stats {
            view: hist(),
            copy: hist(),
            lost: 0,
        }
    }

    /// Record a message stamped `stamp`, viewed at `t_view`, copied by `t_copy`.
    pub fn record(&mut self, stamp: u64, t_view: u64, t_copy: u64) {
        let _ = self.view.record(t_view.saturating_sub(stamp).max(1));
        let _ = self.copy.record(t_copy.saturating_sub(stamp).max(1));
    }
}

/// What one run of the scenario measured over one transport.
pub(crate) struct Outcome {
    pub consumers: Vec<(&'static str, &'static [&'static str], Vec<Stats>)>,
    /// (producer, write latency, messages published)
    pub producers: Vec<(String, Histogram<u64>, u64)>,
}

/// A consumer thread: its name, what it reads and its figures per source.
type ConsumerThread = std::thread::JoinHandle<(&'static str, &'static [&'static str], Vec<Stats>)>;

impl Outcome {
    /// Wait for the producers, give the consumers `settle` to take what is
    /// still on its way, then stop and wait for them.
    pub(crate) fn join(
        producers: Vec<std::thread::JoinHandle<(String, Histogram<u64>, u64)>>,
        consumers: Vec<ConsumerThread>,
        stop: &AtomicBool,
        settle: Duration,
    ) -> BenchResult<Outcome> {
        let mut out = Outcome {
            consumers: Vec::new(),
            producers: Vec::new(),
        };
        for h in producers {
            let p = h
                .join()
                .map_err(|_| BenchError::fail("producer panicked"))?;
            out.producers.push(p);
        }
        std::thread::sleep(settle);
        stop.store(true, Ordering::Relaxed);
        for h in consumers {
            let c = h
                .join()
                .map_err(|_| BenchError::fail("consumer panicked"))?;
            out.consumers.push(c);
        }
        Ok(out)
    }
}

/// Run each producer in a thread for `secs`, paced by sleeping. `publish`
/// gets the producer's index, size and message number and returns when the
/// message is out (it writes the stamp last).
pub(crate) fn run_producers<P>(
    secs: f64,
    prods: [Producer; 7],
    mut make: impl FnMut(usize) -> P,
) -> Vec<std::thread::JoinHandle<(String, Histogram<u64>, u64)>>
where
    P: FnMut(usize, u64) -> bool + Send + 'static,
{
    prods
        .into_iter()
        .enumerate()
        .map(|(k, p)| {
            let mut publish = make(k);
            std::thread::spawn(move || {
                let mut wh = hist();
                let period = Duration::from_secs_f64(1.0 / p.hz);
                let t0 = Instant::now();
                let mut i = 0u64;
                while t0.elapsed().as_secs_f64() < secs && !stopping() {
                    let due = t0 + period.mul_f64(i as f64);
                    if let Some(d) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(d);
                    }
                    let start = mono_ns();
                    if !publish(p.bytes, i) {
                        break;
                    }
                    let _ = wh.record(mono_ns().saturating_sub(start).max(1));
                    i += 1;
                }
                (p.name.to_string(), wh, i)
            })
        })
        .collect()
}

/// One consumer's latencies on one of its channels, microseconds.
#[derive(Debug, Clone)]
pub struct ConsumerRow {
    /// "ptmp shm", "redis tcp" or "redis unix".
    pub transport: String,
    /// The consumer, named by the channels it waits on.
    pub consumer: &'static str,
    /// The channel.
    pub channel: &'static str,
    /// Messages received.
    pub received: u64,
    /// Stamp to view, median.
    pub view_p50_us: f64,
    /// Stamp to view, 99th percentile.
    pub view_p99_us: f64,
    /// Stamp to copied out, median.
    pub copy_p50_us: f64,
    /// Stamp to copied out, 99th percentile.
    pub copy_p99_us: f64,
    /// Messages overwritten before the consumer read them.
    pub lost: u64,
}

impl Row for ConsumerRow {
    fn headers() -> &'static [&'static str] {
        &[
            "transport",
            "consumer",
            "channel",
            "received",
            "view p50 us",
            "view p99 us",
            "view+copy p50 us",
            "view+copy p99 us",
            "lost",
        ]
    }
    fn cells(&self) -> Vec<Cell> {
        let us = |x: f64| Cell::measure(x, format!("{x:.1}"));
        vec![
            Cell::label(&self.transport),
            Cell::label(self.consumer),
            Cell::label(self.channel),
            Cell::count(self.received),
            us(self.view_p50_us),
            us(self.view_p99_us),
            us(self.copy_p50_us),
            us(self.copy_p99_us),
            Cell::count(self.lost),
        ]
    }
}

/// One producer's publishing cost, microseconds.
#[derive(Debug, Clone)]
pub struct ProducerRow {
    /// "ptmp shm", "redis tcp" or "redis unix".
    pub transport: String,
    /// The producer (its channel).
    pub producer: String,
    /// Messages published.
    pub published: u64,
    /// Time to publish one, median.
    pub write_p50_us: f64,
    /// Time to publish one, 99th percentile.
    pub write_p99_us: f64,
}

impl Row for ProducerRow {
    fn headers() -> &'static [&'static str] {
        &[
            "transport",
            "producer",
            "published",
            "write p50 us",
            "write p99 us",
        ]
    }
    fn cells(&self) -> Vec<Cell> {
        let us = |x: f64| Cell::measure(x, format!("{x:.1}"));
        vec![
            Cell::label(&self.transport),
            Cell::label(&self.producer),
            Cell::param(self.published as f64),
            us(self.write_p50_us),
            us(self.write_p99_us),
        ]
    }
}

/// The Babus suite's two tables.
#[derive(Debug, Clone, Default)]
pub struct BabusRows {
    /// Per consumer and channel.
    pub consumers: Vec<ConsumerRow>,
    /// Per producer.
    pub producers: Vec<ProducerRow>,
}

/// Run the Babus scenario over ptmp's shared memory, and over Redis
/// streams when asked.
pub fn run(a: &BabusArgs) -> BenchResult<BabusRows> {
    if !(a.seconds > 0.0 && a.seconds.is_finite()) || a.image_bytes < 8 {
        return Err(BenchError::usage(
            "--seconds must be positive and --image-bytes at least 8",
        ));
    }
    let mut runs: Vec<(String, Outcome)> = vec![("ptmp shm".into(), run_shm(a)?)];
    if a.redis {
        match crate::redis::RedisServer::start() {
            Ok(server) => {
                for (label, url) in [
                    ("redis tcp", server.tcp_url()),
                    ("redis unix", server.unix_url()),
                ] {
                    runs.push((label.into(), redis::run_babus(a, &url)?));
                }
            }
            Err(note) => eprintln!("note: Redis rows skipped: {note}"),
        }
    }
    Ok(report(a, &runs))
}

fn run_shm(a: &BabusArgs) -> BenchResult<Outcome> {
    let id = std::process::id();
    let prods = producers(a.image_bytes);
    let chan = |p: &str| format!("babus-{id}-{p}");
    let fail = |e: ptmp_shm::ShmError| BenchError::fail(e.to_string());
    let mut writers = Vec::new();
    for p in &prods {
        let cfg = ChannelConfig {
            slots: p.slots,
            max_message: p.bytes,
            policy: Policy::Overwrite,
        };
        writers.push(Some(Writer::create(&chan(p.name), cfg).map_err(fail)?));
    }
    let stop = Arc::new(AtomicBool::new(false));
    // Consumers first, so they see everything from the first message.
    let mut consumers = Vec::new();
    for (cname, chans) in CONSUMERS {
        let mut readers: Vec<Reader> = chans
            .iter()
            .map(|c| Reader::attach(&chan(c), StartAt::Next))
            .collect::<Result<_, _>>()
            .map_err(fail)?;
        let stop = stop.clone();
        let max = a.image_bytes;
        consumers.push(std::thread::spawn(move || {
            let mut stats: Vec<Stats> = chans.iter().map(|_| Stats::new()).collect();
            let mut buf = vec![0u8; max];
            let mut ready = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                {
                    let refs: Vec<&Reader> = readers.iter().collect();
                    let _ = wait_any(&refs, Some(Duration::from_millis(100)), &mut ready);
                }
                for &i in &ready {
                    let Some(v) = readers[i].view(Some(Duration::ZERO)) else {
                        continue;
                    };
                    let b = v.bytes();
                    let stamp = u64::from_le_bytes(b[..8].try_into().expect("8"));
                    let t_view = mono_ns();
                    buf[..b.len()].copy_from_slice(b);
                    let t_copy = mono_ns();
                    stats[i].lost += v.received.lost;
                    if v.valid() {
                        stats[i].record(stamp, t_view, t_copy);
                    }
                }
            }
            (cname, chans, stats)
        }));
    }
    // Producers write the payload in place, the stamp last, then commit.
    let prod = run_producers(a.seconds, prods, |k| {
        let mut w = writers[k].take().expect("one writer per producer");
        move |bytes: usize, i: u64| {
            let Ok(mut loan) = w.loan(bytes) else {
                return false;
            };
            loan[8..].fill(i as u8);
            loan[..8].copy_from_slice(&mono_ns().to_le_bytes());
            loan.commit();
            true
        }
    });
    let out = Outcome::join(prod, consumers, &stop, Duration::from_millis(200))?;
    for p in ["imu", "image", "med01", "med02", "med03", "med04", "med05"] {
        let _ = ptmp_shm::remove(&chan(p));
    }
    Ok(out)
}

fn us(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}

fn report(a: &BabusArgs, runs: &[(String, Outcome)]) -> BabusRows {
    let mut rows = BabusRows::default();
    crate::report::table::<ConsumerRow>();
    for (t, o) in runs {
        for (cname, chans, stats) in &o.consumers {
            for (c, s) in chans.iter().zip(stats) {
                let row = ConsumerRow {
                    transport: t.clone(),
                    consumer: cname,
                    channel: c,
                    received: s.view.len(),
                    view_p50_us: us(&s.view, 0.5),
                    view_p99_us: us(&s.view, 0.99),
                    copy_p50_us: us(&s.copy, 0.5),
                    copy_p99_us: us(&s.copy, 0.99),
                    lost: s.lost,
                };
                crate::report::row(&row);
                rows.consumers.push(row);
            }
        }
    }
    crate::report::note(String::new());
    crate::report::table::<ProducerRow>();
    for (t, o) in runs {
        for (name, wh, n) in &o.producers {
            let row = ProducerRow {
                transport: t.clone(),
                producer: name.clone(),
                published: *n,
                write_p50_us: us(wh, 0.5),
                write_p99_us: us(wh, 0.99),
            };
            crate::report::row(&row);
            rows.producers.push(row);
        }
    }
    // The floor for view+copy of an image: a plain memcpy of the same size.
    let src = vec![7u8; a.image_bytes];
    let mut dst = vec![0u8; a.image_bytes];
    let mut mh = hist();
    for _ in 0..30 {
        let t = mono_ns();
        dst.copy_from_slice(&src);
        std::hint::black_box(&dst);
        let _ = mh.record(mono_ns().saturating_sub(t).max(1));
    }
    crate::report::note(format!(
        "\nplain memcpy of {} bytes: p50 {:.1} us, p99 {:.1} us ({} s per transport{})",
        a.image_bytes,
        us(&mh, 0.5),
        us(&mh, 0.99),
        a.seconds,
        if stopping() { ", interrupted" } else { "" }
    ));
    rows
}
