//! The answering side: a ROUTER that hands each request over with the
//! [`Reply`] to answer it by. Answers given on the server's thread
//! ([`Server::answer`]) go out at once; answers given on another thread
//! ([`Reply::answer`]) are queued and the server's thread, woken through
//! an eventfd, sends them (ZeroMQ sockets belong to one thread).

use super::frames::{self, Asked, WireId, ANSWER, REFUSED, UNREADABLE};
use super::{address_of, check_type, frames_kept, message_frames};
use crate::config::{SocketConfig, SocketType};
use crate::error::{Error, Result};
use crate::socket::{build, timeout_ms, Role};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What happened to a server's requests so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerCounts {
    /// Requests received.
    pub received: u64,
    /// Answers sent.
    pub answered: u64,
    /// Refusals sent (a [`Reply`] dropped unanswered is refused).
    pub refused: u64,
    /// Messages that were not a request (answered as such when the sender
    /// can read it).
    pub unreadable: u64,
    /// Responses dropped because their client is gone or does not read
    /// (its queue is full): the server goes on answering the others.
    pub undelivered: u64,
}

/// A response waiting for the server's thread to send it.
struct Queued {
    to: Vec<u8>,
    id: Option<WireId>,
    status: u8,
    body: Vec<u8>,
}

/// Where other threads leave responses, and how they wake the server.
struct Outbox {
    queue: Mutex<Vec<Queued>>,
    /// Set while a wake-up is pending: one write per sleep, not per reply.
    woken: AtomicBool,
    wake: OwnedFd,
}

impl Outbox {
    fn new() -> Result<Outbox> {
        // SAFETY: eventfd takes no pointer; a negative result is an error.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            return Err(Error::config("socket", "eventfd", e.to_string()));
        }
        Ok(Outbox {
            queue: Mutex::new(Vec::new()),
            woken: AtomicBool::new(false),
            // SAFETY: fd was just opened and is owned by nothing else.
            wake: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    fn push(&self, q: Queued) {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).push(q);
        if !self.woken.swap(true, Ordering::AcqRel) {
            let one = 1u64.to_ne_bytes();
            // SAFETY: writes 8 bytes from a live buffer to our eventfd; a
            // full counter (EAGAIN) already means "awake".
            unsafe { libc::write(self.wake.as_raw_fd(), one.as_ptr().cast(), 8) };
        }
    }

    /// Everything queued, after clearing the wake-up.
    fn take(&self, into: &mut Vec<Queued>) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a live buffer from our eventfd.
        unsafe { libc::read(self.wake.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        self.woken.store(false, Ordering::Release);
        into.append(&mut self.queue.lock().unwrap_or_else(|p| p.into_inner()));
    }
}

/// A request received: its bytes and the [`Reply`] to answer it by.
pub struct Request {
    body: Vec<u8>,
    reply: Reply,
}

impl Request {
    /// The request's bytes.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// Its bytes and the reply to answer it by, apart (to answer on
    /// another thread).
    pub fn into_parts(self) -> (Vec<u8>, Reply) {
        (self.body, self.reply)
    }
}

/// How to answer one request, once, from any thread. Dropped unanswered,
/// it refuses the request, so its client hears at once.
pub struct Reply {
    to: Vec<u8>,
    id: Option<WireId>,
    outbox: Arc<Outbox>,
    done: bool,
}

impl Reply {
    /// Answer with `body` (sent by the server's thread at its next
    /// [`Server::recv`], which this wakes).
    pub fn answer(mut self, body: &[u8]) {
        self.queue(ANSWER, body.to_vec());
    }

    /// Refuse, saying why.
    pub fn refuse(mut self, why: &str) {
        self.queue(REFUSED, why.as_bytes().to_vec());
    }

    fn queue(&mut self, status: u8, body: Vec<u8>) {
        self.done = true;
        self.outbox.push(Queued {
            to: std::mem::take(&mut self.to),
            id: self.id,
            status,
            body,
        });
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if !self.done {
            let why = b"the server let the request go without answering";
            self.queue(REFUSED, why.to_vec());
        }
    }
}

/// Receives requests and answers them.
///
/// ```no_run
/// use std::time::Duration;
/// let mut s = ptmp::Server::bind("tcp://127.0.0.1:5680")?;
/// while let Some(req) = s.recv(Some(Duration::from_secs(10)))? {
///     let (body, reply) = req.into_parts();
///     s.answer(reply, &body)?; // an echo
/// }
/// # Ok::<(), ptmp::Error>(())
/// ```
pub struct Server {
    // Dropped in this order: the listening guards, the socket, then the
    // CURVE handler.
    _guards: Vec<crate::fdguard::Guarded>,
    sock: zmq::Socket,
    _admission: Option<crate::curve::Admission>,
    _watch: Option<crate::curve::watch::Watch>,
    bound: Vec<String>,
    address: String,
    limit: usize,
    outbox: Arc<Outbox>,
    sending: Vec<Queued>,
    frames: Vec<zmq::Message>,
    counts: ServerCounts,
}

impl Drop for Server {
    fn drop(&mut self) {
        // A CURVE server's watch reads its socket's monitor: the monitor
        // stops first (`drain::stop_monitor` says why).
        if self._watch.is_some() {
            crate::drain::stop_monitor(&mut self.sock);
        }
    }
}

impl Server {
    /// A server listening at `address` (`tcp://HOST:PORT` with `*` or port
    /// 0 allowed, `ipc://PATH`, `inproc://NAME`, `name://NODE/PORT`).
    pub fn bind(address: &str) -> Result<Server> {
        Server::new(
            SocketConfig::builder(SocketType::Router)
                .bind(address)
                .build()?,
        )
    }

    /// A server from a socket config of type ROUTER.
    pub fn new(cfg: SocketConfig) -> Result<Server> {
        check_type(&cfg, SocketType::Router, "a server")?;
        let b = build(&cfg, Role::Answer)?;
        // Told, rather than dropping silently, when a client is gone or
        // full, so that it is counted and the others go on.
        b.sock
            .set_router_mandatory(true)
            .map_err(Error::zmq("set router_mandatory"))?;
        // Answers given are delivered as the server closes, for up to its
        // linger (a second unless configured): a client that is not reading
        // does not hold it longer.
        let linger = match cfg.linger_ms() {
            -1 => 1000,
            ms => ms,
        };
        b.sock
            .set_linger(linger)
            .map_err(Error::zmq("set linger"))?;
        Ok(Server {
            _guards: b.guards,
            sock: b.sock,
            _admission: b.admission,
            _watch: b.watch,
            bound: b.bound,
            address: address_of(&cfg),
            limit: cfg.max_message(),
            outbox: Arc::new(Outbox::new()?),
            sending: Vec::new(),
            frames: Vec::new(),
            counts: ServerCounts::default(),
        })
    }

    /// The endpoints bound, wildcards resolved (`tcp://127.0.0.1:40123`).
    pub fn bound(&self) -> &[String] {
        &self.bound
    }

    /// Where it listens, as configured.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// What happened to its requests so far.
    pub fn counts(&self) -> ServerCounts {
        self.counts
    }

    /// The next request, waiting up to `timeout` (`None`: until one
    /// comes); meanwhile, answers given on other threads are sent.
    /// `Ok(None)` when the time passed, or a signal came meanwhile.
    pub fn recv(&mut self, timeout: Option<Duration>) -> Result<Option<Request>> {
        let until = timeout.map(|t| Instant::now() + t);
        loop {
            self.flush()?;
            if let Some(r) = self.take()? {
                return Ok(Some(r));
            }
            let left = until.map(|u| u.saturating_duration_since(Instant::now()));
            if left.is_some_and(|l| l.is_zero()) {
                return Ok(None);
            }
            let wake = self.outbox.wake.as_raw_fd();
            let mut items = [
                self.sock.as_poll_item(zmq::POLLIN),
                zmq::PollItem::from_fd(wake, zmq::POLLIN),
            ];
            match zmq::poll(&mut items, i64::from(timeout_ms(left))) {
                // A signal ends the wait, so that its handler's flag is seen.
                Err(zmq::Error::EINTR) => return Ok(None),
                r => r.map_err(Error::zmq("poll"))?,
            };
        }
    }

    /// Answer a request on this thread: sent now.
    pub fn answer(&mut self, mut reply: Reply, body: &[u8]) -> Result<()> {
        reply.done = true;
        self.put(&reply.to, reply.id, ANSWER, body)
    }

    /// Refuse a request on this thread, saying why: sent now.
    pub fn refuse(&mut self, mut reply: Reply, why: &str) -> Result<()> {
        reply.done = true;
        self.put(&reply.to, reply.id, REFUSED, why.as_bytes())
    }

    /// Send the answers other threads left.
    fn flush(&mut self) -> Result<()> {
        if !self.outbox.woken.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut queued = std::mem::take(&mut self.sending);
        self.outbox.take(&mut queued);
        for q in queued.drain(..) {
            self.put(&q.to, q.id, q.status, &q.body)?;
        }
        self.sending = queued;
        Ok(())
    }

    /// Take one message, if there is one: a request, or (answered when it
    /// can be, and counted) something else.
    fn take(&mut self) -> Result<Option<Request>> {
        let n = message_frames(&self.sock, &mut self.frames)?;
        if n == 0 {
            return Ok(None);
        }
        let Some(all) = frames_kept(&self.frames, n) else {
            // Longer than any request: counted, and told why when its
            // sender put the delimiter first.
            self.counts.unreadable += 1;
            let to = self.frames[0].to_vec();
            if self.frames.get(1).is_some_and(|d| d.is_empty()) {
                let why = format!(
                    "{} frames after the delimiter, where 1 or 2 are expected",
                    n - 2
                );
                self.send_frames(&to, None, UNREADABLE, why.as_bytes())?;
            }
            return Ok(None);
        };
        let (to, rest) = all.split_first().expect("a routed message");
        let to = to.to_vec();
        let (id, body) = match frames::asked(rest) {
            Asked::Tagged(id, body) => (Some(id), body.to_vec()),
            Asked::Plain(body) => (None, body.to_vec()),
            Asked::Unreadable(why, answerable) => {
                self.counts.unreadable += 1;
                if answerable {
                    self.send_frames(&to, None, UNREADABLE, why.as_bytes())?;
                }
                return Ok(None);
            }
        };
        self.counts.received += 1;
        let reply = Reply {
            to,
            id,
            outbox: self.outbox.clone(),
            done: false,
        };
        Ok(Some(Request { body, reply }))
    }

    /// Send one response, counted; an answer over the limit goes as a
    /// refusal saying so.
    fn put(&mut self, to: &[u8], id: Option<WireId>, status: u8, body: &[u8]) -> Result<()> {
        if body.len() > self.limit {
            let why = format!(
                "its answer of {} bytes is over the server's limit of {} (max_message)",
                body.len(),
                self.limit
            );
            return self.put(to, id, REFUSED, why.as_bytes());
        }
        if self.send_frames(to, id, status, body)? {
            match status {
                ANSWER => self.counts.answered += 1,
                _ => self.counts.refused += 1,
            }
        }
        Ok(())
    }

    /// Put a response's frames on the wire without waiting: whether it
    /// went (a client gone or not reading is counted instead).
    fn send_frames(
        &mut self,
        to: &[u8],
        id: Option<WireId>,
        status: u8,
        body: &[u8],
    ) -> Result<bool> {
        let more = zmq::SNDMORE | zmq::DONTWAIT;
        match self.sock.send(to, more) {
            Ok(()) => {}
            Err(zmq::Error::EHOSTUNREACH | zmq::Error::EAGAIN) => {
                self.counts.undelivered += 1;
                return Ok(false);
            }
            Err(e) => return Err(Error::zmq("send")(e)),
        }
        let status = [status];
        let sent = self.sock.send(&b""[..], more).and_then(|()| match &id {
            Some(id) => self.sock.send(&id[..], more),
            None => Ok(()),
        });
        sent.and_then(|()| self.sock.send(&status[..], more))
            .and_then(|()| self.sock.send(body, zmq::DONTWAIT))
            .map_err(Error::zmq("send"))?;
        Ok(true)
    }
}
