//! `filter` (PTMP's TPFilter): runs an *engine* on each input TPSet; the
//! engine turns it into zero or more output TPSets (trigger candidates,
//! decisions ...).
//!
//! Keys: `input`, `output` (sockets, required), `engine` (the engine's name;
//! PTMP's generated configs call it `method`, which is accepted too),
//! `detid` (default -1: keep the engine's). The whole `data` object is
//! handed to the engine, which reads its own keys.
//!
//! As PTMP's later TPFilter: input sets with no TrigPrims are counted and
//! not given to the engine; outputs get `count` numbered from 0 by the
//! agent, `detid` when configured, and `created` = now when the engine left
//! it 0.
//!
//! Built-in engines:
//! * `passthrough` (alias `pass`): outputs each input unchanged.
//! * `adjacency` (alias `pdune-adjacency-tc`, the engine of PTMP's `ptmp-tcs`
//!   plugin): a channel-adjacency trigger-candidate finder. Within each input
//!   set (a time window, as `window` makes), TPs are grouped into runs of
//!   channels where neighbours differ by at most `max_gap` + 1 (default
//!   `max_gap` 1); a run touching at least `adjacency` distinct channels
//!   (default 5) with an ADC sum of at least `min_adcsum` (default 0) becomes
//!   one output TPSet holding its TPs, with `tstart`/`tspan` covering them,
//!   `chanbeg`/`chanend` its channel range, `totaladc` its ADC sum, the input's
//!   `detid`, and `count` numbering the candidates from 0.
//!
//! Plugin engines come through the C ABI of [`crate::plugin`].

use crate::cfg::Cfg;
use crate::error::{Error, Result};
use crate::plugin::Plugins;
use crate::{Agent, Ctl, Report, POLL};
use ptmp::{Receiver, Sender, SocketConfig, TPSet};
use serde_json::Value;

/// A filter engine: input TPSet in, output TPSets appended to `out`.
pub trait Engine: Send {
    fn process(&mut self, input: &TPSet, out: &mut Vec<TPSet>) -> std::result::Result<(), String>;
}

pub const BUILTIN_ENGINES: &[&str] = &["passthrough", "pass", "adjacency", "pdune-adjacency-tc"];

pub(crate) fn builtin_engine(agent: &str, name: &str, config: &Value) -> Result<Box<dyn Engine>> {
    match name {
        "passthrough" | "pass" => Ok(Box::new(Passthrough)),
        "adjacency" | "pdune-adjacency-tc" => Ok(Box::new(Adjacency::from_config(agent, config)?)),
        _ => Err(Error::config(
            agent,
            "engine",
            format!("{name:?}"),
            "not a built-in engine",
        )),
    }
}

/// Outputs each input as it came.
pub struct Passthrough;

impl Engine for Passthrough {
    fn process(&mut self, input: &TPSet, out: &mut Vec<TPSet>) -> std::result::Result<(), String> {
        out.push(input.clone());
        Ok(())
    }
}

/// The channel-adjacency trigger-candidate finder (see the module docs).
#[derive(Debug, Clone)]
pub struct Adjacency {
    pub adjacency: u32,
    pub max_gap: u32,
    pub min_adcsum: u64,
    count: u32,
    order: Vec<usize>,
}

impl Adjacency {
    pub fn new(adjacency: u32, max_gap: u32, min_adcsum: u64) -> Self {
        Adjacency {
            adjacency,
            max_gap,
            min_adcsum,
            count: 0,
            order: Vec::new(),
        }
    }

    pub fn from_config(agent: &str, config: &Value) -> Result<Self> {
        let c = Cfg::new(agent, config)?;
        let adjacency = c.int_or("adjacency", 5, 1, u32::MAX as i64)? as u32;
        let max_gap = c.int_or("max_gap", 1, 0, u32::MAX as i64)? as u32;
        let min_adcsum = c.int_or("min_adcsum", 0, 0, i64::MAX)? as u64;
        Ok(Self::new(adjacency, max_gap, min_adcsum))
    }
}

impl Engine for Adjacency {
    fn process(&mut self, input: &TPSet, out: &mut Vec<TPSet>) -> std::result::Result<(), String> {
        let tps = &input.tps;
        self.order.clear();
        self.order.extend(0..tps.len());
        self.order.sort_by_key(|&i| (tps[i].channel, tps[i].tstart));
        let mut i = 0;
        while i < self.order.len() {
            // Grow a run while the next channel is within max_gap+1.
            let mut j = i + 1;
            let mut distinct = 1u32;
            while j < self.order.len() {
                let prev = tps[self.order[j - 1]].channel;
                let ch = tps[self.order[j]].channel;
                // Sorted by channel, so ch >= prev; ch - prev - 1 channels
                // are missing between them (no overflow at max_gap u32::MAX).
                if ch.saturating_sub(prev).saturating_sub(1) > self.max_gap {
                    break;
                }
                if ch != prev {
                    distinct += 1;
                }
                j += 1;
            }
            let run = &self.order[i..j];
            let adc = run
                .iter()
                .fold(0u64, |a, &k| a.saturating_add(u64::from(tps[k].adcsum())));
            if distinct >= self.adjacency && adc >= self.min_adcsum {
                let tstart = run.iter().map(|&k| tps[k].tstart).min().unwrap_or(0);
                let tend = run
                    .iter()
                    .map(|&k| tps[k].tstart.saturating_add(u64::from(tps[k].tspan())))
                    .max()
                    .unwrap_or(tstart);
                out.push(TPSet {
                    count: self.count,
                    detid: input.detid,
                    created: ptmp_data::now_us(),
                    tstart,
                    tspan: Some(tend.saturating_sub(tstart).min(u32::MAX as u64) as u32),
                    chanbeg: Some(tps[run[0]].channel),
                    chanend: Some(tps[run[run.len() - 1]].channel),
                    totaladc: Some(adc.min(u32::MAX as u64) as u32),
                    tps: run.iter().map(|&k| tps[k]).collect(),
                });
                self.count = self.count.wrapping_add(1);
            }
            i = j;
        }
        Ok(())
    }
}

/// A validated filter configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub input: SocketConfig,
    pub output: SocketConfig,
    pub engine: String,
    pub detid: Option<u32>,
    /// The whole data object, given to the engine.
    pub data: Value,
    pub plugins: Plugins,
}

impl Config {
    pub fn parse(c: &Cfg, data: &Value, plugins: &Plugins) -> Result<Config> {
        let input = c.req_socket("input")?;
        let output = c.req_socket("output")?;
        let engine = match (c.str_opt("engine")?, c.str_opt("method")?) {
            (Some(e), Some(m)) if e != m => {
                return Err(c.err(
                    "method",
                    format!("{m:?}"),
                    format!("disagrees with engine {e:?}; give one"),
                ))
            }
            (Some(e), _) | (None, Some(e)) => e.to_string(),
            (None, None) => {
                return Err(c.err(
                    "engine",
                    "(missing)",
                    "a filter needs an engine (or PTMP's key, method)",
                ))
            }
        };
        if !plugins.has(&engine) {
            return Err(c.err(
                "engine",
                format!("{engine:?}"),
                format!(
                    "no such engine (load its library with \"plugins\" or PTMP_PLUGINS); known: {}",
                    plugins.engine_names().join(", ")
                ),
            ));
        }
        let detid = c.int_or("detid", -1, -1, u32::MAX as i64)?;
        // Let the engine check its own keys now, before anything starts.
        drop(plugins.create(&c.agent, &engine, data)?);
        // Keys the built-in engines read are not "unread".
        for k in ["adjacency", "max_gap", "min_adcsum"] {
            let _ = c.get(k);
        }
        Ok(Config {
            input,
            output,
            engine,
            detid: (detid >= 0).then_some(detid as u32),
            data: data.clone(),
            plugins: plugins.clone(),
        })
    }
}

pub struct FilterAgent {
    name: String,
    rx: Receiver,
    tx: Sender,
    engine: Box<dyn Engine>,
    detid: Option<u32>,
}

impl FilterAgent {
    pub fn new(name: String, c: &Config) -> Result<Self> {
        let engine = c.plugins.create(&name, &c.engine, &c.data)?;
        let (rx, tx) = crate::open_io(&name, &c.input, &c.output)?;
        Ok(FilterAgent {
            name,
            rx,
            tx,
            engine,
            detid: c.detid,
        })
    }
}

impl Agent for FilterAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&mut self, ctl: &Ctl) -> Result<Report> {
        let mut input = TPSet::default();
        let mut out = Vec::new();
        let (mut nin, mut nout, mut engine_errors, mut bad, mut empty) =
            (0u64, 0u64, 0u64, 0u64, 0u64);
        let mut unsent = 0u64;
        while !ctl.done(false) {
            match crate::recv_set(&mut self.rx, &mut input, POLL, ctl, &mut bad, &self.name)? {
                crate::Got::Set => {}
                crate::Got::Nothing => continue,
                crate::Got::Done => break,
            }
            nin += 1;
            if input.tps.is_empty() {
                empty += 1;
                continue;
            }
            out.clear();
            if let Err(e) = self.engine.process(&input, &mut out) {
                engine_errors += 1;
                if ctl.verbose {
                    eprintln!("{}: engine error on set {}: {e}", self.name, input.count);
                }
            }
            for s in &mut out {
                s.count = nout as u32; // wraps, as PTMP's 32-bit count
                if let Some(d) = self.detid {
                    s.detid = d;
                }
                if s.created == 0 {
                    s.created = ptmp_data::now_us();
                }
                if crate::send_set(&mut self.tx, s, ctl, &self.name)? {
                    nout += 1;
                } else {
                    unsent += 1;
                }
            }
        }
        Ok(Report::new(&self.name, "filter")
            .count("in", nin)
            .count("out", nout)
            .count("empty_inputs", empty)
            .count("unsent_at_stop", unsent)
            .count("engine_errors", engine_errors)
            .count("bad_messages", bad))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptmp::TrigPrim;

    fn tp(channel: u32, tstart: u64, adc: u32) -> TrigPrim {
        TrigPrim {
            channel,
            tstart,
            tspan: Some(10),
            adcsum: Some(adc),
            ..Default::default()
        }
    }

    #[test]
    fn adjacency_finds_runs_of_neighbouring_channels() {
        let mut e = Adjacency::new(4, 1, 0);
        // Channels 10,11,13,14 (gap of one missing channel allowed) then a
        // lone 30 and a short run 50,51.
        let set = TPSet {
            detid: 7,
            tps: vec![
                tp(14, 120, 1),
                tp(10, 100, 2),
                tp(30, 90, 5),
                tp(11, 105, 3),
                tp(13, 110, 4),
                tp(50, 1, 1),
                tp(51, 2, 1),
            ],
            ..Default::default()
        };
        let mut out = Vec::new();
        e.process(&set, &mut out).unwrap();
        assert_eq!(out.len(), 1);
        let c = &out[0];
        assert_eq!(
            (c.chanbeg(), c.chanend(), c.totaladc(), c.detid),
            (10, 14, 10, 7)
        );
        assert_eq!((c.tstart, c.tspan()), (100, 30));
        assert_eq!(c.tps.len(), 4);
        // max_gap 0: 10,11 and 13,14 are separate runs of 2, below 4.
        let mut e = Adjacency::new(4, 0, 0);
        out.clear();
        e.process(&set, &mut out).unwrap();
        assert!(out.is_empty());
        // min_adcsum filters.
        let mut e = Adjacency::new(4, 1, 11);
        e.process(&set, &mut out).unwrap();
        assert!(out.is_empty());
    }

    /// Channels, times and ADC at their extremes, with the widest and
    /// narrowest gaps: no overflow, the run and its span as expected.
    #[test]
    fn adjacency_at_extreme_values() {
        let mut cases = 0;
        for &max_gap in &[0, 1, u32::MAX - 1, u32::MAX] {
            for &t in &[0, 1, u64::MAX - 1, u64::MAX] {
                cases += 1;
                let mut e = Adjacency::new(2, max_gap, 0);
                let ext = |channel| TrigPrim {
                    channel,
                    tstart: t,
                    tspan: Some(u32::MAX),
                    adcsum: Some(u32::MAX),
                    adcpeak: Some(u32::MAX),
                    flags: Some(u32::MAX),
                };
                let set = TPSet {
                    detid: u32::MAX,
                    tps: vec![ext(0), ext(u32::MAX), ext(u32::MAX - 1), ext(u32::MAX)],
                    ..Default::default()
                };
                let mut out = Vec::new();
                e.process(&set, &mut out).unwrap();
                // u32::MAX - 1 and u32::MAX always neighbour; 0 joins them
                // only when max_gap allows u32::MAX - 2 missing channels.
                let joined = max_gap >= u32::MAX - 2;
                assert_eq!(out.len(), 1, "{max_gap} {t}");
                let c = &out[0];
                assert_eq!(c.tps.len(), if joined { 4 } else { 3 });
                assert_eq!(c.chanend(), u32::MAX);
                assert_eq!(c.totaladc(), u32::MAX);
                assert_eq!(c.tstart, t);
                assert_eq!(c.tspan() as u64, (u64::MAX - t).min(u32::MAX as u64));
            }
        }
        assert_eq!(cases, 16);
    }

    #[test]
    fn unknown_engine_names_the_known_ones() {
        let data = serde_json::json!({
            "input": {"socket": {"type": "PULL", "connect": ["inproc://x"]}},
            "output": {"socket": {"type": "PUSH", "bind": ["inproc://y"]}},
            "engine": "nosuch"
        });
        let c = Cfg::new("f1", &data).unwrap();
        let e = Config::parse(&c, &data, &Plugins::builtin())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("agent f1: engine = \"nosuch\": no such engine"),
            "{e}"
        );
        assert!(e.contains("passthrough"), "{e}");
    }
}
