//! Which nodes see whole numbered streams: where repeats are dropped by
//! number, and where a sink's count of a stream is complete.

use crate::{Graph, Pattern};
use ptmp_agents::Kind;
use serde_json::Value;

/// Per node: whether everything reaching it comes from graph sources
/// through workers and proxies only, which pass sets on unchanged, so each
/// set's (`detid`, `count`) names it. Workers, proxies and sinks fed that
/// way drop sets they have seen before (`dedup`): a restarted reader or
/// source delivers some again. Other agents make sets of their own (a
/// window, a replay of a file), whose numbers need not be unique; and when
/// two sources send the same `detid`, no number names one set.
pub fn counted_streams(g: &Graph) -> Vec<bool> {
    let n = g.nodes.len();
    let mut feeders = vec![Vec::new(); n];
    for e in g
        .edges
        .iter()
        .filter(|e| e.to.iter().all(|t| t.port != "done"))
    {
        for t in &e.to {
            feeders[t.node].extend(e.from.iter().map(|f| f.node));
        }
    }
    // Two sources sending the same detid would number the same sets:
    // then nothing is judged by its number.
    let mut detids = std::collections::BTreeSet::new();
    for node in g.nodes.iter().filter(|x| x.kind == Kind::Source) {
        let d = node.data.get("detid").and_then(Value::as_u64).unwrap_or(0);
        if !detids.insert(d) {
            return (0..n).map(|k| g.nodes[k].kind == Kind::Source).collect();
        }
    }
    let passes = |k: usize| g.nodes[k].kind.passes_sets_whole();
    // Sources are counted; a passing node is when all its feeders are
    // (the data edges form no cycle, so this settles in n rounds).
    let mut counted: Vec<bool> = (0..n).map(|k| g.nodes[k].kind == Kind::Source).collect();
    for _ in 0..n {
        let mut changed = false;
        for k in 0..n {
            if counted[k] || feeders[k].is_empty() {
                continue;
            }
            let ok = feeders[k]
                .iter()
                .all(|&f| counted[f] && (g.nodes[f].kind == Kind::Source || passes(f)));
            if ok && (passes(k) || g.nodes[k].kind == Kind::Sink) {
                counted[k] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    counted
}

/// Per node: whether it receives whole streams — it is counted (see
/// [`counted_streams`]) and no pushpull edge on the way to it deals sets
/// out round-robin among several inputs, so a number it never receives is
/// a set lost upstream, not one a sibling took.
pub fn whole_streams(g: &Graph) -> Vec<bool> {
    let counted = counted_streams(g);
    let n = g.nodes.len();
    let mut whole: Vec<bool> = (0..n).map(|k| g.nodes[k].kind == Kind::Source).collect();
    for _ in 0..n {
        let mut changed = false;
        for k in 0..n {
            if whole[k] || !counted[k] {
                continue;
            }
            let ok = g
                .edges
                .iter()
                .filter(|e| e.to.iter().any(|t| t.node == k && t.port != "done"))
                .all(|e| {
                    !(e.pattern == Pattern::PushPull && e.to.len() > 1)
                        && e.from.iter().all(|f| whole[f.node])
                });
            if ok {
                whole[k] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    whole
}
