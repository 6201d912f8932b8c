//! What a run settles before its agents start: each PUB output waits for
//! the subscribers this same run gives it.
//!
//! A PUB drops what it sends before a subscriber has joined, and a SUB
//! joins some time after its socket connects (at once over inproc, after
//! the TCP and ZeroMQ handshakes over tcp, or a reconnect interval later
//! when it connected before the PUB bound). A source replaying a file
//! sends its first sets within that time, so which agent was listed first
//! decided how much of the start was lost. Given the count of the run's
//! own SUB inputs on its channel, a PUB's first send waits for them (its
//! `subscribers` key, bounded by its `subscribers_timeout_ms`), whatever
//! the order of the agents.

use crate::stop_order::channel_key;
use crate::Proxy;
use ptmp::{SocketConfig, SocketType, Transport};

/// The channels a socket is attached to (see [`channel_key`]).
fn keys(c: &SocketConfig) -> Vec<String> {
    c.endpoints()
        .map(|(_, e)| channel_key(&e.address))
        .collect()
}

/// Set, on each PUB output of `proxies` that is not told already how many
/// subscribers to wait for, the number of SUB inputs among `proxies` that
/// share one of its channels. Returns how many outputs were changed. Over
/// `shm://` nothing is dropped before a reader joins, so those are left.
pub fn wait_for_own_subscribers(proxies: &mut [Proxy]) -> usize {
    let subs: Vec<Vec<String>> = proxies
        .iter()
        .flat_map(|p| p.leaves())
        .flat_map(|p| p.io().0)
        .filter(|c| c.socket_type() == SocketType::Sub)
        .map(keys)
        .collect();
    let mut changed = 0;
    for p in proxies.iter_mut() {
        for leaf in p.leaves_mut() {
            for out in leaf.outputs_mut() {
                if out.socket_type() != SocketType::Pub
                    || out.subscribers() > 0
                    || out.uses(Transport::Shm)
                {
                    continue;
                }
                let mine = keys(out);
                let n = subs
                    .iter()
                    .filter(|s| s.iter().any(|k| mine.contains(k)))
                    .count();
                if n > 0 {
                    *out = out.with_subscribers(n);
                    changed += 1;
                }
            }
        }
    }
    changed
}
