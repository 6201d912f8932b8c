//! The engines built into ptmp (see the [`crate::filter`] module docs for
//! what each does).

use super::Engine;
use crate::cfg::Cfg;
use crate::error::{Error, Result};
use ptmp::TPSet;
use serde_json::Value;

/// The built-in engines by every name they answer to: PTMP's own names
/// (`dummy_filter` from its core library, `pdune_adjacency_tc` from its
/// `ptmp-tcs` plugin) included, so PTMP configurations name them unchanged.
pub(super) const BUILTIN_ENGINES: &[&str] = &[
    "passthrough",
    "pass",
    "dummy_filter",
    "adjacency",
    "pdune-adjacency-tc",
    "pdune_adjacency_tc",
];

/// Engines PTMP configurations name that ptmp does not provide, each with
/// what it was: a configuration naming one is refused with that said,
/// rather than with a bare "no such engine".
pub(super) const UNAVAILABLE_ENGINES: &[(&str, &str)] = &[
    (
        "pdune_adjacency_td",
        "the trigger-decision engine of PTMP's ptmp-tcs plugin",
    ),
    (
        "pdune-adjacency-td",
        "the trigger-decision engine of PTMP's ptmp-tcs plugin",
    ),
];

pub(super) fn builtin_engine(agent: &str, name: &str, config: &Value) -> Result<Box<dyn Engine>> {
    match name {
        "passthrough" | "pass" | "dummy_filter" => Ok(Box::new(Passthrough)),
        "adjacency" | "pdune-adjacency-tc" | "pdune_adjacency_tc" => {
            Ok(Box::new(Adjacency::from_config(agent, config)?))
        }
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
    /// A run must touch at least this many distinct channels.
    pub adjacency: u32,
    /// Channels that may be missing between neighbours of a run.
    pub max_gap: u32,
    /// A run's ADC sum must be at least this.
    pub min_adcsum: u64,
    count: u32,
    order: Vec<usize>,
}

impl Adjacency {
    /// A finder with these thresholds (see the fields); candidates are
    /// numbered from 0.
    pub fn new(adjacency: u32, max_gap: u32, min_adcsum: u64) -> Self {
        Adjacency {
            adjacency,
            max_gap,
            min_adcsum,
            count: 0,
            order: Vec::new(),
        }
    }

    /// A finder configured by the keys `adjacency` (default 5), `max_gap`
    /// (default 1) and `min_adcsum` (default 0) of `config`.
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
}
