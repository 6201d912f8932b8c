//! # ptmp: trigger message passing, PTMP-compatible
//!
//! The messaging core. A [`SocketConfig`] (PTMP's JSON) describes a socket;
//! a [`Sender`] sends [`TPSet`]s on it and a [`Receiver`] receives them, as
//! PTMP's `TPSender` and `TPReceiver` do, with PTMP's two-frame wire format
//! so C++ PTMP peers, pyzmq scripts and this library interoperate.
//!
//! Layers, bottom up:
//! * `ptmp-data`: schema, codec, wire format and framing (no transport);
//! * [`fields`]: typed, path-aware reading of JSON configuration objects,
//!   shared by the socket config, the agents and the graphs;
//! * `config`: the socket configuration front ([`SocketConfig`]), which names the transport of
//!   each endpoint (`inproc`, `ipc`, `tcp`, and `shm` for the shared-memory
//!   transport) so a configuration changes transport by changing an address;
//! * [`curve`]: CURVE keys, certificate files and the ZAP handler that
//!   admits a secured server's clients;
//! * `socket`: turns a config into a zmq socket (context policy, HWMs,
//!   linger, XPUB for PUB senders), with `drain` making a dropped sender
//!   deliver what it queued;
//! * `shm`: the same front over `ptmp-shm` rings for `shm://` addresses;
//! * [`names`]: `name://NODE/PORT` in place of an address, looked up (and
//!   announced, for a bind) through a presence the process installs once
//!   (`ptmp-discovery` provides one), when a socket is made;
//! * [`Sender`] / [`Receiver`]: the typed API, plus raw-frame access for
//!   schema-blind tools. Each holds either a zmq socket or an shm channel,
//!   chosen by the address, so callers never see which;
//! * [`request`]: a [`Client`] that asks and a [`Server`] that answers,
//!   many requests out at once, each answer matched to its request.
//!
//! The public surface is what the crate root re-exports (the socket types,
//! configuration, defaults and errors) and seven subject modules whose
//! items keep their module's name: [`curve`], [`duration`], [`fields`],
//! [`files`], [`meter`], [`names`] and [`request`]. Everything else is
//! private.
//!
//! ```no_run
//! use ptmp::{Receiver, Sender, SocketConfig, SocketType, TPSet};
//! use std::time::Duration;
//! // From PTMP's JSON ...
//! let mut tx = Sender::from_json(r#"{"socket":{"type":"PUSH","bind":["tcp://127.0.0.1:5678"]}}"#)?;
//! // ... or built in Rust, checked by the same rules.
//! let rx_cfg = SocketConfig::builder(SocketType::Pull)
//!     .connect("tcp://127.0.0.1:5678")
//!     .build()?;
//! let mut rx = Receiver::new(rx_cfg)?;
//! tx.send(&TPSet { count: 1, ..Default::default() })?;
//! let got = rx.recv(Some(Duration::from_secs(1)))?;
//! assert_eq!(got.map(|t| t.count), Some(1));
//! # Ok::<(), ptmp::Error>(())
//! ```

mod config;
pub mod curve;
mod delivery;
mod drain;
pub mod duration;
mod error;
pub mod fdguard;
pub mod fields;
pub mod files;
mod frames_view;
mod link;
pub mod meter;
pub mod names;
mod receiver;
pub mod request;
mod sender;
mod shm;
mod socket;
mod transport;
mod zmq_link;

pub use config::{
    Attach, Endpoint, ShmSettings, SocketConfig, SocketConfigBuilder, SocketType, Transport,
    DEFAULT_HWM, DEFAULT_LINGER, DEFAULT_MAX_MESSAGE, DEFAULT_NAME_HEARTBEAT,
    DEFAULT_SHM_BLOCK_TIMEOUT, DEFAULT_SHM_MAX_MESSAGE, DEFAULT_SHM_RING_BYTES, DEFAULT_SHM_SLOTS,
    DEFAULT_SUBSCRIBERS_TIMEOUT, MAX_DEPTH,
};
pub use delivery::{Delivery, Undelivered};
pub use error::{Error, Result};
pub use frames_view::FramesView;
pub use ptmp_data::{self as data, Frames, TPSet, TrigPrim, WireError};
pub use receiver::Receiver;
pub use request::{Client, Server};
pub use sender::Sender;
pub use socket::check_ipc_bind;

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send<T: Send>() {}

    #[test]
    fn types_are_send() {
        assert_send::<Sender>();
        assert_send::<Receiver>();
        assert_send::<SocketConfig>();
        assert_send::<Error>();
    }
}
