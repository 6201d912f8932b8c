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
    /// (Authorization: Bearer TOKEN, or ?token=TOKEN); it is kept in a
    /// file of mode 0600 whose path the log gives (for a graph, its run
    /// directory's monitor-token), and shown only on a terminal. The page
    /// asks for it.
    #[arg(long, requires = "http")]
    pub http_allow_remote: bool,
    /// Also answer requests that name this server NAME in their Host
    /// header (a DNS alias, a name behind a proxy); may be repeated.
    /// Loopback names and addresses, the address reached and, with
    /// --http-allow-remote, this host's own name are always answered;
    /// any other host gets 421 (a page of another site that points its
    /// name at this address, DNS rebinding).
    #[arg(long, value_name = "NAME", requires = "http")]
    pub http_host: Vec<String>,
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
            let path = ptmp_graph::rundir::monitor_token_path(dir);
            say_token(&format!("graph {}", g.name), &t, &path);
            o.token = Some(t);
        }
        Ok(o)
    }

    /// Start the monitor of the agents of this process (`ptmp run`), whose
    /// evaluated configuration is `config`, when asked. With
    /// --http-allow-remote, its token is kept while it runs in a file of
    /// this user's directory (removed when the monitor is dropped).
    pub fn start_local(&self, config: &Value) -> CliResult<Option<LocalMonitor>> {
        let Some(addr) = self.http else {
            return Ok(None);
        };
        let local = ptmp_monitor::local::Local::new(config);
        let mut o = self.options(addr);
        let mut file = None;
        if o.allow_remote {
            let t = ptmp_monitor::new_token().map_err(|e| CliError::fail(e.to_string()))?;
            let path = ptmp_graph::rundir::run_monitor_token_path(std::process::id());
            ptmp_graph::rundir::write_secret(&path, &t)
                .map_err(|e| CliError::fail(format!("ptmp run: {e}")))?;
            say_token("ptmp run", &t, &path);
            file = Some(path);
            o.token = Some(t);
        }
        let m = LocalMonitor {
            monitor: self.serve(ptmp_monitor::start_with(Box::new(local), &o))?,
            file,
        };
        tracing::info!("ptmp run: monitor at http://{}/", m.monitor.local_addr());
        Ok(Some(m))
    }

    fn options(&self, addr: std::net::SocketAddr) -> ptmp_monitor::Options {
        let mut o = ptmp_monitor::Options::new(addr);
        o.allow_remote = self.http_allow_remote;
        o.host_names = self.http_host.clone();
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

/// `ptmp run`'s monitor, and the file its token is kept in while it runs.
pub struct LocalMonitor {
    monitor: ptmp_monitor::Monitor,
    file: Option<PathBuf>,
}

impl Drop for LocalMonitor {
    fn drop(&mut self) {
        if let Some(f) = &self.file {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// Say where the monitor's token `t` is kept (`path`), never the token
/// itself in the log (under systemd the log is the journal, which others
/// may read); on a terminal, the token too.
fn say_token(who: &str, t: &str, path: &Path) {
    use std::io::IsTerminal;
    tracing::info!(
        "{who}: clients on other hosts give the monitor's token, kept in {} (mode 0600)",
        path.display()
    );
    if std::io::stderr().is_terminal() {
        eprintln!("{who}: the monitor's token is {t}");
    }
}
