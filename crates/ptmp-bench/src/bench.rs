//! `ptmp bench`: measurements that put ptmp beside the alternatives in one
//! run. The `tuning` suite reproduces PTMP's tuning table: sendrecv in one
//! process for each pattern and transport, ptmp and raw libzmq moving the
//! identical frames, alternating, repeated, medians reported.

use crate::error::{BenchError, BenchResult};
use crate::report::{median, progress};
use crate::report::{Cell, Row};
use crate::sendrecv::{run_ptmp, run_raw, Outcome, Pattern, TransportArg};
use crate::sys::stopping;
use clap::Subcommand;
use serde_json::json;

/// `ptmp bench [--out DIR] SUITE`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Also save each suite's results as DIR/SUITE.json (tables, command,
    /// machine) and DIR/SUITE.svg (a bar chart per numeric column).
    #[arg(long, global = true, value_name = "DIR")]
    out: Option<std::path::PathBuf>,
    #[command(subcommand)]
    cmd: BenchCmd,
}

#[derive(Debug, Subcommand)]
pub enum BenchCmd {
    /// Pattern x transport x TPSet size, ptmp and raw libzmq, sender and
    /// receiver in two processes (ipc, tcp, shm): rate, loss, CPU %, RSS.
    ///
    /// The -r -w -a -s -l options are those of smx_perf, Informatica's
    /// benchmark of Ultra Messaging's shared-memory transport
    /// (https://github.com/UltraMessaging/smx_perf).
    Throughput(crate::throughput::ThroughputArgs),
    /// PTMP's tuning table: ptmp vs raw libzmq, pattern x transport.
    Tuning(TuningArgs),
    /// One-way latency percentiles per transport (shm, inproc, ipc, tcp).
    ///
    /// Measured and optioned as smx_perf does, Informatica's benchmark of
    /// Ultra Messaging's shared-memory transport
    /// (https://github.com/UltraMessaging/smx_perf).
    Latency(crate::latency::LatencyArgs),
    /// The shared-memory ring's own throughput, writer and readers contending.
    Ring(crate::ring::RingArgs),
    /// ptmp's shared memory beside Aeron's IPC, with the machine's limits.
    ///
    /// Aeron (https://github.com/real-logic/aeron) runs its own sample
    /// programs from its aeron-all jar, when Java and the jar are here.
    Peers(crate::peers::PeersArgs),
    /// The Babus profile: imu, 6 MB images and medium messages to five consumers.
    ///
    /// Babus is a shared-memory message bus in C++ whose benchmark sends this
    /// mix and compares it with Redis streams
    /// (https://github.com/steplee/babus).
    Babus(crate::babus::BabusArgs),
    /// Writer/reader processes over POSIX MQ, sockets, zmq and ptmp.
    ///
    /// One writer process sends 2,000,000 messages of 1,032 bytes to one
    /// reader process over each transport in turn: a classic comparison of
    /// ZeroMQ with POSIX message queues and plain sockets.
    Baseline(crate::baseline::BaselineArgs),
    /// Two clock reads back to back, min and max gap: how long the machine
    /// takes the core away.
    ///
    /// smx_perf's jitter loop (-j); smx_perf is Informatica's benchmark of
    /// Ultra Messaging's shared-memory transport
    /// (https://github.com/UltraMessaging/smx_perf).
    Jitter(crate::latency::JitterArgs),
    /// One PUB to 1-3 SUBs and one PUSH to 1-3 PULLs: per-receiver rate and loss.
    Fanout(crate::fanout::FanoutArgs),
    /// Request and response round trips: ptmp's Client and Server beside
    /// raw libzmq REQ/REP and DEALER/ROUTER, per transport and requests in
    /// flight.
    Requests(crate::requests::RequestsArgs),
    /// The agents: zipper and window cores and running agents, zipper latency.
    Agents(crate::agents_bench::AgentsArgs),
    /// Every suite in turn, each under a Markdown heading.
    All(AllArgs),
}

#[derive(Debug, clap::Args)]
pub struct AllArgs {
    /// Smaller runs (about a minute and a half in all on two cores) instead
    /// of each suite's defaults.
    #[arg(long)]
    pub quick: bool,
}

/// Build a suite's arguments from command-line words, so `all` uses the
/// very defaults each suite documents.
fn args<T: clap::Args>(words: &[&str]) -> T {
    #[derive(clap::Parser)]
    struct Wrap<T: clap::Args> {
        #[command(flatten)]
        inner: T,
    }
    <Wrap<T> as clap::Parser>::parse_from(std::iter::once("ptmp").chain(words.iter().copied()))
        .inner
}

fn all(a: &AllArgs) -> BenchResult {
    let q = |quick: &'static [&'static str]| if a.quick { quick } else { &[][..] };
    println!("## tuning\n");
    suite("tuning", || {
        tuning(&args(q(&["-n", "200000", "--reps", "3"])))
    })?;
    println!("\n## throughput\n");
    suite("throughput", || {
        // Most of its time is starting a sender and a receiver per row,
        // so --quick also measures fewer TPSet sizes (rows).
        crate::throughput::run(&args(q(&["-n", "50000", "--ntps", "0", "100"])))
    })?;
    println!("\n## latency\n");
    suite("latency", || {
        crate::latency::run(&args(q(&["-n", "20000"])))
    })?;
    println!("\n## jitter\n");
    suite("jitter", || {
        crate::latency::jitter(&args(q(&["-j", "1000000"])))
    })?;
    println!("\n## ring\n");
    suite("ring", || crate::ring::run(&args(q(&["-n", "500000"]))))?;
    println!("\n## fanout\n");
    suite("fanout", || crate::fanout::run(&args(q(&["-n", "200000"]))))?;
    println!("\n## requests\n");
    suite("requests", || {
        crate::requests::run(&args(q(&["-n", "20000"])))
    })?;
    println!("\n## agents\n");
    suite("agents", || {
        crate::agents_bench::run(&args(q(&["-n", "50000", "-d", "1"])))
    })?;
    println!("\n## baseline\n");
    suite("baseline", || {
        crate::baseline::run(&args(q(&["-n", "200000"])))
    })?;
    println!("\n## babus\n");
    let babus: &[&str] = if a.quick {
        &["-d", "2", "--redis"]
    } else {
        &["--redis"]
    };
    suite("babus", || crate::babus::run(&args(babus)))
}

/// Run one suite, saving its tables when `--out` was given. The rows were
/// printed and recorded as they came; the front needs no more of them.
fn suite<T>(name: &str, f: impl FnOnce() -> BenchResult<T>) -> BenchResult {
    crate::report::begin(name);
    // tuning and throughput draw a bar of their own.
    if name != "tuning" && name != "throughput" {
        crate::report::spinner(name);
    }
    let r = f();
    match crate::report::end() {
        Ok(Some((j, s))) => eprintln!("ptmp bench: wrote {} and {}", j.display(), s.display()),
        Ok(None) => {}
        Err(e) => return Err(BenchError::fail(format!("--out: {e}"))),
    }
    r.map(drop)
}

#[derive(Debug, clap::Args)]
pub struct TuningArgs {
    /// TPSets per run.
    #[arg(short = 'n', long = "ntpsets", default_value_t = 1_000_000)]
    pub count: u64,
    /// Runs of each implementation per row (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Patterns to measure.
    #[arg(long, value_enum, num_args = 1.., default_values = ["pubsub", "pipe", "pushpull"])]
    pub patterns: Vec<Pattern>,
    /// Transports to measure.
    #[arg(long, value_enum, num_args = 1.., default_values = ["inproc", "ipc", "tcp"])]
    pub transports: Vec<TransportArg>,
    /// TrigPrims per TPSet (several values make several rows).
    #[arg(short = 'N', long = "ntps", num_args = 1.., default_values = ["0"])]
    pub ntps: Vec<u32>,
    /// Write every run as JSON to this file.
    #[arg(long)]
    pub json_out: Option<std::path::PathBuf>,
}

/// Run the suite (or every suite) `b` names, printing its tables on
/// stdout and, with `--out`, saving them.
pub fn run(b: &BenchArgs) -> BenchResult {
    if let Some(d) = &b.out {
        crate::report::set_dir(d)
            .map_err(|e| BenchError::usage(format!("--out {}: {e}", d.display())))?;
    }
    match &b.cmd {
        BenchCmd::Tuning(a) => suite("tuning", || tuning(a)),
        BenchCmd::Throughput(a) => suite("throughput", || crate::throughput::run(a)),
        BenchCmd::Latency(a) => suite("latency", || crate::latency::run(a)),
        BenchCmd::Ring(a) => suite("ring", || crate::ring::run(a)),
        BenchCmd::Peers(a) => suite("peers", || crate::peers::run(a)),
        BenchCmd::Babus(a) => suite("babus", || crate::babus::run(a)),
        BenchCmd::Baseline(a) => suite("baseline", || crate::baseline::run(a)),
        BenchCmd::Jitter(a) => suite("jitter", || crate::latency::jitter(a)),
        BenchCmd::Fanout(a) => suite("fanout", || crate::fanout::run(a)),
        BenchCmd::Agents(a) => suite("agents", || crate::agents_bench::run(a)),
        BenchCmd::Requests(a) => suite("requests", || crate::requests::run(a)),
        BenchCmd::All(a) => all(a),
    }
}

/// One row of the tuning table: medians over the runs of ptmp and of raw
/// libzmq for a pattern, transport and size.
#[derive(Debug, Clone)]
pub struct TuningRow {
    /// The socket types.
    pub pattern: Pattern,
    /// The transport.
    pub transport: TransportArg,
    /// TrigPrims per TPSet.
    pub ntps: u32,
    /// ptmp's median rate, TPSets per second.
    pub ptmp_hz: f64,
    /// Raw libzmq's, when it ran (not over shm).
    pub raw_hz: Option<f64>,
    /// ptmp's median count of TPSets not received.
    pub ptmp_lost: f64,
    /// Raw libzmq's, when it ran.
    pub raw_lost: Option<f64>,
}

impl Row for TuningRow {
    fn headers() -> &'static [&'static str] {
        &[
            "pattern",
            "transport",
            "ntps",
            "ptmp kHz",
            "raw libzmq kHz",
            "ptmp/raw",
            "ptmp lost",
            "raw lost",
        ]
    }
    fn cells(&self) -> Vec<Cell> {
        let f0 = |x: f64| Cell::measure(x, format!("{x:.0}"));
        let ratio = match self.raw_hz {
            Some(r) if r > 0.0 => {
                let q = self.ptmp_hz / r;
                Cell::measure(q, format!("{q:.2}"))
            }
            _ => Cell::none(),
        };
        vec![
            Cell::label(self.pattern.name()),
            Cell::label(self.transport.name()),
            Cell::param(f64::from(self.ntps)),
            f0(self.ptmp_hz / 1e3),
            self.raw_hz.map_or(Cell::none(), |r| f0(r / 1e3)),
            ratio,
            f0(self.ptmp_lost),
            self.raw_lost.map_or(Cell::none(), f0),
        ]
    }
}

fn tuning(a: &TuningArgs) -> BenchResult<Vec<TuningRow>> {
    if a.reps == 0 || a.count == 0 {
        return Err(BenchError::usage("--reps and -n must be at least 1"));
    }
    let rows: Vec<(Pattern, TransportArg, u32)> = a
        .patterns
        .iter()
        .flat_map(|&p| {
            a.transports
                .iter()
                .flat_map(move |&t| a.ntps.iter().map(move |&n| (p, t, n)))
        })
        .collect();
    let pb = progress((rows.len() * a.reps * 2) as u64 * 100_000, "bench");
    let mut all: Vec<Outcome> = Vec::new();
    crate::report::table::<TuningRow>();
    let mut out = Vec::new();
    for (p, t, ntps) in rows {
        let mut mine = Vec::new();
        let mut raw = Vec::new();
        for rep in 0..a.reps {
            if stopping() {
                return Err(BenchError::fail("interrupted"));
            }
            // Alternate which goes first so drift favours neither.
            let order = if rep % 2 == 0 {
                [false, true]
            } else {
                [true, false]
            };
            for is_raw in order {
                if t == TransportArg::Shm && (is_raw || p != Pattern::Pubsub) {
                    continue; // shm: ptmp only, pubsub only
                }
                let o = if is_raw {
                    run_raw(p, t, a.count, ntps, 1000)?
                } else {
                    run_ptmp(p, t, a.count, ntps, 1000)?
                };
                pb.inc(100_000);
                if is_raw { &mut raw } else { &mut mine }.push(o.clone());
                all.push(o);
            }
        }
        let rate = |v: &[Outcome]| median(v.iter().map(|o| o.rate_hz()).collect());
        let lost = |v: &[Outcome]| median(v.iter().map(|o| o.lost() as f64).collect());
        if mine.is_empty() && raw.is_empty() {
            continue;
        }
        let ran = |v: &[Outcome], x: f64| (!v.is_empty()).then_some(x);
        let row = TuningRow {
            pattern: p,
            transport: t,
            ntps,
            ptmp_hz: rate(&mine),
            raw_hz: ran(&raw, rate(&raw)),
            ptmp_lost: lost(&mine),
            raw_lost: ran(&raw, lost(&raw)),
        };
        pb.suspend(|| crate::report::row(&row));
        out.push(row);
    }
    pb.finish_and_clear();
    crate::report::note(format!(
        "\n{} TPSets per run, median of {} runs each; kHz = TPSets received per ms of the run; lost = median count not received (only PUB drops).",
        a.count, a.reps
    ));
    if let Some(path) = &a.json_out {
        let runs: Vec<_> = all.iter().map(|o| o.to_json()).collect();
        std::fs::write(path, json!({"suite": "tuning", "runs": runs}).to_string())
            .map_err(|e| BenchError::fail(format!("{}: {e}", path.display())))?;
    }
    Ok(out)
}
