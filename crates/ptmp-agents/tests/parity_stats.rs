//! Parity of the shapes of `stats`, `stats_graphite` and the agents'
//! `metrics` with PTMP's, against what the C++ code sent for the same
//! input (tests/golden/README.md). The figures themselves depend on wall
//! time; the keys, their nesting, the Graphite paths and which timestamp
//! each line carries do not.

mod parity_support;

use parity_support::{golden, read_sets};
use ptmp_agents::metrics::Meter;
use ptmp_agents::{graphite_lines, Stats};
use serde_json::Value;
use std::collections::BTreeSet;

fn lines(name: &str) -> BTreeSet<String> {
    std::fs::read_to_string(golden(name))
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

/// A path with its link and channel names made generic, as in the
/// golden files: `0x3` -> `0x*`, `ch1007` -> `ch*`.
fn generic(path: &str) -> String {
    path.split('.')
        .map(|p| {
            let hex = p
                .strip_prefix("0x")
                .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()));
            let chan = p
                .strip_prefix("ch")
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
            if hex {
                "0x*"
            } else if chan {
                "ch*"
            } else {
                p
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

fn paths(v: &Value, pre: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = if pre.is_empty() {
                    k.clone()
                } else {
                    format!("{pre}.{k}")
                };
                paths(x, &p, out);
            }
        }
        _ => {
            out.insert(generic(pre));
        }
    }
}

/// The stats messages of the golden input: one link and one channel
/// message over all of it.
fn messages() -> (Value, Value) {
    let mut st = Stats::new("tpsets", 50.0, 0);
    for (i, s) in read_sets("input/merged.txt").iter().enumerate() {
        st.add(s, 1_700_000_000_000_000 + i as i64, 100);
    }
    (st.link_message(1000), st.chan_message(1000))
}

/// Every key PTMP's stats sent, nested as PTMP nests it (the channel
/// message under "ptmp", the link message not), and no other.
#[test]
fn stats_messages_have_ptmps_keys() {
    let (links, chans) = messages();
    let mut ours = BTreeSet::new();
    paths(&links, "", &mut ours);
    paths(&chans, "", &mut ours);
    assert_eq!(ours, lines("cpp/stats_shape.txt"));
}

/// The Graphite lines of those messages: PTMP's paths (no leading dot,
/// the channel lines under `ptmp.`), link lines stamped with the link's
/// data second, the others with the arrival time. PTMP skipped the lines
/// whose value it computed as NaN (sent as null); ours are numbers.
#[test]
fn graphite_paths_and_timestamps_are_ptmps() {
    let (links, chans) = messages();
    let arrival = 1_700_000_000;
    let mut text = String::new();
    graphite_lines(&links, "", arrival, &mut text);
    graphite_lines(&chans, "", arrival, &mut text);
    let mut ours = BTreeSet::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(f.len(), 3, "{l}");
        assert!(!f[0].starts_with('.'), "{l}");
        f[1].parse::<f64>().unwrap();
        let ts: i64 = f[2].parse().unwrap();
        let kind = if ts == arrival { "arrival" } else { "data" };
        if kind == "data" {
            // The link's `now`: its first set's tstart / 50 ticks per us.
            assert_eq!(ts, 1_000_025_007 / 50 / 1_000_000, "{l}");
        }
        ours.insert(format!("{} {kind}", generic(f[0])));
    }
    let cpp = lines("cpp/graphite_paths.txt");
    let missing: Vec<_> = cpp.difference(&ours).collect();
    assert!(
        missing.is_empty(),
        "PTMP's lines not made here: {missing:?}"
    );
    let extra: Vec<_> = ours.difference(&cpp).collect();
    assert!(
        extra.iter().all(|l| l.contains(".rms ")),
        "only PTMP's null (NaN) figures are extra: {extra:?}"
    );
}

/// A window's metric message has the tree PTMP's window sent: every key
/// of every message in the golden file, and no other.
#[test]
fn metrics_tree_is_ptmps() {
    let m = Meter::new(50.0);
    m.note_tardy_tps(0);
    let input = read_sets("input/merged.txt");
    for s in &input[..10] {
        m.note_in(Some(s));
        m.note_out(Some(s));
    }
    let ours_v = ptmp_agents::metrics::wrap(&[], m.take());
    let mut ours = BTreeSet::new();
    paths(&ours_v, "", &mut ours);
    let text = std::fs::read_to_string(golden("cpp/metrics.jsonl")).unwrap();
    let mut n = 0;
    for l in text.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        let mut cpp = BTreeSet::new();
        paths(&v, "", &mut cpp);
        assert_eq!(ours, cpp, "{l}");
        n += 1;
    }
    assert!(n >= 2);
    // A second period keeps the window's key.
    let again = m.take();
    assert!(again["rates"]["tardytps"].is_number());
}
