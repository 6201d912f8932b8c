//! Aeron's IPC (<https://github.com/real-logic/aeron>), measured with its own
//! sample programs from the `aeron-all` jar: Java runs them, this module
//! starts them, reads what they print and stops them.
//!
//! The jar is `--aeron-jar`, else `$PTMP_AERON_JAR`, else the newest
//! `io/aeron/aeron-all` in the Maven local repository (`~/.m2`), where
//! `mvn dependency:get -Dartifact=io.aeron:aeron-all:1.51.0` puts it.

use crate::error::{BenchError, BenchResult};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The JVM options Aeron's agents need on Java 17: its buffers reach into
/// `jdk.internal.misc`.
const JVM: &[&str] = &[
    "--add-opens",
    "java.base/jdk.internal.misc=ALL-UNNAMED",
    "-XX:+UnlockDiagnosticVMOptions",
    "-XX:GuaranteedSafepointInterval=300000",
];

/// Where Aeron's jar is, or why it cannot be used (said in the report).
pub fn find_jar(given: Option<&Path>) -> Result<PathBuf, String> {
    if Command::new("java").arg("-version").output().is_err() {
        return Err("no java on PATH".into());
    }
    if let Some(p) = given {
        return match p.is_file() {
            true => Ok(p.to_path_buf()),
            false => Err(format!("--aeron-jar {}: no such file", p.display())),
        };
    }
    if let Some(p) = std::env::var_os("PTMP_AERON_JAR") {
        let p = PathBuf::from(p);
        return match p.is_file() {
            true => Ok(p),
            false => Err(format!("PTMP_AERON_JAR={}: no such file", p.display())),
        };
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let dir = home.join(".m2/repository/io/aeron/aeron-all");
    let mut found: Vec<(Vec<u64>, PathBuf)> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_string_lossy().to_string();
            let jar = e.path().join(format!("aeron-all-{v}.jar"));
            let key: Vec<u64> = v.split('.').map(|x| x.parse().unwrap_or(0)).collect();
            jar.is_file().then_some((key, jar))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, j)| j).ok_or_else(|| {
        format!(
            "no aeron-all jar (give --aeron-jar, set PTMP_AERON_JAR, or fetch it: mvn dependency:get -Dartifact=io.aeron:aeron-all:1.51.0; looked in {})",
            dir.display()
        )
    })
}

/// A Java sample program, pinned with taskset to `cpus` when given.
fn java(jar: &Path, cpus: Option<&str>, props: &[String], main: &str) -> Command {
    let mut c = match cpus {
        Some(list) => {
            let mut c = Command::new("taskset");
            c.args(["-c", list, "java"]);
            c
        }
        None => Command::new("java"),
    };
    c.args(JVM).args(props).arg("-cp").arg(jar).arg(main);
    c.stdin(Stdio::null()).stderr(Stdio::null());
    c
}

/// Stop a sample that runs until told (SIGINT, as Ctrl-C), then kill it.
fn stop(mut child: Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) on the pid of a child this process started and
        // has not reaped.
        unsafe { libc::kill(pid, libc::SIGINT) };
    }
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A directory of its own for one run's Aeron files (its default,
/// `/dev/shm/aeron-USER`, would be shared with any other Aeron here and
/// left behind): in memory, as its driver expects on Linux.
fn aeron_dir() -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let base = Some(PathBuf::from("/dev/shm"))
        .filter(|d| d.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    base.join(format!(
        "ptmp-aeron-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ))
}

/// One line of EmbeddedExclusiveIpcThroughput's report: messages a second,
/// from `Duration 1006ms - 19,412,578 messages - ...`.
pub fn rate_of_line(line: &str) -> Option<f64> {
    let rest = line.strip_prefix("Duration ")?;
    let (ms, rest) = rest.split_once("ms - ")?;
    let (msgs, _) = rest.split_once(" messages")?;
    let ms: f64 = ms.trim().parse().ok()?;
    let msgs: f64 = msgs.replace(',', "").trim().parse().ok()?;
    (ms > 0.0).then_some(msgs / ms * 1000.0)
}

/// The rates `parse` finds in a sample's per-second reports on `out`: the
/// first two (warmup) left out, then up to `seconds` of them, reading for
/// at most `seconds` + 30 s.
fn per_second_rates(
    out: impl std::io::Read,
    seconds: u32,
    parse: impl Fn(&str) -> Option<f64>,
) -> Vec<f64> {
    let mut rates = Vec::new();
    let mut seen = 0;
    let deadline = Instant::now() + Duration::from_secs(u64::from(seconds) + 30);
    for line in BufReader::new(out).lines().map_while(Result::ok) {
        if let Some(r) = parse(&line) {
            seen += 1;
            if seen > 2 {
                rates.push(r);
            }
        }
        if rates.len() >= seconds as usize || Instant::now() > deadline {
            break;
        }
    }
    rates
}

/// Messages a second of `size` bytes between a publishing and a
/// subscribing thread of one process (EmbeddedExclusiveIpcThroughput,
/// its media driver embedded), over `seconds` after 2 seconds of warmup:
/// the median of its per-second reports.
pub fn ipc_throughput(
    jar: &Path,
    cpus: Option<&str>,
    size: usize,
    seconds: u32,
) -> BenchResult<f64> {
    let dir = aeron_dir();
    let props = [
        format!("-Daeron.sample.messageLength={size}"),
        format!("-Daeron.dir={}", dir.display()),
        "-Daeron.dir.delete.on.shutdown=true".to_string(),
    ];
    let mut child = java(
        jar,
        cpus,
        &props,
        "io.aeron.samples.EmbeddedExclusiveIpcThroughput",
    )
    .stdout(Stdio::piped())
    .spawn()?;
    let out = child.stdout.take().expect("piped");
    let rates = per_second_rates(out, seconds, rate_of_line);
    stop(child);
    let _ = std::fs::remove_dir_all(&dir);
    if rates.is_empty() {
        return Err(BenchError::fail(
            "Aeron's EmbeddedExclusiveIpcThroughput printed no rate",
        ));
    }
    Ok(crate::report::median(rates))
}

/// The two CPUs of `cpus` (`A,B`), each side's pin.
fn two_cpus(cpus: Option<&str>) -> (Option<&str>, Option<&str>) {
    match cpus.and_then(|c| c.split_once(',')) {
        Some((a, b)) => (Some(a), Some(b)),
        None => (None, None),
    }
}

/// Start sample `main` with a media driver embedded in it (shared
/// threading, its files in `dir`, removed when it stops), its stdout as
/// `stdout` says, and wait for the driver to be up.
fn with_driver(
    jar: &Path,
    cpu: Option<&str>,
    dir: &Path,
    common: &[String],
    main: &str,
    stdout: Stdio,
) -> BenchResult<Child> {
    let mut props = common.to_vec();
    props.extend([
        "-Daeron.sample.embeddedMediaDriver=true".to_string(),
        "-Daeron.threading.mode=SHARED".to_string(),
        "-Daeron.dir.delete.on.shutdown=true".to_string(),
    ]);
    let child = java(jar, cpu, &props, main).stdout(stdout).spawn()?;
    let ready = Instant::now() + Duration::from_secs(30);
    while !dir.join("cnc.dat").exists() {
        if Instant::now() > ready {
            stop(child);
            let name = main.rsplit('.').next().unwrap_or(main);
            return Err(BenchError::fail(format!(
                "Aeron's {name} made no media driver in 30 s"
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(child)
}

/// One line of RateSubscriber's report: messages a second, from
/// `2.103e+07 msgs/sec, 1.346e+09 payload bytes/sec, totals ...`.
pub fn subscriber_rate_of_line(line: &str) -> Option<f64> {
    let (rate, rest) = line.split_once(" msgs/sec, ")?;
    rest.contains("totals").then_some(())?;
    rate.trim().parse().ok()
}

/// Messages a second of `size` bytes from a publishing process to a
/// subscribing one over `aeron:ipc`: StreamingPublisher on the first CPU of
/// `cpus` (`A,B`) offering flat out, RateSubscriber on the second (the media
/// driver embedded in it, sharing one thread) polling fragments in place.
/// The median of the subscriber's per-second reports over `seconds`, after
/// 2 seconds of warmup.
pub fn ipc_two_process_throughput(
    jar: &Path,
    cpus: Option<&str>,
    size: usize,
    seconds: u32,
) -> BenchResult<f64> {
    let (pub_cpu, sub_cpu) = two_cpus(cpus);
    let dir = aeron_dir();
    let common = [
        format!("-Daeron.dir={}", dir.display()),
        "-Daeron.sample.channel=aeron:ipc".to_string(),
    ];
    let main = "io.aeron.samples.RateSubscriber";
    let mut sub = with_driver(jar, sub_cpu, &dir, &common, main, Stdio::piped())?;
    let out = sub.stdout.take().expect("piped");
    let mut pub_props = common.to_vec();
    // Enough messages to outlast the reports asked for at 100 M/s.
    let messages = 100_000_000 * (u64::from(seconds) + 10);
    pub_props.extend([
        format!("-Daeron.sample.messageLength={size}"),
        format!("-Daeron.sample.messages={messages}"),
    ]);
    let publisher = java(
        jar,
        pub_cpu,
        &pub_props,
        "io.aeron.samples.StreamingPublisher",
    )
    .stdout(Stdio::null())
    .spawn()?;
    // Reports of nothing come before the publisher has connected.
    let rates = per_second_rates(out, seconds, |l| {
        subscriber_rate_of_line(l).filter(|r| *r > 0.0)
    });
    stop(publisher);
    stop(sub);
    let _ = std::fs::remove_dir_all(&dir);
    if rates.is_empty() {
        return Err(BenchError::fail("Aeron's RateSubscriber printed no rate"));
    }
    Ok(crate::report::median(rates))
}

/// The value at the first row of an HdrHistogram percentile distribution
/// (as Ping prints it: value, percentile, count, 1/(1-percentile)) whose
/// percentile is at least `q`.
pub fn value_at(report: &str, q: f64) -> Option<f64> {
    report.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        let v: f64 = w.next()?.parse().ok()?;
        let p: f64 = w.next()?.parse().ok()?;
        (p >= q).then_some(v)
    })
}

/// Round trips of `size` bytes between Aeron's Ping and Pong, two
/// processes over `aeron:ipc` (the media driver embedded in Pong, sharing
/// one thread), each pinned to one of `cpus` (`A,B`): (p50, p99.9) in
/// microseconds, as Ping's histogram gives them.
pub fn ping_pong(
    jar: &Path,
    cpus: Option<&str>,
    size: usize,
    count: u64,
) -> BenchResult<(f64, f64)> {
    let (ping_cpu, pong_cpu) = two_cpus(cpus);
    let dir = aeron_dir();
    let common = [
        format!("-Daeron.dir={}", dir.display()),
        "-Daeron.sample.ping.channel=aeron:ipc".to_string(),
        "-Daeron.sample.pong.channel=aeron:ipc".to_string(),
    ];
    let main = "io.aeron.samples.Pong";
    let pong = with_driver(jar, pong_cpu, &dir, &common, main, Stdio::null())?;
    let mut ping_props = common.to_vec();
    ping_props.extend([
        format!("-Daeron.sample.messageLength={size}"),
        format!("-Daeron.sample.messages={count}"),
        "-Daeron.sample.warmup.messages=10000".to_string(),
        "-Daeron.sample.warmup.iterations=5".to_string(),
    ]);
    let mut ping = java(jar, ping_cpu, &ping_props, "io.aeron.samples.Ping");
    // Asked "Execute again? (y/n)" at the end, Ping reads the answer.
    let mut child = ping.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn()?;
    if let Some(mut i) = child.stdin.take() {
        use std::io::Write;
        let _ = i.write_all(b"n\n");
    }
    let mut report = String::new();
    if let Some(o) = child.stdout.take() {
        for line in BufReader::new(o).lines().map_while(Result::ok) {
            report.push_str(&line);
            report.push('\n');
            if line.starts_with("#[Max") {
                break;
            }
        }
    }
    stop(child);
    stop(pong);
    let _ = std::fs::remove_dir_all(&dir);
    match (value_at(&report, 0.5), value_at(&report, 0.999)) {
        (Some(p50), Some(p999)) => Ok((p50, p999)),
        _ => Err(BenchError::fail(format!(
            "Aeron's Ping printed no latency histogram: {}",
            report.lines().take(5).collect::<Vec<_>>().join(" / ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_throughput_line() {
        let r = rate_of_line("Duration 1000ms - 19,412,578 messages - 1,242,404,992 payload bytes");
        assert_eq!(r, Some(19_412_578.0));
        assert_eq!(
            rate_of_line("Publisher back pressure ratio: 0.012191"),
            None
        );
        assert_eq!(rate_of_line("Duration 0ms - 5 messages"), None);
    }

    #[test]
    fn reads_the_subscriber_line() {
        let l = "2.103e+07 msgs/sec, 1.346e+09 payload bytes/sec, totals 63089024 messages 3850 MB";
        assert_eq!(subscriber_rate_of_line(l), Some(2.103e7));
        assert_eq!(
            subscriber_rate_of_line("Subscribing to aeron:ipc on stream id 1001"),
            None
        );
        assert_eq!(subscriber_rate_of_line("x msgs/sec, totals"), None);
    }

    #[test]
    fn reads_ping_percentiles() {
        let r = "Histogram of RTT latencies in microseconds.
       Value     Percentile TotalCount 1/(1-Percentile)

       0.521 0.000000000000          6           1.00
       0.881 0.500000000000      50175           2.00
    2205.695 0.998828125000      99885         853.33
    2228.223 0.999023437500      99903        1024.00
   25575.423 1.000000000000     100000
#[Mean    =       10.172, StdDeviation   =      193.114]";
        assert_eq!(value_at(r, 0.5), Some(0.881));
        assert_eq!(value_at(r, 0.999), Some(2228.223));
        assert_eq!(value_at("nothing here", 0.5), None);
    }
}
