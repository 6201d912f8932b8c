//! Durations as people write them, for command-line options (the `ptmp`
//! command, the benchmarks) and anything else that takes a time as text.
//!
//! Every option that takes a time accepts a number with a unit: `250us`,
//! `500ms`, `2s`, `1.5m`, `1h` (also `ns`, `sec`, `min`). A bare number keeps
//! the unit the option always had, named in its help (milliseconds for the
//! options PTMP's check programs have, `-B`, `-E`, `-T`; microseconds for
//! czmqat's `--delayus`; seconds for the rest), so existing command lines keep their meaning.

use std::time::Duration;

/// The unit of a bare number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bare {
    /// Microseconds.
    Micros,
    /// Milliseconds.
    Millis,
    /// Seconds.
    Secs,
}

impl Bare {
    fn name(self) -> &'static str {
        match self {
            Bare::Micros => "microseconds",
            Bare::Millis => "milliseconds",
            Bare::Secs => "seconds",
        }
    }

    fn secs(self) -> f64 {
        match self {
            Bare::Micros => 1e-6,
            Bare::Millis => 1e-3,
            Bare::Secs => 1.0,
        }
    }
}

/// A text that is not a duration, with what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DurationError(String);

impl std::fmt::Display for DurationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DurationError {}

/// The longest duration any option takes: a year. Longer is a typo, and
/// `Duration` arithmetic on a deadline must not overflow.
const MAX_SECS: f64 = 366.0 * 24.0 * 3600.0;

/// Parse `s` as a duration, a bare number being in `bare` units.
pub fn parse(s: &str, bare: Bare) -> Result<Duration, DurationError> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e'))
        .unwrap_or(t.len());
    // "1e3ms" reads as a number then a unit; "1s" must not take the "e" of
    // "sec", which cannot happen as a unit never starts with a digit.
    let (num, unit) = t.split_at(split);
    let not_a_duration = || {
        DurationError(format!(
            "{s:?} is not a duration (give a number with a unit, e.g. 500ms or 2s; \
             a bare number is {})",
            bare.name()
        ))
    };
    if num.is_empty() {
        return Err(not_a_duration());
    }
    let scale = match unit.trim() {
        "" => bare.secs(),
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" | "sec" | "secs" => 1.0,
        "m" | "min" | "mins" => 60.0,
        "h" | "hour" | "hours" => 3600.0,
        u => {
            return Err(DurationError(format!(
                "{s:?}: unknown unit {u:?} (give ns, us, ms, s, m or h, e.g. 500ms or 2s; \
                 a bare number is {})",
                bare.name()
            )))
        }
    };
    let v: f64 = num.parse().map_err(|_| not_a_duration())?;
    let secs = v * scale;
    if !secs.is_finite() || secs < 0.0 {
        return Err(DurationError(format!(
            "{s:?}: a duration must be zero or more"
        )));
    }
    if secs > MAX_SECS {
        return Err(DurationError(format!(
            "{s:?}: longer than a year (the most any option takes)"
        )));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A duration, or none: the options where -1 (any negative number) means
/// "no limit" (wait forever, never give up, run until interrupted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit(pub Option<Duration>);

fn limit(s: &str, bare: Bare) -> Result<Limit, DurationError> {
    let t = s.trim();
    if t.starts_with('-') {
        return match t.parse::<f64>() {
            Ok(v) if v < 0.0 => Ok(Limit(None)),
            _ => Err(DurationError(format!(
                "{s:?}: give a duration (e.g. 500ms or 2s) or -1 for no limit"
            ))),
        };
    }
    parse(t, bare).map(|d| Limit(Some(d)))
}

// Value parsers, one per kind of option (their `String` error is what clap
// prints after the option's name).
/// A duration, a bare number being microseconds.
pub fn micros(s: &str) -> Result<Duration, DurationError> {
    parse(s, Bare::Micros)
}

/// A duration, a bare number being milliseconds.
pub fn millis(s: &str) -> Result<Duration, DurationError> {
    parse(s, Bare::Millis)
}

/// A duration, a bare number being seconds.
pub fn secs(s: &str) -> Result<Duration, DurationError> {
    parse(s, Bare::Secs)
}

/// Seconds, more than zero.
pub fn secs_positive(s: &str) -> Result<Duration, DurationError> {
    let d = secs(s)?;
    if d.is_zero() {
        return Err(DurationError(format!("{s:?}: must be more than zero")));
    }
    Ok(d)
}

/// Milliseconds, or -1 for no limit.
pub fn millis_limit(s: &str) -> Result<Limit, DurationError> {
    limit(s, Bare::Millis)
}

/// Seconds, or -1 for no limit.
pub fn secs_limit(s: &str) -> Result<Limit, DurationError> {
    limit(s, Bare::Secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_bare_numbers() {
        assert_eq!(millis("250").unwrap(), Duration::from_millis(250));
        assert_eq!(micros("250").unwrap(), Duration::from_micros(250));
        assert_eq!(secs("2").unwrap(), Duration::from_secs(2));
        assert_eq!(secs("0.5").unwrap(), Duration::from_millis(500));
        for (s, d) in [
            ("500ms", Duration::from_millis(500)),
            ("2s", Duration::from_secs(2)),
            ("1.5m", Duration::from_secs(90)),
            ("1h", Duration::from_secs(3600)),
            ("250us", Duration::from_micros(250)),
            ("7ns", Duration::from_nanos(7)),
            (" 3 s ", Duration::from_secs(3)),
            ("1e3ms", Duration::from_secs(1)),
        ] {
            assert_eq!(millis(s).unwrap(), d, "{s}");
            assert_eq!(secs(s).unwrap(), d, "{s}");
        }
    }

    #[test]
    fn bad_durations_are_named() {
        let e = millis("5x").unwrap_err().to_string();
        assert!(e.contains("\"5x\"") && e.contains("unknown unit"), "{e}");
        let e = secs("fast").unwrap_err().to_string();
        assert!(e.contains("not a duration") && e.contains("seconds"), "{e}");
        assert!(millis("-5")
            .unwrap_err()
            .to_string()
            .contains("zero or more"));
        assert!(secs("1e30")
            .unwrap_err()
            .to_string()
            .contains("longer than a year"));
        assert!(secs("NaN").is_err());
        assert!(secs_positive("0s")
            .unwrap_err()
            .to_string()
            .contains("more than zero"));
    }

    #[test]
    fn minus_one_is_no_limit() {
        assert_eq!(millis_limit("-1").unwrap(), Limit(None));
        assert_eq!(secs_limit("-2.5").unwrap(), Limit(None));
        assert_eq!(
            millis_limit("1500").unwrap(),
            Limit(Some(Duration::from_millis(1500)))
        );
        assert_eq!(
            secs_limit("100ms").unwrap(),
            Limit(Some(Duration::from_millis(100)))
        );
        assert!(millis_limit("-x").is_err());
    }
}
