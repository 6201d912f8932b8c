//! A bounded run of every fuzz target (a few seconds each), and property
//! tests over generated TPSets. `scripts/fuzz.sh` runs the same targets
//! for as long as asked.

use proptest::prelude::*;
use ptmp_data::{decode_tpset, encode_tpset, TPSet, TrigPrim};
use ptmp_fuzz::{report_line, run, targets, Budget};
use std::time::Duration;

/// Cases per target in the test command; `PTMP_FUZZ_CASES` raises it.
fn budget(default_cases: u64) -> Budget {
    let cases = std::env::var("PTMP_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_cases);
    Budget {
        cases,
        time: Duration::from_secs(20),
    }
}

fn fuzz(name: &str, cases: u64) {
    let t = targets::by_name(name).expect("a known target");
    let o = run(t, budget(cases), 0x5eed_0001, &mut |_| {});
    eprintln!("{}", report_line(&o));
    let shown: Vec<String> = o
        .failures
        .iter()
        .take(5)
        .map(|f| {
            format!(
                "{}\n    input: {}",
                f.what,
                ptmp_fuzz::hex(&f.input[..f.input.len().min(256)])
            )
        })
        .collect();
    assert!(
        o.failures.is_empty(),
        "{}: {} of {} cases failed; first ones:\n{}",
        name,
        o.failures.len(),
        o.cases,
        shown.join("\n")
    );
    assert!(
        o.cases >= 10.min(cases),
        "{name}: only {} cases ran",
        o.cases
    );
}

#[test]
fn fuzz_tpset() {
    fuzz("tpset", 20_000);
}

#[test]
fn fuzz_wire() {
    fuzz("wire", 20_000);
}

#[test]
fn fuzz_dump() {
    fuzz("dump", 10_000);
}

#[test]
fn fuzz_socket_config() {
    fuzz("socket-config", 5_000);
}

#[test]
fn fuzz_run_config() {
    fuzz("run-config", 3_000);
}

#[test]
fn fuzz_graph_config() {
    fuzz("graph-config", 2_000);
}

#[test]
fn fuzz_jsonnet() {
    fuzz("jsonnet", 300);
}

#[test]
fn fuzz_shm_segment() {
    fuzz("shm-segment", 2_000);
}

#[test]
fn fuzz_agents() {
    fuzz("agents", 150);
}

/// The harness itself finds what it is for: a panicking target is
/// reported with its input, not fatal to the run.
#[test]
fn harness_reports_panics_and_broken_properties() {
    fn corpus() -> ptmp_fuzz::Corpus {
        ptmp_fuzz::Corpus::Bytes(vec![b"ok".to_vec()])
    }
    fn check(input: &[u8]) -> Result<(), String> {
        match input.first() {
            Some(0) => panic!("zero byte"),
            Some(1) => Err("one byte".into()),
            _ => Ok(()),
        }
    }
    let t = ptmp_fuzz::Target {
        name: "selftest",
        what: "a target that panics on a leading 0 byte",
        corpus,
        check,
    };
    let o = run(
        &t,
        Budget {
            cases: 5_000,
            time: Duration::from_secs(20),
        },
        1,
        &mut |_| {},
    );
    assert_eq!(o.cases, 5_000);
    let panics = o
        .failures
        .iter()
        .filter(|f| f.what.contains("panic: zero byte"))
        .count();
    let broken = o.failures.iter().filter(|f| f.what == "one byte").count();
    assert!(panics > 0 && broken > 0, "{:?}", o.failures.first());
    assert!(o
        .failures
        .iter()
        .all(|f| matches!(f.input.first(), Some(0 | 1))));
}

fn tp() -> impl Strategy<Value = TrigPrim> {
    (
        any::<u32>(),
        any::<u64>(),
        any::<Option<u32>>(),
        any::<Option<u32>>(),
        any::<Option<u32>>(),
        any::<Option<u32>>(),
    )
        .prop_map(
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
    (
        (any::<u32>(), any::<u32>(), any::<i64>(), any::<u64>()),
        (
            any::<Option<u32>>(),
            any::<Option<u32>>(),
            any::<Option<u32>>(),
            any::<Option<u32>>(),
        ),
        prop::collection::vec(tp(), 0..20),
    )
        .prop_map(
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

    /// Every TPSet survives encode and decode, and ptmp's bytes are the
    /// ones prost (an independent encoder of the same schema) writes.
    #[test]
    fn tpset_roundtrip(s in tpset()) {
        let mut b = Vec::new();
        encode_tpset(&s, &mut b);
        prop_assert_eq!(decode_tpset(&b).unwrap(), s.clone());
        prop_assert_eq!(b, prost::Message::encode_to_vec(&s));
    }

    /// Any prefix of a valid encoding either decodes or is refused: never
    /// a panic, and a shorter prefix that decodes is itself a valid set.
    #[test]
    fn tpset_prefixes(s in tpset(), cut in any::<prop::sample::Index>()) {
        let mut b = Vec::new();
        encode_tpset(&s, &mut b);
        let at = cut.index(b.len() + 1);
        if let Ok(t) = decode_tpset(&b[..at]) {
            let mut again = Vec::new();
            encode_tpset(&t, &mut again);
            prop_assert_eq!(decode_tpset(&again).unwrap(), t);
        }
    }
}
