//! An agent wrapped with its metric sender (the `metrics` key of
//! [`crate::metrics`]): the agent runs as before, and a thread beside it
//! sends the figures of its [`Meter`] every period.

use crate::error::Result;
use crate::graphite::{flatten, Out};
use crate::metrics::{wrap, Config, Meter, Proto};
use crate::stats::JSON_TYPE_FRAME;
use crate::{Agent, Ctl, Report};
use ptmp::Frames;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// An agent with its metric sender: the sender runs on a thread of its own
/// beside the agent, reading the agent's live counts.
pub(crate) struct Metered {
    inner: Box<dyn Agent>,
    cfg: Config,
    out: Sink,
}

enum Sink {
    Json(Box<ptmp::Sender>),
    Glot(Out),
}

impl Metered {
    /// Open the metric socket of `cfg` for `inner`.
    pub(crate) fn new(inner: Box<dyn Agent>, cfg: &Config) -> Result<Self> {
        let name = inner.name().to_string();
        let out = match cfg.proto {
            Proto::Json => Sink::Json(Box::new(crate::io::open_tx(&name, &cfg.socket)?)),
            Proto::Glot => Sink::Glot(Out::open(&name, &cfg.socket)?),
        };
        Ok(Metered {
            inner,
            cfg: cfg.clone(),
            out,
        })
    }
}

impl Agent for Metered {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn run(&mut self, ctl: &Ctl) -> Result<Report> {
        let done = AtomicBool::new(false);
        let name = self.inner.name().to_string();
        let (cfg, out, inner) = (&self.cfg, &mut self.out, &mut self.inner);
        // Taken before the agent starts, so nothing it does is missed
        // while the metrics thread starts.
        let (start, begun) = (ctl.counts.get(), Instant::now());
        let meter = Arc::new(Meter::new(cfg.tickperus));
        let actl = ctl.with_meter(meter.clone());
        let (report, sent) = std::thread::scope(|sc| {
            let h = sc.spawn(|| -> Result<u64> {
                // Sends are not the agent's output: counted on a control
                // of their own.
                let mctl = ctl.fresh();
                let mut last = start;
                let mut next = begun + cfg.period;
                let mut sent = 0u64;
                loop {
                    let now = Instant::now();
                    let ended = done.load(Ordering::Relaxed);
                    if !ended && now < next {
                        std::thread::sleep((next - now).min(crate::POLL));
                        continue;
                    }
                    next += cfg.period;
                    let cur = ctl.counts.get();
                    // At the end, the partial period is sent only when
                    // something happened in it; then the sender stops.
                    if ended {
                        mctl.stop();
                        if cur == last {
                            break;
                        }
                    }
                    let m = meter.take();
                    last = cur;
                    let ok = match out {
                        Sink::Json(tx) => {
                            let text = wrap(&cfg.prefix, m).to_string();
                            let f = Frames::from_slices(&[JSON_TYPE_FRAME, text.as_bytes()]);
                            tx.send_frames_within(&f, crate::POLL)
                                .map_err(crate::Error::socket(&name))?
                        }
                        Sink::Glot(o) => {
                            let mut text = String::new();
                            let mut path = String::from("ptmp");
                            for p in &cfg.prefix {
                                path.push('.');
                                path.push_str(p);
                            }
                            flatten(&m, &path, ptmp_data::now_us() / 1_000_000, &mut text);
                            o.emit(&text, &mctl, &name)?
                        }
                    };
                    sent += u64::from(ok);
                    if ended {
                        break;
                    }
                }
                Ok(sent)
            });
            let r = inner.run(&actl);
            done.store(true, Ordering::Relaxed);
            let sent = h
                .join()
                .unwrap_or_else(|_| Err(crate::Error::run(&name, "the metrics thread panicked")));
            (r, sent)
        });
        let mut r = report?;
        r.counters.push(("metrics_sent".into(), sent?));
        Ok(r)
    }
}
