//! Errors of the agent layer: every one names the agent it concerns.

/// What can go wrong configuring or running an agent.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration value is missing, of the wrong type or out of range.
    /// `agent` is the agent's name (or its place in `proxies`), `key` a JSON
    /// path inside its `data`, `value` the value as written (or `missing`).
    #[error("agent {agent}: {key} = {value}: {reason}")]
    Config {
        agent: String,
        key: String,
        value: String,
        reason: String,
    },
    /// A socket could not be made or used.
    #[error("agent {agent}: {source}")]
    Socket {
        agent: String,
        #[source]
        source: ptmp::Error,
    },
    /// A file could not be read or written.
    #[error("agent {agent}: {what}: {source}")]
    Io {
        agent: String,
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A plugin library could not be loaded or does not follow the ABI.
    #[error("plugin {library}: {reason}")]
    Plugin { library: String, reason: String },
    /// A Jsonnet file did not evaluate.
    #[error("{file}: {reason}")]
    Jsonnet { file: String, reason: String },
    /// Anything else an agent reports while running.
    #[error("agent {agent}: {reason}")]
    Run { agent: String, reason: String },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn config(
        agent: impl Into<String>,
        key: impl Into<String>,
        value: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Error::Config {
            agent: agent.into(),
            key: key.into(),
            value: value.into(),
            reason: reason.into(),
        }
    }

    pub fn socket(agent: impl Into<String>) -> impl FnOnce(ptmp::Error) -> Self {
        let agent = agent.into();
        move |source| Error::Socket { agent, source }
    }

    pub fn io(
        agent: impl Into<String>,
        what: impl Into<String>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let (agent, what) = (agent.into(), what.into());
        move |source| Error::Io {
            agent,
            what,
            source,
        }
    }

    pub fn run(agent: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Run {
            agent: agent.into(),
            reason: reason.into(),
        }
    }
}
