//! What a finished sender can say about what it sent ([`crate::Sender::finish`]).

/// How many sent messages may not have reached a peer, as far as a sender
/// can tell (see [`crate::Sender::finish`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undelivered {
    /// Every message left this process for a connected peer.
    None,
    /// Exactly this many were lost: no peer ever connected, or none that
    /// connected completed the ZeroMQ handshake, so nothing left (a PUB
    /// drops what it sends then).
    Exactly(u64),
    /// Some were still queued when the linger ran out: up to this many.
    AtMost(u64),
    /// Not tracked: PUB drops what no subscriber wants without telling,
    /// inproc:// peers are not watched, and linger 0 does not wait.
    Unknown,
}

impl Undelivered {
    /// The count, when known exactly (0 for `None`).
    pub fn exact(self) -> Option<u64> {
        match self {
            Undelivered::None => Some(0),
            Undelivered::Exactly(n) => Some(n),
            _ => Option::None,
        }
    }

    /// Whether some messages were, or may have been, lost.
    pub fn any(self) -> bool {
        matches!(self, Undelivered::Exactly(n) | Undelivered::AtMost(n) if n > 0)
    }
}

impl std::fmt::Display for Undelivered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Undelivered::None => f.write_str("0"),
            Undelivered::Exactly(n) => write!(f, "{n}"),
            Undelivered::AtMost(n) => write!(f, "at most {n}"),
            Undelivered::Unknown => f.write_str("unknown"),
        }
    }
}

/// What [`crate::Sender::finish`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// Messages accepted by `send`.
    pub sent: u64,
    /// How many of them may not have reached a peer.
    pub undelivered: Undelivered,
    /// The first connection this sender made whose handshake failed
    /// ("ENDPOINT: why"): a CURVE client refused or holding the wrong
    /// server key, or a sender without keys reaching a CURVE server. What
    /// was sent there never left.
    pub refused: Option<String>,
    /// Why some may not have reached a peer, where the sender can tell: an
    /// shm:// reader behind, e.g. "shm://NAME: durable reader (pid P) has
    /// not committed N", or a peer that never completed the ZeroMQ
    /// handshake ("the peer at tcp://... never completed the ZeroMQ
    /// handshake": a tcp listener that is not ZeroMQ, or a CURVE server),
    /// so nothing was written to it.
    pub reason: Option<String>,
}
