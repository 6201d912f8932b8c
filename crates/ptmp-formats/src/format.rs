//! Which format a file is in, from its extension or a name given by hand.

use crate::{Error, Result};
use std::fmt;
use std::path::Path;

/// A file format ptmp reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// PTMP's czmqat dump: each message an 8-byte little-endian length and
    /// CZMQ's `zmsg_encode` form of its frames. Keeps the frames only: no
    /// channel, no receive time.
    Dump,
    /// MCAP (<https://mcap.dev>): TPSets as protobuf messages with their
    /// schema, a channel per stream, receive times; chunks compressed with
    /// zstd and a summary to seek by ([`crate::mcap`]).
    Mcap,
    /// Parquet: a table of one row per TrigPrim with its set's columns,
    /// its channel and receive time ([`crate::parquet`]).
    Parquet,
}

/// One fact the format keeps about the file, as a name and a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detail {
    /// What it is ("compression", "chunks", "row groups").
    pub name: &'static str,
    /// Its value, as printed.
    pub value: String,
}

impl Detail {
    pub(crate) fn new(name: &'static str, value: impl ToString) -> Detail {
        Detail {
            name,
            value: value.to_string(),
        }
    }
}

/// Every name a format is known by: the extensions and `--format` values
/// that mean it, in the order help texts list them. `None` marks a format
/// ptmp knows of and refuses by name rather than writing a dump under its
/// extension.
const NAMES: &[(&str, Option<Format>, &str)] = &[
    ("dump", Some(Format::Dump), "czmqat dump"),
    ("czmqat", Some(Format::Dump), "czmqat dump"),
    ("mcap", Some(Format::Mcap), "MCAP"),
    ("parquet", Some(Format::Parquet), "Parquet"),
    ("h5", None, "HDF5"),
    ("hdf5", None, "HDF5"),
];

impl Format {
    /// Every format ptmp reads and writes, for help texts and errors.
    pub const ALL: &'static [Format] = &[Format::Dump, Format::Mcap, Format::Parquet];

    /// The name `--format` takes and [`fmt::Display`] prints.
    pub fn name(self) -> &'static str {
        match self {
            Format::Dump => "dump",
            Format::Mcap => "mcap",
            Format::Parquet => "parquet",
        }
    }

    /// The format's name in prose ("czmqat dump", "MCAP", "Parquet").
    pub fn long_name(self) -> &'static str {
        match self {
            Format::Dump => "czmqat dump",
            Format::Mcap => "MCAP",
            Format::Parquet => "Parquet",
        }
    }

    /// The format a `--format` value names (any case).
    pub fn named(name: &str) -> Result<Format> {
        match lookup(name) {
            Some((Some(f), _)) => Ok(f),
            Some((None, long)) => Err(not_yet(Path::new(name), long)),
            None => Err(Error::Format {
                path: name.into(),
                what: format!("no such format; {}", offered()),
            }),
        }
    }

    /// The format of `path`: the one `given` names if any, otherwise the
    /// one its extension says. A file with no extension, or one ptmp does
    /// not know, is a czmqat dump, as PTMP's czmqat wrote them under any
    /// name; `.mcap` is MCAP and `.parquet` Parquet; an extension of a
    /// format ptmp does not write yet (`.h5`, `.hdf5`) is refused, naming
    /// it.
    pub fn of(path: &Path, given: Option<Format>) -> Result<Format> {
        if let Some(f) = given {
            return Ok(f);
        }
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        match lookup(ext) {
            Some((Some(f), _)) => Ok(f),
            Some((None, long)) => Err(not_yet(path, long)),
            None => Ok(Format::Dump),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn lookup(name: &str) -> Option<(Option<Format>, &'static str)> {
    NAMES
        .iter()
        .find(|(n, _, _)| n.eq_ignore_ascii_case(name))
        .map(|&(_, f, long)| (f, long))
}

fn offered() -> String {
    let names: Vec<&str> = NAMES
        .iter()
        .filter(|(_, f, _)| f.is_some())
        .map(|(n, _, _)| *n)
        .collect();
    format!("ptmp reads and writes: {}", names.join(", "))
}

fn not_yet(path: &Path, long: &str) -> Error {
    Error::Format {
        path: path.into(),
        what: format!(
            "ptmp does not read or write {long} files yet; {}",
            offered()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_choose_and_unknown_ones_mean_a_dump() {
        let of = |p: &str| Format::of(Path::new(p), None);
        assert_eq!(of("run.dump").unwrap(), Format::Dump);
        assert_eq!(of("RUN.DUMP").unwrap(), Format::Dump);
        assert_eq!(of("tpsets").unwrap(), Format::Dump);
        assert_eq!(of("out.dat").unwrap(), Format::Dump);
        assert_eq!(of("run.mcap").unwrap(), Format::Mcap);
        assert_eq!(of("RUN.MCAP").unwrap(), Format::Mcap);
        assert_eq!(of("tps.parquet").unwrap(), Format::Parquet);
        let e = of("run.h5").unwrap_err().to_string();
        assert!(
            e.starts_with("run.h5: ") && e.contains("ptmp does not read or write HDF5 files yet"),
            "{e}"
        );
        assert!(e.contains("dump, czmqat, mcap, parquet"), "{e}");
        assert!(of("x.hdf5").unwrap_err().to_string().contains("HDF5"));
    }

    #[test]
    fn a_given_format_wins_over_the_extension() {
        let p = Path::new("run.mcap");
        assert_eq!(Format::of(p, Some(Format::Dump)).unwrap(), Format::Dump);
        let p = Path::new("run.dump");
        assert_eq!(
            Format::of(p, Some(Format::Parquet)).unwrap(),
            Format::Parquet
        );
    }

    #[test]
    fn format_names_are_checked() {
        assert_eq!(Format::named("Dump").unwrap(), Format::Dump);
        assert_eq!(Format::named("czmqat").unwrap(), Format::Dump);
        assert_eq!(Format::named("MCAP").unwrap(), Format::Mcap);
        assert_eq!(Format::named("parquet").unwrap(), Format::Parquet);
        let e = Format::named("csv").unwrap_err().to_string();
        assert!(e.contains("csv") && e.contains("no such format"), "{e}");
        let e = Format::named("hdf5").unwrap_err().to_string();
        assert!(e.contains("HDF5 files yet"), "{e}");
        for f in Format::ALL {
            assert_eq!(Format::named(f.name()).unwrap(), *f);
            assert_eq!(f.to_string(), f.name());
            assert!(!f.long_name().is_empty());
        }
    }
}
