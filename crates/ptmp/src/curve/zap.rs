//! The ZAP handler: who may connect to a CURVE server of this process.
//!
//! libzmq asks a ZAP handler (RFC 27, bound at `inproc://zeromq.zap.01` in
//! the server socket's own context) about every client that completes a
//! CURVE handshake; with no handler bound it lets every client in. So each
//! context holding a CURVE server runs one handler thread here: the
//! process-wide shared context one that lives as long as the process,
//! each private context of a sender one that stops before the context
//! ends (a context's end waits for every socket in it, the handler's
//! included).
//!
//! A handler serves many server sockets: each sets its own ZAP domain, and
//! the handler looks the domain up in its rules to find that socket's
//! allow-list and counters. A request for a domain it does not know, a
//! mechanism other than CURVE, or a malformed request is refused.

use super::PublicKey;
use crate::error::{Error, Result};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The endpoint libzmq sends ZAP requests to, in each context.
const ZAP_ENDPOINT: &str = "inproc://zeromq.zap.01";

/// What one CURVE server socket admitted and refused, counted by its
/// context's ZAP handler as clients complete their handshakes.
#[derive(Debug, Default)]
pub struct Admitted {
    /// Clients let in.
    pub admitted: AtomicU64,
    /// Clients refused: their key is not on the server's allow-list, or
    /// their connection failed or ended in the handshake, before any key
    /// was shown (a plaintext ZeroMQ client, one holding the wrong server
    /// key, a peer sending bytes that are not ZeroMQ, a port probe),
    /// counted from the socket's monitor (`watch.rs`).
    pub refused: AtomicU64,
}

impl Admitted {
    /// `(admitted, refused)` so far.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.admitted.load(Ordering::Relaxed),
            self.refused.load(Ordering::Relaxed),
        )
    }
}

/// One server socket's rule: the keys it admits (`None`: any) and its
/// counters.
struct Rule {
    keys: Option<HashSet<[u8; 32]>>,
    counts: Arc<Admitted>,
}

type Rules = Arc<Mutex<HashMap<String, Rule>>>;

/// A running handler thread and the way to stop it.
struct Handler {
    stop: Option<zmq::Socket>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn unique() -> u64 {
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

impl Handler {
    fn start(ctx: &zmq::Context, rules: Rules) -> Result<Handler> {
        let rep = ctx.socket(zmq::REP).map_err(Error::zmq("zap socket"))?;
        rep.set_linger(0).map_err(Error::zmq("zap linger"))?;
        rep.bind(ZAP_ENDPOINT).map_err(|e| Error::Bind {
            endpoint: ZAP_ENDPOINT.into(),
            reason: format!("cannot start the CURVE admission handler: {e}"),
        })?;
        let addr = format!("inproc://ptmp-zap-stop-{}-{}", std::process::id(), unique());
        let stop_rx = ctx.socket(zmq::PAIR).map_err(Error::zmq("zap socket"))?;
        stop_rx.bind(&addr).map_err(Error::zmq("zap bind"))?;
        let stop = ctx.socket(zmq::PAIR).map_err(Error::zmq("zap socket"))?;
        stop.set_linger(0).map_err(Error::zmq("zap linger"))?;
        stop.connect(&addr).map_err(Error::zmq("zap connect"))?;
        let thread = std::thread::Builder::new()
            .name("ptmp-zap".into())
            .spawn(move || serve(&rep, &stop_rx, &rules))
            .map_err(|e| {
                Error::config(
                    "socket.curve",
                    "(handler)",
                    format!("cannot start the CURVE admission thread: {e}"),
                )
            })?;
        Ok(Handler {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Handler {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send("", 0);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(rep: &zmq::Socket, stop: &zmq::Socket, rules: &Rules) {
    loop {
        let mut items = [
            rep.as_poll_item(zmq::POLLIN),
            stop.as_poll_item(zmq::POLLIN),
        ];
        match zmq::poll(&mut items, -1) {
            Ok(_) => {}
            Err(zmq::Error::EINTR) => continue,
            Err(_) => return,
        }
        if items[1].is_readable() {
            return;
        }
        if !items[0].is_readable() {
            continue;
        }
        let Ok(request) = rep.recv_multipart(0) else {
            continue;
        };
        let reply = decide(&request, rules);
        if rep.send_multipart(reply, 0).is_err() {
            return;
        }
    }
}

/// The reply to one ZAP request: version, request id, status code, status
/// text, user id (the client's key in Z85 when admitted), metadata.
fn decide(request: &[Vec<u8>], rules: &Rules) -> [Vec<u8>; 6] {
    let id = request.get(1).cloned().unwrap_or_default();
    let reply = |code: &str, text: &str, user: String| {
        [
            b"1.0".to_vec(),
            id.clone(),
            code.as_bytes().to_vec(),
            text.as_bytes().to_vec(),
            user.into_bytes(),
            Vec::new(),
        ]
    };
    if request.len() < 6 || request[0] != b"1.0" {
        return reply("500", "malformed ZAP request", String::new());
    }
    let domain = String::from_utf8_lossy(&request[2]);
    let rules = rules.lock().unwrap_or_else(|p| p.into_inner());
    let Some(rule) = rules.get(domain.as_ref()) else {
        return reply(
            "400",
            "no CURVE server here uses this ZAP domain",
            String::new(),
        );
    };
    let key: Option<[u8; 32]> = request.get(6).and_then(|k| k.as_slice().try_into().ok());
    let admitted = match (request[5].as_slice(), key) {
        (b"CURVE", Some(k)) => rule.keys.as_ref().is_none_or(|set| set.contains(&k)),
        _ => false,
    };
    if admitted {
        rule.counts.admitted.fetch_add(1, Ordering::Relaxed);
        let user = key.map(|k| PublicKey(k).z85()).unwrap_or_default();
        reply("200", "OK", user)
    } else {
        rule.counts.refused.fetch_add(1, Ordering::Relaxed);
        reply("400", "client key not allowed", String::new())
    }
}

/// The handler of the process-wide shared context, started by the first
/// CURVE server made in it.
static SHARED: Mutex<Option<(Rules, Handler)>> = Mutex::new(None);

/// A server socket's place with its context's ZAP handler: its domain and
/// counters. Dropping it removes the socket's rule, then (for a private
/// context) stops the handler; drop it after the socket, before the
/// context's end.
pub(crate) struct Admission {
    rules: Rules,
    domain: String,
    counts: Arc<Admitted>,
    /// The handler of a private context, stopped with this admission.
    _own: Option<Handler>,
}

impl Admission {
    /// The ZAP domain the server socket must set.
    pub(crate) fn domain(&self) -> &str {
        &self.domain
    }

    /// The socket's counters, readable from any thread.
    pub(crate) fn counts(&self) -> Arc<Admitted> {
        self.counts.clone()
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut rules = self.rules.lock().unwrap_or_else(|p| p.into_inner());
        rules.remove(&self.domain);
        // `_own`, dropped after this, stops a private context's handler.
    }
}

/// Register a server socket admitting `keys` (`None`: any client) with the
/// handler of its context: the shared context's (started once), or a new
/// handler for a `private` context `ctx`.
pub(crate) fn admit(
    ctx: &zmq::Context,
    private: bool,
    keys: Option<Vec<PublicKey>>,
) -> Result<Admission> {
    let (rules, own) = if private {
        let rules = Rules::default();
        let h = Handler::start(ctx, rules.clone())?;
        (rules, Some(h))
    } else {
        let mut shared = SHARED.lock().unwrap_or_else(|p| p.into_inner());
        if shared.is_none() {
            let rules = Rules::default();
            let h = Handler::start(ctx, rules.clone())?;
            *shared = Some((rules, h));
        }
        let (rules, _) = shared.as_ref().expect("started above");
        (rules.clone(), None)
    };
    let domain = format!("ptmp-{}-{}", std::process::id(), unique());
    let counts = Arc::new(Admitted::default());
    let rule = Rule {
        keys: keys.map(|k| k.into_iter().map(|p| p.0).collect()),
        counts: counts.clone(),
    };
    rules
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(domain.clone(), rule);
    Ok(Admission {
        rules,
        domain,
        counts,
        _own: own,
    })
}
