//! A live view of a running ptmp graph over HTTP.
//!
//! [`start`] serves, on its own threads:
//! * `/`: a page that draws the graph (hosts, processes, nodes, ports,
//!   edges labelled with their transport), colours edges by rate and loss
//!   and nodes by state, keeps a few minutes of history, and updates live;
//!   its HTML, script and style are compiled into the binary;
//! * `/api/state`: the same state as JSON, with history;
//! * `/events`: server-sent events, one `state` event per update;
//! * `/metrics`: Prometheus's text exposition format.
//!
//! The state is gathered from the run directory (the status files every
//! process of the graph writes, the supervisor's `processes.json`) once per
//! period on a thread of its own; requests are answered from the last
//! snapshot, so no request, however slow, touches the data path.
//!
//! Defences: the server binds a loopback address unless told otherwise;
//! accepts a bounded number of connections, a bounded number from any one
//! address, and keeps a few more places for one short request each (the
//! page, `/api/state`, `/metrics`, never an event stream), so that event
//! streams cannot lock Prometheus out; answers 503 when there is no room,
//! saying why; drops a connection whose request head does not arrive
//! within a few seconds or exceeds 16 KiB; gives each connection a small
//! send buffer and closes one whose writes wait for room longer than the
//! write timeout (a client that stopped reading), and any connection that
//! makes no progress for the idle timeout. `/metrics` counts what was
//! refused and closed, and why. Serving other hosts is asked for
//! explicitly, and with a token ([`Options::token`]) they must present
//! it for the data; loopback clients need none. Every request must name
//! this server in its `Host` header (a loopback name or address, the
//! address reached, this host's name when serving other hosts,
//! [`Options::host_names`]), else it is answered 421: a page of another
//! site that rebinds its name to 127.0.0.1 gets nothing.

mod host;
mod limits;
mod prom;
mod server;
pub mod state;

pub mod local;
pub use server::{start, start_with, Monitor};

use std::net::SocketAddr;
use std::time::Duration;

/// How the monitor serves.
#[derive(Debug, Clone)]
pub struct Options {
    /// The address to listen on; port 0 picks a free one.
    pub addr: SocketAddr,
    /// Allow an address other than loopback.
    pub allow_remote: bool,
    /// A client on another host must present this token for the data
    /// (`/api/state`, `/events`, `/metrics`): `Authorization: Bearer
    /// TOKEN`, or `?token=TOKEN` (a browser's event stream cannot send
    /// headers). Loopback clients and the page itself (no data) need none.
    pub token: Option<String>,
    /// Names a request's `Host` header may give besides loopback names
    /// and addresses, the address reached and (when not bound to
    /// loopback) this host's name: a DNS alias, a name behind a proxy.
    /// Any other host is answered 421 (see the `host` module's notes).
    pub host_names: Vec<String>,
    /// Connections served at once, event streams included.
    pub max_connections: usize,
    /// Places beyond `max_connections` kept for one short request each
    /// (the page, `/api/state`, `/metrics`; an event stream asked for on
    /// one is answered 503), a quarter of them at most (at least one) for
    /// any one address. Past both, connections are refused with 503.
    pub reserved_connections: usize,
    /// Connections one client address may hold at once; more are refused
    /// with 503 naming the address.
    pub max_per_peer: usize,
    /// Time allowed for a request's head to arrive (at most 2 s on a
    /// reserved place).
    pub header_timeout: Duration,
    /// A connection whose write has waited this long for room (a client
    /// that stopped reading, an event stream most of all) is closed.
    pub write_timeout: Duration,
    /// The send buffer asked of the kernel for each connection, in bytes
    /// (Linux doubles it): about what a client that stopped reading can
    /// have queued before its writes wait.
    pub send_buffer: usize,
    /// A connection making no progress (no request, no byte written) for
    /// this long is closed.
    pub idle_timeout: Duration,
    /// How often the state is gathered and pushed to event streams.
    pub period: Duration,
}

impl Options {
    /// Defaults for serving on `addr`: loopback only, 64 connections and
    /// 8 more for short requests, 16 per client address, 5 s for a request
    /// head, 10 s for a write to find room in a send buffer of 32 KiB,
    /// 20 s idle, updates every second.
    pub fn new(addr: SocketAddr) -> Options {
        Options {
            addr,
            allow_remote: false,
            token: None,
            host_names: Vec::new(),
            max_connections: 64,
            reserved_connections: 8,
            max_per_peer: 16,
            header_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(10),
            send_buffer: 32 * 1024,
            idle_timeout: Duration::from_secs(20),
            period: Duration::from_secs(1),
        }
    }
}

/// Why the monitor could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A non-loopback address without `allow_remote`.
    #[error("--http {0}: not a loopback address; serving other hosts must be asked for explicitly (--http-allow-remote, which asks them for a token)")]
    Remote(SocketAddr),
    /// The address could not be bound.
    #[error("--http {addr}: cannot listen: {err}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the system said.
        err: std::io::Error,
    },
    /// A thread or the runtime could not be made.
    #[error("monitor: {0}")]
    Start(std::io::Error),
}

/// A new random token for [`Options::token`]: 32 hexadecimal digits from
/// the system's random source.
pub fn new_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut raw = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut raw)?;
    Ok(raw.iter().map(|b| format!("{b:02x}")).collect())
}

/// Why an `--http` value is not an address ([`parse_addr`]); each
/// repeats the value as given.
#[derive(Debug, thiserror::Error)]
pub enum AddrError {
    /// `localhost:PORT` with a port that is not a number from 0 to 65535.
    #[error("{0:?}: the port must be a number from 0 to 65535")]
    Port(String),
    /// Neither a port, nor `localhost:PORT`, nor `ADDRESS:PORT`.
    #[error("{0:?}: expected ADDRESS:PORT (e.g. 127.0.0.1:9464, [::1]:9464) or a port")]
    Form(String),
}

/// Parse an `--http` value: `HOST:PORT` with an IP address (`[::1]:8080`
/// for IPv6) or `localhost:PORT`, or a bare port on 127.0.0.1.
pub fn parse_addr(s: &str) -> Result<SocketAddr, AddrError> {
    if let Ok(p) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], p)));
    }
    if let Some(p) = s.strip_prefix("localhost:") {
        return p
            .parse::<u16>()
            .map(|p| SocketAddr::from(([127, 0, 0, 1], p)))
            .map_err(|_| AddrError::Port(s.into()));
    }
    s.parse::<SocketAddr>()
        .map_err(|_| AddrError::Form(s.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(
            parse_addr("9464").unwrap(),
            "127.0.0.1:9464".parse().unwrap()
        );
        assert_eq!(
            parse_addr("localhost:80").unwrap(),
            "127.0.0.1:80".parse().unwrap()
        );
        assert_eq!(parse_addr("[::1]:1").unwrap(), "[::1]:1".parse().unwrap());
        for bad in [
            "",
            "x",
            "localhost:x",
            "1.2.3.4",
            "1.2.3.4:70000",
            "host:80",
        ] {
            assert!(parse_addr(bad).is_err(), "{bad}");
        }
        assert!(matches!(parse_addr("localhost:x"), Err(AddrError::Port(s)) if s == "localhost:x"));
        let e = parse_addr("host:80").unwrap_err();
        assert!(matches!(&e, AddrError::Form(s) if s == "host:80"));
        assert!(e.to_string().contains("expected ADDRESS:PORT"), "{e}");
    }
}
