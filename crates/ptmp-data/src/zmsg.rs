//! CZMQ's `zmsg_encode` framing: one multi-frame message as one buffer.
//!
//! Each frame is one length byte when it is shorter than 255 bytes,
//! otherwise `0xFF` and a 4-byte big-endian length, then the frame's bytes.
//! It is the record body of a czmqat dump file (in `ptmp-formats`) and the body of
//! one message in a `shm://` ring slot, so both read and write it here.

/// Bytes the `zmsg_encode` form of `frames` takes.
pub fn zmsg_len<'a>(frames: impl IntoIterator<Item = &'a [u8]>) -> usize {
    frames
        .into_iter()
        .map(|f| f.len() + if f.len() < 255 { 1 } else { 5 })
        .sum()
}

/// Write the `zmsg_encode` form of `frames` at the start of `out`, which
/// must hold [`zmsg_len`] bytes; returns the bytes written.
pub fn zmsg_write<'a>(frames: impl IntoIterator<Item = &'a [u8]>, out: &mut [u8]) -> usize {
    zmsg_write_with(frames, out, |to, f| to.copy_from_slice(f))
}

/// [`zmsg_write`] copying each frame's bytes with `copy(to, frame)`, where
/// `to` is exactly as long as `frame`: how a writer into shared memory
/// chooses the copy its readers take the bytes from best.
pub fn zmsg_write_with<'a>(
    frames: impl IntoIterator<Item = &'a [u8]>,
    out: &mut [u8],
    copy: impl Fn(&mut [u8], &[u8]),
) -> usize {
    let mut at = 0;
    for f in frames {
        if f.len() < 255 {
            out[at] = f.len() as u8;
            at += 1;
        } else {
            out[at] = 0xff;
            out[at + 1..at + 5].copy_from_slice(&(f.len() as u32).to_be_bytes());
            at += 5;
        }
        copy(&mut out[at..at + f.len()], f);
        at += f.len();
    }
    at
}

/// Append the `zmsg_encode` form of `frames` to `out`.
pub fn zmsg_encode<F: AsRef<[u8]>>(frames: impl IntoIterator<Item = F>, out: &mut Vec<u8>) {
    for f in frames {
        let f = f.as_ref();
        let start = out.len();
        out.resize(start + f.len() + if f.len() < 255 { 1 } else { 5 }, 0);
        zmsg_write([f], &mut out[start..]);
    }
}

/// A malformed `zmsg_encode` buffer: where, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZmsgError {
    /// Offset in the buffer of the frame's length byte.
    pub pos: usize,
    /// Index of the frame.
    pub frame: usize,
    /// What is wrong with the frame, e.g. that its length runs past the end.
    pub what: String,
}

/// The frames of a `zmsg_encode` buffer, borrowed from it, without copying.
#[derive(Clone)]
pub struct ZmsgFrames<'a> {
    buf: &'a [u8],
    pos: usize,
    frame: usize,
    failed: bool,
}

/// Iterate over the frames of a `zmsg_encode` buffer.
pub fn zmsg_frames(buf: &[u8]) -> ZmsgFrames<'_> {
    ZmsgFrames {
        buf,
        pos: 0,
        frame: 0,
        failed: false,
    }
}

impl<'a> Iterator for ZmsgFrames<'a> {
    type Item = Result<&'a [u8], ZmsgError>;

    // Inlined into every walk over a message's frames (a receiver's, per
    // message); what a malformed buffer costs is kept out of line.
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let (at, buf) = (self.pos, self.buf);
        let mut pos = at + 1;
        let mut len = buf[at] as usize;
        if len == 0xff {
            let Some(b) = buf.get(pos..pos + 4) else {
                return Some(Err(self.fail(at, None)));
            };
            len = u32::from_be_bytes(b.try_into().expect("4 bytes")) as usize;
            pos += 4;
        }
        let Some(data) = buf.get(pos..pos.saturating_add(len)) else {
            return Some(Err(self.fail(at, Some((pos, len)))));
        };
        self.pos = pos + len;
        self.frame += 1;
        Some(Ok(data))
    }
}

impl ZmsgFrames<'_> {
    /// End the walk at the frame whose length byte is at `at`: its long
    /// length is cut off (`None`), or it claims `len` bytes from `pos`.
    #[cold]
    #[inline(never)]
    fn fail(&mut self, at: usize, claim: Option<(usize, usize)>) -> ZmsgError {
        self.failed = true;
        let what = match claim {
            None => format!(
                "frame {} has a long-length marker but the buffer ends before its 4 length bytes",
                self.frame
            ),
            Some((pos, len)) => format!(
                "frame {} claims {len} bytes but only {} remain",
                self.frame,
                self.buf.len() - pos
            ),
        };
        ZmsgError {
            pos: at,
            frame: self.frame,
            what,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_short_and_long_frames() {
        let mut out = Vec::new();
        let long = vec![7u8; 300];
        zmsg_encode([&b"\0\0\0\0"[..], &b""[..], &long[..]], &mut out);
        assert_eq!(&out[..6], &[4, 0, 0, 0, 0, 0]);
        assert_eq!(&out[6..11], &[0xff, 0, 0, 1, 44]);
        assert_eq!(out.len(), 11 + 300);
        // Exactly 255 bytes takes the long form, 254 the short one.
        let mut o = Vec::new();
        zmsg_encode([vec![1u8; 255]], &mut o);
        assert_eq!(&o[..5], &[0xff, 0, 0, 0, 255]);
        o.clear();
        zmsg_encode([vec![1u8; 254]], &mut o);
        assert_eq!(o[0], 254);
    }

    #[test]
    fn frames_are_read_back_in_place_and_a_short_buffer_is_named() {
        let mut out = Vec::new();
        zmsg_encode([&b"ab"[..], &vec![3u8; 300][..]], &mut out);
        let got: Vec<_> = zmsg_frames(&out).map(|f| f.unwrap().len()).collect();
        assert_eq!(got, [2, 300]);
        assert_eq!(zmsg_len([&b"ab"[..], &vec![3u8; 300][..]]), out.len());
        let e = zmsg_frames(&out[..out.len() - 1])
            .find_map(Result::err)
            .unwrap();
        assert_eq!((e.frame, e.pos), (1, 3));
        assert!(e.what.contains("claims 300 bytes"), "{}", e.what);
        // A long-length marker cut off before its four bytes, after a good
        // frame: the good frame, then the error naming it, then nothing.
        let mut walk = zmsg_frames(&[1, b'x', 0xff, 0, 0]);
        assert_eq!(walk.next(), Some(Ok(&b"x"[..])));
        let e = walk.next().unwrap().unwrap_err();
        assert_eq!((e.frame, e.pos), (1, 2));
        assert!(e.what.contains("long-length marker"), "{}", e.what);
        assert_eq!(walk.next(), None);
    }
}
