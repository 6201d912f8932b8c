//! The transport contract: what every way of carrying a message between a
//! [`crate::Sender`] and a [`crate::Receiver`] provides, whatever it
//! carries it over.
//!
//! Two transports implement it today:
//!
//! * ZeroMQ (`zmq_link.rs`): `inproc://`, `ipc://` and `tcp://` endpoints,
//!   also reached through `name://` once a name is resolved;
//! * shared-memory rings (`shm.rs`): `shm://NAME`.
//!
//! A sending side is a [`Transmit`]: it sends a message given as its
//! frames, waiting for room as its caller chose ([`Wait`]), refuses a
//! message it cannot carry whole, and at the end says what may not have
//! reached a peer ([`Undelivered`]). A receiving side is a [`Receive`]: it
//! hands over one message at a time, decoded in place as a TPSet or copied
//! as frames, within a timeout, and counts what it knows was lost. The
//! front ([`crate::Sender`], [`crate::Receiver`]) holds one `Tx` or `Rx`
//! (`link.rs`), which picks the transport from the socket config and
//! dispatches to it; the front keeps the
//! counters, the config and the per-set encoding; what is particular to
//! one transport (the zero-copy loan of an shm slot, a PUB's wait for
//! its subscribers) stays in that transport's module and is reached
//! through the enum's variant.
//!
//! The contract is tested as one suite run against every transport
//! (`crates/ptmp/tests/contract.rs`); a new transport implements the two
//! traits, adds a variant to each enum of `link.rs` and a row to that
//! suite. This module imports no transport: each imports it.

use crate::config::SocketConfig;
use crate::delivery::Undelivered;
use crate::error::Result;
use ptmp_data::{Frames, TPSet, WireError};
use std::time::Duration;

/// How long one send may wait for room, chosen by the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// As long as the transport's own bound: for ever on zmq, up to the
    /// block timeout on an `shm://` ring.
    Block,
    /// At most this long; then `Ok(false)` and nothing sent.
    Within(Duration),
}

/// The sending side of a transport.
pub(crate) trait Transmit {
    /// Send one message given as its frames, whole or not at all.
    /// [`Wait::Block`] waits for room as long as the transport allows
    /// (a PUB drops instead of waiting); [`Wait::Within`] gives up after
    /// its time with `Ok(false)`, nothing sent. A message the transport
    /// cannot carry (a part over `max_message`, a message larger than a
    /// ring's slot) is an error naming the bound, before anything is sent.
    fn send<'a, I>(&mut self, parts: I, wait: Wait) -> Result<bool>
    where
        I: ExactSizeIterator<Item = &'a [u8]> + Clone;

    /// Wait, up to the config's linger, until what was sent (`sent`
    /// messages in all) has reached its peers, and say how much may not
    /// have, with why when it is known.
    fn undelivered(&mut self, cfg: &SocketConfig, sent: u64) -> (Undelivered, Option<String>);

    /// The first connection refused at its handshake, "ENDPOINT: why".
    fn refused(&mut self) -> Option<String> {
        None
    }

    /// A CURVE server's clients `(admitted, refused)` so far.
    fn curve_admissions(&mut self) -> Option<(u64, u64)> {
        None
    }
}

/// The receiving side of a transport.
pub(crate) trait Receive {
    /// Receive one message and decode it as a TPSet into `out`: `None` on
    /// timeout, else its bytes (both frames); a message that is not a PTMP
    /// message is taken and leaves why in `bad`.
    fn recv_tpset(
        &mut self,
        out: &mut TPSet,
        timeout: Option<Duration>,
        bad: &mut Option<WireError>,
    ) -> Result<Option<usize>>;

    /// Receive one message's frames, copied into `frames`; `Ok(false)` on
    /// timeout.
    fn recv_frames(&mut self, frames: &mut Frames, timeout: Option<Duration>) -> Result<bool>;

    /// Messages this side knows it missed (overwritten before it read
    /// them); 0 where the transport cannot know.
    fn lost(&self) -> u64 {
        0
    }

    /// A CURVE client's first refused connection, "ENDPOINT: why".
    fn refused(&mut self) -> Option<String> {
        None
    }

    /// A CURVE server's clients `(admitted, refused)` so far.
    fn curve_admissions(&self) -> Option<(u64, u64)> {
        None
    }
}
