//! The README's Rust example, compiled and run as written: the body of
//! `readme_example` below is the README's ```rust block (as rustfmt lays it
//! out), and `readme_shows_this_example` fails when the two drift apart.

use ptmp::{Receiver, Sender, SocketConfig, SocketType, TPSet};
use std::time::Duration;

#[test]
fn readme_example() -> Result<(), ptmp::Error> {
    // A socket from PTMP's JSON ...
    let mut tx =
        Sender::from_json(r#"{"socket":{"type":"PUSH","bind":["tcp://127.0.0.1:5678"]}}"#)?;
    // ... or built in Rust: the same keys, Durations for times, the same checks.
    let cfg = SocketConfig::builder(SocketType::Pull)
        .connect("tcp://127.0.0.1:5678")
        .hwm(1000)
        .build()?;
    let mut rx = Receiver::new(cfg)?;
    tx.send(&TPSet {
        count: 1,
        ..Default::default()
    })?;
    // None on timeout, like PTMP's TPReceiver returning false.
    let got: Option<TPSet> = rx.recv(Some(Duration::from_secs(1)))?;
    // The hot path: decode into a set you keep, nothing allocated per message.
    let mut set = TPSet::default();
    let ok: bool = rx.recv_into(&mut set, Some(Duration::from_millis(100)))?;
    // END OF THE README'S EXAMPLE
    assert_eq!(got.map(|t| t.count), Some(1));
    assert!(!ok, "only one set was sent");
    Ok(())
}

/// The lines of the first ```rust block of the README.
fn readme_block() -> Vec<String> {
    let readme = include_str!("../../../README.md");
    let start = readme
        .find("```rust\n")
        .expect("README has a ```rust block")
        + 8;
    let len = readme[start..].find("```").expect("the block ends");
    readme[start..start + len]
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn readme_shows_this_example() {
    let me = include_str!("readme.rs");
    let body_at = me.find("fn readme_example()").unwrap();
    let body = &me[body_at..];
    let end = body.find("// END OF THE README'S EXAMPLE").unwrap();
    let mut ours: Vec<String> = body[..end]
        .lines()
        .skip(1)
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    // The README's imports are this file's imports.
    let mut head: Vec<String> = me
        .lines()
        .filter(|l| l.starts_with("use "))
        .map(str::to_string)
        .collect();
    head.append(&mut ours);
    // Compared without white space: rustfmt wraps lines the README keeps.
    let squeeze =
        |v: Vec<String>| -> String { v.concat().chars().filter(|c| !c.is_whitespace()).collect() };
    assert_eq!(
        squeeze(readme_block()),
        squeeze(head),
        "README.md's Rust example and this test differ"
    );
}
