//! `ptmp`: the command-line front of ptmp. Subcommands mirror PTMP's check
//! programs (check_send, check_recv, check_sendrecv, czmqat) with the same
//! option letters where they exist.

mod cat;
mod common;

use clap::{Parser, Subcommand};
use common::CliError;

#[derive(Parser)]
#[command(name = "ptmp", version, about = "Trigger message passing, PTMP-compatible")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Copy messages between sockets and dump files, or print a dump (czmqat).
    Cat(cat::CatArgs),
}

fn main() {
    common::install_signal_handler();
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Cat(a) => cat::run(&a),
    };
    if let Err(CliError { code, msg }) = r {
        eprintln!("ptmp: error: {msg}");
        std::process::exit(code);
    }
}
