//! `ptmp serve` and `ptmp call`: request and response by hand. `serve`
//! answers every request with its own bytes (an echo) or with what a
//! command prints for it; `call` asks once and prints the answer.

use crate::common::{stopping, CliError, CliResult};
use ptmp::request::{Failure, Reply};
use ptmp::{Client, Server, SocketConfig, SocketType};
use std::collections::VecDeque;
use std::io::{Read as _, Write as _};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Where to listen (tcp://HOST:PORT, ipc://PATH, name://NODE/PORT);
    /// repeat for more. Quote a tcp://* address so the shell leaves the *
    /// alone.
    #[arg(required_unless_present = "config")]
    pub address: Vec<String>,
    /// A whole ROUTER socket config, JSON text or @FILE (CURVE keys and
    /// the like), instead of ADDRESS.
    #[arg(long, conflicts_with = "address")]
    pub config: Option<String>,
    /// Answer each request with what this shell command prints, the
    /// request given on its standard input; a command that fails refuses
    /// the request with the last line it wrote to standard error.
    #[arg(long, value_name = "COMMAND")]
    pub exec: Option<String>,
    /// With --exec: how many commands may run at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: u32,
    /// Stop after answering or refusing this many requests.
    #[arg(short = 'n', long)]
    pub count: Option<u64>,
}

#[derive(Debug, clap::Args)]
pub struct CallArgs {
    /// The server (tcp://HOST:PORT, ipc://PATH, name://NODE/PORT).
    #[arg(required_unless_present = "config")]
    pub address: Option<String>,
    /// The request's bytes; `-` reads them from standard input.
    pub request: Option<String>,
    /// A whole DEALER socket config, JSON text or @FILE (CURVE keys, several
    /// servers), instead of ADDRESS.
    #[arg(long, conflicts_with = "address")]
    pub config: Option<String>,
    /// How long to wait for the answer (e.g. 500ms, 5s; a bare number is
    /// seconds).
    #[arg(
        long,
        default_value = "5s",
        value_parser = ptmp::duration::secs_positive
    )]
    pub timeout: Duration,
}

/// The config given with --config (its type is checked by the server or
/// client it makes).
fn given_config(text: &str) -> CliResult<SocketConfig> {
    Ok(SocketConfig::from_json(&crate::common::config_text(text)?)?)
}

pub fn serve(a: &ServeArgs) -> CliResult {
    let cfg = match &a.config {
        Some(c) => given_config(c)?,
        None => {
            let mut b = SocketConfig::builder(SocketType::Router);
            for at in &a.address {
                b = b.bind(at);
            }
            b.build()?
        }
    };
    let mut s = Server::new(cfg)?;
    let shown = if s.bound().is_empty() {
        s.address().to_string()
    } else {
        s.bound().join(",")
    };
    let what = a
        .exec
        .as_deref()
        .map_or("echoing".to_string(), |c| format!("running {c:?}"));
    eprintln!("ptmp serve: listening at {shown}, {what}");
    let mut jobs = Jobs::new(a.jobs as usize);
    let mut done = 0u64;
    while !stopping() && a.count.is_none_or(|n| done < n) {
        jobs.start(a.exec.as_deref());
        let Some(r) = s.recv(Some(Duration::from_millis(100)))? else {
            continue;
        };
        let (body, reply) = r.into_parts();
        done += 1;
        match &a.exec {
            None => s.answer(reply, &body)?,
            Some(_) => jobs.waiting.push_back((body, reply)),
        }
    }
    // What was taken is answered before the end: on a stop signal, the
    // requests no command took yet are refused, and the commands running
    // get a few seconds.
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while !jobs.idle() && std::time::Instant::now() < until {
        if stopping() {
            jobs.waiting.clear();
        }
        jobs.start(a.exec.as_deref());
        if let Some(late) = s.recv(Some(Duration::from_millis(20)))? {
            s.refuse(late.into_parts().1, "the server is stopping")?;
        }
    }
    let c = s.counts();
    eprintln!(
        "ptmp serve: received {}, answered {}, refused {}, unreadable {}, undelivered {}",
        c.received, c.answered, c.refused, c.unreadable, c.undelivered
    );
    Ok(())
}

/// Requests waiting for a command, and how many commands run.
struct Jobs {
    waiting: VecDeque<(Vec<u8>, Reply)>,
    running: Arc<AtomicUsize>,
    most: usize,
}

impl Jobs {
    fn new(most: usize) -> Jobs {
        Jobs {
            waiting: VecDeque::new(),
            running: Arc::new(AtomicUsize::new(0)),
            most,
        }
    }

    fn idle(&self) -> bool {
        self.waiting.is_empty() && self.running.load(Ordering::Acquire) == 0
    }

    /// Start a command for each waiting request there is room for.
    fn start(&mut self, exec: Option<&str>) {
        let Some(exec) = exec else { return };
        while self.running.load(Ordering::Acquire) < self.most {
            let Some((body, reply)) = self.waiting.pop_front() else {
                return;
            };
            self.running.fetch_add(1, Ordering::AcqRel);
            let running = self.running.clone();
            let exec = exec.to_string();
            std::thread::spawn(move || {
                match run_command(&exec, &body) {
                    Ok(out) => reply.answer(&out),
                    Err(why) => reply.refuse(&why),
                }
                running.fetch_sub(1, Ordering::AcqRel);
            });
        }
    }
}

/// Run `exec` under `sh -c` with `input` on its standard input: what it
/// printed, or why it gave no answer.
fn run_command(exec: &str, input: &[u8]) -> Result<Vec<u8>, String> {
    use std::process::{Command, Stdio};
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(exec)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("the server could not start its command: {e}"))?;
    let mut stdin = child.stdin.take().expect("piped");
    let input = input.to_vec();
    // Written beside the reading, so a command that prints before it has
    // read everything cannot stall on a full pipe.
    let writer = std::thread::spawn(move || {
        // A command that reads nothing closes its end early: not an error.
        let _ = stdin.write_all(&input);
    });
    let out = child
        .wait_with_output()
        .map_err(|e| format!("the server's command failed to run: {e}"))?;
    let _ = writer.join();
    if out.status.success() {
        return Ok(out.stdout);
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().rev().find(|l| !l.trim().is_empty());
    Err(match last {
        Some(l) => format!("the server's command failed ({}): {}", out.status, l.trim()),
        None => format!("the server's command failed ({})", out.status),
    })
}

pub fn call(a: &CallArgs) -> CliResult {
    let cfg = match (&a.config, &a.address) {
        (Some(c), _) => given_config(c)?,
        (None, Some(at)) => SocketConfig::builder(SocketType::Dealer)
            .connect(at)
            .build()?,
        (None, None) => return Err(CliError::usage("give the server's ADDRESS")),
    };
    let body = match a.request.as_deref() {
        Some("-") => {
            let mut b = Vec::new();
            std::io::stdin()
                .lock()
                .take(cfg.max_message() as u64 + 1)
                .read_to_end(&mut b)?;
            b
        }
        Some(text) => text.as_bytes().to_vec(),
        None => Vec::new(),
    };
    let mut c = Client::new(cfg)?;
    let answer = match c.request(&body, a.timeout) {
        Ok(answer) => answer,
        Err(ptmp::Error::Request { failure, address }) => {
            return Err(call_failed(&address, &failure));
        }
        Err(e) => return Err(e.into()),
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(&answer).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(CliError::closed()),
        r => Ok(r?),
    }
}

/// A request's failure as the command's error: 2 for a request that
/// could not be made as given, 1 for one the server did not answer.
fn call_failed(address: &str, f: &Failure) -> CliError {
    let msg = format!("request to {address}: {f}");
    match f {
        Failure::TooBig { .. } => CliError::usage(msg),
        _ => CliError::fail(msg),
    }
}
