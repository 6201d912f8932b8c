//! An agent's socket I/O: opening its sockets and the reads and writes
//! that count messages and honour its stop request.

use crate::agent::{Ctl, POLL};
use crate::error::{Error, Result};
use ptmp::{Receiver, Sender, SocketConfig};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Whether this process's agents hold their outputs (see [`hold_outputs`]).
static OUTPUTS_HELD: AtomicBool = AtomicBool::new(false);

/// Hold (`true`) or release (`false`) every output of the agents in this
/// process: while held, [`send_set`] and [`send_frames`] wait before
/// sending, and go on as soon as the hold is released or their agent is
/// stopped. Inputs are still read, up to their high-water marks.
///
/// A graph part holds its outputs while the process they feed is replaced.
/// Unlike a stopped process (SIGSTOP), a held one keeps its ZeroMQ I/O
/// threads running: they see the old receiver's connection close while
/// nothing is being sent, so no message is written into a dead connection
/// when the hold ends, whichever side of the edge binds.
pub fn hold_outputs(on: bool) {
    OUTPUTS_HELD.store(on, Ordering::Release);
}

/// Whether [`hold_outputs`] holds this process's outputs now.
pub fn outputs_held() -> bool {
    OUTPUTS_HELD.load(Ordering::Acquire)
}

/// Wait while the outputs are held, unless the agent is stopped (a stopped
/// agent drains what it has, as at any stop).
#[cold]
fn wait_while_held(ctl: &Ctl) {
    while outputs_held() && !ctl.stopped() {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Open an input socket of `agent`; an error names the agent. Names it
/// connects to (`name://NODE/PORT`) are resolved first, so the socket can
/// follow a named peer that moves (see [`recv_set`]).
pub(crate) fn open_rx(agent: &str, c: &SocketConfig) -> Result<Receiver> {
    Receiver::following(c).map_err(Error::socket(agent))
}

/// After a wait that found nothing: when a peer this receiver connects to
/// by name is announced elsewhere now (it died and came back on another
/// host, port or process), make the socket again connected there. Only a
/// receiver that binds nothing is made again (a bound port must stay
/// where it is); the receiver reads the old socket until it is empty
/// before the new one, so nothing that reached this process is dropped.
/// Checked only when idle: no cost per message.
fn follow_rx(rx: &mut Receiver, agent: &str) -> Result<()> {
    rx.follow_moved().map_err(Error::socket(agent))?;
    Ok(())
}

/// Open an output socket of `agent`; an error names the agent. Over shm
/// its timed sends wait in slices, as zmq's do at their high-water mark,
/// so an agent waiting for a slow reader still sees its stop request (the
/// ring's block timeout still bounds the whole wait for one message).
pub(crate) fn open_tx(agent: &str, c: &SocketConfig) -> Result<Sender> {
    let mut tx = Sender::following(c).map_err(Error::socket(agent))?;
    tx.wait_in_slices();
    Ok(tx)
}

/// Open the input and output sockets of a one-in, one-out agent; errors
/// name the agent.
pub fn open_io(
    agent: &str,
    input: &SocketConfig,
    output: &SocketConfig,
) -> Result<(Receiver, Sender)> {
    Ok((open_rx(agent, input)?, open_tx(agent, output)?))
}

/// The error of an agent whose CURVE server refused one of its sockets:
/// libzmq never retries that connection, so waiting on could only hang.
fn refused(agent: &str, why: String) -> Error {
    Error::Run {
        agent: agent.to_string(),
        reason: format!("refused: {why}"),
    }
}

/// After a wait that found nothing: fails when a CURVE server refused
/// this (client) receiver, since nothing will ever come. Idle only.
pub(crate) fn refused_rx(rx: &mut Receiver, agent: &str) -> Result<()> {
    match rx.refused() {
        Some(why) => Err(refused(agent, why)),
        None => Ok(()),
    }
}

/// What one read of an agent's input gave.
pub enum Got {
    /// A set arrived.
    Set,
    /// Nothing this time (a timeout, a signal, or a message that is not a
    /// TPSet, which is counted).
    Nothing,
    /// Nothing, and the agent is stopping: time to flush and return.
    Done,
}

/// What a read that found nothing means: the end, if the agent is stopping.
fn idle(ctl: &Ctl) -> Got {
    if ctl.done(true) {
        Got::Done
    } else {
        Got::Nothing
    }
}

/// Read one TPSet from an agent's input, waiting at most `wait`.
pub fn recv_set(
    rx: &mut Receiver,
    set: &mut ptmp::TPSet,
    wait: Duration,
    ctl: &Ctl,
    bad: &mut u64,
    agent: &str,
) -> Result<Got> {
    match rx.recv_into(set, Some(wait)) {
        Ok(true) => {
            ctl.took_in(Some(set));
            Ok(Got::Set)
        }
        Ok(false) => {
            refused_rx(rx, agent)?;
            // What reached the old socket is read on the next turn.
            follow_rx(rx, agent)?;
            Ok(idle(ctl))
        }
        Err(ptmp::Error::Interrupted) => Ok(idle(ctl)),
        Err(ptmp::Error::Wire(_)) => {
            *bad += 1;
            Ok(Got::Nothing)
        }
        Err(e) => Err(Error::socket(agent)(e)),
    }
}

/// [`recv_set`] for raw frames (agents that pass messages without parsing
/// them): `Got::Set` when a message arrived, counted as input.
pub fn recv_frames(rx: &mut Receiver, f: &mut ptmp::Frames, ctl: &Ctl, agent: &str) -> Result<Got> {
    match rx.recv_raw_into(f, Some(POLL)) {
        Ok(true) => {
            ctl.took_in(None);
            Ok(Got::Set)
        }
        Ok(false) => {
            refused_rx(rx, agent)?;
            follow_rx(rx, agent)?;
            Ok(idle(ctl))
        }
        Err(ptmp::Error::Interrupted) => Ok(idle(ctl)),
        Err(e) => Err(Error::socket(agent)(e)),
    }
}

/// Send `set` on `tx`, waiting for room as long as the agent is not done
/// (see [`Ctl::done`]). `Ok(false)`: the agent is stopping and nobody took
/// the set within [`DRAIN_MAX`](crate::DRAIN_MAX), so it was not sent (callers count it).
pub fn send_set(tx: &mut Sender, set: &ptmp::TPSet, ctl: &Ctl, agent: &str) -> Result<bool> {
    send_until_done(tx, ctl, agent, Some(set), |tx| tx.send_within(set, POLL))
}

/// [`send_set`] for raw frames.
pub fn send_frames(tx: &mut Sender, f: &ptmp::Frames, ctl: &Ctl, agent: &str) -> Result<bool> {
    send_until_done(tx, ctl, agent, None, |tx| tx.send_frames_within(f, POLL))
}

/// Retry `send` (one attempt of at most [`POLL`], `Ok(true)` when sent)
/// until it sends or the agent is done; a message sent is counted. Held
/// outputs ([`hold_outputs`]) wait first: one relaxed load per message
/// when they are not.
/// While it waits, a sender connected by name follows its peer when the
/// peer is announced elsewhere (see [`follow_tx`]).
fn send_until_done(
    tx: &mut Sender,
    ctl: &Ctl,
    agent: &str,
    set: Option<&ptmp::TPSet>,
    mut send: impl FnMut(&mut Sender) -> ptmp::Result<bool>,
) -> Result<bool> {
    // For the metrics' wait figures: when the first attempt found no room.
    let mut since: Option<std::time::Instant> = None;
    loop {
        if OUTPUTS_HELD.load(Ordering::Relaxed) {
            wait_while_held(ctl);
        }
        let start = ctl.meter.as_ref().map(|_| std::time::Instant::now());
        if send(tx).map_err(Error::socket(agent))? {
            ctl.sent_out(set);
            if let (Some(m), Some(t)) = (&ctl.meter, since) {
                m.note_wait(t.elapsed());
            }
            return Ok(true);
        }
        since = since.or(start);
        if ctl.done(false) {
            return Ok(false);
        }
        if let Some(why) = tx.refused() {
            return Err(refused(agent, why));
        }
        follow_tx(tx, agent)?;
    }
}

/// When a send found no room (its peer is gone: a sender connecting by
/// name queues only on live connections) and a peer it connects to by
/// name is announced elsewhere now, make the sender again connected there.
/// Only a sender that binds nothing is made again. The old one is let go
/// on a thread of its own, where it delivers what it still can within its
/// linger; what it held for the dead peer is lost with that peer.
fn follow_tx(tx: &mut Sender, agent: &str) -> Result<()> {
    tx.follow_moved().map_err(Error::socket(agent))?;
    Ok(())
}
