//! A segment cut short under live processes: the writer and the readers
//! get an error naming the truncation and go on living, never die of SIGBUS.

mod common;
use common::Chan;

use ptmp_shm::{remove, segment_path, ChannelConfig, Policy, Reader, ShmError, StartAt, Writer};
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

impl Chan {
    fn truncate(&self, len: u64) {
        std::fs::OpenOptions::new()
            .write(true)
            .open(segment_path(&self.0).unwrap())
            .unwrap()
            .set_len(len)
            .unwrap();
    }
}

/// Slots of several pages each, so a cut can fall between pages.
fn cfg() -> ChannelConfig {
    ChannelConfig {
        slots: 8,
        max_message: 3 * 4096,
        policy: Policy::Overwrite,
    }
}

fn is_truncated(e: &ShmError, name: &str) -> bool {
    matches!(e, ShmError::Truncated { name: n, .. } if n == name)
        && e.to_string().contains("truncated")
        && e.to_string().contains("size now")
}

#[test]
fn truncation_in_process_is_an_error_for_reader_and_writer() {
    // Cut to nothing, to the header only, and in the middle of a slot.
    for cut in [0u64, 8192, 8192 + 3 * 4096 + 100] {
        let c = Chan::new("inproc");
        let mut w = Writer::create(&c.0, cfg()).unwrap();
        let msg = vec![0xabu8; 3 * 4096];
        for _ in 0..3 {
            w.publish(&msg).unwrap();
        }
        let mut r = Reader::attach(&c.0, StartAt::Oldest).unwrap();
        let mut views = Reader::attach(&c.0, StartAt::Oldest).unwrap();
        let mut buf = Vec::new();
        assert_eq!(r.try_recv(&mut buf).unwrap().unwrap().seq, 0);
        c.truncate(cut);
        // The reader: an error (after at most the messages whose pages are
        // still in the file), within bounded time, every time asked.
        let mut got = None;
        for _ in 0..10 {
            match r.recv(&mut buf, Some(Duration::from_secs(2))) {
                Ok(Some(m)) => assert_eq!(buf, msg, "message {} delivered damaged", m.seq),
                Ok(None) => panic!("cut {cut}: timed out instead of reporting the truncation"),
                Err(e) => {
                    got = Some(e);
                    break;
                }
            }
        }
        let e = got.expect("an error");
        assert!(is_truncated(&e, &c.0), "cut {cut}: {e}");
        let e = r
            .recv(&mut buf, Some(Duration::from_millis(50)))
            .unwrap_err();
        assert!(is_truncated(&e, &c.0), "cut {cut}: {e}");
        // A view of a message on a lost page is never valid.
        let mut seen_err = false;
        for _ in 0..10 {
            match views.view_checked(Some(Duration::from_secs(2))) {
                Ok(Some(v)) => {
                    let ok = v.bytes().iter().all(|&b| b == 0xab);
                    assert!(!v.valid() || ok, "cut {cut}: a damaged view said valid");
                }
                Ok(None) => panic!("cut {cut}: view timed out"),
                Err(e) => {
                    assert!(is_truncated(&e, &c.0), "cut {cut}: {e}");
                    seen_err = true;
                    break;
                }
            }
        }
        assert!(seen_err);
        // The writer: an error at the latest on its next message.
        let mut werr = None;
        for _ in 0..(2 * 8) {
            if let Err(e) = w.publish(&msg) {
                werr = Some(e);
                break;
            }
        }
        let e = werr.expect("the writer noticed");
        assert!(is_truncated(&e, &c.0), "cut {cut}: {e}");
        // And the channel can be made again.
        drop((r, views, w));
        remove(&c.0).unwrap();
        let mut w = Writer::create(&c.0, cfg()).unwrap();
        w.publish(b"fresh").unwrap();
    }
}

/// Child-process roles, run by the test below.
#[test]
fn child_role() {
    let Ok(role) = std::env::var("PTMP_TRUNC_ROLE") else {
        return;
    };
    let name = std::env::var("PTMP_TRUNC_CHAN").unwrap();
    let exit_for = |e: ShmError| -> ! {
        eprintln!("{role}: {e}");
        std::process::exit(if matches!(e, ShmError::Truncated { .. }) {
            3
        } else {
            4
        })
    };
    match role.as_str() {
        "writer" => {
            let mut w = Writer::create(&name, cfg()).unwrap();
            let msg = vec![0x5au8; 2 * 4096];
            println!("ready");
            loop {
                if let Err(e) = w.publish(&msg) {
                    exit_for(e);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        "reader" => {
            let mut r = Reader::attach(&name, StartAt::Newest).unwrap();
            let mut buf = Vec::new();
            let mut said = false;
            loop {
                match r.recv(&mut buf, Some(Duration::from_millis(500))) {
                    Ok(Some(_)) if !said => {
                        println!("ready");
                        said = true;
                    }
                    Ok(_) => {}
                    Err(e) => exit_for(e),
                }
            }
        }
        "fsize" => {
            // Under a file size limit smaller than the ring.
            let big = ChannelConfig {
                slots: 8,
                max_message: 1 << 20,
                policy: Policy::Overwrite,
            };
            match Writer::create(&name, big) {
                Ok(_) => println!("created"),
                Err(e) => println!("refused: {e}"),
            }
        }
        _ => unreachable!(),
    }
}

#[test]
fn a_file_size_limit_below_the_ring_is_an_error_not_sigxfsz() {
    let c = Chan::new("fsize");
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -f 200 && exec \"$0\" --exact child_role --nocapture --test-threads=1")
        .arg(&exe)
        .env("PTMP_TRUNC_ROLE", "fsize")
        .env("PTMP_TRUNC_CHAN", &c.0)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.signal(),
        None,
        "killed by a signal: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("refused") && text.contains("file size limit"),
        "{text}"
    );
    assert!(!segment_path(&c.0).unwrap().exists());
}

fn spawn(role: &str, chan: &str) -> (std::process::Child, BufReader<std::process::ChildStdout>) {
    let mut c = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_role", "--nocapture", "--test-threads=1"])
        .env("PTMP_TRUNC_ROLE", role)
        .env("PTMP_TRUNC_CHAN", chan)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(c.stdout.take().unwrap());
    let t0 = Instant::now();
    let mut line = String::new();
    while !line.contains("ready") {
        line.clear();
        if out.read_line(&mut line).unwrap() == 0 || t0.elapsed() > Duration::from_secs(20) {
            let _ = c.kill();
            panic!("{role} never got ready");
        }
    }
    (c, out)
}

fn wait_exit(c: &mut std::process::Child, role: &str) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(s) = c.try_wait().unwrap() {
            return s;
        }
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = c.kill();
            panic!("{role} still running 20 s after the truncation");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn truncation_under_live_processes_ends_both_with_an_error_not_sigbus() {
    for cut in [0u64, 8192 + 100] {
        let c = Chan::new("procs");
        let (mut w, _wout) = spawn("writer", &c.0);
        let (mut r, _rout) = spawn("reader", &c.0);
        c.truncate(cut);
        for (child, role) in [(&mut w, "writer"), (&mut r, "reader")] {
            let s = wait_exit(child, role);
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            assert_eq!(
                s.signal(),
                None,
                "cut {cut}: {role} killed by signal {:?}: {err}",
                s.signal()
            );
            assert_eq!(s.code(), Some(3), "cut {cut}: {role}: {err}");
            assert!(
                err.contains("truncated") && err.contains(&c.0),
                "{role}: {err}"
            );
        }
    }
}
