//! One received message's frames, read where they lie: in a ring slot
//! over shm://, in the receiver's own buffer over zmq.

use ptmp_data::zmsg::zmsg_frames;
use ptmp_data::Frames;

/// The frames of one message handed to the closure of
/// [`Receiver::recv_raw_with`](crate::Receiver::recv_raw_with), borrowed
/// for the length of the call: nothing is copied out of the ring.
#[derive(Clone, Copy)]
pub struct FramesView<'a> {
    repr: Repr<'a>,
}

#[derive(Clone, Copy)]
enum Repr<'a> {
    /// `zmsg_encode` form, checked well framed, with its frame count.
    Zmsg(&'a [u8], usize),
    /// Bytes a writer outside ptmp put in the ring: one frame.
    One(&'a [u8]),
    /// Frames received over zmq.
    Held(&'a Frames),
}

impl<'a> FramesView<'a> {
    /// A message in `zmsg_encode` form of `n` frames (already walked).
    pub(crate) fn zmsg(bytes: &'a [u8], n: usize) -> Self {
        FramesView {
            repr: Repr::Zmsg(bytes, n),
        }
    }

    /// A message of one frame, `bytes`.
    pub(crate) fn one(bytes: &'a [u8]) -> Self {
        FramesView {
            repr: Repr::One(bytes),
        }
    }

    /// The frames of `f`.
    pub(crate) fn held(f: &'a Frames) -> Self {
        FramesView {
            repr: Repr::Held(f),
        }
    }

    /// How many frames.
    pub fn len(&self) -> usize {
        match self.repr {
            Repr::Zmsg(_, n) => n,
            Repr::One(_) => 1,
            Repr::Held(f) => f.len(),
        }
    }

    /// True for a message of no frames.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Frame `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<&'a [u8]> {
        match self.repr {
            Repr::Held(f) => f.get(i),
            _ => self.iter().nth(i),
        }
    }

    /// The frames in order.
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + Clone + 'a {
        let (zmsg, one, held): (&[u8], Option<&[u8]>, Option<&Frames>) = match self.repr {
            Repr::Zmsg(b, _) => (b, None, None),
            Repr::One(b) => (&[], Some(b), None),
            Repr::Held(f) => (&[], None, Some(f)),
        };
        // A slot overwritten while it is read may no longer parse: the walk
        // then ends early, and the receive throws the result away.
        zmsg_frames(zmsg)
            .map_while(Result::ok)
            .chain(one)
            .chain(held.into_iter().flat_map(|f| f.iter()))
    }

    /// The bytes of all frames together.
    pub fn total_bytes(&self) -> usize {
        match self.repr {
            Repr::Held(f) => f.total_bytes(),
            Repr::One(b) => b.len(),
            Repr::Zmsg(..) => self.iter().map(<[u8]>::len).sum(),
        }
    }

    /// Copy the frames into `out`, replacing what it held.
    pub fn copy_to(&self, out: &mut Frames) {
        out.clear();
        for f in self.iter() {
            out.push(f);
        }
    }
}

impl std::fmt::Debug for FramesView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
