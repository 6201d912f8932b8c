//! The error a suite ends with, carrying the exit status the command gives.

use std::fmt;

/// An error that ends a suite: code 2 for bad arguments, 1 for a failed
/// measurement; the `ptmp` command exits with that code.
#[derive(Debug)]
pub struct BenchError {
    /// The exit status: 2 for usage errors, 1 for anything else.
    pub code: i32,
    /// What went wrong, in one line.
    pub msg: String,
}

impl BenchError {
    /// A bad argument or combination of arguments (exit status 2).
    pub fn usage(msg: impl Into<String>) -> Self {
        BenchError {
            code: 2,
            msg: msg.into(),
        }
    }
    /// A run that could not be completed (exit status 1).
    pub fn fail(msg: impl Into<String>) -> Self {
        BenchError {
            code: 1,
            msg: msg.into(),
        }
    }
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for BenchError {}

impl From<ptmp::Error> for BenchError {
    fn from(e: ptmp::Error) -> Self {
        let code = if matches!(e, ptmp::Error::Config { .. }) {
            2
        } else {
            1
        };
        BenchError {
            code,
            msg: e.to_string(),
        }
    }
}

impl From<std::io::Error> for BenchError {
    fn from(e: std::io::Error) -> Self {
        BenchError::fail(e.to_string())
    }
}

/// A suite's result.
pub type BenchResult<T = ()> = Result<T, BenchError>;
