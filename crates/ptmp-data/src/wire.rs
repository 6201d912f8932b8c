//! PTMP's data message: exactly two frames, `[version, payload]`.
//!
//! `version` is a 4-byte native-endian C `int` holding 0; `payload` is a
//! serialized [`TPSet`]. There is no topic frame: on PUB/SUB the
//! version frame serves as the topic and subscribers subscribe to "".

use crate::codec::{decode_tpset_into, DecodeError};
use crate::{Frames, TPSet};

/// The only message version PTMP defines.
pub const VERSION: i32 = 0;

/// The version frame as it goes on the wire.
pub const VERSION_FRAME: [u8; 4] = VERSION.to_ne_bytes();

/// Why a received message is not a PTMP data message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The message has this many frames instead of 2.
    #[error("message has {0} frame(s); a PTMP message has exactly 2 (version, payload)")]
    FrameCount(usize),
    /// The first frame has this many bytes instead of the 4 of a C `int`.
    #[error("version frame is {0} byte(s); it must be a 4-byte int")]
    VersionSize(usize),
    /// The version frame holds this number instead of [`VERSION`].
    #[error("message version is {0}; only version 0 is known")]
    Version(i32),
    /// The second frame is not a valid serialized TPSet.
    #[error("payload is not a TPSet: {0}")]
    Payload(#[from] DecodeError),
}

/// Check that `frame` is a 4-byte native-endian [`VERSION`], the first frame
/// of every PTMP data message.
#[inline]
pub fn check_version(frame: &[u8]) -> Result<(), WireError> {
    let v: [u8; 4] = frame
        .try_into()
        .map_err(|_| WireError::VersionSize(frame.len()))?;
    match i32::from_ne_bytes(v) {
        VERSION => Ok(()),
        other => Err(WireError::Version(other)),
    }
}

/// Decode a whole message given as its frames into `out`, reusing its
/// storage; fails on anything but exactly `[VERSION_FRAME, valid TPSet]`.
pub fn decode_message<F: AsRef<[u8]>>(frames: &[F], out: &mut TPSet) -> Result<(), WireError> {
    match frames {
        [version, payload] => decode_pair(version.as_ref(), payload.as_ref(), out),
        _ => Err(WireError::FrameCount(frames.len())),
    }
}

/// [`decode_message`] for a message held in a [`Frames`] buffer (as a
/// dump file or a schema-blind receive gives it).
pub fn decode_frames(frames: &Frames, out: &mut TPSet) -> Result<(), WireError> {
    match (frames.len(), frames.get(0), frames.get(1)) {
        (2, Some(version), Some(payload)) => decode_pair(version, payload, out),
        (n, ..) => Err(WireError::FrameCount(n)),
    }
}

/// Decode the two frames of a message whose frame count the caller has
/// checked: the one place the version and the payload of a PTMP message
/// are read, whatever carried them (zmq, `shm://`, a dump file).
#[inline]
pub fn decode_pair(version: &[u8], payload: &[u8], out: &mut TPSet) -> Result<(), WireError> {
    check_version(version)?;
    decode_tpset_into(payload, out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::encode_tpset;

    #[test]
    fn version_frame_is_four_zero_bytes() {
        assert_eq!(VERSION_FRAME, [0, 0, 0, 0]);
    }

    #[test]
    fn typed_errors() {
        let mut t = TPSet::default();
        let mut payload = Vec::new();
        encode_tpset(&t, &mut payload);
        assert!(decode_message(&[&VERSION_FRAME[..], &payload], &mut t).is_ok());
        assert_eq!(
            decode_message(&[&payload[..]], &mut t),
            Err(WireError::FrameCount(1))
        );
        assert_eq!(
            decode_message(&[&VERSION_FRAME[..], &payload, b"x"], &mut t),
            Err(WireError::FrameCount(3))
        );
        assert_eq!(
            decode_message(&[&[0u8; 3][..], &payload], &mut t),
            Err(WireError::VersionSize(3))
        );
        assert_eq!(
            decode_message(&[&1i32.to_ne_bytes()[..], &payload], &mut t),
            Err(WireError::Version(1))
        );
        assert!(matches!(
            decode_message(&[&VERSION_FRAME[..], &b"\x08"[..]], &mut t),
            Err(WireError::Payload(_))
        ));
    }
}
