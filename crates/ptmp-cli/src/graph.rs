//! `ptmp graph check|dot|run|status|soak|diff|apply` and the hidden
//! `graph part`, and
//! `ptmp butterfly`, the butterfly experiment of early
//! ZeroMQ's tutorial (two stages of parallel workers) as one command.

mod slurm;
mod soak;

use crate::common::{out, outln, stopping, CliError, CliResult};
use clap::{Args, Subcommand};
use ptmp_agents::jsonnet::{self, Options};
use ptmp_graph::plan::{self, Plan};
use ptmp_graph::{part, status, supervise, Graph};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Where and how to read a graph.
#[derive(Args, Clone)]
pub struct GraphSource {
    /// The graph: JSON, or Jsonnet (a function's parameters are top-level
    /// arguments).
    file: PathBuf,
    /// Jsonnet external string variable, KEY=VALUE (repeatable).
    #[arg(short = 'V', long = "ext-str", value_name = "KEY=VALUE")]
    ext_str: Vec<String>,
    /// Jsonnet top-level argument as a string, KEY=VALUE (repeatable).
    #[arg(short = 'A', long = "tla-str", value_name = "KEY=VALUE")]
    tla_str: Vec<String>,
    /// Jsonnet top-level argument as code, e.g. c1=2 (repeatable).
    #[arg(long = "tla-code", value_name = "KEY=VALUE")]
    tla_code: Vec<String>,
    /// Jsonnet library search path (repeatable).
    #[arg(short = 'J', long = "jpath", value_name = "DIR")]
    jpath: Vec<PathBuf>,
    /// Give up evaluating the Jsonnet after this many seconds (exit 2).
    #[arg(long, value_name = "SECS", value_parser = crate::run::parse_timeout)]
    config_timeout: Option<Duration>,
    /// Run directory (ipc sockets, plans, status files), made private
    /// (0700) and refused when another user owns it or may write in it;
    /// default ptmp-graph-NAME in $XDG_RUNTIME_DIR/ptmp, /run/ptmp (root)
    /// or $TMPDIR/ptmp-UID.
    #[arg(long)]
    run_dir: Option<PathBuf>,
}

use crate::http::HttpArgs;
use crate::run::kv;

impl GraphSource {
    /// Load, validate and wire the graph.
    pub fn load(&self) -> CliResult<(Graph, Plan)> {
        let v = self.value()?;
        load_value(&v, &self.stem(), self.run_dir.as_deref())
    }

    /// Load, let `edit` change the configuration (given the run
    /// directory), then validate and wire it.
    pub fn load_edited(
        &self,
        edit: impl FnOnce(&mut Value, &Path) -> CliResult<()>,
    ) -> CliResult<(Graph, Plan)> {
        let mut v = self.value()?;
        let (_, p) = load_value(&v, &self.stem(), self.run_dir.as_deref())?;
        edit(&mut v, &p.run_dir)?;
        load_value(&v, &self.stem(), Some(&p.run_dir))
    }

    /// The Jsonnet options as arguments for another `ptmp` (paths made
    /// absolute), as a systemd unit or a batch script runs it.
    fn jsonnet_args(&self) -> Vec<String> {
        let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        let mut args = Vec::new();
        for (flag, list) in [
            ("-V", &self.ext_str),
            ("-A", &self.tla_str),
            ("--tla-code", &self.tla_code),
        ] {
            for kv in list {
                args.extend([flag.to_string(), kv.clone()]);
            }
        }
        for j in &self.jpath {
            args.extend(["-J".to_string(), abs(j).to_string_lossy().into_owned()]);
        }
        if let Some(t) = self.config_timeout {
            args.extend([
                "--config-timeout".to_string(),
                format!("{}ms", t.as_millis()),
            ]);
        }
        args
    }

    /// The same options with another graph file.
    fn with_file(&self, file: &Path) -> GraphSource {
        GraphSource {
            file: file.to_path_buf(),
            ..self.clone()
        }
    }

    fn stem(&self) -> String {
        ptmp_graph::name_from_path(&self.file)
    }

    /// The configuration, evaluated.
    fn value(&self) -> CliResult<Value> {
        let opts = Options {
            ext_str: kv(&self.ext_str, "-V")?,
            tla_str: kv(&self.tla_str, "-A")?,
            tla_code: kv(&self.tla_code, "--tla-code")?,
            jpath: self.jpath.clone(),
            timeout: self.config_timeout,
            ..Default::default()
        };
        crate::run::load_config(&self.file, &opts)
    }
}

fn load_value(v: &Value, stem: &str, run_dir: Option<&Path>) -> CliResult<(Graph, Plan)> {
    ptmp_graph::load(v, stem, run_dir).map_err(|e| CliError::usage(e.to_string()))
}

#[derive(Subcommand)]
pub enum GraphCmd {
    /// Validate a graph and show its processes, transports and addresses.
    Check(JsonSource),
    /// Write the graph in Graphviz dot.
    Dot {
        #[command(flatten)]
        src: GraphSource,
        /// Write to FILE instead of standard output.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Run this host's processes of a graph and supervise them.
    Run(RunArgs),
    /// Show every node's counts and rates of a running graph.
    Status(JsonSource),
    /// Run a graph while its processes are killed and stopped at random;
    /// report messages sent, received, lost and duplicated.
    Soak(soak::SoakArgs),
    /// Show what `graph apply` would change going from graph OLD to NEW:
    /// nodes and edges added, removed, replaced and kept; processes
    /// started, stopped, restarted and kept.
    Diff(DiffArgs),
    /// Change a running graph into this one: unchanged processes keep
    /// running, changed ones are replaced (their input held meanwhile),
    /// new ones started, removed ones stopped.
    Apply(ApplyArgs),
    /// Write a systemd template unit that runs one host's part of the
    /// graph (the instance is the host: `systemctl start
    /// ptmp-graph-NAME@HOST`).
    Systemd(SystemdArgs),
    /// Write a batch script that runs the graph under Slurm, one node per
    /// host (`sbatch` it; it runs `ptmp graph run G --slurm`).
    Sbatch(slurm::SbatchArgs),
    /// One process of a graph (internal; started by `graph run`).
    #[command(hide = true)]
    Part { plan: PathBuf },
}

/// A graph, and whether to answer in JSON.
#[derive(Args)]
pub struct JsonSource {
    #[command(flatten)]
    src: GraphSource,
    /// Print one JSON document instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct DiffArgs {
    /// The graph as it runs (the Jsonnet options apply to both files).
    #[command(flatten)]
    src: GraphSource,
    /// The new version of the graph.
    new: PathBuf,
    /// Print one JSON document instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct SystemdArgs {
    #[command(flatten)]
    src: GraphSource,
    /// Write the unit into this directory (e.g. /etc/systemd/system, or
    /// ~/.config/systemd/user with --user) instead of standard output.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// A user unit (`systemctl --user`): wanted by default.target.
    #[arg(long)]
    user: bool,
    /// The ptmp program the unit runs (default: this one).
    #[arg(long, value_name = "PATH")]
    ptmp: Option<PathBuf>,
}

#[derive(Args)]
pub struct ApplyArgs {
    /// The new version of the graph; the running one is found by its name
    /// (or --run-dir), as `graph status` finds it.
    #[command(flatten)]
    src: GraphSource,
    /// Only print what would change (checked by the running supervisor).
    #[arg(long)]
    dry_run: bool,
    /// Give up waiting for the supervisor's answer after this long (e.g.
    /// 90s; a bare number is seconds).
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = ptmp::duration::secs_positive)]
    timeout: Duration,
}

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    src: GraphSource,
    /// The host this is (a graph with several hosts runs one part per host).
    #[arg(long, conflicts_with = "slurm")]
    host: Option<String>,
    /// Set a host's address, overriding the graph's, NAME=ADDRESS
    /// (repeatable; what --slurm gives each host's part).
    #[arg(long, value_name = "NAME=ADDRESS")]
    host_address: Vec<String>,
    /// Inside a Slurm allocation (salloc, sbatch): run each host's part as
    /// a job step on its own node, the hosts placed on the allocated nodes
    /// in order and given their addresses; restart a failed step on its
    /// node; stop every step with SIGINT when stopped. With --http (and a
    /// --run-dir every node shares) the launcher serves one view of all
    /// the hosts' parts.
    #[arg(long)]
    slurm: bool,
    /// Print per-node counts and rates this often (e.g. 10s; a bare number
    /// is seconds; also on SIGUSR1).
    #[arg(long, value_name = "DURATION", value_parser = ptmp::duration::secs_positive)]
    status: Option<Duration>,
    /// Stop after this long (e.g. 5m; a bare number is seconds).
    #[arg(long, value_name = "DURATION", value_parser = ptmp::duration::secs_positive)]
    ttl: Option<Duration>,
    #[command(flatten)]
    http: HttpArgs,
}

pub(crate) fn supervise_options(
    host: Option<String>,
    status_every: Option<Duration>,
    ttl: Option<Duration>,
) -> CliResult<supervise::Options> {
    Ok(supervise::Options {
        part_command: vec![
            std::env::current_exe()?.into(),
            "graph".into(),
            "part".into(),
        ],
        host,
        status_every,
        ttl,
        ..Default::default()
    })
}

fn supervise_graph(
    g: &Graph,
    p: &Plan,
    host: Option<String>,
    status_every: Option<Duration>,
    ttl: Option<Duration>,
    monitor: Option<&ptmp_monitor::Monitor>,
) -> CliResult<supervise::Outcome> {
    // SIGUSR1 asks for the status table now. Without the handler the
    // signal would end the process, so failing to install it is an error.
    let status_now = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGUSR1, status_now.clone())
        .map_err(|e| CliError::fail(format!("cannot handle SIGUSR1: {e}")))?;
    // Stray signals that would end the supervisor without stopping its
    // parts (leaving their rings behind) are ignored, with a log line.
    let stray = [
        (signal_hook::consts::SIGUSR2, "SIGUSR2"),
        (signal_hook::consts::SIGALRM, "SIGALRM"),
    ]
    .map(|(sig, name)| (sig, name, Arc::new(AtomicBool::new(false))));
    for (sig, name, flag) in &stray {
        signal_hook::flag::register(*sig, flag.clone())
            .map_err(|e| CliError::fail(format!("cannot handle {name}: {e}")))?;
    }
    let status_now = || {
        for (_, name, flag) in &stray {
            if flag.swap(false, Ordering::Relaxed) {
                tracing::warn!(
                    "graph {}: ignored {name} (SIGINT, SIGTERM or SIGHUP stops the graph; SIGUSR1 prints its status)",
                    g.name
                );
            }
        }
        status_now.swap(false, Ordering::Relaxed)
    };
    let opts = supervise_options(host, status_every, ttl)?;
    let mut log = crate::log::Lines::default();
    let out = supervise::run_telling(
        g,
        p,
        &opts,
        &stopping,
        &status_now,
        &mut log,
        // The live page follows what `ptmp graph apply` makes of the graph.
        &mut |g, p, host| {
            if let Some(m) = monitor {
                m.follow(g, p, host);
            }
        },
    )
    .map_err(|e| match e {
        // A graph that cannot run here (no such host, nothing placed on
        // it) is a usage error, like any other bad graph.
        ptmp_graph::Error::Invalid { .. } => CliError::usage(e.to_string()),
        _ => CliError::fail(e.to_string()),
    })?;
    Ok(out)
}

pub fn run(c: &GraphCmd) -> CliResult {
    match c {
        GraphCmd::Check(a) => {
            let (g, p) = a.src.load()?;
            if a.json {
                outln!("{}", plan::describe_json(&g, &p))?;
            } else {
                out!("{}", plan::describe(&g, &p))?;
                outln!("valid")?;
            }
            Ok(())
        }
        GraphCmd::Dot { src, output } => {
            let (g, p) = src.load()?;
            let d = ptmp_graph::dot::dot(&g, &p);
            match output {
                Some(f) => std::fs::write(f, d)
                    .map_err(|e| CliError::fail(format!("{}: {e}", f.display()))),
                None => {
                    out!("{d}")?;
                    Ok(())
                }
            }
        }
        GraphCmd::Status(a) => {
            let (g, p) = a.src.load()?;
            if p.run_dir.exists() {
                ptmp_graph::rundir::check_private(&p.run_dir)
                    .map_err(|e| CliError::fail(e.to_string()))?;
            }
            let report = status::Report::read(&g, &p);
            for b in &report.unreadable {
                tracing::warn!("ptmp graph status: skipped {b}");
            }
            if report.parts.is_empty() {
                return Err(CliError::fail(format!(
                    "no status files in {}: is the graph running (with this --run-dir)?",
                    p.run_dir.display()
                )));
            }
            if a.json {
                let v = serde_json::to_value(&report).map_err(|e| CliError::fail(e.to_string()))?;
                outln!("{v}")?;
            } else {
                out!(
                    "{}",
                    status::table(&report.parts, report.supervised.as_ref())
                )?;
            }
            Ok(())
        }
        GraphCmd::Soak(a) => soak::run(a),
        GraphCmd::Diff(a) => {
            let (g, p) = a.src.load()?;
            let src2 = a.src.with_file(&a.new);
            let v = src2.value()?;
            let (_, _, d) = ptmp_graph::reconfig::prepare(&g, &p, &v, &src2.stem())
                .map_err(|e| CliError::usage(e.to_string()))?;
            if a.json {
                outln!("{}", d.to_json())?;
            } else {
                out!("{}", d.render())?;
            }
            Ok(())
        }
        GraphCmd::Apply(a) => apply(a),
        GraphCmd::Systemd(a) => systemd(a),
        GraphCmd::Sbatch(a) => slurm::sbatch(a),
        GraphCmd::Run(a) if a.slurm => slurm::run(a),
        GraphCmd::Run(a) => {
            let (g, p) = slurm::load_addressed(&a.src, &a.host_address)?;
            let monitor = a.http.start(&g, &p, a.host.as_deref())?;
            let out = supervise_graph(&g, &p, a.host.clone(), a.status, a.ttl, monitor.as_ref())?;
            let sup = status::read_processes(&p.run_dir);
            eprint!(
                "{}",
                status::table(&status::read_all(&p.run_dir), sup.as_ref())
            );
            for f in plan::output_files(&p).iter().filter(|f| f.exists()) {
                tracing::info!("graph {}: wrote {}", g.name, f.display());
            }
            let restarted: Vec<String> = out
                .restarts
                .iter()
                .filter(|(_, n)| *n > 0)
                .map(|(p, n)| format!("{p} x{n}"))
                .collect();
            if !restarted.is_empty() {
                tracing::info!("graph {}: restarts: {}", g.name, restarted.join(", "));
            }
            if out.ok {
                Ok(())
            } else if out.config_error {
                // Exit 2: systemd (RestartPreventExitStatus) and the Slurm
                // launcher do not start again what cannot pass.
                Err(CliError::usage(format!("graph {}: {}", g.name, out.reason)))
            } else {
                Err(CliError::fail(format!("graph {}: {}", g.name, out.reason)))
            }
        }
        GraphCmd::Part { plan } => {
            // End with the parent: the supervisor also asks this of its
            // children, this covers a part started by hand.
            let _ = rustix::process::set_parent_process_death_signal(Some(
                rustix::process::Signal::TERM,
            ));
            crate::common::ignore_stray_signals()?;
            let pp = part::PartPlan::read(plan).map_err(|e| CliError::usage(e.to_string()))?;
            // A graph placed without addresses finds its parts by name.
            let origin = format!("graph {} process {}", pp.graph, pp.process);
            let presence = crate::peers::presence_for(&pp.config.to_value(), &origin)?;
            let mut log = crate::log::Lines::default();
            // Stopped by a signal, the part exits 128 + its number (said in
            // its log already), so the supervisor can tell it from a part
            // that finished: it restarts one stopped by a signal it did
            // not send.
            let code = part::run_until(&pp, &crate::common::stop_signal, &mut log);
            drop(log);
            if let Some(p) = &presence {
                p.withdraw_all();
            }
            match code {
                0 => Ok(()),
                code if part::stopped_by(code).is_some() => std::process::exit(code),
                code => Err(CliError {
                    code,
                    msg: format!("graph {}: process {} failed", pp.graph, pp.process),
                }),
            }
        }
    }
}

fn apply(a: &ApplyArgs) -> CliResult {
    use ptmp_graph::reconfig::{self, Refusal, Request};
    let limit = a.timeout;
    let v = a.src.value()?;
    let stem = a.src.stem();
    // Find the run directory as `graph status` does; a graph that does not
    // even parse is refused here, the running one untouched.
    let g = Graph::parse(&v, &stem).map_err(|e| CliError::usage(e.to_string()))?;
    let dir = a
        .src
        .run_dir
        .clone()
        .unwrap_or_else(|| plan::default_run_dir(&g.name));
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    let req = Request {
        id: reconfig::new_id(),
        graph: v,
        default_name: stem,
        dry_run: a.dry_run,
    };
    let r = reconfig::send(&dir, &req, limit).map_err(|e| CliError::fail(e.to_string()))?;
    match r.refused {
        None => {
            out!("{}", r.message)?;
            if !a.dry_run {
                outln!("graph {}: applied", g.name)?;
            }
            Ok(())
        }
        Some(Refusal::Invalid) => Err(CliError::usage(format!("refused: {}", r.message))),
        Some(_) => Err(CliError::fail(format!("refused: {}", r.message))),
    }
}

fn systemd(a: &SystemdArgs) -> CliResult {
    if a.src.run_dir.is_some() {
        return Err(CliError::usage(
            "--run-dir: the unit's run directory is its StateDirectory (under /var/lib, or $XDG_STATE_HOME for --user); leave it out",
        ));
    }
    let (g, _) = a.src.load()?;
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let ptmp = match &a.ptmp {
        Some(p) => abs(p),
        None => std::env::current_exe()?,
    };
    let graph_file = abs(&a.src.file);
    let args = a.src.jsonnet_args();
    let o = ptmp_graph::systemd::UnitOptions {
        ptmp: &ptmp,
        graph_file: &graph_file,
        args: &args,
        user: a.user,
        stop_timeout: supervise::Options::default().stop_timeout,
    };
    let unit = ptmp_graph::systemd::template(&g, &o);
    match &a.out {
        None => {
            out!("{unit}")?;
        }
        Some(dir) => {
            let f = dir.join(ptmp_graph::systemd::template_name(&g.name));
            write_unit(&f, &unit)?;
            tracing::info!(
                "wrote {}; then: systemctl{} daemon-reload && systemctl{} enable --now ptmp-graph-{}@HOST",
                f.display(),
                if a.user { " --user" } else { "" },
                if a.user { " --user" } else { "" },
                g.name
            );
        }
    }
    Ok(())
}

/// Write the unit file `f` without following a link: a link there (put in
/// a directory others may write in, to make root overwrite the file it
/// points to) is refused, naming it; the unit is written to a new file
/// next to it, created exclusively and never through a link, then renamed
/// into place.
fn write_unit(f: &Path, unit: &str) -> CliResult {
    if std::fs::symlink_metadata(f).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(CliError::fail(format!(
            "{}: is a symbolic link; a unit is never written through one (it may lead to a file another user chose): remove it and run again",
            f.display()
        )));
    }
    ptmp::files::write_replace(f, unit.as_bytes())
        .map_err(|e| CliError::fail(format!("{}: {e}", f.display())))
}

/// The butterfly graph, evaluated from the example shipped with ptmp.
pub const BUTTERFLY: &str = include_str!("../../../examples/butterfly.jsonnet");

#[derive(Args)]
pub struct ButterflyArgs {
    /// Instances of component 1.
    #[arg(long, default_value_t = 1)]
    c1: u32,
    /// Instances of component 2.
    #[arg(long, default_value_t = 1)]
    c2: u32,
    /// Work per transaction in component 1, milliseconds.
    #[arg(long, default_value_t = 50.0)]
    t1: f64,
    /// Work per transaction in component 2, milliseconds.
    #[arg(long, default_value_t = 50.0)]
    t2: f64,
    /// Transactions.
    #[arg(short = 'n', long, default_value_t = 100)]
    count: u64,
    /// auto, inproc, ipc, shm or tcp.
    #[arg(long, default_value = "auto")]
    transport: String,
    /// process (every node its own process) or thread (all in one).
    #[arg(long, default_value = "process")]
    placement: String,
    /// How components wait: sleep, or spin (precise for tiny work).
    #[arg(long, default_value = "sleep")]
    wait: String,
    /// First tcp port (with --transport tcp).
    #[arg(long, default_value_t = 17100)]
    port_base: u16,
    /// Run directory; default ptmp-graph-butterfly-PID in the user's
    /// directory (as `graph run`'s).
    #[arg(long)]
    run_dir: Option<PathBuf>,
    /// Print the result as one JSON line too.
    #[arg(long)]
    json: bool,
}

pub fn butterfly(a: &ButterflyArgs) -> CliResult {
    if a.c1 == 0 || a.c2 == 0 || a.c1 > 64 || a.c2 > 64 {
        return Err(CliError::usage("--c1 and --c2 must be from 1 to 64"));
    }
    if !(a.t1 >= 0.0 && a.t2 >= 0.0 && a.t1.is_finite() && a.t2.is_finite()) {
        return Err(CliError::usage(
            "--t1 and --t2 must be 0 or more milliseconds",
        ));
    }
    if a.count == 0 {
        return Err(CliError::usage("-n must be at least 1"));
    }
    for (flag, v, ok) in [
        (
            "--transport",
            &a.transport,
            &["auto", "inproc", "ipc", "shm", "tcp"][..],
        ),
        ("--placement", &a.placement, &["process", "thread"][..]),
        ("--wait", &a.wait, &["sleep", "spin"][..]),
    ] {
        if !ok.contains(&v.as_str()) {
            return Err(CliError::usage(format!(
                "{flag} {v:?}: use one of {}",
                ok.join(", ")
            )));
        }
    }
    let name = format!("butterfly-{}", std::process::id());
    let dir = a
        .run_dir
        .clone()
        .unwrap_or_else(|| plan::default_run_dir(&name));
    ptmp_graph::rundir::prepare(&dir, &name).map_err(|e| CliError::fail(e.to_string()))?;
    let file = dir.join("butterfly.jsonnet");
    std::fs::write(&file, BUTTERFLY)?;
    let q = |s: &str| format!("{s:?}");
    let opts = Options {
        tla_code: vec![
            ("c1".into(), a.c1.to_string()),
            ("c2".into(), a.c2.to_string()),
            ("t1".into(), a.t1.to_string()),
            ("t2".into(), a.t2.to_string()),
            ("n".into(), a.count.to_string()),
            ("transport".into(), q(&a.transport)),
            ("placement".into(), q(&a.placement)),
            ("wait".into(), q(&a.wait)),
            ("name".into(), q(&name)),
            ("port_base".into(), a.port_base.to_string()),
        ],
        ..Default::default()
    };
    let v = jsonnet::load(&file, &opts).map_err(|e| CliError::usage(e.to_string()))?;
    let (g, p) = load_value(&v, "butterfly", Some(&dir))?;
    let out = supervise_graph(&g, &p, None, None, None, None)?;
    if !out.ok || out.reason != "finished" {
        return Err(CliError::fail(format!(
            "butterfly did not finish: {}",
            out.reason
        )));
    }
    let elapsed_us = status::read_all(&p.run_dir)
        .iter()
        .flat_map(|s| s.reports.clone().unwrap_or_default())
        .find(|r| r.name == "send_requests")
        .and_then(|r| r.counter("elapsed_us"))
        .ok_or_else(|| CliError::fail("send_requests reported no elapsed time"))?;
    let measured = a.count as f64 / (elapsed_us as f64 / 1e6);
    let rate = |c: u32, t: f64| {
        if t > 0.0 {
            c as f64 * 1000.0 / t
        } else {
            f64::INFINITY
        }
    };
    let theory = rate(a.c1, a.t1).min(rate(a.c2, a.t2));
    let ratio = measured / theory;
    outln!(
        "butterfly c1={} c2={} t1={} ms t2={} ms n={} transport={} placement={}: {} transactions in {:.3} s = {:.3} tx/s; theory {} tx/s; measured/theory {}",
        a.c1,
        a.c2,
        a.t1,
        a.t2,
        a.count,
        a.transport,
        a.placement,
        a.count,
        elapsed_us as f64 / 1e6,
        measured,
        if theory.is_finite() { format!("{theory:.3}") } else { "unbounded".into() },
        if theory.is_finite() { format!("{ratio:.3}") } else { "-".into() },
    )?;
    if a.json {
        outln!(
            "{}",
            serde_json::json!({"c1": a.c1, "c2": a.c2, "t1_ms": a.t1, "t2_ms": a.t2,
                "n": a.count, "transport": a.transport, "placement": a.placement,
                "elapsed_us": elapsed_us, "tx_per_s": measured,
                "theory_tx_per_s": theory.is_finite().then_some(theory),
                "ratio": theory.is_finite().then_some(ratio)})
        )?;
    }
    if a.run_dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}
