//! A real Prometheus server (Debian's `prometheus`) for the monitor's
//! tests: started on a loopback port with a given scrape configuration,
//! asked instant queries, killed when dropped.

use super::{free_port, get};
use serde_json::Value;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};

pub struct Prometheus {
    child: Child,
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    /// Start it scraping every second with `scrape_configs` (YAML text,
    /// the list under that key); `None` (said by `missing_part`) when the
    /// program is not installed.
    pub fn start(scrape_configs: &str) -> Option<Prometheus> {
        let prom = Path::new("/usr/bin/prometheus");
        if !prom.exists() {
            super::missing_part("/usr/bin/prometheus missing (Debian package prometheus)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("prometheus.yml");
        std::fs::write(
            &cfg,
            format!("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n{scrape_configs}"),
        )
        .unwrap();
        let port = free_port();
        let child = Command::new(prom)
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Some(Prometheus {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            _dir: dir,
        })
    }

    /// The first value an instant query (URL-encoded) answers, if any yet;
    /// with the whole answer, for messages.
    pub fn query(&self, q: &str) -> (Option<f64>, String) {
        if std::net::TcpStream::connect(self.addr).is_err() {
            return (None, "prometheus not listening yet".into());
        }
        let (_, body) = get(self.addr, &format!("/api/v1/query?query={q}"));
        let v = serde_json::from_str::<Value>(&body).ok().and_then(|v| {
            v["data"]["result"][0]["value"][1]
                .as_str()
                .and_then(|x| x.parse().ok())
        });
        (v, body)
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
