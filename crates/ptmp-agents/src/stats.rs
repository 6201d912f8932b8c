//! `stats` (PTMP's TPStats): per-link (per `detid`) and per-channel
//! statistics over integration windows of wall-clock time, emitted as JSON
//! messages.
//!
//! Keys: `input`, `output` (required); `topkey` (default "tpsets", as
//! PTMP's code); `link_integration_time` ms (default 1000, 0 or less = no
//! link messages); `chan_integration_time` ms (default 10000, 0 = none);
//! `tick_per_us` data-clock ticks per microsecond (default 50; must be
//! positive: the C++ default of 0 divided by zero); `tick_off_us` microseconds
//! subtracted from the converted data time. `tick_per_off`, which the
//! `stats()` helper of PTMP's `ptmp.jsonnet` writes and C++ PTMP never
//! reads, is accepted and ignored, with a warning saying so.
//!
//! Messages have two frames, as TPStats sends them for its Graphite
//! forwarder: the ASCII text `1246973774` (CZMQ's picture "i" of the type
//! tag 0x4A534F4E, "JSON") and the JSON text. The JSON has PTMP's shape:
//!
//! ```text
//! {topkey: {"links": {"0x<detid hex>": {detid, now, time:{received, created, data},
//!            counts:{ntpsets, ntps, ndropped, nchannels, nbytes},
//!            rates:{tps, tpsets, dropped, byteps}, adc:{tpsets, tps, rate, mean},
//!            latency:{data:{mean,rms,min,max}, trans:{mean,rms,min,max}}} ...,
//!            "nlinks": N, "seqno": k}}}
//! {"ptmp": {topkey: {"chans": {"ch<N>": {chan, integ:{ntps, span_us, adcsum, adcpeak},
//!            avg:{ntps, occupancy, adcsum, adcpeak}, inst:{ntps, adcsum, adcpeak}} ...,
//!            "nchans": N, "seqno": k}}}}
//! ```
//!
//! The channel message is wrapped in `"ptmp"` and the link message is not,
//! as TPStats sends them (so `stats_graphite` paths are
//! `tpsets.links.0x1.rates.tps` and `ptmp.tpsets.chans.ch10.avg.ntps`).
//!
//! `nlinks`/`nchans` and `seqno` sit inside `links`/`chans`, next to the
//! per-link and per-channel objects, exactly where TPStats puts them, so
//! readers of PTMP's stats (and `stats_graphite` paths such as
//! `tpsets.links.nlinks`) see the same keys.
//!
//! Deliberate fixes over the C++ code, so every figure is a number: rates
//! are per second of the integration window (not of the span between the
//! window's first and last message, which is zero for one message);
//! `ndropped` counts missing sets from `count` gaps, also across windows
//! (not one per gap); latencies are in microseconds with `data` = receive
//! time - data time and `trans` = receive time - `created`, accumulated in
//! floating point (no overflow); `avg` is per second of the window and `inst`
//! per second of the channel's summed TP span.

use crate::cfg::Cfg;
use crate::error::Result;
use crate::{Agent, Ctl, Report, POLL};
use ptmp::{Receiver, Sender, SocketConfig, TPSet};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The first frame of a stats message.
pub(crate) const JSON_TYPE_FRAME: &[u8] = b"1246973774";

/// The top-level key of the messages when the config gives no `topkey`.
pub(crate) const DEFAULT_TOPKEY: &str = "tpsets";

/// Smallest accepted `tick_per_us` (one tick per millisecond).
pub(crate) const MIN_TICK_PER_US: f64 = 1e-3;
/// Largest accepted `tick_per_us`.
pub(crate) const MAX_TICK_PER_US: f64 = 1e12;

#[derive(Debug, Clone)]
/// A validated stats configuration (keys in the module docs).
pub struct Config {
    /// Socket the TPSets arrive on.
    pub input: SocketConfig,
    /// Socket the JSON messages go out on.
    pub output: SocketConfig,
    /// The top-level key of every JSON message.
    pub topkey: String,
    /// Link integration window, milliseconds; 0: no link messages.
    pub link_ms: u64,
    /// Channel integration window, milliseconds; 0: no channel messages.
    pub chan_ms: u64,
    /// Data-clock ticks per microsecond (positive).
    pub tick_per_us: f64,
    /// Microseconds subtracted from the converted data time.
    pub tick_off_us: i64,
    /// Keys given in PTMP's spelling and ignored, said at start.
    pub warnings: Vec<String>,
}

impl Config {
    /// Validate the keys of a stats' `data`.
    pub fn parse(c: &Cfg) -> Result<Config> {
        let tick_per_us = c.num_or("tick_per_us", 50.0, f64::MIN, f64::MAX)?;
        // Data times are ticks / tick_per_us and their squares are summed:
        // below MIN_TICK_PER_US a u64::MAX tick count would make those
        // figures infinite (emitted as null).
        if tick_per_us > 0.0 && !(MIN_TICK_PER_US..=MAX_TICK_PER_US).contains(&tick_per_us) {
            return Err(c.err(
                "tick_per_us",
                tick_per_us.to_string(),
                format!("must be in [{MIN_TICK_PER_US}, {MAX_TICK_PER_US}] ticks per microsecond"),
            ));
        }
        if tick_per_us <= 0.0 {
            return Err(c.err(
                "tick_per_us",
                tick_per_us.to_string(),
                "must be positive (data-clock ticks per microsecond, 50 at protoDUNE); 0 would divide by zero",
            ));
        }
        Ok(Config {
            input: c.req_socket("input")?,
            output: c.req_socket("output")?,
            topkey: c.str_opt("topkey")?.unwrap_or(DEFAULT_TOPKEY).to_string(),
            // PTMP starts no link timer for 0 and, for a negative value, one
            // that never fires: both mean no link messages.
            link_ms: c
                .int_or("link_integration_time", 1000, i64::MIN, 86_400_000)?
                .max(0) as u64,
            chan_ms: c
                .int_or("chan_integration_time", 10000, i64::MIN, 86_400_000)?
                .max(0) as u64,
            tick_per_us,
            tick_off_us: c.int_or("tick_off_us", 0, i64::MIN, i64::MAX)?,
            warnings: ptmp_spellings(c),
        })
    }
}

/// Read, to ignore them, the keys of PTMP's own configurations that C++
/// PTMP's TPStats never reads ([`crate::cfg::PTMP_SPELLINGS`]), each with
/// a warning naming it.
fn ptmp_spellings(c: &Cfg) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(v) = c.raw("tick_per_off") {
        out.push(format!(
            "tick_per_off = {}: ignored, as C++ PTMP ignores it; this is PTMP's own spelling \
             (the stats() helper of its ptmp.jsonnet writes it), read by no PTMP program; \
             the clock is set by tick_per_us and tick_off_us",
            c.show(v)
        ));
    }
    out
}

/// Running mean, rms, min and max.
#[derive(Debug, Clone, Copy, Default)]
pub struct Moments {
    /// Values added.
    pub n: u64,
    sum: f64,
    sum2: f64,
    /// Smallest value added (0 before any).
    pub min: f64,
    /// Largest value added (0 before any).
    pub max: f64,
}

impl Moments {
    /// Add one value.
    pub fn add(&mut self, x: f64) {
        if self.n == 0 {
            self.min = x;
            self.max = x;
        } else {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
        }
        self.n += 1;
        self.sum += x;
        self.sum2 += x * x;
    }
    /// The mean; 0 when empty.
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum / self.n as f64
        }
    }
    /// The root mean square; 0 when empty.
    pub fn rms(&self) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let m = self.mean();
        (self.sum2 / self.n as f64 - m * m).max(0.0).sqrt()
    }
    fn json(&self) -> Value {
        json!({"mean": self.mean(), "rms": self.rms(), "min": self.min, "max": self.max})
    }
}

#[derive(Debug, Clone, Default)]
struct Link {
    ntpsets: u64,
    ntps: u64,
    ndropped: u64,
    nbytes: u64,
    adc_tpsets: u64,
    adc_tps: u64,
    channels: std::collections::BTreeSet<u32>,
    first: Option<(i64, i64, f64)>, // received, created, data (us)
    lat_data: Moments,
    lat_trans: Moments,
}

#[derive(Debug, Clone, Default)]
struct Chan {
    ntps: u64,
    span_us: f64,
    adcsum: u64,
    adcpeak: u64,
}

/// The statistics core: fed TPSets with their receive time, asked for a
/// message at the end of each window.
pub struct Stats {
    topkey: String,
    tick_per_us: f64,
    tick_off_us: i64,
    links: BTreeMap<u32, Link>,
    last_count: BTreeMap<u32, u32>,
    chans: BTreeMap<u32, Chan>,
    link_seqno: u64,
    chan_seqno: u64,
}

impl Stats {
    /// Empty statistics; `topkey` heads every message, data times convert to
    /// microseconds as `tstart / tick_per_us - tick_off_us`.
    pub fn new(topkey: &str, tick_per_us: f64, tick_off_us: i64) -> Self {
        Stats {
            topkey: topkey.to_string(),
            tick_per_us,
            tick_off_us,
            links: BTreeMap::new(),
            last_count: BTreeMap::new(),
            chans: BTreeMap::new(),
            link_seqno: 0,
            chan_seqno: 0,
        }
    }

    /// Data time of a tick count, microseconds.
    pub fn data_us(&self, ticks: u64) -> f64 {
        ticks as f64 / self.tick_per_us - self.tick_off_us as f64
    }

    /// Account one TPSet received at `recv_us` (Unix microseconds) with
    /// `nbytes` of payload.
    pub fn add(&mut self, s: &TPSet, recv_us: i64, nbytes: usize) {
        let data_us = self.data_us(s.tstart);
        // Wire values (count, created, adc sums) may be anything: counters
        // saturate and differences are taken in floating point.
        let dropped = match self.last_count.insert(s.detid, s.count) {
            Some(prev) if s.count > prev.wrapping_add(1) && s.count > prev => {
                u64::from(s.count - prev - 1)
            }
            _ => 0,
        };
        let l = self.links.entry(s.detid).or_default();
        l.ntpsets = l.ntpsets.saturating_add(1);
        l.ntps = l.ntps.saturating_add(s.tps.len() as u64);
        l.ndropped = l.ndropped.saturating_add(dropped);
        l.nbytes = l.nbytes.saturating_add(nbytes as u64);
        l.adc_tpsets = l.adc_tpsets.saturating_add(u64::from(s.totaladc()));
        if l.first.is_none() {
            l.first = Some((recv_us, s.created, data_us));
        }
        l.lat_data.add(recv_us as f64 - data_us);
        l.lat_trans.add(recv_us as f64 - s.created as f64);
        for tp in &s.tps {
            l.adc_tps = l.adc_tps.saturating_add(u64::from(tp.adcsum()));
            l.channels.insert(tp.channel);
            let c = self.chans.entry(tp.channel).or_default();
            c.ntps = c.ntps.saturating_add(1);
            c.span_us += f64::from(tp.tspan()) / self.tick_per_us;
            c.adcsum = c.adcsum.saturating_add(u64::from(tp.adcsum()));
            c.adcpeak = c.adcpeak.saturating_add(u64::from(tp.adcpeak()));
        }
    }

    /// The link message for a window of `window_ms`, and reset.
    pub fn link_message(&mut self, window_ms: u64) -> Value {
        let secs = window_ms.max(1) as f64 / 1000.0;
        let mut links = Map::new();
        for (detid, l) in std::mem::take(&mut self.links) {
            let (received, created, data) = l.first.unwrap_or((0, 0, 0.0));
            links.insert(
                format!("0x{detid:x}"),
                json!({
                    "detid": detid,
                    "now": (data / 1e6).floor() as i64,
                    "time": {"received": received as f64 / 1e6, "created": created as f64 / 1e6, "data": data / 1e6},
                    "counts": {"ntpsets": l.ntpsets, "ntps": l.ntps, "ndropped": l.ndropped,
                               "nchannels": l.channels.len(), "nbytes": l.nbytes},
                    "rates": {"tps": l.ntps as f64 / secs, "tpsets": l.ntpsets as f64 / secs,
                              "dropped": l.ndropped as f64 / secs, "byteps": l.nbytes as f64 / secs},
                    "adc": {"tpsets": l.adc_tpsets, "tps": l.adc_tps, "rate": l.adc_tps as f64 / secs,
                            "mean": if l.ntps == 0 { 0.0 } else { l.adc_tps as f64 / l.ntps as f64 }},
                    "latency": {"data": l.lat_data.json(), "trans": l.lat_trans.json()},
                }),
            );
        }
        let n = links.len();
        links.insert("nlinks".into(), json!(n));
        links.insert("seqno".into(), json!(self.link_seqno));
        self.link_seqno += 1;
        json!({ self.topkey.clone(): {"links": links} })
    }

    /// The channel message for a window of `window_ms`, and reset.
    pub fn chan_message(&mut self, window_ms: u64) -> Value {
        let secs = window_ms.max(1) as f64 / 1000.0;
        let mut chans = Map::new();
        for (ch, c) in std::mem::take(&mut self.chans) {
            let span_s = c.span_us / 1e6;
            let per_span = |x: f64| if span_s > 0.0 { x / span_s } else { 0.0 };
            chans.insert(
                format!("ch{ch}"),
                json!({
                    "chan": ch,
                    "integ": {"ntps": c.ntps, "span_us": c.span_us, "adcsum": c.adcsum, "adcpeak": c.adcpeak},
                    "avg": {"ntps": c.ntps as f64 / secs, "occupancy": span_s / secs,
                            "adcsum": c.adcsum as f64 / secs, "adcpeak": c.adcpeak as f64 / secs},
                    "inst": {"ntps": per_span(c.ntps as f64), "adcsum": per_span(c.adcsum as f64),
                             "adcpeak": per_span(c.adcpeak as f64)},
                }),
            );
        }
        let n = chans.len();
        chans.insert("nchans".into(), json!(n));
        chans.insert("seqno".into(), json!(self.chan_seqno));
        self.chan_seqno += 1;
        // TPStats nests the channel message one level deeper than the link
        // message, under "ptmp".
        json!({"ptmp": { self.topkey.clone(): {"chans": chans} }})
    }

    /// Whether any link was seen since the last link message.
    pub fn has_links(&self) -> bool {
        !self.links.is_empty()
    }
    /// Whether any channel was seen since the last channel message.
    pub fn has_chans(&self) -> bool {
        !self.chans.is_empty()
    }
}

/// The statistics between their sockets.
pub(crate) struct StatsAgent {
    name: String,
    rx: Receiver,
    tx: Sender,
    cfg: Config,
}

impl StatsAgent {
    /// Open the sockets of `c`.
    pub(crate) fn new(name: String, c: &Config) -> Result<Self> {
        let (rx, tx) = crate::open_io(&name, &c.input, &c.output)?;
        Ok(StatsAgent {
            name,
            rx,
            tx,
            cfg: c.clone(),
        })
    }

    /// Send one JSON message; false if the agent gave up (stopping, no
    /// reader).
    fn emit(&mut self, v: &Value, ctl: &Ctl) -> Result<bool> {
        let text = v.to_string();
        let f = ptmp::Frames::from_slices(&[JSON_TYPE_FRAME, text.as_bytes()]);
        crate::send_frames(&mut self.tx, &f, ctl, &self.name)
    }
}

impl Agent for StatsAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&mut self, ctl: &Ctl) -> Result<Report> {
        let mut st = Stats::new(&self.cfg.topkey, self.cfg.tick_per_us, self.cfg.tick_off_us);
        let mut clock = ptmp_data::Clock::new();
        let (lw, cw) = (self.cfg.link_ms, self.cfg.chan_ms);
        let start = Instant::now();
        let mut next_link = (lw > 0).then(|| start + Duration::from_millis(lw));
        let mut next_chan = (cw > 0).then(|| start + Duration::from_millis(cw));
        let mut set = TPSet::default();
        let mut buf = Vec::new();
        let (mut nin, mut nmsg, mut bad) = (0u64, 0u64, 0u64);
        while !ctl.done(false) {
            let now = Instant::now();
            if let Some(t) = next_link.filter(|t| *t <= now) {
                let m = st.link_message(lw);
                nmsg += u64::from(self.emit(&m, ctl)?);
                next_link = Some(t + Duration::from_millis(lw));
            }
            if let Some(t) = next_chan.filter(|t| *t <= now) {
                let m = st.chan_message(cw);
                nmsg += u64::from(self.emit(&m, ctl)?);
                next_chan = Some(t + Duration::from_millis(cw));
            }
            let until = [next_link, next_chan].into_iter().flatten().min();
            let wait = until.map_or(POLL, |u| {
                u.saturating_duration_since(Instant::now()).min(POLL)
            });
            match crate::recv_set(&mut self.rx, &mut set, wait, ctl, &mut bad, &self.name)? {
                crate::Got::Set => {
                    nin += 1;
                    buf.clear();
                    ptmp_data::encode_tpset(&set, &mut buf);
                    st.add(&set, clock.now_us(), buf.len());
                }
                crate::Got::Nothing => {}
                crate::Got::Done => break,
            }
        }
        // Flush the partial windows so the last sets are accounted.
        let elapsed = start.elapsed().as_millis() as u64;
        if lw > 0 && st.has_links() {
            let m = st.link_message(lw.min(elapsed % lw.max(1)).max(1));
            nmsg += u64::from(self.emit(&m, ctl)?);
        }
        if cw > 0 && st.has_chans() {
            let m = st.chan_message(cw.min(elapsed % cw.max(1)).max(1));
            nmsg += u64::from(self.emit(&m, ctl)?);
        }
        Ok(Report::new(&self.name, "stats")
            .count("in", nin)
            .count("messages", nmsg)
            .count("bad_messages", bad))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptmp::TrigPrim;

    fn set(count: u32, detid: u32, tstart: u64, tps: &[(u32, u32, u32)]) -> TPSet {
        TPSet {
            count,
            detid,
            created: 1_000_000,
            tstart,
            totaladc: Some(tps.iter().map(|t| t.2).sum()),
            tps: tps
                .iter()
                .map(|&(ch, span, adc)| TrigPrim {
                    channel: ch,
                    tstart,
                    tspan: Some(span),
                    adcsum: Some(adc),
                    adcpeak: Some(adc / 2),
                    flags: None,
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn link_and_channel_figures() {
        let mut st = Stats::new("apa5", 50.0, 0);
        // detid 1: counts 0,1,4 (two dropped); detid 2: one set.
        st.add(
            &set(0, 1, 50_000_000, &[(10, 100, 20), (11, 50, 40)]),
            1_500_000,
            30,
        );
        st.add(&set(1, 1, 50_000_100, &[(10, 100, 20)]), 1_500_010, 20);
        st.add(&set(4, 1, 50_000_200, &[]), 1_500_020, 10);
        st.add(&set(7, 2, 50_000_000, &[(12, 500, 8)]), 1_600_000, 15);
        let m = st.link_message(2000);
        let l = &m["apa5"]["links"]["0x1"];
        assert_eq!(m["apa5"]["links"]["nlinks"], 2);
        assert_eq!(m["apa5"]["links"]["seqno"], 0);
        // Only "links" under the top key, as TPStats sends.
        assert_eq!(m["apa5"].as_object().unwrap().len(), 1);
        assert_eq!(l["counts"]["ntpsets"], 3);
        assert_eq!(l["counts"]["ntps"], 3);
        assert_eq!(l["counts"]["ndropped"], 2);
        assert_eq!(l["counts"]["nchannels"], 2);
        assert_eq!(l["counts"]["nbytes"], 60);
        assert_eq!(l["rates"]["tpsets"], 1.5);
        assert_eq!(l["adc"]["tps"], 80);
        assert_eq!(l["adc"]["tpsets"], 80);
        // data time of tstart 50e6 ticks at 50/us is 1e6 us; received 1.5e6.
        assert_eq!(l["latency"]["data"]["min"], 500_000.0);
        assert_eq!(l["latency"]["trans"]["max"], 500_020.0);
        assert_eq!(l["now"], 1);
        // Window reset: the next message is empty with seqno 1.
        let m = st.link_message(2000);
        assert_eq!(m["apa5"]["links"]["nlinks"], 0);
        assert_eq!(m["apa5"]["links"]["seqno"], 1);

        let m = st.chan_message(1000);
        let m = &m["ptmp"];
        let c = &m["apa5"]["chans"]["ch10"];
        assert_eq!(m["apa5"]["chans"]["nchans"], 3);
        assert_eq!(m["apa5"]["chans"]["seqno"], 0);
        assert_eq!(m["apa5"].as_object().unwrap().len(), 1);
        assert_eq!(c["integ"]["ntps"], 2);
        assert_eq!(c["integ"]["span_us"], 4.0); // 200 ticks / 50
        assert_eq!(c["integ"]["adcsum"], 40);
        assert_eq!(c["avg"]["ntps"], 2.0);
        assert_eq!(c["inst"]["ntps"], 2.0 / 4e-6);
        for v in m.to_string().split(',') {
            assert!(!v.contains("null"), "{v}");
        }
    }

    fn keys(v: &Value) -> Vec<&str> {
        let mut k: Vec<&str> = v.as_object().unwrap().keys().map(|s| s.as_str()).collect();
        k.sort_unstable();
        k
    }

    /// Every key and its nesting, as TPStats writes them.
    #[test]
    fn message_shape_is_ptmps() {
        let mut st = Stats::new(DEFAULT_TOPKEY, 50.0, 0);
        st.add(&set(0, 3, 50_000_000, &[(10, 100, 20)]), 1_500_000, 30);
        let m = st.link_message(1000);
        assert_eq!(keys(&m), ["tpsets"]);
        assert_eq!(keys(&m["tpsets"]), ["links"]);
        let links = &m["tpsets"]["links"];
        assert_eq!(keys(links), ["0x3", "nlinks", "seqno"]);
        let l = &links["0x3"];
        assert_eq!(
            keys(l),
            ["adc", "counts", "detid", "latency", "now", "rates", "time"]
        );
        assert_eq!(keys(&l["time"]), ["created", "data", "received"]);
        assert_eq!(
            keys(&l["counts"]),
            ["nbytes", "nchannels", "ndropped", "ntps", "ntpsets"]
        );
        assert_eq!(keys(&l["rates"]), ["byteps", "dropped", "tps", "tpsets"]);
        assert_eq!(keys(&l["adc"]), ["mean", "rate", "tps", "tpsets"]);
        assert_eq!(keys(&l["latency"]), ["data", "trans"]);
        for k in ["data", "trans"] {
            assert_eq!(keys(&l["latency"][k]), ["max", "mean", "min", "rms"]);
        }
        assert_eq!(l["detid"], 3);

        let m = st.chan_message(1000);
        // The channel message sits under "ptmp" (the link message not).
        assert_eq!(keys(&m), ["ptmp"]);
        assert_eq!(keys(&m["ptmp"]), ["tpsets"]);
        assert_eq!(keys(&m["ptmp"]["tpsets"]), ["chans"]);
        let chans = &m["ptmp"]["tpsets"]["chans"];
        assert_eq!(keys(chans), ["ch10", "nchans", "seqno"]);
        let c = &chans["ch10"];
        assert_eq!(keys(c), ["avg", "chan", "inst", "integ"]);
        assert_eq!(keys(&c["integ"]), ["adcpeak", "adcsum", "ntps", "span_us"]);
        assert_eq!(keys(&c["avg"]), ["adcpeak", "adcsum", "ntps", "occupancy"]);
        assert_eq!(keys(&c["inst"]), ["adcpeak", "adcsum", "ntps"]);
        assert_eq!(c["chan"], 10);
    }

    #[test]
    fn default_topkey_and_negative_link_time_as_ptmp() {
        let v = serde_json::json!({
            "input": {"socket": {"type": "PULL", "connect": ["inproc://a"]}},
            "output": {"socket": {"type": "PUB", "bind": ["inproc://b"]}},
            "link_integration_time": -5
        });
        let c = Cfg::new("st", &v).unwrap();
        let cfg = Config::parse(&c).unwrap();
        assert_eq!(cfg.topkey, "tpsets");
        assert_eq!(cfg.link_ms, 0);
    }

    #[test]
    fn zero_tick_per_us_is_refused() {
        let v = serde_json::json!({
            "input": {"socket": {"type": "PULL", "connect": ["inproc://a"]}},
            "output": {"socket": {"type": "PUB", "bind": ["inproc://b"]}},
            "tick_per_us": 0
        });
        let c = Cfg::new("st", &v).unwrap();
        let e = Config::parse(&c).unwrap_err().to_string();
        assert!(
            e.starts_with("agent st: tick_per_us = 0: must be positive"),
            "{e}"
        );
    }

    /// Every field at its extremes, at the slowest and fastest clocks and
    /// offsets accepted: no overflow panic, and every figure a number.
    #[test]
    fn extreme_wire_values_give_numbers_not_null() {
        let mut cases = 0;
        for tick in [MIN_TICK_PER_US, 1.0, 50.0, MAX_TICK_PER_US] {
            for off in [i64::MIN, 0, i64::MAX] {
                let mut st = Stats::new("x", tick, off);
                for &recv in &[i64::MIN, 0, i64::MAX] {
                    for &created in &[i64::MIN, -1, 0, i64::MAX] {
                        for &tstart in &[0, 1, u64::MAX - 1, u64::MAX] {
                            for &(count, detid) in &[(0, 0), (u32::MAX, u32::MAX), (0, u32::MAX)] {
                                cases += 1;
                                let mut x = set(count, detid, tstart, &[]);
                                x.created = created;
                                x.totaladc = Some(u32::MAX);
                                x.tps = vec![
                                    TrigPrim {
                                        channel: u32::MAX,
                                        tstart,
                                        tspan: Some(u32::MAX),
                                        adcsum: Some(u32::MAX),
                                        adcpeak: Some(u32::MAX),
                                        flags: Some(u32::MAX),
                                    };
                                    3
                                ];
                                st.add(&x, recv, usize::MAX);
                            }
                        }
                    }
                }
                for m in [st.link_message(0), st.chan_message(u64::MAX)] {
                    let t = m.to_string();
                    assert!(!t.contains("null"), "{tick} {off}: {t}");
                }
            }
        }
        assert_eq!(cases, 4 * 3 * 3 * 4 * 4 * 3);
    }

    /// `tick_per_off: 0`, as the `stats()` helper of PTMP's `ptmp.jsonnet`
    /// writes it, is accepted and ignored with a warning naming it; other
    /// near misses of known keys are still refused.
    #[test]
    fn ptmp_spelling_tick_per_off_is_ignored_with_a_warning() {
        let plugins = crate::Plugins::default();
        let mut v = serde_json::json!({
            "input": {"socket": {"type": "PULL", "connect": ["inproc://a"]}},
            "output": {"socket": {"type": "PUB", "bind": ["inproc://b"]}},
            "tick_per_us": 50,
            "tick_per_off": 0
        });
        let p = crate::Proxy::parse_data("st", crate::Kind::Stats, &v, &plugins).unwrap();
        assert!(p.unread.is_empty(), "{:?}", p.unread);
        assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
        assert!(
            p.warnings[0].starts_with("tick_per_off = 0: ignored, as C++ PTMP ignores it"),
            "{:?}",
            p.warnings
        );
        let crate::Spec::Stats(c) = &p.spec else {
            panic!("not stats")
        };
        assert_eq!((c.tick_per_us, c.tick_off_us), (50.0, 0));
        for typo in ["tick_per_usx", "tick_of_us", "tick_per_of"] {
            v.as_object_mut().unwrap().insert(typo.into(), 1.into());
            let e = crate::Proxy::parse_data("st", crate::Kind::Stats, &v, &plugins)
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with(&format!("agent st: {typo} = 1: unknown key; did you mean")),
                "{e}"
            );
            assert!(!e.contains("tick_per_off"), "never suggested: {e}");
            v.as_object_mut().unwrap().remove(typo);
        }
    }

    #[test]
    fn tick_per_us_out_of_range_is_refused() {
        for bad in [1e-300, f64::MIN_POSITIVE, 0.0009, 1e13, f64::MAX] {
            let v = serde_json::json!({
                "input": {"socket": {"type": "PULL", "connect": ["inproc://a"]}},
                "output": {"socket": {"type": "PUB", "bind": ["inproc://b"]}},
                "tick_per_us": bad
            });
            let c = Cfg::new("st", &v).unwrap();
            let e = Config::parse(&c).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("agent st: tick_per_us = {bad}: must be in")),
                "{e}"
            );
        }
    }
}
