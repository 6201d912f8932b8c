//! A process at its limit of open files, and the sockets it listens on.
//!
//! libzmq 4.3's listener tries a failed accept(2) again at once: when the
//! process may open no more files (EMFILE, `ulimit -n`), a connection
//! waiting to be accepted keeps libzmq's I/O thread spinning a whole core
//! until a descriptor frees, and the client that made it waits unseen.
//!
//! ptmp watches the listening sockets its sockets bind (tcp and ipc) from
//! one thread per process. A connection still waiting a few milliseconds
//! after it came, while the process cannot open one more file, makes the
//! thread back off for that listener: it takes the listener out of
//! libzmq's poll set (the entry the kernel shows for it in
//! `/proc/self/fdinfo` of libzmq's epoll, with the same data, its events
//! cleared) and puts it back once a descriptor is free, checked every
//! 100 ms. Meanwhile the connections wait in the kernel's queue, as a
//! full listen queue makes them, and are accepted when there is room. The
//! pause is counted ([`paused`]) and said, at most once per 10 s, through
//! the notice ([`set_notice`]; standard error by default). Nothing here
//! runs per message: the thread sleeps in poll(2) until a connection comes.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long a connection may wait for libzmq's own accept before the
/// process is checked for being at its limit.
const GRACE: Duration = Duration::from_millis(5);

/// How often a paused listener is checked for a free descriptor.
const BACK_OFF: Duration = Duration::from_millis(100);

/// A listener taken out of libzmq's poll set: where, and what to put back.
#[derive(Clone, Copy)]
struct Paused {
    epfd: RawFd,
    events: u32,
    data: u64,
    since: Instant,
}

/// One watched listening socket: libzmq's descriptor (not ours to close),
/// its inode and the endpoint it was bound at.
struct Entry {
    id: u64,
    fd: RawFd,
    ino: u64,
    endpoint: String,
    /// Its entry in libzmq's epoll set (descriptor, events, data), once
    /// seen with its events on.
    poller: Option<(RawFd, u32, u64)>,
    /// Lookups of `poller` left (each reads /proc): a listener whose entry
    /// cannot be found is not looked for for ever.
    lookups: u8,
    paused: Option<Paused>,
}

/// The watched listeners. An entry is removed (under this lock, its
/// listener put back first) before its socket is closed, so the thread
/// never touches a reused number.
static LISTENERS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

static PAUSES: AtomicU64 = AtomicU64::new(0);
static NOTICE: OnceLock<fn(&str)> = OnceLock::new();

/// How many times so far a listener of this process was paused because
/// the process was at its limit of open files.
pub fn paused() -> u64 {
    PAUSES.load(Ordering::Relaxed)
}

/// Where the notice of pauses goes (a front end's log); standard error
/// when none is set. The first call wins; `false` after that.
pub fn set_notice(f: fn(&str)) -> bool {
    NOTICE.set(f).is_ok()
}

fn notice(text: &str) {
    match NOTICE.get() {
        Some(f) => f(text),
        None => eprintln!("{text}"),
    }
}

/// Raise this process's soft limit of open files to its hard limit (a
/// program's choice; the library does not do it by itself). Returns the
/// limit in force after.
pub fn raise_open_file_limit() -> u64 {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) != 0 {
            return 0;
        }
        if l.rlim_cur < l.rlim_max {
            let want = libc::rlimit {
                rlim_cur: l.rlim_max,
                rlim_max: l.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
                l.rlim_cur = l.rlim_max;
            }
        }
    }
    l.rlim_cur
}

fn soft_limit() -> u64 {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct we pass.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) };
    l.rlim_cur
}

/// A listener being watched; dropping it ends the watch (before the
/// socket that owns the descriptor closes), putting the listener back
/// into libzmq's poll set if it was paused.
pub(crate) struct Guarded(u64);

impl Drop for Guarded {
    fn drop(&mut self) {
        let mut l = LISTENERS.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = l.iter_mut().find(|e| e.id == self.0) {
            resume(e);
        }
        l.retain(|e| e.id != self.0);
    }
}

/// Watch the listening socket a ZeroMQ socket bound at `endpoint` (its
/// last endpoint: `tcp://ADDR:PORT` or `ipc://PATH`); `None` for other
/// transports or when the descriptor cannot be found.
pub(crate) fn guard(endpoint: &str) -> Option<Guarded> {
    let fd = find_listener(endpoint)?;
    let ino = inode(fd)?;
    // libzmq's I/O thread puts the listener into its poll set just after
    // the bind: wait for that (a few milliseconds at most), so it is known
    // before any connection can bring the process to its limit.
    let mut poller = None;
    for _ in 0..50 {
        poller = find_poller(fd, ino).filter(|p| p.1 & libc::EPOLLIN as u32 != 0);
        if poller.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    static THREAD: OnceLock<bool> = OnceLock::new();
    let started = *THREAD.get_or_init(|| {
        std::thread::Builder::new()
            .name("ptmp-fd-guard".into())
            .spawn(watch)
            .is_ok()
    });
    if !started {
        return None;
    }
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    LISTENERS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Entry {
            id,
            fd,
            ino,
            endpoint: endpoint.to_string(),
            poller,
            lookups: 20,
            paused: None,
        });
    Some(Guarded(id))
}

/// What a bound endpoint's listening socket looks like from getsockname.
enum Local {
    Ip(std::net::SocketAddr),
    Path(Vec<u8>),
}

fn parse_local(endpoint: &str) -> Option<Local> {
    if let Some(a) = endpoint.strip_prefix("tcp://") {
        return a.parse().ok().map(Local::Ip);
    }
    let p = endpoint.strip_prefix("ipc://")?;
    (!p.is_empty() && !p.starts_with('@')).then(|| Local::Path(p.as_bytes().to_vec()))
}

/// The descriptor of this process's listening socket bound at `endpoint`.
fn find_listener(endpoint: &str) -> Option<RawFd> {
    let want = parse_local(endpoint)?;
    let dir = std::fs::read_dir("/proc/self/fd").ok()?;
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<RawFd>().ok())
        .find(|&fd| is_listener_at(fd, &want))
}

fn is_listener_at(fd: RawFd, want: &Local) -> bool {
    let mut on: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt and getsockname only write into the buffers we
    // pass, sized as we say; on a descriptor that is not a socket (or was
    // closed meanwhile) they fail and we answer false.
    unsafe {
        if libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ACCEPTCONN,
            (&mut on as *mut libc::c_int).cast(),
            &mut len,
        ) != 0
            || on == 0
        {
            return false;
        }
        let mut ss: libc::sockaddr_storage = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        if libc::getsockname(
            fd,
            (&mut ss as *mut libc::sockaddr_storage).cast(),
            &mut len,
        ) != 0
        {
            return false;
        }
        match (i32::from(ss.ss_family), want) {
            (libc::AF_INET, Local::Ip(std::net::SocketAddr::V4(w))) => {
                let a = &*(&ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>();
                u16::from_be(a.sin_port) == w.port()
                    && u32::from_be(a.sin_addr.s_addr) == u32::from(*w.ip())
            }
            (libc::AF_INET6, Local::Ip(std::net::SocketAddr::V6(w))) => {
                let a = &*(&ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>();
                u16::from_be(a.sin6_port) == w.port() && a.sin6_addr.s6_addr == w.ip().octets()
            }
            (libc::AF_UNIX, Local::Path(p)) => {
                let a = &*(&ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_un>();
                let path: Vec<u8> = a
                    .sun_path
                    .iter()
                    .take_while(|&&c| c != 0)
                    .map(|&c| c as u8)
                    .collect();
                path == *p
            }
            _ => false,
        }
    }
}

fn inode(fd: RawFd) -> Option<u64> {
    // SAFETY: fstat writes the struct we pass.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(fd, &mut st) == 0).then_some(st.st_ino)
    }
}

/// Whether this process can open no more files right now (a copy of
/// `fd` cannot be made).
fn at_limit(fd: RawFd) -> bool {
    // SAFETY: duplicates a descriptor that is open (its entry is held);
    // the copy, if any, is closed at once.
    unsafe {
        let d = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0);
        if d >= 0 {
            libc::close(d);
            return false;
        }
    }
    std::io::Error::last_os_error().raw_os_error() == Some(libc::EMFILE)
}

/// The epoll set holding listener `fd` (inode `ino`): its descriptor, and
/// the events and data registered, from `/proc/self/fdinfo`. Reading it
/// takes descriptors: called only while the process is below its limit.
fn find_poller(fd: RawFd, ino: u64) -> Option<(RawFd, u32, u64)> {
    for d in std::fs::read_dir("/proc/self/fd").ok()?.flatten() {
        let Ok(link) = std::fs::read_link(d.path()) else {
            continue;
        };
        if link.as_os_str() != "anon_inode:[eventpoll]" {
            continue;
        }
        let Some(epfd) = d.file_name().to_str().and_then(|n| n.parse::<RawFd>().ok()) else {
            continue;
        };
        let Ok(info) = std::fs::read_to_string(format!("/proc/self/fdinfo/{epfd}")) else {
            continue;
        };
        if let Some(found) = info.lines().find_map(|l| registered(l, fd, ino)) {
            return Some((epfd, found.0, found.1));
        }
    }
    None
}

/// One `tfd:` line of an epoll's fdinfo, if it registers `fd` of inode
/// `ino`: its events and data (the kernel writes them in hex).
fn registered(line: &str, fd: RawFd, ino: u64) -> Option<(u32, u64)> {
    let w: Vec<&str> = line.split_whitespace().collect();
    if w.first() != Some(&"tfd:") || w.get(1)?.parse::<RawFd>().ok()? != fd {
        return None;
    }
    let after = |key: &str| w.iter().position(|x| *x == key).and_then(|i| w.get(i + 1));
    let events = u32::from_str_radix(after("events:")?, 16).ok()?;
    let data = u64::from_str_radix(after("data:")?, 16).ok()?;
    let i = w.iter().find_map(|x| x.strip_prefix("ino:"))?;
    (u64::from_str_radix(i, 16).ok()? == ino).then_some((events, data))
}

/// Set the events of `fd` in epoll set `epfd`, keeping its data.
fn modify(epfd: RawFd, fd: RawFd, events: u32, data: u64) -> bool {
    let mut ev = libc::epoll_event { events, u64: data };
    // SAFETY: epoll_ctl reads the event we pass; `fd` is registered there
    // (its entry is held, so its socket is open).
    unsafe { libc::epoll_ctl(epfd, libc::EPOLL_CTL_MOD, fd, &mut ev) == 0 }
}

/// Put a paused listener back into its poll set.
fn resume(e: &mut Entry) {
    if let Some(p) = e.paused.take() {
        modify(p.epfd, e.fd, p.events, p.data);
    }
}

/// Take listener `e` out of libzmq's poll set (known from its entry).
fn pause(e: &mut Entry) -> bool {
    let Some((epfd, events, data)) = e.poller else {
        return false;
    };
    if !modify(epfd, e.fd, 0, data) {
        return false;
    }
    e.paused = Some(Paused {
        epfd,
        events,
        data,
        since: Instant::now(),
    });
    PAUSES.fetch_add(1, Ordering::Relaxed);
    true
}

/// The watching thread: sleeps in poll until a listener has a connection
/// waiting; when one still waits after [`GRACE`] and the process is at its
/// limit, pauses that listener; every [`BACK_OFF`], puts paused ones back
/// when a descriptor is free. Where each listener sits in libzmq's poll
/// set is read from /proc while descriptors are free, soon after it is
/// watched (libzmq's I/O thread registers it just after the bind).
fn watch() {
    let mut last_notice: Option<Instant> = None;
    loop {
        let mut fds: Vec<libc::pollfd> = LISTENERS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|e| e.paused.is_none())
            .map(|e| libc::pollfd {
                fd: e.fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: poll reads and writes the array we pass, of the length
        // we pass. A descriptor closed meanwhile reports POLLNVAL.
        let n = unsafe {
            libc::poll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                BACK_OFF.as_millis() as i32,
            )
        };
        if n > 0 {
            std::thread::sleep(GRACE);
        }
        let waiting: Vec<RawFd> = fds
            .iter()
            .filter(|p| p.revents & libc::POLLIN != 0)
            .map(|p| p.fd)
            .collect();
        let mut l = LISTENERS.lock().unwrap_or_else(|p| p.into_inner());
        for e in l.iter_mut() {
            if let Some(p) = e.paused {
                if p.since.elapsed() >= BACK_OFF && !at_limit(e.fd) {
                    resume(e);
                }
                continue;
            }
            if e.poller.is_none() && e.lookups > 0 && !at_limit(e.fd) {
                e.lookups -= 1;
                e.poller = find_poller(e.fd, e.ino).filter(|p| p.1 & libc::EPOLLIN as u32 != 0);
            }
            if !waiting.contains(&e.fd) || !at_limit(e.fd) {
                continue;
            }
            let paused = pause(e);
            if last_notice.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
                last_notice = Some(Instant::now());
                let what = if paused {
                    "accepting there is paused until one is free (connections wait in the queue)"
                } else {
                    "libzmq retries its accept at once until one is free"
                };
                notice(&format!(
                    "ptmp: this process has open all {} files it may (ulimit -n) and cannot \
                     accept a connection to {}: {what}; raise the limit or close idle \
                     connections",
                    soft_limit(),
                    e.endpoint,
                ));
            }
        }
        drop(l);
        if n > 0 {
            std::thread::sleep(GRACE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_listener_is_found_by_its_endpoint() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let at = format!("tcp://{}", l.local_addr().unwrap());
        use std::os::fd::AsRawFd;
        assert_eq!(find_listener(&at), Some(l.as_raw_fd()));
        assert_eq!(find_listener("tcp://127.0.0.1:1"), None);
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s");
        let u = std::os::unix::net::UnixListener::bind(&p).unwrap();
        let at = format!("ipc://{}", p.display());
        assert_eq!(find_listener(&at), Some(u.as_raw_fd()));
        assert!(parse_local("inproc://x").is_none());
        assert!(!at_limit(u.as_raw_fd()));
    }

    #[test]
    fn an_epoll_entry_is_read_from_its_fdinfo_line() {
        let line = "tfd:       13 events:       19 data:     55d5c9a0b8e0  pos:0 ino:3fe sdev:8";
        assert_eq!(registered(line, 13, 0x3fe), Some((0x19, 0x55d5_c9a0_b8e0)));
        assert_eq!(registered(line, 13, 0x3ff), None, "another file");
        assert_eq!(registered(line, 12, 0x3fe), None, "another descriptor");
        assert_eq!(registered("pos:\t0", 13, 0x3fe), None);
    }
}
