//! The ring between two processes: this process writes, a second one (this
//! binary again, with the hidden `ring-reader`) attaches to the same
//! segment and copies every message out, as `ptmp bench ring` does between
//! threads. What it measures is the ring alone, without ptmp's sockets, the
//! counterpart of a publisher and a subscriber process over Aeron's IPC.

use crate::error::{BenchError, BenchResult};
use ptmp_shm::{ChannelConfig, Policy, Reader, StartAt, Writer};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `ptmp ring-reader`: the reading side of a two-process ring run
/// (internal).
#[derive(Debug, clap::Args)]
pub struct ReaderArgs {
    /// The channel to attach to.
    #[arg(long)]
    pub name: String,
    /// Messages to read before ending.
    #[arg(short = 'n', long)]
    pub count: u64,
    /// The CPU to pin the reader to.
    #[arg(long)]
    pub cpu: Option<usize>,
}

fn shm(e: ptmp_shm::ShmError) -> BenchError {
    BenchError::fail(e.to_string())
}

/// The reader process: attach, say "ready", read `count` messages (copying
/// each out), then print what arrived and over how long, timed from the
/// first message.
pub fn reader_child(a: &ReaderArgs) -> BenchResult {
    crate::sys::pin(a.cpu)?;
    let mut r = Reader::attach(&a.name, StartAt::Next).map_err(shm)?;
    println!("ready");
    let mut buf = Vec::new();
    let (mut got, mut first) = (0u64, None);
    while r.position() < a.count {
        match r
            .recv(&mut buf, Some(Duration::from_secs(5)))
            .map_err(shm)?
        {
            Some(_) => {
                first.get_or_insert_with(Instant::now);
                got += 1;
            }
            None => break,
        }
    }
    let secs = first.map_or(0.0, |f: Instant| f.elapsed().as_secs_f64());
    println!("{}", json!({"got": got, "lost": r.lost(), "secs": secs}));
    Ok(())
}

/// A reader process that is killed if the run ends early.
struct ReaderProcess(Option<Child>);

impl Drop for ReaderProcess {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Messages a second (millions) of `size` bytes from this thread (pin it
/// first) to a reader process on `reader_cpu`, through a lossless ring of
/// `slots` slots: `n` messages, published one by one.
pub(crate) fn rate(
    size: usize,
    slots: usize,
    n: u64,
    reader_cpu: Option<usize>,
) -> BenchResult<f64> {
    if size == 0 || n == 0 {
        return Err(BenchError::usage("size and count must be at least 1"));
    }
    let name = format!("bench-ring2-{}-{size}", std::process::id());
    let cfg = ChannelConfig {
        slots,
        max_message: size,
        policy: Policy::Block,
    };
    let mut w = Writer::create(&name, cfg).map_err(shm)?;
    let r = run(&mut w, &name, size, n, reader_cpu);
    drop(w);
    let _ = ptmp_shm::remove(&name);
    r
}

fn run(
    w: &mut Writer,
    name: &str,
    size: usize,
    n: u64,
    reader_cpu: Option<usize>,
) -> BenchResult<f64> {
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.args(["ring-reader", "--name", name, "-n", &n.to_string()]);
    if let Some(c) = reader_cpu {
        cmd.args(["--cpu", &c.to_string()]);
    }
    let mut child = ReaderProcess(Some(
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?,
    ));
    let out = child.0.as_mut().and_then(|c| c.stdout.take());
    let mut lines =
        BufReader::new(out.ok_or_else(|| BenchError::fail("no reader stdout"))?).lines();
    match lines.next() {
        Some(Ok(l)) if l.trim() == "ready" => {}
        _ => {
            return Err(BenchError::fail(
                "the ring's reader process failed to start",
            ))
        }
    }
    let msg = vec![0x5au8; size];
    for _ in 0..n {
        w.publish(&msg).map_err(shm)?;
    }
    w.flush();
    let line = lines.next().and_then(Result::ok).unwrap_or_default();
    let status = child.0.take().map(|mut c| c.wait()).transpose()?;
    if !status.is_some_and(|s| s.success()) {
        return Err(BenchError::fail(format!(
            "the ring's reader process ended with {status:?}"
        )));
    }
    let j: Value = serde_json::from_str(&line)
        .map_err(|e| BenchError::fail(format!("the ring's reader said {line:?}: {e}")))?;
    let (got, secs) = (
        j["got"].as_u64().unwrap_or(0),
        j["secs"].as_f64().unwrap_or(0.0),
    );
    if got != n {
        return Err(BenchError::fail(format!(
            "the ring's reader process read {got} of {n} messages"
        )));
    }
    Ok(if secs > 0.0 {
        got as f64 / secs / 1e6
    } else {
        0.0
    })
}
