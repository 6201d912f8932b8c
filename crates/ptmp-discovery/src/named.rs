//! Connecting by name: a socket config may name a peer's port,
//! `"connect": ["name://apa1-tcs/out"]`, instead of its address. The name
//! is resolved through presence when the socket is made, and again when
//! the peer comes back somewhere else.

use crate::{Announcement, Discovery, Error, Event, Peer, PortSpec, Result};
use ptmp::{Receiver, TPSet};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// The scheme of a name in place of an address.
pub const NAME_SCHEME: &str = ptmp::names::NAME_SCHEME;

/// How long a socket waits for a name it connects to, unless told.
pub const DEFAULT_RESOLVE_TIMEOUT: Duration = Duration::from_secs(30);

/// Presence as the sockets of this process see it: resolves the names they
/// connect to (waiting up to its timeout) and announces the names they
/// bind, through one [`Discovery`]. [`install`] makes it the process's.
pub struct NameService {
    inner: Arc<Inner>,
}

struct Inner {
    discovery: Discovery,
    timeout: Duration,
    /// This process's announced names, `node/port`.
    announced: Mutex<HashMap<String, Announcement>>,
}

impl NameService {
    /// The discovery it resolves and announces with.
    pub fn discovery(&self) -> &Discovery {
        &self.inner.discovery
    }

    /// How long a name is waited for.
    pub fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    /// The names this process announces now, `node/port`, sorted.
    pub fn announced(&self) -> Vec<String> {
        let mut v: Vec<String> = lock(&self.inner.announced).keys().cloned().collect();
        v.sort();
        v
    }

    /// Announces `node`'s `port` at `endpoint` until the process ends,
    /// [`NameService::withdraw_all`], or the name is announced again by
    /// this process. The error names a name another process holds.
    pub fn announce(&self, node: &str, port: &str, endpoint: &str) -> Result<()> {
        use ptmp::names::Presence;
        Hook(self.inner.clone())
            .announce(node, port, endpoint, None)
            .map_err(Error::Config)
    }

    /// Withdraws the names among `names` (`node/port`) this process
    /// announces, as a run whose agents have ended does; the others stay.
    pub fn withdraw(&self, names: &[String]) {
        let gone: Vec<Announcement> = {
            let mut held = lock(&self.inner.announced);
            names.iter().filter_map(|n| held.remove(n)).collect()
        };
        drop(gone);
    }

    /// Withdraws every name this process announced (goodbye packets), as
    /// a process does before it exits so that its peers see it leave at
    /// once rather than at the next liveness check.
    pub fn withdraw_all(&self) {
        let all: Vec<Announcement> = lock(&self.inner.announced)
            .drain()
            .map(|(_, a)| a)
            .collect();
        drop(all);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

struct Hook(Arc<Inner>);

impl Hook {
    fn located(&self, p: Peer) -> ptmp::names::Located {
        ptmp::names::Located {
            address: p.endpoint(),
            signed: p.signed_at.is_some(),
            curve_key: p.curve_key,
        }
    }
}

impl ptmp::names::Presence for Hook {
    fn resolve(&self, node: &str, port: &str) -> std::result::Result<ptmp::names::Located, String> {
        self.0
            .discovery
            .resolve(node, port, self.0.timeout)
            .map(|p| self.located(p))
            .map_err(|e| e.to_string())
    }

    fn current(&self, node: &str, port: &str) -> Option<ptmp::names::Located> {
        self.0
            .discovery
            .resolve(node, port, Duration::ZERO)
            .ok()
            .map(|p| self.located(p))
    }

    fn announce(
        &self,
        node: &str,
        port: &str,
        endpoint: &str,
        curve_key: Option<&str>,
    ) -> std::result::Result<(), String> {
        let key = format!("{node}/{port}");
        // Announced again (the socket was made again): the old one goes
        // first, or it would hold the name against us.
        let old = lock(&self.0.announced).remove(&key);
        drop(old);
        let a = self
            .0
            .discovery
            .announce(
                node,
                &[PortSpec {
                    name: port.to_string(),
                    address: endpoint.to_string(),
                    curve_key: curve_key.map(str::to_string),
                }],
            )
            .map_err(|e| e.to_string())?;
        lock(&self.0.announced).insert(key, a);
        Ok(())
    }
}

/// Makes `discovery` the presence of this process's sockets: their
/// `name://` connects wait up to `timeout` for the name, their `name://`
/// binds are announced. Fails when a presence was installed already (one
/// per process). Keep the returned service to withdraw the names at exit.
pub fn install(discovery: Discovery, timeout: Duration) -> Result<NameService> {
    let inner = Arc::new(Inner {
        discovery,
        timeout,
        announced: Mutex::new(HashMap::new()),
    });
    if !ptmp::names::install(Box::new(Hook(inner.clone()))) {
        return Err(Error::Config(
            "presence for names is already on in this process".into(),
        ));
    }
    Ok(NameService { inner })
}

/// `name://NODE/PORT` as `(node, port)`; `None` for an ordinary address,
/// an error for a name that is not of that form.
pub fn parse_name(address: &str) -> Option<Result<(String, String)>> {
    let rest = address.strip_prefix(NAME_SCHEME)?;
    Some(match rest.split_once('/') {
        Some((n, p)) if !n.is_empty() && !p.is_empty() && !p.contains('/') => {
            Ok((n.to_string(), p.to_string()))
        }
        _ => Err(Error::Config(format!(
            "{address:?}: a name is written name://NODE/PORT"
        ))),
    })
}

/// The names in a config's `socket.connect`, in order.
pub fn names_in(config: &Value) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for a in connect_list(config) {
        if let Some(n) = a.as_str().and_then(parse_name) {
            out.push(n?);
        }
    }
    Ok(out)
}

fn connect_list(config: &Value) -> Vec<Value> {
    match config.get("socket").and_then(|s| s.get("connect")) {
        Some(Value::Array(a)) => a.clone(),
        Some(v @ Value::String(_)) => vec![v.clone()],
        _ => Vec::new(),
    }
}

/// The config with every `name://` in `socket.connect` replaced by the
/// address of the peer announcing it (waiting up to `timeout` for each),
/// and the peers used, in the order of the names.
pub fn resolve_config(
    d: &Discovery,
    config: &Value,
    timeout: Duration,
) -> Result<(Value, Vec<Peer>)> {
    let deadline = crate::after(timeout);
    let mut peers = Vec::new();
    let mut list = Vec::new();
    for a in connect_list(config) {
        match a.as_str().and_then(parse_name) {
            Some(n) => {
                let (node, port) = n?;
                let left = deadline.saturating_duration_since(Instant::now());
                let p = d.resolve(&node, &port, left).map_err(|e| match e {
                    Error::NotFound { name, group, .. } => Error::NotFound {
                        name,
                        group,
                        waited: timeout,
                    },
                    e => e,
                })?;
                list.push(Value::String(p.endpoint()));
                peers.push(p);
            }
            None => list.push(a),
        }
    }
    let mut out = config.clone();
    if let Some(s) = out.get_mut("socket").and_then(Value::as_object_mut) {
        if s.contains_key("connect") {
            s.insert("connect".into(), Value::Array(list));
        }
    }
    Ok((out, peers))
}

/// A [`Receiver`] whose connect addresses may be names. When a named peer
/// comes back at another address (another host, port or process), the
/// receiver reconnects there; what the old socket had already received is
/// delivered first, so nothing that reached this process is lost. What
/// was still inside a peer that died is lost with it.
pub struct NamedReceiver {
    config: Value,
    names: Vec<(String, String)>,
    peers: Vec<Peer>,
    rx: Receiver,
    events: mpsc::Receiver<Event>,
    held: VecDeque<TPSet>,
    moves: u64,
}

/// How long one wait on the socket lasts before the presence events are
/// looked at again.
const SLICE: Duration = Duration::from_millis(100);

impl NamedReceiver {
    /// Makes the receiver from a JSON config (`{"socket": {...}}`),
    /// waiting up to `timeout` for each named peer; the error names a name
    /// that did not appear. `d` must live as long as the receiver follows
    /// its peers.
    pub fn new(d: &Discovery, config: &str, timeout: Duration) -> Result<NamedReceiver> {
        let config: Value = serde_json::from_str(config)
            .map_err(|e| Error::Config(format!("socket config is not JSON: {e}")))?;
        let names = names_in(&config)?;
        let events = d.subscribe();
        let (resolved, peers) = resolve_config(d, &config, timeout)?;
        let rx = Receiver::new(ptmp::SocketConfig::from_value(&resolved).map_err(sock_err)?)
            .map_err(sock_err)?;
        Ok(NamedReceiver {
            config,
            names,
            peers,
            rx,
            events,
            held: VecDeque::new(),
            moves: 0,
        })
    }

    /// The peers it is connected to now, one per name.
    pub fn peers(&self) -> &[Peer] {
        &self.peers
    }

    /// How many times it reconnected because a peer moved.
    pub fn moves(&self) -> u64 {
        self.moves
    }

    /// Receives one TPSet, `Ok(None)` when `timeout` passes first (`None`
    /// waits for ever), following named peers that move meanwhile.
    pub fn recv(&mut self, timeout: Option<Duration>) -> Result<Option<TPSet>> {
        let deadline = timeout.map(crate::after);
        loop {
            self.follow()?;
            if let Some(t) = self.held.pop_front() {
                return Ok(Some(t));
            }
            let slice = match deadline {
                Some(d) => SLICE.min(d.saturating_duration_since(Instant::now())),
                None => SLICE,
            };
            if let Some(t) = self.rx.recv(Some(slice)).map_err(sock_err)? {
                return Ok(Some(t));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(None);
            }
        }
    }

    /// Looks at presence events; if a named peer joined at another address,
    /// keeps what the old socket holds and connects a new one there.
    fn follow(&mut self) -> Result<()> {
        let mut moved = false;
        while let Ok(e) = self.events.try_recv() {
            let Event::Joined(p) = e else { continue };
            for (i, (node, port)) in self.names.iter().enumerate() {
                if &p.node == node && &p.port == port && p.endpoint() != self.peers[i].endpoint() {
                    self.peers[i] = p.clone();
                    moved = true;
                }
            }
        }
        if !moved {
            return Ok(());
        }
        let mut list = Vec::new();
        let mut i = 0;
        for a in connect_list(&self.config) {
            if a.as_str().and_then(parse_name).is_some() {
                list.push(Value::String(self.peers[i].endpoint()));
                i += 1;
            } else {
                list.push(a);
            }
        }
        let mut cfg = self.config.clone();
        if let Some(s) = cfg.get_mut("socket").and_then(Value::as_object_mut) {
            s.insert("connect".into(), Value::Array(list));
        }
        let fresh = Receiver::new(ptmp::SocketConfig::from_value(&cfg).map_err(sock_err)?)
            .map_err(sock_err)?;
        // Whatever already arrived on the old socket is delivered first.
        while let Some(t) = self.rx.recv(Some(Duration::ZERO)).map_err(sock_err)? {
            self.held.push_back(t);
        }
        self.rx = fresh;
        self.moves += 1;
        Ok(())
    }
}

fn sock_err(e: ptmp::Error) -> Error {
    Error::Socket(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_from_connect() {
        let v: Value = serde_json::from_str(
            r#"{"socket": {"type": "PULL", "connect": ["name://apa1-tcs/out", "tcp://h:1"]}}"#,
        )
        .unwrap();
        assert_eq!(
            names_in(&v).unwrap(),
            [("apa1-tcs".to_string(), "out".to_string())]
        );
        assert!(parse_name("tcp://x:1").is_none());
        assert!(parse_name("name://nodeonly").unwrap().is_err());
        assert!(parse_name("name://a/b/c").unwrap().is_err());
    }
}
