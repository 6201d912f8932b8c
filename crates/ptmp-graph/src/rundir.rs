//! The run directory: where it is, who may use it, its locks, its files,
//! and the leftovers of an earlier run.
//!
//! ```text
//! RUNDIR/                      0700, owned by the user running the graph
//! ├── supervisor.pid           the supervisor's pid, flock-held while it runs
//! ├── plan-PROCESS.json        what each part runs (written by the supervisor)
//! ├── processes.json           each process's pid, state and restarts; under
//! │                            Slurm, the node and job step it runs in
//! │                            ([`Supervised`])
//! ├── apply-request.json       a change `ptmp graph apply` hands the supervisor
//! ├── apply-reply-ID.json      the supervisor's answer to it
//! ├── status/PROCESS.json      each part's counts, rates and sockets
//! │                            ([`ProcessStatus`])
//! ├── sequence/PROCESS.json    where each part's sources started counting
//! │                            ([`Sequence`])
//! ├── sequence/ofile-HASH      an output file a node of this run has opened
//! ├── hold/PROCESS             present while a part is to hold its outputs
//! ├── reader-token             the secret of the graph's durable shm readers
//! ├── monitor-token            the monitor's token for clients on other hosts
//! │                            (`--http-allow-remote`; the log says where
//! │                            it is, never what it is)
//! ├── curve/                   the graph's key pair, when made for the run
//! ├── soak-SINK.dump           a sink's recording under `ptmp graph soak`
//! │                            when the graph gives it no `ofile`
//! └── LABEL.ipc                the ipc sockets of edges between processes
//! ```
//!
//! * Where: `--run-dir` when given; else `ptmp-graph-NAME` in this user's
//!   own directory ([`user_dir`]): `$XDG_RUNTIME_DIR/ptmp` when that is set,
//!   `/run/ptmp` for root, `$TMPDIR/ptmp-UID` for anyone else.
//! * Who: the run directory (and the user's directory above a default one)
//!   is made private (mode 0700) and, when it is there already, must be a
//!   directory (not a link) owned by this user that nobody else may write
//!   in ([`check_private`]); otherwise the run is refused, the error naming
//!   the directory, its owner and mode. Whoever can write there can change
//!   what the parts run (a plan's `plugins` is code to load).
//! * Paths: every path in the tree above is made by a function of this
//!   module ([`plan_file`], [`status_file`], [`sequence_file`],
//!   [`request_file`], ...), and every question about a name found there
//!   is answered by one ([`plan_process`], [`doc_process`],
//!   [`is_apply_leftover`], [`looks_like_run_dir`], [`part_dirs`]);
//!   nothing else joins these paths or spells these names.
//! * Documents: every JSON file there is one of the serde types of
//!   [`docs`], written with [`docs::write`] and read with [`docs::read`];
//!   nothing else joins these paths or indexes these documents by key.
//! * Files: every file there is read through [`read`] (no link followed, no
//!   wait on a FIFO, regular files only, bounded by a limit per kind of
//!   file) and written through [`ptmp::files::write_replace`] (a temporary
//!   file created exclusively, never through a link, then renamed).
//! * One supervisor per run directory: `supervisor.pid` is locked with
//!   `flock` for the supervisor's whole life, so of two supervisors started
//!   at the same moment exactly one gets it; the other is refused, naming
//!   the winner's pid, before it has touched anything. The kernel drops the
//!   lock when its holder dies, even by SIGKILL, so a stale file never
//!   blocks a new run.
//! * One run of a graph per host and user, whatever its run directory: a
//!   second run would bind or connect the same tcp ports and take the
//!   first one's messages. `USERDIR/locks/NAME@HOST.lock` is locked the
//!   same way ([`lock_graph`]) and names the run directory, so the second
//!   run is refused before it opens any socket, told where the first runs.
//! * Every run starts clean: a pid left in the file means the supervisor
//!   before this one died without cleaning up. Whatever the earlier run
//!   left is removed before anything starts: parts of it still alive (they
//!   are sent SIGKILL after a grace period), the shm rings and ipc socket
//!   files this host's processes bind, status and sequence files, and an
//!   unanswered `ptmp graph apply` request. A new sink would
//!   otherwise read the old run's messages still in a ring.
//! * At the end the supervisor removes the rings, the ipc socket files and
//!   then the lock files.
//! * `ptmp run --http ... --http-allow-remote` has no run directory: its
//!   monitor's token is kept in `USERDIR/run-PID.monitor-token`
//!   ([`run_monitor_token_path`], mode 0600) while it runs.

pub mod docs;

pub use docs::{
    Latency, NodeCounts, NodeReport, ProcessStatus, Sequence, SocketDir, SocketStatus, SourceStart,
    Supervised, SupervisedProcess, SupervisedState,
};

use crate::{Error, Result};
use std::fs::{DirBuilder, File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The most read from a status, sequence, reply or `processes.json` file.
pub const STATUS_LIMIT: u64 = 1 << 20;
/// The most read from a plan file or an apply request (a whole graph).
pub const PLAN_LIMIT: u64 = 8 << 20;
/// The most read from a lock file (a pid and a path).
pub const LOCK_LIMIT: u64 = 4096;

/// The supervisor's pid and lock ([`lock_path`]).
const LOCK_FILE: &str = "supervisor.pid";
/// The supervisor's process states ([`processes_file`]).
const PROCESSES_FILE: &str = "processes.json";
/// How a plan file's name starts ([`plan_file`]).
const PLAN_PREFIX: &str = "plan-";
/// How the name of every JSON document of the run directory ends.
const DOC_SUFFIX: &str = ".json";
/// A pending apply request ([`request_file`]).
const REQUEST_FILE: &str = "apply-request.json";
/// How the name of a request being written starts ([`request_tmp_file`]).
const REQUEST_TMP_PREFIX: &str = "apply-request.";
/// How the name of a request being written ends.
const TMP_SUFFIX: &str = ".tmp";
/// How the name of an answer to a request starts ([`reply_file`]).
const REPLY_PREFIX: &str = "apply-reply-";
/// How the name of an ipc socket file ends ([`ipc_socket_file`]).
const IPC_SUFFIX: &str = ".ipc";

/// Read the run-directory file `path`, at most `limit` bytes: no link is
/// followed, a FIFO is never waited on, only a regular file is read (see
/// [`ptmp::files::read_file`]). `Ok(None)` when there is no such file; the
/// error names the file and what is wrong with it.
pub fn read(path: &Path, limit: u64) -> Result<Option<Vec<u8>>> {
    read_text(path, limit).map_err(Error::RunDir)
}

pub(crate) fn read_text(path: &Path, limit: u64) -> std::result::Result<Option<Vec<u8>>, String> {
    match ptmp::files::read_file(path, limit) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// The file holding a run's reader token (see [`reader_token`]).
pub fn token_path(dir: &Path) -> PathBuf {
    dir.join("reader-token")
}

/// The run's reader token: a random secret that binds the graph's shm
/// reader identities to this run directory (ptmp's `shm_reader_token`),
/// so a receiver of the same user that claims a graph process's identity
/// while the process restarts is refused instead of taking (and moving)
/// its place. Made on first use (0600, written whole and then linked into
/// place, so never read half written; never through a link), read after;
/// 32 hexadecimal digits.
pub fn reader_token(dir: &Path) -> Result<String> {
    reader_token_text(dir).map_err(Error::RunDir)
}

fn reader_token_text(dir: &Path) -> std::result::Result<String, String> {
    secret_file(&token_path(dir), "a reader token")
}

/// The file holding the token the monitor asks remote clients for (see
/// [`monitor_token`]).
pub fn monitor_token_path(dir: &Path) -> PathBuf {
    dir.join("monitor-token")
}

/// The token a graph's monitor asks clients on other hosts for
/// (`--http-allow-remote`): made on first use like the reader token
/// (0600, exclusive, no links; 32 hexadecimal digits), read after, so a
/// restarted supervisor keeps it and Prometheus can read it from the file.
pub fn monitor_token(dir: &Path) -> Result<String> {
    monitor_token_text(dir).map_err(Error::RunDir)
}

fn monitor_token_text(dir: &Path) -> std::result::Result<String, String> {
    secret_file(&monitor_token_path(dir), "a monitor token")
}

/// Where `ptmp run` (process `pid`), which has no run directory, keeps its
/// monitor's token while it runs: `run-PID.monitor-token` in this user's
/// directory ([`user_dir`]).
pub fn run_monitor_token_path(pid: u32) -> PathBuf {
    user_dir().join(format!("run-{pid}.monitor-token"))
}

/// Write the secret `t` to `path` (mode 0600, created exclusively, never
/// through a link; one left by an earlier process of the same pid is
/// replaced), making its directory private first (see [`make_private`]).
pub fn write_secret(path: &Path, t: &str) -> Result<()> {
    if let Some(up) = path.parent() {
        make_private(up)?;
    }
    let create = || {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc_nofollow())
            .open(path)
    };
    let f = match create() {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            // Removing a link removes the link, not what it points to.
            std::fs::remove_file(path).and_then(|()| create())
        }
        r => r,
    };
    f.and_then(|mut f| f.write_all(t.as_bytes()))
        .map_err(|e| Error::RunDir(format!("{}: {e}", path.display())))
}

/// A random secret of 32 hexadecimal digits kept at `path`: made when
/// missing, read when there; `what` names it in errors.
fn secret_file(path: &Path, what: &str) -> std::result::Result<String, String> {
    let path = path.to_path_buf();
    let valid = |b: &[u8]| {
        let t = String::from_utf8_lossy(b).trim().to_string();
        if t.len() == 32 && t.bytes().all(|c| c.is_ascii_hexdigit()) {
            Ok(t)
        } else {
            Err(format!(
                "{}: not {what} (32 hexadecimal digits); remove it and start the graph again",
                path.display()
            ))
        }
    };
    if let Some(b) = read_text(&path, LOCK_LIMIT)? {
        return valid(&b);
    }
    let mut raw = [0u8; 16];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut raw))
        .map_err(|e| format!("/dev/urandom: {e}"))?;
    let t: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    // Written whole to a file of this process's own, then linked into
    // place: the secret appears with its bytes or not at all, so a process
    // of the run starting at the same moment never reads it half written.
    let mut tmp = path.clone().into_os_string();
    tmp.push(format!(".{}.tmp", &t[..12]));
    let tmp = PathBuf::from(tmp);
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc_nofollow())
        .open(&tmp)
        .and_then(|mut f| f.write_all(t.as_bytes()))
        .and_then(|()| std::fs::hard_link(&tmp, &path));
    let _ = std::fs::remove_file(&tmp);
    match made {
        Ok(()) => Ok(t),
        // Another process of the run made it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            valid(&read_text(&path, LOCK_LIMIT)?.unwrap_or_default())
        }
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// This user's own directory for graph runs and locks, the same in every
/// shell of a session: `$XDG_RUNTIME_DIR/ptmp` when that is set (an
/// absolute path), `/run/ptmp` for root (when `/run` is there), else
/// `$TMPDIR/ptmp-UID`.
pub fn user_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        return x.join("ptmp");
    }
    let uid = euid();
    if uid == 0 && Path::new("/run").is_dir() {
        return PathBuf::from("/run/ptmp");
    }
    std::env::temp_dir().join(format!("ptmp-{uid}"))
}

/// The name of user `uid` from `/etc/passwd`, for messages.
fn user_name(uid: u32) -> Option<String> {
    let b = ptmp::files::read_file(Path::new("/etc/passwd"), 16 << 20).ok()?;
    String::from_utf8_lossy(&b).lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 2 && f[2] == uid.to_string()).then(|| f[0].to_string())
    })
}

/// Check that `dir` is a directory (not a link to one) owned by this user
/// that nobody else may write in; the error names the directory, its
/// owner and mode, and what to do.
pub fn check_private(dir: &Path) -> Result<()> {
    check_private_text(dir).map_err(Error::RunDir)
}

fn check_private_text(dir: &Path) -> std::result::Result<(), String> {
    let d = dir.display();
    let m = std::fs::symlink_metadata(dir).map_err(|e| format!("run directory {d}: {e}"))?;
    if m.file_type().is_symlink() {
        return Err(format!(
            "run directory {d} is a symbolic link; a link may lead anywhere another user chose, so it is not used: give the directory itself with --run-dir"
        ));
    }
    if !m.is_dir() {
        return Err(format!(
            "run directory {d} is {}, not a directory; remove it or give another --run-dir",
            ptmp::files::kind_of(m.file_type())
        ));
    }
    let me = euid();
    if m.uid() != me {
        let who = user_name(m.uid()).map_or(String::new(), |n| format!(" ({n})"));
        return Err(format!(
            "run directory {d} belongs to uid {}{who}, mode {:04o}, not to this user (uid {me}): its owner could steer this run through its files, so it is not used; remove it if nobody runs from it, or give another --run-dir",
            m.uid(),
            m.mode() & 0o7777
        ));
    }
    if m.mode() & 0o022 != 0 {
        return Err(format!(
            "run directory {d} has mode {:04o}: other users may write in it and could steer this run through its files, so it is not used; make it private (chmod 700 {d}) or give another --run-dir",
            m.mode() & 0o7777
        ));
    }
    Ok(())
}

/// Make `dir` (mode 0700; its parents as usual) or take the one there if
/// it passes [`check_private`].
pub fn make_private(dir: &Path) -> Result<()> {
    make_private_text(dir).map_err(Error::RunDir)
}

fn make_private_text(dir: &Path) -> std::result::Result<(), String> {
    if let Some(up) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(up).map_err(|e| format!("{}: {e}", up.display()))?;
    }
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("run directory {}: {e}", dir.display())),
    }
    check_private_text(dir)
}

/// Make the run directory `dir` and its `status` directory ready for a
/// supervisor of graph `graph`: private, ours (see [`check_private`]);
/// the user's directory too when `dir` is inside it.
pub fn prepare(dir: &Path, graph: &str) -> Result<()> {
    let err = |e: Error| Error::RunDir(format!("graph {graph}: {e}"));
    let base = user_dir();
    if dir.starts_with(&base) && dir != base {
        make_private(&base).map_err(err)?;
    }
    make_private(dir).map_err(err)?;
    make_private(&status_dir(dir)).map_err(err)?;
    reader_token(dir).map(|_| ()).map_err(err)
}

/// A locked lock file (`supervisor.pid`, a graph's lock); dropping it
/// removes the file, then releases the lock.
pub struct Lock {
    file: File,
    path: PathBuf,
    /// The pid an earlier supervisor left in the file when it died without
    /// cleaning up, if one did.
    pub stale: Option<i32>,
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Remove while still holding the lock: a supervisor starting now
        // either fails to lock this file or, having locked it after we
        // close it, sees it is no longer the file at the path and retries.
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// The file holding the supervisor's pid and lock.
pub fn lock_path(dir: &Path) -> PathBuf {
    dir.join(LOCK_FILE)
}

/// The pid the supervisor of the run in `dir` wrote in its lock file
/// ([`lock_path`]), whether or not it still runs; `None` when there is no
/// such file or no pid in it.
pub fn supervisor_pid(dir: &Path) -> Option<u32> {
    let b = read(&lock_path(dir), LOCK_LIMIT).ok()??;
    let pid = first_pid(&String::from_utf8_lossy(&b))?;
    u32::try_from(pid).ok()
}

/// The whole text of a lock file, through the open file.
fn read_body(f: &mut File) -> Option<String> {
    let mut s = String::new();
    f.rewind().ok()?;
    f.take(LOCK_LIMIT).read_to_string(&mut s).ok()?;
    Some(s).filter(|s| !s.trim().is_empty())
}

fn first_pid(s: &str) -> Option<i32> {
    s.lines().next()?.trim().parse().ok()
}

/// Lock `path` (made if missing, never through a link), write `body` (our
/// pid first) into it. `busy` makes the refusal from what the holder
/// wrote.
fn take_lock(
    path: &Path,
    graph: &str,
    body: &str,
    busy: &dyn Fn(Option<String>) -> Error,
) -> Result<Lock> {
    let io = |what: &str, e: std::io::Error| {
        Error::Run(format!("graph {graph}: {what} {}: {e}", path.display()))
    };
    for _ in 0..100 {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(libc_nofollow())
            .open(path)
            .map_err(|e| io("open", e))?;
        let m = file.metadata().map_err(|e| io("stat", e))?;
        if !m.is_file() || m.uid() != euid() {
            return Err(Error::Run(format!(
                "graph {graph}: {} is {} of uid {}, not this user's lock file; remove it",
                path.display(),
                ptmp::files::kind_of(m.file_type()),
                m.uid()
            )));
        }
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                // The holder writes its pid right after locking; give it a
                // moment so the refusal can name it.
                let t = Instant::now();
                let mut got = read_body(&mut file);
                while got.is_none() && t.elapsed() < Duration::from_secs(1) {
                    std::thread::sleep(Duration::from_millis(5));
                    got = read_body(&mut file);
                }
                return Err(busy(got));
            }
            Err(TryLockError::Error(e)) => return Err(io("lock", e)),
        }
        // The file may have been removed (by the supervisor that held it,
        // at its end) between our open and our lock: then we hold a lock
        // on a file nobody else sees. Start again with the file at the path.
        let same = match (file.metadata(), std::fs::symlink_metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        };
        if !same {
            continue;
        }
        let stale = read_body(&mut file)
            .and_then(|s| first_pid(&s))
            .filter(|&p| p != std::process::id() as i32);
        file.set_len(0).map_err(|e| io("truncate", e))?;
        file.rewind().map_err(|e| io("rewind", e))?;
        file.write_all(body.as_bytes())
            .and_then(|()| file.sync_data())
            .map_err(|e| io("write", e))?;
        return Ok(Lock {
            file,
            path: path.to_path_buf(),
            stale,
        });
    }
    Err(Error::Run(format!(
        "graph {graph}: {} keeps being replaced; is another supervisor starting and stopping there?",
        path.display()
    )))
}

/// `O_NOFOLLOW | O_CLOEXEC` for opening a file in the run directory.
fn libc_nofollow() -> i32 {
    (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::CLOEXEC).bits() as i32
}

/// Lock the run directory `dir` for graph `graph`, writing our pid. The
/// error names the live supervisor that holds it.
pub fn lock(dir: &Path, graph: &str) -> Result<Lock> {
    let busy = |got: Option<String>| {
        let who = got
            .as_deref()
            .and_then(first_pid)
            .map_or("its pid not yet written".into(), |p| {
                format!("supervisor pid {p}")
            });
        Error::Run(format!(
            "graph {graph}: already running from {} ({who}); stop it or use another --run-dir",
            dir.display()
        ))
    };
    take_lock(
        &lock_path(dir),
        graph,
        &std::process::id().to_string(),
        &busy,
    )
}

/// The lock file of graph `graph`'s part on host `host` for this user:
/// `USERDIR/locks/GRAPH@HOST.lock`.
pub fn graph_lock_path(graph: &str, host: &str) -> PathBuf {
    user_dir()
        .join("locks")
        .join(format!("{graph}@{host}.lock"))
}

/// Lock graph `graph`'s part on host `host` for this user, whatever the run
/// directory (`dir`, written into the lock): a second run of it on this
/// host would bind or connect the same addresses and take the first run's
/// messages, so it is refused, naming where the first one runs.
pub fn lock_graph(graph: &str, host: &str, dir: &Path) -> Result<Lock> {
    let path = graph_lock_path(graph, host);
    let err = |e: Error| Error::RunDir(format!("graph {graph}: {e}"));
    let base = user_dir();
    make_private(&base).map_err(err)?;
    make_private(&base.join("locks")).map_err(err)?;
    let busy = |got: Option<String>| {
        let got = got.unwrap_or_default();
        let mut l = got.lines();
        let pid = l.next().unwrap_or("?").trim().to_string();
        let from = l.next().unwrap_or("(not yet written)").to_string();
        Error::Run(format!(
            "graph {graph}: host {host} of this graph already runs on this host from run directory {from} (supervisor pid {pid}, lock {}); a second run would use the same addresses and take its messages: stop that one first, or give this graph another name",
            path.display()
        ))
    };
    let body = format!("{}\n{}\n", std::process::id(), dir.display());
    take_lock(&path, graph, &body, &busy)
}

/// Remove `path` if it is a socket file; anything else there (a file an
/// ipc address was pointed at by mistake, whose bind was refused) stays.
pub fn remove_socket_file(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket())
        && std::fs::remove_file(path).is_ok()
}

/// Where `ptmp graph apply` hands the supervisor a change.
pub fn request_file(run_dir: &Path) -> PathBuf {
    run_dir.join(REQUEST_FILE)
}

/// Where `ptmp graph apply` writes request `id` whole before it links it
/// into place as [`request_file`].
pub fn request_tmp_file(run_dir: &Path, id: &str) -> PathBuf {
    run_dir.join(format!("{REQUEST_TMP_PREFIX}{id}{TMP_SUFFIX}"))
}

/// Where the supervisor answers apply request `id`.
pub fn reply_file(run_dir: &Path, id: &str) -> PathBuf {
    run_dir.join(format!("{REPLY_PREFIX}{id}{DOC_SUFFIX}"))
}

/// Whether the file called `name` in a run directory is what an apply
/// left behind: an answer nobody took ([`reply_file`]) or a request
/// never linked into place ([`request_tmp_file`]). A new run removes
/// them.
pub fn is_apply_leftover(name: &str) -> bool {
    name.starts_with(REPLY_PREFIX)
        || (name.starts_with(REQUEST_TMP_PREFIX) && name.ends_with(TMP_SUFFIX))
}

/// Whether the file called `name` in a run directory is an answer to an
/// apply request ([`reply_file`]).
pub fn is_reply_file(name: &str) -> bool {
    name.starts_with(REPLY_PREFIX) && name.ends_with(DOC_SUFFIX)
}

/// The directory of the parts' sequence files and output marks.
pub fn sequence_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("sequence")
}

/// The file where a part records, per source node, the `count` its
/// sources started from and its pid: `RUNDIR/sequence/PROCESS.json`.
pub fn sequence_file(run_dir: &Path, process: &str) -> PathBuf {
    sequence_dir(run_dir).join(format!("{process}{DOC_SUFFIX}"))
}

/// The process whose status or sequence file is at `path`
/// (`status/PROCESS.json`, `sequence/PROCESS.json`); `None` for any
/// other file there (an output file's mark, a temporary file).
pub fn doc_process(path: &Path) -> Option<&str> {
    path.file_name()?
        .to_str()?
        .strip_suffix(DOC_SUFFIX)
        .filter(|p| !p.is_empty())
}

/// The file holding what process `process` runs: `RUNDIR/plan-PROCESS.json`.
pub fn plan_file(run_dir: &Path, process: &str) -> PathBuf {
    run_dir.join(format!("{PLAN_PREFIX}{process}{DOC_SUFFIX}"))
}

/// The process a plan file called `name` is for ([`plan_file`]); `None`
/// when `name` is no plan file's.
pub fn plan_process(name: &str) -> Option<&str> {
    name.strip_prefix(PLAN_PREFIX)?
        .strip_suffix(DOC_SUFFIX)
        .filter(|p| !p.is_empty())
}

/// Every plan file in `run_dir` ([`plan_file`]), in name order; none when
/// the directory cannot be read.
pub fn plan_files(run_dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(run_dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|f| f.to_str())
                .and_then(plan_process)
                .is_some()
        })
        .collect();
    files.sort();
    files
}

/// Whether `dir` looks like the run directory of one part of a graph: it
/// holds the supervisor's files ([`processes_file`], [`lock_path`]) or a
/// plan ([`plan_file`]).
pub fn looks_like_run_dir(dir: &Path) -> bool {
    if processes_file(dir).exists() || lock_path(dir).exists() {
        return true;
    }
    std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten()
            .any(|e| e.file_name().to_str().and_then(plan_process).is_some())
    })
}

/// One host's part of a graph run: its run directory, and the host's name
/// when the directory read holds one run directory per host
/// ([`part_dirs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartDir {
    /// The host's name (its directory's), or `None` for a lone run
    /// directory.
    pub host: Option<String>,
    /// Its run directory.
    pub dir: PathBuf,
}

/// The parts under `dir`, a graph's run directory or the directory
/// holding one per host (`DIR/HOST`, as `ptmp graph run --slurm
/// --run-dir DIR` lays them out on a file system the nodes share): `dir`
/// itself when it is a run directory ([`looks_like_run_dir`]); else each
/// subdirectory that is one, named by its host, in name order; else `dir`
/// (which then holds nothing to show).
pub fn part_dirs(dir: &Path) -> Vec<PartDir> {
    let single = || {
        vec![PartDir {
            host: None,
            dir: dir.to_path_buf(),
        }]
    };
    if looks_like_run_dir(dir) {
        return single();
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return single();
    };
    let mut parts: Vec<PartDir> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| looks_like_run_dir(&e.path()))
        .map(|e| PartDir {
            host: Some(e.file_name().to_string_lossy().into_owned()),
            dir: e.path(),
        })
        .collect();
    parts.sort_by(|a, b| a.host.cmp(&b.host));
    if parts.is_empty() {
        single()
    } else {
        parts
    }
}

/// The ipc socket file of an edge's binding port labelled `label`:
/// `RUNDIR/LABEL.ipc`, `RUNDIR` as given (a trailing `/` kept), so every
/// process computes the same address from the same run directory.
pub fn ipc_socket_file(run_dir: &Path, label: &str) -> PathBuf {
    let mut p = run_dir.as_os_str().to_owned();
    p.push("/");
    p.push(label);
    p.push(IPC_SUFFIX);
    PathBuf::from(p)
}

/// Where `ptmp graph soak` has sink `sink` record when the graph gives it
/// no output file: `RUNDIR/soak-SINK.dump`.
pub fn soak_dump_file(run_dir: &Path, sink: &str) -> PathBuf {
    run_dir.join(format!("soak-{sink}.dump"))
}

/// The file marking that dump file `ofile` was opened by a node of this
/// run: `RUNDIR/sequence/ofile-HASH` (HASH of its absolute path), cleared
/// with the sequence files when a new run starts.
pub(crate) fn ofile_marker(run_dir: &Path, ofile: &Path) -> PathBuf {
    let abs = std::path::absolute(ofile).unwrap_or_else(|_| ofile.to_path_buf());
    let mut h: u64 = 0xcbf29ce484222325;
    for b in abs.as_os_str().as_encoded_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    sequence_dir(run_dir).join(format!("ofile-{h:016x}"))
}

/// The directory under `run_dir` holding one status file per process.
pub fn status_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("status")
}

/// The status file process `process` rewrites while it runs.
pub fn status_file(run_dir: &Path, process: &str) -> PathBuf {
    status_dir(run_dir).join(format!("{process}{DOC_SUFFIX}"))
}

/// The supervisor's file of process states.
pub fn processes_file(run_dir: &Path) -> PathBuf {
    run_dir.join(PROCESSES_FILE)
}

/// The file whose presence asks process `process` to hold its outputs:
/// `RUNDIR/hold/PROCESS`. The supervisor makes it while it replaces what
/// the process feeds and removes it after; the part holds its agents'
/// outputs ([`ptmp_agents::hold_outputs`]) while it exists, and says so
/// at once in its status file (`"held": true`).
pub fn hold_file(run_dir: &Path, process: &str) -> PathBuf {
    hold_dir(run_dir).join(process)
}

/// The directory of the hold files ([`hold_file`]).
pub fn hold_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("hold")
}

/// The graph's own key pair when it is secured with keys made for the run
/// (`"curve": "run_dir"`).
pub fn curve_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("curve")
}

/// Whether `arg` (a command-line argument, as bytes) names a plan file of
/// the run in `run_dir` ([`plan_file`]).
pub(crate) fn names_plan_file(run_dir: &Path, arg: &[u8]) -> bool {
    let prefix = run_dir.join(PLAN_PREFIX);
    arg.starts_with(prefix.as_os_str().as_encoded_bytes()) && arg.ends_with(DOC_SUFFIX.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name this module makes is one it recognises again, and no
    /// other.
    #[test]
    fn names_made_here_are_recognised_here() {
        let d = tempfile::tempdir().unwrap();
        let rd = d.path();
        let name = |p: PathBuf| p.file_name().unwrap().to_str().unwrap().to_string();
        assert_eq!(plan_process(&name(plan_file(rd, "front"))), Some("front"));
        for other in ["plan-.json", "plan-x.json.tmp", "processes.json", "x.json"] {
            assert_eq!(plan_process(other), None, "{other}");
        }
        assert!(is_apply_leftover(&name(reply_file(rd, "1-2"))));
        assert!(is_apply_leftover(&name(request_tmp_file(rd, "1-2"))));
        assert!(!is_apply_leftover(&name(request_file(rd))));
        assert!(is_reply_file(&name(reply_file(rd, "1-2"))));
        assert_eq!(doc_process(&status_file(rd, "p")), Some("p"));
        assert_eq!(doc_process(&sequence_file(rd, "q")), Some("q"));
        assert_eq!(doc_process(&ofile_marker(rd, Path::new("/tmp/x"))), None);
        let a = ipc_socket_file(Path::new("/r/"), "n-out-e0");
        assert_eq!(a, PathBuf::from("/r//n-out-e0.ipc"));
        // A directory with a plan, or the supervisor's files, is a run's.
        assert!(!looks_like_run_dir(rd));
        std::fs::write(plan_file(rd, "p"), "{}").unwrap();
        assert!(looks_like_run_dir(rd));
        assert_eq!(plan_files(rd), [plan_file(rd, "p")]);
        let other = tempfile::tempdir().unwrap();
        std::fs::write(lock_path(other.path()), "4242\n").unwrap();
        assert!(looks_like_run_dir(other.path()));
        assert_eq!(supervisor_pid(other.path()), Some(4242));
        assert_eq!(supervisor_pid(rd), None);
    }

    /// A run directory is one part; a directory of run directories is one
    /// part per host, in name order, its other entries passed over; a
    /// directory of neither is itself, holding nothing.
    #[test]
    fn parts_are_run_directories_side_by_side() {
        let d = tempfile::tempdir().unwrap();
        let top = d.path();
        let lone = |dir: &Path| {
            vec![PartDir {
                host: None,
                dir: dir.to_path_buf(),
            }]
        };
        assert_eq!(part_dirs(top), lone(top));
        for h in ["b", "a"] {
            std::fs::create_dir(top.join(h)).unwrap();
            std::fs::write(plan_file(&top.join(h), "p"), "{}").unwrap();
        }
        std::fs::create_dir(top.join("other")).unwrap();
        std::fs::write(top.join("c"), "").unwrap();
        let hosts: Vec<(Option<String>, PathBuf)> = part_dirs(top)
            .into_iter()
            .map(|p| (p.host, p.dir))
            .collect();
        assert_eq!(
            hosts,
            [
                (Some("a".to_string()), top.join("a")),
                (Some("b".to_string()), top.join("b"))
            ]
        );
        assert_eq!(part_dirs(&top.join("a")), lone(&top.join("a")));
    }
}
