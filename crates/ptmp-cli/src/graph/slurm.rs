//! `ptmp graph sbatch` and `ptmp graph run --slurm`: a graph under Slurm,
//! one job step per host on its own node (see `ptmp_graph::slurm`).

use super::{load_value, GraphSource, RunArgs};
use crate::common::{out, stopping, CliError, CliResult};
use crate::http::HttpArgs;
use clap::Args;
use ptmp_graph::plan::Plan;
use ptmp_graph::slurm::{self, Allocation};
use ptmp_graph::Graph;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args)]
pub struct SbatchArgs {
    #[command(flatten)]
    src: GraphSource,
    /// The ptmp program the script runs (default: this one).
    #[arg(long, value_name = "PATH")]
    ptmp: Option<PathBuf>,
    /// Stop the graph after this long (e.g. 8h; a bare number is seconds).
    #[arg(long, value_name = "DURATION", value_parser = ptmp::duration::secs_positive)]
    ttl: Option<Duration>,
    /// Ask for this many nodes more than hosts: a part whose node fails
    /// moves to one (when the graph's hosts have no addresses).
    #[arg(long, value_name = "N", default_value_t = 0)]
    spare_nodes: usize,
    /// The launcher's one view of all the hosts' parts (needs --run-dir on
    /// a file system every node shares).
    #[command(flatten)]
    http: HttpArgs,
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// `ptmp graph sbatch G`: the batch script, on standard output.
pub fn sbatch(a: &SbatchArgs) -> CliResult {
    let (g, _) = a.src.load()?;
    let ptmp = match &a.ptmp {
        Some(p) => absolute(p),
        None => std::env::current_exe()?,
    };
    let mut args = a.src.jsonnet_args();
    if let Some(d) = &a.src.run_dir {
        args.extend(["--run-dir".into(), absolute(d).display().to_string()]);
    }
    if let Some(t) = a.ttl {
        args.extend(["--ttl".into(), format!("{}ms", t.as_millis())]);
    }
    if let Some(h) = a.http.http {
        if a.src.run_dir.is_none() {
            return Err(no_shared_dir());
        }
        args.extend(["--http".into(), h.to_string()]);
        if a.http.http_allow_remote {
            args.push("--http-allow-remote".into());
        }
        for n in &a.http.http_host {
            args.extend(["--http-host".into(), n.clone()]);
        }
    }
    let script = slurm::sbatch_script(&g, a.spare_nodes, &ptmp, &absolute(&a.src.file), &args)
        .map_err(|e| CliError::usage(e.to_string()))?;
    out!("{script}")?;
    Ok(())
}

fn no_shared_dir() -> CliError {
    CliError::usage(
        "--http with Slurm needs --run-dir on a file system every node shares: the launcher reads each host's status there",
    )
}

/// The graph with `--host-address NAME=ADDRESS` applied.
pub fn load_addressed(src: &GraphSource, overrides: &[String]) -> CliResult<(Graph, Plan)> {
    if overrides.is_empty() {
        return src.load();
    }
    let mut pairs = Vec::new();
    for o in overrides {
        match o.split_once('=') {
            Some((n, a)) if !n.is_empty() && !a.is_empty() => pairs.push((n, a)),
            _ => {
                return Err(CliError::usage(format!(
                    "--host-address {o:?}: give NAME=ADDRESS, for example daq1=10.0.0.1"
                )))
            }
        }
    }
    src.load_edited(|v, _| {
        // A graph without hosts runs on one, "localhost".
        if v.get("hosts").is_none() {
            v["hosts"] = serde_json::json!([{"name": "localhost"}]);
        }
        let Some(hosts) = v.get_mut("hosts").and_then(|h| h.as_array_mut()) else {
            return Err(CliError::usage(
                "--host-address: the graph's \"hosts\" is not a list",
            ));
        };
        for (name, address) in &pairs {
            let Some(h) = hosts.iter_mut().find(|h| h["name"] == *name) else {
                return Err(CliError::usage(format!(
                    "--host-address {name}={address}: the graph has no host {name:?}"
                )));
            };
            h["address"] = (*address).into();
        }
        Ok(())
    })
}

/// `ptmp graph run G --slurm`: one step per host, supervised.
pub fn run(a: &RunArgs) -> CliResult {
    let alloc = Allocation::from_env().map_err(|e| CliError::usage(e.to_string()))?;
    let v = a.src.value()?;
    let (g, p) = load_value(&v, &a.src.stem(), a.src.run_dir.as_deref())?;
    let finite = slurm::finite_hosts(&g, &p);
    let (placed, spares) = slurm::place(&g, &alloc).map_err(|e| CliError::usage(e.to_string()))?;
    let ptmp = std::env::current_exe()?;
    let graph_file = absolute(&a.src.file);
    // A graph with no addresses is connected by name, and its parts can
    // move; the others get their nodes' addresses.
    let movable = g.hosts.iter().all(|h| h.address.is_empty());
    let mut args = a.src.jsonnet_args();
    if !movable {
        for p in &placed {
            args.extend([
                "--host-address".into(),
                format!("{}={}", p.host, p.node.address),
            ]);
        }
    }
    if let Some(t) = a.ttl {
        args.extend(["--ttl".into(), format!("{}ms", t.as_millis())]);
    }
    if let Some(t) = a.status {
        args.extend(["--status".into(), format!("{}ms", t.as_millis())]);
    }
    let run_base = match &a.src.run_dir {
        Some(d) => absolute(d),
        None => std::env::temp_dir().join(format!("ptmp-slurm-{}-{}", g.name, alloc.job)),
    };
    // One view of every host's part, read from their run directories,
    // with the node each runs on (kept as parts move).
    let placement = ptmp_monitor::state::Placement::default();
    let mut index = std::collections::BTreeMap::new();
    for p in &placed {
        let h = g
            .host_index(&p.host)
            .map_err(|e| CliError::usage(e.to_string()))?;
        index.insert(p.host.clone(), h);
    }
    let _monitor = match (&a.http.http, &a.src.run_dir) {
        (None, _) => None,
        (Some(_), None) => return Err(no_shared_dir()),
        (Some(_), Some(_)) => {
            let parts = placed
                .iter()
                .map(|p| (index[&p.host], run_base.join(&p.host)))
                .collect();
            a.http
                .start_across(&g, &p, &run_base, parts, placement.clone())?
        }
    };
    let mut placed_at = |host: &str, node: &slurm::Node| {
        if let Some(h) = index.get(host) {
            placement
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(*h, node.name.clone());
        }
    };
    let launch = slurm::Launch {
        job: &alloc.job,
        ptmp: &ptmp,
        graph_file: &graph_file,
        run_base: &run_base,
        args: &args,
        movable,
    };
    tracing::info!(
        "graph {}: {} host(s) on job {}'s nodes",
        g.name,
        placed.len(),
        alloc.job
    );
    let mut log = crate::log::Lines::default();
    launch
        .run(
            &placed,
            &spares,
            &finite,
            &stopping,
            &mut placed_at,
            &mut log,
        )
        .map_err(|e| CliError::fail(format!("graph {}: {e}", g.name)))
}
