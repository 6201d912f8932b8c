//! The echo side of `ptmp bench latency --round-trip`: a thread of the
//! measuring process, or with `--processes` a second process (this binary
//! run again with the hidden `lat-echo`), so shm's round trip is measured
//! between processes as Aeron's Ping/Pong and iceoryx2's samples measure
//! theirs.

use crate::error::{BenchError, BenchResult};
use ptmp::{Frames, Receiver, Sender, SocketConfig};
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The two legs of a round trip and how their sockets are made.
#[derive(Debug, Clone, clap::Args)]
pub struct Legs {
    /// The outward leg's address (the measuring side sends on it).
    #[arg(long)]
    pub go: String,
    /// The return leg's address (the echo sends on it).
    #[arg(long)]
    pub back: String,
    /// Largest message, bytes.
    #[arg(long)]
    pub size: usize,
    /// The zmq senders' linger, ms.
    #[arg(long, default_value_t = 2000)]
    pub linger_ms: i32,
    /// Receiver polls before sleeping (u32::MAX: never sleeps).
    #[arg(long, default_value_t = 0)]
    pub spin: u32,
    /// Echo with `Receiver::forward` (one copy, ring to ring) instead of
    /// copying each message out and sending the copy.
    #[arg(long)]
    pub in_place: bool,
    /// The messages are TPSets: echo each decoded and encoded again, as
    /// an agent passes a set on (unless `in_place`).
    #[arg(long)]
    pub tpsets: bool,
}

impl Legs {
    /// One leg's socket: over shm the PUSH makes the channel, over zmq the
    /// PULL binds.
    fn config(&self, ty: &str, ep: &str) -> BenchResult<SocketConfig> {
        let shm = ep.starts_with("shm://");
        let attach = match (ty, shm) {
            ("PUSH", true) | ("PULL", false) => "bind",
            _ => "connect",
        };
        Ok(SocketConfig::from_value(
            &json!({"socket": {"type": ty, attach: [ep],
            "linger_ms": self.linger_ms, "shm_max_message": self.size + 16, "shm_slots": 64,
            "max_message": (self.size + 16).max(ptmp::DEFAULT_MAX_MESSAGE)}}),
        )?)
    }

    /// The measuring side's ends: (receive on `back`, send on `go`).
    pub fn measuring_ends(&self) -> BenchResult<(Receiver, Sender)> {
        let mut rx = Receiver::new(self.config("PULL", &self.back)?)?;
        rx.set_shm_spin(self.spin);
        let tx = Sender::new(self.config("PUSH", &self.go)?)?;
        Ok((rx, tx))
    }

    /// The echo's ends: (receive on `go`, send on `back`).
    fn echo_ends(&self) -> BenchResult<(Receiver, Sender)> {
        let mut rx = Receiver::new(self.config("PULL", &self.go)?)?;
        rx.set_shm_spin(self.spin);
        let tx = Sender::new(self.config("PUSH", &self.back)?)?;
        Ok((rx, tx))
    }
}

/// `ptmp bench lat-echo`: the echo side in its own process (internal).
#[derive(Debug, clap::Args)]
pub struct EchoArgs {
    #[command(flatten)]
    pub legs: Legs,
    /// Messages to echo before ending.
    #[arg(short = 'n', long)]
    pub count: u64,
    /// The CPU to pin to.
    #[arg(long)]
    pub cpu: Option<usize>,
}

/// Echo up to `total` messages back, each as it came; ends early when
/// nothing comes for 2 s. `ready` is called once both ends are made.
fn echo(legs: &Legs, total: u64, cpu: Option<usize>, ready: impl FnOnce()) -> BenchResult<u64> {
    crate::sys::pin(cpu)?;
    let (mut rx, mut tx) = legs.echo_ends()?;
    ready();
    let mut f = Frames::new();
    let mut n = 0;
    let wait = Some(Duration::from_secs(2));
    if legs.in_place {
        while n < total && rx.forward(&mut tx, wait)? {
            n += 1;
        }
        return Ok(n);
    }
    if legs.tpsets {
        let mut set = ptmp::TPSet::default();
        while n < total && rx.recv_into(&mut set, wait)? {
            tx.send(&set)?;
            n += 1;
        }
        return Ok(n);
    }
    while n < total && rx.recv_raw_into(&mut f, wait)? {
        tx.send_frames(&f)?;
        n += 1;
    }
    Ok(n)
}

/// The echo side, in the process that asked for it.
pub fn child(a: &EchoArgs) -> BenchResult {
    let n = echo(&a.legs, a.count, a.cpu, || {
        println!("ready");
        let _ = std::io::stdout().flush();
    })?;
    println!("{}", json!({"echoed": n}));
    Ok(())
}

/// The echo side running apart from the measuring one.
pub enum Echo {
    Thread(std::thread::JoinHandle<BenchResult<u64>>),
    Process(Child),
}

impl Echo {
    /// Start the echo in a thread, or in a second process; returns once it
    /// has made its ends.
    pub fn start(legs: &Legs, total: u64, cpu: Option<usize>, process: bool) -> BenchResult<Echo> {
        if !process {
            let legs = legs.clone();
            let (tx, rx) = std::sync::mpsc::channel();
            let h = std::thread::spawn(move || {
                echo(&legs, total, cpu, move || {
                    let _ = tx.send(());
                })
            });
            // An echo that failed to make its ends says why when joined.
            let _ = rx.recv();
            return Ok(Echo::Thread(h));
        }
        let exe = std::env::current_exe()?;
        let mut cmd = Command::new(exe);
        cmd.args(["lat-echo", "--go", &legs.go, "--back", &legs.back])
            .args(["--size", &legs.size.to_string()])
            .args(["--linger-ms", &legs.linger_ms.to_string()])
            .args(["--spin", &legs.spin.to_string(), "-n", &total.to_string()]);
        if let Some(c) = cpu {
            cmd.args(["--cpu", &c.to_string()]);
        }
        if legs.in_place {
            cmd.arg("--in-place");
        }
        if legs.tpsets {
            cmd.arg("--tpsets");
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let mut line = String::new();
        let out = child.stdout.as_mut().expect("piped");
        BufReader::new(out).read_line(&mut line)?;
        if line.trim() != "ready" {
            let _ = child.kill();
            let _ = child.wait();
            return Err(BenchError::fail("the echo process failed to start"));
        }
        Ok(Echo::Process(child))
    }

    /// Wait for the echo to end.
    pub fn finish(self) -> BenchResult {
        match self {
            Echo::Thread(h) => {
                h.join()
                    .map_err(|_| BenchError::fail("echo thread panicked"))??;
            }
            Echo::Process(mut c) => {
                let st = c.wait()?;
                if !st.success() {
                    return Err(BenchError::fail(format!(
                        "the echo process ended with {st}"
                    )));
                }
            }
        }
        Ok(())
    }
}
