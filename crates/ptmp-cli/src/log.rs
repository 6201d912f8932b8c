//! What the command says on standard error, and how loudly.
//!
//! Notes, warnings and errors go through `tracing`. `-v` (repeatable) and
//! `-q` (repeatable) move the level from its default (info) towards trace or
//! towards error; `RUST_LOG` (the usual `tracing` filter syntax, e.g.
//! `RUST_LOG=ptmp=debug`) takes over from both when set. `--log-format
//! json` writes one JSON object a line (time, level, target, message and
//! fields) for a log collector; the default text is the message alone, as a
//! person reads it. Output proper (sets printed, summaries, tables) stays on
//! standard output and is not logging.

use clap::{Args, ValueEnum};
use std::sync::atomic::{AtomicU8, Ordering};
use tracing_subscriber::filter::{EnvFilter, LevelFilter};

/// The logging options every subcommand takes.
#[derive(Args, Clone, Debug)]
pub struct LogArgs {
    /// Say more: notes of detail (-v; per-set lines where a command has
    /// them), then debugging (-vv) and tracing (-vvv).
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Say less: warnings and errors only (-q), errors only (-qq).
    #[arg(short = 'q', long = "quiet", action = clap::ArgAction::Count, global = true, conflicts_with = "verbose")]
    pub quiet: u8,
    /// How standard error is written: text for people, json (one object a
    /// line) for log collectors.
    #[arg(long, value_enum, default_value = "text", global = true)]
    pub log_format: LogFormat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

static VERBOSE: AtomicU8 = AtomicU8::new(0);
static JSON: AtomicU8 = AtomicU8::new(0);

/// How many times -v was given (0 with -q).
pub fn verbose() -> u8 {
    VERBOSE.load(Ordering::Relaxed)
}

/// Whether standard error is JSON lines.
pub fn json() -> bool {
    JSON.load(Ordering::Relaxed) != 0
}

impl LogArgs {
    fn level(&self) -> LevelFilter {
        match (self.verbose, self.quiet) {
            (0, 0) => LevelFilter::INFO,
            (1, _) => LevelFilter::DEBUG,
            (v, _) if v > 1 => LevelFilter::TRACE,
            (_, 1) => LevelFilter::WARN,
            _ => LevelFilter::ERROR,
        }
    }
}

/// Set up logging for this process. A bad `RUST_LOG` is reported (as a
/// warning naming it) and the level from -v/-q used instead.
pub fn init(a: &LogArgs) {
    VERBOSE.store(a.verbose, Ordering::Relaxed);
    JSON.store(u8::from(a.log_format == LogFormat::Json), Ordering::Relaxed);
    let mut bad_env = None;
    let filter = match std::env::var("RUST_LOG") {
        Ok(v) if !v.trim().is_empty() => match EnvFilter::try_new(&v) {
            Ok(f) => f,
            Err(e) => {
                bad_env = Some(format!("RUST_LOG={v:?} is not a filter ({e}); using -v/-q"));
                EnvFilter::default().add_directive(a.level().into())
            }
        },
        _ => EnvFilter::default().add_directive(a.level().into()),
    };
    let b = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let set = match a.log_format {
        LogFormat::Json => b
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
        LogFormat::Text => b.event_format(Plain).try_init(),
    };
    // A second init (tests calling main twice) keeps the first.
    let _ = set;
    if let Some(w) = bad_env {
        tracing::warn!("{w}");
    }
}

/// Text for people: the message and its fields, nothing else (the messages
/// say which program and part they come from).
struct Plain;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for Plain
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut w: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        use tracing_subscriber::fmt::FormatFields as _;
        ctx.format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

/// A `Write` for the libraries that report as they go (the graph
/// supervisor, the agents' runner): each line written becomes one info
/// event, so it follows -q and --log-format like the command's own notes.
#[derive(Default)]
pub struct Lines {
    buf: Vec<u8>,
}

impl Lines {
    fn emit(&mut self, upto: usize) {
        let line: Vec<u8> = self.buf.drain(..upto).collect();
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        if !text.is_empty() {
            tracing::info!("{text}");
        }
    }
}

impl std::io::Write for Lines {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(b);
        while let Some(i) = self.buf.iter().position(|&c| c == b'\n') {
            self.emit(i + 1);
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        let n = self.buf.len();
        self.emit(n);
    }
}
