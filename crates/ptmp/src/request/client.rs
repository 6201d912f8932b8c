//! The asking side: a DEALER that numbers its requests, keeps when each
//! must be answered by, and matches what comes back to what is out.

use super::frames::{self, Answered, WireId, ANSWER, REFUSED};
use super::{address_of, check_type, frames_kept, message_frames};
use crate::config::{SocketConfig, SocketType};
use crate::drain::Drain;
use crate::error::{Error, Failure, Result};
use crate::socket::{build, timeout_ms, Role};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// How many requests a client may have out at once unless told otherwise.
pub const DEFAULT_IN_FLIGHT: usize = 1024;

/// A request a client sent: what its answer comes back with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub u64);

/// What happened to a client's requests so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCounts {
    /// Requests sent.
    pub sent: u64,
    /// Answers received.
    pub answered: u64,
    /// Requests the server refused or could not read.
    pub refused: u64,
    /// Requests that ran out of time.
    pub timed_out: u64,
    /// Requests out when a server's connection ended.
    pub gone: u64,
    /// Answers to no request out (answered after its time ran out, or an
    /// id this client never sent), dropped.
    pub late: u64,
    /// Messages that were not a response, dropped.
    pub unreadable: u64,
}

/// The outcome of one request: its answer, or why there is none.
pub type Outcome = std::result::Result<Vec<u8>, Failure>;

/// Sends requests to one or more servers and gets their answers.
///
/// ```no_run
/// use std::time::Duration;
/// let mut c = ptmp::Client::connect("tcp://127.0.0.1:5680")?;
/// let answer = c.request(b"ping", Duration::from_secs(1))?;
/// # Ok::<(), ptmp::Error>(())
/// ```
pub struct Client {
    // Dropped in this order: the socket, then what watches it.
    sock: zmq::Socket,
    drain: Drain,
    address: String,
    /// Whether it connects over inproc, where no handshake is seen.
    inproc: bool,
    limit: usize,
    max_out: usize,
    next: u64,
    /// Requests out, by id: when each runs out of time, and that time.
    out: HashMap<u64, (Instant, Duration)>,
    /// No request out runs out of time before this (it may be earlier
    /// than the soonest deadline left, never later): until then the
    /// requests out need not be looked through.
    soonest: Option<Instant>,
    /// Outcomes known but not yet handed over.
    ready: VecDeque<(RequestId, Outcome)>,
    /// Connections seen ended so far.
    ended: u64,
    frames: Vec<zmq::Message>,
    counts: ClientCounts,
}

impl Client {
    /// A client of the server(s) at `address` (`tcp://HOST:PORT`,
    /// `ipc://PATH`, `inproc://NAME` or `name://NODE/PORT`).
    pub fn connect(address: &str) -> Result<Client> {
        Client::new(
            SocketConfig::builder(SocketType::Dealer)
                .connect(address)
                .build()?,
        )
    }

    /// A client from a socket config of type DEALER (for CURVE keys,
    /// several servers, heartbeats ...).
    pub fn new(cfg: SocketConfig) -> Result<Client> {
        check_type(&cfg, SocketType::Dealer, "a client")?;
        let b = build(&cfg, Role::Ask)?;
        let drain = b.drain.expect("a client's connections are watched");
        // A closed client holds nothing back.
        b.sock.set_linger(0).map_err(Error::zmq("set linger"))?;
        Ok(Client {
            sock: b.sock,
            drain,
            address: address_of(&cfg),
            inproc: cfg.uses(crate::config::Transport::Inproc),
            limit: cfg.max_message(),
            max_out: DEFAULT_IN_FLIGHT,
            next: 1,
            out: HashMap::with_capacity(DEFAULT_IN_FLIGHT),
            soonest: None,
            ready: VecDeque::new(),
            ended: 0,
            frames: Vec::new(),
            counts: ClientCounts::default(),
        })
    }

    /// Allow at most `n` requests out at once (at least 1).
    pub fn set_max_in_flight(&mut self, n: usize) {
        self.max_out = n.max(1);
    }

    /// What happened to this client's requests so far.
    pub fn counts(&self) -> ClientCounts {
        self.counts
    }

    /// How many requests are out, waiting for an answer.
    pub fn in_flight(&self) -> usize {
        self.out.len()
    }

    fn failed(&self, failure: Failure) -> Error {
        Error::Request {
            address: self.address.clone(),
            failure,
        }
    }

    /// Send one request, to be answered within `timeout`; its answer comes
    /// from [`Client::recv`] with the id returned. A request is queued for
    /// a server while none is connected yet; if none ever connects within
    /// its time it fails as [`Failure::NoServer`], else as
    /// [`Failure::TimedOut`]. Waits up to `timeout` for room when the
    /// socket's queue is full.
    pub fn send(&mut self, body: &[u8], timeout: Duration) -> Result<RequestId> {
        // A connection that ended before this request concerns only those
        // already out.
        self.notice_ended();
        if body.len() > self.limit {
            return Err(self.failed(Failure::TooBig {
                bytes: body.len(),
                limit: self.limit,
            }));
        }
        if self.out.len() >= self.max_out {
            return Err(self.failed(Failure::TooMany {
                limit: self.max_out,
            }));
        }
        let id = self.next;
        let wire: WireId = id.to_le_bytes();
        let deadline = Instant::now() + timeout;
        loop {
            let parts: [&[u8]; 3] = [b"", &wire, body];
            match self.sock.send_multipart(parts, zmq::DONTWAIT) {
                Ok(()) => break,
                Err(zmq::Error::EAGAIN) => {}
                Err(e) => return Err(Error::zmq("send")(e)),
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.failed(Failure::NoServer {
                    address: self.address.clone(),
                    ms: timeout.as_millis() as u64,
                }));
            }
            let mut items = [self.sock.as_poll_item(zmq::POLLOUT)];
            zmq::poll(
                &mut items,
                i64::from(timeout_ms(Some(left.min(Duration::from_millis(50))))),
            )
            .map_err(Error::zmq("poll"))?;
        }
        self.next += 1;
        self.counts.sent += 1;
        self.out.insert(id, (deadline, timeout));
        self.soonest = Some(self.soonest.map_or(deadline, |s| s.min(deadline)));
        Ok(RequestId(id))
    }

    /// The next outcome of a request out: its answer or why there is none
    /// (its time ran out, its server went away, it was refused), waiting up
    /// to `wait` (`None`: until one comes, or nothing is out). `Ok(None)`
    /// when `wait` passed, or when nothing is out.
    pub fn recv(&mut self, wait: Option<Duration>) -> Result<Option<(RequestId, Outcome)>> {
        let until = wait.map(|w| Instant::now() + w);
        loop {
            self.notice_ended();
            if let Some(r) = self.ready.pop_front() {
                return Ok(Some(r));
            }
            // An answer already here is taken without waiting.
            if self.take()? {
                continue;
            }
            if let Some(r) = self.expired() {
                return Ok(Some(r));
            }
            if self.out.is_empty() {
                return Ok(None);
            }
            let now = Instant::now();
            if until.is_some_and(|u| u <= now) {
                return Ok(None);
            }
            let stop = match (until, self.soonest) {
                (Some(u), Some(f)) => u.min(f),
                (u, f) => u.or(f).unwrap_or(now),
            };
            if self.wait_readable(stop.saturating_duration_since(now))? {
                self.take()?;
            }
        }
    }

    /// Send one request and wait for its answer, for at most `timeout` in
    /// all. Answers to other requests that come meanwhile are kept for
    /// [`Client::recv`].
    pub fn request(&mut self, body: &[u8], timeout: Duration) -> Result<Vec<u8>> {
        let id = self.send(body, timeout)?;
        let mut held = Vec::new();
        let got = loop {
            match self.recv(None)? {
                Some((i, outcome)) if i == id => break outcome,
                Some(other) => held.push(other),
                None => break Err(Failure::TimedOut { ms: 0 }),
            }
        };
        self.ready.extend(held);
        got.map_err(|f| self.failed(f))
    }

    /// Forget request `id`: its answer, if one comes, is dropped as late.
    /// Whether it was out.
    pub fn cancel(&mut self, id: RequestId) -> bool {
        self.ready.retain(|r| r.0 != id);
        self.out.remove(&id.0).is_some()
    }

    /// A request out whose time ran out, if any (the earliest).
    fn expired(&mut self) -> Option<(RequestId, Outcome)> {
        let now = Instant::now();
        if self.soonest.is_none_or(|s| now < s) {
            return None;
        }
        self.soonest = self.out.values().map(|o| o.0).min();
        let (&id, &(deadline, t)) = self.out.iter().min_by_key(|(_, o)| o.0)?;
        if deadline > now {
            return None;
        }
        self.out.remove(&id);
        // The next deadline is found again when it comes.
        self.counts.timed_out += 1;
        let ms = t.as_millis() as u64;
        // No server ever connected: say so rather than "no answer".
        let nobody = !self.inproc && self.drain.shaken() == 0 && {
            self.drain.poll_events();
            self.drain.shaken() == 0
        };
        let f = if nobody {
            Failure::NoServer {
                address: self.address.clone(),
                ms,
            }
        } else {
            Failure::TimedOut { ms }
        };
        Some((RequestId(id), Err(f)))
    }

    /// When a server's connection ended, every request out fails at once:
    /// which of them that server held cannot be told, and it will answer
    /// none of them.
    fn notice_ended(&mut self) {
        let (n, endpoint) = self.drain.ended();
        if n == self.ended {
            return;
        }
        self.ended = n;
        let endpoint = endpoint.unwrap_or("?").to_string();
        // Answers that came before the connection ended are answers.
        while self.take().unwrap_or(false) {}
        let mut ids: Vec<u64> = self.out.drain().map(|(id, _)| id).collect();
        ids.sort_unstable();
        self.counts.gone += ids.len() as u64;
        for id in ids {
            let f = Failure::ServerGone {
                endpoint: endpoint.clone(),
            };
            self.ready.push_back((RequestId(id), Err(f)));
        }
    }

    /// Wait up to `left` for a response or a connection event; whether a
    /// response is there to take.
    fn wait_readable(&mut self, left: Duration) -> Result<bool> {
        let mut items = [
            self.sock.as_poll_item(zmq::POLLIN),
            self.drain.events_item(),
        ];
        zmq::poll(&mut items, i64::from(timeout_ms(Some(left)))).map_err(Error::zmq("poll"))?;
        Ok(items[0].is_readable())
    }

    /// Take one message off the socket, if there is one, and settle the
    /// request it answers: whether there was one.
    fn take(&mut self) -> Result<bool> {
        let n = message_frames(&self.sock, &mut self.frames)?;
        if n == 0 {
            return Ok(false);
        }
        let Some(all) = frames_kept(&self.frames, n) else {
            self.counts.unreadable += 1;
            return Ok(true);
        };
        let (id, outcome) = match frames::answered(all) {
            Answered::Tagged(id, status, body) => {
                let outcome = match status {
                    ANSWER => Ok(body.to_vec()),
                    REFUSED => Err(Failure::Refused(words(body))),
                    _ => Err(Failure::Unreadable(words(body))),
                };
                (u64::from_le_bytes(id), outcome)
            }
            Answered::Unreadable(_) => {
                self.counts.unreadable += 1;
                return Ok(true);
            }
        };
        if self.out.remove(&id).is_none() {
            self.counts.late += 1;
            return Ok(true);
        }
        match outcome {
            Ok(_) => self.counts.answered += 1,
            Err(_) => self.counts.refused += 1,
        }
        self.ready.push_back((RequestId(id), outcome));
        Ok(true)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        crate::drain::stop_monitor(&mut self.sock);
    }
}

/// A server's words, as text whatever bytes they are.
fn words(body: &[u8]) -> String {
    String::from_utf8_lossy(body).into_owned()
}
