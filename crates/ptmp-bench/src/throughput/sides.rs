//! The two sides of a throughput row, the sender and the receiver: run as
//! `ptmp tput-child` processes, or as two threads of one for inproc.

use super::Impl;
use crate::error::{BenchError, BenchResult};
use crate::sendrecv::Pattern;
use ptmp::{Receiver, Sender, SocketConfig, TPSet};
use serde_json::{json, Value};
use std::io::Write;
use std::time::{Duration, Instant};

/// `ptmp tput-child`: one side of a throughput row (internal).
#[derive(Debug, clap::Args)]
pub struct ChildArgs {
    #[arg(long)]
    pub role: String,
    #[arg(long, value_enum)]
    pub implementation: Impl,
    #[arg(long, value_enum)]
    pub pattern: Pattern,
    #[arg(long)]
    pub addr: String,
    #[arg(short = 'n', long)]
    pub count: u64,
    #[arg(long)]
    pub ntps: u32,
    #[arg(long)]
    pub hwm: i32,
    #[arg(long)]
    pub rate: Option<f64>,
    #[arg(long, default_value_t = 0)]
    pub warmup: u64,
    #[arg(long)]
    pub cpu: Option<usize>,
    #[arg(long, default_value_t = 0)]
    pub spin: u32,
    #[arg(long, default_value_t = 2000)]
    pub linger_ms: i32,
    #[arg(long, default_value_t = 1)]
    pub batch: u32,
    /// A directory holding server.key(_secret) and client.key(_secret):
    /// the row runs with CURVE.
    #[arg(long)]
    pub curve_dir: Option<std::path::PathBuf>,
    /// shm rows: the ring's slots.
    #[arg(long, default_value_t = 4096)]
    pub shm_slots: usize,
    /// shm rows: the most bytes one message may take in the ring.
    #[arg(long, default_value_t = 4096)]
    pub shm_max_message: usize,
}

/// The key pair `name` of a CURVE row's key directory.
fn curve_pair(dir: &std::path::Path, name: &str) -> BenchResult<ptmp::curve::KeyPair> {
    match ptmp::curve::read_certificate(&dir.join(format!("{name}.key_secret"))) {
        Ok(ptmp::curve::Certificate::Secret(k)) => Ok(k),
        Ok(_) => Err(BenchError::fail(format!(
            "{name}: not a secret certificate"
        ))),
        Err(e) => Err(BenchError::fail(e.to_string())),
    }
}

/// The `curve` object of a ptmp socket of a CURVE row: the receiver is the
/// server admitting the client's key, the sender the client.
fn curve_json(dir: &std::path::Path, server: bool) -> Value {
    let f = |n: &str| dir.join(n).display().to_string();
    if server {
        json!({"secret_key_file": f("server.key_secret"), "allow": [f("client.key")]})
    } else {
        json!({"secret_key_file": f("client.key_secret"), "server_key": f("server.key")})
    }
}

fn types(p: Pattern) -> (&'static str, &'static str) {
    match p {
        Pattern::Pair | Pattern::Pipe => ("PAIR", "PAIR"),
        Pattern::Pubsub => ("PUB", "SUB"),
        Pattern::Pushpull => ("PUSH", "PULL"),
    }
}

/// The message every row sends (the count changes, so sizes match within
/// a byte or two of varint growth).
pub(super) fn payload(ntps: u32) -> (TPSet, usize) {
    let mut t = crate::tpset::tpset(ntps);
    t.count = u32::MAX / 2;
    let mut b = Vec::new();
    ptmp::data::encode_tpset(&t, &mut b);
    (t, b.len() + 4)
}

fn zerr(op: &'static str) -> impl FnOnce(zmq::Error) -> BenchError {
    move |e| BenchError::fail(format!("zmq {op}: {e}"))
}

/// What a receiver has counted. The clock is read where timing starts and
/// where it ends, not per message: one read costs as much as a third of a
/// small message's whole path through shm.
struct Tally {
    got: u64,
    gaps: u64,
    next: u32,
    warmup: u64,
    count: u64,
    first: Option<Instant>,
    last: Option<Instant>,
}

impl Tally {
    fn new(warmup: u64, count: u64) -> Self {
        Tally {
            got: 0,
            gaps: 0,
            next: 0,
            warmup,
            count,
            first: None,
            last: None,
        }
    }

    /// One message with this count came in.
    #[inline]
    fn note(&mut self, count: u32) {
        self.got += 1;
        if count != self.next {
            self.gaps += 1;
        }
        self.next = count.wrapping_add(1);
        // Timing starts at the first message after the warmup and ends at
        // the last one asked for.
        if self.got == self.warmup + 1 {
            self.first = Some(Instant::now());
        }
        if self.got == self.count {
            self.last = Some(Instant::now());
        }
    }

    /// The sender fell silent for `idle`: the last message came in then.
    fn silent(&mut self, idle: Duration) {
        let now = Instant::now();
        self.last = Some(now.checked_sub(idle).unwrap_or(now));
    }

    /// Seconds from the first timed message to the last.
    fn span_s(&self) -> f64 {
        match (self.first, self.last) {
            (Some(f), Some(l)) => l.saturating_duration_since(f).as_secs_f64(),
            _ => 0.0,
        }
    }
}

/// Receiver side: counts by the TPSet count. `ready` is called once the
/// socket is bound; `ctx` is the zmq context to share for raw inproc.
pub(super) fn receive(
    c: &ChildArgs,
    ctx: Option<&zmq::Context>,
    ready: impl FnOnce(),
) -> BenchResult<Value> {
    // Opened before the socket, so that libzmq's I/O threads are counted.
    let procs = ctx.is_none();
    let ctr = crate::sys::Syscalls::open(procs);
    let (_, rt) = types(c.pattern);
    let shm = c.addr.starts_with("shm://");
    let attach = if shm { "connect" } else { "bind" };
    crate::sys::pin(c.cpu)?;
    let mut tally = Tally::new(c.warmup, c.count);
    let idle = Duration::from_secs(3);
    let (k0, t0);
    match c.implementation {
        Impl::Ptmp => {
            let mut cfg = json!({"socket": {"type": rt, attach: [c.addr], "hwm": c.hwm,
                "shm_slots": c.shm_slots, "shm_max_message": c.shm_max_message,
                "max_message": c.shm_max_message.max(ptmp::DEFAULT_MAX_MESSAGE)}});
            if let Some(d) = &c.curve_dir {
                cfg["socket"]["curve"] = curve_json(d, true);
            }
            let mut rx = Receiver::new(SocketConfig::from_value(&cfg)?)?;
            ready();
            k0 = crate::sys::kernel(&ctr, !procs);
            t0 = Instant::now();
            let mut sets = vec![TPSet::default(); c.batch.max(1) as usize];
            while tally.got < c.count {
                let want = ((c.count - tally.got) as usize).min(sets.len());
                let mut n = 0;
                for _ in 0..c.spin {
                    n = rx.recv_batch(&mut sets[..want], Some(Duration::ZERO))?;
                    if n > 0 {
                        break;
                    }
                }
                if n == 0 {
                    n = rx.recv_batch(&mut sets[..want], Some(idle))?;
                    if n == 0 {
                        tally.silent(idle);
                        break;
                    }
                }
                for t in &sets[..n] {
                    tally.note(t.count);
                }
            }
        }
        Impl::Frames => {
            let cfg = json!({"socket": {"type": rt, attach: [c.addr], "hwm": c.hwm,
                "shm_slots": c.shm_slots, "shm_max_message": c.shm_max_message,
                "max_message": c.shm_max_message.max(ptmp::DEFAULT_MAX_MESSAGE)}});
            let mut rx = Receiver::new(SocketConfig::from_value(&cfg)?)?;
            ready();
            k0 = crate::sys::kernel(&ctr, !procs);
            t0 = Instant::now();
            let mut f = ptmp::Frames::new();
            // Raw frames carry no count: number them as they come (only
            // PUB/SUB may drop, and these rows are lossless).
            let mut seq = 0u32;
            while tally.got < c.count {
                let mut ok = false;
                for _ in 0..c.spin {
                    if rx.recv_raw_into(&mut f, Some(Duration::ZERO))? {
                        ok = true;
                        break;
                    }
                }
                if !ok && !rx.recv_raw_into(&mut f, Some(idle))? {
                    tally.silent(idle);
                    break;
                }
                tally.note(seq);
                seq = seq.wrapping_add(1);
            }
        }
        Impl::Raw => {
            let own = zmq::Context::new();
            let ctx = ctx.unwrap_or(&own);
            let zt = if rt == "SUB" {
                zmq::SUB
            } else if rt == "PAIR" {
                zmq::PAIR
            } else {
                zmq::PULL
            };
            let rx = ctx.socket(zt).map_err(zerr("socket"))?;
            rx.set_rcvhwm(c.hwm).map_err(zerr("rcvhwm"))?;
            if zt == zmq::SUB {
                rx.set_subscribe(b"").map_err(zerr("subscribe"))?;
            }
            if let Some(d) = &c.curve_dir {
                let k = curve_pair(d, "server")?;
                rx.set_curve_server(true).map_err(zerr("curve"))?;
                rx.set_curve_secretkey(k.secret()).map_err(zerr("curve"))?;
            }
            rx.bind(&c.addr).map_err(zerr("bind"))?;
            rx.set_rcvtimeo(idle.as_millis() as i32)
                .map_err(zerr("rcvtimeo"))?;
            ready();
            k0 = crate::sys::kernel(&ctr, !procs);
            t0 = Instant::now();
            let (mut m0, mut m1) = (zmq::Message::new(), zmq::Message::new());
            let mut t = TPSet::default();
            while tally.got < c.count {
                let mut ok = false;
                for _ in 0..c.spin {
                    if rx.recv(&mut m0, zmq::DONTWAIT).is_ok() {
                        ok = true;
                        break;
                    }
                }
                if !ok {
                    match rx.recv(&mut m0, 0) {
                        Ok(()) => {}
                        Err(zmq::Error::EAGAIN) => {
                            tally.silent(idle);
                            break;
                        }
                        Err(e) => return Err(zerr("recv")(e)),
                    }
                }
                rx.recv(&mut m1, 0).map_err(zerr("recv"))?;
                // Decode as ptmp does, so both sides do the same work.
                ptmp::data::decode_tpset_into(&m1, &mut t)
                    .map_err(|e| BenchError::fail(format!("raw payload: {e}")))?;
                tally.note(t.count);
            }
        }
    }
    let (got, gaps, span) = (tally.got, tally.gaps, tally.span_s());
    // The socket is gone (its threads joined) before this snapshot.
    let loop_s = t0.elapsed().as_secs_f64();
    let k = k0.since(crate::sys::kernel(&ctr, !procs));
    Ok(
        json!({"received": got, "timed": got.saturating_sub(c.warmup), "gaps": gaps,
        "span_s": span, "hwm_mb": crate::sys::peak_rss_mb(),
        "syscalls": k.syscalls, "switches": k.switches(), "loop_s": loop_s}),
    )
}

/// Sender side; returns what it asked of the kernel while sending (and
/// closing its socket).
pub(super) fn send(c: &ChildArgs, ctx: Option<&zmq::Context>) -> BenchResult<Value> {
    let procs = ctx.is_none();
    let ctr = crate::sys::Syscalls::open(procs);
    crate::sys::pin(c.cpu)?;
    let (st, _) = types(c.pattern);
    let shm = c.addr.starts_with("shm://");
    let attach = if shm { "bind" } else { "connect" };
    let (mut t, _) = payload(c.ntps);
    let start = Instant::now();
    let period = c.rate.map(|r| Duration::from_secs_f64(1.0 / r));
    let pace = |i: u64| {
        if let Some(p) = period {
            crate::tpset::pace_until(start + p.mul_f64(i as f64));
        }
    };
    let k0;
    let t0;
    match c.implementation {
        Impl::Ptmp => {
            let mut cfg = json!({"socket": {"type": st, attach: [c.addr], "sndhwm": c.hwm,
                "linger_ms": c.linger_ms, "shm_slots": c.shm_slots, "shm_max_message": c.shm_max_message,
                "max_message": c.shm_max_message.max(ptmp::DEFAULT_MAX_MESSAGE)}});
            if st == "PUB" && !shm {
                cfg["socket"]["subscribers"] = json!(1);
            }
            if let Some(d) = &c.curve_dir {
                cfg["socket"]["curve"] = curve_json(d, false);
            }
            let mut tx = Sender::new(SocketConfig::from_value(&cfg)?)?;
            k0 = crate::sys::kernel(&ctr, !procs);
            t0 = Instant::now();
            let mut sets = vec![t.clone(); c.batch.max(1) as usize];
            let mut clock = ptmp::data::Clock::new();
            let mut i = 0;
            while i < c.count {
                let k = ((c.count - i) as usize).min(sets.len());
                pace(i);
                // One clock read per call: per set with --batch 1.
                let now = clock.now_us();
                for (j, s) in sets[..k].iter_mut().enumerate() {
                    s.count = (i + j as u64) as u32;
                    s.created = now;
                }
                tx.send_batch(&sets[..k])?;
                i += k as u64;
            }
        }
        Impl::Frames => {
            let cfg = json!({"socket": {"type": st, attach: [c.addr], "sndhwm": c.hwm,
                "linger_ms": c.linger_ms, "shm_slots": c.shm_slots, "shm_max_message": c.shm_max_message,
                "max_message": c.shm_max_message.max(ptmp::DEFAULT_MAX_MESSAGE)}});
            let mut tx = Sender::new(SocketConfig::from_value(&cfg)?)?;
            let mut buf = Vec::new();
            ptmp::data::encode_tpset(&t, &mut buf);
            k0 = crate::sys::kernel(&ctr, !procs);
            t0 = Instant::now();
            let mut clock = ptmp::data::Clock::new();
            for i in 0..c.count {
                pace(i);
                // The clock read a TPSet's `created` costs, so the two
                // rows differ only by encoding and decoding.
                std::hint::black_box(clock.now_us());
                tx.send_raw(&[&ptmp::data::VERSION_FRAME[..], &buf[..]])?;
            }
        }
        Impl::Raw => {
            let own = zmq::Context::new();
            let ctx = ctx.unwrap_or(&own);
            let zt = if st == "PUB" {
                zmq::XPUB
            } else if st == "PAIR" {
                zmq::PAIR
            } else {
                zmq::PUSH
            };
            let tx = ctx.socket(zt).map_err(zerr("socket"))?;
            tx.set_sndhwm(c.hwm).map_err(zerr("sndhwm"))?;
            tx.set_linger(c.linger_ms).map_err(zerr("linger"))?;
            if let Some(d) = &c.curve_dir {
                let (k, server) = (curve_pair(d, "client")?, curve_pair(d, "server")?);
                tx.set_curve_serverkey(&server.public.0)
                    .map_err(zerr("curve"))?;
                tx.set_curve_publickey(&k.public.0).map_err(zerr("curve"))?;
                tx.set_curve_secretkey(k.secret()).map_err(zerr("curve"))?;
            }
            tx.connect(&c.addr).map_err(zerr("connect"))?;
            if zt == zmq::XPUB {
                tx.set_rcvtimeo(10_000).map_err(zerr("rcvtimeo"))?;
                tx.recv_bytes(0).map_err(zerr("wait for subscriber"))?;
            }
            let mut buf = Vec::new();
            let mut clock = ptmp::data::Clock::new();
            k0 = crate::sys::kernel(&ctr, !procs);
            t0 = Instant::now();
            for i in 0..c.count {
                pace(i);
                t.count = i as u32;
                t.created = clock.now_us();
                ptmp::data::encode_tpset(&t, &mut buf);
                tx.send(&ptmp::data::VERSION_FRAME[..], zmq::SNDMORE)
                    .map_err(zerr("send"))?;
                tx.send(&buf[..], 0).map_err(zerr("send"))?;
            }
        }
    }
    let loop_s = t0.elapsed().as_secs_f64();
    let k = k0.since(crate::sys::kernel(&ctr, !procs));
    Ok(json!({"syscalls": k.syscalls, "switches": k.switches(), "loop_s": loop_s}))
}

pub fn child(c: &ChildArgs) -> BenchResult {
    if c.role == "recv" {
        let j = receive(c, None, || {
            println!("ready");
            let _ = std::io::stdout().flush();
        })?;
        println!("{j}");
    } else {
        let mut j = send(c, None)?;
        j["hwm_mb"] = json!(crate::sys::peak_rss_mb());
        println!("{j}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_runs_from_the_first_message_after_the_warmup_to_the_last() {
        let mut t = Tally::new(2, 5);
        t.note(0);
        t.note(1);
        assert!(t.first.is_none(), "the warmup is not timed");
        t.note(2);
        assert!(t.first.is_some());
        std::thread::sleep(Duration::from_millis(30));
        t.note(3);
        assert!(t.last.is_none(), "timing ends at the last message");
        t.note(5);
        assert!(t.span_s() >= 0.03, "{}", t.span_s());
        assert_eq!((t.got, t.gaps), (5, 1));
    }

    #[test]
    fn a_silent_sender_ends_the_timing_one_idle_wait_back() {
        let mut t = Tally::new(0, 10);
        t.note(0);
        assert_eq!(t.span_s(), 0.0, "no end yet");
        std::thread::sleep(Duration::from_millis(60));
        t.silent(Duration::from_millis(20));
        let s = t.span_s();
        assert!((0.035..0.5).contains(&s), "{s}");
        // An idle wait longer than the run gives an empty span, not a panic.
        t.silent(Duration::from_millis(500));
        assert_eq!(t.span_s(), 0.0);
    }
}
