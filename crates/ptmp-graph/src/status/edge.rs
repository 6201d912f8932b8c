//! An edge's state: what the sockets on one edge say, summed by one rule.
//!
//! `ptmp top` (an edge per address), the web monitor's page, `/api/state`
//! and `/metrics` (an edge per graph edge, with its addresses) all call
//! [`EdgeFigures::of`], so they count the same sockets and add them up the
//! same way:
//!
//! - A socket belongs to an edge when every address it binds or connects
//!   is one of the edge's. A socket on addresses of several edges (a
//!   zipper's one input socket over all its inputs) mixes their figures,
//!   which cannot be split again: it counts on none of them.
//! - Sent, bytes, byte rate and stalls are the senders'; received, lost,
//!   errors and latency the receivers'; CURVE refusals either end's.
//! - The rate is the senders' when a sending socket counts, else the
//!   receivers' (what enters the edge; a PUB edge with two subscribers
//!   carries each message once, not twice); `None` when no socket counts.
//! - Latency is the worst receiver's, quantile by quantile.
//!
//! An edge's messaging pattern is named from its sockets' types by
//! [`pattern_of`], for the views that find their edges by address (`ptmp
//! top`, `ptmp run --http`) rather than read them from a graph.

use super::{Latency, SocketStatus};
use serde::Serialize;

/// One edge's figures, as every view shows them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EdgeFigures {
    /// Messages its senders sent so far.
    pub sent: u64,
    /// Messages its receivers took in so far.
    pub received: u64,
    /// Bytes its senders sent so far.
    pub bytes: u64,
    /// Messages per second over about the last second; `None` when no
    /// socket of the edge reported.
    pub rate: Option<f64>,
    /// Bytes per second its senders sent over about the last second.
    pub byte_rate: f64,
    /// Messages its receivers know they lost (a lapped shm reader, a
    /// sequence gap).
    pub lost: u64,
    /// Messages its receivers could not decode.
    pub errors: u64,
    /// Sends that found the queue full.
    pub stalls: u64,
    /// Durable shm readers the sending ring gave up.
    pub readers_given_up: u64,
    /// Clients a CURVE server at either end refused.
    pub curve_refused: u64,
    /// The worst receiver's latency, quantile by quantile; `None` with no
    /// sample.
    pub latency_us: Option<Latency>,
    /// Sockets counted: senders, receivers.
    pub sockets: (usize, usize),
}

impl EdgeFigures {
    /// Whether `sock`'s figures are those of the edge on `addresses`.
    pub fn counts(sock: &SocketStatus, addresses: &[String]) -> bool {
        !sock.endpoints.is_empty() && sock.endpoints.iter().all(|e| addresses.contains(e))
    }

    /// The figures of the edge on `addresses`, from every socket of the
    /// run (those of other edges are passed over).
    pub fn of<'a>(
        addresses: &[String],
        sockets: impl IntoIterator<Item = &'a SocketStatus>,
    ) -> Self {
        let mut f = EdgeFigures::default();
        let (mut send_rate, mut recv_rate) = (0.0, 0.0);
        for s in sockets {
            if !Self::counts(s, addresses) {
                continue;
            }
            f.curve_refused += s.curve_refused.unwrap_or(0);
            if s.sends() {
                f.sockets.0 += 1;
                f.sent += s.messages;
                f.bytes += s.bytes;
                send_rate += s.rate;
                f.byte_rate += s.byte_rate;
                f.stalls += s.stalls;
                f.readers_given_up += s.readers_given_up;
            } else {
                f.sockets.1 += 1;
                f.received += s.messages;
                recv_rate += s.rate;
                f.lost += s.lost;
                f.errors += s.errors;
                if let Some(l) = s.latency_us {
                    let w = f.latency_us.get_or_insert_with(Latency::default);
                    w.p50 = w.p50.max(l.p50);
                    w.p99 = w.p99.max(l.p99);
                    w.max = w.max.max(l.max);
                }
            }
        }
        f.rate = match f.sockets {
            (0, 0) => None,
            (0, _) => Some(recv_rate),
            _ => Some(send_rate),
        };
        f
    }
}

/// The messaging pattern a socket type (upper case) takes part in:
/// `pushpull`, `pubsub`, `pair`, `?` for no type, or the type itself in
/// lower case for the others (`stream`, `router`...).
pub fn pattern_of(stype: &str) -> String {
    match stype {
        "PUSH" | "PULL" => "pushpull".into(),
        "PUB" | "XPUB" | "SUB" | "XSUB" => "pubsub".into(),
        "PAIR" => "pair".into(),
        "" => "?".into(),
        t => t.to_ascii_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::SocketDir;

    fn sock(dir: &str, eps: &[&str], messages: u64, rate: f64) -> SocketStatus {
        SocketStatus {
            dir: if dir == "send" {
                SocketDir::Send
            } else {
                SocketDir::Recv
            },
            endpoints: eps.iter().map(|e| e.to_string()).collect(),
            messages,
            rate,
            ..Default::default()
        }
    }

    /// Senders give the rate, receivers what they took and lost; a socket
    /// on two edges' addresses counts on neither; another edge's sockets
    /// are passed over.
    #[test]
    fn one_rule_for_every_view() {
        let a = vec!["tcp://a:1".to_string()];
        let mut rx = sock("recv", &["tcp://a:1"], 90, 9.0);
        rx.lost = 3;
        rx.latency_us = Some(Latency {
            p50: 5,
            p99: 40,
            max: 70,
        });
        let mut rx2 = sock("recv", &["tcp://a:1"], 95, 9.5);
        rx2.latency_us = Some(Latency {
            p50: 7,
            p99: 30,
            max: 90,
        });
        let mut tx = sock("send", &["tcp://a:1"], 100, 10.0);
        tx.stalls = 2;
        tx.curve_refused = Some(1);
        let both = sock("recv", &["tcp://a:1", "tcp://b:2"], 1000, 100.0);
        let other = sock("send", &["tcp://b:2"], 500, 50.0);
        let all = [rx, rx2, tx, both, other];
        let f = EdgeFigures::of(&a, &all);
        assert_eq!((f.sent, f.received, f.lost, f.stalls), (100, 185, 3, 2));
        assert_eq!(
            (f.rate, f.curve_refused, f.sockets),
            (Some(10.0), 1, (1, 2))
        );
        assert_eq!(
            f.latency_us,
            Some(Latency {
                p50: 7,
                p99: 40,
                max: 90
            })
        );
        // Receivers only: their rate; no socket at all: no rate.
        let f = EdgeFigures::of(&a, &all[..2]);
        assert_eq!(f.rate, Some(18.5));
        let f = EdgeFigures::of(&["tcp://c:3".to_string()], &all);
        assert_eq!((f.rate, f.sockets), (None, (0, 0)));
        // A socket with no address belongs nowhere.
        assert!(!EdgeFigures::counts(&sock("send", &[], 1, 1.0), &a));
    }
}
