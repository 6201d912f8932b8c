//! iceoryx2 (<https://github.com/eclipse-iceoryx/iceoryx2>) as a peer of
//! `bench peers`: its publish-subscribe over its zero-copy shared memory
//! (`ipc::Service`), with byte-slice payloads. Built only with the cargo
//! feature `iceoryx2`.
//!
//! Every service is lossless: no safe overflow, and a publisher whose
//! subscriber's buffer is full retries until the message is delivered
//! (giving up with an error after 5 s, when the other side is stuck or
//! gone). Receivers busy-poll (no waitsets, no events). The publisher loans
//! a sample in shared memory and writes the message into it; the subscriber
//! copies each message out of its sample, as ptmp's readers do.
//!
//! Two-process rows start this binary again with the hidden `iox2-sub` or
//! `iox2-echo`. Each run is an iceoryx2 domain of its own (its files named
//! after this process and a counter, under a directory of its own in the
//! temporary directory rather than iceoryx2's shared `/tmp/iceoryx2`), so
//! it neither meets nor disturbs other iceoryx2 programs. After a run,
//! iceoryx2's own cleanup of dead nodes removes what a killed child left,
//! then the run removes the rest of its domain: the node counter iceoryx2
//! keeps in shared memory for as long as the domain lives, and the
//! domain's directory.

use crate::error::{BenchError, BenchResult};
use ::iceoryx2::port::publisher::Publisher;
use ::iceoryx2::port::subscriber::Subscriber;
use ::iceoryx2::port::{BackpressureAction, BackpressureInfo};
use ::iceoryx2::prelude::*;
use ::iceoryx2::service::port_factory::publish_subscribe::PortFactory;
use hdrhistogram::Histogram;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Lines};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

type Service = PortFactory<ipc::Service, [u8], ()>;
type Pub = Publisher<ipc::Service, [u8], ()>;
type Sub = Subscriber<ipc::Service, [u8], ()>;

/// The size of the messages of the rate rows.
pub(crate) const RATE_SIZE: usize = 64;
/// A subscriber's buffer in the rate rows, in messages: as many as the
/// slots of ptmp's ring in its own row.
const RATE_BUFFER: usize = 4096;
/// A subscriber's buffer in the round trips (one message is in flight).
const RT_BUFFER: usize = 2;
/// Round trips taken first and not recorded, as ptmp's round trips do.
const WARMUP: u64 = 1000;
/// How long a side waits for the other before it gives up.
const STUCK: Duration = Duration::from_secs(5);

/// Where POSIX shared memory shows as files.
const SHM_DIR: &str = "/dev/shm";

/// Domains and services of this process: the process id and a counter
/// make them unique.
static RUNS: AtomicU64 = AtomicU64::new(0);

fn unique(tag: &str) -> String {
    let k = RUNS.fetch_add(1, Ordering::Relaxed);
    format!("ptmp-bench/{tag}/{}/{k}", std::process::id())
}

fn fail(what: impl std::fmt::Display, e: impl std::fmt::Debug) -> BenchError {
    BenchError::fail(format!("iceoryx2: {what}: {e:?}"))
}

/// One run's iceoryx2 domain: the prefix of its files in shared memory and
/// its own root directory. The run's parent owns it and removes all of it
/// when dropped (after its nodes and children are gone); a child only
/// joins it.
pub(crate) struct Domain {
    name: String,
    owner: bool,
}

impl Domain {
    /// A new domain, removed when dropped.
    fn new() -> Self {
        let k = RUNS.fetch_add(1, Ordering::Relaxed);
        Domain {
            name: format!("ptmp_iox2_{}_{k}", std::process::id()),
            owner: true,
        }
    }

    /// The domain `name` of the parent, left as it is when dropped.
    fn join(name: &str) -> Self {
        Domain {
            name: name.to_string(),
            owner: false,
        }
    }

    /// The prefix of its files.
    fn prefix(&self) -> String {
        format!("{}_", self.name)
    }

    /// Its root directory, in the temporary directory.
    fn root(&self) -> PathBuf {
        std::env::temp_dir().join(&self.name)
    }

    /// A node in this domain: iceoryx2's default settings but for the
    /// domain's names, without signal handlers of its own (the suite keeps
    /// its own), and with iceoryx2 logging only errors.
    fn node(&self) -> BenchResult<Node<ipc::Service>> {
        set_log_level(LogLevel::Error);
        let mut c = Config::default();
        c.global.prefix = FileName::new(self.prefix().as_bytes())
            .map_err(|e| fail(format!("bad file prefix {:?}", self.prefix()), e))?;
        let root = format!("{}/", self.root().display());
        c.global.set_root_path(
            &Path::new(root.as_bytes()).map_err(|e| fail(format!("bad root path {root:?}"), e))?,
        );
        NodeBuilder::new()
            .config(&c)
            .signal_handling_mode(SignalHandlingMode::Disabled)
            .create::<ipc::Service>()
            .map_err(|e| fail("cannot create a node", e))
    }
}

impl Drop for Domain {
    fn drop(&mut self) {
        if !self.owner {
            return;
        }
        let prefix = self.prefix();
        for e in std::fs::read_dir(SHM_DIR).into_iter().flatten().flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(e.path());
            }
        }
        let _ = std::fs::remove_dir_all(self.root());
    }
}

/// The lossless service `name` (created by the first side to ask), its
/// subscribers buffering up to `buffer` messages.
fn service(node: &Node<ipc::Service>, name: &str, buffer: usize) -> BenchResult<Service> {
    let sn: ServiceName = name
        .try_into()
        .map_err(|e| fail(format!("bad service name {name:?}"), e))?;
    node.service_builder(&sn)
        .publish_subscribe::<[u8]>()
        .enable_safe_overflow(false)
        .subscriber_max_buffer_size(buffer)
        .history_size(0)
        .max_publishers(1)
        .max_subscribers(1)
        .open_or_create()
        .map_err(|e| fail(format!("cannot create or open the service {name:?}"), e))
}

/// A publisher of messages of `size` bytes that retries while the
/// subscriber's buffer is full, for up to 5 s.
fn publisher(s: &Service, size: usize) -> BenchResult<Pub> {
    s.publisher_builder()
        .initial_max_slice_len(size)
        .backpressure_strategy(BackpressureStrategy::RetryUntilDelivered)
        .set_backpressure_handler(|i: &BackpressureInfo| {
            if i.elapsed_time > STUCK {
                BackpressureAction::DiscardDataAndFail
            } else {
                BackpressureAction::Retry
            }
        })
        .create()
        .map_err(|e| fail("cannot create a publisher", e))
}

fn subscriber(s: &Service, buffer: usize) -> BenchResult<Sub> {
    s.subscriber_builder()
        .buffer_size(buffer)
        .create()
        .map_err(|e| fail("cannot create a subscriber", e))
}

/// Loan a sample, write `msg` into it, send it to the one subscriber.
fn send(p: &Pub, msg: &[u8]) -> BenchResult {
    let s = p
        .loan_slice_uninit(msg.len())
        .map_err(|e| fail("cannot loan a sample", e))?;
    let delivered = s.write_from_slice(msg).send().map_err(|e| {
        fail(
            "a message could not be delivered for 5 s (is the subscriber stuck or gone?)",
            e,
        )
    })?;
    if delivered == 0 {
        return Err(BenchError::fail(
            "iceoryx2: a message reached no subscriber (the subscriber is gone)",
        ));
    }
    Ok(())
}

/// Busy-poll for the next message and copy it into `buf` (its length, at
/// most): false when none came for 5 s.
fn recv(s: &Sub, buf: &mut [u8]) -> BenchResult<bool> {
    let mut polls = 0u32;
    let mut since = None;
    loop {
        if let Some(m) = s.receive().map_err(|e| fail("receive failed", e))? {
            let n = m.len().min(buf.len());
            buf[..n].copy_from_slice(&m[..n]);
            return Ok(true);
        }
        polls = polls.wrapping_add(1);
        if polls.is_multiple_of(4096) && since.get_or_insert_with(Instant::now).elapsed() > STUCK {
            return Ok(false);
        }
        std::hint::spin_loop();
    }
}

/// Receive `n` messages: how many came, and the seconds from the first
/// to the last.
fn receive_all(s: &Sub, n: u64, size: usize) -> BenchResult<(u64, f64)> {
    let mut buf = vec![0u8; size];
    let (mut got, mut first) = (0u64, None);
    while got < n && recv(s, &mut buf)? {
        first.get_or_insert_with(Instant::now);
        got += 1;
    }
    std::hint::black_box(&buf);
    Ok((
        got,
        first.map_or(0.0, |f: Instant| f.elapsed().as_secs_f64()),
    ))
}

/// Millions of messages a second from `got` messages over `secs`, or an
/// error when not all `n` arrived.
fn rate(got: u64, n: u64, secs: f64, where_: &str) -> BenchResult<f64> {
    if got != n {
        return Err(BenchError::fail(format!(
            "iceoryx2: the subscriber {where_} received {got} of {n} messages"
        )));
    }
    if secs <= 0.0 {
        return Err(BenchError::fail(format!(
            "iceoryx2: the subscriber {where_} took no measurable time"
        )));
    }
    Ok(got as f64 / secs / 1e6)
}

/// Millions of 64-byte messages a second from a publisher on this thread
/// (pinned to `cpus.0`) to a subscriber thread (pinned to `cpus.1`): `n`
/// messages, each received and copied out.
pub(crate) fn thread_rate(n: u64, cpus: (Option<usize>, Option<usize>)) -> BenchResult<f64> {
    crate::sys::pin(cpus.0)?;
    let domain = Domain::new();
    let name = unique("rate");
    let node = domain.node()?;
    let svc = service(&node, &name, RATE_BUFFER)?;
    let p = publisher(&svc, RATE_SIZE)?;
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (sub_domain, sub_name) = (Domain::join(&domain.name), name.clone());
    let h = std::thread::spawn(move || -> BenchResult<(u64, f64)> {
        crate::sys::pin(cpus.1)?;
        let node = sub_domain.node()?;
        let svc = service(&node, &sub_name, RATE_BUFFER)?;
        let s = subscriber(&svc, RATE_BUFFER)?;
        let _ = ready_tx.send(());
        receive_all(&s, n, RATE_SIZE)
    });
    let joined = |h: std::thread::JoinHandle<BenchResult<(u64, f64)>>| {
        h.join()
            .map_err(|_| BenchError::fail("iceoryx2: the subscriber thread panicked"))?
    };
    if ready_rx.recv().is_err() {
        // The thread ended before its subscriber was up: say why.
        joined(h)?;
        return Err(BenchError::fail(
            "iceoryx2: the subscriber thread ended early",
        ));
    }
    let msg = [0x5au8; RATE_SIZE];
    let sent = (0..n).try_for_each(|_| send(&p, &msg));
    drop(p);
    let (got, secs) = joined(h)?;
    sent?;
    rate(got, n, secs, "thread")
}

/// `ptmp iox2-sub`: the subscriber process of the iceoryx2 rate row
/// (internal).
#[derive(Debug, clap::Args)]
pub struct SubArgs {
    /// The iceoryx2 domain of the run.
    #[arg(long)]
    pub domain: String,
    /// The service to subscribe to.
    #[arg(long)]
    pub service: String,
    /// Messages to receive before ending.
    #[arg(short = 'n', long)]
    pub count: u64,
    /// The CPU to pin the subscriber to.
    #[arg(long)]
    pub cpu: Option<usize>,
}

/// The subscriber process: subscribe, say "ready", receive `count`
/// messages (copying each out), then print how many came and over how
/// long, timed from the first.
pub fn sub_child(a: &SubArgs) -> BenchResult {
    crate::sys::pin(a.cpu)?;
    let node = Domain::join(&a.domain).node()?;
    let svc = service(&node, &a.service, RATE_BUFFER)?;
    let s = subscriber(&svc, RATE_BUFFER)?;
    println!("ready");
    let (got, secs) = receive_all(&s, a.count, RATE_SIZE)?;
    println!("{}", json!({"got": got, "secs": secs}));
    Ok(())
}

/// `ptmp iox2-echo`: the echo process of the iceoryx2 round trips
/// (internal).
#[derive(Debug, clap::Args)]
pub struct EchoArgs {
    /// The iceoryx2 domain of the run.
    #[arg(long)]
    pub domain: String,
    /// The service the messages come in on.
    #[arg(long)]
    pub ping: String,
    /// The service they go back on.
    #[arg(long)]
    pub pong: String,
    /// Messages to echo before ending.
    #[arg(short = 'n', long)]
    pub count: u64,
    /// Message size, bytes.
    #[arg(long)]
    pub size: usize,
    /// The CPU to pin the echo to.
    #[arg(long)]
    pub cpu: Option<usize>,
}

/// The echo process: copy each message out of `ping` and send it back on
/// `pong`, `count` times, then print how many.
pub fn echo_child(a: &EchoArgs) -> BenchResult {
    crate::sys::pin(a.cpu)?;
    let node = Domain::join(&a.domain).node()?;
    let ping = service(&node, &a.ping, RT_BUFFER)?;
    let pong = service(&node, &a.pong, RT_BUFFER)?;
    let s = subscriber(&ping, RT_BUFFER)?;
    let p = publisher(&pong, a.size)?;
    println!("ready");
    let mut buf = vec![0u8; a.size];
    for i in 0..a.count {
        if !recv(&s, &mut buf)? {
            return Err(BenchError::fail(format!(
                "iceoryx2 echo: no message for 5 s after {i} of {}",
                a.count
            )));
        }
        send(&p, &buf)?;
    }
    println!("{}", json!({"echoed": a.count}));
    Ok(())
}

/// A child process of this binary, killed if the run ends early.
struct ChildProcess {
    child: Option<Child>,
    lines: Lines<BufReader<ChildStdout>>,
    what: &'static str,
}

impl ChildProcess {
    /// Start this binary with `args` (and `--cpu`), and wait for its
    /// "ready".
    fn start(what: &'static str, args: &[String], cpu: Option<usize>) -> BenchResult<Self> {
        let mut cmd = Command::new(std::env::current_exe()?);
        cmd.args(args);
        if let Some(c) = cpu {
            cmd.args(["--cpu", &c.to_string()]);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| BenchError::fail(format!("iceoryx2: cannot start the {what}: {e}")))?;
        let out = child.stdout.take();
        let mut me = ChildProcess {
            child: Some(child),
            lines: BufReader::new(out.ok_or_else(|| BenchError::fail("no child stdout"))?).lines(),
            what,
        };
        match me.lines.next() {
            Some(Ok(l)) if l.trim() == "ready" => Ok(me),
            _ => Err(BenchError::fail(format!(
                "iceoryx2: the {what} failed to start"
            ))),
        }
    }

    /// Its result line, once it has ended well.
    fn finish(mut self) -> BenchResult<Value> {
        let line = self.lines.next().and_then(Result::ok).unwrap_or_default();
        let what = self.what;
        let status = self.child.take().map(|mut c| c.wait()).transpose()?;
        if !status.is_some_and(|s| s.success()) {
            return Err(BenchError::fail(format!(
                "iceoryx2: the {what} ended with {status:?}"
            )));
        }
        serde_json::from_str(&line)
            .map_err(|e| BenchError::fail(format!("iceoryx2: the {what} said {line:?}: {e}")))
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Run `f` with a node of this process in a new domain (`f` is given its
/// name for the child), then remove what dead nodes (a child killed or
/// crashed) left behind, then the node, then the rest of the domain.
fn with_domain<T>(f: impl FnOnce(&Node<ipc::Service>, &str) -> BenchResult<T>) -> BenchResult<T> {
    let domain = Domain::new();
    let node = domain.node()?;
    let r = f(&node, &domain.name);
    node.try_cleanup_dead_nodes();
    drop(node);
    drop(domain);
    r
}

/// Millions of 64-byte messages a second from a publisher on this thread
/// (pinned to `cpus.0`) to a subscriber process (pinned to `cpus.1`): `n`
/// messages, each received and copied out.
pub(crate) fn process_rate(n: u64, cpus: (Option<usize>, Option<usize>)) -> BenchResult<f64> {
    crate::sys::pin(cpus.0)?;
    with_domain(|node, domain| {
        let name = unique("rate2");
        let svc = service(node, &name, RATE_BUFFER)?;
        let p = publisher(&svc, RATE_SIZE)?;
        let args = [
            "iox2-sub",
            "--domain",
            domain,
            "--service",
            &name,
            "-n",
            &n.to_string(),
        ]
        .map(String::from);
        let child = ChildProcess::start("subscriber process", &args, cpus.1)?;
        let msg = [0x5au8; RATE_SIZE];
        (0..n).try_for_each(|_| send(&p, &msg))?;
        let j = child.finish()?;
        let (got, secs) = (
            j["got"].as_u64().unwrap_or(0),
            j["secs"].as_f64().unwrap_or(0.0),
        );
        rate(got, n, secs, "process")
    })
}

/// `count` round trips of `size`-byte messages (after 1,000 more to warm
/// up) between this thread (pinned to `cpus.0`) and an echo process
/// (pinned to `cpus.1`), one message in flight, both ends busy-polling:
/// the median and 99.9th percentile, microseconds.
pub(crate) fn round_trip(
    size: usize,
    count: u64,
    cpus: (Option<usize>, Option<usize>),
) -> BenchResult<(f64, f64)> {
    if size < 8 || count == 0 {
        return Err(BenchError::usage(
            "iceoryx2 round trip: at least 8 bytes and one message",
        ));
    }
    crate::sys::pin(cpus.0)?;
    with_domain(|node, domain| {
        let (ping_name, pong_name) = (unique("ping"), unique("pong"));
        let ping = service(node, &ping_name, RT_BUFFER)?;
        let pong = service(node, &pong_name, RT_BUFFER)?;
        let p = publisher(&ping, size)?;
        let s = subscriber(&pong, RT_BUFFER)?;
        let total = count + WARMUP;
        let args = [
            "iox2-echo",
            "--domain",
            domain,
            "--ping",
            &ping_name,
            "--pong",
            &pong_name,
            "-n",
            &total.to_string(),
            "--size",
            &size.to_string(),
        ]
        .map(String::from);
        let child = ChildProcess::start("echo process", &args, cpus.1)?;
        let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)
            .map_err(|e| BenchError::fail(format!("histogram: {e}")))?;
        let (mut msg, mut back) = (vec![0x5au8; size], vec![0u8; size]);
        for i in 0..total {
            msg[..8].copy_from_slice(&i.to_le_bytes());
            let t0 = Instant::now();
            send(&p, &msg)?;
            if !recv(&s, &mut back)? {
                return Err(BenchError::fail(format!(
                    "iceoryx2: no echo of round trip {i} within 5 s"
                )));
            }
            let ns = t0.elapsed().as_nanos() as u64;
            if back[..8] != msg[..8] {
                return Err(BenchError::fail(format!(
                    "iceoryx2: round trip {i} came back as another message"
                )));
            }
            if i >= WARMUP {
                hist.saturating_record(ns.max(1));
            }
        }
        child.finish()?;
        let q = |p: f64| hist.value_at_quantile(p) as f64 / 1000.0;
        Ok((q(0.5), q(0.999)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every message of the threads row arrives, at a real rate, and the
    /// run's domain is gone afterwards.
    #[test]
    fn thread_rate_delivers_every_message() {
        let r = thread_rate(200_000, (None, None)).unwrap();
        assert!(r.is_finite() && r > 0.0, "{r}");
        let mine = format!("ptmp_iox2_{}_", std::process::id());
        let left: Vec<_> = [std::path::PathBuf::from(SHM_DIR), std::env::temp_dir()]
            .iter()
            .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&mine))
            })
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}
