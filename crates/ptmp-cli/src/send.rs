//! `ptmp send`: PTMP's check_send / check_send_rates.

use crate::common::{progress, stopping, CliError, CliResult, SockArgs};
use ptmp::{Sender, SocketType, TPSet, TrigPrim};
use std::time::{Duration, Instant};

#[derive(Debug, clap::Args)]
pub struct SendArgs {
    /// Number of TPSets to send.
    #[arg(short = 'n', long = "ntpsets", default_value_t = 10000)]
    pub count: u64,
    #[command(flatten)]
    pub sock: SockArgs,
    /// TrigPrims in each TPSet.
    #[arg(short = 'N', long = "ntps", default_value_t = 0)]
    pub ntps: u32,
    /// Detector id of the sets.
    #[arg(short = 'd', long, default_value_t = 0)]
    pub detid: u32,
    /// Ticks between the tstart of consecutive sets.
    #[arg(long, default_value_t = 25)]
    pub tspan: u32,
    /// Milliseconds to wait after creating the socket before sending.
    #[arg(short = 'B', long = "begin-wait", default_value_t = 0)]
    pub begin_wait: u64,
    /// Milliseconds to wait after the last send before closing.
    #[arg(short = 'E', long = "end-wait", default_value_t = 0)]
    pub end_wait: u64,
    /// Send at this many TPSets per second (default: as fast as possible).
    #[arg(short = 'r', long)]
    pub rate: Option<f64>,
    /// PUB only: wait until this many subscribers are subscribed before the
    /// first send (no message lost to slow joiners).
    #[arg(long)]
    pub subscribers: Option<usize>,
    /// Give up waiting for subscribers after this many milliseconds.
    #[arg(long, default_value_t = 10000)]
    pub subscribers_timeout: u64,
    /// How long closing waits for queued messages to be delivered (ms, -1 forever).
    #[arg(long)]
    pub linger: Option<i32>,
    /// Print a JSON summary as the last line on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Fill `t` for message `i` (count, created, tstart and TPs), reusing its storage.
pub fn fill(t: &mut TPSet, i: u64, detid: u32, ntps: u32, tspan: u32) {
    let tstart = i * u64::from(tspan);
    t.count = i as u32;
    t.detid = detid;
    t.created = ptmp::data::now_us();
    t.tstart = tstart;
    t.tspan = Some(tspan);
    if ntps > 0 {
        t.chanbeg = Some(0);
        t.chanend = Some(ntps - 1);
        t.totaladc = Some((0..ntps).map(|c| 100 + c).sum());
    }
    t.tps.resize(ntps as usize, TrigPrim::default());
    for (c, tp) in t.tps.iter_mut().enumerate() {
        *tp = TrigPrim {
            channel: c as u32,
            tstart: tstart + c as u64 % u64::from(tspan.max(1)),
            tspan: Some(1),
            adcsum: Some(100 + c as u32),
            adcpeak: Some(10),
            flags: Some(0),
        };
    }
}

pub fn run(a: &SendArgs) -> CliResult {
    let mut cfg = a.sock.to_config(None)?;
    if let Some(k) = a.subscribers {
        if !matches!(cfg.stype, SocketType::Pub | SocketType::XPub) {
            return Err(CliError::usage(format!(
                "--subscribers {k}: only a PUB sender waits for subscribers, this one is {}",
                cfg.stype
            )));
        }
        cfg.subscribers = k;
        cfg.subscribers_timeout_ms = a.subscribers_timeout;
    }
    if let Some(l) = a.linger {
        if l < -1 {
            return Err(CliError::usage(format!("--linger {l}: must be -1 or more")));
        }
        cfg.linger_ms = l;
    }
    if let Some(r) = a.rate {
        if !(r.is_finite() && r > 0.0) {
            return Err(CliError::usage(format!(
                "--rate {r}: must be a positive number"
            )));
        }
    }
    let mut tx = Sender::from_config(&cfg)?;
    std::thread::sleep(Duration::from_millis(a.begin_wait));
    if cfg.subscribers > 0 {
        let n = tx.wait_configured()?;
        eprintln!("{n} subscriber(s) ready");
    }
    let pb = progress(a.count, "send");
    let mut t = TPSet::default();
    let period = a.rate.map(|r| Duration::from_secs_f64(1.0 / r));
    let start = Instant::now();
    let mut sent = 0u64;
    for i in 0..a.count {
        if let Some(p) = period {
            let due = start + p.mul_f64(i as f64);
            pace_until(due);
        }
        if i & 1023 == 0 {
            if stopping() {
                break;
            }
            pb.set_position(i);
        }
        fill(&mut t, i, a.detid, a.ntps, a.tspan);
        tx.send(&t)?;
        sent += 1;
    }
    let elapsed = start.elapsed().as_secs_f64();
    pb.finish_and_clear();
    std::thread::sleep(Duration::from_millis(a.end_wait));
    // Dropping the sender waits (up to linger) until the queue has drained.
    let drain = Instant::now();
    drop(tx);
    let drain_s = drain.elapsed().as_secs_f64();
    let rate = if elapsed > 0.0 {
        sent as f64 / elapsed
    } else {
        0.0
    };
    eprintln!("sent {sent} TPSets in {elapsed:.3} s ({rate:.0} Hz), drained in {drain_s:.3} s");
    if a.json {
        println!(
            "{}",
            serde_json::json!({"sent": sent, "elapsed_s": elapsed, "rate_hz": rate, "drain_s": drain_s})
        );
    }
    Ok(())
}

/// Wait until `due`: sleep while far, then spin for precision.
pub fn pace_until(due: Instant) {
    loop {
        let now = Instant::now();
        if now >= due {
            return;
        }
        let left = due - now;
        if left > Duration::from_micros(200) {
            std::thread::sleep(left - Duration::from_micros(100));
        } else {
            std::hint::spin_loop();
        }
    }
}
