//! The Babus scenario over Redis streams: XADD / XREAD BLOCK on a
//! redis-server the harness started (`crate::redis`).

use super::{producers, run_producers, BabusArgs, Outcome, Stats, CONSUMERS};
use crate::error::{BenchError, BenchResult};
use crate::redis::conn;
use crate::sys::mono_ns;
use redis::streams::StreamReadReply;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The Babus scenario over Redis streams at `url`.
pub fn run_babus(a: &BabusArgs, url: &str) -> BenchResult<Outcome> {
    let id = std::process::id();
    let key = |p: &str| format!("babus:{id}:{p}");
    let prods = producers(a.image_bytes);
    {
        let mut c = conn(url)?;
        for p in &prods {
            let _: i64 = redis::cmd("DEL")
                .arg(key(p.name))
                .query(&mut c)
                .map_err(|e| BenchError::fail(format!("redis DEL: {e}")))?;
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mut consumers = Vec::new();
    for (cname, chans) in CONSUMERS {
        let mut c = conn(url)?;
        let keys: Vec<String> = chans.iter().map(|ch| key(ch)).collect();
        let stop = stop.clone();
        let max = a.image_bytes;
        consumers.push(std::thread::spawn(move || {
            let mut stats: Vec<Stats> = chans.iter().map(|_| Stats::new()).collect();
            let mut next: Vec<u64> = vec![0; chans.len()];
            // The streams are new: read each from its beginning.
            let mut ids: Vec<String> = vec!["0".into(); chans.len()];
            let mut buf = vec![0u8; max];
            while !stop.load(Ordering::Relaxed) {
                let reply: Option<StreamReadReply> = redis::cmd("XREAD")
                    .arg("BLOCK")
                    .arg(100)
                    .arg("STREAMS")
                    .arg(&keys)
                    .arg(&ids)
                    .query(&mut c)
                    .unwrap_or(None);
                let t_view = mono_ns();
                let Some(reply) = reply else { continue };
                for sk in reply.keys {
                    let Some(i) = keys.iter().position(|k| *k == sk.key) else {
                        continue;
                    };
                    for e in sk.ids {
                        if let Some(redis::Value::BulkString(b)) = e.map.get("d") {
                            let stamp = u64::from_le_bytes(b[..8].try_into().expect("8"));
                            let n = u64::from_le_bytes(b[8..16].try_into().expect("8"));
                            buf[..b.len()].copy_from_slice(b);
                            let t_copy = mono_ns();
                            stats[i].lost += n.saturating_sub(next[i]);
                            next[i] = n + 1;
                            stats[i].record(stamp, t_view, t_copy);
                        }
                        ids[i] = e.id;
                    }
                }
            }
            (cname, chans, stats)
        }));
    }
    let names: Vec<&'static str> = prods.iter().map(|p| p.name).collect();
    let mut conns = Vec::new();
    for _ in 0..prods.len() {
        conns.push(Some(conn(url)?));
    }
    let prod = run_producers(a.seconds, prods, |k| {
        let mut c = conns[k].take().expect("one connection per producer");
        let stream = key(names[k]);
        let mut payload = Vec::new();
        move |bytes: usize, i: u64| {
            payload.clear();
            payload.resize(bytes.max(16), i as u8);
            payload[8..16].copy_from_slice(&i.to_le_bytes());
            payload[..8].copy_from_slice(&mono_ns().to_le_bytes());
            redis::cmd("XADD")
                .arg(&stream)
                .arg("MAXLEN")
                .arg("~")
                .arg(64)
                .arg("*")
                .arg("d")
                .arg(&payload[..])
                .query::<String>(&mut c)
                .is_ok()
        }
    });
    Outcome::join(prod, consumers, &stop, Duration::from_millis(300))
}
