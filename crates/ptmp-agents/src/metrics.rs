//! The `metrics` key every agent accepts, as PTMP's agents do: every
//! `period` milliseconds the agent sends what it received and sent in that
//! period to a socket of its own.
//!
//! Keys of `metrics` (PTMP's): the socket config itself (`{"socket": {...}}`;
//! an older form `{"output": {"socket": ...}}` is read too), `period` ms
//! (default 10000), `proto` "JSON" (default) or "GLOT", `prefix` (dots at
//! its ends trimmed).
//!
//! The figures, for one period, are the tree PTMP's agents send (its
//! `ReactorApp`), so a dashboard made for PTMP reads them unchanged:
//!
//! ```text
//! {"in":  {"counts":  {"tpsets", "tps", "dtreal", "dtdata"},
//!          "latency": {"real": {"num", "mean", "rms"}, "data": {"num", "mean", "rms"}},
//!          "rates":   {"tpsets", "tps"}},
//!  "out": {... the same for what was sent},
//!  "waits": {"count", "duty"},
//!  "lost":  {"input"}}
//! ```
//!
//! As PTMP computes them: `counts.tpsets`/`tps` the sets (messages, for
//! agents that copy any message) and TrigPrims of the period;
//! `dtreal` the microseconds from the period's first to its last set,
//! `dtdata` the same in data time (`tstart / tickperus`, the agent's
//! `tickperus` key, default 50); `latency.real` receive (or send) time
//! minus `created`, `latency.data` that time minus the data time, in
//! microseconds; `rates.tpsets` = `tpsets * 1e6 / dtreal`, `rates.tps` =
//! `tps * 1e6 / dtdata` (0 when the span is 0); `waits.count` the sends
//! that found no room at first, `waits.duty` their seconds of waiting
//! times `1e6 / dtreal` of the output; `lost.input` the sets missing from
//! forward gaps in the input `count`s. Differences from PTMP: latency sums
//! are in floating point (PTMP's 64-bit integer sum of squares overflows
//! for data latencies of years, giving a garbage rms); `lost.input` follows
//! the `count` of each `detid` apart (PTMP's one counter across all inputs
//! counts every interleaving of two links as losses, and a backward step as
//! four billion). A window adds PTMP's `"rates": {"tardytps"}`, its tardy
//! TrigPrims times `1e6 / dtdata` of the input; the filter's `percall`
//! figures are not sent.
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
use ptmp::{SocketConfig, TPSet};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

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
    /// Data-clock ticks per microsecond: the agent's `tickperus` (50).
    pub tickperus: f64,
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
        // PTMP reads the agent's `tickperus` (not a key of `metrics`).
        let tickperus = c.num_or("tickperus", 50.0, 1e-3, 1e12)?;
        Ok(Some(Config {
            socket,
            period: Duration::from_millis(period),
            proto,
            prefix,
            tickperus,
        }))
    }
}

/// Latency figures of one side, PTMP's `time_stats_t`: microseconds.
#[derive(Debug, Clone, Copy, Default)]
struct TimeStats {
    num: u64,
    t0: i64,
    tf: i64,
    lat: f64,
    lat2: f64,
}

impl TimeStats {
    fn add(&mut self, now: i64, then: i64) {
        self.num += 1;
        let l = now as f64 - then as f64;
        self.lat += l;
        self.lat2 += l * l;
    }
    fn dt(&self) -> i64 {
        self.tf.saturating_sub(self.t0)
    }
    fn hz(&self) -> f64 {
        match self.dt() {
            0 => 0.0,
            dt => 1e6 / dt as f64,
        }
    }
    fn json(&self) -> Value {
        let (mean, rms) = if self.num == 0 {
            (0.0, 0.0)
        } else {
            let n = self.num as f64;
            let m = self.lat / n;
            (m, (self.lat2 / n - m * m).max(0.0).sqrt())
        };
        json!({"num": self.num, "mean": mean, "rms": rms})
    }
}

/// One side (input or output) of one period, PTMP's `socket_stats_t`.
#[derive(Debug, Clone, Copy, Default)]
struct Side {
    ntps: u64,
    ntpsets: u64,
    real: TimeStats,
    data: TimeStats,
}

impl Side {
    fn add(&mut self, set: Option<&TPSet>, now: i64, tickperus: f64) {
        let data_now = set.map(|s| data_us(s.tstart, tickperus));
        if self.ntpsets == 0 {
            self.real.t0 = now;
            self.data.t0 = data_now.unwrap_or(0);
        }
        self.ntpsets += 1;
        self.real.tf = now;
        if let (Some(s), Some(d)) = (set, data_now) {
            self.ntps += s.tps.len() as u64;
            self.real.add(now, s.created);
            self.data.tf = d;
            self.data.add(now, d);
        }
    }
    fn json(&self) -> Value {
        json!({
            "latency": {"real": self.real.json(), "data": self.data.json()},
            "rates": {"tps": self.ntps as f64 * self.data.hz(),
                      "tpsets": self.ntpsets as f64 * self.real.hz()},
            "counts": {"dtdata": self.data.dt(), "dtreal": self.real.dt(),
                       "tps": self.ntps, "tpsets": self.ntpsets},
        })
    }
}

/// Data time in microseconds of `tstart` ticks: integer division for a
/// whole `tickperus`, as PTMP; saturating at `i64::MAX`.
fn data_us(tstart: u64, tickperus: f64) -> i64 {
    let us = if tickperus >= 1.0 && tickperus.fract() == 0.0 {
        tstart / tickperus as u64
    } else {
        (tstart as f64 / tickperus) as u64
    };
    i64::try_from(us).unwrap_or(i64::MAX)
}

#[derive(Debug, Default)]
struct Period {
    iss: Side,
    oss: Side,
    waits: u64,
    wait_us: u64,
    lost: u64,
    /// TrigPrims a window dropped as tardy.
    tardy_tps: u64,
    /// Whether the agent is a window (kept across periods): PTMP's window
    /// adds `rates.tardytps`.
    window: bool,
    /// The last input `count` of each detid (kept across periods).
    last_count: BTreeMap<u32, u32>,
    /// What "now" is read from for every set noted (kept across periods).
    clock: ptmp_data::Clock,
}

impl Period {
    fn took_in(&mut self, set: Option<&TPSet>, now_us: i64, tickperus: f64) {
        self.iss.add(set, now_us, tickperus);
        if let Some(s) = set {
            if let Some(prev) = self.last_count.insert(s.detid, s.count) {
                if s.count > prev {
                    self.lost += u64::from(s.count - prev - 1);
                }
            }
        }
    }
}

/// What an agent took in and sent out in the current period, noted by its
/// reads and writes ([`Ctl::took_in`](crate::Ctl::took_in),
/// [`Ctl::sent_out`](crate::Ctl::sent_out)) and read, and reset, by its
/// metrics thread once per period.
#[derive(Debug)]
pub struct Meter {
    tickperus: f64,
    p: Mutex<Period>,
}

impl Meter {
    /// A meter converting `tstart` to microseconds at `tickperus`.
    pub fn new(tickperus: f64) -> Self {
        Meter {
            tickperus,
            p: Mutex::new(Period::default()),
        }
    }

    fn period(&self) -> std::sync::MutexGuard<'_, Period> {
        self.p.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A set (or, `None`, a message that is not parsed) taken in now.
    pub fn note_in(&self, set: Option<&TPSet>) {
        let mut p = self.period();
        let now = p.clock.now_us();
        p.took_in(set, now, self.tickperus);
    }

    /// [`Meter::note_in`] at `now_us`.
    pub fn note_in_at(&self, set: Option<&TPSet>, now_us: i64) {
        self.period().took_in(set, now_us, self.tickperus);
    }

    /// A set (or another message) sent out now.
    pub fn note_out(&self, set: Option<&TPSet>) {
        let mut p = self.period();
        let now = p.clock.now_us();
        p.oss.add(set, now, self.tickperus);
    }

    /// [`Meter::note_out`] at `now_us`.
    pub fn note_out_at(&self, set: Option<&TPSet>, now_us: i64) {
        self.period().oss.add(set, now_us, self.tickperus);
    }

    /// A send that found no room at first and waited `d` in all.
    pub fn note_wait(&self, d: Duration) {
        let mut p = self.period();
        p.waits += 1;
        p.wait_us = p
            .wait_us
            .saturating_add(d.as_micros().min(u64::MAX as u128) as u64);
    }

    /// `n` TrigPrims a window dropped as tardy (a window calls this, with
    /// 0, before its first set, so its figures have `rates.tardytps`).
    pub fn note_tardy_tps(&self, n: u64) {
        let mut p = self.period();
        p.window = true;
        p.tardy_tps = p.tardy_tps.saturating_add(n);
    }

    /// The figures of the period now ending (module docs), and a new
    /// period begun.
    pub fn take(&self) -> Value {
        let mut p = self.period();
        let last_count = std::mem::take(&mut p.last_count);
        let done = std::mem::take(&mut *p);
        p.last_count = last_count;
        p.clock = done.clock.clone();
        p.window = done.window;
        drop(p);
        let mut v = json!({
            "in": done.iss.json(),
            "out": done.oss.json(),
            "waits": {"count": done.waits,
                      "duty": done.wait_us as f64 / 1e6 * done.oss.real.hz()},
            "lost": {"input": done.lost},
        });
        if done.window {
            // tardy TPs * 1e6 / input data span, as PTMP's window.
            v["rates"] = json!({"tardytps": done.tardy_tps as f64 * done.iss.data.hz()});
        }
        v
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use ptmp::TrigPrim;

    fn keys(v: &Value) -> Vec<&str> {
        v.as_object().unwrap().keys().map(|s| s.as_str()).collect()
    }

    fn set(count: u32, detid: u32, tstart: u64, created: i64, ntps: usize) -> TPSet {
        TPSet {
            count,
            detid,
            tstart,
            created,
            tps: vec![TrigPrim::default(); ntps],
            ..Default::default()
        }
    }

    /// The tree and the figures of PTMP's ReactorApp::metrics_base.
    #[test]
    fn figures_are_ptmps_tree_and_arithmetic() {
        let m = Meter::new(50.0);
        // Two sets in, 2 s apart in real time and 1 s apart in data time.
        m.note_in_at(Some(&set(7, 1, 50_000_000, 900_000, 3)), 1_000_000);
        m.note_in_at(Some(&set(9, 1, 100_000_000, 2_000_000, 1)), 3_000_000);
        m.note_out_at(Some(&set(0, 5, 50_000_000, 1_000_000, 4)), 1_000_000);
        m.note_wait(Duration::from_millis(500));
        let v = m.take();
        assert_eq!(keys(&v), ["in", "lost", "out", "waits"]);
        for side in ["in", "out"] {
            assert_eq!(keys(&v[side]), ["counts", "latency", "rates"]);
            assert_eq!(
                keys(&v[side]["counts"]),
                ["dtdata", "dtreal", "tps", "tpsets"]
            );
            assert_eq!(keys(&v[side]["latency"]), ["data", "real"]);
            for k in ["data", "real"] {
                assert_eq!(keys(&v[side]["latency"][k]), ["mean", "num", "rms"]);
            }
            assert_eq!(keys(&v[side]["rates"]), ["tps", "tpsets"]);
        }
        assert_eq!(keys(&v["waits"]), ["count", "duty"]);
        assert_eq!(keys(&v["lost"]), ["input"]);
        let i = &v["in"];
        assert_eq!(i["counts"]["tpsets"], 2);
        assert_eq!(i["counts"]["tps"], 4);
        assert_eq!(i["counts"]["dtreal"], 2_000_000);
        assert_eq!(i["counts"]["dtdata"], 1_000_000);
        // tpsets * 1e6 / dtreal; tps * 1e6 / dtdata.
        assert_eq!(i["rates"]["tpsets"], 1.0);
        assert_eq!(i["rates"]["tps"], 4.0);
        // Real latency: 100_000 and 1_000_000 us.
        assert_eq!(i["latency"]["real"]["num"], 2);
        assert_eq!(i["latency"]["real"]["mean"], 550_000.0);
        assert_eq!(i["latency"]["real"]["rms"], 450_000.0);
        // Data latency: now - tstart/50 = 0 and 1_000_000 us.
        assert_eq!(i["latency"]["data"]["mean"], 500_000.0);
        // One set sent: spans 0, so rates 0 (never null).
        assert_eq!(v["out"]["rates"]["tpsets"], 0.0);
        assert_eq!(v["out"]["counts"]["tps"], 4);
        assert_eq!(v["waits"]["count"], 1);
        assert_eq!(v["waits"]["duty"], 0.0);
        assert_eq!(v["lost"]["input"], 1, "count 8 missing");
        // A new period: empty, and count gaps go on across periods.
        m.note_in_at(Some(&set(12, 1, 0, 0, 0)), 4_000_000);
        m.note_in_at(Some(&set(3, 2, 0, 0, 0)), 4_000_000);
        let v = m.take();
        assert_eq!(
            v["lost"]["input"], 2,
            "10 and 11; detid 2 is its own stream"
        );
        assert_eq!(v["in"]["counts"]["tpsets"], 2);
        assert_eq!(v["out"]["counts"]["tpsets"], 0);
        assert!(!v.to_string().contains("null"), "{v}");
    }

    #[test]
    fn extreme_values_give_numbers() {
        let m = Meter::new(1e-3);
        for (t, c) in [(u64::MAX, i64::MIN), (0, i64::MAX), (1 << 63, 0)] {
            m.note_in_at(Some(&set(u32::MAX, 0, t, c, 0)), i64::MIN);
            m.note_out_at(Some(&set(0, u32::MAX, t, c, 0)), i64::MAX);
        }
        m.note_in(None);
        m.note_wait(Duration::MAX);
        let v = m.take();
        assert!(!v.to_string().contains("null"), "{v}");
        assert_eq!(v["in"]["counts"]["tpsets"], 4);
    }

    #[test]
    fn json_prefix_wraps() {
        let m = Meter::new(50.0).take();
        let v = wrap(&["apa5".into(), "win".into()], m.clone());
        assert_eq!(v["ptmp"]["apa5"]["win"], m);
        assert_eq!(wrap(&[], m.clone())["ptmp"], m);
    }

    #[test]
    fn config_keys_as_ptmp() {
        let v = json!({"metrics": {"socket": {"type": "PUB", "bind": ["inproc://m"]},
            "period": 500, "proto": "GLOT", "prefix": ".apa5.win."}, "tickperus": 25});
        let c = Cfg::new("w", &v).unwrap();
        let m = Config::parse(&c).unwrap().unwrap();
        assert_eq!(m.period, Duration::from_millis(500));
        assert_eq!(m.proto, Proto::Glot);
        assert_eq!(m.prefix, ["apa5", "win"]);
        assert_eq!(m.tickperus, 25.0);
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
