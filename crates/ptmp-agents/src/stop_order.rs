//! The order in which to stop agents: upstream first, so what is in
//! flight drains downstream before each receiver stops.

use crate::spec::Proxy;
use ptmp::SocketConfig;

/// A key under which a bound and a connected address of the same channel
/// meet: the address itself, except for tcp, where `*`, `0.0.0.0`, a host
/// name and `127.0.0.1` may all name the same listener, so the port alone.
pub(crate) fn channel_key(address: &str) -> String {
    match address.strip_prefix("tcp://") {
        Some(rest) => format!("tcp:{}", rest.rsplit(':').next().unwrap_or(rest)),
        None => address.to_string(),
    }
}

/// An order in which to stop `agents` so each stops after every agent that
/// feeds it (by matching output and input addresses); agents in a cycle
/// keep their configuration order.
pub fn upstream_first(agents: &[&Proxy]) -> Vec<usize> {
    let keys = |cfgs: Vec<&SocketConfig>| -> Vec<String> {
        cfgs.iter()
            .flat_map(|c| c.endpoints().map(|(_, e)| channel_key(&e.address)))
            .collect()
    };
    let io: Vec<(Vec<String>, Vec<String>)> = agents
        .iter()
        .map(|p| {
            let (i, o) = p.io();
            (keys(i), keys(o))
        })
        .collect();
    let n = agents.len();
    // feeds[a] holds b when a's output meets b's input.
    let mut feeds = vec![Vec::new(); n];
    for a in 0..n {
        for b in 0..n {
            if a != b && io[a].1.iter().any(|k| io[b].0.contains(k)) {
                feeds[a].push(b);
            }
        }
    }
    upstream_order(&feeds)
}

/// An order of nodes `0..feeds.len()` in which each comes after every node
/// feeding it (`feeds[a]` lists the nodes `a` feeds, each once); in a cycle,
/// the first node not yet placed goes next.
pub fn upstream_order(feeds: &[Vec<usize>]) -> Vec<usize> {
    let n = feeds.len();
    let mut indeg = vec![0usize; n];
    for f in feeds {
        for &b in f {
            indeg[b] += 1;
        }
    }
    let mut order = Vec::with_capacity(n);
    let mut done = vec![false; n];
    while order.len() < n {
        // The first agent (in config order) with nothing upstream left; in
        // a cycle, the first not yet stopped.
        let next = (0..n)
            .find(|&i| !done[i] && indeg[i] == 0)
            .or_else(|| (0..n).find(|&i| !done[i]))
            .expect("some agent remains");
        done[next] = true;
        order.push(next);
        for &b in &feeds[next] {
            indeg[b] = indeg[b].saturating_sub(1);
        }
    }
    order
}
