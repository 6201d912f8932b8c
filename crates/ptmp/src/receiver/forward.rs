//! Receiving without copying a message out: a closure that reads its
//! frames where they lie, and a forward that sends it on.

use super::Receiver;
use crate::error::Result;
use crate::frames_view::FramesView;
use crate::link::Rx;
use crate::shm::Forwarded;
use crate::transport::Receive;
use crate::Sender;
use ptmp_data::Frames;
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
        if self.retired.is_some() {
            if let Some(r) = self.retired_raw_with(&mut f) {
                return r.map(Some);
            }
        }
        self.link_raw_with(timeout, f)
    }

    /// [`Self::recv_raw_with`] from the receiver a move left behind (and
    /// any it left behind in turn), `f` taken as a trait object so that
    /// reading down that chain makes no new instance of the generic.
    #[cold]
    fn retired_raw_with<R>(&mut self, f: &mut dyn FnMut(FramesView<'_>) -> R) -> Option<Result<R>> {
        self.take_retired(|old, t| {
            if old.retired.is_some() {
                if let Some(r) = old.retired_raw_with(&mut *f) {
                    return r.map(Some);
                }
            }
            old.link_raw_with(t, &mut *f)
        })
    }

    /// [`Self::recv_raw_with`] from this receiver's own transport.
    fn link_raw_with<R>(
        &mut self,
        timeout: Option<Duration>,
        mut f: impl FnMut(FramesView<'_>) -> R,
    ) -> Result<Option<R>> {
        let got = match &mut self.link {
            Rx::Shm(rx) => rx.recv_with(timeout, &mut f)?,
            Rx::Zmq(rx) => match rx.recv_frames(&mut self.scratch, timeout)? {
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

    /// Whether a message taken by [`Self::forward`] waits to be sent: its
    /// send failed, or found no room within its slice.
    pub fn holding(&self) -> bool {
        self.held.is_some()
    }

    /// Take the message a forward kept, so that it is not sent again: for
    /// a caller that will put it elsewhere (or drop it knowingly) when its
    /// send cannot succeed, such as a message larger than the next ring's
    /// slots. `None` when no message is kept.
    pub fn take_held(&mut self) -> Option<Frames> {
        self.held.take()
    }

    /// Receive one message and send it on through `to`, frames as they
    /// came; `Ok(false)` when nothing was passed on within `timeout`.
    ///
    /// From an shm:// ring to another the message is copied once, from slot
    /// to slot, and published only if its slot was not overwritten while
    /// it was copied (a PUB/SUB ring lapping this receiver): such a message
    /// is counted lost ([`Self::lost`]) and the next one taken. Any other
    /// pair of transports receives into a buffer the receiver keeps and
    /// sends from it.
    ///
    /// A message taken but not sent is kept, and the next call sends it
    /// before it receives anything, so nothing taken from this receiver is
    /// lost: when the send fails (a full ring past its block timeout, a
    /// message larger than `to`'s slots, a peer gone) the call returns the
    /// error, and [`Self::take_held`] takes the message back from the
    /// receiver for a caller that will not retry; when `to` waits in slices ([`Sender::wait_in_slices`]) and no
    /// room came within `timeout`, it returns `Ok(false)`, as a send would.
    pub fn forward(&mut self, to: &mut Sender, timeout: Option<Duration>) -> Result<bool> {
        let wait = to.wait_for(timeout);
        if let Some(f) = self.held.take() {
            return match to.send_frames_waiting(&f, wait) {
                Ok(true) => Ok(true),
                other => {
                    self.held = Some(f);
                    other
                }
            };
        }
        if let (Rx::Shm(rx), Some(tx)) = (&mut self.link, to.shm_ring()?) {
            let (bytes, kept) = match rx.forward(tx, &mut self.scratch, timeout, wait)? {
                None => return Ok(false),
                Some(Forwarded::Sent(bytes)) => (bytes, None),
                Some(Forwarded::Held(why)) => (self.scratch.total_bytes(), Some(why)),
            };
            self.received += 1;
            self.meter.add(bytes);
            let Some(why) = kept else {
                to.count_sent(bytes);
                return Ok(true);
            };
            self.held = Some(std::mem::take(&mut self.scratch));
            return why.map_or(Ok(false), Err);
        }
        let mut f = std::mem::take(&mut self.scratch);
        let r = match self.recv_raw_into(&mut f, timeout) {
            Ok(true) => match to.send_frames_waiting(&f, wait) {
                Ok(true) => Ok(true),
                other => {
                    self.held = Some(f);
                    return other;
                }
            },
            other => other,
        };
        self.scratch = f;
        r
    }
}
