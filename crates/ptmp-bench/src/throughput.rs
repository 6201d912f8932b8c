//! `ptmp bench throughput`: pattern x transport x TPSet size, ptmp and raw
//! libzmq moving identical frames, with the sender and the receiver in two
//! processes for ipc, tcp and shm (inproc is necessarily one process, two
//! threads). Per row: messages/s, MB/s, lost (by sequence numbers), the CPU %
//! of each side and each side's peak RSS.
//!
//! Each side is this binary run again with the hidden `tput-child`
//! subcommand; the parent reaps them with wait4 for their CPU time, and each
//! reports its own peak RSS (VmHWM). The receiver times from its first
//! message to its last, so process start-up is not counted; CPU % is a
//! side's CPU time over that same span. inproc rows run the same two sides
//! as threads of one process. Both implementations decode every TPSet on
//! receipt (raw libzmq with the same decoder), so the rows compare the
//! messaging, not whether a payload is parsed.

use crate::error::{BenchError, BenchResult};
use crate::report::progress;
use crate::report::{Cell, Row};
use crate::sendrecv::{Pattern, TransportArg};
use clap::ValueEnum;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Impl {
    Ptmp,
    Raw,
    /// ptmp's sockets moving the bytes of an encoded TPSet as raw frames
    /// (`send_raw`, `recv_raw_into`): the TPSet path without its encoding
    /// and decoding.
    Frames,
}

#[derive(Debug, clap::Args)]
pub struct ThroughputArgs {
    /// TPSets per row.
    #[arg(short = 'n', long, default_value_t = 500_000)]
    pub count: u64,
    #[arg(long, value_enum, num_args = 1.., default_values = ["pubsub", "pipe", "pushpull"])]
    pub patterns: Vec<Pattern>,
    #[arg(long, value_enum, num_args = 1.., default_values = ["inproc", "ipc", "tcp", "shm"])]
    pub transports: Vec<TransportArg>,
    /// TrigPrims per TPSet.
    #[arg(long, num_args = 1.., default_values_t = [0u32, 10, 100])]
    pub ntps: Vec<u32>,
    /// High-water marks of both sides.
    #[arg(long, default_value_t = 10_000)]
    pub hwm: i32,
    /// smx_perf's -r: sender rate, TPSets/s (busy-wait pacing); default flat out.
    #[arg(short = 'r', long)]
    pub rate: Option<f64>,
    /// smx_perf's -w: warmup TPSets, sent and checked but not timed.
    #[arg(short = 'w', long, default_value_t = 0)]
    pub warmup: u64,
    /// smx_perf's -a: pin the sender's and the receiver's thread, SEND,RECV.
    #[arg(long = "affinity", value_name = "SEND,RECV")]
    pub affinity: Option<String>,
    /// smx_perf's -s: receiver non-blocking tries per message before it
    /// blocks.
    #[arg(short = 's', long = "spin", default_value_t = 0)]
    pub spin: u32,
    /// smx_perf's -l: the zmq sender's linger at exit, ms.
    #[arg(short = 'l', long = "linger", default_value_t = 2000)]
    pub linger_ms: i32,
    /// ptmp rows: TPSets per send_batch / recv_batch call (1: send and
    /// recv_into, one set per call). Both sides read the clock once per
    /// call, so every set of a batch carries the same `created`.
    #[arg(short = 'b', long = "batch", default_value_t = 1)]
    pub batch: u32,
    /// tcp rows run again with CURVE ("tcp+curve"): encrypted, the
    /// receiver the server admitting the sender's key (ptmp through its
    /// ZAP handler; raw libzmq without one, so it admits any client).
    #[arg(long)]
    pub curve: bool,
    /// shm rows: the ring's slots (a power of two). Rings that fit in the
    /// caches of the two cores can be slower between cores that share no
    /// cache; see docs/benchmarks.md.
    #[arg(long, default_value_t = 4096)]
    pub shm_slots: usize,
    /// shm rows: the most bytes one message may take in the ring (its slot
    /// size, less a small header).
    #[arg(long, default_value_t = 4096)]
    pub shm_max_message: usize,
}

mod sides;
pub use sides::{child, ChildArgs};
use sides::{payload, receive, send};

struct RowOut {
    received: u64,
    /// Received after the warmup (the ones timed).
    timed: u64,
    span_s: f64,
    send_cpu_s: f64,
    recv_cpu_s: f64,
    send_rss: f64,
    recv_rss: f64,
    procs: bool,
    send_k: SideKernel,
    recv_k: SideKernel,
}

/// What one side asked of the kernel over its loop.
#[derive(Debug, Clone, Copy)]
struct SideKernel {
    /// System calls (NaN: not counted).
    syscalls: f64,
    switches: f64,
    loop_s: f64,
}

impl SideKernel {
    fn from_json(j: &Value) -> SideKernel {
        let f = |k: &str| j[k].as_f64().unwrap_or(f64::NAN);
        SideKernel {
            syscalls: f("syscalls"),
            switches: f("switches"),
            loop_s: f("loop_s"),
        }
    }

    /// Per message of `n`, and per second of the side's loop.
    fn rates(&self, n: u64) -> (f64, f64) {
        let per_s = if self.loop_s > 0.0 {
            self.switches / self.loop_s
        } else {
            f64::NAN
        };
        (self.syscalls / n.max(1) as f64, per_s)
    }
}

fn address(tr: TransportArg, tag: &str) -> BenchResult<String> {
    Ok(match tr {
        TransportArg::Inproc => format!("inproc://tput-{tag}"),
        TransportArg::Ipc => format!(
            "ipc://{}",
            std::env::temp_dir()
                .join(format!("ptmp-tput-{}-{tag}.ipc", std::process::id()))
                .display()
        ),
        TransportArg::Tcp => {
            let port = std::net::TcpListener::bind("127.0.0.1:0")?
                .local_addr()?
                .port();
            format!("tcp://127.0.0.1:{port}")
        }
        TransportArg::Shm => format!("shm://tput-{}-{tag}", std::process::id()),
    })
}

/// An inproc row: one process, two threads running the very code of the
/// two child processes; CPU is the whole process's (both sides together).
fn threads_row(cs: &ChildArgs, cr: &ChildArgs) -> BenchResult<RowOut> {
    let ctx = zmq::Context::new();
    let c0 = crate::sys::cpu_seconds();
    let (tx_ready, rx_ready) = std::sync::mpsc::channel();
    let (j, sj) = std::thread::scope(|sc| -> BenchResult<(Value, Value)> {
        let recv = sc.spawn(|| {
            receive(cr, Some(&ctx), move || {
                let _ = tx_ready.send(());
            })
        });
        let mut sj = Value::Null;
        if rx_ready.recv().is_ok() {
            // A scoped thread, so pinning it does not pin this one.
            sj = sc
                .spawn(|| send(cs, Some(&ctx)))
                .join()
                .map_err(|_| BenchError::fail("sender thread panicked"))??;
        }
        let j = recv
            .join()
            .map_err(|_| BenchError::fail("receiver thread panicked"))??;
        Ok((j, sj))
    })?;
    let c1 = crate::sys::cpu_seconds();
    Ok(RowOut {
        received: j["received"].as_u64().unwrap_or(0),
        timed: j["timed"].as_u64().unwrap_or(0),
        span_s: j["span_s"].as_f64().unwrap_or(0.0),
        send_cpu_s: c1 - c0,
        recv_cpu_s: f64::NAN,
        send_rss: crate::sys::peak_rss_mb(),
        recv_rss: f64::NAN,
        procs: false,
        send_k: SideKernel::from_json(&sj),
        recv_k: SideKernel::from_json(&j),
    })
}

#[allow(clippy::too_many_arguments)]
fn one_row(
    a: &ThroughputArgs,
    im: Impl,
    p: Pattern,
    tr: TransportArg,
    ntps: u32,
    tag: &str,
    cpus: (Option<usize>, Option<usize>),
    curve_dir: Option<&std::path::Path>,
) -> BenchResult<RowOut> {
    let addr = address(tr, tag)?;
    let side = |cpu: Option<usize>| ChildArgs {
        role: String::new(),
        implementation: im,
        pattern: p,
        addr: addr.clone(),
        count: a.count,
        ntps,
        hwm: a.hwm,
        rate: a.rate,
        warmup: a.warmup,
        cpu,
        spin: a.spin,
        linger_ms: a.linger_ms,
        batch: a.batch,
        curve_dir: curve_dir.map(|d| d.to_path_buf()),
        shm_slots: a.shm_slots,
        shm_max_message: a.shm_max_message,
    };
    if tr == TransportArg::Inproc {
        return threads_row(&side(cpus.0), &side(cpus.1));
    }
    let exe = std::env::current_exe()?;
    let spawn = |role: &str| {
        let cpu = if role == "recv" { cpus.1 } else { cpus.0 };
        let mut cmd = Command::new(&exe);
        cmd.args(["tput-child", "--role", role, "--implementation"])
            .arg(match im {
                Impl::Ptmp => "ptmp",
                Impl::Raw => "raw",
                Impl::Frames => "frames",
            })
            .args(["--pattern", p.name(), "--addr", &addr])
            .args(["-n", &a.count.to_string(), "--ntps", &ntps.to_string()])
            .args(["--hwm", &a.hwm.to_string()])
            .args([
                "--warmup",
                &a.warmup.to_string(),
                "--spin",
                &a.spin.to_string(),
            ])
            .args(["--linger-ms", &a.linger_ms.to_string()])
            .args(["--batch", &a.batch.to_string()])
            .args(["--shm-slots", &a.shm_slots.to_string()])
            .args(["--shm-max-message", &a.shm_max_message.to_string()]);
        if let Some(r) = a.rate {
            cmd.args(["--rate", &r.to_string()]);
        }
        if let Some(c) = cpu {
            cmd.args(["--cpu", &c.to_string()]);
        }
        if let Some(d) = curve_dir {
            cmd.arg("--curve-dir").arg(d);
        }
        cmd.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn()
    };
    let mut rx = spawn("recv")?;
    let mut out = BufReader::new(rx.stdout.take().expect("piped"));
    let mut line = String::new();
    out.read_line(&mut line)?;
    if line.trim() != "ready" {
        let _ = rx.kill();
        let _ = rx.wait();
        return Err(BenchError::fail(format!(
            "{} {} {}: receiver did not start",
            p.name(),
            tr.name(),
            ntps
        )));
    }
    let mut tx = spawn("send")?;
    let mut tx_out = String::new();
    let _ = std::io::Read::read_to_string(&mut tx.stdout.take().expect("piped"), &mut tx_out);
    let (st, send_cpu_s) = crate::sys::reap(&mut tx)?;
    let sj = tx_out
        .lines()
        .last()
        .and_then(|l| serde_json::from_str::<Value>(l).ok())
        .unwrap_or(Value::Null);
    let send_rss = sj["hwm_mb"].as_f64().unwrap_or(f64::NAN);
    line.clear();
    out.read_line(&mut line)?;
    let (_, recv_cpu_s) = crate::sys::reap(&mut rx)?;
    if let Some(p) = addr.strip_prefix("shm://") {
        let _ = ptmp_shm::remove(p);
    }
    if let Some(p) = addr.strip_prefix("ipc://") {
        let _ = std::fs::remove_file(p);
    }
    let j: Value = serde_json::from_str(line.trim()).map_err(|_| {
        BenchError::fail(format!(
            "{} {}: the receiver gave no result (sender {st})",
            p.name(),
            tr.name()
        ))
    })?;
    Ok(RowOut {
        received: j["received"].as_u64().unwrap_or(0),
        timed: j["timed"].as_u64().unwrap_or(0),
        span_s: j["span_s"].as_f64().unwrap_or(0.0),
        send_cpu_s,
        recv_cpu_s,
        send_rss,
        recv_rss: j["hwm_mb"].as_f64().unwrap_or(f64::NAN),
        procs: true,
        send_k: SideKernel::from_json(&sj),
        recv_k: SideKernel::from_json(&j),
    })
}

/// Empty TPSets a second over shm PUSH/PULL between two processes pinned
/// to `cpus`: as TPSets (`Impl::Ptmp`) or as the same bytes in raw frames
/// (`Impl::Frames`), one per call, `count` after a tenth as many of warmup,
/// through rings of `ring.0` slots holding messages of up to `ring.1` bytes.
pub(crate) fn shm_pair_rate(
    im: Impl,
    count: u64,
    cpus: (Option<usize>, Option<usize>),
    ring: (usize, usize),
) -> BenchResult<f64> {
    #[derive(clap::Parser)]
    struct Defaults {
        #[command(flatten)]
        a: ThroughputArgs,
    }
    let mut a = <Defaults as clap::Parser>::try_parse_from(["throughput"])
        .map_err(|e| BenchError::fail(e.to_string()))?
        .a;
    a.count = count + count / 10;
    a.warmup = count / 10;
    (a.shm_slots, a.shm_max_message) = ring;
    let tag = format!("pair-{}", std::process::id());
    let r = one_row(
        &a,
        im,
        Pattern::Pushpull,
        TransportArg::Shm,
        0,
        &tag,
        cpus,
        None,
    )?;
    if r.received < a.count {
        return Err(BenchError::fail(format!(
            "empty TPSets over shm: {} of {} arrived",
            r.received, a.count
        )));
    }
    Ok(if r.span_s > 0.0 {
        r.timed as f64 / r.span_s
    } else {
        0.0
    })
}

/// One throughput row: what was measured for a pattern, transport, size
/// and implementation.
#[derive(Debug, Clone)]
pub struct ThroughputRow {
    /// The socket types.
    pub pattern: Pattern,
    /// The transport.
    pub transport: TransportArg,
    /// tcp with CURVE.
    pub curve: bool,
    /// TrigPrims per TPSet.
    pub ntps: u32,
    /// ptmp, or raw libzmq moving the same frames.
    pub raw: bool,
    /// Two processes, or (inproc) two threads of one.
    pub processes: u32,
    /// TPSets per second, after the warmup.
    pub rate: f64,
    /// Megabytes per second.
    pub mb_s: f64,
    /// TPSets not received.
    pub lost: u64,
    /// The sender's CPU time over the timed span, % (NaN: not measured).
    pub send_cpu_pct: f64,
    /// The receiver's, likewise.
    pub recv_cpu_pct: f64,
    /// The sender's peak RSS, MB (NaN: not measured apart).
    pub send_rss_mb: f64,
    /// The receiver's, likewise.
    pub recv_rss_mb: f64,
    /// System calls the sender made per TPSet sent (NaN: not counted).
    pub send_syscalls: f64,
    /// The receiver's, likewise.
    pub recv_syscalls: f64,
    /// The sender's context switches per second of its loop.
    pub send_csw_s: f64,
    /// The receiver's, likewise.
    pub recv_csw_s: f64,
    /// One cache line handed between the two pinned CPUs just before the
    /// row and just after it, ns (NaN: not pinned to two CPUs). On a
    /// virtual machine the host may move the two apart during a run.
    pub handover_ns: [f64; 2],
}

impl Row for ThroughputRow {
    fn headers() -> &'static [&'static str] {
        &[
            "pattern",
            "transport",
            "ntps",
            "impl",
            "processes",
            "msg/s",
            "MB/s",
            "lost",
            "sender CPU %",
            "receiver CPU %",
            "sender peak RSS MB",
            "receiver peak RSS MB",
            "sender syscalls/msg",
            "receiver syscalls/msg",
            "sender csw/s",
            "receiver csw/s",
            "CPUs' hand-over ns, before/after",
        ]
    }
    fn cells(&self) -> Vec<Cell> {
        let f0 = |x: f64| format!("{x:.0}");
        let f1 = |x: f64| format!("{x:.1}");
        vec![
            Cell::label(self.pattern.name()),
            Cell::label(if self.curve {
                "tcp+curve"
            } else {
                self.transport.name()
            }),
            Cell::param(f64::from(self.ntps)),
            Cell::label(if self.raw { "raw libzmq" } else { "ptmp" }),
            Cell::param(f64::from(self.processes)),
            Cell::measure(self.rate, f0(self.rate)),
            Cell::measure(self.mb_s, f1(self.mb_s)),
            Cell::count(self.lost),
            Cell::maybe(self.send_cpu_pct, f0),
            Cell::maybe(self.recv_cpu_pct, f0),
            Cell::maybe(self.send_rss_mb, f1),
            Cell::maybe(self.recv_rss_mb, f1),
            Cell::maybe(self.send_syscalls, |x| format!("{x:.4}")),
            Cell::maybe(self.recv_syscalls, |x| format!("{x:.4}")),
            Cell::maybe(self.send_csw_s, f0),
            Cell::maybe(self.recv_csw_s, f0),
            match self.handover_ns {
                [b, a] if b.is_nan() || a.is_nan() => Cell::label("-"),
                [b, a] => Cell::label(format!("{b:.0}/{a:.0}")),
            },
        ]
    }
}

/// Run the throughput suite: every pattern, transport, size and
/// implementation.
pub fn run(a: &ThroughputArgs) -> BenchResult<Vec<ThroughputRow>> {
    if a.count == 0 || a.warmup >= a.count {
        return Err(BenchError::usage(format!(
            "-n {} -w {}: need at least one TPSet after the warmup",
            a.count, a.warmup
        )));
    }
    if let Some(r) = a.rate {
        if !(r.is_finite() && r > 0.0) {
            return Err(BenchError::usage(format!("--rate {r}: must be positive")));
        }
    }
    let cpus = crate::sys::parse_affinity(&a.affinity)?;
    crate::report::table::<ThroughputRow>();
    let mut out = Vec::new();
    let mut rows = Vec::new();
    for &p in &a.patterns {
        for &tr in &a.transports {
            if tr == TransportArg::Shm && p != Pattern::Pubsub && p != Pattern::Pushpull {
                continue; // shm carries PUB/SUB and PUSH/PULL only
            }
            for &ntps in &a.ntps {
                for im in [Impl::Ptmp, Impl::Raw] {
                    if tr == TransportArg::Shm && im == Impl::Raw {
                        continue; // libzmq has no shm
                    }
                    rows.push((p, tr, ntps, im, false));
                }
                if a.curve && tr == TransportArg::Tcp {
                    rows.push((p, tr, ntps, Impl::Ptmp, true));
                    rows.push((p, tr, ntps, Impl::Raw, true));
                }
            }
        }
    }
    // One key pair each for the CURVE rows' servers and clients.
    let keys = if a.curve {
        let d = tempfile::tempdir()?;
        for n in ["server", "client"] {
            ptmp::curve::write_certificates(d.path(), n)
                .map_err(|e| BenchError::fail(e.to_string()))?;
        }
        Some(d)
    } else {
        None
    };
    let pb = progress(rows.len() as u64 * 100_000, "throughput");
    for (k, &(p, tr, ntps, im, curve)) in rows.iter().enumerate() {
        let dir = keys.as_ref().filter(|_| curve).map(|d| d.path());
        let before = crate::limits::handover_window_ns(cpus)?;
        let r = one_row(a, im, p, tr, ntps, &k.to_string(), cpus, dir)?;
        let handover_ns = [before, crate::limits::handover_window_ns(cpus)?];
        pb.inc(100_000);
        let (_, bytes) = payload(ntps);
        let rate = if r.span_s > 0.0 {
            r.timed as f64 / r.span_s
        } else {
            0.0
        };
        let pct = |cpu: f64| {
            if cpu.is_nan() {
                f64::NAN
            } else if r.span_s > 0.0 {
                100.0 * cpu / r.span_s
            } else {
                0.0
            }
        };
        let (send_syscalls, send_csw_s) = r.send_k.rates(a.count);
        let (recv_syscalls, recv_csw_s) = r.recv_k.rates(a.count);
        let row = ThroughputRow {
            pattern: p,
            transport: tr,
            curve,
            ntps,
            raw: im == Impl::Raw,
            processes: if r.procs { 2 } else { 1 },
            rate,
            mb_s: rate * bytes as f64 / 1e6,
            lost: a.count - r.received.min(a.count),
            send_cpu_pct: pct(r.send_cpu_s),
            recv_cpu_pct: pct(r.recv_cpu_s),
            send_rss_mb: r.send_rss,
            recv_rss_mb: r.recv_rss,
            send_syscalls,
            recv_syscalls,
            send_csw_s,
            recv_csw_s,
            handover_ns,
        };
        pb.suspend(|| crate::report::row(&row));
        out.push(row);
    }
    pb.finish_and_clear();
    crate::report::note(format!(
        "\n{} TPSets per row{}{}{}{}{}; msg/s from the receiver's first message after the warmup to its last; inproc rows are one process (CPU % and RSS of the whole process in the sender columns); lost counted from sequence numbers (only PUB/SUB may drop); system calls per TPSet and context switches per second cover each side's whole loop and the closing of its socket, libzmq's threads included (system calls are counted with perf_event_open on the raw_syscalls:sys_enter tracepoint, \"-\" where the kernel does not allow it; inproc rows count each side's own thread only); with --affinity on two CPUs, the CPUs' hand-over is one cache line passed between them, 20,000 times just before and just after the row: on a virtual machine a figure several times the usual one means the host had placed the two CPUs apart, where rings that fit in the caches run several times slower (docs/benchmarks.md).",
        a.count,
        if a.warmup > 0 { format!(", {} warmup", a.warmup) } else { String::new() },
        a.rate.map_or(String::new(), |r| format!(", paced at {r}/s")),
        a.affinity.as_ref().map_or(String::new(), |c| format!(", pinned to CPUs {c}")),
        if a.spin > 0 { format!(", receiver spin {}", a.spin) } else { String::new() },
        if a.batch > 1 { format!(", ptmp rows {} TPSets per send_batch/recv_batch call", a.batch) } else { String::new() }
    ));
    Ok(out)
}
