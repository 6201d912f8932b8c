//! Shared by the parity tests: the golden files' text form of TPSets, and
//! a deterministic driver of a merge core on a virtual clock.
//!
//! Text form (tests/golden/README.md), one set per line:
//! `count detid created tstart tspan chanbeg chanend totaladc | ch,tstart,tspan,adcsum,adcpeak,flags ...`
//! with `-` for an optional field that is absent.

#![allow(dead_code)]

use ptmp::{TPSet, TrigPrim};
use ptmp_agents::merge::Merge;
use std::path::PathBuf;

/// The golden folder.
pub fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

fn opt<T: std::str::FromStr>(s: &str, what: &str) -> Option<T> {
    if s == "-" {
        None
    } else {
        Some(s.parse().unwrap_or_else(|_| panic!("{what}: {s:?}")))
    }
}

/// One set from its text line.
pub fn parse_set(line: &str) -> TPSet {
    let (head, tps) = line.split_once('|').unwrap_or((line, ""));
    let h: Vec<&str> = head.split_whitespace().collect();
    assert_eq!(h.len(), 8, "8 set fields: {line}");
    let req = |i: usize| -> &str {
        assert_ne!(h[i], "-", "required field {i}: {line}");
        h[i]
    };
    TPSet {
        count: req(0).parse().unwrap(),
        detid: req(1).parse().unwrap(),
        created: req(2).parse().unwrap(),
        tstart: req(3).parse().unwrap(),
        tspan: opt(h[4], "tspan"),
        chanbeg: opt(h[5], "chanbeg"),
        chanend: opt(h[6], "chanend"),
        totaladc: opt(h[7], "totaladc"),
        tps: tps
            .split_whitespace()
            .map(|t| {
                let f: Vec<&str> = t.split(',').collect();
                assert_eq!(f.len(), 6, "6 TrigPrim fields: {t}");
                TrigPrim {
                    channel: f[0].parse().unwrap(),
                    tstart: f[1].parse().unwrap(),
                    tspan: opt(f[2], "tspan"),
                    adcsum: opt(f[3], "adcsum"),
                    adcpeak: opt(f[4], "adcpeak"),
                    flags: opt(f[5], "flags"),
                }
            })
            .collect(),
    }
}

/// Every set of a golden text file.
pub fn read_sets(name: &str) -> Vec<TPSet> {
    let p = golden(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(parse_set)
        .collect()
}

/// The sets PTMP's `replay` passes on, and when, for one link started at
/// `start_us`: a set before the last one passed is dropped; a set goes at
/// the start plus its data time since the first set, `speed` ticks per
/// microsecond (integer division, as PTMP).
pub fn replay(sets: &[TPSet], start_us: i64, speed: u64) -> Vec<(i64, TPSet)> {
    let mut out = Vec::new();
    let mut first: Option<u64> = None;
    let mut last = 0u64;
    let mut now = start_us;
    for s in sets {
        match first {
            None => {
                first = Some(s.tstart);
                last = s.tstart;
            }
            Some(f) => {
                if s.tstart < last {
                    continue;
                }
                last = s.tstart;
                now = now.max(start_us + ((s.tstart - f) / speed) as i64);
            }
        }
        out.push((now, s.clone()));
    }
    out
}

/// Drive `core` as the merge agent's loop does, on a virtual clock: each
/// arrival `(time_us, input, set)` is pushed at its time, the core is
/// popped after every push and at every time it asks to be woken
/// ([`Merge::next_due`]), until every set is sent or dropped and nothing is
/// due. The loop starts at `start_us`, before the first arrival.
pub fn drive<M: Merge>(
    core: &mut M,
    mut arrivals: Vec<(i64, usize, TPSet)>,
    start_us: i64,
) -> Vec<TPSet> {
    arrivals.sort_by_key(|a| a.0); // stable: per-link order kept
    let total = arrivals.len() as u64;
    let mut out = Vec::new();
    let mut it = arrivals.into_iter().peekable();
    let mut now = start_us;
    // Tardy sets the core handed back and the agent would drop.
    let mut handed_back = 0u64;
    let settled = |core: &M, back: u64| {
        let st = core.stream_stats();
        st.iter().map(|s| s.sent + s.dropped).sum::<u64>() + back >= total
    };
    for _ in 0..10_000_000 {
        while let Some(s) = core.pop(now) {
            out.push(s);
        }
        let next_in = it.peek().map(|a| a.0);
        // A due time not after now: the agent would look again at once;
        // here, one poll interval later.
        let due = core
            .next_due()
            .map(|d| if d > now { d } else { now + POLL_US });
        match (next_in, due) {
            (None, _) if settled(core, handed_back) => return out,
            (None, None) => return out,
            (Some(t), Some(d)) if d < t => now = now.max(d),
            (Some(t), _) => {
                now = now.max(t);
                while it.peek().is_some_and(|a| a.0 <= now) {
                    let (_, input, set) = it.next().unwrap();
                    if let ptmp_agents::merge::Pushed::Tardy { set, send } =
                        core.push(input, set, now)
                    {
                        if send {
                            out.push(set);
                        } else {
                            handed_back += 1;
                        }
                    }
                    while let Some(s) = core.pop(now) {
                        out.push(s);
                    }
                }
            }
            (None, Some(d)) => now = now.max(d),
        }
    }
    panic!("the merge did not settle");
}

/// The agent's poll interval (`ptmp_agents::POLL`), microseconds.
const POLL_US: i64 = 20_000;

/// The identity of a set in a merged stream.
pub fn ident(s: &TPSet) -> (u32, u32, u64) {
    (s.detid, s.count, s.tstart)
}
