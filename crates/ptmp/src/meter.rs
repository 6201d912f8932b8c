//! Live counters of every [`Sender`](crate::Sender) and
//! [`Receiver`](crate::Receiver) in this process, for status files,
//! monitors and metrics.
//!
//! Each socket owns one [`SocketCounters`], registered in a process-wide
//! list when the socket is made (the only allocation) and read from other
//! threads with [`snapshot`]. The owning socket is the only writer, so an
//! increment is a relaxed load and store, not a locked read-modify-write:
//! no system call, no allocation, no contended cache line. Latency (now
//! minus a TPSet's `created`, both in microseconds since the epoch) is
//! sampled into a histogram of power-of-two buckets, about once every
//! [`LATENCY_SAMPLE_US`] on a busy socket: every message while they come
//! slower than that, one in up to [`LATENCY_STRIDE_MAX`] when they come
//! faster. The clock is read only for a sample, so a fast stream pays for
//! a thousand clock reads a second, not one per message or per sixteen,
//! and a slow one still has a sample of each message. A sender also
//! counts its stalls: sends that found the queue full (a zmq PUSH or PAIR
//! at its high-water mark, or with no peer yet; an shm:// PUSH whose
//! slowest reader is a whole ring behind, or which waits for its first
//! reader) and had to wait. An shm:// sender also counts the durable
//! readers its ring gave up (see [`Snapshot::readers_given_up`]). Both
//! change only where a send waits, never on a send that finds room.
//!
//! Built with the `no-counters` feature of this crate, every counting call
//! compiles to nothing ([`ENABLED`] is false): sockets still register, so
//! monitors see them, but their figures stay zero. It exists so the cost
//! of the counters can be measured against a build without them.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// Whether this build counts (false when built with the `no-counters`
/// feature, where every figure stays zero).
pub const ENABLED: bool = !cfg!(feature = "no-counters");

/// The time aimed at between two latency samples of a busy socket,
/// microseconds: the stride between samples doubles while they come
/// closer than half of it and halves while they are more than twice it
/// apart.
pub const LATENCY_SAMPLE_US: i64 = 1000;

/// At most this many received messages pass between two latency samples.
pub const LATENCY_STRIDE_MAX: u64 = 1024;

/// Buckets of the latency histogram: bucket `k` counts latencies below
/// `2^k` microseconds (and at least `2^(k-1)`); the last takes the rest.
pub const LATENCY_BUCKETS: usize = 40;

/// Whether a socket sends or receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// A [`Sender`](crate::Sender).
    Send,
    /// A [`Receiver`](crate::Receiver).
    Recv,
}

impl Dir {
    /// `"send"` or `"recv"`.
    pub fn name(self) -> &'static str {
        match self {
            Dir::Send => "send",
            Dir::Recv => "recv",
        }
    }
}

/// The counters of one socket, written by its owner only.
// In declaration order, so the three a message touches share a cache line.
#[derive(Debug)]
#[repr(C)]
pub struct SocketCounters {
    messages: AtomicU64,
    bytes: AtomicU64,
    /// The message count at which the next latency sample is due.
    next_sample: AtomicU64,
    /// Messages between samples, from 1 to [`LATENCY_STRIDE_MAX`].
    stride: AtomicU64,
    /// When the last sample was taken, microseconds since the epoch.
    last_sample_us: AtomicI64,
    id: u64,
    dir: Dir,
    endpoints: Vec<String>,
    errors: AtomicU64,
    lost: AtomicU64,
    stalls: AtomicU64,
    readers_given_up: AtomicU64,
    lat: [AtomicU64; LATENCY_BUCKETS],
    lat_max: AtomicU64,
    /// A CURVE server's admission counts, kept by its ZAP handler.
    curve: std::sync::OnceLock<Arc<crate::curve::Admitted>>,
}

#[inline]
fn bump(a: &AtomicU64, n: u64) {
    // A constant: without counters every call folds away.
    if !ENABLED {
        return;
    }
    a.store(a.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

impl SocketCounters {
    /// Count one message of `bytes` bytes.
    #[inline]
    pub(crate) fn add(&self, bytes: usize) {
        bump(&self.messages, 1);
        bump(&self.bytes, bytes as u64);
    }
    /// Count one malformed message.
    #[inline]
    pub(crate) fn add_error(&self) {
        bump(&self.errors, 1);
    }
    /// Count one send that found the queue full and had to wait.
    #[inline]
    pub(crate) fn add_stall(&self) {
        bump(&self.stalls, 1);
    }
    /// Count `n` more durable readers given up by the sender's ring.
    #[inline]
    pub(crate) fn add_readers_given_up(&self, n: u64) {
        bump(&self.readers_given_up, n);
    }
    /// Report the admission counts of this socket, a CURVE server.
    pub(crate) fn watch_curve(&self, counts: Arc<crate::curve::Admitted>) {
        let _ = self.curve.set(counts);
    }
    /// Whether the message just counted is one whose latency is sampled.
    #[inline]
    pub(crate) fn sample_due(&self) -> bool {
        ENABLED && self.messages.load(Ordering::Relaxed) >= self.next_sample.load(Ordering::Relaxed)
    }
    /// Record the latency of a message created at `created` (microseconds
    /// since the epoch) and the receiver's lost count so far.
    #[cold]
    pub(crate) fn sample(&self, created: i64, lost: u64) {
        if ENABLED {
            self.sample_at(now_us(), created, lost);
        }
    }
    /// [`Self::sample`] at time `now`; also sets when the next is due.
    fn sample_at(&self, now: i64, created: i64, lost: u64) {
        let since = now.saturating_sub(self.last_sample_us.load(Ordering::Relaxed));
        let stride = self.stride.load(Ordering::Relaxed);
        let stride = if since < LATENCY_SAMPLE_US / 2 {
            (stride * 2).min(LATENCY_STRIDE_MAX)
        } else if since > LATENCY_SAMPLE_US * 2 {
            (stride / 2).max(1)
        } else {
            stride
        };
        self.stride.store(stride, Ordering::Relaxed);
        self.last_sample_us.store(now, Ordering::Relaxed);
        let m = self.messages.load(Ordering::Relaxed);
        self.next_sample.store(m + stride, Ordering::Relaxed);
        self.lost.store(lost, Ordering::Relaxed);
        let lat = now.saturating_sub(created).max(0) as u64;
        let k = ((64 - lat.leading_zeros()) as usize).min(LATENCY_BUCKETS - 1);
        bump(&self.lat[k], 1);
        if lat > self.lat_max.load(Ordering::Relaxed) {
            self.lat_max.store(lat, Ordering::Relaxed);
        }
    }
}

/// What [`snapshot`] reads of one socket.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// A number unique to the socket within this process (two sockets may
    /// share direction and endpoints).
    pub id: u64,
    /// Sending or receiving.
    pub dir: Dir,
    /// The socket's configured endpoints (bind and connect), as written.
    pub endpoints: Vec<String>,
    /// Messages sent or received so far.
    pub messages: u64,
    /// Bytes of those messages: both frames, as a zmq socket sends them,
    /// over every transport (over shm:// the sender counts what it wrote
    /// and the receiver the frames it decoded, without the ring's framing).
    pub bytes: u64,
    /// Malformed messages received and skipped.
    pub errors: u64,
    /// Messages known lost before they could be received (shm overruns).
    pub lost: u64,
    /// Sends that found the queue full (or no peer yet) and had to wait,
    /// each counted once however long it waited: a zmq PUSH or PAIR
    /// sender at its high-water mark, an shm:// PUSH whose ring was full
    /// (its slowest reader a whole ring behind, or no reader yet come for
    /// a ring of messages). Zero for a receiver and a PUB (which drops, or
    /// over shm:// overwrites, instead of waiting).
    pub stalls: u64,
    /// shm:// PUSH senders only: durable readers (receivers with an
    /// identity in the ring) whose process died and did not come back
    /// within their grace time, so the ring stopped keeping their place
    /// and went on without them. Messages they miss are counted as lost by
    /// their successor, if one comes. Zero for every other socket.
    pub readers_given_up: u64,
    /// Sampled latencies per bucket, cumulative (see [`LATENCY_BUCKETS`]).
    pub latency: [u64; LATENCY_BUCKETS],
    /// The largest sampled latency since the last [`snapshot`] with
    /// `reset_max`, microseconds.
    pub latency_max_us: u64,
    /// A CURVE server only (`None` for every other socket): clients
    /// admitted and refused by its allow-list so far.
    pub curve: Option<(u64, u64)>,
}

fn registry() -> &'static Mutex<Vec<Weak<SocketCounters>>> {
    static R: Mutex<Vec<Weak<SocketCounters>>> = Mutex::new(Vec::new());
    &R
}

/// Make and register the counters of a new socket.
pub(crate) fn register(dir: Dir, endpoints: Vec<String>) -> Arc<SocketCounters> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let c = Arc::new(SocketCounters {
        id: NEXT.fetch_add(1, Ordering::Relaxed),
        dir,
        endpoints,
        messages: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        // The first message is sampled.
        next_sample: AtomicU64::new(1),
        stride: AtomicU64::new(1),
        last_sample_us: AtomicI64::new(0),
        errors: AtomicU64::new(0),
        lost: AtomicU64::new(0),
        stalls: AtomicU64::new(0),
        readers_given_up: AtomicU64::new(0),
        lat: std::array::from_fn(|_| AtomicU64::new(0)),
        lat_max: AtomicU64::new(0),
        curve: std::sync::OnceLock::new(),
    });
    let mut r = registry().lock().unwrap_or_else(|p| p.into_inner());
    r.retain(|w| w.strong_count() > 0);
    r.push(Arc::downgrade(&c));
    c
}

/// Every live socket's counters in this process, in creation order. With
/// `reset_max` the latency maxima start again from zero (the reader that
/// reports "max over the last interval" asks for it).
pub fn snapshot(reset_max: bool) -> Vec<Snapshot> {
    let r = registry().lock().unwrap_or_else(|p| p.into_inner());
    r.iter()
        .filter_map(Weak::upgrade)
        .map(|c| c.snapshot(reset_max))
        .collect()
}

/// How many closed sockets' last counts [`take_closed`] can give back; the
/// oldest are forgotten first.
pub const CLOSED_KEPT: usize = 256;

fn closed() -> &'static Mutex<VecDeque<Snapshot>> {
    static C: Mutex<VecDeque<Snapshot>> = Mutex::new(VecDeque::new());
    &C
}

/// The last counts of the sockets closed in this process since the last
/// call (at most [`CLOSED_KEPT`], in the order they closed): a process
/// whose agents have ended still says what each socket carried.
pub fn take_closed() -> Vec<Snapshot> {
    let mut c = closed().lock().unwrap_or_else(|p| p.into_inner());
    c.drain(..).collect()
}

impl SocketCounters {
    fn snapshot(&self, reset_max: bool) -> Snapshot {
        Snapshot {
            id: self.id,
            dir: self.dir,
            endpoints: self.endpoints.clone(),
            messages: self.messages.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            lost: self.lost.load(Ordering::Relaxed),
            stalls: self.stalls.load(Ordering::Relaxed),
            readers_given_up: self.readers_given_up.load(Ordering::Relaxed),
            latency: std::array::from_fn(|k| self.lat[k].load(Ordering::Relaxed)),
            latency_max_us: if reset_max {
                self.lat_max.swap(0, Ordering::Relaxed)
            } else {
                self.lat_max.load(Ordering::Relaxed)
            },
            curve: self.curve.get().map(|a| a.counts()),
        }
    }
}

impl Drop for SocketCounters {
    fn drop(&mut self) {
        let last = self.snapshot(false);
        let mut c = closed().lock().unwrap_or_else(|p| p.into_inner());
        if c.len() == CLOSED_KEPT {
            c.pop_front();
        }
        c.push_back(last);
    }
}

/// The latency below which fraction `q` of the samples in `hist` fall,
/// as the upper edge of its bucket in microseconds; `None` with no samples.
pub fn quantile_us(hist: &[u64], q: f64) -> Option<u64> {
    let total: u64 = hist.iter().sum();
    if total == 0 {
        return None;
    }
    let want = ((total as f64) * q).ceil().max(1.0) as u64;
    let mut acc = 0;
    for (k, n) in hist.iter().enumerate() {
        acc += n;
        if acc >= want {
            return Some(if k == 0 { 0 } else { 1u64 << k });
        }
    }
    Some(1u64 << (hist.len() - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A closed socket leaves the live list and its last counts are given
    /// back once by `take_closed`.
    #[test]
    fn a_closed_socket_keeps_its_last_counts() {
        let ep = vec!["inproc://meter-closed-test".to_string()];
        let c = register(Dir::Send, ep.clone());
        c.add(7);
        c.add(5);
        let id = c.id;
        drop(c);
        assert!(!snapshot(false).iter().any(|s| s.id == id));
        let mine = |v: Vec<Snapshot>| v.into_iter().filter(|s| s.id == id).collect::<Vec<_>>();
        let last = mine(take_closed());
        assert_eq!(last.len(), 1);
        assert_eq!(last[0].endpoints, ep);
        let want = if ENABLED { (2, 12) } else { (0, 0) };
        assert_eq!((last[0].messages, last[0].bytes), want);
        assert!(mine(take_closed()).is_empty());
    }

    #[test]
    fn counts_and_quantiles() {
        let c = register(Dir::Recv, vec!["inproc://meter-test".into()]);
        for _ in 0..3 {
            c.add(10);
        }
        c.add_error();
        c.add_stall();
        c.add_readers_given_up(1);
        let now = now_us();
        c.sample(now - 100, 2);
        c.sample(now - 5000, 2);
        let s = snapshot(true)
            .into_iter()
            .find(|s| s.endpoints == ["inproc://meter-test"])
            .expect("registered");
        if !ENABLED {
            // Built without counters: registered, every figure zero.
            assert_eq!(
                (s.messages, s.bytes, s.errors, s.lost, s.stalls),
                (0, 0, 0, 0, 0)
            );
            assert_eq!(s.readers_given_up, 0);
            assert_eq!(s.latency_max_us, 0);
            return;
        }
        assert_eq!(
            (s.messages, s.bytes, s.errors, s.lost, s.stalls),
            (3, 30, 1, 2, 1)
        );
        assert_eq!(s.readers_given_up, 1);
        assert!(s.latency_max_us >= 5000);
        // 100 us falls in the bucket below 128, 5000 in the one below 8192.
        assert_eq!(quantile_us(&s.latency, 0.5), Some(128));
        assert_eq!(quantile_us(&s.latency, 0.99), Some(8192));
        assert_eq!(quantile_us(&[0; 4], 0.5), None);
        drop(c);
        assert!(snapshot(false)
            .iter()
            .all(|s| s.endpoints != ["inproc://meter-test"]));
    }

    /// Samples closer than the aim make the stride grow, up to its
    /// maximum; samples far apart make it shrink, down to every message.
    #[test]
    #[cfg_attr(feature = "no-counters", ignore = "built without counters")]
    fn sampling_follows_the_rate() {
        let c = register(Dir::Recv, vec!["inproc://meter-stride".into()]);
        c.add(1);
        assert!(c.sample_due(), "the first message is sampled");
        // A fast stream: every sample 10 us after the last.
        let mut now = 1_000_000_000;
        let mut strides = vec![];
        for _ in 0..14 {
            while !c.sample_due() {
                c.add(1);
            }
            now += 10;
            c.sample_at(now, now - 5, 0);
            strides.push(c.stride.load(Ordering::Relaxed));
            c.add(1);
        }
        assert_eq!(
            strides,
            [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 1024, 1024, 1024]
        );
        // Then 10 ms apart: back to every message.
        for _ in 0..12 {
            while !c.sample_due() {
                c.add(1);
            }
            now += 10_000;
            c.sample_at(now, now - 5, 0);
        }
        assert_eq!(c.stride.load(Ordering::Relaxed), 1);
        c.add(1);
        assert!(c.sample_due());
        // About the aim apart: the stride stays.
        now += LATENCY_SAMPLE_US;
        c.sample_at(now, now, 0);
        assert_eq!(c.stride.load(Ordering::Relaxed), 1);
        let s = snapshot(false)
            .into_iter()
            .find(|s| s.endpoints == ["inproc://meter-stride"])
            .expect("registered");
        assert_eq!(s.latency.iter().sum::<u64>(), 27, "every sample counted");
    }
}
