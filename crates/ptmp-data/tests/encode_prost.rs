//! `encode_tpset` against prost's generated encoder on arbitrary sets: the
//! bytes must be the same, whatever the values, the optional fields set and
//! the number of TrigPrims, and whatever the buffer held before.

use proptest::prelude::*;
use prost::Message;
use ptmp_data::{decode_tpset, encode_tpset, encode_tpset_into, tpset_max_len, TPSet, TrigPrim};

/// Any u32, with the varint length boundaries and the extremes often.
fn u32s() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(0u32),
        Just(u32::MAX),
        prop::sample::select(vec![0x7f, 0x80, 0x3fff, 0x4000, 0x1f_ffff, 0x20_0000]),
        (0u32..32, any::<u32>()).prop_map(|(bits, v)| v >> bits),
    ]
}

/// Any u64, the same way.
fn u64s() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(u64::MAX),
        Just(1u64 << 63),
        Just((1u64 << 56) - 1),
        (0u32..64, any::<u64>()).prop_map(|(bits, v)| v >> bits),
    ]
}

/// Any i64, negative ones (ten varint bytes) included.
fn i64s() -> impl Strategy<Value = i64> {
    prop_oneof![
        Just(0i64),
        Just(-1i64),
        Just(i64::MIN),
        Just(i64::MAX),
        u64s().prop_map(|v| v as i64),
    ]
}

fn opt_u32() -> impl Strategy<Value = Option<u32>> {
    prop::option::of(u32s())
}

fn trigprim() -> impl Strategy<Value = TrigPrim> {
    (u32s(), u64s(), opt_u32(), opt_u32(), opt_u32(), opt_u32()).prop_map(
        |(channel, tstart, tspan, adcsum, adcpeak, flags)| TrigPrim {
            channel,
            tstart,
            tspan,
            adcsum,
            adcpeak,
            flags,
        },
    )
}

fn tpset() -> impl Strategy<Value = TPSet> {
    let head = (u32s(), u32s(), i64s(), u64s());
    let opts = (opt_u32(), opt_u32(), opt_u32(), opt_u32());
    // Mostly small sets, sometimes a few hundred TrigPrims.
    let tps = prop_oneof![
        4 => prop::collection::vec(trigprim(), 0..12),
        1 => prop::collection::vec(trigprim(), 100..400),
    ];
    (head, opts, tps).prop_map(
        |((count, detid, created, tstart), (tspan, chanbeg, chanend, totaladc), tps)| TPSet {
            count,
            detid,
            created,
            tstart,
            tspan,
            chanbeg,
            chanend,
            totaladc,
            tps,
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn same_bytes_as_prost(t in tpset(), before in prop::collection::vec(any::<u8>(), 0..600)) {
        let want = t.encode_to_vec();
        // A buffer holding earlier bytes (longer or shorter) is replaced.
        let mut buf = before;
        encode_tpset(&t, &mut buf);
        prop_assert_eq!(&buf, &want);
        prop_assert_eq!(buf.len(), t.encoded_len());
        // And the same again into the now-grown buffer.
        encode_tpset(&t, &mut buf);
        prop_assert_eq!(&buf, &want);
        prop_assert_eq!(decode_tpset(&buf).unwrap(), t);
    }

    /// One buffer through a sequence of sets, as a sender uses it: each
    /// encoding is only its own bytes.
    #[test]
    fn a_reused_buffer_gives_each_set_its_own_bytes(sets in prop::collection::vec(tpset(), 1..6)) {
        let mut buf = Vec::new();
        for t in &sets {
            encode_tpset(t, &mut buf);
            prop_assert_eq!(&buf, &t.encode_to_vec());
        }
    }

    /// Into a slice (a loaned ring slot): the same bytes, the length
    /// returned, and nothing touched past them; a slice shorter than the
    /// bound is refused untouched.
    #[test]
    fn into_a_slice_gives_the_same_bytes(t in tpset(), fill in any::<u8>(), extra in 0usize..40) {
        let want = t.encode_to_vec();
        let max = tpset_max_len(t.tps.len()).unwrap();
        prop_assert!(want.len() <= max);
        let mut out = vec![fill; max + extra];
        let n = encode_tpset_into(&t, &mut out);
        prop_assert_eq!(n, Some(want.len()));
        prop_assert_eq!(&out[..want.len()], &want[..]);
        prop_assert!(out[want.len()..].iter().all(|b| *b == fill));
        let mut short = vec![fill; max - 1];
        prop_assert_eq!(encode_tpset_into(&t, &mut short), None);
        prop_assert!(short.iter().all(|b| *b == fill));
    }
}

/// Every field at its widest, and the empty set: the bounds the encoder
/// reserves for are reached exactly, and nothing is written past them.
#[test]
fn extremes_match_prost() {
    let widest = TrigPrim {
        channel: u32::MAX,
        tstart: u64::MAX,
        tspan: Some(u32::MAX),
        adcsum: Some(u32::MAX),
        adcpeak: Some(u32::MAX),
        flags: Some(u32::MAX),
    };
    let mut t = TPSet {
        count: u32::MAX,
        detid: u32::MAX,
        created: i64::MIN,
        tstart: u64::MAX,
        tspan: Some(u32::MAX),
        chanbeg: Some(u32::MAX),
        chanend: Some(u32::MAX),
        totaladc: Some(u32::MAX),
        tps: vec![widest; 1000],
    };
    let mut buf = Vec::new();
    encode_tpset(&t, &mut buf);
    assert_eq!(buf, t.encode_to_vec());
    // Each TrigPrim: key, one length byte (41) and 41 bytes of fields.
    assert_eq!(buf.len(), 58 + 1000 * 43);
    assert_eq!(buf[58..60], [0x4a, 41]);
    t.tps.clear();
    for n in [0, 1, 2, 127, 128] {
        t.tps.resize(n, TrigPrim::default());
        encode_tpset(&t, &mut buf);
        assert_eq!(buf, t.encode_to_vec(), "{n} zero TrigPrims");
    }
    let empty = TPSet::default();
    encode_tpset(&empty, &mut buf);
    assert_eq!(buf, [0x08, 0, 0x10, 0, 0x18, 0, 0x20, 0]);
    assert_eq!(buf, empty.encode_to_vec());
}
