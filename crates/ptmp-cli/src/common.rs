//! Pieces the subcommands share: errors with exit codes, socket options.

use clap::ValueEnum;
use ptmp::{Attach, SocketConfig, SocketType};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

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
    /// A top-level "discovery" key in it turns presence on, as in `ptmp
    /// run` (see --discovery).
    #[arg(long, conflicts_with_all = ["stype", "endpoints", "hwm"])]
    pub config: Option<String>,
    /// Turn presence on the local network on, in this group, so that
    /// endpoints may be names: -a connect -e name://NODE/PORT waits for
    /// the peer announcing it and follows it when it moves; -a bind -e
    /// name://NODE/PORT binds a tcp port the system picks and announces it.
    #[arg(long, value_name = "GROUP")]
    pub discovery: Option<String>,
    /// With --discovery: a file holding the group's shared secret (only
    /// announcements signed with it are believed, ours are signed); it
    /// must be your own and private (chmod 600 FILE).
    #[arg(long, value_name = "FILE", requires = "discovery")]
    pub secret_file: Option<std::path::PathBuf>,
    /// With --discovery: how long a name connected to is waited for before
    /// it is an error naming it (e.g. 5s; a bare number is seconds).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "30s",
        value_parser = ptmp::duration::secs_positive,
        requires = "discovery"
    )]
    pub name_timeout: std::time::Duration,
    /// CURVE: this socket's secret certificate (NAME.key_secret, made by
    /// `ptmp keys new`); it must be your own and private (chmod 600 FILE).
    /// With --curve-allow the socket is the server, with
    /// --curve-server-key a client.
    #[arg(long, value_name = "FILE")]
    pub curve_secret: Option<std::path::PathBuf>,
    /// CURVE server: a client admitted, by its public key (Z85), its
    /// NAME.key file or a directory of them; repeat for more. `any` admits
    /// every client (encryption without authentication).
    #[arg(long, value_name = "KEY", requires = "curve_secret")]
    pub curve_allow: Vec<String>,
    /// CURVE client: the server's public key (Z85) or its NAME.key file.
    #[arg(
        long,
        value_name = "KEY",
        requires = "curve_secret",
        conflicts_with = "curve_allow"
    )]
    pub curve_server_key: Option<String>,
}

impl SockArgs {
    /// The CURVE part given by --curve-*, if any.
    fn curve(&self) -> CliResult<Option<ptmp::curve::Curve>> {
        use ptmp::curve::{Allow, Curve};
        let Some(secret) = &self.curve_secret else {
            return Ok(None);
        };
        let secret_key_file = secret.clone();
        Ok(Some(match (&self.curve_server_key, &self.curve_allow[..]) {
            (Some(k), _) => Curve::Client {
                secret_key_file,
                server_key: k.clone(),
            },
            (None, [one]) if one == "any" => Curve::Server {
                secret_key_file,
                allow: Allow::Any,
            },
            (None, []) => {
                return Err(CliError::usage(
                    "--curve-secret: say whom this socket admits with --curve-allow KEY (it is the server) \
                     or which server it reaches with --curve-server-key KEY (it is a client)",
                ))
            }
            (None, list) => Curve::Server {
                secret_key_file,
                allow: Allow::Listed(list.to_vec()),
            },
        }))
    }

    /// The text of `--config` (read from the file for `@FILE`).
    pub(crate) fn config_text(&self) -> CliResult<Option<String>> {
        self.config.as_deref().map(config_text).transpose()
    }

    /// Build the socket config. `default_type` is used when -p is absent.
    pub fn to_config(&self, default_type: Option<SocketType>) -> CliResult<SocketConfig> {
        let cfg = self.plain_config(default_type)?;
        Ok(match self.curve()? {
            Some(c) => cfg.to_builder().curve(c).build()?,
            None => cfg,
        })
    }

    /// The socket config without the --curve-* options.
    fn plain_config(&self, default_type: Option<SocketType>) -> CliResult<SocketConfig> {
        if let Some(text) = self.config_text()? {
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

/// A `--config` value: JSON text, or `@FILE` holding it (read with the
/// size limit of every config file).
pub fn config_text(given: &str) -> CliResult<String> {
    match given.strip_prefix('@') {
        Some(path) => ptmp::files::read_given_text(path.as_ref(), ptmp::files::CONFIG_LIMIT)
            .map_err(|e| CliError::usage(format!("--config @{path}: {e}"))),
        None => Ok(given.to_string()),
    }
}

/// Set by a stop signal (see [`install_signal_handler`]); long loops poll
/// it and finish cleanly.
pub static STOP: AtomicBool = AtomicBool::new(false);

/// The first stop signal that arrived (0: none yet).
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Whether a stop signal has arrived.
pub fn stopping() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// The first stop signal that arrived, if one has.
pub fn stop_signal() -> Option<i32> {
    Some(STOP_SIGNAL.load(Ordering::Relaxed)).filter(|&s| s != 0)
}

/// The signals that stop every command cleanly, as Ctrl-C does: it
/// finishes what it holds, prints its summary and ends.
fn stop_signals() -> [i32; 5] {
    use rustix::process::Signal;
    [
        Signal::INT,
        Signal::TERM,
        Signal::HUP,
        Signal::QUIT,
        Signal::XCPU,
    ]
    .map(Signal::as_raw)
}

/// The signals that would end a process by default and that every command
/// ignores instead (`ptmp graph run` gives SIGUSR1 a use, and logs the
/// others). SIGXFSZ ignored turns a write past the file size limit into
/// an error that names the file. SIGPIPE is ignored from the start (a
/// closed stdout ends a command quietly).
fn ignored_signals() -> [i32; 8] {
    use rustix::process::Signal;
    [
        Signal::USR1,
        Signal::USR2,
        Signal::ALARM,
        Signal::VTALARM,
        Signal::PROF,
        Signal::IO,
        Signal::POWER,
        Signal::XFSZ,
    ]
    .map(Signal::as_raw)
}

/// Make the stop signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGXCPU) raise
/// [`STOP`] (and the benchmark suites' own stop flag) instead of ending the
/// process, so every command finishes cleanly with its summary, and ignore
/// the other signals that would end it (SIGUSR1, SIGUSR2, SIGALRM,
/// SIGVTALRM, SIGPROF, SIGIO, SIGPWR, SIGXFSZ): a process ended by them
/// would leave its rings, sockets and files unfinished.
pub fn install_signal_handler() {
    for sig in stop_signals() {
        // SAFETY: the action runs inside the signal handler, so it must be
        // async-signal-safe: it only stores into static atomics, which
        // neither allocates nor takes a lock.
        let _ = unsafe {
            signal_hook::low_level::register(sig, move || {
                let _ = STOP_SIGNAL.compare_exchange(0, sig, Ordering::Relaxed, Ordering::Relaxed);
                STOP.store(true, Ordering::Relaxed);
                #[cfg(feature = "bench")]
                ptmp_bench::sys::request_stop();
            })
        };
    }
    for sig in ignored_signals() {
        // A flag no one reads: the signal is caught, and so ignored.
        let _ = signal_hook::flag::register(sig, Arc::new(AtomicBool::new(false)));
    }
}

/// Check that the ignored signals are caught: a runner of agents (`ptmp
/// run`, a graph's part) holds rings and files that only a clean stop
/// releases, so a signal it cannot ignore is an error before it starts.
pub fn ignore_stray_signals() -> CliResult {
    for sig in ignored_signals() {
        signal_hook::flag::register(sig, Arc::new(AtomicBool::new(false))).map_err(|e| {
            let name = signal_hook::low_level::signal_name(sig).unwrap_or("a signal");
            CliError::fail(format!("cannot handle {name}: {e}"))
        })?;
    }
    Ok(())
}

/// A progress bar on stderr, for long runs on a terminal only.
pub use ptmp_agents::progress_bar as progress;
