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

/// How long a receiver waits for the next message before it takes the
/// sender to have fallen silent.
const IDLE: Duration = Duration::from_secs(3);

/// What a side asks of the kernel and how long its loop takes, measured
/// around the loop, never inside it.
struct Meter {
    /// The side is a process of its own (counted with the threads it
    /// starts), not one of the two threads of an inproc row.
    procs: bool,
    ctr: crate::sys::Syscalls,
}

/// Where a side's loop started: the kernel's counts and the clock then.
struct Started {
    k0: crate::sys::Kernel,
    t0: Instant,
}

impl Meter {
    /// Opens the system-call counter; `ctx` is the zmq context an inproc
    /// row shares (`None`: this side is a process of its own). Called
    /// before the socket is made, so that libzmq's I/O threads are counted.
    fn open(ctx: Option<&zmq::Context>) -> Meter {
        let procs = ctx.is_none();
        Meter {
            procs,
            ctr: crate::sys::Syscalls::open(procs),
        }
    }

    /// The loop starts now: the kernel's counts, then the clock.
    fn start(&self) -> Started {
        Started {
            k0: crate::sys::kernel(&self.ctr, !self.procs),
            t0: Instant::now(),
        }
    }

    /// The loop has ended and its socket is closed: the loop's seconds
    /// since `s`, then what was asked of the kernel since.
    fn stop(&self, s: Started) -> (f64, crate::sys::Kernel) {
        let loop_s = s.t0.elapsed().as_secs_f64();
        let k = s.k0.since(crate::sys::kernel(&self.ctr, !self.procs));
        (loop_s, k)
    }
}

/// Receiver side: counts by the TPSet count. `ready` is called once the
/// socket is bound; `ctx` is the zmq context to share for raw inproc.
pub(super) fn receive(
    c: &ChildArgs,
    ctx: Option<&zmq::Context>,
    ready: impl FnOnce(),
) -> BenchResult<Value> {
    let meter = Meter::open(ctx);
    let (_, rt) = types(c.pattern);
    crate::sys::pin(c.cpu)?;
    let mut tally = Tally::new(c.warmup, c.count);
    let started = match c.implementation {
        Impl::Ptmp => receive_ptmp(c, rt, &meter, &mut tally, ready)?,
        Impl::Frames => receive_frames(c, rt, &meter, &mut tally, ready)?,
        Impl::Raw => receive_libzmq(c, rt, ctx, &meter, &mut tally, ready)?,
    };
    let (got, gaps, span) = (tally.got, tally.gaps, tally.span_s());
    // The socket is gone (its threads joined) before this snapshot.
    let (loop_s, k) = meter.stop(started);
    Ok(
        json!({"received": got, "timed": got.saturating_sub(c.warmup), "gaps": gaps,
        "span_s": span, "hwm_mb": crate::sys::peak_rss_mb(),
        "syscalls": k.syscalls, "switches": k.switches(), "loop_s": loop_s}),
    )
}

/// The configuration of a receiving ptmp socket of type `rt`: it binds,
/// or connects to an shm ring (which its writer makes).
fn receiver_config(c: &ChildArgs, rt: &str) -> Value {
    let attach = if c.addr.starts_with("shm://") {
        "connect"
    } else {
        "bind"
    };
    json!({"socket": {"type": rt, attach: [c.addr], "hwm": c.hwm,
        "shm_slots": c.shm_slots, "shm_max_message": c.shm_max_message,
        "max_message": c.shm_max_message.max(ptmp::DEFAULT_MAX_MESSAGE)}})
}

/// ptmp's receiver taking TPSets, up to `c.batch` a call, into `tally`
/// until `c.count` have come or the sender falls silent. Each call first
/// asks `c.spin` times without waiting, then waits up to [`IDLE`]. Gives
/// where the loop started; the socket is closed on return.
fn receive_ptmp(
    c: &ChildArgs,
    rt: &str,
    meter: &Meter,
    tally: &mut Tally,
    ready: impl FnOnce(),
) -> BenchResult<Started> {
    let mut cfg = receiver_config(c, rt);
    if let Some(d) = &c.curve_dir {
        cfg["socket"]["curve"] = curve_json(d, true);
    }
    let mut rx = Receiver::new(SocketConfig::from_value(&cfg)?)?;
    ready();
    let started = meter.start();
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
            n = rx.recv_batch(&mut sets[..want], Some(IDLE))?;
            if n == 0 {
                tally.silent(IDLE);
                break;
            }
        }
        for t in &sets[..n] {
            tally.note(t.count);
        }
    }
    Ok(started)
}

/// ptmp's receiver taking raw frames, not decoded, into `tally` until
/// `c.count` have come or the sender falls silent; spins and waits as
/// [`receive_ptmp`] does. Gives where the loop started; the socket is
/// closed on return.
fn receive_frames(
    c: &ChildArgs,
    rt: &str,
    meter: &Meter,
    tally: &mut Tally,
    ready: impl FnOnce(),
) -> BenchResult<Started> {
    let cfg = receiver_config(c, rt);
    let mut rx = Receiver::new(SocketConfig::from_value(&cfg)?)?;
    ready();
    let started = meter.start();
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
        if !ok && !rx.recv_raw_into(&mut f, Some(IDLE))? {
            tally.silent(IDLE);
            break;
        }
        tally.note(seq);
        seq = seq.wrapping_add(1);
    }
    Ok(started)
}

/// A raw libzmq socket of the receiving type `rt` in `ctx`, with the row's
/// mark and CURVE keys (the server's), bound, its receive timeout [`IDLE`].
fn libzmq_receiver(c: &ChildArgs, rt: &str, ctx: &zmq::Context) -> BenchResult<zmq::Socket> {
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
    rx.set_rcvtimeo(IDLE.as_millis() as i32)
        .map_err(zerr("rcvtimeo"))?;
    Ok(rx)
}

/// Raw libzmq receiving both frames of each message and decoding the
/// TPSet as ptmp does, into `tally` until `c.count` have come or the
/// sender falls silent; `ctx` is the shared context of an inproc row
/// (`None`: one of its own). Gives where the loop started; the socket is
/// closed on return.
fn receive_libzmq(
    c: &ChildArgs,
    rt: &str,
    ctx: Option<&zmq::Context>,
    meter: &Meter,
    tally: &mut Tally,
    ready: impl FnOnce(),
) -> BenchResult<Started> {
    let own = zmq::Context::new();
    let rx = libzmq_receiver(c, rt, ctx.unwrap_or(&own))?;
    ready();
    let started = meter.start();
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
                    tally.silent(IDLE);
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
    Ok(started)
}

/// When each message of a sender is due: at `--rate`, counted from when
/// the schedule was made; without a rate, at once.
struct Pace {
    start: Instant,
    period: Option<Duration>,
}

impl Pace {
    /// The schedule of `rate` messages a second (none: no waiting),
    /// starting now.
    fn new(rate: Option<f64>) -> Pace {
        let start = Instant::now();
        let period = rate.map(|r| Duration::from_secs_f64(1.0 / r));
        Pace { start, period }
    }

    /// Waits until message `i` is due.
    #[inline]
    fn until(&self, i: u64) {
        if let Some(p) = self.period {
            crate::tpset::pace_until(self.start + p.mul_f64(i as f64));
        }
    }
}

/// Sender side; returns what it asked of the kernel while sending (and
/// closing its socket).
pub(super) fn send(c: &ChildArgs, ctx: Option<&zmq::Context>) -> BenchResult<Value> {
    let meter = Meter::open(ctx);
    crate::sys::pin(c.cpu)?;
    let (st, _) = types(c.pattern);
    let (t, _) = payload(c.ntps);
    let pace = Pace::new(c.rate);
    let started = match c.implementation {
        Impl::Ptmp => send_ptmp(c, st, &meter, &pace, &t)?,
        Impl::Frames => send_frames(c, st, &meter, &pace, &t)?,
        Impl::Raw => send_libzmq(c, st, ctx, &meter, &pace, t)?,
    };
    let (loop_s, k) = meter.stop(started);
    Ok(json!({"syscalls": k.syscalls, "switches": k.switches(), "loop_s": loop_s}))
}

/// The configuration of a sending ptmp socket of type `st`: it connects,
/// or binds an shm ring (which it makes).
fn sender_config(c: &ChildArgs, st: &str) -> Value {
    let attach = if c.addr.starts_with("shm://") {
        "bind"
    } else {
        "connect"
    };
    json!({"socket": {"type": st, attach: [c.addr], "sndhwm": c.hwm,
        "linger_ms": c.linger_ms, "shm_slots": c.shm_slots, "shm_max_message": c.shm_max_message,
        "max_message": c.shm_max_message.max(ptmp::DEFAULT_MAX_MESSAGE)}})
}

/// ptmp's sender sending `c.count` copies of `t`, numbered and stamped,
/// up to `c.batch` a call, each call when `pace` says. A PUB over zmq
/// first waits for its one subscriber. Gives where the loop started; the
/// socket is closed (drained) on return.
fn send_ptmp(
    c: &ChildArgs,
    st: &str,
    meter: &Meter,
    pace: &Pace,
    t: &TPSet,
) -> BenchResult<Started> {
    let mut cfg = sender_config(c, st);
    if st == "PUB" && !c.addr.starts_with("shm://") {
        cfg["socket"]["subscribers"] = json!(1);
    }
    if let Some(d) = &c.curve_dir {
        cfg["socket"]["curve"] = curve_json(d, false);
    }
    let mut tx = Sender::new(SocketConfig::from_value(&cfg)?)?;
    let started = meter.start();
    let mut sets = vec![t.clone(); c.batch.max(1) as usize];
    let mut clock = ptmp::data::Clock::new();
    let mut i = 0;
    while i < c.count {
        let k = ((c.count - i) as usize).min(sets.len());
        pace.until(i);
        // One clock read per call: per set with --batch 1.
        let now = clock.now_us();
        for (j, s) in sets[..k].iter_mut().enumerate() {
            s.count = (i + j as u64) as u32;
            s.created = now;
        }
        tx.send_batch(&sets[..k])?;
        i += k as u64;
    }
    Ok(started)
}

/// ptmp's sender sending the bytes of `t`, encoded once, as raw frames
/// `c.count` times when `pace` says. Gives where the loop started; the
/// socket is closed (drained) on return.
fn send_frames(
    c: &ChildArgs,
    st: &str,
    meter: &Meter,
    pace: &Pace,
    t: &TPSet,
) -> BenchResult<Started> {
    let cfg = sender_config(c, st);
    let mut tx = Sender::new(SocketConfig::from_value(&cfg)?)?;
    let mut buf = Vec::new();
    ptmp::data::encode_tpset(t, &mut buf);
    let started = meter.start();
    let mut clock = ptmp::data::Clock::new();
    for i in 0..c.count {
        pace.until(i);
        // The clock read a TPSet's `created` costs, so the two
        // rows differ only by encoding and decoding.
        std::hint::black_box(clock.now_us());
        tx.send_raw(&[&ptmp::data::VERSION_FRAME[..], &buf[..]])?;
    }
    Ok(started)
}

/// A raw libzmq socket of the sending type `st` in `ctx` (XPUB for a PUB,
/// to see its subscriber), with the row's mark, linger and CURVE keys
/// (the client's), connected; an XPUB has waited up to 10 s for its
/// subscriber.
fn libzmq_sender(c: &ChildArgs, st: &str, ctx: &zmq::Context) -> BenchResult<zmq::Socket> {
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
    Ok(tx)
}

/// Raw libzmq sending `t`, numbered, stamped and encoded as ptmp does,
/// as two frames `c.count` times when `pace` says; `ctx` is the shared
/// context of an inproc row (`None`: one of its own). Gives where the
/// loop started; the socket is closed on return.
fn send_libzmq(
    c: &ChildArgs,
    st: &str,
    ctx: Option<&zmq::Context>,
    meter: &Meter,
    pace: &Pace,
    mut t: TPSet,
) -> BenchResult<Started> {
    let own = zmq::Context::new();
    let tx = libzmq_sender(c, st, ctx.unwrap_or(&own))?;
    let mut buf = Vec::new();
    let mut clock = ptmp::data::Clock::new();
    let started = meter.start();
    for i in 0..c.count {
        pace.until(i);
        t.count = i as u32;
        t.created = clock.now_us();
        ptmp::data::encode_tpset(&t, &mut buf);
        tx.send(&ptmp::data::VERSION_FRAME[..], zmq::SNDMORE)
            .map_err(zerr("send"))?;
        tx.send(&buf[..], 0).map_err(zerr("send"))?;
    }
    Ok(started)
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
