//! The HTTP side: one thread gathers the state each period into a
//! snapshot, another runs a single-threaded tokio runtime with hyper
//! serving requests from the latest snapshot.

use crate::host::{Names, Refused};
use crate::limits::{self, Admit, Counters, Gate, Place, Watched, WriteWatch};
use crate::state::{Following, Gather, History, NextGraph};
use crate::{prom, Error, Options};
use bytes::Bytes;
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderValue, ALLOW, CACHE_CONTROL, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use ptmp_graph::plan::Plan;
use ptmp_graph::Graph;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::{watch, Notify};
use tokio_stream::wrappers::WatchStream;
use tokio_stream::StreamExt;

const INDEX_HTML: &str = include_str!("web/index.html");
const APP_JS: &str = include_str!("web/app.js");
const STYLE_CSS: &str = include_str!("web/style.css");

/// The largest request head accepted (hyper answers 431 beyond it).
const MAX_HEAD: usize = 16 * 1024;

/// The most time a connection on a reserved place has for its request
/// head.
const RESERVED_HEAD: Duration = Duration::from_secs(2);

/// What every request is answered from, replaced once per period.
#[derive(Default)]
struct Snapshot {
    /// The state without history, as sent in each event.
    state: Bytes,
    /// The state with history (`/api/state`).
    full: Bytes,
    /// The Prometheus text.
    metrics: Bytes,
}

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// A running monitor; dropping it stops the server and its threads.
pub struct Monitor {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    shutdown: Arc<Notify>,
    threads: Vec<JoinHandle<()>>,
    /// Where a graph run's new shape goes (none for `ptmp run`).
    next: Option<NextGraph>,
}

impl Monitor {
    /// The address actually listened on (its port resolved when 0 was
    /// asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The watched graph was changed (by `ptmp graph apply`) into `g`,
    /// planned as `plan`, this being host `host` of it: from the next
    /// update on, the state shows its nodes and edges. Does nothing for a
    /// monitor of one process's agents.
    pub fn follow(&self, g: &Graph, plan: &Plan, host: usize) {
        if let Some(n) = &self.next {
            *n.lock().unwrap_or_else(|e| e.into_inner()) = Some((g.clone(), plan.clone(), host));
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.shutdown.notify_one();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn snapshot(c: &mut dyn Gather, h: &mut History) -> Snapshot {
    let (state, rows) = c.gather();
    h.record(&state);
    let metrics = prom::render(&state, &rows);
    let mut full = serde_json::to_value(&state).unwrap_or_default();
    let brief = serde_json::to_vec(&full).unwrap_or_default();
    full["history"] = h.to_json();
    Snapshot {
        state: Bytes::from(brief),
        full: Bytes::from(serde_json::to_vec(&full).unwrap_or_default()),
        metrics: Bytes::from(metrics),
    }
}

/// Start serving the state of graph `g` (planned as `plan`, this being
/// host `host` of it) as `opts` say. Fails at once when the address is
/// not loopback and remote clients were not allowed, or cannot be bound.
pub fn start(g: &Graph, plan: &Plan, host: usize, opts: &Options) -> Result<Monitor, Error> {
    let f = Following::new(g, plan, host);
    let next = f.next();
    let mut m = start_with(Box::new(f), opts)?;
    m.next = Some(next);
    Ok(m)
}

/// Start serving what `gather` says, as `opts` say (see [`start`]).
pub fn start_with(mut gather: Box<dyn Gather>, opts: &Options) -> Result<Monitor, Error> {
    if !opts.addr.ip().is_loopback() && !opts.allow_remote {
        return Err(Error::Remote(opts.addr));
    }
    let std_listener = std::net::TcpListener::bind(opts.addr).map_err(|err| Error::Bind {
        addr: opts.addr,
        err,
    })?;
    let addr = std_listener.local_addr().map_err(Error::Start)?;
    std_listener.set_nonblocking(true).map_err(Error::Start)?;
    let stop = Arc::new(AtomicBool::new(false));
    let shutdown = Arc::new(Notify::new());
    let mut hist = History::default();
    let (tx, rx) = watch::channel(Arc::new(snapshot(gather.as_mut(), &mut hist)));
    let period = opts.period;
    let stop2 = stop.clone();
    let gather = std::thread::Builder::new()
        .name("ptmp-monitor-state".into())
        .spawn(move || {
            let mut next = Instant::now() + period;
            while !stop2.load(Ordering::Relaxed) {
                let now = Instant::now();
                if now < next {
                    std::thread::sleep((next - now).min(Duration::from_millis(50)));
                    continue;
                }
                next += period;
                if next < now {
                    next = now + period;
                }
                tx.send_replace(Arc::new(snapshot(gather.as_mut(), &mut hist)));
            }
        })
        .map_err(Error::Start)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(Error::Start)?;
    let opts2 = opts.clone();
    let shutdown2 = shutdown.clone();
    let serve = std::thread::Builder::new()
        .name("ptmp-monitor-http".into())
        .spawn(move || {
            rt.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(std_listener) else {
                    return;
                };
                accept_loop(listener, rx, opts2, shutdown2).await;
            });
        });
    let serve = match serve {
        Ok(h) => h,
        Err(e) => {
            stop.store(true, Ordering::Relaxed);
            let _ = gather.join();
            return Err(Error::Start(e));
        }
    };
    Ok(Monitor {
        addr,
        stop,
        shutdown,
        threads: vec![gather, serve],
        next: None,
    })
}

/// What a connection's requests are answered with.
#[derive(Clone)]
struct Ctx {
    rx: watch::Receiver<Arc<Snapshot>>,
    counters: Arc<Counters>,
    /// Held on a reserved place: one short request, no event stream.
    reserved: bool,
    max_connections: usize,
    /// The token a client on another host must present for the data.
    token: Option<Arc<str>>,
    /// The client is on another host (not loopback).
    remote: bool,
    /// The names a request's `Host` may give.
    names: Arc<Names>,
    /// The address the connection came in on.
    local: IpAddr,
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    rx: watch::Receiver<Arc<Snapshot>>,
    opts: Options,
    shutdown: Arc<Notify>,
) {
    let gate = Gate::new(
        opts.max_connections,
        opts.reserved_connections,
        opts.max_per_peer,
    );
    let counters = Arc::new(Counters::default());
    let token: Option<Arc<str>> = opts.token.as_deref().map(Arc::from);
    let names = Arc::new(Names::new(opts.addr.ip(), &opts.host_names));
    let lingering = limits::lingering();
    let t0 = Instant::now();
    loop {
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(c) => c,
                // Out of descriptors and the like: wait a little, go on.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.notified() => return,
        };
        let (place, reserved) = match gate.admit(peer.ip()) {
            Admit::General(p) => (p, false),
            Admit::Reserved(p) => (p, true),
            Admit::Full => {
                counters.refused_full.fetch_add(1, Ordering::Relaxed);
                let why = format!(
                    "the monitor is full: all {} connections are taken; try again shortly\n",
                    opts.max_connections + opts.reserved_connections
                );
                limits::refuse(stream, why, &lingering);
                continue;
            }
            Admit::Peer(n) => {
                counters.refused_peer.fetch_add(1, Ordering::Relaxed);
                let why = format!(
                    "too many connections from {}: it holds {n}, at most {} per address\n",
                    peer.ip().to_canonical(),
                    opts.max_per_peer
                );
                limits::refuse(stream, why, &lingering);
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        // A small send buffer: what a client that stopped reading can have
        // queued is bounded, and its writes block soon, which is how it is
        // found (the kernel would otherwise grow the buffer to megabytes).
        let _ = socket2::SockRef::from(&stream).set_send_buffer_size(opts.send_buffer);
        let ctx = Ctx {
            rx: rx.clone(),
            counters: counters.clone(),
            reserved,
            max_connections: opts.max_connections,
            token: token.clone(),
            remote: !peer.ip().to_canonical().is_loopback(),
            names: names.clone(),
            local: stream.local_addr().map_or(opts.addr.ip(), |a| a.ip()),
        };
        tokio::spawn(serve(stream, place, ctx, opts.clone(), t0));
    }
}

/// Serve one connection until it ends or is closed for being slow.
async fn serve(stream: tokio::net::TcpStream, place: Place, ctx: Ctx, opts: Options, t0: Instant) {
    let _place = place;
    let counters = ctx.counters.clone();
    counters.open.fetch_add(1, Ordering::Relaxed);
    let reserved = ctx.reserved;
    let watch = Arc::new(WriteWatch::new(t0));
    let w2 = watch.clone();
    let svc = service_fn(move |req| {
        w2.request();
        let r = respond(&req, &ctx);
        async move { Ok::<_, Infallible>(r) }
    });
    // A reserved place is for a request ready to go: less time for it.
    let head_timeout = if reserved {
        opts.header_timeout.min(RESERVED_HEAD)
    } else {
        opts.header_timeout
    };
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(head_timeout)
        .max_buf_size(MAX_HEAD)
        .keep_alive(!reserved)
        .serve_connection(
            TokioIo::new(Watched {
                inner: stream,
                watch: watch.clone(),
            }),
            svc,
        );
    tokio::pin!(conn);
    let idle = opts.idle_timeout.as_millis() as u64;
    let stall = opts.write_timeout.as_millis() as u64;
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tokio::select! {
            r = &mut conn => {
                if r.is_err_and(|e| e.is_timeout()) {
                    // After a request, the wait for the next head is a
                    // kept-alive connection's idle time.
                    if watch.requests.load(Ordering::Relaxed) == 0 {
                        counters.closed_head.fetch_add(1, Ordering::Relaxed);
                    } else {
                        counters.closed_idle.fetch_add(1, Ordering::Relaxed);
                    }
                }
                break;
            }
            _ = tick.tick() => {
                // Dropping the connection closes its socket.
                if watch.blocked_ms() > stall {
                    counters.closed_stalled.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                if watch.idle_ms() > idle {
                    counters.closed_idle.fetch_add(1, Ordering::Relaxed);
                    break;
                }
            }
        }
    }
    counters.open.fetch_sub(1, Ordering::Relaxed);
}

fn full(status: StatusCode, ctype: &'static str, body: Bytes) -> Response<Body> {
    let mut r = Response::new(Full::new(body).boxed_unsync());
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    // The page loads nothing from elsewhere and is framed by nobody.
    h.insert(
        "content-security-policy",
        HeaderValue::from_static(
            "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
        ),
    );
    r
}

fn respond(req: &Request<Incoming>, ctx: &Ctx) -> Response<Body> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = full(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            Bytes::from_static(b"only GET and HEAD\n"),
        );
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    if let Err(r) = ctx.names.check(req, ctx.local) {
        ctx.counters.refused_host.fetch_add(1, Ordering::Relaxed);
        return misdirected(r);
    }
    let path = req.uri().path();
    let data = matches!(path, "/api/state" | "/metrics" | "/events");
    if data && ctx.remote && !authorized(req, ctx.token.as_deref()) {
        ctx.counters.refused_token.fetch_add(1, Ordering::Relaxed);
        let mut r = full(
            StatusCode::UNAUTHORIZED,
            "text/plain; charset=utf-8",
            Bytes::from_static(
                b"this monitor asks clients on other hosts for its token: send Authorization: Bearer TOKEN (or ?token=TOKEN); a graph keeps it in its run directory, file monitor-token\n",
            ),
        );
        r.headers_mut().insert(
            "www-authenticate",
            HeaderValue::from_static("Bearer realm=\"ptmp monitor\""),
        );
        return r;
    }
    let snap = ctx.rx.borrow().clone();
    match path {
        "/" | "/index.html" => full(
            StatusCode::OK,
            "text/html; charset=utf-8",
            Bytes::from_static(INDEX_HTML.as_bytes()),
        ),
        "/app.js" => full(
            StatusCode::OK,
            "text/javascript; charset=utf-8",
            Bytes::from_static(APP_JS.as_bytes()),
        ),
        "/style.css" => full(
            StatusCode::OK,
            "text/css; charset=utf-8",
            Bytes::from_static(STYLE_CSS.as_bytes()),
        ),
        "/api/state" => full(StatusCode::OK, "application/json", snap.full.clone()),
        "/metrics" => {
            let mut own = String::new();
            ctx.counters.render(&mut own);
            let mut b = Vec::with_capacity(snap.metrics.len() + own.len());
            b.extend_from_slice(&snap.metrics);
            b.extend_from_slice(own.as_bytes());
            full(
                StatusCode::OK,
                "text/plain; version=0.0.4; charset=utf-8",
                Bytes::from(b),
            )
        }
        "/events" if ctx.reserved => {
            ctx.counters.refused_stream.fetch_add(1, Ordering::Relaxed);
            let why = format!(
                "all {} connections for event streams are taken; /api/state and /metrics are still answered\n",
                ctx.max_connections
            );
            let mut r = full(
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain; charset=utf-8",
                Bytes::from(why),
            );
            r.headers_mut()
                .insert("retry-after", HeaderValue::from_static("2"));
            r
        }
        "/events" => events(ctx),
        _ => full(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            Bytes::from_static(b"not found: try /, /api/state, /events or /metrics\n"),
        ),
    }
}

/// The answer to a request that does not name this server: 421 naming
/// the host it gave, or 400 saying what is wrong with its `Host`.
fn misdirected(r: Refused) -> Response<Body> {
    let (status, why) = match r {
        Refused::Other(h) => (
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "this monitor does not answer for host {h:?}: ask for it by a loopback name or address (localhost, 127.0.0.1, [::1]), the address it serves on, or a name given with --http-host\n"
            ),
        ),
        Refused::Malformed(what) => (StatusCode::BAD_REQUEST, format!("{what}\n")),
    };
    full(status, "text/plain; charset=utf-8", Bytes::from(why))
}

/// Whether a request carries `token`, in its Authorization header
/// (`Bearer TOKEN`) or its query (`token=TOKEN`); compared in constant
/// time. No token configured: only loopback clients get data, so a remote
/// one never does.
fn authorized(req: &Request<Incoming>, token: Option<&str>) -> bool {
    let Some(token) = token else {
        return false;
    };
    let same = |given: &str| {
        given.len() == token.len()
            && given
                .bytes()
                .zip(token.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    };
    let header = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| same(t.trim()));
    let query = req.uri().query().is_some_and(|q| {
        q.split('&')
            .filter_map(|kv| kv.strip_prefix("token="))
            .any(same)
    });
    header || query
}

/// An event stream: the retry hint, then each new snapshot as one `state`
/// event. The stream is polled only as fast as the socket takes bytes, so
/// a client that stopped reading holds one snapshot at most here, and its
/// socket's small send buffer fills; the connection's watchdog then
/// closes it.
fn events(ctx: &Ctx) -> Response<Body> {
    let open = StreamCount::new(ctx.counters.clone());
    let head = futures_once(Bytes::from_static(b"retry: 2000\n\n"));
    let events = WatchStream::new(ctx.rx.clone()).map(move |s| {
        let _open = &open;
        let mut b = Vec::with_capacity(s.state.len() + 24);
        b.extend_from_slice(b"event: state\ndata: ");
        b.extend_from_slice(&s.state);
        b.extend_from_slice(b"\n\n");
        Ok::<_, Infallible>(Frame::data(Bytes::from(b)))
    });
    let body = StreamBody::new(head.chain(events)).boxed_unsync();
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// Counts an open event stream while it lives.
struct StreamCount(Arc<Counters>);

impl StreamCount {
    fn new(c: Arc<Counters>) -> StreamCount {
        c.streams.fetch_add(1, Ordering::Relaxed);
        StreamCount(c)
    }
}

impl Drop for StreamCount {
    fn drop(&mut self) {
        self.0.streams.fetch_sub(1, Ordering::Relaxed);
    }
}

fn futures_once(
    b: Bytes,
) -> impl tokio_stream::Stream<Item = Result<Frame<Bytes>, Infallible>> + Send {
    tokio_stream::once(Ok(Frame::data(b)))
}
