//! The shm:// transport through the same Sender/Receiver front as zmq.

mod common;
use common::Chan;

use ptmp::{Error, Frames, Receiver, Sender, TPSet, TrigPrim};
use serde_json::json;
use std::time::Duration;

const T: Option<Duration> = Some(Duration::from_secs(5));

fn tpset(count: u32, ntps: u32) -> TPSet {
    TPSet {
        count,
        detid: 2,
        created: 17,
        tstart: u64::from(count) * 25,
        tps: (0..ntps)
            .map(|c| TrigPrim {
                channel: c,
                tstart: 5,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// The same code moves sets over tcp or shm: only the address differs.
fn pubsub_round_trip(bind: &str) {
    let mut sock = json!({"type": "PUB", "bind": [bind]});
    if bind.starts_with("shm") {
        // Room for all 500: a PUB never waits, and on a busy machine the
        // reader may not run before a default ring (128 slots) is lapped.
        sock["shm_slots"] = json!(1024);
    }
    let mut tx = Sender::from_json(&json!({ "socket": sock }).to_string()).unwrap();
    let ep = tx
        .bound_endpoints()
        .first()
        .cloned()
        .unwrap_or(bind.to_string());
    let mut rx =
        Receiver::from_json(&json!({"socket": {"type": "SUB", "connect": [ep]}}).to_string())
            .unwrap();
    if !bind.starts_with("shm") {
        tx.wait_for_subscribers(1, Duration::from_secs(5)).unwrap();
    }
    let h = std::thread::spawn(move || {
        for i in 0..500 {
            tx.send(&tpset(i, i % 7)).unwrap();
            if i % 50 == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    });
    let mut t = TPSet::default();
    for i in 0..500 {
        assert!(rx.recv_into(&mut t, T).unwrap(), "{bind}: timed out at {i}");
        assert_eq!(t, tpset(i, i % 7), "{bind}");
    }
    h.join().unwrap();
    assert_eq!(rx.lost(), 0);
    assert!(rx.recv(Some(Duration::from_millis(20))).unwrap().is_none());
}

#[test]
fn a_config_changes_transport_by_its_address_only() {
    pubsub_round_trip("tcp://127.0.0.1:*");
    let c = Chan::new("front");
    pubsub_round_trip(&c.ep());
}

#[test]
fn a_receiver_created_before_its_channel_gets_everything() {
    let c = Chan::new("early");
    let mut rx =
        Receiver::from_json(&json!({"socket": {"type": "SUB", "connect": [c.ep()]}}).to_string())
            .unwrap();
    assert!(rx.recv(Some(Duration::from_millis(10))).unwrap().is_none());
    let mut tx =
        Sender::from_json(&json!({"socket": {"type": "PUB", "bind": [c.ep()]}}).to_string())
            .unwrap();
    for i in 0..10 {
        tx.send(&tpset(i, 1)).unwrap();
    }
    for i in 0..10 {
        assert_eq!(rx.recv(T).unwrap().unwrap().count, i);
    }
}

#[test]
fn overrun_is_counted_as_lost() {
    let c = Chan::new("lost");
    let cfg = json!({"socket": {"type": "PUB", "bind": [c.ep()], "shm_slots": 8, "shm_max_message": 512}});
    let mut tx = Sender::from_json(&cfg.to_string()).unwrap();
    let mut rx =
        Receiver::from_json(&json!({"socket": {"type": "SUB", "connect": [c.ep()]}}).to_string())
            .unwrap();
    for i in 0..100 {
        tx.send(&tpset(i, 0)).unwrap();
    }
    let first = rx.recv(T).unwrap().unwrap().count;
    assert!(first >= 100 - 8, "{first}");
    assert_eq!(rx.lost(), u64::from(first));
    // Too large for the channel: an error naming the limit.
    let e = tx.send(&tpset(0, 200)).unwrap_err().to_string();
    assert!(e.contains("shm_max_message") && e.contains("512"), "{e}");
}

/// One frame is written into its slot by a path of its own when it is
/// shorter than 255 bytes (its length then takes one byte): either side of
/// that bound, and a frame too large for the channel, over a lossless ring.
#[test]
fn single_frames_either_side_of_the_short_length() {
    // A PUSH with `key` set to `value`, and a PULL, on channel `c`.
    let pair = |c: &Chan, key: &str, value: usize| {
        let mut sock = json!({"type": "PUSH", "bind": [c.ep()]});
        sock[key] = json!(value);
        let tx = Sender::from_json(&json!({ "socket": sock }).to_string()).unwrap();
        let pull = json!({"socket": {"type": "PULL", "connect": [c.ep()]}});
        (tx, Receiver::from_json(&pull.to_string()).unwrap())
    };
    let c = Chan::new("one");
    let (mut tx, mut rx) = pair(&c, "shm_max_message", 600);
    let sizes = [0usize, 1, 64, 253, 254, 255, 256, 595];
    for n in sizes {
        let frame: Vec<u8> = (0..n).map(|i| (i * 7 + n) as u8).collect();
        tx.send_raw(&[&frame[..]]).unwrap();
    }
    let mut f = Frames::new();
    for n in sizes {
        assert!(rx.recv_raw_into(&mut f, T).unwrap(), "frame of {n} bytes");
        let want: Vec<u8> = (0..n).map(|i| (i * 7 + n) as u8).collect();
        assert_eq!(f.to_vecs(), vec![want], "frame of {n} bytes");
    }
    // 596 bytes take 601 in the slot (0xFF and four length bytes): refused,
    // naming the limit, and nothing is written.
    let e = tx.send_raw(&[&[1u8; 596][..]]).unwrap_err().to_string();
    assert!(e.contains("shm_max_message") && e.contains("600"), "{e}");
    tx.send_raw(&[&b"after"[..]]).unwrap();
    assert!(rx.recv_raw_into(&mut f, T).unwrap());
    assert_eq!(f.to_vecs(), vec![b"after".to_vec()]);

    // A timed send of one short frame into a full ring gives up with
    // nothing written, and goes through once the reader makes room.
    let c = Chan::new("one-full");
    let (mut tx, mut rx) = pair(&c, "shm_slots", 4);
    tx.send_raw(&[&b"0"[..]]).unwrap();
    assert!(
        rx.recv_raw_into(&mut f, T).unwrap(),
        "the reader is attached"
    );
    tx.wait_in_slices();
    let one = |i: u8| Frames::from_slices(&[[i]]);
    for i in 1..5 {
        assert!(tx.send_frames_within(&one(i), Duration::ZERO).unwrap());
    }
    assert!(!tx.send_frames_within(&one(5), Duration::ZERO).unwrap());
    assert!(rx.recv_raw_into(&mut f, T).unwrap());
    assert_eq!(f.to_vecs(), vec![vec![1u8]]);
    let t0 = std::time::Instant::now();
    while !tx
        .send_frames_within(&one(5), Duration::from_millis(10))
        .unwrap()
    {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "no room after a read"
        );
    }
    for i in 2..6 {
        assert!(rx.recv_raw_into(&mut f, T).unwrap());
        assert_eq!(f.to_vecs(), vec![vec![i]], "message {i}");
    }
}

#[test]
fn raw_frames_and_bad_messages_over_shm() {
    let c = Chan::new("raw");
    let mut tx =
        Sender::from_json(&json!({"socket": {"type": "PUB", "bind": [c.ep()]}}).to_string())
            .unwrap();
    let mut rx =
        Receiver::from_json(&json!({"socket": {"type": "SUB", "connect": [c.ep()]}}).to_string())
            .unwrap();
    let long = vec![9u8; 1000];
    tx.send_raw(&[&b"a"[..], &long[..], &b""[..]]).unwrap();
    tx.send_raw(&[&b"only"[..]]).unwrap();
    tx.send(&tpset(3, 2)).unwrap();
    let mut f = Frames::new();
    assert!(rx.recv_raw_into(&mut f, T).unwrap());
    assert_eq!(f.to_vecs(), vec![b"a".to_vec(), long.clone(), vec![]]);
    match rx.recv(T) {
        Err(Error::Wire(e)) => assert!(e.to_string().contains("1 frame"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(rx.recv(T).unwrap().unwrap(), tpset(3, 2));
    assert_eq!(rx.errors(), 1);
}

#[test]
fn shm_rules_are_config_errors() {
    let c = Chan::new("rules");
    for (cfg, want) in [
        (
            json!({"socket": {"type": "PAIR", "bind": [c.ep()]}}),
            "PUB or PUSH",
        ),
        (
            json!({"socket": {"type": "PUB", "bind": [c.ep(), "tcp://127.0.0.1:*"]}}),
            "mixing shm:// with other transports",
        ),
        (
            json!({"socket": {"type": "PUB", "bind": [c.ep(), "shm://other"]}}),
            "an shm:// sender has exactly one endpoint",
        ),
        (
            json!({"socket": {"type": "PUB", "bind": [c.ep()], "shm_slots": 12}}),
            "socket.shm_slots = 12",
        ),
        (
            json!({"socket": {"type": "PUB", "bind": [c.ep()], "subscribers": 1}}),
            "subscribers",
        ),
    ] {
        let e = Sender::from_json(&cfg.to_string())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(want), "{e}");
    }
    let e =
        Receiver::from_json(&json!({"socket": {"type": "PAIR", "connect": [c.ep()]}}).to_string())
            .err()
            .unwrap();
    assert!(e.to_string().contains("SUB or PULL"), "{e}");
    // One writer per channel.
    let _tx = Sender::from_json(&json!({"socket": {"type": "PUB", "bind": [c.ep()]}}).to_string())
        .unwrap();
    // A PULL on a publish-subscribe channel would silently lose: refused.
    let e =
        Receiver::from_json(&json!({"socket": {"type": "PULL", "connect": [c.ep()]}}).to_string())
            .err()
            .unwrap();
    assert!(e.to_string().contains("publish-subscribe"), "{e}");
    let e = Sender::from_json(&json!({"socket": {"type": "PUB", "bind": [c.ep()]}}).to_string())
        .err()
        .unwrap();
    assert!(
        matches!(e, Error::Bind { .. }) && e.to_string().contains("live writer"),
        "{e}"
    );
}

#[test]
fn push_pull_over_shm_loses_nothing_to_a_slow_receiver() {
    let c = Chan::new("pushpull");
    let scfg = json!({"socket": {"type": "PUSH", "bind": [c.ep()], "shm_slots": 16}});
    let mut rx =
        Receiver::from_json(&json!({"socket": {"type": "PULL", "connect": [c.ep()]}}).to_string())
            .unwrap();
    let h = std::thread::spawn(move || {
        let mut tx = Sender::from_json(&scfg.to_string()).unwrap();
        for i in 0..5000 {
            tx.send(&tpset(i, i % 4)).unwrap();
        }
    });
    let mut t = TPSet::default();
    for i in 0..5000 {
        assert!(rx.recv_into(&mut t, T).unwrap(), "timed out at {i}");
        assert_eq!(t, tpset(i, i % 4));
        if i % 1000 == 0 {
            std::thread::sleep(Duration::from_millis(20)); // the sender must wait
        }
    }
    h.join().unwrap();
    assert_eq!(rx.lost(), 0);
    // A sender whose reader stopped reading times out with an error.
    let c = Chan::new("pushstuck");
    let mut tx = Sender::from_json(
        &json!({"socket": {"type": "PUSH", "bind": [c.ep()], "shm_slots": 4, "shm_block_timeout_ms": 100}})
            .to_string(),
    )
    .unwrap();
    let _rx =
        Receiver::from_json(&json!({"socket": {"type": "PULL", "connect": [c.ep()]}}).to_string())
            .unwrap();
    for i in 0..4 {
        tx.send(&tpset(i, 0)).unwrap();
    }
    let e = tx.send(&tpset(4, 0)).unwrap_err();
    assert!(
        matches!(e, Error::Timeout { .. }) && e.to_string().contains("slowest reader"),
        "{e}"
    );
}

/// One PULL reading three shm channels (as a zipper's input does): fair,
/// lossless, and waiting on all of them at once.
#[test]
fn one_receiver_reads_several_channels() {
    let tag = format!("multi{}", std::process::id());
    let names: Vec<String> = (0..3).map(|i| format!("{tag}-{i}")).collect();
    let eps: Vec<String> = names.iter().map(|n| format!("\"shm://{n}\"")).collect();
    // The receiver first: the channels do not exist yet.
    let mut rx = Receiver::from_json(&format!(
        r#"{{"socket":{{"type":"PULL","connect":[{}]}}}}"#,
        eps.join(",")
    ))
    .unwrap();
    let senders: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let cfg =
                format!(r#"{{"socket":{{"type":"PUSH","bind":["shm://{n}"],"shm_slots":64}}}}"#);
            std::thread::spawn(move || {
                let mut tx = Sender::from_json(&cfg).unwrap();
                for k in 0..500u32 {
                    tx.send(&TPSet {
                        count: k,
                        detid: i as u32,
                        ..Default::default()
                    })
                    .unwrap();
                    if k % 100 == 0 {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                }
                // Keep the writer alive until the reader has caught up.
                std::thread::sleep(Duration::from_millis(300));
            })
        })
        .collect();
    let mut next = [0u32; 3];
    let mut set = TPSet::default();
    for _ in 0..1500 {
        assert!(
            rx.recv_into(&mut set, Some(Duration::from_secs(10)))
                .unwrap(),
            "timed out"
        );
        let d = set.detid as usize;
        assert_eq!(set.count, next[d], "channel {d} in order, nothing lost");
        next[d] += 1;
    }
    assert_eq!(next, [500, 500, 500]);
    assert!(!rx
        .recv_into(&mut set, Some(Duration::from_millis(50)))
        .unwrap());
    for s in senders {
        s.join().unwrap();
    }
    for n in &names {
        let _ = ptmp_shm::remove(n);
    }
    // Mixing shm with zmq in one socket is refused with the reason.
    let e = Receiver::from_json(r#"{"socket":{"type":"PULL","connect":["shm://a","inproc://b"]}}"#)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("mixing shm:// with other transports"), "{e}");
}

/// `shm_mode`: private by default (0600, a 0660 segment refused with the
/// key to set); "group" makes and accepts 0660 segments.
#[test]
fn shm_mode_group_shares_and_private_refuses_wider_segments() {
    use std::os::unix::fs::MetadataExt;
    let c = Chan::new("mode");
    let path = ptmp_shm::segment_path(&c.0).unwrap();
    let mut tx = Sender::from_json(
        &json!({"socket": {"type": "PUB", "bind": [c.ep()], "shm_mode": "group"}}).to_string(),
    )
    .unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o7777, 0o660);
    let e =
        Receiver::from_json(&json!({"socket": {"type": "SUB", "connect": [c.ep()]}}).to_string())
            .err()
            .expect("a private receiver refuses a 0660 segment")
            .to_string();
    assert!(
        e.contains("mode 0660") && e.contains("shm_mode") && e.contains(&c.0),
        "{e}"
    );
    let mut rx = Receiver::from_json(
        &json!({"socket": {"type": "SUB", "connect": [c.ep()], "shm_mode": "group"}}).to_string(),
    )
    .unwrap();
    tx.send(&tpset(1, 3)).unwrap();
    assert_eq!(rx.recv(T).unwrap().unwrap(), tpset(1, 3));
    // A bad value names the key and the choices.
    let e = Sender::from_json(
        &json!({"socket": {"type": "PUB", "bind": [c.ep()], "shm_mode": "world"}}).to_string(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("socket.shm_mode") && e.contains("world") && e.contains("group"),
        "{e}"
    );
}

/// A channel whose shared state is corrupted under a receiver: the receive
/// fails with the field named, within its timeout, instead of spinning.
#[test]
fn a_corrupt_channel_is_a_receive_error_not_a_spin() {
    use std::os::unix::fs::FileExt;
    let c = Chan::new("corrupt");
    let mut tx = Sender::from_json(
        &json!({"socket": {"type": "PUB", "bind": [c.ep()], "shm_slots": 8}}).to_string(),
    )
    .unwrap();
    let mut rx =
        Receiver::from_json(&json!({"socket": {"type": "SUB", "connect": [c.ep()]}}).to_string())
            .unwrap();
    tx.send(&tpset(0, 1)).unwrap();
    assert!(rx.recv(T).unwrap().is_some());
    // next_seq (offset 128) claims far more than was ever written.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(ptmp_shm::segment_path(&c.0).unwrap())
        .unwrap();
    f.write_all_at(&500u64.to_ne_bytes(), 128).unwrap();
    let t0 = std::time::Instant::now();
    let e = rx
        .recv(Some(Duration::from_secs(10)))
        .expect_err("an error");
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t0.elapsed()
    );
    // The ring's own error, matchable, not a failure to connect.
    assert!(
        matches!(
            &e,
            ptmp::Error::Shm {
                source: ptmp_shm::ShmError::Corrupt { .. },
                ..
            }
        ),
        "{e:?}"
    );
    let e = e.to_string();
    assert!(e.contains("corrupt") && e.contains(&c.0), "{e}");
    assert!(!e.contains("cannot connect"), "{e}");
}

/// A set is encoded straight into its ring slot when the most a set of its
/// size can take fits a slot, and through a buffer when not; either way
/// the slot holds the same frames a zmq socket would carry: the version
/// frame and the set's bytes, the payload's length in one byte below 255
/// bytes and in five from 255 up. Sent one at a time and in a batch.
#[test]
fn sets_of_every_size_reach_the_slot_in_the_same_form() {
    let c = Chan::new("inslot");
    let mut tx = Sender::from_json(
        &json!({"socket": {"type": "PUSH", "bind": [c.ep()], "shm_slots": 256, "shm_max_message": 4096}})
            .to_string(),
    )
    .unwrap();
    let mut rx =
        Receiver::from_json(&json!({"socket": {"type": "PULL", "connect": [c.ep()]}}).to_string())
            .unwrap();
    // 6 bytes a TrigPrim here: 42 and more make a payload of 255 bytes or
    // more; from 94 on the bound (58 + 43 a TrigPrim) passes 4096.
    let sets: Vec<TPSet> = (0..=120).map(|n| tpset(n, n)).collect();
    let expect = sets.clone();
    let h = std::thread::spawn(move || {
        for t in &sets {
            tx.send(t).unwrap();
        }
        tx.send_batch(&sets).unwrap();
        assert_eq!(tx.sent(), 2 * sets.len() as u64);
    });
    let mut f = Frames::new();
    let mut want = Vec::new();
    for t in expect.iter().chain(&expect) {
        assert!(rx.recv_raw_into(&mut f, T).unwrap(), "set of {}", t.count);
        ptmp::data::encode_tpset(t, &mut want);
        assert_eq!(
            f.to_vecs(),
            vec![ptmp::data::VERSION_FRAME.to_vec(), want.clone()],
            "set of {} TrigPrims",
            t.count
        );
    }
    h.join().unwrap();
}
