//! TPSets as table rows, and rows back into TPSets: the one place a set
//! becomes columns.
//!
//! A table has one row per TrigPrim, carrying its set's fields beside its
//! own, and the set's number in the file (`set`) so rows can be grouped
//! back. A set of no TrigPrims still gets one row, whose TrigPrim columns
//! are empty (`None`), so a table keeps every set and converting back is
//! lossless: `sets(rows(s)) == s` for any sequence of sets.

use ptmp_data::{TPSet, TrigPrim};
use std::fmt;

/// One TrigPrim with its set's fields: a row of a table of TPSets.
///
/// The set's fields are named as in PTMP's schema, its `tstart` and
/// `tspan` as `set_tstart` and `set_tspan` (the TrigPrim's own keep the
/// plain names).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TpRow {
    /// The set's number in its file or stream, from 0.
    pub set: u64,
    /// The set's `count` (its sender's sequence number).
    pub count: u32,
    /// The set's detector id.
    pub detid: u32,
    /// When the set was made, microseconds since the Unix epoch.
    pub created: i64,
    /// The set's start, in data-clock ticks.
    pub set_tstart: u64,
    /// The set's span, in ticks.
    pub set_tspan: Option<u32>,
    /// The set's first channel.
    pub chanbeg: Option<u32>,
    /// The set's last channel.
    pub chanend: Option<u32>,
    /// The sum of its TrigPrims' ADC.
    pub totaladc: Option<u32>,
    /// The TrigPrim's channel; `None` in the one row of a set with no
    /// TrigPrims.
    pub channel: Option<u32>,
    /// The TrigPrim's start, in ticks (`None` with `channel`).
    pub tstart: Option<u64>,
    /// The TrigPrim's time over threshold, in ticks.
    pub tspan: Option<u32>,
    /// The TrigPrim's ADC sum.
    pub adcsum: Option<u32>,
    /// The TrigPrim's ADC peak.
    pub adcpeak: Option<u32>,
    /// The TrigPrim's flags.
    pub flags: Option<u32>,
}

/// The column names of a table of [`TpRow`]s, in field order.
pub const COLUMNS: [&str; 15] = [
    "set",
    "count",
    "detid",
    "created",
    "set_tstart",
    "set_tspan",
    "chanbeg",
    "chanend",
    "totaladc",
    "channel",
    "tstart",
    "tspan",
    "adcsum",
    "adcpeak",
    "flags",
];

/// The rows of set number `set`: one per TrigPrim, or one with empty
/// TrigPrim columns if it has none.
pub fn rows(set: u64, s: &TPSet) -> impl Iterator<Item = TpRow> + '_ {
    let head = TpRow {
        set,
        count: s.count,
        detid: s.detid,
        created: s.created,
        set_tstart: s.tstart,
        set_tspan: s.tspan,
        chanbeg: s.chanbeg,
        chanend: s.chanend,
        totaladc: s.totaladc,
        ..TpRow::default()
    };
    let empty = s.tps.is_empty().then(|| head.clone());
    s.tps
        .iter()
        .map(move |tp| TpRow {
            channel: Some(tp.channel),
            tstart: Some(tp.tstart),
            tspan: tp.tspan,
            adcsum: tp.adcsum,
            adcpeak: tp.adcpeak,
            flags: tp.flags,
            ..head.clone()
        })
        .chain(empty)
}

/// Why rows do not make sets: the row (counted from 0) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowError {
    /// The row, from 0.
    pub row: u64,
    /// What is wrong with it.
    pub what: String,
}

impl fmt::Display for RowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "row {}: {}", self.row, self.what)
    }
}

impl std::error::Error for RowError {}

/// Gathers rows, in order, back into sets: each run of rows with one `set`
/// number is one set. Rows of one set must agree on the set's columns, a
/// row with a TrigPrim must have its `channel` and `tstart`, and a row
/// without one must be its set's only row.
#[derive(Debug, Default)]
pub struct Regroup {
    rows: u64,
    open: Option<(u64, TPSet, bool)>,
}

impl Regroup {
    /// Nothing gathered yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Take the next row; returns the set (with its number) that the row
    /// ended, if it began a new one.
    pub fn push(&mut self, r: &TpRow) -> Result<Option<(u64, TPSet)>, RowError> {
        let row = self.rows;
        self.rows += 1;
        let bad = |what: String| RowError { row, what };
        let tp = match (r.channel, r.tstart) {
            (Some(channel), Some(tstart)) => Some(TrigPrim {
                channel,
                tstart,
                tspan: r.tspan,
                adcsum: r.adcsum,
                adcpeak: r.adcpeak,
                flags: r.flags,
            }),
            (None, None) if (r.tspan, r.adcsum, r.adcpeak, r.flags) == (None, None, None, None) => {
                None
            }
            _ => {
                return Err(bad(
                    "a TrigPrim needs both channel and tstart; a set without TrigPrims has all its TrigPrim columns empty".into(),
                ))
            }
        };
        if let Some((n, s, empty)) = &mut self.open {
            if *n == r.set {
                if *empty || tp.is_none() {
                    return Err(bad(format!(
                        "set {n} has a row without a TrigPrim and another row; a set without TrigPrims has one row"
                    )));
                }
                if !same_set(s, r) {
                    return Err(bad(format!(
                        "its set columns differ from those of the rows before it in set {n}"
                    )));
                }
                s.tps.extend(tp);
                return Ok(None);
            }
        }
        let s = TPSet {
            count: r.count,
            detid: r.detid,
            created: r.created,
            tstart: r.set_tstart,
            tspan: r.set_tspan,
            chanbeg: r.chanbeg,
            chanend: r.chanend,
            totaladc: r.totaladc,
            tps: tp.iter().cloned().collect(),
        };
        let empty = tp.is_none();
        Ok(self.open.replace((r.set, s, empty)).map(|(n, s, _)| (n, s)))
    }

    /// The last set, once the rows have ended.
    pub fn finish(self) -> Option<(u64, TPSet)> {
        self.open.map(|(n, s, _)| (n, s))
    }
}

fn same_set(s: &TPSet, r: &TpRow) -> bool {
    (s.count, s.detid, s.created, s.tstart) == (r.count, r.detid, r.created, r.set_tstart)
        && (s.tspan, s.chanbeg, s.chanend, s.totaladc)
            == (r.set_tspan, r.chanbeg, r.chanend, r.totaladc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tp() -> impl Strategy<Value = TrigPrim> {
        (
            any::<u32>(),
            any::<u64>(),
            any::<Option<u32>>(),
            any::<Option<u32>>(),
        )
            .prop_map(|(channel, tstart, tspan, adcsum)| TrigPrim {
                channel,
                tstart,
                tspan,
                adcsum,
                adcpeak: adcsum.map(|a| a / 2),
                flags: tspan.map(|_| 1),
            })
    }

    fn set() -> impl Strategy<Value = TPSet> {
        (
            any::<u32>(),
            any::<i64>(),
            any::<u64>(),
            any::<Option<u32>>(),
            proptest::collection::vec(tp(), 0..5),
        )
            .prop_map(|(count, created, tstart, tspan, tps)| TPSet {
                count,
                detid: count % 7,
                created,
                tstart,
                tspan,
                chanbeg: tps.first().map(|t| t.channel),
                chanend: tps.last().map(|t| t.channel),
                totaladc: tspan,
                tps,
            })
    }

    proptest! {
        #[test]
        fn sets_to_rows_and_back_are_the_same_sets(sets in proptest::collection::vec(set(), 0..6)) {
            let mut g = Regroup::new();
            let mut back = Vec::new();
            for (i, s) in sets.iter().enumerate() {
                for r in rows(i as u64, s) {
                    back.extend(g.push(&r).unwrap());
                }
            }
            back.extend(g.finish());
            let want: Vec<(u64, TPSet)> = sets.into_iter().enumerate().map(|(i, s)| (i as u64, s)).collect();
            prop_assert_eq!(back, want);
        }
    }

    #[test]
    fn a_set_without_trigprims_is_one_row() {
        let s = TPSet {
            count: 3,
            ..TPSet::default()
        };
        let r: Vec<TpRow> = rows(9, &s).collect();
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].set, r[0].count, r[0].channel), (9, 3, None));
    }

    #[test]
    fn rows_that_do_not_make_a_set_are_named() {
        let s = TPSet {
            tps: vec![TrigPrim::default(); 2],
            ..TPSet::default()
        };
        let mut r: Vec<TpRow> = rows(0, &s).collect();
        r[1].detid = 4;
        let mut g = Regroup::new();
        g.push(&r[0]).unwrap();
        let e = g.push(&r[1]).unwrap_err();
        assert_eq!(e.row, 1);
        assert!(e.to_string().contains("set columns differ"), "{e}");

        let mut g = Regroup::new();
        let half = TpRow {
            channel: Some(1),
            ..TpRow::default()
        };
        let e = g.push(&half).unwrap_err().to_string();
        assert!(e.starts_with("row 0: ") && e.contains("tstart"), "{e}");

        let mut g = Regroup::new();
        let none = TpRow::default();
        g.push(&none).unwrap();
        let e = g.push(&none).unwrap_err().to_string();
        assert!(e.contains("without a TrigPrim and another row"), "{e}");
    }
}
