//! `ptmp bench babus`: the Babus profile (seed 004) over ptmp's shared
//! memory. Producers: imu 128 B at 1 kHz, image 1920x1080x3 = 6,220,800 B at
//! 30 Hz, med01..med05 356 B at 40..44 Hz. Consumers, each one thread
//! waiting on all its channels at once: imu; image; image+med01;
//! image+med0[1-5]; imu+image+med0[1-5]. Latency is receive time minus a
//! CLOCK_MONOTONIC stamp the producer writes into the payload just before
//! publishing; "view" is taken in place before copying, "view+copy" after
//! copying the message out. A plain memcpy of an image is measured beside.

use crate::common::{stopping, CliError, CliResult};
use hdrhistogram::Histogram;
use ptmp_shm::{wait_any, ChannelConfig, Policy, Reader, StartAt, Writer};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, clap::Args)]
pub struct BabusArgs {
    /// Seconds to run (Babus used 30).
    #[arg(short = 'd', long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Image size in bytes (Babus: 1920x1080x3; 1080 for its small-message run).
    #[arg(long, default_value_t = 6_220_800)]
    pub image_bytes: usize,
}

fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

struct Producer {
    name: &'static str,
    bytes: usize,
    hz: f64,
    slots: usize,
}

const CONSUMERS: [(&str, &[&str]); 5] = [
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

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

struct Stats {
    view: Histogram<u64>,
    copy: Histogram<u64>,
    lost: u64,
}

pub fn run(a: &BabusArgs) -> CliResult {
    if !(a.seconds > 0.0 && a.seconds.is_finite()) || a.image_bytes < 8 {
        return Err(CliError::usage(
            "--seconds must be positive and --image-bytes at least 8",
        ));
    }
    let id = std::process::id();
    let producers = [
        Producer {
            name: "imu",
            bytes: 128,
            hz: 1000.0,
            slots: 1024,
        },
        Producer {
            name: "image",
            bytes: a.image_bytes,
            hz: 30.0,
            slots: 8,
        },
        Producer {
            name: "med01",
            bytes: 356,
            hz: 40.0,
            slots: 64,
        },
        Producer {
            name: "med02",
            bytes: 356,
            hz: 41.0,
            slots: 64,
        },
        Producer {
            name: "med03",
            bytes: 356,
            hz: 42.0,
            slots: 64,
        },
        Producer {
            name: "med04",
            bytes: 356,
            hz: 43.0,
            slots: 64,
        },
        Producer {
            name: "med05",
            bytes: 356,
            hz: 44.0,
            slots: 64,
        },
    ];
    let chan = |p: &str| format!("babus-{id}-{p}");
    let fail = |e: ptmp_shm::ShmError| CliError::fail(e.to_string());
    let mut writers = Vec::new();
    for p in &producers {
        let cfg = ChannelConfig {
            slots: p.slots,
            max_message: p.bytes,
            policy: Policy::Overwrite,
        };
        writers.push(Writer::create(&chan(p.name), cfg).map_err(fail)?);
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
            let mut stats: Vec<Stats> = chans
                .iter()
                .map(|_| Stats {
                    view: hist(),
                    copy: hist(),
                    lost: 0,
                })
                .collect();
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
                    let lost = v.received.lost;
                    if v.valid() {
                        let s = &mut stats[i];
                        let _ = s.view.record(t_view.saturating_sub(stamp).max(1));
                        let _ = s.copy.record(t_copy.saturating_sub(stamp).max(1));
                    }
                    stats[i].lost += lost;
                }
            }
            (cname, chans, stats)
        }));
    }
    // Producers: each paced by sleeping; write the payload, then the stamp
    // last, then commit.
    let mut prod = Vec::new();
    let secs = a.seconds;
    for (p, mut w) in producers.into_iter().zip(writers) {
        let stop = stop.clone();
        prod.push(std::thread::spawn(
            move || -> (String, Histogram<u64>, u64) {
                let mut wh = hist();
                let period = Duration::from_secs_f64(1.0 / p.hz);
                let t0 = Instant::now();
                let mut i = 0u64;
                while t0.elapsed().as_secs_f64() < secs && !stop.load(Ordering::Relaxed) {
                    let due = t0 + period.mul_f64(i as f64);
                    if let Some(d) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(d);
                    }
                    let start = mono_ns();
                    let Ok(mut loan) = w.loan(p.bytes) else { break };
                    loan[8..].fill(i as u8);
                    loan[..8].copy_from_slice(&mono_ns().to_le_bytes());
                    loan.commit();
                    let _ = wh.record(mono_ns().saturating_sub(start).max(1));
                    i += 1;
                }
                (p.name.to_string(), wh, i)
            },
        ));
    }
    let mut written = Vec::new();
    for h in prod {
        written.push(h.join().map_err(|_| CliError::fail("producer panicked"))?);
    }
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    let us = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    println!("| consumer | channel | received | view p50 us | view p99 us | view+copy p50 us | view+copy p99 us | lost |");
    println!("|---|---|---|---|---|---|---|---|");
    for h in consumers {
        let (cname, chans, stats) = h.join().map_err(|_| CliError::fail("consumer panicked"))?;
        for (c, s) in chans.iter().zip(stats) {
            println!(
                "| {cname} | {c} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {} |",
                s.view.len(),
                us(&s.view, 0.5),
                us(&s.view, 0.99),
                us(&s.copy, 0.5),
                us(&s.copy, 0.99),
                s.lost
            );
        }
    }
    println!("\n| producer | published | write p50 us | write p99 us |");
    println!("|---|---|---|---|");
    for (name, wh, n) in &written {
        println!(
            "| {name} | {n} | {:.1} | {:.1} |",
            us(wh, 0.5),
            us(wh, 0.99)
        );
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
    println!(
        "\nplain memcpy of {} bytes: p50 {:.1} us, p99 {:.1} us ({} s run{})",
        a.image_bytes,
        us(&mh, 0.5),
        us(&mh, 0.99),
        a.seconds,
        if stopping() { ", interrupted" } else { "" }
    );
    for p in ["imu", "image", "med01", "med02", "med03", "med04", "med05"] {
        let _ = ptmp_shm::remove(&chan(p));
    }
    Ok(())
}
