//! Parity of `replay` with PTMP's TPReplay (tests/golden/README.md): link
//! 1 replayed by the C++ code at speed 50 with `rewrite_count` 1 and
//! `rewrite_tstart` 1000. The sets it passed on (out-of-order ones
//! dropped), their renumbered counts, and their tstart rewritten from
//! their `created` must be ours, set by set.

mod parity_support;

use parity_support::read_sets;
use ptmp_agents::{PaceStep, Pacer};
use std::time::Instant;

#[test]
fn replay_drops_renumbers_and_rewrites_as_ptmp() {
    let input = read_sets("input/link1.txt");
    let cpp = read_sets("cpp/replay.txt");
    let mut p = Pacer::new(50.0, true, 1000);
    let t0 = Instant::now();
    let mut cpp_it = cpp.iter();
    let mut n = 0;
    for s in &input {
        match p.step(s, t0) {
            PaceStep::Drop => continue,
            PaceStep::At(_) => {}
            PaceStep::Never => panic!("no data-time jump in this input"),
        }
        let c = cpp_it.next().expect("PTMP passed as many sets");
        let mut ours = s.clone();
        // The send time is the wall clock: take PTMP's.
        p.rewrite(&mut ours, c.created);
        assert_eq!(ours, *c, "set {n}");
        n += 1;
    }
    assert!(cpp_it.next().is_none());
    assert_eq!(n, 494);
    assert_eq!(p.out_of_order, 6);
}
