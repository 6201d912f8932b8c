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
//!
//! Endpoints are `inproc://NAME`, `ipc://PATH`, `tcp://HOST:PORT` (HOST may be
//! `*`, an IPv4 address, `[IPv6]`, a host name or an interface when binding;
//! PORT may be `*` when binding) and `shm://NAME` (the shared-memory transport,
//! accepted here and served by the transport that implements it).
//!
//! Every problem is reported as [`Error::Config`] naming the key and value.

use crate::error::{Error, Result};
use serde_json::Value;
use std::fmt;

/// ZeroMQ socket types, as PTMP's config names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SocketType {
    Pair,
    Pub,
    Sub,
    Req,
    Rep,
    Dealer,
    Router,
    Pull,
    Push,
    XPub,
    XSub,
    Stream,
}

impl SocketType {
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
    Inproc,
    Ipc,
    Tcp,
    Shm,
}

impl Transport {
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
    Bind,
    Connect,
}

impl Attach {
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

/// Default receive high-water mark, as PTMP.
pub const DEFAULT_HWM: i32 = 1000;
/// Default time a dropped sender waits for its queue to drain.
pub const DEFAULT_LINGER_MS: i32 = 2000;
/// Default bound on waiting for subscribers.
pub const DEFAULT_SUBSCRIBERS_TIMEOUT_MS: u64 = 10_000;

/// A validated socket configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketConfig {
    pub stype: SocketType,
    pub bind: Vec<Endpoint>,
    pub connect: Vec<Endpoint>,
    /// Receive high-water mark (`rcvhwm`, else `hwm`, else 1000).
    pub rcvhwm: i32,
    /// Send high-water mark, if set.
    pub sndhwm: Option<i32>,
    pub linger_ms: i32,
    /// SUB subscription prefixes.
    pub subscribe: Vec<Vec<u8>>,
    /// PUB: number of subscribers to wait for before the first send.
    pub subscribers: usize,
    pub subscribers_timeout_ms: u64,
    /// shm:// channels: slots in the ring (a power of two).
    pub shm_slots: usize,
    /// shm:// channels: largest message in bytes.
    pub shm_max_message: usize,
    /// shm:// PUSH: how long a send may wait for the slowest reader.
    pub shm_block_timeout_ms: u64,
    /// shm:// channels: `"private"` (default: mode 0600, this user's only)
    /// or `"group"` (mode 0660, shared with the segment's group).
    pub shm_mode: ptmp_shm::Access,
}

/// Default ring size of an shm:// channel (ptmp-shm's default).
pub const DEFAULT_SHM_SLOTS: usize = ptmp_shm::DEFAULT_SLOTS;
/// Default largest message of an shm:// channel (a TPSet of about 1500 TPs).
pub const DEFAULT_SHM_MAX_MESSAGE: usize = 65536;
/// Default bound on an shm:// PUSH waiting for its slowest reader
/// (ptmp-shm's default).
pub const DEFAULT_SHM_BLOCK_TIMEOUT_MS: u64 = ptmp_shm::DEFAULT_BLOCK_TIMEOUT.as_millis() as u64;

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
];

impl SocketConfig {
    /// A configuration with defaults and the given endpoints (validated).
    pub fn new(stype: SocketType, attach: Attach, endpoints: &[impl AsRef<str>]) -> Result<Self> {
        let key = format!("socket.{}", attach.name());
        let eps = endpoints
            .iter()
            .enumerate()
            .map(|(i, e)| Endpoint::parse(e.as_ref(), attach, &format!("{key}[{i}]")))
            .collect::<Result<Vec<_>>>()?;
        let (bind, connect) = match attach {
            Attach::Bind => (eps, vec![]),
            Attach::Connect => (vec![], eps),
        };
        let c = SocketConfig {
            stype,
            bind,
            connect,
            rcvhwm: DEFAULT_HWM,
            sndhwm: None,
            linger_ms: DEFAULT_LINGER_MS,
            subscribe: vec![Vec::new()],
            subscribers: 0,
            subscribers_timeout_ms: DEFAULT_SUBSCRIBERS_TIMEOUT_MS,
            shm_slots: DEFAULT_SHM_SLOTS,
            shm_max_message: DEFAULT_SHM_MAX_MESSAGE,
            shm_block_timeout_ms: DEFAULT_SHM_BLOCK_TIMEOUT_MS,
            shm_mode: ptmp_shm::Access::Private,
        };
        c.check_endpoints()?;
        Ok(c)
    }

    /// Parse a JSON text: `{"socket": {...}}`.
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
        let s = sock
            .as_object()
            .ok_or_else(|| Error::config("socket", sock.to_string(), "must be an object"))?;
        for k in s.keys() {
            if !KNOWN_KEYS.contains(&k.as_str()) {
                return Err(Error::config(
                    format!("socket.{k}"),
                    s[k].to_string(),
                    format!("unknown key; known keys are {}", KNOWN_KEYS.join(", ")),
                ));
            }
        }
        let tv = s
            .get("type")
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
        let bind = endpoints(s, "bind", Attach::Bind)?;
        let connect = endpoints(s, "connect", Attach::Connect)?;
        let hwm = int(s, "hwm", 0, i32::MAX as i64)?.map(|x| x as i32);
        let rcvhwm = int(s, "rcvhwm", 0, i32::MAX as i64)?.map(|x| x as i32);
        let sndhwm = int(s, "sndhwm", 0, i32::MAX as i64)?.map(|x| x as i32);
        let linger_ms = int(s, "linger_ms", -1, i32::MAX as i64)?
            .map(|x| x as i32)
            .unwrap_or(DEFAULT_LINGER_MS);
        let subscribers = int(s, "subscribers", 0, 1 << 20)?.unwrap_or(0) as usize;
        let subscribers_timeout_ms = int(s, "subscribers_timeout_ms", 0, i64::MAX)?
            .map(|x| x as u64)
            .unwrap_or(DEFAULT_SUBSCRIBERS_TIMEOUT_MS);
        let shm_slots = int(
            s,
            "shm_slots",
            ptmp_shm::MIN_SLOTS as i64,
            ptmp_shm::MAX_SLOTS as i64,
        )?
        .map_or(DEFAULT_SHM_SLOTS, |x| x as usize);
        if !shm_slots.is_power_of_two() {
            return Err(Error::config(
                "socket.shm_slots",
                shm_slots.to_string(),
                "must be a power of two",
            ));
        }
        let shm_max_message = int(s, "shm_max_message", 1, ptmp_shm::MAX_MESSAGE_LIMIT as i64)?
            .map_or(DEFAULT_SHM_MAX_MESSAGE, |x| x as usize);
        let shm_block_timeout_ms = int(s, "shm_block_timeout_ms", 0, i64::MAX)?
            .map_or(DEFAULT_SHM_BLOCK_TIMEOUT_MS, |x| x as u64);
        let shm_mode = match s.get("shm_mode") {
            None => ptmp_shm::Access::Private,
            Some(Value::String(m)) if m == "private" => ptmp_shm::Access::Private,
            Some(Value::String(m)) if m == "group" => ptmp_shm::Access::Group,
            Some(other) => {
                return Err(Error::config(
                    "socket.shm_mode",
                    other.to_string(),
                    "must be \"private\" (mode 0600, this user only) or \"group\" (mode 0660, shared with the segment's group)",
                ))
            }
        };
        let subscribe = match s.get("subscribe") {
            None => vec![Vec::new()],
            Some(Value::String(p)) => vec![p.as_bytes().to_vec()],
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    p.as_str().map(|p| p.as_bytes().to_vec()).ok_or_else(|| {
                        Error::config(
                            format!("socket.subscribe[{i}]"),
                            p.to_string(),
                            "must be a string",
                        )
                    })
                })
                .collect::<Result<_>>()?,
            Some(other) => {
                return Err(Error::config(
                    "socket.subscribe",
                    other.to_string(),
                    "must be a string or a list of strings",
                ))
            }
        };
        if s.contains_key("subscribe") && !matches!(stype, SocketType::Sub | SocketType::XSub) {
            return Err(Error::config(
                "socket.subscribe",
                s["subscribe"].to_string(),
                format!("only a SUB socket subscribes, this one is {stype}"),
            ));
        }
        if subscribers > 0 && !matches!(stype, SocketType::Pub | SocketType::XPub) {
            return Err(Error::config(
                "socket.subscribers",
                subscribers.to_string(),
                format!("only a PUB socket waits for subscribers, this one is {stype}"),
            ));
        }
        let c = SocketConfig {
            stype,
            bind,
            connect,
            rcvhwm: rcvhwm.or(hwm).unwrap_or(DEFAULT_HWM),
            sndhwm,
            linger_ms,
            subscribe,
            subscribers,
            subscribers_timeout_ms,
            shm_slots,
            shm_max_message,
            shm_block_timeout_ms,
            shm_mode,
        };
        c.check_endpoints()?;
        Ok(c)
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

    /// All endpoints with how each is attached, binds first.
    pub fn endpoints(&self) -> impl Iterator<Item = (Attach, &Endpoint)> {
        self.bind
            .iter()
            .map(|e| (Attach::Bind, e))
            .chain(self.connect.iter().map(|e| (Attach::Connect, e)))
    }

    /// A one-line description: type and endpoints.
    pub fn describe(&self) -> String {
        let eps: Vec<String> = self
            .endpoints()
            .map(|(a, e)| format!("{}:{}", a.name(), e.address))
            .collect();
        format!("{} {}", self.stype, eps.join(","))
    }

    /// True when any endpoint uses `t`.
    pub fn uses(&self, t: Transport) -> bool {
        self.endpoints().any(|(_, e)| e.transport == t)
    }

    /// The configuration as PTMP-style JSON (ptmp's extra keys included when
    /// they differ from their defaults).
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
        if self.linger_ms != DEFAULT_LINGER_MS {
            s.insert("linger_ms".into(), self.linger_ms.into());
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
        if self.shm_slots != DEFAULT_SHM_SLOTS {
            s.insert("shm_slots".into(), self.shm_slots.into());
        }
        if self.shm_max_message != DEFAULT_SHM_MAX_MESSAGE {
            s.insert("shm_max_message".into(), self.shm_max_message.into());
        }
        if self.shm_mode == ptmp_shm::Access::Group {
            s.insert("shm_mode".into(), "group".into());
        }
        if self.shm_block_timeout_ms != DEFAULT_SHM_BLOCK_TIMEOUT_MS {
            s.insert(
                "shm_block_timeout_ms".into(),
                self.shm_block_timeout_ms.into(),
            );
        }
        if self.subscribers > 0 {
            s.insert("subscribers".into(), self.subscribers.into());
            s.insert(
                "subscribers_timeout_ms".into(),
                self.subscribers_timeout_ms.into(),
            );
        }
        serde_json::json!({ "socket": s })
    }
}

impl std::str::FromStr for SocketConfig {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::from_json(s)
    }
}

fn endpoints(
    s: &serde_json::Map<String, Value>,
    key: &str,
    attach: Attach,
) -> Result<Vec<Endpoint>> {
    let full = format!("socket.{key}");
    match s.get(key) {
        None | Some(Value::Null) => Ok(vec![]),
        Some(Value::String(a)) => Ok(vec![Endpoint::parse(a, attach, &full)?]),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let k = format!("{full}[{i}]");
                let a = v.as_str().ok_or_else(|| {
                    Error::config(&k, v.to_string(), "an endpoint must be a string")
                })?;
                Endpoint::parse(a, attach, &k)
            })
            .collect(),
        Some(other) => Err(Error::config(
            full,
            other.to_string(),
            "must be an endpoint string or a list of them",
        )),
    }
}

fn int(s: &serde_json::Map<String, Value>, key: &str, min: i64, max: i64) -> Result<Option<i64>> {
    match s.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_i64() {
            Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
            _ => Err(Error::config(
                format!("socket.{key}"),
                v.to_string(),
                format!("must be an integer from {min} to {max}"),
            )),
        },
    }
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
        assert_eq!((c.rcvhwm, c.sndhwm, c.linger_ms), (7, Some(9), -1));
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
}
