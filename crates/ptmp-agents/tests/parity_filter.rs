//! Parity of `filter`'s stamping with PTMP's TPFilter
//! (tests/golden/README.md): the C++ filter with its `dummy_filter`
//! engine on the four merged links. Empty input sets are skipped; every
//! output is numbered from 0 and carries the first input's detid; the rest
//! of each set is the engine's (here, the input's) unchanged. Driven
//! in-process over inproc sockets.

mod parity_support;

use parity_support::{golden, read_sets};
use ptmp::{Receiver, Sender};
use ptmp_agents::filter::{Config, FilterAgent};
use ptmp_agents::{Agent, Cfg, Ctl, Plugins};
use std::time::Duration;

#[test]
fn filter_stamps_as_ptmp() {
    let input = read_sets("input/merged.txt");
    let want: Vec<(u32, u32, u64)> = std::fs::read_to_string(golden("cpp/filter.ids"))
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<u64> = l.split(' ').map(|x| x.parse().unwrap()).collect();
            (f[0] as u32, f[1] as u32, f[2])
        })
        .collect();
    let data = serde_json::json!({
        "input": {"socket": {"type": "PULL", "bind": ["inproc://parity-filter-in"], "hwm": 10000}},
        "output": {"socket": {"type": "PUSH", "bind": ["inproc://parity-filter-out"], "hwm": 10000}},
        "engine": "dummy_filter"
    });
    let c = Config::parse(
        &Cfg::new("filt", &data).unwrap(),
        &data,
        &Plugins::builtin(),
    )
    .unwrap();
    let mut agent = FilterAgent::new("filt".into(), &c).unwrap();
    let ctl = Ctl::new(false);
    let stop = ctl.clone();
    let h = std::thread::spawn(move || agent.run(&ctl).unwrap());
    let sock = |t: &str, end: &str| {
        format!(
            r#"{{"socket": {{"type": "{t}", "connect": ["inproc://parity-filter-{end}"], "hwm": 10000}}}}"#
        )
    };
    let mut rx = Receiver::from_json(&sock("PULL", "out")).unwrap();
    // Before the first set goes in: every stamp comes after this.
    let t0 = ptmp_data::now_us();
    let feeder = {
        let input = input.clone();
        let mut tx = Sender::from_json(&sock("PUSH", "in")).unwrap();
        std::thread::spawn(move || {
            for s in &input {
                tx.send(s).unwrap();
            }
            tx
        })
    };
    let mut got = Vec::new();
    while got.len() < want.len() {
        match rx.recv(Some(Duration::from_secs(20))).unwrap() {
            Some(s) => got.push(s),
            None => panic!("only {} of {} sets came out", got.len(), want.len()),
        }
    }
    let _tx = feeder.join().unwrap();
    stop.stop();
    let r = h.join().unwrap();
    assert_eq!(r.get("empty_inputs"), Some(9));
    assert_eq!(r.get("out"), Some(want.len() as u64));
    let ids: Vec<_> = got.iter().map(|s| (s.detid, s.count, s.tstart)).collect();
    assert_eq!(ids, want);
    for (o, i) in got.iter().zip(input.iter().filter(|s| !s.tps.is_empty())) {
        assert_eq!(o.tps, i.tps);
        assert_eq!(
            (o.tspan, o.chanbeg, o.chanend, o.totaladc),
            (i.tspan, i.chanbeg, i.chanend, i.totaladc)
        );
        assert!(o.created >= t0);
    }
}
