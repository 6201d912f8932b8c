//! `--http`: the live page, JSON state and Prometheus metrics that `ptmp
//! run` and `ptmp graph` serve, and the monitor started for them.

use crate::common::{CliError, CliResult};
use clap::Args;
use ptmp_graph::plan::Plan;
use ptmp_graph::Graph;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Where to serve the live page, JSON state and Prometheus metrics.
#[derive(Args, Clone, Default)]
pub struct HttpArgs {
    /// Serve a live page of the graph, its state as JSON (/api/state) and
    /// Prometheus metrics (/metrics) at ADDRESS:PORT (or a bare port on
    /// 127.0.0.1; port 0 picks a free one). Loopback only unless
    /// --http-allow-remote.
    #[arg(long, value_name = "ADDR", value_parser = ptmp_monitor::parse_addr)]
    pub http: Option<std::net::SocketAddr>,
    /// Allow --http on an address other than loopback. Clients on other
    /// hosts must then give the monitor's token for the state and metrics
    /// (Authorization: Bearer TOKEN, or ?token=TOKEN); it is printed once
    /// at the start and, for a graph, kept in its run directory
    /// (monitor-token, mode 0600). The page asks for it.
    #[arg(long, requires = "http")]
    pub http_allow_remote: bool,
}

impl HttpArgs {
    /// Start the monitor when asked; it serves until dropped.
    pub fn start(
        &self,
        g: &Graph,
        p: &Plan,
        host: Option<&str>,
    ) -> CliResult<Option<ptmp_monitor::Monitor>> {
        let Some(addr) = self.http else {
            return Ok(None);
        };
        let h = match host {
            Some(h) => g
                .host_index(h)
                .map_err(|e| CliError::usage(e.to_string()))?,
            None => 0,
        };
        let o = self.graph_options(addr, g, &p.run_dir)?;
        let m = self.serve(ptmp_monitor::start(g, p, h, &o))?;
        tracing::info!("graph {}: monitor at http://{}/", g.name, m.local_addr());
        Ok(Some(m))
    }

    /// Start the monitor of several hosts' parts, each `(host, run
    /// directory)`, placed on nodes as `placement` says; the token (for
    /// remote clients) is kept in `dir`.
    pub fn start_across(
        &self,
        g: &Graph,
        p: &Plan,
        dir: &Path,
        parts: Vec<(usize, PathBuf)>,
        placement: ptmp_monitor::state::Placement,
    ) -> CliResult<Option<ptmp_monitor::Monitor>> {
        let Some(addr) = self.http else {
            return Ok(None);
        };
        let o = self.graph_options(addr, g, dir)?;
        let c = ptmp_monitor::state::Collector::across(g, p, parts, placement);
        let m = self.serve(ptmp_monitor::start_with(Box::new(c), &o))?;
        tracing::info!("graph {}: monitor at http://{}/", g.name, m.local_addr());
        Ok(Some(m))
    }

    /// The monitor's options for a graph whose run directory is `dir`:
    /// with --http-allow-remote, the token kept there (and said once).
    fn graph_options(
        &self,
        addr: std::net::SocketAddr,
        g: &Graph,
        dir: &Path,
    ) -> CliResult<ptmp_monitor::Options> {
        let mut o = self.options(addr);
        if o.allow_remote {
            ptmp_graph::rundir::prepare(dir, &g.name).map_err(|e| CliError::fail(e.to_string()))?;
            let t = ptmp_graph::rundir::monitor_token(dir)
                .map_err(|e| CliError::fail(format!("graph {}: {e}", g.name)))?;
            tracing::info!(
                "graph {}: clients on other hosts give the monitor's token {t} (kept in {})",
                g.name,
                ptmp_graph::rundir::monitor_token_path(dir).display()
            );
            o.token = Some(t);
        }
        Ok(o)
    }

    /// Start the monitor of the agents of this process (`ptmp run`), whose
    /// evaluated configuration is `config`, when asked.
    pub fn start_local(&self, config: &Value) -> CliResult<Option<ptmp_monitor::Monitor>> {
        let Some(addr) = self.http else {
            return Ok(None);
        };
        let local = ptmp_monitor::local::Local::new(config);
        let mut o = self.options(addr);
        if o.allow_remote {
            let t = ptmp_monitor::new_token().map_err(|e| CliError::fail(e.to_string()))?;
            tracing::info!("ptmp run: clients on other hosts give the monitor's token {t}");
            o.token = Some(t);
        }
        let m = self.serve(ptmp_monitor::start_with(Box::new(local), &o))?;
        tracing::info!("ptmp run: monitor at http://{}/", m.local_addr());
        Ok(Some(m))
    }

    fn options(&self, addr: std::net::SocketAddr) -> ptmp_monitor::Options {
        let mut o = ptmp_monitor::Options::new(addr);
        o.allow_remote = self.http_allow_remote;
        o
    }

    fn serve(
        &self,
        r: Result<ptmp_monitor::Monitor, ptmp_monitor::Error>,
    ) -> CliResult<ptmp_monitor::Monitor> {
        r.map_err(|e| match e {
            ptmp_monitor::Error::Remote(_) => CliError::usage(e.to_string()),
            _ => CliError::fail(e.to_string()),
        })
    }
}
