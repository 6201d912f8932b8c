//! `ptmp bench baseline`: a classic writer/reader comparison of ZeroMQ with
//! POSIX message queues and plain sockets, one writer
//! process and one reader process per transport, in one run: 2,000,000
//! messages of 1,032 bytes (an 8-byte index and 1,024 bytes of text). The
//! reader times from its first receive to the last index and reports its CPU
//! time. Transports: POSIX message queue, Unix stream and datagram sockets,
//! UDP, TCP, raw libzmq PUSH/PULL (ipc, tcp), ptmp over zmq (ipc, tcp) and
//! ptmp over shm://, and Redis streams (XADD pipelined 100 at a time with
//! MAXLEN ~ 200000, XREAD BLOCK COUNT 1000) on a redis-server the harness
//! starts on loopback and stops, or a note and no row when it cannot. The
//! child processes are this binary run again with the hidden `bench-child`
//! subcommand.

use crate::error::{BenchError, BenchResult};
use crate::report::{Cell, Row};
use clap::ValueEnum;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Base {
    PosixMq,
    UnixStream,
    UnixDgram,
    Udp,
    Tcp,
    ZmqIpc,
    ZmqTcp,
    PtmpIpc,
    PtmpTcp,
    PtmpShm,
    RedisStreams,
}

impl Base {
    fn name(self) -> &'static str {
        match self {
            Base::PosixMq => "posix-mq",
            Base::UnixStream => "unix-stream",
            Base::UnixDgram => "unix-dgram",
            Base::Udp => "udp",
            Base::Tcp => "tcp",
            Base::ZmqIpc => "zmq-ipc",
            Base::ZmqTcp => "zmq-tcp",
            Base::PtmpIpc => "ptmp-ipc",
            Base::PtmpTcp => "ptmp-tcp",
            Base::PtmpShm => "ptmp-shm",
            Base::RedisStreams => "redis-streams",
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct BaselineArgs {
    /// Messages.
    #[arg(short = 'n', long, default_value_t = 2_000_000)]
    pub count: u64,
    /// Message size in bytes (8-byte index + text).
    #[arg(short = 'm', long = "size", default_value_t = 1032)]
    pub size: usize,
    /// Transports to run.
    #[arg(long, value_enum, num_args = 1..)]
    pub transports: Vec<Base>,
}

#[derive(Debug, clap::Args)]
pub struct ChildArgs {
    #[arg(long)]
    pub role: String,
    #[arg(long, value_enum)]
    pub transport: Base,
    #[arg(long)]
    pub addr: String,
    #[arg(short = 'n', long)]
    pub count: u64,
    #[arg(short = 'm', long)]
    pub size: usize,
}

/// What a child process cost: CPU seconds and wall seconds from spawn.
/// (Peak RSS comes from the child itself: wait4's ru_maxrss survives exec,
/// so it would report this parent's size.)
struct Cost {
    cpu_s: f64,
    wall_s: f64,
}

impl Cost {
    fn cpu_pct(&self) -> f64 {
        if self.wall_s > 0.0 {
            100.0 * self.cpu_s / self.wall_s
        } else {
            0.0
        }
    }
}

/// Reap `child` (spawned at `spawned`): its status, CPU and wall time.
fn wait_cost(
    child: &mut std::process::Child,
    spawned: Instant,
) -> std::io::Result<(std::process::ExitStatus, Cost)> {
    let (st, cpu_s) = crate::sys::reap(child)?;
    Ok((
        st,
        Cost {
            cpu_s,
            wall_s: spawned.elapsed().as_secs_f64(),
        },
    ))
}

/// One transport's writer-to-reader run.
#[derive(Debug, Clone)]
pub struct BaselineRow {
    /// The transport.
    pub transport: Base,
    /// Messages written.
    pub messages: u64,
    /// Messages the reader got.
    pub received: u64,
    /// The reader's time from its first receive to the last, seconds.
    pub elapsed_s: f64,
    /// The reader's own CPU time over that span, seconds.
    pub reader_cpu_s: f64,
    /// Messages per second over the reader's span.
    pub rate: f64,
    /// Bytes per second over the same span, millions.
    pub mb_s: f64,
    /// The writer's CPU time over its life, %.
    pub writer_cpu_pct: f64,
    /// The reader's, likewise.
    pub reader_cpu_pct: f64,
    /// The writer's peak RSS, MB.
    pub writer_rss_mb: f64,
    /// The reader's peak RSS, MB.
    pub reader_rss_mb: f64,
}

impl Row for BaselineRow {
    fn headers() -> &'static [&'static str] {
        &[
            "transport",
            "messages",
            "received",
            "lost",
            "reader elapsed s",
            "reader CPU s",
            "M msg/s",
            "MB/s",
            "writer CPU %",
            "reader CPU %",
            "writer peak RSS MB",
            "reader peak RSS MB",
        ]
    }
    fn cells(&self) -> Vec<Cell> {
        let f = |x: f64, d: usize| Cell::measure(x, format!("{x:.d$}"));
        vec![
            Cell::label(self.transport.name()),
            Cell::param(self.messages as f64),
            Cell::count(self.received),
            Cell::count(self.messages - self.received.min(self.messages)),
            f(self.elapsed_s, 3),
            f(self.reader_cpu_s, 3),
            f(self.rate / 1e6, 2),
            f(self.mb_s, 0),
            f(self.writer_cpu_pct, 0),
            f(self.reader_cpu_pct, 0),
            f(self.writer_rss_mb, 1),
            f(self.reader_rss_mb, 1),
        ]
    }
}

/// Run the baseline suite: each transport with a writer and a reader
/// process.
pub fn run(a: &BaselineArgs) -> BenchResult<Vec<BaselineRow>> {
    if a.size < 8 || a.count == 0 {
        return Err(BenchError::usage("-m must be at least 8 and -n at least 1"));
    }
    let all = Base::value_variants().to_vec();
    let which = if a.transports.is_empty() {
        all
    } else {
        a.transports.clone()
    };
    let exe = std::env::current_exe()?;
    let dir = std::env::temp_dir().join(format!("ptmp-baseline-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    crate::report::table::<BaselineRow>();
    let mut rows = Vec::new();
    for t in which {
        // Held for the row: the server is stopped (by its PID) on drop.
        let Some((addr, _redis)) = meeting_point(t, &dir)? else {
            continue;
        };
        let pair = Pair {
            exe: &exe,
            transport: t,
            addr: &addr,
            a,
        };
        let row = pair.run()?;
        crate::report::row(&row);
        rows.push(row);
    }
    let _ = std::fs::remove_dir_all(&dir);
    crate::report::note(format!(
        "\n{} messages of {} bytes, one writer process and one reader process per row; CPU % = a process's CPU time over its life (spawn to exit), peak RSS = each process's VmHWM.",
        a.count, a.size
    ));
    Ok(rows)
}

/// Where the reader and the writer of transport `t` meet: its address (a
/// file under `dir`, a free loopback port, a queue or ring named for this
/// process), with the Redis server a redis row runs on, to be held for the
/// row. `None` when the redis row is skipped, after a note saying why.
fn meeting_point(
    t: Base,
    dir: &std::path::Path,
) -> BenchResult<Option<(String, Option<crate::redis::RedisServer>)>> {
    let mut redis = None;
    let addr = match t {
        Base::PosixMq => format!("/ptmp-baseline-{}", std::process::id()),
        Base::UnixStream | Base::UnixDgram => {
            dir.join(format!("{}.sock", t.name())).display().to_string()
        }
        Base::Udp | Base::Tcp => {
            let port = std::net::TcpListener::bind("127.0.0.1:0")?
                .local_addr()?
                .port();
            format!("127.0.0.1:{port}")
        }
        Base::ZmqIpc | Base::PtmpIpc => {
            format!("ipc://{}", dir.join(format!("{}.ipc", t.name())).display())
        }
        Base::ZmqTcp | Base::PtmpTcp => {
            let port = std::net::TcpListener::bind("127.0.0.1:0")?
                .local_addr()?
                .port();
            format!("tcp://127.0.0.1:{port}")
        }
        Base::PtmpShm => format!("shm://baseline-{}", std::process::id()),
        Base::RedisStreams => match crate::redis::RedisServer::start() {
            Ok(srv) => {
                let url = srv.tcp_url();
                redis = Some(srv);
                url
            }
            Err(note) => {
                eprintln!("note: redis-streams row skipped: {note}");
                return Ok(None);
            }
        },
    };
    Ok(Some((addr, redis)))
}

/// One row's two processes: this binary (`exe`) run again as the
/// `bench-child` reader and writer of `transport` at `addr`, with the
/// suite's count and size.
struct Pair<'a> {
    exe: &'a std::path::Path,
    transport: Base,
    addr: &'a str,
    a: &'a BaselineArgs,
}

impl Pair<'_> {
    /// Spawns the child playing `role`, its stdout piped to us.
    fn spawn(&self, role: &str) -> std::io::Result<std::process::Child> {
        Command::new(self.exe)
            .args([
                "bench-child",
                "--role",
                role,
                "--transport",
                self.transport.name(),
                "--addr",
                self.addr,
            ])
            .args([
                "-n",
                &self.a.count.to_string(),
                "-m",
                &self.a.size.to_string(),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
    }

    /// Runs the row: the reader started and listening, the writer run to
    /// its end, then the reader's result line read, the reader reaped and
    /// an shm ring removed. The row is made of what both reported.
    fn run(&self) -> BenchResult<BaselineRow> {
        let name = self.transport.name();
        let reader_spawned = Instant::now();
        let (mut reader, mut out) = self.start_reader()?;
        let (wst, wcost, writer_rss) = self.run_writer()?;
        let mut line = String::new();
        out.read_line(&mut line)?;
        let (_, rcost) = wait_cost(&mut reader, reader_spawned)?;
        if let Some(p) = self.addr.strip_prefix("shm://") {
            let _ = ptmp_shm::remove(p);
        }
        let j: Value = serde_json::from_str(line.trim()).map_err(|_| {
            BenchError::fail(format!("{name}: reader gave no result (writer {wst})"))
        })?;
        Ok(self.row(&j, &wcost, &rcost, writer_rss))
    }

    /// Starts the reader and waits for its "ready" line (killing it if
    /// another line comes): the child, and its stdout, where its result
    /// line will come.
    fn start_reader(
        &self,
    ) -> BenchResult<(std::process::Child, BufReader<std::process::ChildStdout>)> {
        let mut reader = self.spawn("reader")?;
        let mut out = BufReader::new(reader.stdout.take().expect("piped"));
        let mut line = String::new();
        out.read_line(&mut line)?;
        if line.trim() != "ready" {
            let _ = reader.kill();
            return Err(BenchError::fail(format!(
                "{}: reader failed to start",
                self.transport.name()
            )));
        }
        Ok((reader, out))
    }

    /// Runs the writer to its exit: its status, what it cost, and the peak
    /// RSS it reported on its last line (0 if none).
    fn run_writer(&self) -> BenchResult<(std::process::ExitStatus, Cost, f64)> {
        let writer_spawned = Instant::now();
        let mut writer = self.spawn("writer")?;
        let (wst, wcost) = wait_cost(&mut writer, writer_spawned)?;
        let mut wout = String::new();
        if let Some(mut o) = writer.stdout.take() {
            let _ = o.read_to_string(&mut wout);
        }
        let writer_rss = wout
            .lines()
            .last()
            .and_then(|l| serde_json::from_str::<Value>(l).ok())
            .and_then(|j| j["hwm_mb"].as_f64())
            .unwrap_or(0.0);
        Ok((wst, wcost, writer_rss))
    }

    /// The row of the reader's result `j` (received, elapsed_s, cpu_s,
    /// hwm_mb), the two processes' costs and the writer's peak RSS.
    fn row(&self, j: &Value, wcost: &Cost, rcost: &Cost, writer_rss: f64) -> BaselineRow {
        let got = j["received"].as_u64().unwrap_or(0);
        let el = j["elapsed_s"].as_f64().unwrap_or(0.0);
        let rate = if el > 0.0 { got as f64 / el } else { 0.0 };
        BaselineRow {
            transport: self.transport,
            messages: self.a.count,
            received: got,
            elapsed_s: el,
            reader_cpu_s: j["cpu_s"].as_f64().unwrap_or(0.0),
            rate,
            mb_s: rate * self.a.size as f64 / 1e6,
            writer_cpu_pct: wcost.cpu_pct(),
            reader_cpu_pct: rcost.cpu_pct(),
            writer_rss_mb: writer_rss,
            reader_rss_mb: j["hwm_mb"].as_f64().unwrap_or(0.0),
        }
    }
}

/// Messages the reader handles: checks the index, keeps counts.
struct Tally {
    got: u64,
    first: Option<Instant>,
    last: Instant,
}

impl Tally {
    fn new() -> Self {
        Tally {
            got: 0,
            first: None,
            last: Instant::now(),
        }
    }
    #[inline]
    fn note(&mut self, _msg: &[u8]) {
        self.got += 1;
        let now = Instant::now();
        self.first.get_or_insert(now);
        self.last = now;
    }
    fn done(&self, n: u64, msg: &[u8]) -> bool {
        msg.len() >= 8 && u64::from_le_bytes(msg[..8].try_into().expect("8")) + 1 >= n
    }
}

/// One side of a row; the writer then reports its peak RSS on stdout (the
/// reader includes it in its result line).
pub fn child(c: &ChildArgs) -> BenchResult {
    child_side(c)?;
    if c.role != "reader" {
        println!("{}", json!({"hwm_mb": crate::sys::peak_rss_mb()}));
    }
    Ok(())
}

fn child_side(c: &ChildArgs) -> BenchResult {
    let mut msg = vec![b'x'; c.size];
    let mut t = Tally::new();
    let report = match c.transport {
        Base::PosixMq => posix_mq(c, &mut t, &mut msg)?,
        Base::UnixStream | Base::Tcp => stream(c, &mut t, &mut msg)?,
        Base::UnixDgram | Base::Udp => datagram(c, &mut t, &mut msg)?,
        Base::ZmqIpc | Base::ZmqTcp => zmq_side(c, &mut t, &mut msg)?,
        Base::RedisStreams => redis_side(c, &mut t, &mut msg)?,
        Base::PtmpIpc | Base::PtmpTcp | Base::PtmpShm => ptmp_side(c, &mut t, &mut msg)?,
    };
    if !report {
        return Ok(());
    }
    // Reader: report.
    let el = t.first.map_or(0.0, |f| (t.last - f).as_secs_f64());
    println!(
        "{}",
        json!({"received": t.got, "elapsed_s": el, "cpu_s": crate::sys::cpu_seconds(),
               "hwm_mb": crate::sys::peak_rss_mb()})
    );
    Ok(())
}

/// How long a reader waits for more before it ends.
const IDLE: Duration = Duration::from_secs(2);

/// Tell the parent this side is listening.
fn ready() {
    println!("ready");
    let _ = std::io::stdout().flush();
}

/// A POSIX message queue (mq_open): the reader creates it. Gives whether to report (the reader's side).
fn posix_mq(c: &ChildArgs, t: &mut Tally, msg: &mut [u8]) -> BenchResult<bool> {
    let fail =
        |e: std::io::Error| BenchError::fail(format!("{} {}: {e}", c.transport.name(), c.role));
    let (n, size) = (c.count, c.size);
    let reader = c.role == "reader";
    let name = std::ffi::CString::new(c.addr.clone()).expect("no NUL");
    // SAFETY: plain libc calls on a queue we name; attr outlives the call.
    unsafe {
        let mut attr: libc::mq_attr = std::mem::zeroed();
        attr.mq_maxmsg = 10;
        attr.mq_msgsize = size as _;
        let q = libc::mq_open(
            name.as_ptr(),
            libc::O_CREAT | libc::O_RDWR,
            0o600,
            &mut attr,
        );
        if q == -1 {
            return Err(fail(std::io::Error::last_os_error()));
        }
        if reader {
            ready();
            loop {
                let mut ts: libc::timespec = std::mem::zeroed();
                libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts);
                ts.tv_sec += 2;
                let r = libc::mq_timedreceive(
                    q,
                    msg.as_mut_ptr().cast(),
                    size,
                    std::ptr::null_mut(),
                    &ts,
                );
                if r < 0 {
                    break;
                }
                t.note(msg);
                if t.done(n, msg) {
                    break;
                }
            }
            libc::mq_unlink(name.as_ptr());
        } else {
            for i in 0..n {
                msg[..8].copy_from_slice(&i.to_le_bytes());
                if libc::mq_send(q, msg.as_ptr().cast(), size, 0) != 0 {
                    return Err(fail(std::io::Error::last_os_error()));
                }
            }
        }
        libc::mq_close(q);
    }
    Ok(true)
}

/// A unix or tcp stream: the reader listens, the writer connects. Gives whether to report (the reader's side).
fn stream(c: &ChildArgs, t: &mut Tally, msg: &mut [u8]) -> BenchResult<bool> {
    let fail =
        |e: std::io::Error| BenchError::fail(format!("{} {}: {e}", c.transport.name(), c.role));
    let n = c.count;
    let reader = c.role == "reader";
    let stream: Box<dyn Read> = if reader {
        let s: Box<dyn Read> = if c.transport == Base::Tcp {
            let l = std::net::TcpListener::bind(&c.addr).map_err(fail)?;
            ready();
            Box::new(l.accept().map_err(fail)?.0)
        } else {
            let _ = std::fs::remove_file(&c.addr);
            let l = std::os::unix::net::UnixListener::bind(&c.addr).map_err(fail)?;
            ready();
            Box::new(l.accept().map_err(fail)?.0)
        };
        s
    } else {
        let mut w: Box<dyn Write> = if c.transport == Base::Tcp {
            Box::new(std::net::TcpStream::connect(&c.addr).map_err(fail)?)
        } else {
            Box::new(std::os::unix::net::UnixStream::connect(&c.addr).map_err(fail)?)
        };
        for i in 0..n {
            msg[..8].copy_from_slice(&i.to_le_bytes());
            w.write_all(msg).map_err(fail)?;
        }
        return Ok(false);
    };
    let mut r = BufReader::with_capacity(1 << 16, stream);
    while r.read_exact(msg).is_ok() {
        t.note(msg);
        if t.done(n, msg) {
            break;
        }
    }
    Ok(true)
}

/// Unix or udp datagrams: the reader binds; the writer sends into it. Gives whether to report (the reader's side).
fn datagram(c: &ChildArgs, t: &mut Tally, msg: &mut [u8]) -> BenchResult<bool> {
    let fail =
        |e: std::io::Error| BenchError::fail(format!("{} {}: {e}", c.transport.name(), c.role));
    let n = c.count;
    let reader = c.role == "reader";
    let idle = IDLE;
    if reader {
        if c.transport == Base::Udp {
            let s = std::net::UdpSocket::bind(&c.addr).map_err(fail)?;
            s.set_read_timeout(Some(idle)).map_err(fail)?;
            ready();
            while let Ok(k) = s.recv(msg) {
                t.note(&msg[..k]);
                if t.done(n, &msg[..k]) {
                    break;
                }
            }
        } else {
            let _ = std::fs::remove_file(&c.addr);
            let s = std::os::unix::net::UnixDatagram::bind(&c.addr).map_err(fail)?;
            s.set_read_timeout(Some(idle)).map_err(fail)?;
            ready();
            while let Ok(k) = s.recv(msg) {
                t.note(&msg[..k]);
                if t.done(n, &msg[..k]) {
                    break;
                }
            }
        }
    } else if c.transport == Base::Udp {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").map_err(fail)?;
        s.connect(&c.addr).map_err(fail)?;
        for i in 0..n {
            msg[..8].copy_from_slice(&i.to_le_bytes());
            let _ = s.send(msg);
        }
        return Ok(false);
    } else {
        let s = std::os::unix::net::UnixDatagram::unbound().map_err(fail)?;
        s.connect(&c.addr).map_err(fail)?;
        for i in 0..n {
            msg[..8].copy_from_slice(&i.to_le_bytes());
            s.send(msg).map_err(fail)?;
        }
        return Ok(false);
    }
    Ok(true)
}

/// Raw libzmq PUSH to PULL, the reader binding. Gives whether to report (the reader's side).
fn zmq_side(c: &ChildArgs, t: &mut Tally, msg: &mut [u8]) -> BenchResult<bool> {
    let n = c.count;
    let reader = c.role == "reader";
    let ctx = zmq::Context::new();
    let zf = |e: zmq::Error| BenchError::fail(format!("zmq: {e}"));
    if reader {
        let s = ctx.socket(zmq::PULL).map_err(zf)?;
        s.set_linger(2000).map_err(zf)?;
        s.set_rcvtimeo(2000).map_err(zf)?;
        s.bind(&c.addr).map_err(zf)?;
        ready();
        let mut m = zmq::Message::new();
        while s.recv(&mut m, 0).is_ok() {
            t.note(&m);
            if t.done(n, &m) {
                break;
            }
        }
    } else {
        let s = ctx.socket(zmq::PUSH).map_err(zf)?;
        s.set_linger(5000).map_err(zf)?;
        s.connect(&c.addr).map_err(zf)?;
        for i in 0..n {
            msg[..8].copy_from_slice(&i.to_le_bytes());
            s.send(&msg[..], 0).map_err(zf)?;
        }
        return Ok(false);
    }
    Ok(true)
}

/// A Redis stream: XADD in pipelines of 100, XREAD in batches. Gives whether to report (the reader's side).
fn redis_side(c: &ChildArgs, t: &mut Tally, msg: &mut [u8]) -> BenchResult<bool> {
    let n = c.count;
    let reader = c.role == "reader";
    let idle = IDLE;
    let mut con = crate::redis::conn(&c.addr)?;
    let key = "ptmp-baseline";
    let rerr = |e: redis::RedisError| BenchError::fail(format!("redis {}: {e}", c.role));
    if reader {
        ready();
        let mut last = "0".to_string();
        'read: loop {
            let reply: Option<redis::streams::StreamReadReply> = redis::cmd("XREAD")
                .arg("BLOCK")
                .arg(idle.as_millis() as u64)
                .arg("COUNT")
                .arg(1000)
                .arg("STREAMS")
                .arg(key)
                .arg(&last)
                .query(&mut con)
                .map_err(rerr)?;
            let Some(reply) = reply else { break };
            for sk in reply.keys {
                for e in sk.ids {
                    if let Some(redis::Value::BulkString(b)) = e.map.get("d") {
                        t.note(b);
                        if t.done(n, b) {
                            break 'read;
                        }
                    }
                    last = e.id;
                }
            }
        }
    } else {
        let mut i = 0;
        while i < n {
            let mut p = redis::pipe();
            for _ in 0..100.min(n - i) {
                msg[..8].copy_from_slice(&i.to_le_bytes());
                p.cmd("XADD")
                    .arg(key)
                    .arg("MAXLEN")
                    .arg("~")
                    .arg(200_000)
                    .arg("*")
                    .arg("d")
                    .arg(&msg[..])
                    .ignore();
                i += 1;
            }
            p.query::<()>(&mut con).map_err(rerr)?;
        }
        return Ok(false);
    }
    Ok(true)
}

/// ptmp's own raw frames over ipc, tcp or shm. Gives whether to report (the reader's side).
fn ptmp_side(c: &ChildArgs, t: &mut Tally, msg: &mut [u8]) -> BenchResult<bool> {
    let (n, size) = (c.count, c.size);
    let reader = c.role == "reader";
    let idle = IDLE;
    let shm = c.transport == Base::PtmpShm;
    if reader {
        let cfg = if shm {
            json!({"socket": {"type": "PULL", "connect": [c.addr], "shm_max_message": size.max(64) + 16}})
        } else {
            json!({"socket": {"type": "PULL", "bind": [c.addr], "max_message": size.max(ptmp::DEFAULT_MAX_MESSAGE)}})
        };
        let mut rx = ptmp::Receiver::from_json(&cfg.to_string())?;
        ready();
        let mut f = ptmp::Frames::new();
        while rx.recv_raw_into(&mut f, Some(idle))? {
            let m = f.get(0).unwrap_or(&[]);
            t.note(m);
            if t.done(n, m) {
                break;
            }
        }
    } else {
        let cfg = if shm {
            json!({"socket": {"type": "PUSH", "bind": [c.addr], "shm_max_message": size.max(64) + 16, "shm_slots": 1024}})
        } else {
            json!({"socket": {"type": "PUSH", "connect": [c.addr], "max_message": size.max(ptmp::DEFAULT_MAX_MESSAGE)}})
        };
        let mut tx = ptmp::Sender::from_json(&cfg.to_string())?;
        for i in 0..n {
            msg[..8].copy_from_slice(&i.to_le_bytes());
            tx.send_raw(&[&msg[..]])?;
        }
        return Ok(false);
    }
    Ok(true)
}
