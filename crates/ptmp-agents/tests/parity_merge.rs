//! Parity of `sorted` and `zipper` with PTMP's TPSorted and TPZipper on
//! paced links, set by set, against the output of the C++ code
//! (tests/golden/README.md): four links of 500 sets (1 % out of order,
//! 0.5 % far behind, empty sets, count gaps), each through PTMP's
//! `replay` at 50 ticks/us into the merge (`tardy` / `sync_time` 1000 ms).
//! PTMP's output was the exact time-ordered merge of what the replays
//! passed on. The merges are driven here on a virtual clock with the
//! arrival times the replays give, for several start offsets of the links.

mod parity_support;

use parity_support::{drive, ident, read_sets, replay};
use ptmp::TPSet;
use ptmp_agents::merge::{Merge, Sorted, TardyPolicy, Zipper};
use std::time::Duration;

const MS: i64 = 1000;

fn golden_ids(name: &str) -> Vec<(u32, u32, u64)> {
    let p = parity_support::golden(name);
    std::fs::read_to_string(&p)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
            )
        })
        .collect()
}

fn links() -> Vec<Vec<TPSet>> {
    (1..=4)
        .map(|d| read_sets(&format!("input/link{d}.txt")))
        .collect()
}

/// The arrivals at the merge: link `d` replayed from `starts[d]` (µs).
fn arrivals(links: &[Vec<TPSet>], starts: &[i64]) -> Vec<(i64, usize, TPSet)> {
    let mut v = Vec::new();
    for (i, (l, &t0)) in links.iter().zip(starts).enumerate() {
        v.extend(replay(l, t0, 50).into_iter().map(|(t, s)| (t, i, s)));
    }
    v
}

/// Start offsets of the four replays: together; staggered as a runner
/// starting them one after the other does; and up to 0.9 s apart, still
/// within `tardy`.
const STARTS: [[i64; 4]; 4] = [
    [0, 0, 0, 0],
    [0, 3 * MS, 7 * MS, 12 * MS],
    [40 * MS, 0, 25 * MS, 5 * MS],
    [0, 300 * MS, 600 * MS, 900 * MS],
];

#[test]
fn sorted_matches_ptmp_on_paced_links() {
    let want = golden_ids("cpp/sorted.ids");
    let links = links();
    assert_eq!(want.len(), 1972, "what the replays pass on");
    for starts in STARTS {
        let mut core = Sorted::new(4, Duration::from_millis(1000), TardyPolicy::Drop);
        let out = drive(&mut core, arrivals(&links, &starts), -1);
        let got: Vec<_> = out.iter().map(ident).collect();
        if let Some(i) = got.iter().zip(&want).position(|(a, b)| a != b) {
            panic!(
                "starts {starts:?}: set {i}: {:?} != PTMP's {:?}",
                got[i], want[i]
            );
        }
        assert_eq!(got.len(), want.len(), "starts {starts:?}");
        let st = core.stream_stats();
        assert!(st.iter().all(|s| s.tardy == 0 && s.received == s.sent));
    }
}

#[test]
fn zipper_matches_ptmp_on_paced_links() {
    let want = golden_ids("cpp/zipper.ids");
    let links = links();
    for starts in STARTS {
        let mut core = Zipper::new(4, Duration::from_millis(1000), TardyPolicy::Drop);
        let out = drive(&mut core, arrivals(&links, &starts), -1);
        let got: Vec<_> = out.iter().map(ident).collect();
        assert_eq!(got, want, "starts {starts:?}");
    }
}

/// A link that starts more than `tardy` after the others: PTMP's rule
/// stops waiting for it, so its first sets are tardy. Whatever the
/// timing: the output is in tstart order, nothing is sent twice, and every
/// set passed on by the replays is sent or counted tardy.
#[test]
fn sorted_properties_when_a_link_is_late_beyond_tardy() {
    let links = links();
    for (late, policy) in [
        (1500 * MS, TardyPolicy::Drop),
        (3000 * MS, TardyPolicy::Drop),
        (1500 * MS, TardyPolicy::Send),
    ] {
        let arr = arrivals(&links, &[0, 0, late, 0]);
        let n = arr.len() as u64;
        let mut core = Sorted::new(4, Duration::from_millis(1000), policy);
        let out = drive(&mut core, arr, -1);
        let st = core.stream_stats();
        let tardy: u64 = st.iter().map(|s| s.tardy).sum();
        assert!(
            tardy > 0 && st[2].tardy == tardy,
            "only the late link is tardy"
        );
        let mut ids: Vec<_> = out.iter().map(ident).collect();
        if policy == TardyPolicy::Drop {
            assert!(out.windows(2).all(|w| w[0].tstart <= w[1].tstart));
            assert_eq!(out.len() as u64 + tardy, n);
        } else {
            assert_eq!(out.len() as u64, n);
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), out.len(), "no set twice");
    }
}
