//! Building a ZeroMQ socket from a [`SocketConfig`].
//!
//! Context policy, chosen for the fast-quit guarantee:
//! * a socket with an `inproc://` endpoint lives in the process-wide shared
//!   context, since inproc peers must share one;
//! * every other sending socket gets a private context. Dropping the sender
//!   closes the socket and then terminates that context, and libzmq's context
//!   termination blocks until the socket's queued messages are delivered or
//!   the config's linger runs out. That is what makes "send N and exit at once" lose
//!   nothing (PTMP, through CZMQ, used linger 0 and lost them);
//! * a request server's socket gets one too, for the same reason: the
//!   answers it gave leave before it is gone;
//! * receiving sockets use the shared context.

use crate::config::{Attach, Endpoint, SocketConfig, SocketType, Transport};
use crate::drain::Drain;
use crate::error::{Error, Result};
use std::sync::OnceLock;

/// The process-wide context that inproc endpoints share.
pub fn shared_context() -> &'static zmq::Context {
    static CTX: OnceLock<zmq::Context> = OnceLock::new();
    CTX.get_or_init(zmq::Context::new)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Send,
    Recv,
    /// A request client: its connections are watched (a [`Drain`]) so
    /// that a server going away fails the requests it held at once.
    Ask,
    /// A request server: its answers are delivered before it closes, as a
    /// sender's messages are.
    Answer,
}

/// A configured, bound and connected zmq socket.
pub(crate) struct Built {
    pub sock: zmq::Socket,
    /// For senders with tcp or ipc connections in a private context, and
    /// for CURVE clients that receive (to hear of a refused handshake).
    pub drain: Option<Drain>,
    /// The endpoints actually bound (wildcards resolved), in config order.
    pub bound: Vec<String>,
    /// A CURVE server's place with its context's ZAP handler: drop it
    /// after `sock`.
    pub admission: Option<crate::curve::Admission>,
    /// A CURVE server without a drain: the thread counting the clients it
    /// refuses at the handshake; drop it after `sock`.
    pub watch: Option<crate::curve::watch::Watch>,
    /// Its listening sockets, watched for the process's limit of open
    /// files (`crate::fdguard`): drop them before `sock`.
    pub guards: Vec<crate::fdguard::Guarded>,
}

pub(crate) fn build(cfg: &SocketConfig, role: Role) -> Result<Built> {
    let private = matches!(role, Role::Send | Role::Answer) && !cfg.uses(Transport::Inproc);
    let ctx = if private {
        zmq::Context::new()
    } else {
        shared_context().clone()
    };
    // A PUB sender is an XPUB underneath so that it can see subscriptions and
    // wait for its subscribers (the slow-joiner remedy). On the wire a SUB
    // accepts either.
    let ztype = match (role, cfg.socket_type()) {
        (Role::Send, SocketType::Pub) => zmq::XPUB,
        (_, t) => t.zmq(),
    };
    let sock = ctx.socket(ztype).map_err(Error::zmq("socket"))?;
    sock.set_rcvhwm(cfg.rcvhwm())
        .map_err(Error::zmq("set rcvhwm"))?;
    if let Some(h) = cfg.sndhwm() {
        sock.set_sndhwm(h).map_err(Error::zmq("set sndhwm"))?;
    }
    // Linger matters on receivers too: when a peer disconnects, libzmq
    // terminates the session's pipe with "delay" only if the socket's linger
    // is non-zero; with linger 0 the messages already received from that peer
    // but not yet read by the application are dropped (the tail of a fast
    // quitting sender was lost this way over ipc).
    sock.set_linger(cfg.linger_ms())
        .map_err(Error::zmq("set linger"))?;
    // A frame whose header announces more than this is refused at the
    // header and its connection dropped, before libzmq allocates it: one
    // connection, CURVE handshake or not, cannot make this socket hold more
    // (build() keeps it within i64).
    sock.set_maxmsgsize(cfg.max_message() as i64)
        .map_err(Error::zmq("set maxmsgsize"))?;
    if ztype == zmq::XPUB {
        sock.set_xpub_verbose(true)
            .map_err(Error::zmq("set xpub_verbose"))?;
    }
    if matches!(cfg.socket_type(), SocketType::Sub) {
        for p in cfg.subscribe() {
            sock.set_subscribe(p).map_err(Error::zmq("subscribe"))?;
        }
    }
    let (admission, curve_public) = match cfg.curve() {
        Some(c) => crate::curve::secure(&ctx, private, &sock, c)?,
        None => (None, None),
    };
    let curve_public = curve_public.map(|k| k.z85());
    let curve_client = matches!(cfg.curve(), Some(crate::curve::Curve::Client { .. }));
    // A CURVE server counts the clients it turns away at the handshake:
    // through the drain when it has one, else on a thread of its own.
    let server_counts = admission.as_ref().map(|a| a.counts());
    let drain = if (private && role == Role::Send) || curve_client || role == Role::Ask {
        let d = Drain::attach(&ctx, &sock, curve_client, server_counts.clone());
        Some(d.map_err(Error::zmq("monitor"))?)
    } else {
        None
    };
    let watch = match server_counts {
        Some(c) if drain.is_none() => Some(crate::curve::watch::Watch::start(&ctx, &sock, c)?),
        _ => None,
    };
    watch_peers(&sock, cfg)?;
    let mut bound = Vec::new();
    let mut guards = Vec::new();
    for (attach, ep) in cfg.endpoints() {
        match attach {
            Attach::Bind => {
                // A named bind listens on an ephemeral tcp port and is
                // announced at the port it got (`crate::names`).
                let named = crate::names::bind_address(&ep.address)?;
                let target = named.map(|a| Endpoint {
                    transport: Transport::Tcp,
                    address: a.to_string(),
                });
                bind(&sock, target.as_ref().unwrap_or(ep))?;
                let last = sock
                    .get_last_endpoint()
                    .ok()
                    .and_then(|r| r.ok())
                    .unwrap_or_else(|| ep.address.clone());
                if named.is_some() {
                    crate::names::announce_bound(&ep.address, &last, curve_public.as_deref())?;
                }
                guards.extend(crate::fdguard::guard(&last));
                bound.push(last);
            }
            Attach::Connect => {
                let at = crate::names::connect_address(&ep.address)?;
                // libzmq takes the server key in force at each connect.
                if let Some(k) = crate::curve::server_key_for(cfg.curve(), &ep.address, &at)? {
                    sock.set_curve_serverkey(&k.0)
                        .map_err(Error::zmq("set curve_serverkey"))?;
                }
                let address = at.address;
                sock.connect(&address).map_err(|e| Error::Connect {
                    endpoint: address.clone(),
                    reason: reason(e),
                })?
            }
        }
    }
    Ok(Built {
        sock,
        drain,
        bound,
        admission,
        watch,
        guards,
    })
}

/// Whether an ipc endpoint may bind `address` (`ipc://PATH`) as far as
/// what is at PATH goes: nothing, or a socket file (a stale one left by a
/// process that died is replaced at the bind). Anything else there — a
/// regular file, a directory, a symbolic link — would be deleted by
/// ZeroMQ's bind and, at the end, by the removal of the socket file, so it
/// is refused, naming the path: [`Error::Config`] for key `key`, since no
/// retry can succeed until the configuration or the file changes. Other
/// addresses pass. Every ipc bind runs this; `ptmp graph check` runs it
/// on the graph's pinned ipc addresses.
pub fn check_ipc_bind(key: &str, address: &str) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let Some(path) = address.strip_prefix("ipc://") else {
        return Ok(());
    };
    if path == "*" {
        return Ok(());
    }
    let what = match std::fs::symlink_metadata(path) {
        Err(_) => return Ok(()),
        Ok(m) if m.file_type().is_socket() => return Ok(()),
        Ok(m) if m.file_type().is_symlink() => "a symbolic link",
        Ok(m) if m.is_dir() => "a directory",
        Ok(m) if m.is_file() => "a regular file",
        Ok(_) => "a special file",
    };
    Err(Error::config(
        key,
        format!("{address:?}"),
        format!(
            "{path} exists and is {what}, not a socket; binding would delete it, so it is left alone: choose another path, or remove it yourself"
        ),
    ))
}

fn bind(sock: &zmq::Socket, ep: &Endpoint) -> Result<()> {
    if ep.transport == Transport::Ipc {
        check_ipc_bind("socket.bind", &ep.address)?;
        // libzmq unlinks a leftover socket file before binding, which would
        // silently steal the address from a live process: refuse instead.
        let path = &ep.address["ipc://".len()..];
        if path != "*" && std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(Error::Bind {
                endpoint: ep.address.clone(),
                reason: "address already in use (another process is listening on this ipc path)"
                    .into(),
            });
        }
    }
    sock.bind(&ep.address).map_err(|e| Error::Bind {
        endpoint: ep.address.clone(),
        reason: reason(e),
    })
}

fn reason(e: zmq::Error) -> String {
    match e {
        zmq::Error::EADDRINUSE => "address already in use".into(),
        zmq::Error::EADDRNOTAVAIL => "address not available on this host".into(),
        zmq::Error::ENODEV => "no such network interface or address".into(),
        zmq::Error::EACCES => "permission denied".into(),
        zmq::Error::EINVAL => "invalid endpoint".into(),
        zmq::Error::EPROTONOSUPPORT => "transport not supported".into(),
        zmq::Error::ECONNREFUSED => "connection refused (nothing is bound there)".into(),
        other => other.to_string(),
    }
}

/// Convert an optional timeout into zmq's milliseconds (-1 = forever).
pub(crate) fn timeout_ms(t: Option<std::time::Duration>) -> i32 {
    match t {
        None => -1,
        Some(d) => d.as_millis().min(i32::MAX as u128) as i32,
    }
}

/// The options that let `sock` notice a peer that went away: on a sender
/// connecting by name, ZMQ_IMMEDIATE; on a socket with names or a
/// `heartbeat_ms`, ZeroMQ heartbeats (see [`heartbeat_limits`]).
fn watch_peers(sock: &zmq::Socket, cfg: &SocketConfig) -> Result<()> {
    // A sender connecting by name queues messages only on live
    // connections: when the named peer dies, its messages wait here (and
    // it can follow the peer elsewhere) instead of piling up for an
    // address nobody will answer at again. Not a receiver: with
    // ZMQ_IMMEDIATE libzmq drops, when a connection ends, the messages it
    // had received that were not read yet (450 of 500 from a peer that
    // sent them and closed, in `tests/follow.rs`).
    let sends_only = matches!(
        cfg.socket_type(),
        SocketType::Push | SocketType::Pub | SocketType::XPub
    );
    if sends_only
        && cfg
            .connect()
            .iter()
            .any(|e| crate::names::stands_for_name(&e.address))
    {
        sock.set_immediate(true)
            .map_err(Error::zmq("set immediate"))?;
    }
    // Heartbeats drop a connection whose peer went silent (a host that
    // vanished without closing it), so a sender stops queueing for it: on
    // by default for sockets that bind or connect by name.
    let named = cfg
        .connect()
        .iter()
        .any(|e| crate::names::stands_for_name(&e.address))
        || cfg
            .bind()
            .iter()
            .any(|e| crate::names::parse(&e.address).is_some());
    let beat = match cfg.heartbeat() {
        Some(b) => b,
        None if named => crate::config::DEFAULT_NAME_HEARTBEAT,
        None => std::time::Duration::ZERO,
    };
    if !beat.is_zero() {
        // build() keeps the interval within 1 000 000 ms.
        let ms = beat.as_millis() as i32;
        let (timeout, ttl) = heartbeat_limits(cfg.socket_type(), ms);
        sock.set_heartbeat_ivl(ms)
            .map_err(Error::zmq("set heartbeat_ivl"))?;
        sock.set_heartbeat_timeout(timeout)
            .map_err(Error::zmq("set heartbeat_timeout"))?;
        sock.set_heartbeat_ttl(ttl)
            .map_err(Error::zmq("set heartbeat_ttl"))?;
    }
    Ok(())
}

/// How long a socket with heartbeats every `ms` waits for a word from its
/// peer before dropping the connection (`ZMQ_HEARTBEAT_TIMEOUT`), and how
/// long it asks its peer to wait for one from it (`ZMQ_HEARTBEAT_TTL`).
///
/// A side that only sends always reads its connections (nothing but the
/// peer's pings comes in), so it hears a live peer within an interval:
/// three intervals of silence mean the peer is gone, and it stops sending
/// into the connection (what it queued there is lost with the peer). A
/// side that receives stops reading a connection while its queue is full
/// (a slow reader holding its sender back), and then hears nothing, pings
/// included, although the peer is alive: after an outage a sender catching
/// up fills that queue, and with three intervals a receiver dropped a live
/// connection and everything the kernel held in it (a graph edge with
/// 250 ms heartbeats lost some 14,000 sets so). A receiving side, and the
/// sender it asks, wait ten intervals (at most ZeroMQ's 6553.5 s TTL).
fn heartbeat_limits(ty: SocketType, ms: i32) -> (i32, i32) {
    let short = 3 * ms;
    let long = 10i32.saturating_mul(ms).min(6_553_500);
    match ty {
        SocketType::Push | SocketType::Pub | SocketType::XPub => (short, long),
        SocketType::Pull | SocketType::Sub | SocketType::XSub => (long, short),
        _ => (long, long),
    }
}
