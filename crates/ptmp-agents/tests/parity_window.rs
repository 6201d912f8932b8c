//! Parity of `window` with PTMP's TPWindow, set by set, against the output
//! of the C++ code on the same input (tests/golden/README.md): four links
//! merged round robin (out-of-order and far-behind sets, empty sets,
//! TrigPrims with extreme channel and ADC values, many TrigPrims sharing a
//! tstart), windows of tspan 3000 with toffset 1234, tbuf 30000, detid 77.

mod parity_support;

use parity_support::read_sets;
use ptmp::TPSet;
use ptmp_agents::Windower;

const TSPAN: u64 = 3000;
const TOFFSET: u64 = 1234;
const TBUF: u64 = 30000;

fn run(w: &mut Windower, input: &[TPSet]) -> Vec<TPSet> {
    let mut out = Vec::new();
    for s in input {
        w.add(s, &mut |o| out.push(o.clone()));
    }
    out
}

/// Compare one window with PTMP's: every field but `created`, and the
/// TrigPrims in order. PTMP sums `totaladc` in 32 bits, wrapping; ours
/// saturates at 2^32 - 1 (the true sum does not fit either way).
fn same(i: usize, ours: &TPSet, cpp: &TPSet) {
    let what = format!("window {i} (tstart {})", cpp.tstart);
    assert_eq!(
        (ours.count, ours.detid, ours.tstart, ours.tspan),
        (cpp.count, cpp.detid, cpp.tstart, cpp.tspan),
        "{what}"
    );
    assert_eq!(ours.tps, cpp.tps, "{what}: TrigPrims and their order");
    assert_eq!(
        (ours.chanbeg, ours.chanend),
        (cpp.chanbeg, cpp.chanend),
        "{what}"
    );
    let sum: u64 = cpp.tps.iter().map(|t| u64::from(t.adcsum())).sum();
    assert_eq!(cpp.totaladc(), sum as u32, "{what}: PTMP's sum wraps");
    assert_eq!(
        ours.totaladc(),
        sum.min(u64::from(u32::MAX)) as u32,
        "{what}"
    );
}

/// With PTMP's tardy rule (`tardy_ends_set`), every window PTMP sent is
/// the same here, TrigPrims in the same order (equal tstarts included:
/// the buffer is PTMP's libstdc++ heap, step for step). PTMP drops what
/// it holds at the end; ours holds the same, flushed only at stop.
#[test]
fn windows_match_ptmp_set_by_set() {
    let input = read_sets("input/merged.txt");
    let cpp = read_sets("cpp/window.txt");
    assert_eq!(input.len(), 2000);
    let mut w = Windower::new(TSPAN, TOFFSET, TBUF, Some(77)).tardy_ends_set(true);
    let ours = run(&mut w, &input);
    assert_eq!(ours.len(), cpp.len(), "windows sent before the stop");
    for (i, (o, c)) in ours.iter().zip(&cpp).enumerate() {
        same(i, o, c);
    }
    // Windows holding TrigPrims of equal tstart, whose order is the heap's
    // (the unit test of the heap shows it is not arrival order).
    let ties = cpp
        .iter()
        .flat_map(|s| s.tps.windows(2))
        .filter(|p| p[0].tstart == p[1].tstart)
        .count();
    assert!(ties > 40, "{ties}");
    // What is held at the end goes out at stop, in later windows.
    let last = cpp.last().unwrap().tstart;
    let mut tail = Vec::new();
    w.flush(&mut |o| tail.push(o.clone()));
    assert!(!tail.is_empty() && tail.iter().all(|s| s.tstart > last));
    assert_eq!(w.tps_in, w.tps_out + w.tardy);
}

/// Our default keeps the on-time TrigPrims that follow a tardy one in its
/// set, which PTMP drops: every TrigPrim PTMP sent is sent here too, in a
/// window starting at the same tick; the extra ones are exactly those
/// PTMP's rule drops.
#[test]
fn default_rule_sends_what_ptmp_sends_and_the_on_time_rest() {
    let input = read_sets("input/merged.txt");
    let cpp = read_sets("cpp/window.txt");
    let mut w = Windower::new(TSPAN, TOFFSET, TBUF, Some(77));
    let mut ours = run(&mut w, &input);
    w.flush(&mut |o| ours.push(o.clone()));
    let key = |s: &TPSet| -> Vec<(u64, u32, u64, u32)> {
        s.tps
            .iter()
            .map(|t| (s.tstart, t.channel, t.tstart, t.adcsum()))
            .collect()
    };
    let mut have: Vec<_> = ours.iter().flat_map(key).collect();
    have.sort_unstable();
    let mut want: Vec<_> = cpp.iter().flat_map(key).collect();
    want.sort_unstable();
    let mut extra = 0usize;
    let mut it = have.iter().peekable();
    for k in &want {
        while it.peek().is_some_and(|h| *h < k) {
            it.next();
            extra += 1;
        }
        assert_eq!(it.next(), Some(k), "PTMP's TrigPrim {k:?} sent here too");
    }
    extra += it.count();
    let mut strict = Windower::new(TSPAN, TOFFSET, TBUF, Some(77)).tardy_ends_set(true);
    let mut s_out = run(&mut strict, &input);
    strict.flush(&mut |o| s_out.push(o.clone()));
    let rest_dropped = (w.tardy as usize).abs_diff(strict.tardy as usize);
    assert!(extra > 0, "this input has sets with a tardy TrigPrim first");
    // What PTMP held at its end comes on top.
    let held: usize = s_out.iter().skip(cpp.len()).map(|s| s.tps.len()).sum();
    assert_eq!(extra, rest_dropped + held);
}
