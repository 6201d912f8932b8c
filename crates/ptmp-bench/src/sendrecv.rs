//! Both ends in one process (PTMP's check_sendrecv), and the same run over
//! raw libzmq moving identical frames, for comparison: `ptmp sendrecv` runs
//! one, the `tuning` suite runs them alternately and repeatedly.

use crate::error::{BenchError, BenchResult};
use clap::ValueEnum;
use ptmp::{Receiver, Sender, SocketConfig, TPSet};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Which pair of socket types carries a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Pattern {
    /// PAIR to PAIR.
    Pair,
    /// PAIR to PAIR (PTMP's name for it).
    Pipe,
    /// PUB to SUB (the PUB waits for its subscriber, then drops at its HWM).
    Pubsub,
    /// PUSH to PULL.
    Pushpull,
}

impl Pattern {
    /// The pattern's name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Pair => "pair",
            Pattern::Pipe => "pipe",
            Pattern::Pubsub => "pubsub",
            Pattern::Pushpull => "pushpull",
        }
    }
    fn types(self) -> (&'static str, &'static str) {
        match self {
            Pattern::Pair | Pattern::Pipe => ("PAIR", "PAIR"),
            Pattern::Pubsub => ("PUB", "SUB"),
            Pattern::Pushpull => ("PUSH", "PULL"),
        }
    }
}

/// Which transport carries a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
// The plain zmq transports are not documented one by one: a doc comment on a
// variant would show in `--help` beside its name, which says it all.
#[allow(missing_docs)]
pub enum TransportArg {
    Inproc,
    Ipc,
    Tcp,
    /// ptmp's shared-memory ring (PUB/SUB and PUSH/PULL).
    Shm,
}

impl TransportArg {
    /// The transport's name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            TransportArg::Inproc => "inproc",
            TransportArg::Ipc => "ipc",
            TransportArg::Tcp => "tcp",
            TransportArg::Shm => "shm",
        }
    }
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// "ptmp" or "raw-zmq".
    pub impl_name: &'static str,
    /// The socket types used.
    pub pattern: Pattern,
    /// The transport used.
    pub transport: TransportArg,
    /// TrigPrims in each TPSet.
    pub ntps: u32,
    /// TPSets sent.
    pub sent: u64,
    /// TPSets received before the receiver gave up waiting.
    pub received: u64,
    /// Messages received that were not TPSets.
    pub errors: u64,
    /// From the first send to the last receive, seconds.
    pub elapsed_s: f64,
}

impl Outcome {
    /// TPSets sent but never received.
    pub fn lost(&self) -> u64 {
        self.sent.saturating_sub(self.received)
    }
    /// TPSets received per second of the run.
    pub fn rate_hz(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.received as f64 / self.elapsed_s
        } else {
            0.0
        }
    }
    /// The run as one JSON object (what `--json` prints).
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "impl": self.impl_name, "pattern": self.pattern.name(),
            "transport": self.transport.name(), "ntps": self.ntps,
            "sent": self.sent, "received": self.received, "lost": self.lost(),
            "errors": self.errors, "elapsed_s": self.elapsed_s, "rate_hz": self.rate_hz(),
        })
    }
}

/// A fresh address for the receiving end to bind.
fn bind_address(t: TransportArg) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let k = N.fetch_add(1, Ordering::Relaxed);
    let id = std::process::id();
    match t {
        TransportArg::Inproc => format!("inproc://sendrecv-{id}-{k}"),
        TransportArg::Ipc => format!(
            "ipc://{}",
            std::env::temp_dir()
                .join(format!("ptmp-sendrecv-{id}-{k}.ipc"))
                .display()
        ),
        TransportArg::Tcp => "tcp://127.0.0.1:*".into(),
        TransportArg::Shm => format!("shm://sendrecv-{id}-{k}"),
    }
}

/// Remove what an address leaves behind: an ipc socket file, an shm segment.
fn remove_ipc_file(addr: &str) {
    if let Some(p) = addr.strip_prefix("ipc://") {
        let _ = std::fs::remove_file(p);
    }
    if let Some(n) = addr.strip_prefix("shm://") {
        let _ = ptmp_shm::remove(n);
    }
}

/// Once the sender is done, how long the receiver waits for stragglers
/// before counting the rest as lost (only a PUB can drop them).
const DRAIN_IDLE: Duration = Duration::from_millis(300);

/// Tracks when the receiving loop should stop and when the last message came.
struct RecvLoop {
    n: u64,
    received: u64,
    last: Instant,
    idle_since: Option<Instant>,
}

impl RecvLoop {
    fn new(n: u64) -> Self {
        RecvLoop {
            n,
            received: 0,
            last: Instant::now(),
            idle_since: None,
        }
    }
    #[inline]
    fn got(&mut self) {
        self.received += 1;
        if self.idle_since.take().is_some() || self.received == self.n {
            self.last = Instant::now();
        }
    }
    /// Called on a receive timeout: true when it is time to stop.
    fn idle(&mut self, sender_done: bool, sender_exited: bool) -> bool {
        if self.idle_since.is_none() {
            // The previous message was the last one so far.
            self.last = Instant::now();
        }
        let since = *self.idle_since.get_or_insert_with(Instant::now);
        (sender_exited && !sender_done) || (sender_done && since.elapsed() >= DRAIN_IDLE)
    }
}

/// Run `n` TPSets through ptmp Sender -> Receiver.
pub fn run_ptmp(p: Pattern, tr: TransportArg, n: u64, ntps: u32, hwm: i32) -> BenchResult<Outcome> {
    let (st, rt) = p.types();
    if tr == TransportArg::Shm && !matches!(p, Pattern::Pubsub | Pattern::Pushpull) {
        return Err(BenchError::usage(format!(
            "--transport shm carries pubsub and pushpull only (not {})",
            p.name()
        )));
    }
    let addr = bind_address(tr);
    let rcfg =
        SocketConfig::from_value(&json!({"socket": {"type": rt, "bind": [addr], "hwm": hwm}}))?;
    let mut rx = Receiver::new(rcfg)?;
    // An shm receiver made before its channel takes it from the first message.
    let ep = rx.bound_endpoints().first().cloned().unwrap_or(addr);
    let mut scfg = json!({"socket": {"type": st, "connect": [ep]}});
    if st == "PUB" && tr != TransportArg::Shm {
        scfg["socket"]["subscribers"] = json!(1);
    }
    let scfg = SocketConfig::from_value(&scfg)?;
    let done = Arc::new(AtomicBool::new(false));
    let done2 = done.clone();
    let sender = std::thread::spawn(move || -> ptmp::Result<Instant> {
        let mut tx = Sender::new(scfg.clone())?;
        let mut t = crate::tpset::tpset(ntps);
        if scfg.subscribers() > 0 {
            tx.wait_configured()?;
        }
        let start = Instant::now();
        for i in 0..n {
            t.count = i as u32;
            t.tstart = i * 25;
            t.created = ptmp::data::now_us();
            tx.send(&t)?;
        }
        done2.store(true, Ordering::Release);
        Ok(start)
    });
    let mut t = TPSet::default();
    let mut lp = RecvLoop::new(n);
    while lp.received < n {
        match rx.recv_into(&mut t, Some(Duration::from_millis(50))) {
            Ok(true) => lp.got(),
            Ok(false) => {
                if lp.idle(done.load(Ordering::Acquire), sender.is_finished()) {
                    break;
                }
            }
            Err(ptmp::Error::Wire(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let start = sender
        .join()
        .map_err(|_| BenchError::fail("sender thread panicked"))??;
    remove_ipc_file(&ep);
    Ok(Outcome {
        impl_name: "ptmp",
        pattern: p,
        transport: tr,
        ntps,
        sent: n,
        received: lp.received,
        errors: rx.errors(),
        elapsed_s: lp.last.saturating_duration_since(start).as_secs_f64(),
    })
}

fn zerr(op: &'static str) -> impl FnOnce(zmq::Error) -> BenchError {
    move |e| BenchError::fail(format!("raw zmq {op}: {e}"))
}

/// The same run with raw libzmq: identical two frames (a version frame and
/// an encoded TPSet of the same size), sent from prebuilt bytes and received
/// into reused messages without decoding. This is the ceiling ptmp is
/// measured against. Like ptmp, the sending socket has a context of its own
/// (except inproc, which needs one shared context) and a PUB waits for its
/// subscriber through XPUB.
pub fn run_raw(p: Pattern, tr: TransportArg, n: u64, ntps: u32, hwm: i32) -> BenchResult<Outcome> {
    let (st, rt) = p.types();
    if tr == TransportArg::Shm {
        return Err(BenchError::usage("raw libzmq has no shm transport"));
    }
    let zt = |s: &str| match s {
        "PAIR" => zmq::PAIR,
        "PUB" => zmq::XPUB,
        "SUB" => zmq::SUB,
        "PUSH" => zmq::PUSH,
        _ => zmq::PULL,
    };
    let rctx = zmq::Context::new();
    let sctx = if tr == TransportArg::Inproc {
        rctx.clone()
    } else {
        zmq::Context::new()
    };
    let rx = rctx.socket(zt(rt)).map_err(zerr("socket"))?;
    rx.set_rcvhwm(hwm).map_err(zerr("rcvhwm"))?;
    // Non-zero, as ptmp's: linger 0 drops unread messages of a peer that disconnects.
    rx.set_linger(2000).map_err(zerr("linger"))?;
    if rt == "SUB" {
        rx.set_subscribe(b"").map_err(zerr("subscribe"))?;
    }
    rx.bind(&bind_address(tr)).map_err(zerr("bind"))?;
    let ep = rx
        .get_last_endpoint()
        .map_err(zerr("last endpoint"))?
        .map_err(|_| BenchError::fail("raw zmq: endpoint is not UTF-8"))?;
    let mut t = crate::tpset::tpset(ntps);
    t.count = u32::MAX / 2; // a count as wide as most of ptmp's
    t.created = ptmp::data::now_us();
    let mut payload = Vec::new();
    ptmp::data::encode_tpset(&t, &mut payload);
    let done = Arc::new(AtomicBool::new(false));
    let done2 = done.clone();
    let ep2 = ep.clone();
    let sender = std::thread::spawn(move || -> BenchResult<Instant> {
        let tx = sctx.socket(zt(st)).map_err(zerr("socket"))?;
        tx.set_linger(2000).map_err(zerr("linger"))?;
        tx.connect(&ep2).map_err(zerr("connect"))?;
        if st == "PUB" {
            tx.set_rcvtimeo(10_000).map_err(zerr("rcvtimeo"))?;
            let sub = tx.recv_bytes(0).map_err(zerr("wait for subscriber"))?;
            debug_assert_eq!(sub.first(), Some(&1));
        }
        let start = Instant::now();
        for _ in 0..n {
            tx.send(&ptmp::data::VERSION_FRAME[..], zmq::SNDMORE)
                .map_err(zerr("send"))?;
            tx.send(&payload[..], 0).map_err(zerr("send"))?;
        }
        done2.store(true, Ordering::Release);
        drop(tx);
        Ok(start)
    });
    rx.set_rcvtimeo(50).map_err(zerr("rcvtimeo"))?;
    let (mut m0, mut m1) = (zmq::Message::new(), zmq::Message::new());
    let mut lp = RecvLoop::new(n);
    let mut errors = 0;
    while lp.received < n {
        match rx.recv(&mut m0, 0) {
            Ok(()) => {
                if m0.get_more() {
                    rx.recv(&mut m1, 0).map_err(zerr("recv"))?;
                    lp.got();
                } else {
                    errors += 1;
                }
            }
            Err(zmq::Error::EAGAIN) => {
                if lp.idle(done.load(Ordering::Acquire), sender.is_finished()) {
                    break;
                }
            }
            Err(e) => return Err(zerr("recv")(e)),
        }
    }
    let start = sender
        .join()
        .map_err(|_| BenchError::fail("sender thread panicked"))??;
    remove_ipc_file(&ep);
    Ok(Outcome {
        impl_name: "raw-zmq",
        pattern: p,
        transport: tr,
        ntps,
        sent: n,
        received: lp.received,
        errors,
        elapsed_s: lp.last.saturating_duration_since(start).as_secs_f64(),
    })
}
