//! Request and response: a [`Client`] asks, a [`Server`] answers.
//!
//! Streams go one way; some questions need an answer: a node's state, a
//! snapshot, the data of a time window. A client sends a request and gets
//! its answer, or an error that says why not ([`Failure`]): nothing
//! answered in time, the server went away while the request was out, the
//! server refused it, it was too big. Many requests can be out at once;
//! each answer is matched to its request by an id, so answers may come in
//! any order (not ZeroMQ REQ's strict ask-then-wait). A server hands each
//! request over with a [`Reply`] to answer it by, on the server's thread
//! or from any other, in any order.
//!
//! Over ZeroMQ (`inproc://`, `ipc://`, `tcp://`, and `name://` through a
//! presence) a client is a DEALER and a server a ROUTER; CURVE, names and
//! the other socket options come from the same [`SocketConfig`] as every
//! ptmp socket. Several clients may connect to one server, and one client
//! to several servers: its requests are dealt among the servers connected
//! (ZeroMQ's round robin), which shares the load.
//!
//! # On the wire
//!
//! Every message begins with ZeroMQ's envelope delimiter, an empty frame,
//! so a plain REQ socket can ask too:
//!
//! | from | frames |
//! |---|---|
//! | a ptmp client (DEALER) | `""`, id (8 bytes, little-endian), request |
//! | a REQ socket (or a DEALER sending the delimiter itself) | `""`, request |
//! | the server, to a ptmp client | `""`, id, status (1 byte), body |
//! | the server, to a REQ socket | `""`, status (1 byte), body |
//!
//! The status byte is `0` for an answer (the body is the answer), `1` for
//! a refusal and `2` for a request the server could not read (the body is
//! then why, in UTF-8 words). A pyzmq REQ socket thus does
//! `s.send(b"ping")` and `status, body = s.recv_multipart()`.

mod client;
mod frames;
mod server;

pub use crate::error::Failure;
pub use client::{Client, ClientCounts, RequestId};
pub use server::{Reply, Request, Server, ServerCounts};

use crate::config::{SocketConfig, SocketType, Transport};
use crate::error::{Error, Result};

/// Refuse a config that is not of type `want` for `what`, or that names a
/// transport requests do not go over yet.
fn check_type(cfg: &SocketConfig, want: SocketType, what: &str) -> Result<()> {
    if cfg.socket_type() != want {
        return Err(Error::config(
            "socket.type",
            cfg.socket_type().name(),
            format!("{what} is a {} socket", want.name()),
        ));
    }
    if cfg.uses(Transport::Shm) {
        return Err(Error::config(
            "socket",
            "shm://",
            "requests and responses go over inproc://, ipc://, tcp:// and name:// addresses; not over shm:// yet",
        ));
    }
    Ok(())
}

/// The addresses of a config, as error messages name them.
fn address_of(cfg: &SocketConfig) -> String {
    let all: Vec<&str> = cfg.endpoints().map(|(_, e)| e.address.as_str()).collect();
    all.join(",")
}

/// Most frames of a message kept: a request or a response has at most 4
/// (with a server's routing id, 4); the frames of a longer message are
/// received and dropped, so a peer sending a million empty frames costs
/// nothing kept.
const MAX_FRAMES: usize = 6;

/// Take one whole message off `sock` into `frames` (reusing them), without
/// waiting: how many frames it has, 0 when there is none. Of a message of
/// more than [`MAX_FRAMES`] frames, the first `MAX_FRAMES - 1` are kept, the
/// rest received into the last slot and dropped, and the count returned is
/// the true one (more than `frames` holds): [`frames_kept`] gives what was
/// kept.
fn message_frames(sock: &zmq::Socket, frames: &mut Vec<zmq::Message>) -> Result<usize> {
    let mut n = 0;
    loop {
        let slot = n.min(MAX_FRAMES - 1);
        if frames.len() == slot {
            frames.push(zmq::Message::new());
        }
        let flags = if n == 0 { zmq::DONTWAIT } else { 0 };
        match sock.recv(&mut frames[slot], flags) {
            Ok(()) => {}
            Err(zmq::Error::EAGAIN) if n == 0 => return Ok(0),
            Err(e) => return Err(Error::zmq("recv")(e)),
        }
        n += 1;
        if !frames[slot].get_more() {
            break;
        }
    }
    Ok(n)
}

/// The frames kept of a message of `n` frames taken by [`message_frames`]:
/// all of them, or `None` for one longer than [`MAX_FRAMES`] (its first
/// frames only were kept, for a server to answer to).
fn frames_kept(frames: &[zmq::Message], n: usize) -> Option<&[zmq::Message]> {
    (n <= MAX_FRAMES).then(|| &frames[..n])
}
