//! `ptmp bench` and `ptmp sendrecv` in a build without the `bench` feature:
//! the subcommands stay, so a user learns why they do nothing.

use crate::common::{CliError, CliResult};

/// Whatever was given after the subcommand, accepted so the explanation is
/// printed instead of an argument error.
#[derive(Debug, clap::Args)]
pub struct NoBenchArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    rest: Vec<String>,
}

/// Explain that this build has no benchmarks (exit status 2).
pub fn run(cmd: &str) -> CliResult {
    Err(CliError::usage(format!(
        "`ptmp {cmd}` is not in this build: ptmp was built without benchmarks \
         (cargo feature `bench`, on by default); rebuild with it to run them"
    )))
}
