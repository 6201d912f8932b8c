//! Socket types, transports and endpoints: what a socket is and where it
//! binds or connects, each endpoint checked as it is parsed.

use crate::error::{Error, Result};
use serde_json::Value;
use std::fmt;

/// ZeroMQ socket types, as PTMP's config names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SocketType {
    /// Exclusive pair: one peer, both directions.
    Pair,
    /// Publisher: every subscriber gets a copy; sends only.
    Pub,
    /// Subscriber to a PUB: receives what matches its prefixes.
    Sub,
    /// Request side of request-reply (not usable by senders or receivers).
    Req,
    /// Reply side of request-reply (not usable by senders or receivers).
    Rep,
    /// Asynchronous request (not usable by senders or receivers).
    Dealer,
    /// Asynchronous reply, routed by peer (not usable by senders or receivers).
    Router,
    /// Receiving end of a pipeline: fair-queues from its pushers.
    Pull,
    /// Sending end of a pipeline: deals messages round-robin.
    Push,
    /// Publisher that also sees subscriptions.
    XPub,
    /// Subscriber that sends its subscriptions as messages.
    XSub,
    /// Raw TCP (not usable by senders or receivers).
    Stream,
}

impl SocketType {
    /// Every type, in the order error messages list them.
    pub const ALL: [SocketType; 12] = [
        SocketType::Pair,
        SocketType::Pub,
        SocketType::Sub,
        SocketType::Req,
        SocketType::Rep,
        SocketType::Dealer,
        SocketType::Router,
        SocketType::Pull,
        SocketType::Push,
        SocketType::XPub,
        SocketType::XSub,
        SocketType::Stream,
    ];

    /// The name PTMP's config uses, upper case (`"PUSH"`).
    pub fn name(self) -> &'static str {
        match self {
            SocketType::Pair => "PAIR",
            SocketType::Pub => "PUB",
            SocketType::Sub => "SUB",
            SocketType::Req => "REQ",
            SocketType::Rep => "REP",
            SocketType::Dealer => "DEALER",
            SocketType::Router => "ROUTER",
            SocketType::Pull => "PULL",
            SocketType::Push => "PUSH",
            SocketType::XPub => "XPUB",
            SocketType::XSub => "XSUB",
            SocketType::Stream => "STREAM",
        }
    }

    /// Parse a type name, ignoring case.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(s.trim()))
    }

    pub(crate) fn zmq(self) -> zmq::SocketType {
        match self {
            SocketType::Pair => zmq::PAIR,
            SocketType::Pub => zmq::PUB,
            SocketType::Sub => zmq::SUB,
            SocketType::Req => zmq::REQ,
            SocketType::Rep => zmq::REP,
            SocketType::Dealer => zmq::DEALER,
            SocketType::Router => zmq::ROUTER,
            SocketType::Pull => zmq::PULL,
            SocketType::Push => zmq::PUSH,
            SocketType::XPub => zmq::XPUB,
            SocketType::XSub => zmq::XSUB,
            SocketType::Stream => zmq::STREAM,
        }
    }

    /// Types a TPSet [`Sender`](crate::Sender) may use.
    pub fn can_send(self) -> bool {
        matches!(
            self,
            SocketType::Pair | SocketType::Pub | SocketType::Push | SocketType::XPub
        )
    }

    /// Whether a socket of this type, sitting under the configuration key
    /// `key` (`output`, `input`, `outputs[1]`...), sends: a PUB, PUSH or
    /// XPUB does, a SUB, PULL or XSUB does not, and any other (a PAIR,
    /// which may do either, and the types a TPSet socket cannot be) by its
    /// key: under a key naming an output it sends. Every view of a
    /// configuration asks this, so they agree on which way a socket goes.
    pub fn sends_under(self, key: &str) -> bool {
        match self {
            SocketType::Pub | SocketType::Push | SocketType::XPub => true,
            SocketType::Sub | SocketType::Pull | SocketType::XSub => false,
            _ => key.contains("out"),
        }
    }

    /// Types a TPSet [`Receiver`](crate::Receiver) may use.
    pub fn can_recv(self) -> bool {
        matches!(
            self,
            SocketType::Pair | SocketType::Sub | SocketType::Pull | SocketType::XSub
        )
    }
}

impl fmt::Display for SocketType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The transport of an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// `inproc://NAME`: between threads of one process (ZeroMQ).
    Inproc,
    /// `ipc://PATH`: a Unix domain socket on one host (ZeroMQ).
    Ipc,
    /// `tcp://HOST:PORT`: across hosts (ZeroMQ).
    Tcp,
    /// `shm://NAME`: a shared-memory ring on one host (ptmp-shm).
    Shm,
}

impl Transport {
    /// The scheme before `://` in an address (`"tcp"`).
    pub fn scheme(self) -> &'static str {
        match self {
            Transport::Inproc => "inproc",
            Transport::Ipc => "ipc",
            Transport::Tcp => "tcp",
            Transport::Shm => "shm",
        }
    }
}

/// Whether an endpoint is bound or connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attach {
    /// The socket listens at the address (JSON `bind`).
    Bind,
    /// The socket connects to a peer listening there (JSON `connect`).
    Connect,
}

impl Attach {
    /// The JSON key: `"bind"` or `"connect"`.
    pub fn name(self) -> &'static str {
        match self {
            Attach::Bind => "bind",
            Attach::Connect => "connect",
        }
    }
}

/// A validated endpoint address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The transport the address's scheme names.
    pub transport: Transport,
    /// The address as written, e.g. `tcp://127.0.0.1:5678`.
    pub address: String,
}

impl Endpoint {
    /// Validate `address` for binding or connecting; `key` names it in errors.
    pub fn parse(address: &str, attach: Attach, key: &str) -> Result<Endpoint> {
        // The value as JSON writes it, so control characters read as in the file.
        let bad = |reason: String| Error::config(key, Value::from(address).to_string(), reason);
        // libzmq takes endpoints as C strings: a NUL would cut the address
        // short (and the zmq binding refuses it by panicking).
        if address.contains('\0') {
            return Err(bad("contains a NUL byte".into()));
        }
        if crate::names::parse(address).is_some() {
            // A peer's port by name: resolved to its address when the
            // socket is made (see `crate::names`); tcp underneath.
            if let Some(reason) = crate::names::check(address) {
                return Err(bad(reason));
            }
            return Ok(Endpoint {
                transport: Transport::Tcp,
                address: address.to_string(),
            });
        }
        let (scheme, rest) = address.split_once("://").ok_or_else(|| {
            bad("not an endpoint: expected inproc://NAME, ipc://PATH, tcp://HOST:PORT or shm://NAME".into())
        })?;
        let transport = match scheme {
            "inproc" => Transport::Inproc,
            "ipc" => Transport::Ipc,
            "tcp" => Transport::Tcp,
            "shm" => Transport::Shm,
            other => {
                return Err(bad(format!(
                    "unknown transport {other:?}: use inproc, ipc, tcp or shm"
                )))
            }
        };
        match transport {
            Transport::Inproc | Transport::Shm => {
                if rest.is_empty() {
                    return Err(bad(format!("{scheme}:// needs a name")));
                }
                if transport == Transport::Shm && ptmp_shm::ChannelName::new(rest).is_err() {
                    return Err(bad(format!("shm names are {}", ptmp_shm::NAME_RULE)));
                }
            }
            Transport::Ipc => {
                if rest.is_empty() {
                    return Err(bad("ipc:// needs a file path".into()));
                }
                // sun_path holds 107 bytes plus the terminating NUL.
                if rest != "*" && rest.len() > 107 {
                    return Err(bad(format!(
                        "ipc path is {} bytes; Unix sockets allow at most 107",
                        rest.len()
                    )));
                }
            }
            Transport::Tcp => validate_tcp(rest, attach).map_err(bad)?,
        }
        Ok(Endpoint {
            transport,
            address: address.to_string(),
        })
    }
}

fn validate_tcp(rest: &str, attach: Attach) -> std::result::Result<(), String> {
    let (host, port) = if let Some(r) = rest.strip_prefix('[') {
        let (h, p) = r
            .split_once("]:")
            .ok_or("IPv6 address must be written [ADDR]:PORT")?;
        h.parse::<std::net::Ipv6Addr>()
            .map_err(|_| format!("{h:?} is not an IPv6 address"))?;
        (h, p)
    } else {
        rest.rsplit_once(':')
            .ok_or("tcp endpoint needs HOST:PORT")?
    };
    if host.is_empty() {
        return Err("tcp endpoint has an empty host".into());
    }
    if host.contains(['/', ' ']) {
        return Err(format!("{host:?} is not a host name or address"));
    }
    if host == "*" && attach == Attach::Connect {
        return Err("cannot connect to '*': name the host to connect to".into());
    }
    match port {
        "*" | "!" if attach == Attach::Bind => Ok(()),
        p => match p.parse::<u32>() {
            Ok(n) if (1..=65535).contains(&n) => Ok(()),
            Ok(0) if attach == Attach::Bind => Ok(()),
            _ => Err(format!("port {p:?} is not a number from 1 to 65535")),
        },
    }
}
