//! The frames of a request and of its response over ZeroMQ (the table in
//! the module above): what is put on the wire and how what comes off it
//! is read, with nothing assumed of the peer.

/// The status byte of a response that carries the answer.
pub(crate) const ANSWER: u8 = 0;
/// The status byte of a refusal; the body is why.
pub(crate) const REFUSED: u8 = 1;
/// The status byte of a request the server could not read; the body is why.
pub(crate) const UNREADABLE: u8 = 2;

use std::ops::Deref;

/// A request's id on the wire.
pub(crate) type WireId = [u8; 8];

/// A request as a server's ROUTER received it, after the peer's routing id.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Asked<'a> {
    /// From a ptmp client: its id and the request.
    Tagged(WireId, &'a [u8]),
    /// From a REQ socket: the request alone.
    Plain(&'a [u8]),
    /// Neither: why, and whether the sender put the delimiter first (if
    /// not, it cannot be answered in a way it reads, and is only counted).
    Unreadable(String, bool),
}

/// Read the frames a server received after the routing id.
pub(crate) fn asked<M: Deref<Target = [u8]>>(frames: &[M]) -> Asked<'_> {
    match frames {
        [d, id, body] if d.is_empty() => match <WireId>::try_from(&id[..]) {
            Ok(id) => Asked::Tagged(id, &body[..]),
            Err(_) => Asked::Unreadable(
                format!("a request id of {} bytes, where 8 are expected", id.len()),
                true,
            ),
        },
        [d, body] if d.is_empty() => Asked::Plain(&body[..]),
        [d, ..] if d.is_empty() => Asked::Unreadable(
            format!(
                "{} frames after the delimiter, where 1 (a REQ socket's request) or 2 (id, request) are expected",
                frames.len() - 1
            ),
            true,
        ),
        _ => Asked::Unreadable(
            "no empty delimiter frame first (a DEALER must send one before the request)".into(),
            false,
        ),
    }
}

/// A response as a client received it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Answered<'a> {
    /// The id it answers, its status and body.
    Tagged(WireId, u8, &'a [u8]),
    /// Not a response this client can read: why.
    Unreadable(String),
}

/// Read the frames a client received.
pub(crate) fn answered<M: Deref<Target = [u8]>>(frames: &[M]) -> Answered<'_> {
    match frames {
        [d, id, status, body] if d.is_empty() => match (<WireId>::try_from(&id[..]), &status[..]) {
            (Ok(id), [s]) if *s <= UNREADABLE => Answered::Tagged(id, *s, &body[..]),
            _ => Answered::Unreadable("a bad id or status frame".into()),
        },
        _ => Answered::Unreadable(format!(
            "{} frames, where 4 (delimiter, id, status, body) are expected",
            frames.len()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(parts: &[&[u8]]) -> Vec<Vec<u8>> {
        parts.iter().map(|p| p.to_vec()).collect()
    }

    #[test]
    fn what_a_server_reads() {
        let id = 7u64.to_le_bytes();
        assert_eq!(
            asked(&v(&[b"", &id, b"hi"])),
            Asked::Tagged(id, b"hi".as_slice())
        );
        assert_eq!(asked(&v(&[b"", b"hi"])), Asked::Plain(b"hi".as_slice()));
        assert!(matches!(asked(&v(&[b"", b"123", b"hi"])),
            Asked::Unreadable(w, true) if w.contains("id of 3 bytes")));
        assert!(matches!(asked(&v(&[b"", b"a", b"b", b"c"])),
            Asked::Unreadable(w, true) if w.contains("3 frames")));
        assert!(matches!(asked(&v(&[b"hi"])), Asked::Unreadable(_, false)));
        assert!(matches!(asked(&v(&[])), Asked::Unreadable(_, false)));
    }

    #[test]
    fn what_a_client_reads() {
        let id = 9u64.to_le_bytes();
        assert_eq!(
            answered(&v(&[b"", &id, &[ANSWER], b"yes"])),
            Answered::Tagged(id, ANSWER, b"yes".as_slice())
        );
        assert!(matches!(
            answered(&v(&[b"", &id, &[9], b"?"])),
            Answered::Unreadable(_)
        ));
        assert!(matches!(
            answered(&v(&[b"", &id, b"yes"])),
            Answered::Unreadable(_)
        ));
    }
}
