//! `ptmp bench requests`: request and response round trips, ptmp's
//! `Client` and `Server` beside raw libzmq (REQ/REP in lockstep,
//! DEALER/ROUTER with as many requests out as ptmp's), per transport and
//! number of requests in flight: requests per second and round-trip
//! percentiles. The server runs on a thread of the same process and
//! answers every request with its own bytes.

use crate::error::{BenchError, BenchResult};
use crate::report::{Cell, Row};
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Debug, clap::Args)]
pub struct RequestsArgs {
    /// Requests per row.
    #[arg(short = 'n', long, default_value_t = 100_000)]
    pub count: u64,
    /// Requests in flight (1: each waits for the answer before it).
    #[arg(long, num_args = 1.., default_values = ["1", "64"])]
    pub in_flight: Vec<usize>,
    /// Transports: inproc, ipc, tcp.
    #[arg(long, num_args = 1.., default_values = ["inproc", "ipc", "tcp"])]
    pub transport: Vec<String>,
    /// Bytes of each request (the answer is as big).
    #[arg(long, default_value_t = 64)]
    pub size: usize,
}

/// One row: an implementation over a transport with some requests out.
#[derive(Debug, Clone)]
pub struct RequestsRow {
    pub transport: String,
    pub implementation: &'static str,
    pub in_flight: usize,
    /// Answers per second, thousands.
    pub khz: f64,
    /// Round trip, microseconds: median, 99th percentile.
    pub p50_us: f64,
    pub p99_us: f64,
    /// Requests answered.
    pub answered: u64,
}

impl Row for RequestsRow {
    fn headers() -> &'static [&'static str] {
        &[
            "transport",
            "implementation",
            "in flight",
            "kHz",
            "round trip p50 µs",
            "round trip p99 µs",
            "answered",
        ]
    }
    fn cells(&self) -> Vec<Cell> {
        vec![
            Cell::label(&self.transport),
            Cell::label(self.implementation),
            Cell::param(self.in_flight as f64),
            Cell::measure(self.khz, format!("{:.1}", self.khz)),
            Cell::measure(self.p50_us, format!("{:.1}", self.p50_us)),
            Cell::measure(self.p99_us, format!("{:.1}", self.p99_us)),
            Cell::count(self.answered),
        ]
    }
}

/// What one run measured.
struct Timed {
    hist: Histogram<u64>,
    elapsed: Duration,
    answered: u64,
}

impl Timed {
    fn row(&self, transport: &str, implementation: &'static str, k: usize) -> RequestsRow {
        let us = |q: f64| self.hist.value_at_quantile(q) as f64 / 1e3;
        RequestsRow {
            transport: transport.to_string(),
            implementation,
            in_flight: k,
            khz: self.answered as f64 / self.elapsed.as_secs_f64().max(1e-9) / 1e3,
            p50_us: us(0.5),
            p99_us: us(0.99),
            answered: self.answered,
        }
    }
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

fn address(transport: &str, what: &str) -> BenchResult<String> {
    Ok(match transport {
        "tcp" => "tcp://127.0.0.1:*".to_string(),
        "ipc" => format!(
            "ipc://{}",
            std::env::temp_dir()
                .join(format!("ptmp-bench-rr-{}-{what}", std::process::id()))
                .display()
        ),
        "inproc" => format!("inproc://bench-rr-{what}"),
        t => {
            return Err(BenchError::usage(format!(
                "--transport {t}: use inproc, ipc or tcp"
            )))
        }
    })
}

/// Run the suite.
pub fn run(a: &RequestsArgs) -> BenchResult<Vec<RequestsRow>> {
    if a.count == 0 || a.in_flight.contains(&0) {
        return Err(BenchError::usage("-n and --in-flight must be at least 1"));
    }
    crate::report::table::<RequestsRow>();
    let body = vec![7u8; a.size];
    let mut out = Vec::new();
    for t in &a.transport {
        for &k in &a.in_flight {
            let mut rows = vec![(ptmp_run(t, k, a.count, &body)?, "ptmp")];
            if k == 1 {
                rows.push((req_rep(t, a.count, &body)?, "libzmq REQ/REP"));
            }
            rows.push((dealer_router(t, k, a.count, &body)?, "libzmq DEALER/ROUTER"));
            for (timed, name) in rows {
                let row = timed.row(t, name, k);
                crate::report::row(&row);
                out.push(row);
            }
        }
    }
    crate::report::note(format!(
        "\n{} requests of {} bytes per row, answered with the same bytes by a server \
         on another thread of this process; round trips from send to answer.",
        a.count, a.size
    ));
    Ok(out)
}

/// A server thread and the flag that stops it.
struct Serving {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Serving {
    fn start(f: impl FnOnce(Arc<AtomicBool>) + Send + 'static) -> Serving {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        Serving {
            stop,
            thread: Some(std::thread::spawn(move || f(s))),
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// ptmp's Client and Server, `k` requests out at a time.
fn ptmp_run(transport: &str, k: usize, n: u64, body: &[u8]) -> BenchResult<Timed> {
    let mut server = ptmp::Server::bind(&address(transport, &format!("ptmp-{k}"))?)?;
    let at = server
        .bound()
        .first()
        .cloned()
        .unwrap_or_else(|| server.address().to_string());
    let _serving = Serving::start(move |stop| {
        while !stop.load(Ordering::Relaxed) {
            if let Ok(Some(r)) = server.recv(Some(Duration::from_millis(50))) {
                let (b, reply) = r.into_parts();
                let _ = server.answer(reply, &b);
            }
        }
    });
    let mut c = ptmp::Client::connect(&at)?;
    c.set_max_in_flight(k);
    // One answered first, so that connecting is not timed.
    c.request(body, Duration::from_secs(10))?;
    let mut sent_at = vec![Instant::now(); n as usize];
    let mut hist = histogram();
    let (mut sent, mut answered) = (0u64, 0u64);
    let t0 = Instant::now();
    while answered < n {
        while sent < n && c.in_flight() < k {
            let id = c.send(body, Duration::from_secs(10))?;
            sent_at[(id.0 - 2) as usize] = Instant::now();
            sent += 1;
        }
        match c.recv(None)? {
            Some((id, Ok(_))) => {
                let ns = sent_at[(id.0 - 2) as usize].elapsed().as_nanos() as u64;
                let _ = hist.record(ns.max(1));
                answered += 1;
            }
            Some((_, Err(f))) => return Err(BenchError::fail(format!("ptmp request: {f}"))),
            None => return Err(BenchError::fail("ptmp request: nothing out")),
        }
    }
    let elapsed = t0.elapsed();
    cleanup(&at);
    Ok(Timed {
        hist,
        elapsed,
        answered,
    })
}

/// A raw libzmq socket of `kind` bound at `transport`'s address, and
/// where a peer connects to it.
fn raw_bound(
    ctx: &zmq::Context,
    kind: zmq::SocketType,
    transport: &str,
    what: &str,
) -> BenchResult<(zmq::Socket, String)> {
    let s = ctx.socket(kind).map_err(zmq_err)?;
    s.set_rcvtimeo(50).map_err(zmq_err)?;
    s.set_linger(0).map_err(zmq_err)?;
    s.bind(&address(transport, what)?).map_err(zmq_err)?;
    let at = s
        .get_last_endpoint()
        .map_err(zmq_err)?
        .map_err(|_| BenchError::fail("endpoint not UTF-8"))?;
    Ok((s, at))
}

/// Remove an ipc address's socket file, if it is one.
fn cleanup(at: &str) {
    if let Some(p) = at.strip_prefix("ipc://") {
        let _ = std::fs::remove_file(p);
    }
}

fn zmq_err(e: zmq::Error) -> BenchError {
    BenchError::fail(format!("libzmq: {e}"))
}

/// Raw REQ and REP, one request at a time.
fn req_rep(transport: &str, n: u64, body: &[u8]) -> BenchResult<Timed> {
    let ctx = zmq::Context::new();
    let (rep, at) = raw_bound(&ctx, zmq::REP, transport, "rep")?;
    let _serving = Serving::start(move |stop| {
        while !stop.load(Ordering::Relaxed) {
            if let Ok(m) = rep.recv_msg(0) {
                let _ = rep.send(m, 0);
            }
        }
    });
    let req = ctx.socket(zmq::REQ).map_err(zmq_err)?;
    req.set_linger(0).map_err(zmq_err)?;
    req.connect(&at).map_err(zmq_err)?;
    let mut hist = histogram();
    req.send(body, 0).map_err(zmq_err)?;
    req.recv_msg(0).map_err(zmq_err)?;
    let t0 = Instant::now();
    for _ in 0..n {
        let t = Instant::now();
        req.send(body, 0).map_err(zmq_err)?;
        req.recv_msg(0).map_err(zmq_err)?;
        let _ = hist.record((t.elapsed().as_nanos() as u64).max(1));
    }
    let elapsed = t0.elapsed();
    cleanup(&at);
    Ok(Timed {
        hist,
        elapsed,
        answered: n,
    })
}

/// Raw DEALER and ROUTER, `k` requests out, each tagged with its number.
fn dealer_router(transport: &str, k: usize, n: u64, body: &[u8]) -> BenchResult<Timed> {
    let ctx = zmq::Context::new();
    let (router, at) = raw_bound(&ctx, zmq::ROUTER, transport, &format!("router-{k}"))?;
    let _serving = Serving::start(move |stop| {
        while !stop.load(Ordering::Relaxed) {
            if let Ok(parts) = router.recv_multipart(0) {
                let _ = router.send_multipart(parts, 0);
            }
        }
    });
    let dealer = ctx.socket(zmq::DEALER).map_err(zmq_err)?;
    dealer.set_linger(0).map_err(zmq_err)?;
    dealer.connect(&at).map_err(zmq_err)?;
    let ask = |i: u64| dealer.send_multipart([&i.to_le_bytes()[..], body], 0);
    ask(u64::MAX).map_err(zmq_err)?;
    dealer.recv_multipart(0).map_err(zmq_err)?;
    let mut sent_at = vec![Instant::now(); n as usize];
    let mut hist = histogram();
    let (mut sent, mut answered) = (0u64, 0u64);
    let t0 = Instant::now();
    while answered < n {
        while sent < n && (sent - answered) < k as u64 {
            sent_at[sent as usize] = Instant::now();
            ask(sent).map_err(zmq_err)?;
            sent += 1;
        }
        let parts = dealer.recv_multipart(0).map_err(zmq_err)?;
        let id = parts
            .first()
            .and_then(|p| <[u8; 8]>::try_from(&p[..]).ok())
            .map(u64::from_le_bytes)
            .ok_or_else(|| BenchError::fail("an answer without its number"))?;
        let ns = sent_at[id as usize].elapsed().as_nanos() as u64;
        let _ = hist.record(ns.max(1));
        answered += 1;
    }
    let elapsed = t0.elapsed();
    cleanup(&at);
    Ok(Timed {
        hist,
        elapsed,
        answered,
    })
}
