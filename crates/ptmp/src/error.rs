//! The one error type of the ptmp API.

use ptmp_data::WireError;

/// Everything that can go wrong in ptmp's socket layer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration is not valid. `key` is a JSON path such as
    /// `socket.type`, `value` the offending value as written.
    #[error("invalid config: {key} = {value}: {reason}")]
    Config {
        key: String,
        value: String,
        reason: String,
    },
    /// Binding an endpoint failed (the address is in use, the interface does
    /// not exist, permission denied ...).
    #[error("cannot bind {endpoint}: {reason}")]
    Bind { endpoint: String, reason: String },
    /// Connecting an endpoint failed.
    #[error("cannot connect {endpoint}: {reason}")]
    Connect { endpoint: String, reason: String },
    /// A received message is not a PTMP message. The receiver counted it and
    /// can go on receiving.
    #[error("bad message: {0}")]
    Wire(#[from] WireError),
    /// A bounded wait ran out.
    #[error("timed out after {ms} ms waiting for {what}")]
    Timeout { what: String, ms: u64 },
    /// A blocking call was interrupted by a signal (e.g. SIGINT).
    #[error("interrupted by a signal")]
    Interrupted,
    /// Any other ZeroMQ failure, with what was being done.
    #[error("zmq {op} failed: {source}")]
    Zmq {
        op: &'static str,
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

pub type Result<T, E = Error> = std::result::Result<T, E>;
