//! `ptmp bench fanout`: one PUB to 1, 2, 3 SUBs and one PUSH to 1, 2, 3
//! PULLs (PTMP's observation: more SUBs, more loss; PULLs share the stream
//! round-robin). Per-receiver rate and loss, measured from sequence numbers.

use crate::error::{BenchError, BenchResult};
use crate::report::{Cell, Row};
use ptmp::{Receiver, Sender, TPSet};
use serde_json::json;
use std::time::{Duration, Instant};

#[derive(Debug, clap::Args)]
pub struct FanoutArgs {
    /// TPSets the sender sends per run.
    #[arg(short = 'n', long, default_value_t = 1_000_000)]
    pub count: u64,
    /// Receiver counts.
    #[arg(long, num_args = 1.., default_values = ["1", "2", "3"])]
    pub receivers: Vec<usize>,
    /// Transport: tcp, ipc or inproc (zmq).
    #[arg(long, default_value = "tcp")]
    pub transport: String,
}

/// One fan-out run: a pattern, a number of receivers, what each got.
#[derive(Debug, Clone)]
pub struct FanoutRow {
    /// PUB/SUB or PUSH/PULL.
    pub pubsub: bool,
    /// Receivers.
    pub receivers: usize,
    /// Each receiver's rate, thousands of TPSets per second.
    pub khz: Vec<f64>,
    /// TPSets each receiver got.
    pub received: Vec<u64>,
    /// TPSets each SUB missed; for PULLs, one figure for all of them.
    pub lost: Vec<u64>,
    /// TPSets received by all receivers together.
    pub total: u64,
}

impl Row for FanoutRow {
    fn headers() -> &'static [&'static str] {
        &[
            "pattern",
            "receivers",
            "per-receiver kHz",
            "per-receiver received",
            "per-receiver lost",
            "total received",
        ]
    }
    fn cells(&self) -> Vec<Cell> {
        let counts = |v: &[u64]| {
            let f: Vec<f64> = v.iter().map(|&x| x as f64).collect();
            Cell::list(&f, |x| x.to_string())
        };
        vec![
            Cell::label(if self.pubsub { "pubsub" } else { "pushpull" }),
            Cell::param(self.receivers as f64),
            Cell::list(&self.khz, |r| format!("{r:.0}")),
            counts(&self.received),
            counts(&self.lost),
            Cell::count(self.total),
        ]
    }
}

/// Run the fan-out suite: PUB to each number of SUBs, PUSH to each number
/// of PULLs.
pub fn run(a: &FanoutArgs) -> BenchResult<Vec<FanoutRow>> {
    crate::report::table::<FanoutRow>();
    let mut out = Vec::new();
    for (st, rt) in [("PUB", "SUB"), ("PUSH", "PULL")] {
        for &k in &a.receivers {
            if k == 0 {
                return Err(BenchError::usage("receiver counts must be at least 1"));
            }
            let addr = match a.transport.as_str() {
                "tcp" => "tcp://127.0.0.1:*".to_string(),
                "ipc" => format!(
                    "ipc://{}",
                    std::env::temp_dir()
                        .join(format!("ptmp-fanout-{}-{st}-{k}", std::process::id()))
                        .display()
                ),
                "inproc" => format!("inproc://fanout-{st}-{k}"),
                t => {
                    return Err(BenchError::usage(format!(
                        "--transport {t}: use tcp, ipc or inproc"
                    )))
                }
            };
            let mut scfg = json!({"socket": {"type": st, "bind": [addr]}});
            if st == "PUB" {
                scfg["socket"]["subscribers"] = json!(k);
            }
            let mut tx = Sender::from_json(&scfg.to_string())?;
            let ep = tx.bound_endpoints()[0].clone();
            let n = a.count;
            let rxs: Vec<_> = (0..k)
                .map(|_| {
                    let mut rx = Receiver::from_json(
                        &json!({"socket": {"type": rt, "connect": [ep]}}).to_string(),
                    )?;
                    Ok(std::thread::spawn(move || {
                        let mut t = TPSet::default();
                        let (mut got, mut first, mut last) = (0u64, None, Instant::now());
                        while let Ok(true) = rx.recv_into(&mut t, Some(Duration::from_millis(500)))
                        {
                            got += 1;
                            first.get_or_insert_with(Instant::now);
                            last = Instant::now();
                            if u64::from(t.count) + 1 == n {
                                break;
                            }
                        }
                        let secs = first.map_or(0.0, |f: Instant| (last - f).as_secs_f64());
                        (got, secs)
                    }))
                })
                .collect::<BenchResult<_>>()?;
            if st == "PUB" {
                tx.wait_configured()?;
            } else {
                // Let every PULL connect before the first send, or the first
                // to connect takes the whole start of the stream.
                std::thread::sleep(Duration::from_millis(200));
            }
            let mut t = crate::tpset::tpset(0);
            for i in 0..n {
                t.count = i as u32;
                t.created = ptmp::data::now_us();
                tx.send(&t)?;
            }
            drop(tx);
            let mut rates = Vec::new();
            let mut gots = Vec::new();
            for h in rxs {
                let (got, secs) = h
                    .join()
                    .map_err(|_| BenchError::fail("receiver panicked"))?;
                rates.push(if secs > 0.0 {
                    got as f64 / secs / 1e3
                } else {
                    0.0
                });
                gots.push(got);
            }
            let total: u64 = gots.iter().sum();
            // A SUB should get every set; PULLs share them.
            let lost: Vec<u64> = if st == "PUB" {
                gots.iter().map(|g| n - g.min(&n)).collect()
            } else {
                vec![n - total.min(n)]
            };
            if let Some(p) = ep.strip_prefix("ipc://") {
                let _ = std::fs::remove_file(p);
            }
            let row = FanoutRow {
                pubsub: st == "PUB",
                receivers: k,
                khz: rates,
                received: gots,
                lost,
                total,
            };
            crate::report::row(&row);
            out.push(row);
        }
    }
    crate::report::note(format!(
        "\n{} TPSets per run over zmq {}; pushpull 'lost' is for all PULLs together.",
        a.count, a.transport
    ));
    Ok(out)
}
