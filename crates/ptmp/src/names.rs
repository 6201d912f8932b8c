//! Names in place of addresses: `name://NODE/PORT`.
//!
//! A socket config may connect to a peer's port by its name,
//! `"connect": ["name://apa1-tcs/out"]`, and bind a port under a name,
//! `"bind": ["name://apa1-tcs/out"]` (an ephemeral tcp port on every
//! interface, announced under that name). The names are looked up and
//! announced by a [`Presence`] installed once per process (the crate
//! `ptmp-discovery` provides one over multicast DNS); this crate only
//! knows the syntax and when to ask. Nothing here is on a message path:
//! names are resolved when a socket is made, and [`moved_address`] is asked only
//! by callers that choose to follow a peer (between messages, when a wait
//! found nothing).

use crate::error::{Error, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// The scheme of a name in place of an address.
pub const NAME_SCHEME: &str = "name://";

/// Where a named bind listens: an ephemeral tcp port on every interface.
pub const NAMED_BIND: &str = "tcp://*:*";

/// Where a name is announced now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The address to connect to.
    pub address: String,
    /// The public key (Z85) of the CURVE server bound there, when its
    /// announcement carries one.
    pub curve_key: Option<String>,
    /// Whether the announcement was signed with the group's secret: only
    /// then is its key taken to reach the server.
    pub signed: bool,
}

/// Looks names up and announces them: what a process installs (once) to
/// let its sockets use `name://` addresses.
pub trait Presence: Send + Sync {
    /// Waits (as long as the presence allows) for a peer announcing
    /// `node`'s `port`, and returns where to connect. The error says
    /// which name did not appear and how long it was waited for.
    fn resolve(&self, node: &str, port: &str) -> std::result::Result<Located, String>;
    /// Where `node`'s `port` is announced now, if anywhere; never waits.
    fn current(&self, node: &str, port: &str) -> Option<Located>;
    /// Announces `node`'s `port` at `endpoint` (an address this process
    /// has bound), with the public key of the CURVE server bound there if
    /// it is one, until the process ends or announces the name again.
    fn announce(
        &self,
        node: &str,
        port: &str,
        endpoint: &str,
        curve_key: Option<&str>,
    ) -> std::result::Result<(), String>;
}

static PRESENCE: OnceLock<Box<dyn Presence>> = OnceLock::new();
/// Set once any name was resolved, so that [`moved`] costs one load in a
/// process that never uses names.
static USED: AtomicBool = AtomicBool::new(false);

/// What one address handed out by [`connect_address`] stands for: the
/// name, and where it was announced.
#[derive(Clone)]
struct HandedOut {
    node: String,
    port: String,
    at: Located,
}

/// Which name each address handed out by [`connect_address`] stands for.
fn handed_out() -> &'static Mutex<HashMap<String, HandedOut>> {
    static M: OnceLock<Mutex<HashMap<String, HandedOut>>> = OnceLock::new();
    M.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Installs the process's presence; `false` if one was installed before
/// (the first stays).
pub fn install(p: Box<dyn Presence>) -> bool {
    PRESENCE.set(p).is_ok()
}

/// Whether a presence is installed.
pub fn installed() -> bool {
    PRESENCE.get().is_some()
}

/// `name://NODE/PORT` as `(NODE, PORT)`; `None` for any other address.
/// Does not check the parts (see [`check`]).
pub fn parse(address: &str) -> Option<(&str, &str)> {
    let rest = address.strip_prefix(NAME_SCHEME)?;
    Some(rest.split_once('/').unwrap_or((rest, "")))
}

/// Why `address`, a `name://` address, is not a valid name; `None` when it
/// is. Node and port are 1 to 24 letters, digits, `_`, `-` or `.`.
pub fn check(address: &str) -> Option<String> {
    let (node, port) = parse(address)?;
    for (what, s) in [("node", node), ("port", port)] {
        if s.is_empty() || s.len() > 24 {
            return Some(format!(
                "a name is name://NODE/PORT, with a {what} of 1 to 24 characters"
            ));
        }
        if !s
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return Some(format!(
                "the {what} {s:?} may hold only letters, digits, '_', '-' and '.'"
            ));
        }
    }
    None
}

fn presence(address: &str, attach: &str) -> Result<&'static dyn Presence> {
    PRESENCE.get().map(|b| b.as_ref()).ok_or_else(|| {
        let reason = "a name needs presence on the network, which is off: turn it on with a \
                      \"discovery\" key in the configuration, `--discovery GROUP` for ptmp send \
                      and recv, ptmp.use_discovery() in Python or ptmp_use_discovery() in C"
            .to_string();
        if attach == "bind" {
            Error::Bind {
                endpoint: address.to_string(),
                reason,
            }
        } else {
            Error::Connect {
                endpoint: address.to_string(),
                reason,
            }
        }
    })
}

/// Where to connect for `address`: itself, or for a name where its peer
/// announces it (waiting for it as the presence allows). An address a
/// name was resolved to before comes back with what that name announced.
pub fn connect_address(address: &str) -> Result<Located> {
    let Some((node, port)) = parse(address) else {
        let known = USED.load(Ordering::Relaxed).then(|| {
            handed_out()
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(address)
                .map(|h| h.at.clone())
        });
        return Ok(known.flatten().unwrap_or_else(|| Located {
            address: address.to_string(),
            curve_key: None,
            signed: false,
        }));
    };
    let p = presence(address, "connect")?;
    let at = p.resolve(node, port).map_err(|reason| Error::Connect {
        endpoint: address.to_string(),
        reason,
    })?;
    USED.store(true, Ordering::Relaxed);
    handed_out()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(
            at.address.clone(),
            HandedOut {
                node: node.to_string(),
                port: port.to_string(),
                at: at.clone(),
            },
        );
    Ok(at)
}

/// `address` for messages: an address a name was resolved to is shown as
/// `name://NODE/PORT at ADDRESS`.
pub(crate) fn shown(address: &str) -> String {
    if parse(address).is_none() && USED.load(Ordering::Relaxed) {
        if let Some(h) = handed_out()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(address)
        {
            return format!("{NAME_SCHEME}{}/{} at {address}", h.node, h.port);
        }
    }
    address.to_string()
}

/// Whether `address` is a name, or an address a name was resolved to in
/// this process (so the socket connecting there is following a name).
pub fn stands_for_name(address: &str) -> bool {
    parse(address).is_some()
        || (USED.load(Ordering::Relaxed)
            && handed_out()
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains_key(address))
}

/// The address to bind for `address`: itself, or [`NAMED_BIND`] for a
/// name, which needs an installed presence to be announced.
pub(crate) fn bind_address(address: &str) -> Result<Option<&'static str>> {
    if parse(address).is_none() {
        return Ok(None);
    }
    presence(address, "bind")?;
    Ok(Some(NAMED_BIND))
}

/// Announces a bound name at the address actually bound, with the public
/// key of the CURVE server bound there, if it is one.
pub(crate) fn announce_bound(address: &str, bound: &str, curve_key: Option<&str>) -> Result<()> {
    let Some((node, port)) = parse(address) else {
        return Ok(());
    };
    presence(address, "bind")?
        .announce(node, port, bound, curve_key)
        .map_err(|reason| Error::Bind {
            endpoint: address.to_string(),
            reason,
        })
}

/// For an address a socket connects to: `Some` address to connect to
/// instead when it was resolved from a name whose peer is now announced
/// elsewhere (it died and came back on another host, port or process),
/// `None` when it did not move. A peer not announced at all right now is
/// not a move: the socket keeps waiting for it where it was.
pub fn moved_address(address: &str) -> Option<String> {
    if !USED.load(Ordering::Relaxed) {
        return None;
    }
    let p = PRESENCE.get()?;
    let mut map = handed_out().lock().unwrap_or_else(|p| p.into_inner());
    let h = map.get(address).cloned()?;
    let now = p.current(&h.node, &h.port)?;
    if now.address == address {
        return None;
    }
    let to = now.address.clone();
    map.insert(to.clone(), HandedOut { at: now, ..h });
    Some(to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert_eq!(parse("name://a/b"), Some(("a", "b")));
        assert_eq!(parse("tcp://a:1"), None);
        assert!(check("name://apa1-tcs/out").is_none());
        assert!(check("name://apa1-tcs").unwrap().contains("port"));
        assert!(check("name://a/b/c").unwrap().contains("\"b/c\""));
        assert!(check("name:///out").unwrap().contains("node"));
        assert!(check(&format!("name://{}/o", "x".repeat(25)))
            .unwrap()
            .contains("24"));
    }

    #[test]
    fn without_presence_a_name_is_an_error_naming_it() {
        // No presence is installed in this test binary.
        let e = connect_address("name://far/out").unwrap_err().to_string();
        assert!(
            e.contains("name://far/out") && e.contains("discovery"),
            "{e}"
        );
        let at = connect_address("tcp://h:1").unwrap();
        assert_eq!((at.address.as_str(), at.curve_key), ("tcp://h:1", None));
    }
}
