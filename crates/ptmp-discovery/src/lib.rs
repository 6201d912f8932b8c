//! Presence of ptmp nodes on the local network, over DNS-SD on multicast
//! DNS (RFC 6762, RFC 6763): the protocol of Bonjour and Avahi, so any
//! implementation of it can list ptmp nodes, and announce to them.
//!
//! Each announced port of a node is one service instance of type
//! [`SERVICE_TYPE`]. Its TXT record carries the node and port names, the
//! port's address and transport, the host, pid, start time, the group and
//! the layout version; with a shared secret, also the instance name, the
//! host's addresses, the signing time and an HMAC-SHA256 of all of them
//! (`sig`), signed again while it runs, so that a captured announcement
//! can be neither altered, nor replayed under another name or address, nor
//! long after. A [`Discovery`] browses for the others, keeps the table of
//! who is present, sends [`Event`]s when a peer joins or leaves, resolves
//! a node's port by name, and announces ports of its own.
//!
//! How fast a change is seen (defaults, quiet network):
//! - a new port is listed by the others within about 2 s of its
//!   announcement (probing takes 0.75 s, the announcement follows);
//! - a port withdrawn cleanly (goodbye packet) is gone within about 1 s;
//! - a process that dies without a word (kill -9, power loss, cable) is
//!   noticed by the liveness check: each peer is asked again every
//!   [`Config::liveness`] and dropped when it has not answered within
//!   [`Config::liveness_timeout`], so within liveness + timeout + 1 s
//!   (6 s with the defaults). Without that check multicast DNS would keep
//!   it for its record lifetime, 120 s.
//!
//! A socket config may name a peer's port instead of its address,
//! `"connect": ["name://apa1-tcs/out"]`, and bind a port under a name,
//! `"bind": ["name://apa1-tcs/out"]`. [`install`] makes a [`Discovery`]
//! the resolver of every socket of the process (through
//! `ptmp::names`); the agents' sockets then follow a named peer that
//! comes back elsewhere by themselves. [`resolve_config`] and
//! [`NamedReceiver`] do the same for one JSON config without installing
//! anything.
//!
//! Nothing here starts by itself: presence is on only where a program
//! makes a [`Discovery`].
//!
//! ```no_run
//! use ptmp_discovery::{Config, Discovery, Event, PortSpec};
//! use std::time::Duration;
//!
//! let d = Discovery::start(Config { group: "exp1".into(), ..Config::default() })?;
//! // Announced as long as `_ann` lives; dropped, it says goodbye.
//! let _ann = d.announce("apa1-tcs", &[PortSpec {
//!     name: "out".into(),
//!     address: "tcp://*:5000".into(),
//!     curve_key: None,
//! }])?;
//! for p in d.peers() {
//!     println!("{} {} {} pid {} up {:?}", p.name(), p.endpoint(), p.host, p.pid, p.uptime());
//! }
//! let events = d.subscribe();
//! if let Ok(Event::Joined(p)) = events.recv_timeout(Duration::from_secs(5)) {
//!     println!("joined {}", p.name());
//! }
//! let peer = d.resolve("apa2-tcs", "out", Duration::from_secs(10))?;
//! println!("connect to {}", peer.endpoint());
//! # Ok::<(), ptmp_discovery::Error>(())
//! ```

mod announce;
mod named;
pub mod process;
mod txt;
mod worker;

pub use named::{install, names_in, parse_name, resolve_config, NameService, NamedReceiver};
pub use named::{DEFAULT_RESOLVE_TIMEOUT, NAME_SCHEME};

pub use txt::{name_problem, sign, signature_ok, signed_text, MAX_NAME_BYTES, MAX_TXT_BYTES};
pub use txt::{seal, MAX_FIELD_BYTES, SIGNATURE_VERSION, TXT_VERSION};

use announce::Origin;
use mdns_sd::ServiceDaemon;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use worker::Worker;

/// The DNS-SD service type every ptmp port is announced under.
pub const SERVICE_TYPE: &str = "_ptmp._tcp.local.";

/// The TXT field carrying the public key (Z85) of the CURVE server bound
/// at an announced port; absent for a port that is not one.
pub const CURVE_KEY_FIELD: &str = "ck";

/// The group of nodes that set none.
pub const DEFAULT_GROUP: &str = "default";

/// What can go wrong with presence.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The multicast DNS service could not start or refused a request.
    #[error("discovery: multicast DNS: {0}")]
    Mdns(String),
    /// A name, group or address that cannot be announced.
    #[error("discovery: {0}")]
    Config(String),
    /// Another process already announces this node's port in this group.
    #[error(
        "discovery: {name} is already announced by {existing}; refusing to announce it again from {ours}"
    )]
    Duplicate {
        /// `node/port`.
        name: String,
        /// Where the one already present is (address, host, pid).
        existing: String,
        /// Where this one would have been.
        ours: String,
    },
    /// A socket made for a named peer failed.
    #[error("discovery: socket: {0}")]
    Socket(String),
    /// No peer announced the name within the time given.
    #[error("discovery: no peer announced {name} in group {group:?} within {waited:?}")]
    NotFound {
        /// `node/port`.
        name: String,
        /// The group searched.
        group: String,
        /// How long it was waited for.
        waited: Duration,
    },
}

/// The result of presence calls.
pub type Result<T> = std::result::Result<T, Error>;

/// How presence behaves; [`Config::default`] is the default group, no
/// secret, liveness every 3 s with 2 s to answer.
#[derive(Debug, Clone)]
pub struct Config {
    /// Only peers of this group are seen, and ours are announced in it: two
    /// experiments on one network use two groups.
    pub group: String,
    /// With a secret, announcements are signed (with their instance name,
    /// addresses and signing time) and only those signed with the same
    /// secret, recently, are accepted (the others are counted as forged).
    pub secret: Option<Vec<u8>>,
    /// With a secret: how far a signing time may be from the local clock,
    /// either way, for an announcement to be taken as fresh. Our own are
    /// signed again every eighth of it; a peer whose last signature is
    /// older is dropped. It covers the clock difference between hosts too.
    pub max_age: Duration,
    /// How often each known peer is asked whether it is still there.
    pub liveness: Duration,
    /// How long a peer has to answer before it is dropped as gone.
    pub liveness_timeout: Duration,
    /// How long [`Discovery::announce`] listens, counted from the start of
    /// the [`Discovery`], before it claims a name, so that a name already
    /// present is seen and refused.
    pub settle: Duration,
    /// The most ports listed at once; announcements beyond are counted
    /// ([`Counters::table_full`]) and ignored, so a flood of made-up
    /// names cannot exhaust memory.
    pub max_peers: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            group: DEFAULT_GROUP.to_string(),
            secret: None,
            max_age: Duration::from_secs(120),
            liveness: Duration::from_secs(3),
            liveness_timeout: Duration::from_secs(2),
            settle: Duration::from_millis(1500),
            max_peers: 4096,
        }
    }
}

impl Config {
    /// How long after a silent death a peer is still listed, at most (the
    /// liveness period, its timeout and a second for the queries to go out).
    pub fn leave_bound(&self) -> Duration {
        self.liveness
            .saturating_add(self.liveness_timeout)
            .saturating_add(Duration::from_secs(1))
    }

    /// How often our signed announcements are signed again: an eighth of
    /// [`Config::max_age`], so that a few lost refreshes or a few seconds
    /// of clock difference do not make them stale.
    pub fn refresh_period(&self) -> Duration {
        self.max_age / 8
    }
}

/// One port to announce: its name and the address peers connect to
/// (`tcp://host:port`; a `*` or `0.0.0.0` host is replaced by each peer
/// with the address the announcement came from).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortSpec {
    /// The port's name within its node, as in a graph (`out`, `in`).
    pub name: String,
    /// The address as a ZeroMQ endpoint.
    pub address: String,
    /// The public key (Z85) of the CURVE server bound there, if it is
    /// one: clients that connect by name take it from the announcement
    /// (with a secret, it is signed with the rest).
    pub curve_key: Option<String>,
}

/// One announced port of one peer, as read from its TXT record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// The node's name.
    pub node: String,
    /// The port's name within the node.
    pub port: String,
    /// The address as announced (may have a wildcard host).
    pub address: String,
    /// The transport, the address's scheme (`tcp`, `ipc`, `shm`, ...).
    pub transport: String,
    /// The host name the peer reports.
    pub host: String,
    /// The announcing process's id on its host.
    pub pid: u32,
    /// When the announcing process started, seconds since 1970.
    pub start: u64,
    /// The group it announces in.
    pub group: String,
    /// The TXT layout version.
    pub version: String,
    /// The DNS-SD instance name (unique per announcement).
    pub instance: String,
    /// The IP addresses multicast DNS resolved for it; with a secret, only
    /// those its signature covers.
    pub ips: Vec<IpAddr>,
    /// With a secret, when the announcement was signed (seconds since
    /// 1970, by the announcer's clock); `None` without one.
    pub signed_at: Option<u64>,
    /// The public key (Z85) of the CURVE server at this port, if its
    /// announcement carries one (signed, with a secret).
    pub curve_key: Option<String>,
}

impl Peer {
    /// `node/port`, the name other configs use for this port.
    pub fn name(&self) -> String {
        format!("{}/{}", self.node, self.port)
    }

    /// Where it is, for messages: address, host and pid.
    pub fn location(&self) -> String {
        format!("{} on {} (pid {})", self.address, self.host, self.pid)
    }

    /// How long the announcing process has run, by the local clock.
    pub fn uptime(&self) -> Duration {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Duration::from_secs(now.saturating_sub(self.start))
    }

    /// The address to connect to: the announced one, with a wildcard host
    /// (`*`, `0.0.0.0`, `[::]`) replaced by the first resolved IPv4 address
    /// (a non-loopback one if there is any).
    pub fn endpoint(&self) -> String {
        let Some((scheme, rest)) = self.address.split_once("://") else {
            return self.address.clone();
        };
        let Some((host, port)) = rest.rsplit_once(':') else {
            return self.address.clone();
        };
        if !matches!(host, "*" | "0.0.0.0" | "[::]" | "::") {
            return self.address.clone();
        }
        let v4 = |loopback: bool| {
            self.ips
                .iter()
                .find(|ip| ip.is_ipv4() && ip.is_loopback() == loopback)
                .copied()
        };
        match v4(false).or_else(|| v4(true)) {
            Some(ip) => format!("{scheme}://{ip}:{port}"),
            None => self.address.clone(),
        }
    }

    /// Whether `self` announced before `other` (earlier start, then instance
    /// name): the one that keeps a name claimed twice.
    fn senior_to(&self, other: &Peer) -> bool {
        (self.start, &self.instance) < (other.start, &other.instance)
    }
}

/// A change in who is present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A peer's port appeared.
    Joined(Peer),
    /// A peer's port went away (goodbye, or no answer to the liveness check).
    Left(Peer),
    /// Two announcements claim one name: the senior one is kept, the other
    /// refused (not listed; if it is ours, it is withdrawn when the senior
    /// is signed with the secret since ours began, see
    /// [`Announcement::refused`]).
    Duplicate {
        /// The one kept.
        kept: Box<Peer>,
        /// The newcomer, refused.
        refused: Box<Peer>,
    },
}

/// Announcements seen and ignored, by reason, since the [`Discovery`]
/// started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Missing or unreadable fields, unknown layout version, bad names.
    pub malformed: u64,
    /// Signature missing or wrong while a secret is set.
    pub forged: u64,
    /// TXT record or one of its fields over the size limits.
    pub oversized: u64,
    /// Announcements of another group (not hostile: just not ours).
    pub other_group: u64,
    /// Newcomers refused because their name was already present.
    pub duplicates: u64,
    /// Well-formed announcements ignored because [`Config::max_peers`]
    /// ports were listed already.
    pub table_full: u64,
}

#[derive(Default)]
struct AtomicCounters {
    malformed: AtomicU64,
    forged: AtomicU64,
    oversized: AtomicU64,
    other_group: AtomicU64,
    duplicates: AtomicU64,
    table_full: AtomicU64,
}

#[derive(Default)]
struct Table {
    /// Accepted peers, by instance full name.
    peers: HashMap<String, Peer>,
    /// Refused duplicates, by instance full name (not listed).
    refused: HashMap<String, Peer>,
    /// Our own announcements, by instance full name.
    own: HashMap<String, Own>,
    /// Our own announcements withdrawn because a senior held the name.
    own_refused: HashMap<String, Error>,
    /// With a secret: the latest signing time seen of each instance, so
    /// that an older one (a replay) is refused.
    last_signed: HashMap<String, u64>,
    /// Signed instances that left: they come back only signed anew.
    gone: HashSet<String>,
    /// Instances asked again whether they are there, with the time the
    /// question ends. A second question while one is open is not sent: a
    /// responder answers a record at most once a second (RFC 6762,
    /// section 6), so a question sent just after its answer could go
    /// unanswered in time and drop a peer that is alive.
    asking: HashMap<String, Instant>,
    subscribers: Vec<mpsc::Sender<Event>>,
}

/// One of our announced ports, as needed to sign it again.
struct Own {
    /// The full name as registered (a `.` in the instance written `\.`).
    registered: String,
    /// The instance name, `NODE/PORT#TAG`.
    label: String,
    /// The multicast DNS host name of the announcing process.
    host: String,
    /// The layout's fields, unsigned.
    fields: BTreeMap<String, String>,
    /// With a secret, the signing time of its first announcement: a rival
    /// claim must be signed at or after it to make it give way.
    first_signed: Option<u64>,
    /// Withdrawn because a live senior holds the name.
    withdrawn: bool,
}

/// The instance full names this process announces (all its
/// [`Discovery`]s): a record of this process under any other name is a
/// replay of one of ours.
fn own_instances() -> MutexGuard<'static, HashSet<String>> {
    static OWN: std::sync::OnceLock<Mutex<HashSet<String>>> = std::sync::OnceLock::new();
    OWN.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

struct Shared {
    table: Mutex<Table>,
    changed: Condvar,
    counters: AtomicCounters,
    stop: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Table> {
        // A panic elsewhere while holding the lock leaves a table that is
        // still consistent (every update is one insert or remove).
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn publish(t: &mut Table, e: &Event) {
    t.subscribers.retain(|s| s.send(e.clone()).is_ok());
}

/// Presence on the network: browses for ptmp peers of one group, keeps
/// the table of who is present, and announces ports of its own. Dropping
/// it withdraws its announcements (goodbye packets) and stops.
pub struct Discovery {
    daemon: ServiceDaemon,
    shared: Arc<Shared>,
    config: Config,
    started: Instant,
    thread: Option<JoinHandle<()>>,
}

fn mdns_err(e: mdns_sd::Error) -> Error {
    Error::Mdns(e.to_string())
}

impl Discovery {
    /// Starts browsing (on every IPv4 interface, loopback included).
    pub fn start(config: Config) -> Result<Discovery> {
        if let Some(p) = name_problem("group", &config.group) {
            return Err(Error::Config(p));
        }
        // An hour at most: longer would mean no liveness check at all, and
        // keeps the deadlines computed from them far from any overflow.
        let hour = Duration::from_secs(3600);
        for (what, d) in [
            ("liveness period", config.liveness),
            ("liveness timeout", config.liveness_timeout),
        ] {
            if d.is_zero() || d > hour {
                return Err(Error::Config(format!(
                    "{what} {d:?}: give more than zero and at most an hour"
                )));
            }
        }
        // Signing times are whole seconds, and refreshed every eighth: at
        // least every 3 s, so that a refresh (multicast DNS sends a record
        // at most once a second) never hides the answers to two liveness
        // queries in a row.
        if config.max_age < Duration::from_secs(24) || config.max_age > hour {
            return Err(Error::Config(format!(
                "freshness window (max_age) {:?}: give at least 24 s and at most an hour",
                config.max_age
            )));
        }
        let daemon = ServiceDaemon::new().map_err(mdns_err)?;
        // IPv4 only: the addresses ptmp announces are IPv4, and one family
        // halves the traffic.
        daemon
            .disable_interface(mdns_sd::IfKind::IPv6)
            .map_err(mdns_err)?;
        let events = daemon.browse(SERVICE_TYPE).map_err(mdns_err)?;
        let shared = Arc::new(Shared {
            table: Mutex::new(Table::default()),
            changed: Condvar::new(),
            counters: AtomicCounters::default(),
            stop: AtomicBool::new(false),
        });
        let worker = Worker {
            daemon: daemon.clone(),
            shared: shared.clone(),
            config: config.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("ptmp-discovery".into())
            .spawn(move || worker.run(events))
            .map_err(|e| Error::Mdns(format!("cannot start the browsing thread: {e}")))?;
        Ok(Discovery {
            daemon,
            shared,
            config,
            started: Instant::now(),
            thread: Some(thread),
        })
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The peers present now (refused duplicates left out), sorted by name.
    pub fn peers(&self) -> Vec<Peer> {
        let mut v: Vec<Peer> = self.shared.lock().peers.values().cloned().collect();
        v.sort_by(|a, b| (a.name(), &a.instance).cmp(&(b.name(), &b.instance)));
        v
    }

    /// A stream of the changes from now on. The receiver may be dropped at
    /// any time.
    pub fn subscribe(&self) -> mpsc::Receiver<Event> {
        let (tx, rx) = mpsc::channel();
        self.shared.lock().subscribers.push(tx);
        rx
    }

    /// Announcements ignored so far, by reason.
    pub fn counters(&self) -> Counters {
        let c = &self.shared.counters;
        Counters {
            malformed: c.malformed.load(Ordering::Relaxed),
            forged: c.forged.load(Ordering::Relaxed),
            oversized: c.oversized.load(Ordering::Relaxed),
            other_group: c.other_group.load(Ordering::Relaxed),
            duplicates: c.duplicates.load(Ordering::Relaxed),
            table_full: c.table_full.load(Ordering::Relaxed),
        }
    }

    /// Waits up to `timeout` for a peer announcing `node`'s `port`, and
    /// returns it ([`Peer::endpoint`] is the address to connect to). The
    /// error names the name and the group when none came.
    pub fn resolve(&self, node: &str, port: &str, timeout: Duration) -> Result<Peer> {
        let deadline = after(timeout);
        let mut t = self.shared.lock();
        loop {
            if let Some(p) = t
                .peers
                .values()
                .filter(|p| p.node == node && p.port == port)
                .min_by(|a, b| (a.start, &a.instance).cmp(&(b.start, &b.instance)))
            {
                return Ok(p.clone());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::NotFound {
                    name: format!("{node}/{port}"),
                    group: self.config.group.clone(),
                    waited: timeout,
                });
            }
            t = self
                .shared
                .changed
                .wait_timeout(t, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Announces `node`'s ports. First listens until [`Config::settle`]
    /// has passed since the start; a port whose name a peer of the group
    /// already announces is checked again, and refused (with both
    /// locations) if that peer answers within [`Config::liveness_timeout`],
    /// taken over if it does not (a process that died and is replaced).
    /// The announcements last as long as the returned handle.
    pub fn announce(&self, node: &str, ports: &[PortSpec]) -> Result<Announcement> {
        if let Some(p) = name_problem("node", node) {
            return Err(Error::Config(p));
        }
        let origin = Origin::here(node);
        let ports = ports
            .iter()
            .map(|spec| Ok((spec, origin.fields(spec, &self.config.group)?)))
            .collect::<Result<Vec<_>>>()?;
        // Listen long enough to have heard the peers already present.
        let settle_left = self.config.settle.saturating_sub(self.started.elapsed());
        std::thread::sleep(settle_left);
        self.take_over(&origin, &ports)?;
        self.register(node, ports)
    }
}

impl Drop for Discovery {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // Shutting down sends goodbyes for what is still registered; wait
        // briefly for them to leave, not for ever.
        if let Ok(done) = self.daemon.shutdown() {
            let _ = done.recv_timeout(Duration::from_secs(1));
        }
    }
}

/// Ports announced by [`Discovery::announce`]; dropping it withdraws them
/// with goodbye packets.
pub struct Announcement {
    daemon: ServiceDaemon,
    shared: Arc<Shared>,
    fullnames: Vec<String>,
}

impl Announcement {
    /// The DNS-SD instance full names announced.
    pub fn instances(&self) -> &[String] {
        &self.fullnames
    }

    /// `Some(error naming both locations)` when one of these ports was
    /// withdrawn because a senior peer announced the same name at about
    /// the same time. Only a claim signed with the group's secret, at or
    /// after our own first signature, makes a port give way; without a
    /// secret a rival claim is reported ([`Event::Duplicate`]) but ends
    /// nothing.
    pub fn refused(&self) -> Option<String> {
        let t = self.shared.lock();
        self.fullnames
            .iter()
            .find_map(|f| t.own_refused.get(f).map(|e| e.to_string()))
    }
}

impl Drop for Announcement {
    fn drop(&mut self) {
        let mut waits = Vec::new();
        for f in &self.fullnames {
            // Under the lock, so that no refresh re-registers it after.
            let mut t = self.shared.lock();
            if let Some(own) = t.own.remove(f) {
                if let Ok(w) = self.daemon.unregister(&own.registered) {
                    waits.push(w);
                }
            }
            drop(t);
            own_instances().remove(f);
        }
        for w in waits {
            let _ = w.recv_timeout(Duration::from_secs(1));
        }
    }
}

/// The instant `d` from now; a duration too long to represent (a
/// timeout of 1e30 s from Python, say) is a century, which is for ever
/// here, never an overflow.
pub(crate) fn after(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d)
        .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 86400)))
        .unwrap_or(now)
}

/// A full name as multicast DNS carries it and reports it when heard: the
/// instance label with its `.` as is (a full name given to the daemon
/// writes it `\.`).
fn wire_name(fullname: &str) -> String {
    let mut out = String::with_capacity(fullname.len());
    let mut chars = fullname.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

/// The local clock, seconds since 1970.
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// This process's start time, seconds since 1970 (read once: the first
/// call's clock, which is close enough for seniority and uptime).
fn process_start() -> u64 {
    static START: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *START.get_or_init(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    })
}

/// The host's name as the kernel knows it.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

/// 8 hex digits, different for every announcement of every process: the
/// random keys of the standard library's hasher, with the pid and time.
fn unique_tag() -> String {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    format!("{:08x}", h.finish() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(addr: &str, ips: &[&str]) -> Peer {
        Peer {
            node: "n".into(),
            port: "p".into(),
            address: addr.into(),
            transport: "tcp".into(),
            host: "h".into(),
            pid: 1,
            start: 0,
            group: DEFAULT_GROUP.into(),
            version: TXT_VERSION.into(),
            instance: "i".into(),
            ips: ips.iter().map(|s| s.parse().unwrap()).collect(),
            signed_at: None,
            curve_key: None,
        }
    }

    #[test]
    fn a_wildcard_host_becomes_a_resolved_address() {
        let p = peer("tcp://*:5000", &["127.0.0.1", "10.0.0.2"]);
        assert_eq!(p.endpoint(), "tcp://10.0.0.2:5000");
        let p = peer("tcp://0.0.0.0:5000", &["127.0.0.1"]);
        assert_eq!(p.endpoint(), "tcp://127.0.0.1:5000");
        let p = peer("tcp://10.1.1.1:7", &["127.0.0.1"]);
        assert_eq!(p.endpoint(), "tcp://10.1.1.1:7");
        let p = peer("ipc:///tmp/x", &["127.0.0.1"]);
        assert_eq!(p.endpoint(), "ipc:///tmp/x");
    }

    #[test]
    fn the_leave_bound_adds_up_the_liveness_settings() {
        assert_eq!(Config::default().leave_bound(), Duration::from_secs(6));
        let c = Config {
            liveness: Duration::MAX,
            ..Config::default()
        };
        assert_eq!(c.leave_bound(), Duration::MAX);
    }

    #[test]
    fn an_endless_timeout_is_far_away_not_an_overflow() {
        assert!(after(Duration::MAX) > Instant::now() + Duration::from_secs(86400));
    }
}
