//! Receiving without copying a message out: a closure that reads its
//! frames where they lie, and a forward that sends it on.

use super::{Link, Receiver};
use crate::error::Result;
use crate::frames_view::FramesView;
use crate::shm::Forwarded;
use crate::Sender;
use std::time::Duration;

impl Receiver {
    /// Receive one message and call `f` on its frames where they lie,
    /// schema-blind; returns what `f` returned, `Ok(None)` on timeout.
    ///
    /// Over shm:// the frames are read in the ring's slot and nothing is
    /// copied: for a reader that needs a few bytes of a large message, or
    /// decodes it itself. On a PUB/SUB ring whose writer laps this receiver
    /// while `f` reads, what `f` saw is void: its result is thrown away,
    /// the message counted lost ([`Self::lost`]) and `f` called again on
    /// the next one. So `f` should only read and compute; to pass a message
    /// on, use [`Self::forward`], which checks before it sends. Over zmq the
    /// message is received into a buffer the receiver keeps, then `f` runs
    /// once.
    pub fn recv_raw_with<R>(
        &mut self,
        timeout: Option<Duration>,
        mut f: impl FnMut(FramesView<'_>) -> R,
    ) -> Result<Option<R>> {
        let got = match &mut self.link {
            Link::Shm(rx) => rx.recv_with(timeout, &mut f)?,
            Link::Zmq(rx) => match rx.recv_frames(&mut self.scratch, timeout)? {
                true => Some((
                    f(FramesView::held(&self.scratch)),
                    self.scratch.total_bytes(),
                )),
                false => None,
            },
        };
        let Some((r, bytes)) = got else {
            return Ok(None);
        };
        self.received += 1;
        self.meter.add(bytes);
        Ok(Some(r))
    }

    /// Receive one message and send it on through `to`, frames as they
    /// came; `Ok(false)` when nothing came within `timeout`.
    ///
    /// From an shm:// ring to another the message is copied once, from slot
    /// to slot, and published only if its slot was not overwritten while
    /// it was copied (a PUB/SUB ring lapping this receiver): such a message
    /// is counted lost ([`Self::lost`]) and the next one taken. Any other
    /// pair of transports receives into a buffer the receiver keeps and
    /// sends from it.
    ///
    /// A send that fails (a full ring past its block timeout, a message
    /// larger than `to`'s slots, a peer gone) returns its error and keeps
    /// the message: the next call sends it before it receives anything, so
    /// nothing taken from this receiver is lost.
    pub fn forward(&mut self, to: &mut Sender, timeout: Option<Duration>) -> Result<bool> {
        if let Some(f) = self.held.take() {
            if let Err(e) = to.send_frames(&f) {
                self.held = Some(f);
                return Err(e);
            }
            return Ok(true);
        }
        if let (Link::Shm(rx), Some(tx)) = (&mut self.link, to.shm_ring()?) {
            let (bytes, err) = match rx.forward(tx, &mut self.scratch, timeout)? {
                None => return Ok(false),
                Some(Forwarded::Sent(bytes)) => (bytes, None),
                Some(Forwarded::Held(e)) => (self.scratch.total_bytes(), Some(e)),
            };
            self.received += 1;
            self.meter.add(bytes);
            return match err {
                None => {
                    to.count_sent(bytes);
                    Ok(true)
                }
                Some(e) => {
                    self.held = Some(std::mem::take(&mut self.scratch));
                    Err(e)
                }
            };
        }
        let mut f = std::mem::take(&mut self.scratch);
        let r = match self.recv_raw_into(&mut f, timeout) {
            Ok(true) => match to.send_frames(&f) {
                Ok(()) => Ok(true),
                Err(e) => {
                    self.held = Some(f);
                    return Err(e);
                }
            },
            other => other,
        };
        self.scratch = f;
        r
    }
}
