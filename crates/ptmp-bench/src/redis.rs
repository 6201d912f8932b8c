//! Redis as a baseline: a redis-server started and stopped by the harness
//! on loopback (TCP and a Unix socket in a private directory). The Babus
//! scenario over it is `babus/redis.rs`; streams between two processes are
//! a row of `baseline.rs`.

use crate::error::{BenchError, BenchResult};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A redis-server this process started; stopped (by its PID) on drop.
pub struct RedisServer {
    child: Child,
    port: u16,
    dir: std::path::PathBuf,
}

impl RedisServer {
    /// Start redis-server on a free loopback port and a Unix socket; an
    /// explanation instead when it cannot be run.
    pub fn start() -> Result<RedisServer, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free loopback port: {e}"))?
            .port();
        let dir = std::env::temp_dir().join(format!("ptmp-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .arg("--unixsocket")
            .arg(dir.join("redis.sock"))
            .args(["--unixsocketperm", "700", "--save", "", "--appendonly", "no"])
            .args(["--daemonize", "no", "--loglevel", "warning"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                format!("cannot run redis-server ({e}); install it (Debian: apt-get install redis-server)")
            })?;
        let server = RedisServer { child, port, dir };
        let t0 = Instant::now();
        loop {
            let up = redis::Client::open(server.tcp_url())
                .and_then(|c| c.get_connection())
                .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
            if up.is_ok() && server.dir.join("redis.sock").exists() {
                return Ok(server);
            }
            if t0.elapsed() > Duration::from_secs(10) {
                return Err("redis-server did not answer within 10 s".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn tcp_url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn unix_url(&self) -> String {
        format!("redis+unix://{}", self.dir.join("redis.sock").display())
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn conn(url: &str) -> BenchResult<redis::Connection> {
    redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .map_err(|e| BenchError::fail(format!("redis {url}: {e}")))
}
