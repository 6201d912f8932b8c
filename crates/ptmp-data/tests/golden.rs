//! ptmp's encoder and decoder against byte vectors produced by Python's
//! protobuf package (tests/python/make_vectors.py), so the wire format cannot
//! drift. The Python tests check the same vectors from the other side.

use ptmp_data::{decode_tpset, encode_tpset, DecodeError};
use serde_json::Value;

#[path = "../examples/golden.rs"]
#[allow(dead_code)]
mod bridge;

fn vectors() -> Vec<Value> {
    let text = include_str!("vectors/golden.json");
    serde_json::from_str(text).expect("golden.json parses")
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn encoding_matches_the_independent_implementation() {
    let v = vectors();
    assert!(v.len() >= 8);
    let mut buf = Vec::new();
    for case in &v {
        let t = bridge::from_json(&case["tpset"]);
        encode_tpset(&t, &mut buf);
        assert_eq!(
            buf,
            unhex(case["hex"].as_str().unwrap()),
            "case {:?}",
            case["name"]
        );
    }
}

#[test]
fn decoding_the_independent_bytes_gives_the_cases_back() {
    for case in &vectors() {
        let bytes = unhex(case["hex"].as_str().unwrap());
        let got = decode_tpset(&bytes).unwrap_or_else(|e| panic!("{:?}: {e}", case["name"]));
        assert_eq!(
            got,
            bridge::from_json(&case["tpset"]),
            "case {:?}",
            case["name"]
        );
    }
}

#[test]
fn every_required_field_is_required() {
    // Drop each required field of a vector in turn: decoding must name it.
    let full = unhex("0801100218032004"); // count 1, detid 2, created 3, tstart 4
    for (i, name) in ["count", "detid", "created", "tstart"].iter().enumerate() {
        let mut b = full.clone();
        b.drain(2 * i..2 * i + 2);
        assert_eq!(
            decode_tpset(&b),
            Err(DecodeError::MissingRequired {
                message: "TPSet",
                field: name
            })
        );
    }
}

/// Hand-built byte strings (unknown fields of every wire type, nested groups,
/// long varints, over-long keys and lengths, deep nesting) and what protobuf's
/// upb parser, which agrees with C++ protobuf, makes of each: ptmp must accept
/// and decode exactly what it accepts, and refuse what it refuses.
#[test]
fn lenient_vectors_are_accepted_and_refused_as_protobuf_does() {
    let text = include_str!("vectors/lenient.json");
    let cases: Vec<Value> = serde_json::from_str(text).expect("lenient.json parses");
    assert!(cases.len() >= 150, "{} cases", cases.len());
    let (mut accepted, mut refused) = (0, 0);
    let mut wrong = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let bytes = unhex(case["hex"].as_str().unwrap());
        let want = &case["upb"];
        match (decode_tpset(&bytes), want.as_str() == Some("error")) {
            (Err(_), true) => refused += 1,
            (Ok(got), false) if got == bridge::from_json(want) => accepted += 1,
            (got, _) => wrong.push(format!("{name}: ptmp {got:?}, protobuf {want}")),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(
        accepted > 50 && refused > 30,
        "{accepted} accepted, {refused} refused"
    );
}
