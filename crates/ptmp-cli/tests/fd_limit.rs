//! A receiver at its limit of open files (`ulimit -n 64`) with more idle
//! connections than it can take: it does not spin a core in libzmq's
//! accept, it says in its log that connections are refused at the limit,
//! and a real sender gets through once descriptors are free again.

use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::proc::{last_json, wait_listening, Proc};
use common::{free_port, text, wait_for, PTMP};

/// CPU time (user + system) of process `pid` so far, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let st = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which ends with the last ')').
    let rest = &st[st.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 here.
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

#[test]
fn a_receiver_at_its_fd_limit_neither_spins_nor_stays_silent() {
    let port = free_port();
    let ep = format!("tcp://127.0.0.1:{port}");
    let mut cmd = Command::new(PTMP);
    cmd.args([
        "recv", "-n", "10", "-p", "PULL", "-a", "bind", "-e", &ep, "-T", "-1", "--json",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        cmd.pre_exec(|| {
            let l = libc::rlimit {
                rlim_cur: 64,
                rlim_max: 64,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &l) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let rx = Proc(Some(cmd.spawn().unwrap()));
    let pid = rx.0.as_ref().unwrap().id();
    wait_listening(&ep);
    // 150 connections that never speak: more than the 64 descriptors.
    let idle: Vec<TcpStream> = (0..150)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    // The refusals begin (the first is said at once) ...
    wait_for(
        Duration::from_secs(60),
        "the receiver to reach its limit",
        || {
            let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count();
            (fds >= 60).then_some(())
        },
    );
    std::thread::sleep(Duration::from_millis(200));
    // ... and over two seconds at the limit the receiver takes a small
    // part of a core (libzmq's retried accept took all of one: 2 s of CPU
    // in 2 s).
    let hz = 100; // USER_HZ on Linux
    let (c0, t0) = (cpu_ticks(pid), Instant::now());
    std::thread::sleep(Duration::from_secs(2));
    let (c1, dt) = (cpu_ticks(pid), t0.elapsed());
    let share = (c1 - c0) as f64 / hz as f64 / dt.as_secs_f64();
    assert!(
        share < 0.3,
        "the receiver used {:.0}% of a core at its fd limit",
        share * 100.0
    );
    // Descriptors free again: a real sender gets its ten sets through.
    drop(idle);
    let send = Command::new(PTMP)
        .args(["send", "-n", "10", "-p", "PUSH", "-a", "connect", "-e", &ep])
        .output()
        .unwrap();
    assert!(send.status.success(), "{}", text(&send.stderr));
    let out = rx.finish(Duration::from_secs(60));
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(last_json(&out)["received"], 10, "{err}");
    assert!(
        err.contains("ulimit -n") && err.contains("paused"),
        "no word of the limit: {err}"
    );
}
