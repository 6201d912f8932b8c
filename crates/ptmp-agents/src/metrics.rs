//! The `metrics` key every agent accepts, as PTMP's agents do: every
//! `period` milliseconds the agent sends what it received and sent in that
//! period to a socket of its own.
//!
//! Keys of `metrics` (PTMP's): the socket config itself (`{"socket": {...}}`;
//! an older form `{"output": {"socket": ...}}` is read too), `period` ms
//! (default 10000), `proto` "JSON" (default) or "GLOT", `prefix` (dots at
//! its ends trimmed).
//!
//! The figures, for one period: `{"in": {"ntpsets": N, "rates": {"tpsets":
//! Hz}}, "out": {...}}`, counted in messages (TPSets for every agent but
//! czmqat, which copies any message). PTMP's `in.rates.tpsets` and
//! `out.rates.tpsets` keep their names; the latency and TP figures some of
//! PTMP's agents add are not sent.
//!
//! Shapes, as PTMP's Metric sends them:
//! * JSON: two frames, the JSON type tag text `1246973774` and
//!   `{"ptmp": {<prefix parts>...: figures}}` (prefix `a.b` nests under
//!   `"a"` then `"b"`);
//! * GLOT: Graphite plaintext lines `ptmp.<prefix>.in.rates.tpsets VALUE
//!   SECONDS`, to carbon over a STREAM socket (as `stats_graphite`), or as
//!   GLOT-tagged messages on any other socket type.
//!
//! Metric messages are not counted as the agent's output.

use crate::cfg::{socket_at, Cfg};
use crate::error::Result;
use crate::graphite::{flatten, Out};
use crate::stats::JSON_TYPE_FRAME;
use crate::{Agent, Ctl, Report};
use ptmp::{Frames, SocketConfig};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The metric protocols PTMP knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    /// JSON messages tagged with the JSON type.
    Json,
    /// Graphite plaintext lines.
    Glot,
}

/// A validated `metrics` configuration (keys in the module docs).
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the metric messages go.
    pub socket: SocketConfig,
    /// Time between messages.
    pub period: Duration,
    /// JSON or GLOT.
    pub proto: Proto,
    /// Path parts after `ptmp`, from `prefix`.
    pub prefix: Vec<String>,
}

impl Config {
    /// Read the `metrics` key of an agent's data, if given.
    pub fn parse(c: &Cfg) -> Result<Option<Config>> {
        let Some(v) = c.get("metrics") else {
            return Ok(None);
        };
        let m = Cfg::new(format!("{} metrics", c.agent), v)?;
        let socket = match (m.get("socket"), m.get("output")) {
            (Some(_), _) => socket_at(&c.agent, "metrics", v)?,
            (None, Some(o)) => socket_at(&c.agent, "metrics.output", o)?,
            (None, None) => {
                return Err(c.err(
                    "metrics",
                    "(no socket)",
                    "metrics needs a socket config: {\"socket\": {...}, \"period\": ms}",
                ))
            }
        };
        let period = m.int_or("period", 10_000, 1, 86_400_000)? as u64;
        let proto = match m.choice("proto", "JSON", &["JSON", "GLOT"])? {
            "GLOT" => Proto::Glot,
            _ => Proto::Json,
        };
        let prefix = m
            .str_opt("prefix")?
            .map(|p| {
                p.trim_matches('.')
                    .split('.')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        Ok(Some(Config {
            socket,
            period: Duration::from_millis(period),
            proto,
            prefix,
        }))
    }
}

/// The figures of one period: messages in and out and their rates.
pub fn figures(din: u64, dout: u64, secs: f64) -> Value {
    let rate = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    json!({
        "in": {"ntpsets": din, "rates": {"tpsets": rate(din)}},
        "out": {"ntpsets": dout, "rates": {"tpsets": rate(dout)}},
    })
}

/// `m` nested under `ptmp` and the prefix parts, as PTMP's JSON metrics.
pub fn wrap(prefix: &[String], m: Value) -> Value {
    let mut v = m;
    for p in prefix.iter().rev() {
        let mut o = Map::new();
        o.insert(p.clone(), v);
        v = Value::Object(o);
    }
    json!({ "ptmp": v })
}

/// An agent with its metric sender: the sender runs on a thread of its own
/// beside the agent, reading the agent's live counts.
pub struct Metered {
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
    pub fn new(inner: Box<dyn Agent>, cfg: &Config) -> Result<Self> {
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
        let (report, sent) = std::thread::scope(|sc| {
            let h = sc.spawn(|| -> Result<u64> {
                // Sends are not the agent's output: counted on a control
                // of their own.
                let mctl = ctl.fresh();
                let (mut last, mut t0) = (start, begun);
                let mut next = t0 + cfg.period;
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
                    let secs = now.duration_since(t0).as_secs_f64();
                    let m = figures(cur.0 - last.0, cur.1 - last.1, secs);
                    (last, t0) = (cur, now);
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
            let r = inner.run(ctl);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_shape_and_prefix() {
        let m = figures(10, 4, 2.0);
        assert_eq!(m["in"]["rates"]["tpsets"], 5.0);
        assert_eq!(m["out"]["ntpsets"], 4);
        let v = wrap(&["apa5".into(), "win".into()], m.clone());
        assert_eq!(v["ptmp"]["apa5"]["win"], m);
        assert_eq!(wrap(&[], m.clone())["ptmp"], m);
    }

    #[test]
    fn config_keys_as_ptmp() {
        let v = json!({"metrics": {"socket": {"type": "PUB", "bind": ["inproc://m"]},
            "period": 500, "proto": "GLOT", "prefix": ".apa5.win."}});
        let c = Cfg::new("w", &v).unwrap();
        let m = Config::parse(&c).unwrap().unwrap();
        assert_eq!(m.period, Duration::from_millis(500));
        assert_eq!(m.proto, Proto::Glot);
        assert_eq!(m.prefix, ["apa5", "win"]);
        let v =
            json!({"metrics": {"proto": "XML", "socket": {"type": "PUB", "bind": ["inproc://m"]}}});
        let c = Cfg::new("w", &v).unwrap();
        assert!(Config::parse(&c).is_err());
        let v = json!({"metrics": {"period": 5}});
        let c = Cfg::new("w", &v).unwrap();
        let e = Config::parse(&c).unwrap_err().to_string();
        assert!(e.contains("metrics needs a socket"), "{e}");
    }
}
