//! Errors of the agent layer: every one names the agent it concerns.

/// What can go wrong configuring or running an agent.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configuration value is missing, of the wrong type or out of range.
    /// `agent` is the agent's name (or its place in `proxies`), `key` a JSON
    /// path inside its `data`, `value` the value as written (or `missing`).
    #[error("agent {agent}: {key} = {value}: {reason}")]
    Config {
        /// The agent's name, or its place in `proxies`.
        agent: String,
        /// The JSON path of the value inside the agent's `data`.
        key: String,
        /// The value as written, or `(missing)`.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A socket could not be made or used.
    #[error("agent {agent}: {source}")]
    Socket {
        /// The agent whose socket failed.
        agent: String,
        /// The transport's error.
        #[source]
        source: ptmp::Error,
    },
    /// A file could not be read or written.
    #[error("agent {agent}: {what}: {source}")]
    Io {
        /// The agent whose file failed.
        agent: String,
        /// Which file and what was being done with it.
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A file of messages could not be opened, read or written (the
    /// error names the file, and where a record is damaged, which).
    #[error("agent {agent}: {key} {source}")]
    File {
        /// The agent whose file failed.
        agent: String,
        /// The key of the agent's config naming the file (`ifile`, `ofile`).
        key: &'static str,
        /// The file's error.
        #[source]
        source: ptmp_formats::Error,
    },
    /// A plugin library could not be loaded or does not follow the ABI.
    #[error("plugin {library}: {reason}")]
    Plugin {
        /// The library as named in the configuration.
        library: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// A Jsonnet file did not evaluate.
    #[error("{file}: {reason}")]
    Jsonnet {
        /// The file evaluated.
        file: String,
        /// The evaluator's message.
        reason: String,
    },
    /// Anything else an agent reports while running.
    #[error("agent {agent}: {reason}")]
    Run {
        /// The agent that failed.
        agent: String,
        /// What went wrong.
        reason: String,
    },
}

/// The agent layer's result: [`Error`] unless said otherwise.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A [`Error::Config`] for `key` of `agent`.
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

    /// A mapper from a transport error to [`Error::Socket`] for `agent`, for
    /// `map_err`.
    pub fn socket(agent: impl Into<String>) -> impl FnOnce(ptmp::Error) -> Self {
        let agent = agent.into();
        move |source| Error::Socket { agent, source }
    }

    /// A mapper from an I/O error to [`Error::Io`] for `agent` doing `what`,
    /// for `map_err`.
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

    /// A mapper from a file's error to [`Error::File`] for the file the
    /// key `key` of `agent`'s config names, for `map_err`.
    pub fn file(
        agent: impl Into<String>,
        key: &'static str,
    ) -> impl FnOnce(ptmp_formats::Error) -> Self {
        let agent = agent.into();
        move |source| Error::File { agent, key, source }
    }

    /// Whether this is a configuration error no retry can mend: a bad
    /// value, a plugin or Jsonnet file that cannot be used, or a socket
    /// refused for its configuration (an shm ring that does not fit, an
    /// ipc path that is not a socket). A graph part exits 2 for it, and
    /// the supervisor stops the graph instead of restarting the process.
    pub fn is_config(&self) -> bool {
        match self {
            Error::Config { .. } | Error::Plugin { .. } | Error::Jsonnet { .. } => true,
            Error::Socket { source, .. } => matches!(source, ptmp::Error::Config { .. }),
            Error::File { source, .. } => matches!(source, ptmp_formats::Error::Format { .. }),
            Error::Io { .. } | Error::Run { .. } => false,
        }
    }

    /// A [`Error::Run`] for `agent`.
    pub fn run(agent: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Run {
            agent: agent.into(),
            reason: reason.into(),
        }
    }
}
