//! `ptmp`: the command-line front of ptmp. Subcommands mirror PTMP's check
//! programs (check_send, check_recv, check_sendrecv, czmqat) with the same
//! option letters where they exist.

mod ask;
mod cat;
mod common;
mod files;
mod graph;
mod http;
mod keys;
mod log;
#[cfg(not(feature = "bench"))]
mod no_bench;
mod peers;
mod recv;
mod refusals;
mod run;
mod send;
#[cfg(feature = "bench")]
mod sendrecv;
mod shm;
mod top;

use clap::{CommandFactory, Parser, Subcommand};
use common::CliError;

#[derive(Parser)]
#[command(
    name = "ptmp",
    version,
    about = "Trigger message passing, PTMP-compatible",
    after_help = "Signals: SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGXCPU stop every command \
                  cleanly: it finishes what it holds, writes its files and prints its \
                  summary. SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGIO, SIGPWR, \
                  SIGXFSZ and SIGPIPE are ignored (`ptmp graph run` prints its status \
                  on SIGUSR1)."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    #[command(flatten)]
    log: log::LogArgs,
}

#[derive(Subcommand)]
enum Cmd {
    /// Copy messages between sockets and dump files, or print a dump (czmqat).
    Cat(cat::CatArgs),
    /// Send TPSets (check_send).
    Send(send::SendArgs),
    /// Receive TPSets, report gaps and a summary (check_recv).
    Recv(recv::RecvArgs),
    /// Keep what an endpoint carries in a file (MCAP, Parquet or a czmqat
    /// dump), each message with its receive time.
    Record(files::record::RecordArgs),
    /// Send a recording's messages out of a socket, paced by data time,
    /// receive time or as fast as it goes.
    Replay(files::replay::ReplayArgs),
    /// Copy a recording into another format.
    Convert(files::convert::ConvertArgs),
    /// Tell what recordings hold: channels, counts, times, compression.
    Info(files::info::InfoArgs),
    /// Draw a recording: an event display, ADC-sum and time-over-threshold
    /// histograms, the rate per detector id (SVG).
    Plot(files::plot::PlotArgs),
    /// Answer requests: an echo, or a shell command run for each.
    Serve(ask::ServeArgs),
    /// Send one request and print its answer; fails on a refusal or when
    /// no answer comes in time.
    Call(ask::CallArgs),
    /// Run agents from a PTMP configuration, JSON or Jsonnet (ptmper).
    Run(run::RunArgs),
    /// Send and receive in one process and print the rate (check_sendrecv).
    #[cfg(feature = "bench")]
    Sendrecv(sendrecv::SendRecvArgs),
    /// Send and receive in one process and print the rate (check_sendrecv).
    #[cfg(not(feature = "bench"))]
    Sendrecv(no_bench::NoBenchArgs),
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
    /// Who is present on the local network (DNS-SD over multicast DNS):
    /// name, ports, host, pid, uptime; --watch prints joins and leaves.
    Peers(peers::PeersArgs),
    /// CURVE keys for secured tcp and ipc edges: make and show them.
    #[command(subcommand)]
    Keys(keys::KeysCmd),
    /// List and remove shared-memory channels.
    #[command(subcommand)]
    Shm(shm::ShmCmd),
    /// A live view of a running graph (per node and edge: rate, loss,
    /// lag, restarts) or of this host's shm channels, refreshed every second.
    Top(top::TopArgs),
    /// Benchmarks: ptmp beside the alternatives, in one run.
    #[cfg(feature = "bench")]
    Bench(ptmp_bench::BenchArgs),
    /// Benchmarks: ptmp beside the alternatives, in one run.
    #[cfg(not(feature = "bench"))]
    Bench(no_bench::NoBenchArgs),
    /// Print a completion script for a shell (e.g. `ptmp completions bash >
    /// ~/.local/share/bash-completion/completions/ptmp`).
    Completions {
        /// The shell: bash, elvish, fish, powershell or zsh.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page, in roff (`ptmp man | man -l -`, or save it as
    /// ptmp.1 in a man directory).
    Man,
    /// The sides of two-process benchmark rows (hidden).
    #[cfg(feature = "bench")]
    #[command(flatten)]
    BenchChild(ptmp_bench::ChildCmd),
}

fn main() {
    common::install_signal_handler();
    let cli = Cli::parse();
    log::init(&cli.log);
    // Every connection takes a descriptor: use what the hard limit allows,
    // and say in the log when connections are refused at it anyway.
    ptmp::fdguard::raise_open_file_limit();
    ptmp::fdguard::set_notice(|m| tracing::warn!("{m}"));
    let r = match cli.cmd {
        Cmd::Cat(a) => cat::run(&a),
        Cmd::Send(a) => send::run(&a),
        Cmd::Recv(a) => recv::run(&a),
        #[cfg(feature = "bench")]
        Cmd::Sendrecv(a) => sendrecv::run(&a),
        #[cfg(not(feature = "bench"))]
        Cmd::Sendrecv(_) => no_bench::run("sendrecv"),
        Cmd::Record(a) => files::record::run(&a),
        Cmd::Replay(a) => files::replay::run(&a),
        Cmd::Convert(a) => files::convert::run(&a),
        Cmd::Info(a) => files::info::run(&a),
        Cmd::Plot(a) => files::plot::run(&a),
        Cmd::Serve(a) => ask::serve(&a),
        Cmd::Call(a) => ask::call(&a),
        Cmd::Run(a) => run::run(&a),
        #[cfg(feature = "bench")]
        Cmd::Bench(c) => ptmp_bench::run(&c).map_err(Into::into),
        #[cfg(not(feature = "bench"))]
        Cmd::Bench(_) => no_bench::run("bench"),
        #[cfg(feature = "bench")]
        Cmd::BenchChild(c) => ptmp_bench::run_child(&c).map_err(Into::into),
        Cmd::Peers(a) => peers::run(&a),
        Cmd::Shm(c) => shm::run(&c),
        Cmd::Keys(c) => keys::run(&c),
        Cmd::Top(a) => top::run(&a),
        Cmd::Graph(c) => graph::run(&c),
        Cmd::Butterfly(a) => graph::butterfly(&a),
        Cmd::Completions { shell } => completions(shell),
        Cmd::Man => man(),
    };
    if let Err(CliError { code, msg }) = r {
        // Code 0: stdout was closed by its reader; end quietly.
        if code == 0 {
            return;
        }
        if log::json() {
            tracing::error!(exit = code, "ptmp: error: {msg}");
        } else {
            eprintln!("ptmp: error: {msg}");
        }
        std::process::exit(code);
    }
}

/// The completion script for `shell`, from the command's own definition.
fn completions(shell: clap_complete::Shell) -> common::CliResult {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "ptmp", &mut out);
    use std::io::Write as _;
    Ok(std::io::stdout().lock().write_all(&out)?)
}

/// The manual page, from the command's own definition: the whole command
/// and a section for each subcommand, nested ones (`ptmp graph run`)
/// included.
fn man() -> common::CliResult {
    fn pages(c: &clap::Command, name: &str, out: &mut Vec<u8>) -> common::CliResult {
        // clap names commands with 'static strings; this runs once.
        let name: &'static str = name.to_string().leak();
        clap_mangen::Man::new(c.clone().name(name))
            .render(out)
            .map_err(|e| CliError::fail(format!("man page: {e}")))?;
        for sub in c.get_subcommands().filter(|s| !s.is_hide_set()) {
            pages(sub, &format!("{name}-{}", sub.get_name()), out)?;
        }
        Ok(())
    }
    let mut cmd = Cli::command();
    cmd.build();
    let mut out = Vec::new();
    pages(&cmd, "ptmp", &mut out)?;
    use std::io::Write as _;
    Ok(std::io::stdout().lock().write_all(&out)?)
}
