//! The commands on recordings: `ptmp record` keeps what an endpoint
//! carries in a file, `ptmp replay` sends a file's messages out again at
//! their pace, `ptmp convert` copies a file into another format and `ptmp
//! info` tells what a file holds. Every format is that of
//! `ptmp_formats`, chosen by the file's extension or `--format`. `ptmp
//! plot` draws what a trigger physicist looks at first.

pub mod convert;
pub mod info;
pub mod plot;
pub mod record;
pub mod replay;

use crate::common::{CliError, CliResult};
use ptmp_formats::Format;

/// A `--format` value, checked by `ptmp_formats`.
pub fn parse_format(s: &str) -> Result<Format, String> {
    Format::named(s).map_err(|e| e.to_string())
}

/// A file error as the command's failure.
pub fn fail(e: ptmp_formats::Error) -> CliError {
    match e {
        ptmp_formats::Error::Format { .. } => CliError::usage(e.to_string()),
        _ => CliError::fail(e.to_string()),
    }
}

/// A size in bytes: a number with an optional unit, `k`/`M`/`G`/`T`
/// (powers of 1000, a trailing `B` allowed) or `KiB`/`MiB`/`GiB`/`TiB`
/// (powers of 1024); more than 0.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim();
    let mult: f64 = match unit.to_ascii_lowercase().trim_end_matches('b') {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "t" => 1e12,
        "ki" => 1024.0,
        "mi" => 1024.0 * 1024.0,
        "gi" => 1024.0 * 1024.0 * 1024.0,
        "ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(format!(
                "{s:?}: unknown unit {unit:?}; use k, M, G, T (1000s) or KiB, MiB, GiB, TiB"
            ))
        }
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?}: not a size (e.g. 100MB, 1GiB, 500000)"))?;
    let bytes = n * mult;
    if !(1.0..1.8e19).contains(&bytes) {
        return Err(format!("{s:?}: must be at least 1 byte and fit in 64 bits"));
    }
    Ok(bytes as u64)
}

/// Nanoseconds since the epoch as a UTC time, `2026-12-03T17:00:00.123456789Z`.
pub fn utc(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let (days, s) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:09}Z",
        s / 3600,
        s / 60 % 60,
        s % 60,
        ns % 1_000_000_000
    )
}

/// The proleptic Gregorian date of a day counted from 1970-01-01 (the
/// days-to-civil arithmetic of Howard Hinnant's date algorithms).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Refuse to write `out` over `input` (it would be truncated before it
/// is read) or over an existing file unless `force`.
pub fn check_output(input: &std::path::Path, out: &std::path::Path, force: bool) -> CliResult {
    if let (Ok(a), Ok(b)) = (input.canonicalize(), out.canonicalize()) {
        if a == b {
            return Err(CliError::usage(format!(
                "{}: the output is the input file; name another",
                out.display()
            )));
        }
    }
    if !force && out.exists() {
        return Err(CliError::usage(format!(
            "{}: exists; give --force to write over it",
            out.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{parse_size, utc};

    #[test]
    fn sizes() {
        assert_eq!(parse_size("100"), Ok(100));
        assert_eq!(parse_size("100MB"), Ok(100_000_000));
        assert_eq!(parse_size("1.5k"), Ok(1500));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("2 MiB"), Ok(2 << 20));
        for bad in ["", "0", "MB", "-5", "5 parsecs", "1e30"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn utc_times() {
        assert_eq!(utc(0), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(
            utc(951_782_400_000_000_001),
            "2000-02-29T00:00:00.000000001Z"
        );
        assert_eq!(
            utc(1_796_317_199_500_000_000),
            "2026-12-03T16:59:59.500000000Z"
        );
        assert_eq!(utc(u64::MAX), "2554-07-21T23:34:33.709551615Z");
    }
}
