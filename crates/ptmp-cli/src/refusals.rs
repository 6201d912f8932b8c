//! A CURVE server's refused clients, told as they come (the first at once,
//! then at most one line per interval) and counted in the summary.

use std::time::{Duration, Instant};

/// How often, at most, more refusals are told.
const EVERY: Duration = Duration::from_secs(10);

/// What has been told of a CURVE server's refusals.
pub struct RefusalLog {
    who: &'static str,
    /// Refusals told so far.
    told: u64,
    /// When the last line was written.
    at: Option<Instant>,
}

impl RefusalLog {
    pub fn new(who: &'static str) -> RefusalLog {
        RefusalLog {
            who,
            told: 0,
            at: None,
        }
    }

    /// Look at a server's `(admitted, refused)` counts (`None`: not a
    /// CURVE server); call it now and then, it only compares numbers.
    pub fn note(&mut self, counts: Option<(u64, u64)>) {
        let Some((_, refused)) = counts else { return };
        if refused <= self.told {
            return;
        }
        let now = Instant::now();
        match self.at {
            None => tracing::warn!(
                "{}: refused a client (a key not allowed, a plaintext client, a wrong server key, \
                 or bytes that are not ZeroMQ); further refusals are told at most every {} s",
                self.who,
                EVERY.as_secs()
            ),
            Some(t) if now.duration_since(t) < EVERY => return,
            Some(_) => tracing::warn!(
                "{}: refused {} more client(s) ({refused} in all)",
                self.who,
                refused - self.told
            ),
        }
        self.told = refused;
        self.at = Some(now);
    }
}

/// The summary line of a CURVE server's counts.
pub fn summary((admitted, refused): (u64, u64)) -> String {
    format!("CURVE: admitted {admitted} client(s), refused {refused}")
}

/// Log a CURVE server's summary line (nothing for other sockets).
pub fn summarize(counts: Option<(u64, u64)>) {
    if let Some(c) = counts {
        tracing::info!("{}", summary(c));
    }
}

/// A `--json` summary with a CURVE server's counts added
/// (`curve_admitted`, `curve_refused`).
pub fn with_counts(mut j: serde_json::Value, counts: Option<(u64, u64)>) -> serde_json::Value {
    if let Some((admitted, refused)) = counts {
        j["curve_admitted"] = admitted.into();
        j["curve_refused"] = refused.into();
    }
    j
}

/// Write a CURVE server's summary line to `out` (nothing for other
/// sockets); gives the counts back.
pub fn write_summary(
    out: &mut impl std::io::Write,
    counts: Option<(u64, u64)>,
) -> std::io::Result<Option<(u64, u64)>> {
    if let Some(c) = counts {
        writeln!(out, "{}", summary(c))?;
    }
    Ok(counts)
}
