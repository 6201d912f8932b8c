//! `ptmp-bench`: the suites of `ptmp bench` without the rest of the ptmp
//! command, with the same arguments (`ptmp-bench bench ring -n 1000`) and the
//! hidden child subcommands the two-process suites start.

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "ptmp-bench", version, about = "ptmp's benchmark suites")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Benchmarks: ptmp beside the alternatives, in one run.
    Bench(ptmp_bench::BenchArgs),
    #[command(flatten)]
    Child(ptmp_bench::ChildCmd),
}

fn main() {
    let r = match Cli::parse().cmd {
        Cmd::Bench(a) => ptmp_bench::run(&a),
        Cmd::Child(c) => ptmp_bench::run_child(&c),
    };
    if let Err(e) = r {
        eprintln!("ptmp-bench: error: {e}");
        std::process::exit(e.code);
    }
}
