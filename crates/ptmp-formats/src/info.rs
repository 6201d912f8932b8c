//! What a file holds, read through once: its records by channel, their
//! sets and TrigPrims, the receive and data times they span, and what the
//! format itself says of the file (compression, chunks, row groups). The
//! summary `ptmp info` prints, and `--json` serializes, for every format
//! alike.
//!
//! A damaged or cut-short file is summarized up to its last readable
//! record and the damage is told in [`Summary::damaged`]: a recording
//! killed mid-write is exactly the file one wants to look into.

pub use crate::format::Detail;
use crate::{Format, Record, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A first and a last value, as read (not sorted: a file written out of
/// order shows it only in its channels' order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// The smallest value seen.
    pub min: u64,
    /// The largest value seen.
    pub max: u64,
}

impl Span {
    fn widen(span: &mut Option<Span>, v: u64) {
        match span {
            None => *span = Some(Span { min: v, max: v }),
            Some(s) => {
                s.min = s.min.min(v);
                s.max = s.max.max(v);
            }
        }
    }
}

/// One channel of a file (a recorded edge or endpoint).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Channel {
    /// Its name; empty in a format that keeps none.
    pub name: String,
    /// Records on it.
    pub records: u64,
    /// TPSets among them.
    pub tpsets: u64,
    /// TrigPrims in those sets.
    pub trigprims: u64,
    /// The receive times, nanoseconds since the epoch, where kept.
    pub log_time_ns: Option<Span>,
    /// The sets' `tstart`, in data-clock ticks.
    pub tstart: Option<Span>,
}

/// What one file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The file.
    pub path: PathBuf,
    /// Its format.
    pub format: Format,
    /// Its size in bytes.
    pub bytes: u64,
    /// Records read (messages).
    pub records: u64,
    /// TPSets among them.
    pub tpsets: u64,
    /// TrigPrims in those sets.
    pub trigprims: u64,
    /// Records that are not PTMP TPSet messages (a czmqat dump keeps any
    /// message).
    pub other: u64,
    /// Each channel, by name.
    pub channels: Vec<Channel>,
    /// Every detector id the sets name.
    pub detids: Vec<u32>,
    /// Receive times over the whole file, where kept.
    pub log_time_ns: Option<Span>,
    /// The sets' `tstart` over the whole file, in data-clock ticks.
    pub tstart: Option<Span>,
    /// What the format itself tells of the file.
    pub details: Vec<Detail>,
    /// Why reading stopped before the end, when it did: every count above
    /// is of the records before that point.
    pub damaged: Option<String>,
}

/// Read `path` (in the format `given`, or its extension's) through and
/// summarize it. Only a file that cannot be opened at all is an error;
/// damage further in is told in [`Summary::damaged`].
pub fn summarize(path: &Path, given: Option<Format>) -> Result<Summary> {
    let bytes = std::fs::metadata(path)
        .map_err(|source| crate::Error::Io {
            path: path.into(),
            source,
        })?
        .len();
    let mut r = crate::open(path, given)?;
    let format = r.format();
    let mut tally = Tally::default();
    let mut rec = Record::default();
    let damaged = loop {
        match r.read_into(&mut rec) {
            Ok(true) => tally.take(&rec),
            Ok(false) => break None,
            Err(e) => break Some(e.to_string()),
        }
    };
    let details = match format {
        Format::Dump => crate::dump::layout(),
        Format::Mcap => crate::mcap::layout(path)?,
        Format::Parquet => crate::parquet::layout(path)?,
    };
    Ok(tally.into_summary(path, format, bytes, details, damaged))
}

/// The counts gathered while reading.
#[derive(Default)]
struct Tally {
    set: ptmp_data::TPSet,
    other: u64,
    channels: BTreeMap<String, Channel>,
    detids: BTreeSet<u32>,
}

impl Tally {
    fn take(&mut self, rec: &Record) {
        if !self.channels.contains_key(&rec.channel) {
            let c = Channel {
                name: rec.channel.clone(),
                ..Channel::default()
            };
            self.channels.insert(rec.channel.clone(), c);
        }
        let c = self.channels.get_mut(&rec.channel).expect("inserted above");
        c.records += 1;
        if let Some(t) = rec.log_time_ns {
            Span::widen(&mut c.log_time_ns, t);
        }
        if ptmp_data::wire::decode_frames(&rec.frames, &mut self.set).is_err() {
            self.other += 1;
            return;
        }
        c.tpsets += 1;
        c.trigprims += self.set.tps.len() as u64;
        Span::widen(&mut c.tstart, self.set.tstart);
        self.detids.insert(self.set.detid);
    }

    fn into_summary(
        self,
        path: &Path,
        format: Format,
        bytes: u64,
        details: Vec<Detail>,
        damaged: Option<String>,
    ) -> Summary {
        let channels: Vec<Channel> = self.channels.into_values().collect();
        let over = |f: fn(&Channel) -> Option<Span>| {
            let mut all = None;
            for s in channels.iter().filter_map(f) {
                Span::widen(&mut all, s.min);
                Span::widen(&mut all, s.max);
            }
            all
        };
        Summary {
            path: path.into(),
            format,
            bytes,
            records: channels.iter().map(|c| c.records).sum(),
            tpsets: channels.iter().map(|c| c.tpsets).sum(),
            trigprims: channels.iter().map(|c| c.trigprims).sum(),
            other: self.other,
            log_time_ns: over(|c| c.log_time_ns),
            tstart: over(|c| c.tstart),
            detids: self.detids.into_iter().collect(),
            channels,
            details,
            damaged,
        }
    }
}
