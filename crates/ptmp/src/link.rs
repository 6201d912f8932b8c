//! The transport a socket has, picked from its config's endpoints: an
//! `shm://` ring or a ZeroMQ socket, each behind the contract of
//! `transport.rs`, dispatched by a `match` (no pointer, no virtual call on
//! the message path).

use crate::config::SocketConfig;
use crate::delivery::Undelivered;
use crate::error::Result;
use crate::meter::SocketCounters;
use crate::shm::{self, ShmRx, ShmTx};
use crate::transport::{Receive, Transmit, Wait};
use crate::zmq_link::{ZmqRx, ZmqTx};
use ptmp_data::{Frames, TPSet, WireError};
use std::sync::Arc;
use std::time::Duration;

/// A sender's transport, chosen by its config's endpoints.
pub(crate) enum Tx {
    Zmq(ZmqTx),
    Shm(ShmTx),
}

impl Tx {
    /// Open the transport `cfg` names (an `shm://` endpoint, else zmq),
    /// counting into `meter`; also the endpoints bound (with wildcards
    /// resolved).
    pub(crate) fn open(
        cfg: &SocketConfig,
        meter: &Arc<SocketCounters>,
    ) -> Result<(Tx, Vec<String>)> {
        Ok(match shm::channel(cfg, true)? {
            Some((key, names, policy)) => (
                Tx::Shm(ShmTx::open(cfg, &key, &names[0], policy, meter.clone())?),
                vec![],
            ),
            None => {
                let (tx, bound) = ZmqTx::open(cfg, meter.clone())?;
                (Tx::Zmq(tx), bound)
            }
        })
    }
}

impl Transmit for Tx {
    #[inline]
    fn send<'a, I>(&mut self, parts: I, wait: Wait) -> Result<bool>
    where
        I: ExactSizeIterator<Item = &'a [u8]> + Clone,
    {
        match self {
            Tx::Zmq(t) => t.send(parts, wait),
            Tx::Shm(t) => t.send(parts, wait),
        }
    }

    fn undelivered(&mut self, cfg: &SocketConfig, sent: u64) -> (Undelivered, Option<String>) {
        match self {
            Tx::Zmq(t) => t.undelivered(cfg, sent),
            Tx::Shm(t) => t.undelivered(cfg, sent),
        }
    }

    fn refused(&mut self) -> Option<String> {
        match self {
            Tx::Zmq(t) => t.refused(),
            Tx::Shm(t) => t.refused(),
        }
    }

    fn curve_admissions(&mut self) -> Option<(u64, u64)> {
        match self {
            Tx::Zmq(t) => t.curve_admissions(),
            Tx::Shm(t) => t.curve_admissions(),
        }
    }
}

/// A receiver's transport, chosen by its config's endpoints.
// The zmq side holds its two messages inline: the receive path reads them
// inline rather than behind a pointer.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Rx {
    Zmq(ZmqRx),
    Shm(ShmRx),
}

impl Rx {
    /// Open the transport `cfg` names, counting a CURVE server's
    /// admissions into `meter`; also the endpoints bound.
    pub(crate) fn open(cfg: &SocketConfig, meter: &SocketCounters) -> Result<(Rx, Vec<String>)> {
        Ok(match shm::channel(cfg, false)? {
            Some((key, names, policy)) => {
                (Rx::Shm(ShmRx::open(cfg, &key, &names, policy)?), vec![])
            }
            None => {
                let (rx, bound) = ZmqRx::open(cfg)?;
                rx.watch_curve(meter);
                (Rx::Zmq(rx), bound)
            }
        })
    }
}

impl Receive for Rx {
    #[inline]
    fn recv_tpset(
        &mut self,
        out: &mut TPSet,
        timeout: Option<Duration>,
        bad: &mut Option<WireError>,
    ) -> Result<Option<usize>> {
        match self {
            Rx::Zmq(r) => r.recv_tpset(out, timeout, bad),
            Rx::Shm(r) => r.recv_tpset(out, timeout, bad),
        }
    }

    #[inline]
    fn recv_frames(&mut self, frames: &mut Frames, timeout: Option<Duration>) -> Result<bool> {
        match self {
            Rx::Zmq(r) => r.recv_frames(frames, timeout),
            Rx::Shm(r) => r.recv_frames(frames, timeout),
        }
    }

    fn lost(&self) -> u64 {
        match self {
            Rx::Zmq(r) => r.lost(),
            Rx::Shm(r) => r.lost(),
        }
    }

    fn refused(&mut self) -> Option<String> {
        match self {
            Rx::Zmq(r) => r.refused(),
            Rx::Shm(r) => r.refused(),
        }
    }

    fn curve_admissions(&self) -> Option<(u64, u64)> {
        match self {
            Rx::Zmq(r) => r.curve_admissions(),
            Rx::Shm(r) => r.curve_admissions(),
        }
    }
}
