//! PTMP's JSON socket configuration, parsed and validated.
//!
//! ```json
//! {"socket": {"type": "PUSH", "bind": ["tcp://*:5678"], "connect": [], "hwm": 1000}}
//! ```
//!
//! Keys inside `socket` (PTMP's first, ptmp's additions after):
//!
//! | key | meaning | default |
//! |---|---|---|
//! | `type` | socket type name, case-insensitive | required |
//! | `bind`, `connect` | endpoint or list of endpoints | `[]` (one of them non-empty) |
//! | `hwm` | receive high-water mark (as PTMP) | 1000 |
//! | `sndhwm`, `rcvhwm` | explicit high-water marks (`rcvhwm` overrides `hwm`) | libzmq's 1000, `hwm` |
//! | `linger_ms` | how long dropping a sender waits for its queue to drain; -1 = forever | 2000 |
//! | `subscribe` | SUB prefixes (strings) | `[""]` (everything) |
//! | `subscribers` | PUB: wait for this many subscribers before the first send | 0 |
//! | `subscribers_timeout_ms` | give up that wait after this long | 10000 |
//! | `heartbeat_ms` | ZeroMQ heartbeats: a connection silent for three intervals is dropped; 0 = none | 1000 for a socket that binds or connects by name, else none |
//!
//! Endpoints are `inproc://NAME`, `ipc://PATH`, `tcp://HOST:PORT` (HOST may be
//! `*`, an IPv4 address, `[IPv6]`, a host name or an interface when binding;
//! PORT may be `*` when binding) and `shm://NAME` (the shared-memory transport,
//! accepted here and served by the transport that implements it).
//!
//! In Rust the same settings are typed: [`SocketConfig::builder`] takes
//! [`Duration`]s where the JSON has milliseconds, and the `shm_*` keys are
//! one [`ShmSettings`]. The builder and the JSON reader check the same
//! rules.
//!
//! Every problem is reported as [`Error::Config`] naming the key and value.

use crate::error::{Error, Result};
use crate::fields::{Empty, FieldError, Object, Options};
use serde_json::Value;
use std::fmt;
use std::time::Duration;

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

/// Deepest nesting of objects and arrays a configuration may have: 127
/// levels, what serde_json's recursion limit (128) lets through. Deeper
/// JSON is refused, not parsed.
pub const MAX_DEPTH: usize = 127;

/// Default receive high-water mark in messages, as PTMP.
pub const DEFAULT_HWM: i32 = 1000;
/// Default time a dropped sender waits for its queue to drain (JSON
/// `linger_ms: 2000`).
pub const DEFAULT_LINGER: Duration = Duration::from_millis(2000);
/// Default bound on a PUB waiting for its subscribers (JSON
/// `subscribers_timeout_ms: 10000`).
pub const DEFAULT_SUBSCRIBERS_TIMEOUT: Duration = Duration::from_millis(10_000);
/// Default ring size of an shm:// channel, in slots: a default ring takes
/// [`DEFAULT_SHM_RING_BYTES`], so seven fit in Docker's 64 MiB `/dev/shm`.
pub const DEFAULT_SHM_SLOTS: usize = 128;
/// Default largest message of an shm:// channel in bytes (a TPSet of
/// about 1500 TPs).
pub const DEFAULT_SHM_MAX_MESSAGE: usize = 65536;
/// Bytes of a default shm:// ring: an 8 KiB header, 128 slots of 65,600.
pub const DEFAULT_SHM_RING_BYTES: usize = 8_404_992;
/// Default bound on an shm:// PUSH waiting for its slowest reader
/// (ptmp-shm's default).
pub const DEFAULT_SHM_BLOCK_TIMEOUT: Duration = ptmp_shm::DEFAULT_BLOCK_TIMEOUT;

// The valid range of every integer key, in the unit JSON writes it. Both
// the JSON reader and the builder check against these, so a limit is
// stated once.
const HWM_RANGE: (i64, i64) = (0, i32::MAX as i64);
const LINGER_MS_RANGE: (i64, i64) = (-1, i32::MAX as i64);
const SUBSCRIBERS_RANGE: (i64, i64) = (0, 1 << 20);
const TIMEOUT_MS_RANGE: (i64, i64) = (0, i64::MAX);
const SHM_SLOTS_RANGE: (i64, i64) = (ptmp_shm::MIN_SLOTS as i64, ptmp_shm::MAX_SLOTS as i64);
const SHM_MAX_MESSAGE_RANGE: (i64, i64) = (1, ptmp_shm::MAX_MESSAGE_LIMIT as i64);
const SHM_READER_GRACE_MS_RANGE: (i64, i64) = (0, u32::MAX as i64);
// Three intervals must fit ZeroMQ's heartbeat TTL (at most 6553.5 s).
const HEARTBEAT_MS_RANGE: (i64, i64) = (0, 1_000_000);

/// The heartbeat interval of a socket that binds or connects by name
/// (`name://`) and sets no `heartbeat_ms`: a peer that vanished without
/// closing its connections (power cut, cable pulled) is dropped after
/// three silent intervals, instead of holding queued messages until TCP
/// gives up.
pub const DEFAULT_NAME_HEARTBEAT: Duration = Duration::from_millis(1000);

const SHM_MODES: &[&str] = &["private", "group"];
const SHM_MODE_REASON: &str = "must be \"private\" (mode 0600, this user only) or \"group\" (mode 0660, shared with the segment's group)";

const KNOWN_KEYS: &[&str] = &[
    "type",
    "bind",
    "connect",
    "hwm",
    "sndhwm",
    "rcvhwm",
    "linger_ms",
    "subscribe",
    "subscribers",
    "subscribers_timeout_ms",
    "shm_slots",
    "shm_max_message",
    "shm_block_timeout_ms",
    "shm_mode",
    "shm_reader_id",
    "shm_reader_token",
    "shm_reader_grace_ms",
    "heartbeat_ms",
];

/// Settings of the shared-memory transport, used by `shm://` endpoints
/// only (JSON keys `shm_slots`, `shm_max_message`, `shm_block_timeout_ms`
/// and `shm_mode`). [`SocketConfigBuilder::build`] checks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShmSettings {
    /// Slots in the ring: a power of two from [`ptmp_shm::MIN_SLOTS`] to
    /// [`ptmp_shm::MAX_SLOTS`]. Set by the writer; a reader takes the
    /// writer's.
    pub slots: usize,
    /// Largest message in bytes, from 1 to [`ptmp_shm::MAX_MESSAGE_LIMIT`].
    pub max_message: usize,
    /// How long a PUSH writer waits for its slowest reader to free a slot
    /// before the send fails; whole milliseconds count.
    pub block_timeout: Duration,
    /// Who may use the segment: [`ptmp_shm::Access::Private`] (mode 0600,
    /// the default) or [`ptmp_shm::Access::Group`] (mode 0660).
    pub mode: ptmp_shm::Access,
}

impl Default for ShmSettings {
    fn default() -> Self {
        ShmSettings {
            slots: DEFAULT_SHM_SLOTS,
            max_message: DEFAULT_SHM_MAX_MESSAGE,
            block_timeout: DEFAULT_SHM_BLOCK_TIMEOUT,
            mode: ptmp_shm::Access::Private,
        }
    }
}

/// A validated socket configuration.
///
/// Made by parsing PTMP's JSON ([`SocketConfig::from_json`], also
/// [`str::parse`]) or by [`SocketConfig::builder`]; both check the same
/// rules, so a value of this type is always usable by a
/// [`Sender`](crate::Sender) or [`Receiver`](crate::Receiver) of a
/// matching type. [`SocketConfig::to_json`] writes it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketConfig {
    stype: SocketType,
    bind: Vec<Endpoint>,
    connect: Vec<Endpoint>,
    rcvhwm: i32,
    sndhwm: Option<i32>,
    linger: Option<Duration>,
    subscribe: Vec<Vec<u8>>,
    subscribers: usize,
    subscribers_timeout: Duration,
    shm: ShmSettings,
    /// A receiver's identity in its shm rings (`shm_reader_id`).
    shm_reader_id: Option<String>,
    /// The secret binding that identity to its owner (`shm_reader_token`).
    shm_reader_token: Option<String>,
    /// How long a writer keeps that identity's place after its process
    /// died (`shm_reader_grace_ms`).
    shm_reader_grace: Duration,
    /// ZeroMQ heartbeat interval (`heartbeat_ms`); `None`: the default.
    heartbeat: Option<Duration>,
}

/// Builds a [`SocketConfig`] in Rust, checked by [`Self::build`] against
/// the same rules as the JSON.
///
/// ```
/// use ptmp::{SocketConfig, SocketType};
/// use std::time::Duration;
/// let c = SocketConfig::builder(SocketType::Push)
///     .bind("tcp://127.0.0.1:5678")
///     .hwm(1000)
///     .linger(Some(Duration::from_millis(500)))
///     .build()?;
/// assert_eq!(c.linger(), Some(Duration::from_millis(500)));
/// assert!(SocketConfig::builder(SocketType::Push).build().is_err()); // no endpoint
/// # Ok::<(), ptmp::Error>(())
/// ```
#[derive(Debug)]
pub struct SocketConfigBuilder {
    cfg: SocketConfig,
    /// `subscribe` was given (the default subscribes to everything).
    subscribe_set: bool,
    /// The first endpoint that did not parse, reported by `build`.
    error: Option<Error>,
}

impl SocketConfigBuilder {
    fn endpoint(mut self, attach: Attach, address: &str) -> Self {
        let list = match attach {
            Attach::Bind => &mut self.cfg.bind,
            Attach::Connect => &mut self.cfg.connect,
        };
        let key = format!("socket.{}[{}]", attach.name(), list.len());
        match Endpoint::parse(address, attach, &key) {
            Ok(e) => list.push(e),
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
        self
    }

    /// Add an endpoint to bind (checked: see the module's endpoint forms).
    pub fn bind(self, address: impl AsRef<str>) -> Self {
        self.endpoint(Attach::Bind, address.as_ref())
    }

    /// Add an endpoint to connect to.
    pub fn connect(self, address: impl AsRef<str>) -> Self {
        self.endpoint(Attach::Connect, address.as_ref())
    }

    /// The receive high-water mark in messages (JSON `hwm` or `rcvhwm`;
    /// default [`DEFAULT_HWM`]); 0 means no limit, as in ZeroMQ.
    pub fn hwm(mut self, messages: i32) -> Self {
        self.cfg.rcvhwm = messages;
        self
    }

    /// The send high-water mark in messages (JSON `sndhwm`; default:
    /// libzmq's).
    pub fn sndhwm(mut self, messages: i32) -> Self {
        self.cfg.sndhwm = Some(messages);
        self
    }

    /// How long dropping a sender waits for what it queued to leave: `None`
    /// waits without limit (JSON `linger_ms: -1`), `Some(ZERO)` does not
    /// wait. Whole milliseconds count; at most `i32::MAX` of them.
    pub fn linger(mut self, linger: Option<Duration>) -> Self {
        self.cfg.linger = linger;
        self
    }

    /// Add a SUB subscription prefix. Without any, a SUB subscribes to
    /// everything (the prefix `""`); only SUB sockets may subscribe.
    pub fn subscribe(mut self, prefix: impl Into<Vec<u8>>) -> Self {
        if !self.subscribe_set {
            self.cfg.subscribe.clear();
            self.subscribe_set = true;
        }
        self.cfg.subscribe.push(prefix.into());
        self
    }

    fn subscriptions(mut self, prefixes: Vec<Vec<u8>>) -> Self {
        self.cfg.subscribe = prefixes;
        self.subscribe_set = true;
        self
    }

    /// PUB only: wait for this many subscribers before the first send
    /// (at most 2^20; 0, the default, does not wait).
    pub fn subscribers(mut self, count: usize) -> Self {
        self.cfg.subscribers = count;
        self
    }

    /// How long that wait may last before the send fails with
    /// [`Error::Timeout`] (default [`DEFAULT_SUBSCRIBERS_TIMEOUT`]).
    pub fn subscribers_timeout(mut self, timeout: Duration) -> Self {
        self.cfg.subscribers_timeout = timeout;
        self
    }

    /// The settings of `shm://` endpoints (default
    /// [`ShmSettings::default`]).
    pub fn shm(mut self, shm: ShmSettings) -> Self {
        self.cfg.shm = shm;
        self
    }

    /// A receiver's stable identity in its shm:// rings (JSON
    /// `shm_reader_id`, e.g. `"graph/node/port"`; 1 to
    /// [`ptmp_shm::MAX_IDENT_LEN`] bytes without NUL). With it the ring
    /// keeps this receiver's place across a crash: the writer does not
    /// overwrite what the receiver has not committed
    /// ([`Receiver::commit`](crate::Receiver::commit)), keeps the place of
    /// a receiver whose process died for its grace time
    /// ([`Self::shm_reader_grace`]), and a receiver opened later under the
    /// same identity resumes there. Only receivers (PULL, SUB) have one;
    /// zmq transports do not use it.
    pub fn shm_reader_id(mut self, id: impl Into<String>) -> Self {
        self.cfg.shm_reader_id = Some(id.into());
        self
    }

    /// A secret binding [`Self::shm_reader_id`] to its owner (JSON
    /// `shm_reader_token`; a graph gives its readers one from its private
    /// run directory): the ring records it with the identity, and a
    /// receiver that claims the identity without the same token is refused,
    /// so it cannot take a crashed owner's place (and move it) before the
    /// owner is restarted.
    pub fn shm_reader_token(mut self, token: impl Into<String>) -> Self {
        self.cfg.shm_reader_token = Some(token.into());
        self
    }

    /// How long a blocked shm writer keeps the place of a receiver with an
    /// identity whose process died, waiting for its successor (JSON
    /// `shm_reader_grace_ms`; default [`ptmp_shm::DEFAULT_READER_GRACE`];
    /// whole milliseconds count, at most `u32::MAX` of them).
    pub fn shm_reader_grace(mut self, grace: Duration) -> Self {
        self.cfg.shm_reader_grace = grace;
        self
    }

    /// ZeroMQ heartbeats every `interval` on each connection (JSON
    /// `heartbeat_ms`): a connection whose peer has been silent for three
    /// intervals is dropped, so a peer that vanished without closing it is
    /// noticed. `Duration::ZERO` sends none. Default: [`DEFAULT_NAME_HEARTBEAT`]
    /// for a socket that binds or connects by name, none otherwise. Whole
    /// milliseconds count, at most 1 000 000 of them.
    pub fn heartbeat(mut self, interval: Duration) -> Self {
        self.cfg.heartbeat = Some(interval);
        self
    }

    /// Check everything and return the configuration, or the first problem
    /// as [`Error::Config`] naming the JSON key that holds it (e.g.
    /// `socket.shm_slots = 12: must be a power of two`).
    pub fn build(self) -> Result<SocketConfig> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut c = self.cfg;
        check_int("hwm", c.rcvhwm as i128, HWM_RANGE)?;
        if let Some(h) = c.sndhwm {
            check_int("sndhwm", h as i128, HWM_RANGE)?;
        }
        if let Some(l) = c.linger {
            check_int("linger_ms", l.as_millis() as i128, LINGER_MS_RANGE)?;
            c.linger = Some(whole_ms(l));
        }
        check_int("subscribers", c.subscribers as i128, SUBSCRIBERS_RANGE)?;
        check_int(
            "subscribers_timeout_ms",
            c.subscribers_timeout.as_millis() as i128,
            TIMEOUT_MS_RANGE,
        )?;
        c.subscribers_timeout = whole_ms(c.subscribers_timeout);
        check_int("shm_slots", c.shm.slots as i128, SHM_SLOTS_RANGE)?;
        if !c.shm.slots.is_power_of_two() {
            return Err(Error::config(
                "socket.shm_slots",
                c.shm.slots.to_string(),
                "must be a power of two",
            ));
        }
        check_int(
            "shm_max_message",
            c.shm.max_message as i128,
            SHM_MAX_MESSAGE_RANGE,
        )?;
        check_int(
            "shm_block_timeout_ms",
            c.shm.block_timeout.as_millis() as i128,
            TIMEOUT_MS_RANGE,
        )?;
        c.shm.block_timeout = whole_ms(c.shm.block_timeout);
        check_int(
            "shm_reader_grace_ms",
            c.shm_reader_grace.as_millis().min(i64::MAX as u128) as i128,
            SHM_READER_GRACE_MS_RANGE,
        )?;
        c.shm_reader_grace = whole_ms(c.shm_reader_grace);
        if let Some(h) = c.heartbeat {
            check_int(
                "heartbeat_ms",
                h.as_millis().min(i64::MAX as u128) as i128,
                HEARTBEAT_MS_RANGE,
            )?;
            c.heartbeat = Some(whole_ms(h));
        }
        if let Some(id) = &c.shm_reader_id {
            if id.is_empty() || id.len() > ptmp_shm::MAX_IDENT_LEN || id.contains('\0') {
                return Err(Error::config(
                    "socket.shm_reader_id",
                    Value::from(id.as_str()).to_string(),
                    format!("must be 1 to {} bytes without NUL", ptmp_shm::MAX_IDENT_LEN),
                ));
            }
            if !c.stype.can_recv() || c.stype == SocketType::Pair {
                return Err(Error::config(
                    "socket.shm_reader_id",
                    Value::from(id.as_str()).to_string(),
                    format!(
                        "only a receiver (PULL or SUB) has a place in a ring, this one is {}",
                        c.stype
                    ),
                ));
            }
        }
        if let Some(t) = &c.shm_reader_token {
            if c.shm_reader_id.is_none() || t.is_empty() || t.len() > 255 || t.contains('\0') {
                return Err(Error::config(
                    "socket.shm_reader_token",
                    "(not shown)",
                    "must be 1 to 255 bytes without NUL, beside a shm_reader_id",
                ));
            }
        }
        if self.subscribe_set && !matches!(c.stype, SocketType::Sub | SocketType::XSub) {
            let shown: Vec<String> = c
                .subscribe
                .iter()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect();
            return Err(Error::config(
                "socket.subscribe",
                Value::from(shown).to_string(),
                format!("only a SUB socket subscribes, this one is {}", c.stype),
            ));
        }
        if c.subscribers > 0 && !matches!(c.stype, SocketType::Pub | SocketType::XPub) {
            return Err(Error::config(
                "socket.subscribers",
                c.subscribers.to_string(),
                format!(
                    "only a PUB socket waits for subscribers, this one is {}",
                    c.stype
                ),
            ));
        }
        c.check_endpoints()?;
        Ok(c)
    }
}

/// `d` without its sub-millisecond part: the JSON holds milliseconds, and
/// a configuration must read back as it was built.
fn whole_ms(d: Duration) -> Duration {
    Duration::from_millis(d.as_millis().min(u64::MAX as u128) as u64)
}

fn range_reason((min, max): (i64, i64)) -> String {
    format!("must be an integer from {min} to {max}")
}

fn check_int(key: &str, n: i128, range: (i64, i64)) -> Result<()> {
    if (range.0 as i128..=range.1 as i128).contains(&n) {
        Ok(())
    } else {
        Err(Error::config(
            format!("socket.{key}"),
            n.to_string(),
            range_reason(range),
        ))
    }
}

/// A reader's error as the socket config words it (the reader's own
/// wording).
fn field_error(e: Box<FieldError>) -> Error {
    Error::from(e)
}

/// An integer key of the socket object, in `range`.
fn int(s: &Object<'_>, key: &str, range: (i64, i64)) -> Result<Option<i64>> {
    s.int_in(key, range.0, range.1)
        .map_err(|e| Error::config(e.location(), e.value, range_reason(range)))
}

impl SocketConfig {
    /// A builder for a socket of type `stype`, with every other setting at
    /// its default and no endpoint yet.
    pub fn builder(stype: SocketType) -> SocketConfigBuilder {
        SocketConfigBuilder {
            cfg: SocketConfig {
                stype,
                bind: vec![],
                connect: vec![],
                rcvhwm: DEFAULT_HWM,
                sndhwm: None,
                linger: Some(DEFAULT_LINGER),
                subscribe: vec![Vec::new()],
                subscribers: 0,
                subscribers_timeout: DEFAULT_SUBSCRIBERS_TIMEOUT,
                shm: ShmSettings::default(),
                shm_reader_id: None,
                shm_reader_token: None,
                shm_reader_grace: ptmp_shm::DEFAULT_READER_GRACE,
                heartbeat: None,
            },
            subscribe_set: false,
            error: None,
        }
    }

    /// A builder holding this configuration, to change some settings of
    /// it; `build` checks the result again.
    pub fn to_builder(&self) -> SocketConfigBuilder {
        SocketConfigBuilder {
            subscribe_set: self.subscribe != [Vec::<u8>::new()],
            cfg: self.clone(),
            error: None,
        }
    }

    /// A configuration with defaults and the given endpoints, all bound or
    /// all connected; errors name `socket.bind[i]` or `socket.connect[i]`.
    pub fn new(stype: SocketType, attach: Attach, endpoints: &[impl AsRef<str>]) -> Result<Self> {
        endpoints
            .iter()
            .fold(Self::builder(stype), |b, e| b.endpoint(attach, e.as_ref()))
            .build()
    }

    /// Parse a JSON text: `{"socket": {...}}`. Errors are
    /// [`Error::Config`] naming the key and the value.
    pub fn from_json(text: &str) -> Result<Self> {
        let v: Value = serde_json::from_str(text).map_err(|e| {
            let reason = if e.to_string().starts_with("recursion limit exceeded") {
                format!("nested deeper than {MAX_DEPTH} levels, the limit for configurations")
            } else {
                format!("not valid JSON: {e}")
            };
            Error::config("(config)", abbreviate(text), reason)
        })?;
        Self::from_value(&v)
    }

    /// Parse an already-parsed JSON value: `{"socket": {...}}`.
    pub fn from_value(v: &Value) -> Result<Self> {
        let obj = v.as_object().ok_or_else(|| {
            Error::config(
                "(config)",
                abbreviate(&v.to_string()),
                "must be a JSON object with a \"socket\" key",
            )
        })?;
        let sock = obj.get("socket").ok_or_else(|| {
            Error::config("socket", "(missing)", "the config has no \"socket\" object")
        })?;
        let s = Object::new("socket", sock, Options::default()).map_err(field_error)?;
        s.only(KNOWN_KEYS).map_err(field_error)?;
        let tv = s
            .raw("type")
            .ok_or_else(|| Error::config("socket.type", "(missing)", "a socket needs a type"))?;
        let tname = tv
            .as_str()
            .ok_or_else(|| Error::config("socket.type", tv.to_string(), "must be a string"))?;
        let stype = SocketType::parse(tname).ok_or_else(|| {
            Error::config(
                "socket.type",
                format!("{tname:?}"),
                format!(
                    "unknown socket type; use one of {}",
                    SocketType::ALL.map(|t| t.name()).join(", ")
                ),
            )
        })?;
        let mut b = Self::builder(stype);
        for attach in [Attach::Bind, Attach::Connect] {
            for e in endpoints(&s, attach)? {
                match attach {
                    Attach::Bind => b.cfg.bind.push(e),
                    Attach::Connect => b.cfg.connect.push(e),
                }
            }
        }
        let hwm = int(&s, "hwm", HWM_RANGE)?;
        let rcvhwm = int(&s, "rcvhwm", HWM_RANGE)?;
        if let Some(h) = rcvhwm.or(hwm) {
            b = b.hwm(h as i32);
        }
        if let Some(h) = int(&s, "sndhwm", HWM_RANGE)? {
            b = b.sndhwm(h as i32);
        }
        if let Some(l) = int(&s, "linger_ms", LINGER_MS_RANGE)? {
            b = b.linger((l >= 0).then(|| Duration::from_millis(l as u64)));
        }
        if let Some(k) = int(&s, "subscribers", SUBSCRIBERS_RANGE)? {
            b = b.subscribers(k as usize);
        }
        if let Some(t) = int(&s, "subscribers_timeout_ms", TIMEOUT_MS_RANGE)? {
            b = b.subscribers_timeout(Duration::from_millis(t as u64));
        }
        let mut shm = ShmSettings::default();
        if let Some(n) = int(&s, "shm_slots", SHM_SLOTS_RANGE)? {
            shm.slots = n as usize;
        }
        if let Some(n) = int(&s, "shm_max_message", SHM_MAX_MESSAGE_RANGE)? {
            shm.max_message = n as usize;
        }
        if let Some(t) = int(&s, "shm_block_timeout_ms", TIMEOUT_MS_RANGE)? {
            shm.block_timeout = Duration::from_millis(t as u64);
        }
        let bad_mode = |value: String| Error::config("socket.shm_mode", value, SHM_MODE_REASON);
        if s.raw("shm_mode").is_some_and(Value::is_null) {
            return Err(bad_mode("null".into()));
        }
        shm.mode = match s.choice("shm_mode", SHM_MODES) {
            Ok(None | Some("private")) => ptmp_shm::Access::Private,
            Ok(Some(_)) => ptmp_shm::Access::Group,
            Err(e) => return Err(bad_mode(e.value)),
        };
        b = b.shm(shm);
        if let Some(id) = s.str("shm_reader_id").map_err(field_error)? {
            b = b.shm_reader_id(id);
        }
        if let Some(t) = s.str("shm_reader_token").map_err(field_error)? {
            b = b.shm_reader_token(t);
        }
        if let Some(t) = int(&s, "shm_reader_grace_ms", SHM_READER_GRACE_MS_RANGE)? {
            b = b.shm_reader_grace(Duration::from_millis(t as u64));
        }
        if let Some(t) = int(&s, "heartbeat_ms", HEARTBEAT_MS_RANGE)? {
            b = b.heartbeat(Duration::from_millis(t as u64));
        }
        if s.raw("subscribe").is_some_and(Value::is_null) {
            return Err(Error::config(
                "socket.subscribe",
                "null",
                "must be a string or a list of strings",
            ));
        }
        if let Some(list) = s
            .strings("subscribe", Empty::Allowed)
            .map_err(field_error)?
        {
            if !matches!(stype, SocketType::Sub | SocketType::XSub) {
                // Named as written, which the builder cannot know.
                return Err(Error::config(
                    "socket.subscribe",
                    s.map()["subscribe"].to_string(),
                    format!("only a SUB socket subscribes, this one is {stype}"),
                ));
            }
            b = b.subscriptions(list.iter().map(|p| p.as_bytes().to_vec()).collect());
        }
        b.build()
    }

    fn check_endpoints(&self) -> Result<()> {
        let n = self.bind.len() + self.connect.len();
        if n == 0 {
            return Err(Error::config(
                "socket.bind/socket.connect",
                "[]",
                "no endpoint: give at least one address to bind or connect",
            ));
        }
        if self.stype == SocketType::Pair && n > 1 {
            let all: Vec<&str> = self.endpoints().map(|(_, e)| e.address.as_str()).collect();
            return Err(Error::config(
                "socket.bind/socket.connect",
                format!("{all:?}"),
                "a PAIR socket has exactly one peer: give exactly one endpoint",
            ));
        }
        Ok(())
    }

    /// The socket type (JSON `type`).
    pub fn socket_type(&self) -> SocketType {
        self.stype
    }

    /// Endpoints to bind, in order (JSON `bind`).
    pub fn bind(&self) -> &[Endpoint] {
        &self.bind
    }

    /// Endpoints to connect to, in order (JSON `connect`).
    pub fn connect(&self) -> &[Endpoint] {
        &self.connect
    }

    /// This configuration connecting to `connect` instead (names resolved
    /// by `crate::names`).
    pub(crate) fn with_connect(&self, connect: Vec<Endpoint>) -> SocketConfig {
        SocketConfig {
            connect,
            ..self.clone()
        }
    }

    /// All endpoints with how each is attached, binds first.
    pub fn endpoints(&self) -> impl Iterator<Item = (Attach, &Endpoint)> {
        self.bind
            .iter()
            .map(|e| (Attach::Bind, e))
            .chain(self.connect.iter().map(|e| (Attach::Connect, e)))
    }

    /// Receive high-water mark in messages (`rcvhwm`, else `hwm`, else
    /// [`DEFAULT_HWM`]); 0 means no limit.
    pub fn rcvhwm(&self) -> i32 {
        self.rcvhwm
    }

    /// Send high-water mark in messages; `None` leaves libzmq's default.
    pub fn sndhwm(&self) -> Option<i32> {
        self.sndhwm
    }

    /// How long dropping a sender waits for its queue to drain; `None`
    /// waits without limit.
    pub fn linger(&self) -> Option<Duration> {
        self.linger
    }

    /// The linger as ZeroMQ takes it: milliseconds, -1 for no limit.
    pub(crate) fn linger_ms(&self) -> i32 {
        // build() keeps it within i32 milliseconds.
        self.linger.map_or(-1, |d| d.as_millis() as i32)
    }

    /// A receiver's identity in its shm:// rings, if it has one (see
    /// [`SocketConfigBuilder::shm_reader_id`]).
    pub fn shm_reader_id(&self) -> Option<&str> {
        self.shm_reader_id.as_deref()
    }

    /// The token binding this receiver's shm identity to its owner, if any
    /// (see [`SocketConfigBuilder::shm_reader_token`]).
    pub fn shm_reader_token(&self) -> Option<&str> {
        self.shm_reader_token.as_deref()
    }

    /// How long a writer keeps the place of this receiver's identity after
    /// its process died (see [`SocketConfigBuilder::shm_reader_grace`]).
    pub fn shm_reader_grace(&self) -> Duration {
        self.shm_reader_grace
    }

    /// The heartbeat interval set (`heartbeat_ms`), `None` for the default
    /// (see [`SocketConfigBuilder::heartbeat`]).
    pub fn heartbeat(&self) -> Option<Duration> {
        self.heartbeat
    }

    /// SUB subscription prefixes; `[""]` (the default) subscribes to
    /// everything, an empty list to nothing.
    pub fn subscribe(&self) -> &[Vec<u8>] {
        &self.subscribe
    }

    /// PUB: subscribers to wait for before the first send; 0 does not wait.
    pub fn subscribers(&self) -> usize {
        self.subscribers
    }

    /// How long a PUB waits for [`Self::subscribers`] before failing.
    pub fn subscribers_timeout(&self) -> Duration {
        self.subscribers_timeout
    }

    /// The settings `shm://` endpoints use.
    pub fn shm(&self) -> &ShmSettings {
        &self.shm
    }

    /// A one-line description: type and endpoints.
    pub fn describe(&self) -> String {
        let eps: Vec<String> = self
            .endpoints()
            .map(|(a, e)| format!("{}:{}", a.name(), e.address))
            .collect();
        format!("{} {}", self.stype, eps.join(","))
    }

    /// One configuration per endpoint, binds first: each has this one's
    /// settings and that endpoint alone (a merge opens a socket per input
    /// stream this way).
    pub fn per_endpoint(&self) -> Vec<SocketConfig> {
        self.endpoints()
            .map(|(attach, ep)| {
                let (bind, connect) = match attach {
                    Attach::Bind => (vec![ep.clone()], vec![]),
                    Attach::Connect => (vec![], vec![ep.clone()]),
                };
                SocketConfig {
                    bind,
                    connect,
                    ..self.clone()
                }
            })
            .collect()
    }

    /// True when any endpoint uses `t`.
    pub fn uses(&self, t: Transport) -> bool {
        self.endpoints().any(|(_, e)| e.transport == t)
    }

    /// The configuration as PTMP-style JSON (ptmp's extra keys included when
    /// they differ from their defaults); [`Self::from_value`] reads it back
    /// to an equal configuration.
    pub fn to_json(&self) -> Value {
        let mut s = serde_json::Map::new();
        s.insert("type".into(), self.stype.name().into());
        s.insert(
            "bind".into(),
            self.bind.iter().map(|e| e.address.clone()).collect(),
        );
        s.insert(
            "connect".into(),
            self.connect.iter().map(|e| e.address.clone()).collect(),
        );
        s.insert("hwm".into(), self.rcvhwm.into());
        if let Some(h) = self.sndhwm {
            s.insert("sndhwm".into(), h.into());
        }
        if self.linger != Some(DEFAULT_LINGER) {
            s.insert("linger_ms".into(), self.linger_ms().into());
        }
        if self.subscribe != [Vec::<u8>::new()] {
            s.insert(
                "subscribe".into(),
                self.subscribe
                    .iter()
                    .map(|p| String::from_utf8_lossy(p).into_owned())
                    .collect(),
            );
        }
        if self.shm.slots != DEFAULT_SHM_SLOTS {
            s.insert("shm_slots".into(), self.shm.slots.into());
        }
        if self.shm.max_message != DEFAULT_SHM_MAX_MESSAGE {
            s.insert("shm_max_message".into(), self.shm.max_message.into());
        }
        if self.shm.mode == ptmp_shm::Access::Group {
            s.insert("shm_mode".into(), "group".into());
        }
        if self.shm.block_timeout != DEFAULT_SHM_BLOCK_TIMEOUT {
            s.insert(
                "shm_block_timeout_ms".into(),
                (self.shm.block_timeout.as_millis() as u64).into(),
            );
        }
        if let Some(id) = &self.shm_reader_id {
            s.insert("shm_reader_id".into(), id.as_str().into());
        }
        if let Some(t) = &self.shm_reader_token {
            s.insert("shm_reader_token".into(), t.as_str().into());
        }
        if self.shm_reader_grace != ptmp_shm::DEFAULT_READER_GRACE {
            s.insert(
                "shm_reader_grace_ms".into(),
                (self.shm_reader_grace.as_millis() as u64).into(),
            );
        }
        if let Some(h) = self.heartbeat {
            s.insert("heartbeat_ms".into(), (h.as_millis() as u64).into());
        }
        if self.subscribers > 0 {
            s.insert("subscribers".into(), self.subscribers.into());
            s.insert(
                "subscribers_timeout_ms".into(),
                (self.subscribers_timeout.as_millis() as u64).into(),
            );
        }
        serde_json::json!({ "socket": s })
    }
}

impl std::str::FromStr for SocketConfig {
    type Err = Error;
    /// [`SocketConfig::from_json`].
    fn from_str(s: &str) -> Result<Self> {
        Self::from_json(s)
    }
}

/// The `bind` or `connect` key: an endpoint string or a list of them.
fn endpoints(s: &Object<'_>, attach: Attach) -> Result<Vec<Endpoint>> {
    let key = attach.name();
    let full = s.key_path(key);
    let Some(v) = s.get(key) else {
        return Ok(vec![]);
    };
    if let Value::String(a) = v {
        return Ok(vec![Endpoint::parse(a, attach, &full)?]);
    }
    let list = s.strings_of(key, v, Empty::Allowed).map_err(|e| {
        let reason = if e.index.is_some() {
            "an endpoint must be a string"
        } else {
            "must be an endpoint string or a list of them"
        };
        Error::config(e.location(), e.value, reason)
    })?;
    list.iter()
        .enumerate()
        .map(|(i, a)| Endpoint::parse(a, attach, &format!("{full}[{i}]")))
        .collect()
}

fn abbreviate(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(60).collect::<String>())
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        SocketConfig::from_json(text).unwrap_err().to_string()
    }

    #[test]
    fn ptmp_config_parses_with_defaults() {
        let c = SocketConfig::from_json(
            r#"{"socket":{"type":"push","bind":["tcp://*:5678"],"connect":[]}}"#,
        )
        .unwrap();
        assert_eq!(c.stype, SocketType::Push);
        assert_eq!(c.rcvhwm, 1000);
        assert_eq!(c.sndhwm, None);
        assert_eq!(c.bind[0].transport, Transport::Tcp);
        assert_eq!(c.subscribe, vec![Vec::<u8>::new()]);
        let again = SocketConfig::from_value(&c.to_json()).unwrap();
        assert_eq!(again, c);
    }

    #[test]
    fn all_keys() {
        let c = SocketConfig::from_json(
            r#"{"socket":{"type":"Sub","connect":"ipc:///tmp/x","hwm":5,"rcvhwm":7,"sndhwm":9,
                "linger_ms":-1,"subscribe":["a","b"]}}"#,
        )
        .unwrap();
        assert_eq!((c.rcvhwm, c.sndhwm, c.linger), (7, Some(9), None));
        assert_eq!(c.subscribe, vec![b"a".to_vec(), b"b".to_vec()]);
        let c = SocketConfig::from_json(
            r#"{"socket":{"type":"PUB","bind":["inproc://a","tcp://[::1]:7000"],"subscribers":2}}"#,
        )
        .unwrap();
        assert_eq!(c.subscribers, 2);
        assert_eq!(SocketConfig::from_value(&c.to_json()).unwrap(), c);
    }

    #[test]
    fn every_bad_config_names_key_and_value() {
        let e = err("{nope");
        assert!(e.contains("not valid JSON"), "{e}");
        let e = err(r#"{"sock":{}}"#);
        assert!(e.contains("socket") && e.contains("missing"), "{e}");
        let e = err(r#"{"socket":{"type":"PUSHY","bind":["tcp://*:1"]}}"#);
        assert!(e.contains("socket.type") && e.contains("PUSHY"), "{e}");
        let e = err(r#"{"socket":{"type":"PUSH"}}"#);
        assert!(e.contains("no endpoint"), "{e}");
        let e = err(r#"{"socket":{"type":"PAIR","bind":["tcp://*:1"],"connect":["tcp://a:2"]}}"#);
        assert!(e.contains("PAIR") && e.contains("tcp://a:2"), "{e}");
        for (ep, what) in [
            ("tcp://localhost", "HOST:PORT"),
            ("tcp://host:99999", "99999"),
            ("tcp://*:5", "cannot connect to '*'"),
            ("udp://x:1", "unknown transport"),
            ("localhost:5", "not an endpoint"),
            ("inproc://", "needs a name"),
            ("ipc://", "file path"),
            ("tcp://[zz]:1", "IPv6"),
            ("tcp://a\\u0000b:1", "NUL byte"),
            ("ipc:///tmp/a\\u0000b", "NUL byte"),
        ] {
            let e = err(&format!(
                r#"{{"socket":{{"type":"PULL","connect":["tcp://ok:1","{ep}"]}}}}"#
            ));
            assert!(
                e.contains("socket.connect[1]") && e.contains(ep) && e.contains(what),
                "{e}"
            );
        }
        let e = err(r#"{"socket":{"type":"PULL","bind":"tcp://*:1","hmw":3}}"#);
        assert!(e.contains("socket.hmw") && e.contains("unknown key"), "{e}");
        let e = err(r#"{"socket":{"type":"PULL","bind":"tcp://*:1","hwm":-3}}"#);
        assert!(e.contains("socket.hwm = -3"), "{e}");
        let e = err(r#"{"socket":{"type":"PULL","bind":"tcp://*:1","hwm":"big"}}"#);
        assert!(e.contains("socket.hwm = \"big\""), "{e}");
        let e = err(r#"{"socket":{"type":"PUSH","bind":"tcp://*:1","subscribe":["x"]}}"#);
        assert!(e.contains("socket.subscribe"), "{e}");
        let e = err(r#"{"socket":{"type":"PUSH","bind":"tcp://*:1","subscribers":2}}"#);
        assert!(e.contains("socket.subscribers"), "{e}");
        let e = err(r#"{"socket":{"type":"PUSH","bind":[5]}}"#);
        assert!(e.contains("socket.bind[0] = 5"), "{e}");
        let e = err(r#"[1,2]"#);
        assert!(e.contains("JSON object"), "{e}");
    }

    #[test]
    fn builder_matches_json() {
        let built = SocketConfig::builder(SocketType::Sub)
            .connect("ipc:///tmp/x")
            .hwm(7)
            .sndhwm(9)
            .linger(None)
            .subscribe("a")
            .subscribe("b")
            .shm(ShmSettings {
                slots: 64,
                block_timeout: Duration::from_micros(20_500),
                ..Default::default()
            })
            .build()
            .unwrap();
        let parsed: SocketConfig = r#"{"socket":{"type":"SUB","connect":"ipc:///tmp/x","rcvhwm":7,
            "sndhwm":9,"linger_ms":-1,"subscribe":["a","b"],"shm_slots":64,"shm_block_timeout_ms":20}}"#
            .parse()
            .unwrap();
        assert_eq!(built, parsed);
        assert_eq!(built.shm().block_timeout, Duration::from_millis(20));
        assert_eq!(SocketConfig::from_value(&built.to_json()).unwrap(), built);
        let again = built.to_builder().hwm(3).build().unwrap();
        assert_eq!((again.rcvhwm(), again.subscribe().len()), (3, 2));
    }

    #[test]
    fn builder_errors_read_as_json_errors() {
        let b = || SocketConfig::builder(SocketType::Push).bind("tcp://*:1");
        let e = |r: Result<SocketConfig>| r.unwrap_err().to_string();
        assert_eq!(
            e(b()
                .shm(ShmSettings {
                    slots: 12,
                    ..Default::default()
                })
                .build()),
            "invalid config: socket.shm_slots = 12: must be a power of two"
        );
        assert_eq!(
            e(b().hwm(-3).build()),
            "invalid config: socket.hwm = -3: must be an integer from 0 to 2147483647"
        );
        assert!(
            e(b().linger(Some(Duration::from_secs(1 << 40))).build()).contains("socket.linger_ms")
        );
        assert!(e(b().subscribe("x").build()).contains("only a SUB socket subscribes"));
        assert!(e(b().subscribers(2).build()).contains("socket.subscribers = 2"));
        assert!(e(b().connect("tcp://*:5").build()).contains("socket.connect[0]"));
        assert!(e(SocketConfig::builder(SocketType::Push).build()).contains("no endpoint"));
    }

    #[test]
    fn bind_forms() {
        for ep in [
            "tcp://*:*",
            "tcp://*:0",
            "tcp://127.0.0.1:5000",
            "tcp://lo:5000",
            "ipc://*",
            "shm://frames-1",
        ] {
            Endpoint::parse(ep, Attach::Bind, "k").unwrap();
        }
        assert!(Endpoint::parse("shm://a/b", Attach::Bind, "k").is_err());
        assert!(Endpoint::parse(
            &format!("ipc:///tmp/{}", "x".repeat(120)),
            Attach::Bind,
            "k"
        )
        .is_err());
    }

    #[test]
    fn heartbeat_is_read_checked_and_written_back() {
        let c = SocketConfig::from_json(
            r#"{"socket":{"type":"PULL","connect":["tcp://h:1"],"heartbeat_ms":250}}"#,
        )
        .unwrap();
        assert_eq!(c.heartbeat(), Some(Duration::from_millis(250)));
        assert_eq!(SocketConfig::from_value(&c.to_json()).unwrap(), c);
        let c = SocketConfig::from_json(r#"{"socket":{"type":"PULL","connect":["tcp://h:1"]}}"#)
            .unwrap();
        assert_eq!(c.heartbeat(), None);
        assert!(!c.to_json().to_string().contains("heartbeat"));
        let e = err(r#"{"socket":{"type":"PULL","connect":["tcp://h:1"],"heartbeat_ms":-1}}"#);
        assert!(e.contains("socket.heartbeat_ms") && e.contains("-1"), "{e}");
        let e = SocketConfig::builder(SocketType::Pull)
            .connect("tcp://h:1")
            .heartbeat(Duration::from_secs(2_000))
            .build()
            .unwrap_err()
            .to_string();
        assert!(e.contains("socket.heartbeat_ms"), "{e}");
    }

    #[test]
    fn a_default_shm_ring_leaves_room_for_several_in_64_mib() {
        assert_eq!(ShmSettings::default().ring_bytes(), DEFAULT_SHM_RING_BYTES);
        // Docker's default /dev/shm holds seven: a graph's several rings fit.
        const _: () = assert!(7 * DEFAULT_SHM_RING_BYTES < 64 << 20);
    }
}
