//! `ptmp`: the command-line front of ptmp. Subcommands mirror PTMP's check
//! programs (check_send, check_recv, check_sendrecv, czmqat) with the same
//! option letters where they exist.

mod agents_bench;
mod babus;
mod baseline;
mod bench;
mod cat;
mod common;
mod fanout;
mod graph;
mod latency;
mod recv;
mod redis_bench;
mod report;
mod ring;
mod run;
mod send;
mod sendrecv;
mod shm;
mod throughput;

use clap::{Parser, Subcommand};
use common::CliError;

#[derive(Parser)]
#[command(
    name = "ptmp",
    version,
    about = "Trigger message passing, PTMP-compatible"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Copy messages between sockets and dump files, or print a dump (czmqat).
    Cat(cat::CatArgs),
    /// Send TPSets (check_send).
    Send(send::SendArgs),
    /// Receive TPSets, report gaps and a summary (check_recv).
    Recv(recv::RecvArgs),
    /// Run agents from a PTMP configuration, JSON or Jsonnet (ptmper).
    Run(run::RunArgs),
    /// Send and receive in one process and print the rate (check_sendrecv).
    Sendrecv(sendrecv::SendRecvArgs),
    /// Data-flow graphs: check, draw, run and watch them.
    #[command(subcommand)]
    Graph(graph::GraphCmd),
    /// The ZeroMQ tutorial's butterfly (pipeline + parallel), timed against
    /// theory.
    ///
    /// The butterfly is a tutorial of early ZeroMQ (1.x): requests pass
    /// through two stages of parallel workers, load-balanced, and the
    /// throughput is the slowest stage's instances over its time per request.
    Butterfly(graph::ButterflyArgs),
    /// List and remove shared-memory channels.
    #[command(subcommand)]
    Shm(shm::ShmCmd),
    /// Benchmarks: ptmp beside the alternatives, in one run.
    Bench(bench::BenchArgs),
    /// One side of a `bench throughput` row (internal).
    #[command(hide = true, name = "tput-child")]
    TputChild(throughput::ChildArgs),
    /// One side of a `bench baseline` run (internal).
    #[command(hide = true, name = "bench-child")]
    BenchChild(baseline::ChildArgs),
}

fn main() {
    common::install_signal_handler();
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Cat(a) => cat::run(&a),
        Cmd::Send(a) => send::run(&a),
        Cmd::Recv(a) => recv::run(&a),
        Cmd::Sendrecv(a) => sendrecv::run(&a),
        Cmd::Run(a) => run::run(&a),
        Cmd::Bench(c) => bench::run(&c),
        Cmd::BenchChild(a) => baseline::child(&a),
        Cmd::TputChild(a) => throughput::child(&a),
        Cmd::Shm(c) => shm::run(&c),
        Cmd::Graph(c) => graph::run(&c),
        Cmd::Butterfly(a) => graph::butterfly(&a),
    };
    if let Err(CliError { code, msg }) = r {
        eprintln!("ptmp: error: {msg}");
        std::process::exit(code);
    }
}
