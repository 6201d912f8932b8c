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

/// Result with ptmp's [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;
