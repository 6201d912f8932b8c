//! [`SocketConfigBuilder`]: a [`SocketConfig`] made in Rust, checked by the
//! same rules as the JSON reader.

use super::*;

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
    pub(super) cfg: SocketConfig,
    /// `subscribe` was given (the default subscribes to everything).
    pub(super) subscribe_set: bool,
    /// The first endpoint that did not parse, reported by `build`.
    pub(super) error: Option<Error>,
}

impl SocketConfigBuilder {
    pub(super) fn endpoint(mut self, attach: Attach, address: &str) -> Self {
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

    pub(super) fn subscriptions(mut self, prefixes: Vec<Vec<u8>>) -> Self {
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
    /// intervals is dropped by a sending socket (ten by a receiving one,
    /// which hears nothing while its queue is full), so a peer that
    /// vanished without closing it is noticed. `Duration::ZERO` sends none. Default: [`DEFAULT_NAME_HEARTBEAT`]
    /// for a socket that binds or connects by name, none otherwise. Whole
    /// milliseconds count, at most 1 000 000 of them.
    pub fn heartbeat(mut self, interval: Duration) -> Self {
        self.cfg.heartbeat = Some(interval);
        self
    }

    /// The largest message part (frame), in bytes, this socket's tcp and
    /// ipc connections carry (JSON `max_message`; from 1 to `i64::MAX`,
    /// default [`DEFAULT_MAX_MESSAGE`], 16 MiB). A peer whose frame header
    /// announces more is disconnected by ZeroMQ before anything of it is
    /// kept, CURVE handshakes included, so one connection cannot make this
    /// socket allocate more than this; a send of a larger part fails with
    /// an error naming the key. Set the same value on both ends: a part
    /// under the sender's bound and over the receiver's leaves the sender
    /// and is dropped with the connection. shm:// rings are bounded by
    /// `shm_max_message` instead; inproc:// has no such bound.
    pub fn max_message(mut self, bytes: usize) -> Self {
        self.cfg.max_message = bytes;
        self
    }

    /// Secure this socket's connections with CURVE (JSON `curve`): as the
    /// server admitting some clients, or as a client of a server whose
    /// public key it knows. Only tcp and ipc endpoints can be secured; the
    /// key files are read when the socket is made.
    pub fn curve(mut self, curve: crate::curve::Curve) -> Self {
        self.cfg.curve = Some(curve);
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
        check_int("max_message", c.max_message as i128, MAX_MESSAGE_RANGE)?;
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
        curve::check(&c)?;
        Ok(c)
    }
}
