//! Reading a message where it lies in its slot, and forwarding it to
//! another ring in one copy, slot to slot.
//!
//! Both read the slot while its writer may rewrite it (on a PUB/SUB ring
//! that laps the reader): what was read counts only if the slot's stamp is
//! unchanged after, as every receive here checks. A forward copies into its
//! own loaned slot first and checks before it publishes, so a message
//! overwritten mid-copy is never sent on; a view's closure may have run on
//! such a message, and its result is thrown away.

use super::{for_frames, shm_io_err, wants, Chan, ShmRx, ShmTx};
use crate::error::Result;
use crate::frames_view::FramesView;
use crate::transport::Wait;
use ptmp_data::zmsg::zmsg_len;
use ptmp_data::Frames;
use ptmp_shm::{Deadline, View};
use std::time::Duration;

/// What a forward did with the message it took from the ring.
pub(crate) enum Forwarded {
    /// Sent on; its frames' bytes.
    Sent(usize),
    /// Taken from the ring but not sent, and copied into the caller's
    /// `held` frames: no room came within the slice (`None`), or the send
    /// failed with this error.
    Held(Option<crate::Error>),
}

/// What [`ShmTx::send_copy`] did.
pub(crate) enum Copied {
    /// Published.
    Sent,
    /// The source changed while it was copied: nothing published.
    Torn,
    /// No room within the wait: nothing written.
    NoRoom,
}

impl ShmRx {
    /// Take the next wanted message and send it on through `tx`, copied
    /// from slot to slot; `Ok(None)` on timeout. A message whose send fails
    /// is copied into `held`.
    pub(crate) fn forward(
        &mut self,
        tx: &mut ShmTx,
        held: &mut Frames,
        timeout: Option<Duration>,
        wait: Wait,
    ) -> Result<Option<Forwarded>> {
        self.serve(timeout, |c, t| c.forward(tx, held, t, wait))
    }

    /// Call `f` on the next wanted message's frames where they lie; its
    /// result and the frames' bytes. `Ok(None)` on timeout.
    pub(crate) fn recv_with<R>(
        &mut self,
        timeout: Option<Duration>,
        f: &mut impl FnMut(FramesView<'_>) -> R,
    ) -> Result<Option<(R, usize)>> {
        self.serve(timeout, |c, t| c.recv_with(t, f))
    }
}

/// The frame count, first frame and bytes of a message's slot contents:
/// `None` for the count when it is not in `zmsg_encode` form (a writer
/// outside ptmp), which is then taken as one frame.
fn shape(b: &[u8]) -> (Option<usize>, &[u8], usize) {
    let (mut first, mut total): (&[u8], usize) = (&[], 0);
    let n = for_frames(b, |i, f| {
        if i == 0 {
            first = f;
        }
        total += f.len();
    });
    match n {
        Some(n) => (Some(n), first, total),
        None => (None, b, b.len()),
    }
}

/// What a channel's view loop lends each view's user: whether its first
/// frame is subscribed to, and the count of messages found overwritten.
struct Lent<'a> {
    everything: bool,
    subscribe: &'a [Vec<u8>],
    torn: &'a mut u64,
}

impl Lent<'_> {
    fn wants(&self, first: &[u8]) -> bool {
        wants(self.everything, self.subscribe, first)
    }
}

impl Chan {
    /// Take views of this channel's next messages, waiting up to
    /// `timeout` in all, until `take` returns a value; `Ok(None)` on
    /// timeout.
    fn with_views<T>(
        &mut self,
        timeout: Option<Duration>,
        mut take: impl FnMut(&View<'_>, Lent<'_>) -> Result<Option<T>>,
    ) -> Result<Option<T>> {
        let mut deadline = Deadline::new(timeout);
        if !self.wait_attached(&mut deadline)? {
            return Ok(None);
        }
        let mut left = timeout;
        loop {
            let reader = self.reader.as_mut().expect("attached");
            let view = reader
                .view_checked(left)
                .map_err(shm_io_err(&self.key, &self.name))?;
            let Some(view) = view else {
                return Ok(None);
            };
            let lent = Lent {
                everything: self.everything,
                subscribe: &self.subscribe,
                torn: &mut self.torn,
            };
            if let Some(v) = take(&view, lent)? {
                return Ok(Some(v));
            }
            left = deadline.remaining();
        }
    }

    /// [`ShmRx::forward`] on this channel.
    fn forward(
        &mut self,
        tx: &mut ShmTx,
        held: &mut Frames,
        timeout: Option<Duration>,
        wait: Wait,
    ) -> Result<Option<Forwarded>> {
        self.with_views(timeout, |view, lent| {
            let bytes = view.bytes();
            let (n, first, total) = shape(bytes);
            if lent.wants(first) && view.valid() {
                let still = || view.valid();
                let sent = match n {
                    Some(_) => {
                        let write = |out: &mut [u8]| ptmp_shm::copy_into_slot(out, bytes);
                        tx.send_copy(bytes.len(), write, still, wait)
                    }
                    None => {
                        let one = std::iter::once(bytes);
                        let write = |out: &mut [u8]| {
                            super::write_frames(one.clone(), out);
                        };
                        tx.send_copy(zmsg_len(one.clone()), write, still, wait)
                    }
                };
                let kept = match sent {
                    Ok(Copied::Sent) => return Ok(Some(Forwarded::Sent(total))),
                    Ok(Copied::Torn) => None,
                    Ok(Copied::NoRoom) => Some(None),
                    Err(e) => Some(Some(e)),
                };
                if let Some(why) = kept {
                    match n {
                        Some(n) => FramesView::zmsg(bytes, n).copy_to(held),
                        None => FramesView::one(bytes).copy_to(held),
                    }
                    if view.valid() {
                        return Ok(Some(Forwarded::Held(why)));
                    }
                    held.clear();
                }
            }
            if !view.valid() {
                *lent.torn += 1;
            }
            Ok(None)
        })
    }

    /// [`ShmRx::recv_with`] on this channel.
    fn recv_with<R>(
        &mut self,
        timeout: Option<Duration>,
        f: &mut impl FnMut(FramesView<'_>) -> R,
    ) -> Result<Option<(R, usize)>> {
        self.with_views(timeout, |view, lent| {
            let bytes = view.bytes();
            let (n, first, total) = shape(bytes);
            if lent.wants(first) {
                let r = match n {
                    Some(n) => f(FramesView::zmsg(bytes, n)),
                    None => f(FramesView::one(bytes)),
                };
                if view.valid() {
                    return Ok(Some((r, total)));
                }
            }
            if !view.valid() {
                *lent.torn += 1;
            }
            Ok(None)
        })
    }
}

impl ShmTx {
    /// Send a message of `len` bytes in `zmsg_encode` form, written into
    /// the loaned slot by `write`, waiting for room as `wait` says (see
    /// [`ShmTx::send`]); published only if `still` then says what was
    /// copied is whole.
    pub(crate) fn send_copy(
        &mut self,
        len: usize,
        write: impl FnOnce(&mut [u8]),
        still: impl FnOnce() -> bool,
        wait: Wait,
    ) -> Result<Copied> {
        let mut torn = false;
        let write = |out: &mut [u8]| {
            write(&mut out[..len]);
            torn = !still();
            (!torn).then_some(len)
        };
        Ok(match self.send_msg(len, write, wait)? {
            true => Copied::Sent,
            false if torn => Copied::Torn,
            false => Copied::NoRoom,
        })
    }
}
