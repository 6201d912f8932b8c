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
//! | `heartbeat_ms` | ZeroMQ heartbeats: a connection silent for three intervals is dropped by a sender, ten by a receiver; 0 = none | 1000 for a socket that binds or connects by name, else none |
//! | `max_message` | largest message part (frame) in bytes a tcp or ipc connection may carry: a peer announcing a larger one is disconnected, a send of one fails | [`DEFAULT_MAX_MESSAGE`] (16 MiB) |
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

use std::time::Duration;

mod builder;
mod curve;
mod endpoint;

pub use builder::SocketConfigBuilder;
pub use endpoint::{Attach, Endpoint, SocketType, Transport};

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
/// Default largest message part a zmq connection carries, in bytes
/// (JSON `max_message`): 16 MiB. A TPSet is a few hundred bytes to tens of
/// kilobytes and a 1920x1080 camera frame 6.2 MB, so ordinary traffic
/// never comes near it, while a peer announcing a frame of gigabytes is
/// disconnected at its header instead of making the receiver allocate it.
pub const DEFAULT_MAX_MESSAGE: usize = 16 << 20;
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
const MAX_MESSAGE_RANGE: (i64, i64) = (1, i64::MAX);
const SHM_READER_GRACE_MS_RANGE: (i64, i64) = (0, u32::MAX as i64);
// Three intervals must fit ZeroMQ's heartbeat TTL (at most 6553.5 s).
const HEARTBEAT_MS_RANGE: (i64, i64) = (0, 1_000_000);

/// The heartbeat interval of a socket that binds or connects by name
/// (`name://`) and sets no `heartbeat_ms`: a peer that vanished without
/// closing its connections (power cut, cable pulled) is dropped after
/// three silent intervals by a sender (ten by a receiver, whose full queue
/// may keep it from hearing a live peer), instead of holding queued
/// messages until TCP gives up.
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
    "max_message",
    "curve",
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
    /// Largest message part of a zmq connection (`max_message`).
    max_message: usize,
    /// CURVE security of this socket's connections (`curve`).
    curve: Option<crate::curve::Curve>,
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
                max_message: DEFAULT_MAX_MESSAGE,
                curve: None,
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
        if let Some(n) = int(&s, "max_message", MAX_MESSAGE_RANGE)? {
            b = b.max_message(n as usize);
        }
        if let Some(c) = curve::parse(&s)? {
            b = b.curve(c);
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

    /// The socket's CURVE part (JSON `curve`), if its connections are
    /// secured.
    pub fn curve(&self) -> Option<&crate::curve::Curve> {
        self.curve.as_ref()
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

    /// This configuration connecting to `connect` instead.
    fn with_connect(&self, connect: Vec<Endpoint>) -> SocketConfig {
        SocketConfig {
            connect,
            ..self.clone()
        }
    }

    /// This configuration with every `name://` it connects to replaced by
    /// the address its peer announces, waiting for each as the installed
    /// presence allows; the error names the name that did not appear. A
    /// configuration without names comes back as it is. A socket made from
    /// the result can be followed with [`SocketConfig::moved`].
    pub fn resolve_names(&self) -> Result<SocketConfig> {
        if !self
            .connect
            .iter()
            .any(|e| crate::names::parse(&e.address).is_some())
        {
            return Ok(self.clone());
        }
        let mut list = Vec::with_capacity(self.connect.len());
        for e in &self.connect {
            let mut e = e.clone();
            e.address = crate::names::connect_address(&e.address)?.address;
            list.push(e);
        }
        Ok(self.with_connect(list))
    }

    /// For a configuration [`SocketConfig::resolve_names`] returned: `Some`
    /// configuration to make its socket again when a peer it connects to
    /// by name is now announced at another address (see
    /// [`crate::names::moved_address`]), `None` when nothing moved.
    pub fn moved(&self) -> Option<SocketConfig> {
        let mut any = false;
        let list = self
            .connect
            .iter()
            .map(|e| {
                let mut e = e.clone();
                if let Some(to) = crate::names::moved_address(&e.address) {
                    e.address = to;
                    any = true;
                }
                e
            })
            .collect();
        any.then(|| self.with_connect(list))
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

    /// The largest message part, in bytes, this socket's tcp and ipc
    /// connections carry (`max_message`, default [`DEFAULT_MAX_MESSAGE`];
    /// see [`SocketConfigBuilder::max_message`]).
    pub fn max_message(&self) -> usize {
        self.max_message
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

    /// This configuration waiting for `count` subscribers before its first
    /// send (see [`Self::subscribers`]).
    pub fn with_subscribers(&self, count: usize) -> SocketConfig {
        SocketConfig {
            subscribers: count,
            ..self.clone()
        }
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
        if self.max_message != DEFAULT_MAX_MESSAGE {
            s.insert("max_message".into(), self.max_message.into());
        }
        if let Some(c) = &self.curve {
            s.insert("curve".into(), curve::to_json(c));
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
mod tests;
