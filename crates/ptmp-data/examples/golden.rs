//! Bridge for the cross-implementation tests in tests/python:
//!
//! * `golden encode FILE.json`: one hex line per vector, encoded by ptmp;
//! * `golden decode`: hex lines on stdin, each decoded by ptmp's checked
//!   decoder and printed as one JSON object per line (unset optionals left
//!   out), or `{"error": "..."}`.

use ptmp_data::{decode_tpset, encode_tpset, TPSet, TrigPrim};
use serde_json::{json, Map, Value};
use std::io::BufRead;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) {
        return Err(format!("odd-length hex {s:?}"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|e| format!("{s:?}: {e}")))
        .collect()
}

/// Build a TPSet from the vectors' JSON form (shared with tests/golden.rs).
pub fn from_json(d: &Value) -> TPSet {
    let u = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64);
    let u32o = |v: &Value, k: &str| u(v, k).map(|x| x as u32);
    TPSet {
        count: u(d, "count").expect("count") as u32,
        detid: u(d, "detid").expect("detid") as u32,
        created: d["created"].as_i64().expect("created"),
        tstart: u(d, "tstart").expect("tstart"),
        tspan: u32o(d, "tspan"),
        chanbeg: u32o(d, "chanbeg"),
        chanend: u32o(d, "chanend"),
        totaladc: u32o(d, "totaladc"),
        tps: d
            .get("tps")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|t| TrigPrim {
                        channel: u(t, "channel").expect("channel") as u32,
                        tstart: u(t, "tstart").expect("tstart"),
                        tspan: u32o(t, "tspan"),
                        adcsum: u32o(t, "adcsum"),
                        adcpeak: u32o(t, "adcpeak"),
                        flags: u32o(t, "flags"),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// Add the optional fields that are set; an unset one has no key, as in
/// protobuf's JSON mapping.
fn insert_set(m: &mut Map<String, Value>, fields: [(&str, Option<u32>); 4]) {
    for (k, v) in fields {
        if let Some(v) = v {
            m.insert(k.into(), v.into());
        }
    }
}

fn to_json(t: &TPSet) -> Value {
    let mut m = Map::new();
    m.insert("count".into(), t.count.into());
    m.insert("detid".into(), t.detid.into());
    m.insert("created".into(), t.created.into());
    m.insert("tstart".into(), t.tstart.into());
    insert_set(
        &mut m,
        [
            ("tspan", t.tspan),
            ("chanbeg", t.chanbeg),
            ("chanend", t.chanend),
            ("totaladc", t.totaladc),
        ],
    );
    if !t.tps.is_empty() {
        let tps: Vec<Value> = t
            .tps
            .iter()
            .map(|tp| {
                let mut o = Map::new();
                o.insert("channel".into(), tp.channel.into());
                o.insert("tstart".into(), tp.tstart.into());
                insert_set(
                    &mut o,
                    [
                        ("tspan", tp.tspan),
                        ("adcsum", tp.adcsum),
                        ("adcpeak", tp.adcpeak),
                        ("flags", tp.flags),
                    ],
                );
                Value::Object(o)
            })
            .collect();
        m.insert("tps".into(), tps.into());
    }
    Value::Object(m)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("encode") => {
            let path = args.get(1).expect("usage: golden encode FILE.json");
            let text = std::fs::read_to_string(path).expect("read vectors");
            let vectors: Vec<Value> = serde_json::from_str(&text).expect("vectors JSON");
            let mut buf = Vec::new();
            for v in &vectors {
                encode_tpset(&from_json(&v["tpset"]), &mut buf);
                println!("{}", hex(&buf));
            }
        }
        Some("decode") => {
            for line in std::io::stdin().lock().lines() {
                let line = line.expect("stdin");
                let out = match unhex(line.trim())
                    .and_then(|b| decode_tpset(&b).map_err(|e| e.to_string()))
                {
                    Ok(t) => to_json(&t),
                    Err(e) => json!({ "error": e }),
                };
                println!("{out}");
            }
        }
        _ => {
            eprintln!("usage: golden encode FILE.json | golden decode < hexlines");
            std::process::exit(2);
        }
    }
}
