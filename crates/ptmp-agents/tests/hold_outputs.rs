//! Held outputs ([`ptmp_agents::hold_outputs`]): an agent's sends wait
//! while its process holds them and go on, in order and complete, when
//! released; a stopped agent sends despite the hold. The hold is
//! process-wide, so these tests live in a test binary of their own and run
//! one after the other.

use ptmp::{Receiver, Sender, TPSet};
use ptmp_agents::{hold_outputs, outputs_held, send_set, Ctl};
use std::time::Duration;

fn pair(name: &str) -> (Sender, Receiver) {
    let tx = Sender::from_json(&format!(
        r#"{{"socket": {{"type": "PUSH", "bind": "inproc://{name}"}}}}"#
    ))
    .unwrap();
    let rx = Receiver::from_json(&format!(
        r#"{{"socket": {{"type": "PULL", "connect": "inproc://{name}"}}}}"#
    ))
    .unwrap();
    (tx, rx)
}

#[test]
fn held_sends_wait_then_go_on_and_a_stop_ends_the_hold() {
    // Held: nothing is sent until the hold ends, then everything, in order.
    let (mut tx, mut rx) = pair("hold-a");
    hold_outputs(true);
    assert!(outputs_held());
    let ctl = Ctl::default();
    let c2 = ctl.clone();
    let t = std::thread::spawn(move || {
        for i in 0..10 {
            let set = TPSet {
                count: i,
                ..Default::default()
            };
            assert!(send_set(&mut tx, &set, &c2, "t").unwrap());
        }
        tx
    });
    assert!(rx.recv(Some(Duration::from_millis(300))).unwrap().is_none());
    assert_eq!(ctl.counts.get(), (0, 0), "a held send was counted");
    hold_outputs(false);
    for i in 0..10 {
        let s = rx.recv(Some(Duration::from_secs(20))).unwrap().unwrap();
        assert_eq!(s.count, i);
    }
    let _tx = t.join().unwrap();
    assert_eq!(ctl.counts.get(), (0, 10));

    // A stopped agent drains: its send goes out though the hold is on.
    let (mut tx, mut rx) = pair("hold-b");
    hold_outputs(true);
    let ctl = Ctl::default();
    ctl.stop();
    assert!(send_set(&mut tx, &TPSet::default(), &ctl, "t").unwrap());
    hold_outputs(false);
    assert!(rx.recv(Some(Duration::from_secs(20))).unwrap().is_some());
}
