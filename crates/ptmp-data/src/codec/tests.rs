use super::*;
use prost::Message;

fn sample() -> TPSet {
    TPSet {
        count: 7,
        detid: 42,
        created: 1_700_000_000_000_000,
        tstart: 123_456_789_012,
        tspan: Some(25),
        chanbeg: Some(100),
        chanend: Some(101),
        totaladc: Some(300),
        tps: vec![
            TrigPrim {
                channel: 100,
                tstart: 123_456_789_012,
                tspan: Some(10),
                adcsum: Some(100),
                adcpeak: Some(20),
                flags: Some(0),
            },
            TrigPrim {
                channel: 101,
                tstart: 123_456_789_020,
                ..Default::default()
            },
        ],
    }
}

/// The encoder's varint of `v`, written into a buffer with room to
/// spare; checks it wrote nothing past the bytes it counts.
fn put_varint(v: u64) -> Vec<u8> {
    let mut b = [0xeeu8; 16];
    let start = b.as_mut_ptr();
    // SAFETY: a varint takes at most 10 bytes; `b` has 16.
    let n = unsafe { varint(start, v).offset_from(start) } as usize;
    assert!(b[n..].iter().all(|&x| x == 0xee), "{v:#x}: wrote past {n}");
    b[..n].to_vec()
}

#[test]
fn varint_len_matches_encoding() {
    for v in [
        0u64,
        1,
        127,
        128,
        16383,
        16384,
        u32::MAX as u64,
        u64::MAX,
        (-1i64) as u64,
    ] {
        assert_eq!(varint_len(v), put_varint(v).len(), "{v}");
    }
}

#[test]
fn varints_of_every_length_round_trip_word_at_a_time() {
    let mut vals = vec![0u64, 1, 0x7f, 0x80, u64::MAX, (-1i64) as u64];
    for bits in 1..64 {
        vals.extend([(1u64 << bits) - 1, 1u64 << bits, (1u64 << bits) + 1]);
    }
    for &v in &vals {
        let bytes = put_varint(v);
        let n = bytes.len();
        // The reference: prost's varint encoding.
        let mut want = Vec::new();
        prost::encoding::encode_varint(v, &mut want);
        assert_eq!(bytes, want, "encode {v:#x}");
        // Decode with and without bytes after it, and from every truncation.
        for tail in [
            &[][..],
            &[0x01, 0x02, 0x03, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80][..],
        ] {
            let mut x = bytes.clone();
            x.extend_from_slice(tail);
            let mut pos = 0;
            assert_eq!(fast::varint(&x, &mut pos), Some(v), "decode {v:#x}");
            assert_eq!(pos, n);
        }
        for cut in 0..n {
            let mut pos = 0;
            assert_eq!(
                fast::varint(&bytes[..cut], &mut pos),
                None,
                "{v:#x} cut {cut}"
            );
        }
    }
}

#[test]
fn largest_possible_set_fits_the_reserved_bound() {
    let tp = TrigPrim {
        channel: u32::MAX,
        tstart: u64::MAX,
        tspan: Some(u32::MAX),
        adcsum: Some(u32::MAX),
        adcpeak: Some(u32::MAX),
        flags: Some(u32::MAX),
    };
    let t = TPSet {
        count: u32::MAX,
        detid: u32::MAX,
        created: -1,
        tstart: u64::MAX,
        tspan: Some(u32::MAX),
        chanbeg: Some(u32::MAX),
        chanend: Some(u32::MAX),
        totaladc: Some(u32::MAX),
        tps: vec![tp; 3],
    };
    let mut buf = Vec::new();
    encode_tpset(&t, &mut buf);
    assert_eq!(buf.len(), MAX_SET_HEAD + 3 * MAX_TP);
    assert_eq!(buf, t.encode_to_vec());
}

#[test]
fn hand_encoder_matches_prost_on_many_sets() {
    let mut buf = Vec::new();
    for i in 0..2000u64 {
        let mut t = sample();
        t.count = (i * 2_654_435_761) as u32;
        t.created = if i % 7 == 0 {
            -(i as i64)
        } else {
            (i as i64) << 40
        };
        t.tstart = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        t.tspan = (i % 3 != 0).then_some(i as u32);
        t.chanbeg = (i % 5 == 0).then_some(0);
        t.tps.truncate((i % 3) as usize);
        for tp in &mut t.tps {
            tp.flags = (i % 2 == 0).then_some(u32::MAX);
            tp.tstart = i << (i % 50);
        }
        encode_tpset(&t, &mut buf);
        assert_eq!(buf, t.encode_to_vec(), "set {i}");
        assert_eq!(decode_tpset(&buf).unwrap(), t);
    }
}

#[test]
fn round_trip_matches_prost() {
    let t = sample();
    let mut buf = Vec::new();
    encode_tpset(&t, &mut buf);
    assert_eq!(buf, t.encode_to_vec());
    assert_eq!(decode_tpset(&buf).unwrap(), t);
    assert_eq!(TPSet::decode(&buf[..]).unwrap(), t);
}

#[test]
fn decode_into_reuses_and_resets() {
    let t = sample();
    let mut buf = Vec::new();
    encode_tpset(&t, &mut buf);
    let mut out = TPSet::default();
    decode_tpset_into(&buf, &mut out).unwrap();
    let cap = out.tps.capacity();
    let ptr = out.tps.as_ptr();
    let small = TPSet {
        count: 1,
        ..Default::default()
    };
    encode_tpset(&small, &mut buf);
    decode_tpset_into(&buf, &mut out).unwrap();
    assert_eq!(
        out, small,
        "optional fields and tps from the previous set must not leak"
    );
    assert_eq!(out.tps.capacity(), cap);
    assert_eq!(out.tps.as_ptr(), ptr);
}

#[test]
fn empty_set_encodes_required_zeros() {
    let mut buf = Vec::new();
    encode_tpset(&TPSet::default(), &mut buf);
    assert_eq!(buf, [0x08, 0, 0x10, 0, 0x18, 0, 0x20, 0]);
}

#[test]
fn missing_required_fields_are_errors() {
    // count, detid, created only: no tstart.
    let e = decode_tpset(&[0x08, 1, 0x10, 2, 0x18, 3]).unwrap_err();
    assert_eq!(
        e,
        DecodeError::MissingRequired {
            message: "TPSet",
            field: "tstart"
        }
    );
    assert!(e.to_string().contains("tstart"));
    // A TrigPrim without a channel.
    let e = decode_tpset(&[0x08, 0, 0x10, 0, 0x18, 0, 0x20, 0, 0x4a, 2, 0x10, 5]).unwrap_err();
    assert_eq!(
        e,
        DecodeError::MissingRequiredTp {
            index: 0,
            field: "channel"
        }
    );
    assert!(decode_tpset(&[]).is_err());
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    assert!(matches!(
        decode_tpset(&[0x08]),
        Err(DecodeError::Truncated { offset: 1, .. })
    ));
    assert!(matches!(
        decode_tpset(&[0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
        Err(DecodeError::BadVarint { offset: 1 })
    ));
    assert!(matches!(
        decode_tpset(&[0x4a, 50, 1]),
        Err(DecodeError::Truncated { offset: 2, .. })
    ));
    assert!(matches!(
        decode_tpset(&[0x0b]),
        Err(DecodeError::Truncated { offset: 0, .. })
    ));
    assert!(matches!(
        decode_tpset(&[0x0e]),
        Err(DecodeError::BadKey { wire_type: 6, .. })
    ));
    // Every prefix and every single-byte corruption of a valid payload
    // either decodes or errors; never panics.
    let mut buf = Vec::new();
    encode_tpset(&sample(), &mut buf);
    for n in 0..buf.len() {
        let _ = decode_tpset(&buf[..n]);
    }
    for i in 0..buf.len() {
        for b in [0u8, 0x7f, 0x80, 0xff] {
            let mut x = buf.clone();
            x[i] = b;
            let _ = decode_tpset(&x);
        }
    }
}

#[test]
fn lean_and_careful_decoders_accept_the_same_inputs() {
    let mut buf = Vec::new();
    encode_tpset(&sample(), &mut buf);
    buf.extend([0x78, 0x96, 0x01, 0x81, 0x01, 1, 2, 3, 4, 5, 6, 7, 8]);
    // A group of field 15 holding a group of field 16 and a varint.
    buf.extend([0x7b, 0x83, 0x01, 0x08, 0x01, 0x84, 0x01, 0x7c]);
    let (mut a, mut b) = (TPSet::default(), TPSet::default());
    let mut check = |x: &[u8]| {
        let fa = fast::decode(x, &mut a).is_some();
        let fb = decode_detailed(x, &mut b).is_ok();
        assert_eq!(fa, fb, "disagree on {x:02x?}");
        if fa {
            assert_eq!(a, b);
        }
    };
    for n in 0..=buf.len() {
        check(&buf[..n]);
    }
    for i in 0..buf.len() {
        for v in [
            0u8, 1, 2, 3, 4, 5, 7, 0x0a, 0x0b, 0x0c, 0x4a, 0x4b, 0x7b, 0x7c, 0x7f, 0x80, 0xff,
        ] {
            let mut x = buf.clone();
            x[i] = v;
            check(&x);
        }
    }
}

#[test]
fn unknown_fields_are_skipped() {
    // Required fields plus field 15 (varint), 16 (fixed64), 17 (len), 18 (fixed32).
    let mut b = vec![0x08, 1, 0x10, 2, 0x18, 3, 0x20, 4];
    b.extend([0x78, 0x96, 0x01]);
    b.extend([0x81, 0x01, 1, 2, 3, 4, 5, 6, 7, 8]);
    b.extend([0x8a, 0x01, 2, 0xaa, 0xbb]);
    b.extend([0x95, 0x01, 1, 2, 3, 4]);
    let t = decode_tpset(&b).unwrap();
    assert_eq!((t.count, t.detid, t.created, t.tstart), (1, 2, 3, 4));
}

/// The required fields, all zero.
const BASE: [u8; 8] = [0x08, 0, 0x10, 0, 0x18, 0, 0x20, 0];

fn with(tail: &[u8]) -> Vec<u8> {
    let mut b = BASE.to_vec();
    b.extend_from_slice(tail);
    b
}

/// `n` nested groups of field 15 around `inner`.
fn groups(n: usize, inner: &[u8]) -> Vec<u8> {
    let mut b = vec![0x7b; n];
    b.extend_from_slice(inner);
    b.extend(std::iter::repeat_n(0x7c, n));
    b
}

fn tp_field(body: &[u8]) -> Vec<u8> {
    let mut b = vec![0x4a];
    prost::encoding::encode_varint(body.len() as u64, &mut b);
    b.extend_from_slice(body);
    b
}

#[test]
fn unknown_groups_are_skipped_nested_and_in_trigprims() {
    let ok = [
        with(&[0x7b, 0x7c]),
        with(&[0x7b, 0x78, 1, 0x81, 0x01, 1, 2, 3, 4, 5, 6, 7, 8, 0x7c]),
        with(&[0x7b, 0x83, 0x01, 0x84, 0x01, 0x7c]),
        with(&[0x7b, 0x7b, 0x7c, 0x7c]),
        // Known field numbers with the group wire type are unknown fields.
        with(&[0x0b, 0x0c, 0x4b, 0x4c]),
        // A non-canonical 5-byte end-group key still matches.
        with(&[0x7b, 0xfc, 0x80, 0x80, 0x80, 0x00]),
        // Largest field number.
        with(&[0xfb, 0xff, 0xff, 0xff, 0x0f, 0xfc, 0xff, 0xff, 0xff, 0x0f]),
        with(&tp_field(&[0x08, 0, 0x10, 0, 0x7b, 0x0b, 0x0c, 0x7c])),
        with(&groups(100, &[])),
        with(&tp_field(
            &[&[0x08, 0, 0x10, 0][..], &groups(99, &[])].concat(),
        )),
    ];
    for b in &ok {
        let t = decode_tpset(b).unwrap_or_else(|e| panic!("{b:02x?}: {e}"));
        assert_eq!((t.count, t.detid, t.created, t.tstart), (0, 0, 0, 0));
    }
    let tp = decode_tpset(&ok[7]).unwrap();
    assert_eq!(tp.tps.len(), 1);
}

#[test]
fn malformed_groups_are_refused_with_what_is_wrong() {
    let e = |tail: &[u8]| decode_tpset(&with(tail)).unwrap_err();
    assert_eq!(
        e(&[0x7b, 0x84, 0x01]),
        DecodeError::EndGroupMismatch {
            offset: 9,
            field: 16,
            open: 15
        }
    );
    assert_eq!(
        e(&[0x7c]),
        DecodeError::StrayEndGroup {
            offset: 8,
            field: 15
        }
    );
    assert!(matches!(
        e(&[0x7b, 0x78, 1]),
        DecodeError::Truncated { offset: 8, .. }
    ));
    assert!(matches!(
        e(&[0x7b, 0x04]),
        DecodeError::BadKey { field: 0, .. }
    ));
    assert_eq!(e(&groups(101, &[])), DecodeError::TooDeep { offset: 108 });
    assert!(matches!(
        e(&tp_field(
            &[&[0x08, 0, 0x10, 0][..], &groups(100, &[])].concat()
        )),
        DecodeError::TooDeep { .. }
    ));
    // A group may not run past the end of the TrigPrim holding it.
    let mut b = with(&[0x4a, 0x05, 0x7b, 0x08, 0, 0x10, 0]);
    b.push(0x7c);
    assert!(matches!(
        decode_tpset(&b),
        Err(DecodeError::Truncated { .. })
    ));
    // An end-group tag ends no TrigPrim.
    assert!(matches!(
        e(&tp_field(&[0x08, 0, 0x10, 0, 0x7c])),
        DecodeError::StrayEndGroup { .. }
    ));
}

#[test]
fn ten_byte_varints_keep_the_low_64_bits() {
    // count = 2^64 - 1 in 10 bytes whose last byte carries bits past 63.
    let mut b = vec![
        0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
    ];
    b.extend(&BASE[2..]);
    assert_eq!(decode_tpset(&b).unwrap().count, u32::MAX);
    // 2^64 exactly: all kept bits zero.
    let mut b = vec![
        0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02,
    ];
    b.extend(&BASE[2..]);
    assert_eq!(decode_tpset(&b).unwrap().count, 0);
    // created and tstart as 10-byte varints with a 0x7f last byte.
    let mut b = BASE[..4].to_vec();
    b.extend([
        0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
    ]);
    b.extend([
        0x20, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
    ]);
    let t = decode_tpset(&b).unwrap();
    assert_eq!((t.created, t.tstart), (-1, u64::MAX - 1));
    // 32-bit fields keep the low 32 bits: 2^32 + 5.
    let mut b = vec![0x08, 0x85, 0x80, 0x80, 0x80, 0x10];
    b.extend(&BASE[2..]);
    assert_eq!(decode_tpset(&b).unwrap().count, 5);
    // 11 bytes are refused, in a known and in an unknown field.
    let mut b = vec![0x08];
    b.extend([0xff; 10]);
    b.push(0x01);
    b.extend(&BASE[2..]);
    assert_eq!(decode_tpset(&b), Err(DecodeError::BadVarint { offset: 1 }));
    let mut tail = vec![0x78];
    tail.extend([0xff; 10]);
    tail.push(0x01);
    assert_eq!(
        decode_tpset(&with(&tail)),
        Err(DecodeError::BadVarint { offset: 9 })
    );
}

#[test]
fn keys_and_lengths_are_limited_to_five_bytes() {
    // Field 1 (count = 1) under a non-canonical 5-byte key: accepted.
    let mut b = vec![0x88, 0x80, 0x80, 0x80, 0x00, 0x01];
    b.extend(&BASE[2..]);
    assert_eq!(decode_tpset(&b).unwrap().count, 1);
    // The same key in 6 bytes: refused.
    let mut b = vec![0x88, 0x80, 0x80, 0x80, 0x80, 0x00, 0x01];
    b.extend(&BASE[2..]);
    assert!(matches!(
        decode_tpset(&b),
        Err(DecodeError::TooLong { offset: 0, .. })
    ));
    // A key past 32 bits.
    assert!(matches!(
        decode_tpset(&with(&[0xf8, 0xff, 0xff, 0xff, 0x1f, 0x01])),
        Err(DecodeError::TooLong { offset: 8, .. })
    ));
    // Length prefixes: 5 bytes fine, 6 refused, 2^31 refused.
    assert!(decode_tpset(&with(&[0x7a, 0x80, 0x80, 0x80, 0x80, 0x00])).is_ok());
    let mut tp = vec![0x4a, 0x84, 0x80, 0x80, 0x80, 0x00, 0x08, 0, 0x10, 0];
    assert_eq!(decode_tpset(&with(&tp)).unwrap().tps.len(), 1);
    tp.insert(1, 0x84);
    tp[2] = 0x80;
    assert!(matches!(
        decode_tpset(&with(&tp)),
        Err(DecodeError::TooLong { offset: 9, .. })
    ));
    assert_eq!(
        decode_tpset(&with(&[0x7a, 0x80, 0x80, 0x80, 0x80, 0x08])),
        Err(DecodeError::BadLength {
            offset: 9,
            len: 1 << 31
        })
    );
}

/// The careful decoder must agree with the lean one on every
/// cross-checked edge case, not only on corruptions of one payload.
#[test]
fn lean_and_careful_decoders_agree_on_the_lenient_vectors() {
    let cases: Vec<serde_json::Value> =
        serde_json::from_str(include_str!("../../tests/vectors/lenient.json")).unwrap();
    let (mut a, mut b) = (TPSet::default(), TPSet::default());
    for case in &cases {
        let h = case["hex"].as_str().unwrap();
        let x: Vec<u8> = (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
            .collect();
        let fa = fast::decode(&x, &mut a).is_some();
        let fb = decode_detailed(&x, &mut b).is_ok();
        assert_eq!(fa, fb, "{}", case["name"]);
        if fa {
            assert_eq!(a, b, "{}", case["name"]);
        }
    }
}
