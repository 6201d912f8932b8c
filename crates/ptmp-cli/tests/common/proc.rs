//! A `ptmp` child killed if the test ends before it does, and waiting for
//! it, for an endpoint to listen, and for its last JSON line.

use super::PTMP;
use serde_json::Value;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A child process that is killed if the test ends before it does.
pub struct Proc(pub Option<Child>);

impl Proc {
    pub fn spawn(args: &[&str]) -> Proc {
        let c = Command::new(PTMP)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start ptmp");
        Proc(Some(c))
    }
    /// Its standard output, a line at a time as it comes (read on a thread
    /// of its own; the `Output` of [`Proc::finish`] then has no stdout).
    pub fn stdout_lines(&mut self) -> std::sync::mpsc::Receiver<String> {
        use std::io::BufRead;
        let out = self.0.as_mut().unwrap().stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in std::io::BufReader::new(out).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        rx
    }
    /// Wait until the process has a handler for signal `sig` (its `SigCgt`
    /// mask in /proc says so), at most 60 s: a signal sent earlier would
    /// find its default action.
    pub fn wait_catching(&self, sig: i32) {
        let pid = self.0.as_ref().unwrap().id();
        super::wait_for(Duration::from_secs(60), "the signal handler", || {
            let st = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            let mask = st.lines().find_map(|l| l.strip_prefix("SigCgt:"))?;
            let mask = u64::from_str_radix(mask.trim(), 16).ok()?;
            (mask & (1u64 << (sig - 1)) != 0).then_some(())
        })
    }
    /// Wait at most `limit` for the process to end.
    pub fn finish(mut self, limit: Duration) -> Output {
        let mut c = self.0.take().unwrap();
        let t0 = Instant::now();
        while c.try_wait().unwrap().is_none() {
            if t0.elapsed() > limit {
                let _ = c.kill();
                let out = c.wait_with_output().unwrap();
                panic!(
                    "ptmp did not finish within {limit:?}\nstdout: {}\nstderr: {}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        c.wait_with_output().unwrap()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub fn run(args: &[&str]) -> Output {
    Proc::spawn(args).finish(Duration::from_secs(60))
}

/// Wait until something listens on the endpoint (tcp port or ipc path).
pub fn wait_listening(ep: &str) {
    let t0 = Instant::now();
    loop {
        let up = if let Some(a) = ep.strip_prefix("tcp://") {
            std::net::TcpStream::connect(a).is_ok()
        } else if let Some(p) = ep.strip_prefix("ipc://") {
            std::os::unix::net::UnixStream::connect(p).is_ok()
        } else {
            unreachable!()
        };
        if up {
            return;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "{ep} never came up");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn last_json(out: &Output) -> Value {
    let s = String::from_utf8_lossy(&out.stdout);
    let line = s.lines().last().unwrap_or_else(|| {
        panic!(
            "no output; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    serde_json::from_str(line).unwrap_or_else(|e| panic!("last line {line:?} is not JSON: {e}"))
}

/// Stop a child as a user would: SIGINT, up to `grace` for it to end
/// cleanly, then SIGKILL; it is reaped either way.
pub fn interrupt(child: &mut Child, grace: Duration) {
    // SAFETY: kill(2) on our own child's pid, which is not yet reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t0 = Instant::now();
    while t0.elapsed() < grace {
        if child.try_wait().ok().flatten().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}
