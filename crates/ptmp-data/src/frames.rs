//! A reusable multi-frame message buffer.

/// The frames of one message stored back to back in one buffer, so that
/// receiving or reading message after message into the same `Frames` stops
/// allocating once it has grown to the largest message.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Frames {
    data: Vec<u8>,
    ends: Vec<usize>,
}

impl Frames {
    /// An empty message holding no allocation until the first frame.
    pub fn new() -> Self {
        Self::default()
    }

    /// Build from a list of frames.
    pub fn from_slices<F: AsRef<[u8]>>(frames: &[F]) -> Self {
        let mut f = Self::new();
        for x in frames {
            f.push(x.as_ref());
        }
        f
    }

    /// Remove all frames, keeping the allocations.
    pub fn clear(&mut self) {
        self.data.clear();
        self.ends.clear();
    }

    /// Make room for `frames` more frames holding `bytes` more bytes in all,
    /// without the headroom ordinary growth leaves.
    pub fn reserve_exact(&mut self, frames: usize, bytes: usize) {
        self.ends.reserve_exact(frames);
        self.data.reserve_exact(bytes);
    }

    /// Append one frame.
    pub fn push(&mut self, frame: &[u8]) {
        self.data.extend_from_slice(frame);
        self.ends.push(self.data.len());
    }

    /// Append a zero-filled frame of `len` bytes and return it for filling.
    pub fn push_uninit(&mut self, len: usize) -> &mut [u8] {
        let start = self.data.len();
        self.data.resize(start + len, 0);
        self.ends.push(self.data.len());
        &mut self.data[start..]
    }

    /// Number of frames.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when there are no frames (a message of empty frames is not empty).
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Total bytes over all frames.
    pub fn total_bytes(&self) -> usize {
        self.data.len()
    }

    /// Frame `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        Some(&self.data[start..end])
    }

    /// Iterate over the frames in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + Clone + '_ {
        (0..self.len()).map(move |i| self.get(i).expect("index in range"))
    }

    /// Copy out as one `Vec` per frame.
    pub fn to_vecs(&self) -> Vec<Vec<u8>> {
        self.iter().map(|f| f.to_vec()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_get_clear() {
        let mut f = Frames::new();
        f.push(b"ab");
        f.push(b"");
        f.push_uninit(3).copy_from_slice(b"xyz");
        assert_eq!(f.len(), 3);
        assert_eq!(f.get(0), Some(&b"ab"[..]));
        assert_eq!(f.get(1), Some(&b""[..]));
        assert_eq!(f.get(2), Some(&b"xyz"[..]));
        assert_eq!(f.get(3), None);
        assert_eq!(f.total_bytes(), 5);
        assert_eq!(f.to_vecs(), vec![b"ab".to_vec(), vec![], b"xyz".to_vec()]);
        f.clear();
        assert!(f.is_empty());
        assert_eq!(f, Frames::from_slices::<&[u8]>(&[]));
    }
}
