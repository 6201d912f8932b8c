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
