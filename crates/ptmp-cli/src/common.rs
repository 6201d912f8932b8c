//! Pieces the subcommands share: errors with exit codes, socket options.

use clap::ValueEnum;
use ptmp::{Attach, SocketConfig, SocketType};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

/// An error that ends the command with an exit status: 2 for bad arguments
/// or configuration, 1 for anything else.
#[derive(Debug)]
pub struct CliError {
    pub code: i32,
    pub msg: String,
}

impl CliError {
    pub fn usage(msg: impl Into<String>) -> Self {
        CliError {
            code: 2,
            msg: msg.into(),
        }
    }
    pub fn fail(msg: impl Into<String>) -> Self {
        CliError {
            code: 1,
            msg: msg.into(),
        }
    }
    /// Standard output was closed by its reader (`ptmp ... | head -1`):
    /// not a failure. The command stops writing and `main` exits 0 with
    /// no message, as `ptmp cat` does.
    pub fn closed() -> Self {
        CliError {
            code: 0,
            msg: String::new(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl From<ptmp::Error> for CliError {
    fn from(e: ptmp::Error) -> Self {
        let code = if matches!(e, ptmp::Error::Config { .. }) {
            2
        } else {
            1
        };
        CliError {
            code,
            msg: e.to_string(),
        }
    }
}

#[cfg(feature = "bench")]
impl From<ptmp_bench::BenchError> for CliError {
    fn from(e: ptmp_bench::BenchError) -> Self {
        CliError {
            code: e.code,
            msg: e.msg,
        }
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return CliError::closed();
        }
        CliError::fail(e.to_string())
    }
}

/// `println!` that returns the write's error instead of panicking, so a
/// closed stdout (EPIPE) ends the command quietly through `?` and
/// [`CliError::closed`].
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
    }};
}
pub(crate) use outln;

/// `print!` that returns the write's error; see [`outln`].
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout().lock(), $($arg)*)
    }};
}
pub(crate) use out;

pub type CliResult<T = ()> = Result<T, CliError>;

/// `-a bind|connect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AttachArg {
    Bind,
    Connect,
}

impl From<AttachArg> for Attach {
    fn from(a: AttachArg) -> Attach {
        match a {
            AttachArg::Bind => Attach::Bind,
            AttachArg::Connect => Attach::Connect,
        }
    }
}

/// Parse a socket type name given on the command line.
pub fn parse_socket_type(s: &str) -> Result<SocketType, String> {
    SocketType::parse(s).ok_or_else(|| {
        format!(
            "unknown socket type {s:?}; use one of {}",
            SocketType::ALL.map(|t| t.name()).join(", ")
        )
    })
}

/// The socket options shared by `send` and `recv`: either `--config JSON`
/// or `-p TYPE -a bind|connect -e ENDPOINT...`.
#[derive(Debug, Clone, clap::Args)]
pub struct SockArgs {
    /// Socket type (PAIR, PUB, SUB, PUSH, PULL), case-insensitive.
    #[arg(short = 'p', long = "socket-type", value_parser = parse_socket_type)]
    pub stype: Option<SocketType>,
    /// Bind or connect the endpoints.
    #[arg(short = 'a', long = "attach", value_enum, default_value = "bind")]
    pub attach: AttachArg,
    /// Endpoints (inproc://, ipc://, tcp://, shm://NAME); repeat or list
    /// several. Quote a tcp://* endpoint so the shell leaves the * alone.
    #[arg(short = 'e', long = "endpoints", num_args = 1..)]
    pub endpoints: Vec<String>,
    /// Receive high-water mark (PTMP's "hwm").
    #[arg(long)]
    pub hwm: Option<i32>,
    /// A full PTMP socket config, JSON text or @FILE, instead of -p/-a/-e.
    #[arg(long, conflicts_with_all = ["stype", "endpoints", "hwm"])]
    pub config: Option<String>,
}

impl SockArgs {
    /// Build the socket config. `default_type` is used when -p is absent.
    pub fn to_config(&self, default_type: Option<SocketType>) -> CliResult<SocketConfig> {
        if let Some(c) = &self.config {
            let text = match c.strip_prefix('@') {
                Some(path) => std::fs::read_to_string(path)
                    .map_err(|e| CliError::usage(format!("--config @{path}: {e}")))?,
                None => c.clone(),
            };
            return Ok(SocketConfig::from_json(&text)?);
        }
        let stype = self.stype.or(default_type).ok_or_else(|| {
            CliError::usage(
                "give a socket type with -p TYPE (or a whole config with --config JSON)",
            )
        })?;
        if self.endpoints.is_empty() {
            return Err(CliError::usage(
                "give at least one endpoint with -e ENDPOINT (or a whole config with --config JSON)",
            ));
        }
        let mut cfg = SocketConfig::new(stype, self.attach.into(), &self.endpoints)?;
        if let Some(h) = self.hwm {
            if h < 0 {
                return Err(CliError::usage(format!("--hwm {h}: must be 0 or more")));
            }
            cfg = cfg.to_builder().hwm(h).build()?;
        }
        Ok(cfg)
    }
}

/// Set by SIGINT, SIGTERM or SIGHUP; long loops poll it and finish cleanly.
pub static STOP: AtomicBool = AtomicBool::new(false);

/// Whether a stop signal has arrived.
pub fn stopping() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Make SIGINT, SIGTERM and SIGHUP raise [`STOP`] (and the benchmark
/// suites' own stop flag) instead of ending the process, so every command
/// finishes cleanly.
pub fn install_signal_handler() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        // SAFETY: the action runs inside the signal handler, so it must be
        // async-signal-safe: it only stores into two static atomics, which
        // neither allocates nor takes a lock.
        let _ = unsafe {
            signal_hook::low_level::register(sig, || {
                STOP.store(true, Ordering::Relaxed);
                #[cfg(feature = "bench")]
                ptmp_bench::sys::request_stop();
            })
        };
    }
}

/// A progress bar on stderr, for long runs on a terminal only.
pub use ptmp_agents::progress::bar as progress;
