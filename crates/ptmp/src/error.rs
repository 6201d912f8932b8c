//! The one error type of the ptmp API.

use ptmp_data::WireError;

/// Everything that can go wrong in ptmp's socket layer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration is not valid. `key` is a JSON path such as
    /// `socket.type`, `value` the offending value as written.
    #[error("invalid config: {key} = {value}: {reason}")]
    Config {
        /// Where: the JSON path of the key.
        key: String,
        /// What: the value as written, or `(missing)`.
        value: String,
        /// Why it is refused.
        reason: String,
    },
    /// Binding an endpoint failed (the address is in use, the interface does
    /// not exist, permission denied ...).
    #[error("cannot bind {endpoint}: {reason}")]
    Bind {
        /// The address as configured.
        endpoint: String,
        /// Why, in words.
        reason: String,
    },
    /// Connecting an endpoint failed.
    #[error("cannot connect {endpoint}: {reason}")]
    Connect {
        /// The address as configured.
        endpoint: String,
        /// Why, in words.
        reason: String,
    },
    /// A received message is not a PTMP message. The receiver counted it and
    /// can go on receiving.
    #[error("bad message: {0}")]
    Wire(#[from] WireError),
    /// A bounded wait ran out.
    #[error("timed out after {ms} ms waiting for {what}")]
    Timeout {
        /// What was waited for.
        what: String,
        /// How long, in milliseconds.
        ms: u64,
    },
    /// A blocking call was interrupted by a signal (e.g. SIGINT).
    #[error("interrupted by a signal")]
    Interrupted,
    /// A shared-memory channel failed while in use (a corrupt or
    /// truncated segment, ...): `source` says how, naming the channel and
    /// the field, and can be matched on.
    #[error("{endpoint}: {source}")]
    Shm {
        /// The channel's address, `shm://NAME`.
        endpoint: String,
        /// What the ring found.
        #[source]
        source: ptmp_shm::ShmError,
    },
    /// A request got no answer ([`crate::request`]).
    #[error("request to {address}: {failure}")]
    Request {
        /// Where it was sent.
        address: String,
        /// Why it got no answer.
        failure: Failure,
    },
    /// Any other ZeroMQ failure, with what was being done.
    #[error("zmq {op} failed: {source}")]
    Zmq {
        /// The operation that failed, e.g. `"send"`.
        op: &'static str,
        /// libzmq's error.
        #[source]
        source: zmq::Error,
    },
}

impl Error {
    pub(crate) fn config(
        key: impl Into<String>,
        value: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Error::Config {
            key: key.into(),
            value: value.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn zmq(op: &'static str) -> impl FnOnce(zmq::Error) -> Self {
        move |source| match source {
            zmq::Error::EINTR => Error::Interrupted,
            source => Error::Zmq { op, source },
        }
    }
}

impl From<Box<crate::fields::FieldError>> for Error {
    /// [`Error::Config`] at the field's location, in the reader's own
    /// wording.
    fn from(e: Box<crate::fields::FieldError>) -> Self {
        let reason = e.problem.reason();
        let key = e.location();
        Error::Config {
            key,
            value: e.value,
            reason,
        }
    }
}

/// Why a request got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Nothing answered within the request's time.
    TimedOut {
        /// Its time, in milliseconds.
        ms: u64,
    },
    /// No server was connected to take the request within its time.
    NoServer {
        /// Where the client looks for servers.
        address: String,
        /// How long it waited, in milliseconds.
        ms: u64,
    },
    /// A server's connection ended while the request was out: whatever
    /// server held it will not answer.
    ServerGone {
        /// The connection that ended.
        endpoint: String,
    },
    /// The server refused it, saying why.
    Refused(String),
    /// The server could not read it (a client speaking another protocol).
    Unreadable(String),
    /// The request, or its answer, is over the limit in bytes.
    TooBig {
        /// Its size.
        bytes: usize,
        /// The limit (the socket config's `max_message`).
        limit: usize,
    },
    /// The client already has as many requests out as it may.
    TooMany {
        /// Its limit.
        limit: usize,
    },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::TimedOut { ms } => write!(f, "no answer within {ms} ms"),
            Failure::NoServer { address, ms } => {
                write!(f, "no server at {address} took the request within {ms} ms")
            }
            Failure::ServerGone { endpoint } => write!(
                f,
                "the server's connection ({endpoint}) ended while the request was out"
            ),
            Failure::Refused(why) => write!(f, "refused by the server: {why}"),
            Failure::Unreadable(why) => write!(f, "the server could not read it: {why}"),
            Failure::TooBig { bytes, limit } => {
                write!(f, "{bytes} bytes, over the limit of {limit} (max_message)")
            }
            Failure::TooMany { limit } => write!(
                f,
                "{limit} requests already out (the client's limit): wait for answers first"
            ),
        }
    }
}

impl std::error::Error for Failure {}

/// Result with ptmp's [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;
