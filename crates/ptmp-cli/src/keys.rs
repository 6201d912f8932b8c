//! `ptmp keys`: CURVE key pairs as certificate files.

use crate::common::{CliError, CliResult};
use std::path::PathBuf;

#[derive(Debug, clap::Subcommand)]
pub enum KeysCmd {
    /// Make a key pair: DIR/NAME.key (the public certificate, to hand to
    /// peers) and DIR/NAME.key_secret (mode 0600), in the format czmq and
    /// pyzmq's zmq.auth write and read. Existing files are never replaced.
    New {
        /// The certificates' name.
        name: String,
        /// Where to write them.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
    /// Print the public key (Z85) of a certificate file, public or secret.
    Show {
        /// A NAME.key or NAME.key_secret file.
        file: PathBuf,
    },
}

pub fn run(cmd: &KeysCmd) -> CliResult {
    if !ptmp::curve::available() {
        return Err(CliError::fail(
            "this build of ptmp has no CURVE (its libzmq was built without libsodium)",
        ));
    }
    match cmd {
        KeysCmd::New { name, dir } => {
            let (public, secret) = ptmp::curve::write_certificates(dir, name)
                .map_err(|e| CliError::fail(e.to_string()))?;
            let key = ptmp::curve::read_certificate(&public)
                .map_err(|e| CliError::fail(e.to_string()))?
                .public();
            println!("public key {}", key.z85());
            println!("wrote {} (give it to peers)", public.display());
            println!("wrote {} (mode 0600, keep it here)", secret.display());
            Ok(())
        }
        KeysCmd::Show { file } => {
            let c =
                ptmp::curve::read_certificate(file).map_err(|e| CliError::fail(e.to_string()))?;
            println!("{}", c.public().z85());
            Ok(())
        }
    }
}
