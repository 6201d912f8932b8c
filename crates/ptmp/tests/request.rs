//! Request and response over every ZeroMQ transport: answers matched to
//! their requests in any order, from any thread; every way a request can
//! go unanswered said as such, promptly; peers that are not ptmp clients.

use ptmp::request::{Failure, RequestId};
use ptmp::{Client, Error, Server};
use std::collections::HashMap;
use std::thread;
use std::time::{Duration, Instant};

const SEC: Duration = Duration::from_secs(1);

fn addresses(tag: &str) -> Vec<String> {
    let dir = std::env::temp_dir();
    let pid = std::process::id();
    vec![
        format!("inproc://rr-{tag}-{pid}"),
        format!("ipc://{}/ptmp-rr-{tag}-{pid}.ipc", dir.display()),
        "tcp://127.0.0.1:*".to_string(),
    ]
}

/// A server at `address` and a client of it.
fn pair(address: &str) -> (Server, Client) {
    let s = Server::bind(address).unwrap();
    let at = s
        .bound()
        .first()
        .cloned()
        .unwrap_or_else(|| address.to_string());
    let c = Client::connect(&at).unwrap();
    (s, c)
}

fn failure(e: Error) -> Failure {
    match e {
        Error::Request { failure, .. } => failure,
        e => panic!("not a request failure: {e}"),
    }
}

/// Echo `n` requests on the server's own thread.
fn echo(s: &mut Server, n: usize) {
    for _ in 0..n {
        let r = s.recv(Some(5 * SEC)).unwrap().expect("a request");
        let (body, reply) = r.into_parts();
        s.answer(reply, &body).unwrap();
    }
}

#[test]
fn one_request_one_answer_on_every_transport() {
    for a in addresses("one") {
        let (mut s, mut c) = pair(&a);
        let t = thread::spawn(move || {
            echo(&mut s, 3);
            s.counts()
        });
        for i in 0..3u8 {
            let got = c.request(&[i; 5], 5 * SEC).unwrap();
            assert_eq!(got, vec![i; 5], "{a}");
        }
        let counts = t.join().unwrap();
        assert_eq!((counts.received, counts.answered), (3, 3), "{a}");
        assert_eq!(c.counts().answered, 3, "{a}");
    }
}

/// 64 requests out at once, answered last first: each answer reaches the
/// request it answers.
#[test]
fn answers_in_any_order_match_their_requests() {
    for a in addresses("order") {
        let (mut s, mut c) = pair(&a);
        let t = thread::spawn(move || {
            let mut held = Vec::new();
            for _ in 0..64 {
                held.push(s.recv(Some(5 * SEC)).unwrap().expect("a request"));
            }
            while let Some(r) = held.pop() {
                let (body, reply) = r.into_parts();
                let mut answer = b"re:".to_vec();
                answer.extend(body);
                s.answer(reply, &answer).unwrap();
            }
        });
        let mut sent: HashMap<RequestId, Vec<u8>> = HashMap::new();
        for i in 0..64u32 {
            let body = i.to_le_bytes().to_vec();
            sent.insert(c.send(&body, 5 * SEC).unwrap(), body);
        }
        assert_eq!(c.in_flight(), 64);
        let mut order = Vec::new();
        while let Some((id, outcome)) = c.recv(Some(5 * SEC)).unwrap() {
            let body = sent.remove(&id).expect("an answer to a request sent");
            assert_eq!(outcome.unwrap(), [b"re:".to_vec(), body.clone()].concat());
            order.push(u32::from_le_bytes(body.try_into().unwrap()));
        }
        t.join().unwrap();
        assert!(sent.is_empty(), "{a}: unanswered {sent:?}");
        assert_eq!(order.first(), Some(&63), "{a}: answered last first");
    }
}

/// Requests answered on worker threads, while the server's thread only
/// receives.
#[test]
fn answered_from_other_threads() {
    let (mut s, mut c) = pair("tcp://127.0.0.1:*");
    let t = thread::spawn(move || {
        let mut workers = Vec::new();
        for _ in 0..20 {
            let (body, reply) = s.recv(Some(5 * SEC)).unwrap().unwrap().into_parts();
            workers.push(thread::spawn(move || {
                thread::sleep(Duration::from_millis(u64::from(body[0] % 5)));
                reply.answer(&[body[0] * 2]);
            }));
        }
        // Keep receiving, so queued answers go out.
        let end = Instant::now() + 2 * SEC;
        while Instant::now() < end && s.counts().answered < 20 {
            assert!(s.recv(Some(Duration::from_millis(20))).unwrap().is_none());
        }
        for w in workers {
            w.join().unwrap();
        }
        s.counts()
    });
    let ids: Vec<(RequestId, u8)> = (0..20u8)
        .map(|i| (c.send(&[i], 5 * SEC).unwrap(), i))
        .collect();
    let mut got = HashMap::new();
    while let Some((id, o)) = c.recv(Some(5 * SEC)).unwrap() {
        got.insert(id, o.unwrap()[0]);
    }
    for (id, i) in ids {
        assert_eq!(got.get(&id), Some(&(i * 2)));
    }
    assert_eq!(t.join().unwrap().answered, 20);
}

/// A server that never answers: the request times out, on time; the
/// answer that comes after is dropped as late, not given to the next
/// request.
#[test]
fn a_request_times_out_and_its_late_answer_is_dropped() {
    let (mut s, mut c) = pair("tcp://127.0.0.1:*");
    let t0 = Instant::now();
    let e = c.request(b"slow", Duration::from_millis(200)).unwrap_err();
    let took = t0.elapsed();
    assert_eq!(failure(e), Failure::TimedOut { ms: 200 });
    assert!(
        took >= Duration::from_millis(200) && took < 3 * SEC,
        "{took:?}"
    );
    let r = s.recv(Some(SEC)).unwrap().unwrap();
    let (_, reply) = r.into_parts();
    s.answer(reply, b"too late").unwrap();
    let t = thread::spawn(move || echo(&mut s, 1));
    assert_eq!(c.request(b"next", 5 * SEC).unwrap(), b"next");
    t.join().unwrap();
    let n = c.counts();
    assert_eq!((n.timed_out, n.late, n.answered), (1, 1, 1), "{n:?}");
}

#[test]
fn nobody_to_ask_is_said_within_the_time() {
    let mut c = Client::connect("tcp://127.0.0.1:9").unwrap();
    let t0 = Instant::now();
    let e = c
        .request(b"anyone?", Duration::from_millis(300))
        .unwrap_err();
    assert!(t0.elapsed() < 3 * SEC);
    let text = e.to_string();
    assert!(
        matches!(failure(e), Failure::NoServer { ms: 300, .. }),
        "{text}"
    );
    assert!(text.contains("tcp://127.0.0.1:9"), "{text}");
}

/// A server that goes away with requests out: every one of them fails at
/// once, long before its time; a server started again at the address is
/// found again.
#[test]
fn a_server_gone_fails_every_request_out_at_once() {
    let s = Server::bind("tcp://127.0.0.1:*").unwrap();
    let at = s.bound()[0].clone();
    let mut c = Client::connect(&at).unwrap();
    let mut s = s;
    for i in 0..5u8 {
        c.send(&[i], Duration::from_secs(30)).unwrap();
    }
    let held: Vec<_> = (0..5)
        .map(|_| s.recv(Some(5 * SEC)).unwrap().unwrap())
        .collect();
    let t0 = Instant::now();
    drop(s);
    drop(held);
    let mut gone = 0;
    while let Some((_, o)) = c.recv(Some(10 * SEC)).unwrap() {
        assert!(matches!(o, Err(Failure::ServerGone { .. })), "{o:?}");
        gone += 1;
    }
    assert_eq!(gone, 5);
    assert!(t0.elapsed() < 5 * SEC, "took {:?}", t0.elapsed());
    assert_eq!(c.counts().gone, 5);
    // Started again at the same address: found again.
    let mut s = Server::bind(&at).unwrap();
    let t = thread::spawn(move || echo(&mut s, 1));
    assert_eq!(c.request(b"back?", 10 * SEC).unwrap(), b"back?");
    t.join().unwrap();
}

/// Refused, refused by dropping the reply, too big either way: each said.
#[test]
fn refusals_and_limits_are_said() {
    let (mut s, mut c) = pair("tcp://127.0.0.1:*");
    let t = thread::spawn(move || {
        let r = s.recv(Some(5 * SEC)).unwrap().unwrap();
        s.refuse(r.into_parts().1, "not today").unwrap();
        drop(s.recv(Some(5 * SEC)).unwrap().unwrap());
        let r = s.recv(Some(5 * SEC)).unwrap().unwrap();
        s.answer(r.into_parts().1, &vec![0u8; ptmp::DEFAULT_MAX_MESSAGE + 1])
            .unwrap();
        // Keep receiving until the dropped reply's refusal went out.
        let _ = s.recv(Some(Duration::from_millis(200))).unwrap();
        s.counts()
    });
    let e = failure(c.request(b"a", 5 * SEC).unwrap_err());
    assert_eq!(e, Failure::Refused("not today".into()));
    let e = failure(c.request(b"b", 5 * SEC).unwrap_err());
    assert!(
        matches!(&e, Failure::Refused(w) if w.contains("without answering")),
        "{e}"
    );
    let e = failure(c.request(b"c", 5 * SEC).unwrap_err());
    assert!(
        matches!(&e, Failure::Refused(w) if w.contains("over the server's limit")),
        "{e}"
    );
    let big = vec![1u8; ptmp::DEFAULT_MAX_MESSAGE + 1];
    let e = failure(c.request(&big, 5 * SEC).unwrap_err());
    assert!(matches!(e, Failure::TooBig { .. }), "{e}");
    let n = t.join().unwrap();
    assert_eq!((n.received, n.refused, n.answered), (3, 3, 0), "{n:?}");
}

#[test]
fn a_client_has_a_bound_on_requests_out() {
    let (_s, mut c) = pair("tcp://127.0.0.1:*");
    c.set_max_in_flight(2);
    c.send(b"1", 5 * SEC).unwrap();
    c.send(b"2", 5 * SEC).unwrap();
    let e = failure(c.send(b"3", 5 * SEC).unwrap_err());
    assert_eq!(e, Failure::TooMany { limit: 2 });
}

/// A plain ZeroMQ REQ socket asks and reads the status and the answer; a
/// DEALER with an id of the wrong size is told what is wrong.
#[test]
fn plain_zeromq_peers() {
    let mut s = Server::bind("tcp://127.0.0.1:*").unwrap();
    let at = s.bound()[0].clone();
    let ctx = zmq::Context::new();
    let req = ctx.socket(zmq::REQ).unwrap();
    req.connect(&at).unwrap();
    req.send(&b"ping"[..], 0).unwrap();
    echo(&mut s, 1);
    assert_eq!(
        req.recv_multipart(0).unwrap(),
        vec![vec![0u8], b"ping".to_vec()]
    );
    let dealer = ctx.socket(zmq::DEALER).unwrap();
    dealer.connect(&at).unwrap();
    dealer
        .send_multipart([&b""[..], b"abc", b"body"], 0)
        .unwrap();
    assert!(s.recv(Some(Duration::from_millis(500))).unwrap().is_none());
    let got = dealer.recv_multipart(0).unwrap();
    assert_eq!(got[..2], [b"".to_vec(), vec![2u8]]);
    assert!(String::from_utf8_lossy(&got[2]).contains("id of 3 bytes"));
    assert_eq!(s.counts().unreadable, 1);
}

/// A message of a hundred thousand frames is counted and answered as
/// unreadable, keeps nothing, and the server goes on answering.
#[test]
fn a_message_of_many_frames_is_dropped_and_the_server_answers_on() {
    let mut s = Server::bind("tcp://127.0.0.1:*").unwrap();
    let at = s.bound()[0].clone();
    let ctx = zmq::Context::new();
    let dealer = ctx.socket(zmq::DEALER).unwrap();
    dealer.connect(&at).unwrap();
    let mut parts: Vec<&[u8]> = vec![b""; 100_000];
    parts.push(b"last");
    dealer.send_multipart(parts, 0).unwrap();
    assert!(s.recv(Some(Duration::from_secs(5))).unwrap().is_none());
    let got = dealer.recv_multipart(0).unwrap();
    assert_eq!(got[..2], [b"".to_vec(), vec![2u8]]);
    let why = String::from_utf8_lossy(&got[2]).into_owned();
    assert!(why.contains("100000 frames after the delimiter"), "{why}");
    assert_eq!(s.counts().unreadable, 1);
    // And a well-formed request after it is answered.
    let mut c = Client::connect(&at).unwrap();
    let h = thread::spawn(move || c.request(b"after", 5 * SEC).unwrap());
    echo(&mut s, 1);
    assert_eq!(h.join().unwrap(), b"after");
}

/// One client, two servers: the requests are shared between them.
#[test]
fn servers_share_one_clients_load() {
    let a = Server::bind("tcp://127.0.0.1:*").unwrap();
    let b = Server::bind("tcp://127.0.0.1:*").unwrap();
    let cfg = ptmp::SocketConfig::builder(ptmp::SocketType::Dealer)
        .connect(&a.bound()[0])
        .connect(&b.bound()[0])
        .build()
        .unwrap();
    let mut c = Client::new(cfg).unwrap();
    // Each server answers until the client has had all its answers (a
    // fixed idle time would end a server that a loaded machine's slow
    // connection left waiting).
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let serve = |mut s: Server| {
        let done = done.clone();
        thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some(r) = s.recv(Some(Duration::from_millis(50))).unwrap() {
                    let (_, reply) = r.into_parts();
                    s.answer(reply, b"ok").unwrap();
                }
            }
            s.counts().answered
        })
    };
    let (ta, tb) = (serve(a), serve(b));
    // Both connected before the requests go, so both get some.
    thread::sleep(Duration::from_millis(200));
    for i in 0..40 {
        if let Err(e) = c.request(b"x", 5 * SEC) {
            panic!("request {i}: {e}");
        }
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let (na, nb) = (ta.join().unwrap(), tb.join().unwrap());
    assert_eq!(na + nb, 40);
    assert!(na > 5 && nb > 5, "{na} and {nb}");
}

/// Hundreds of clients that ask and vanish without reading: counted, and
/// the server goes on answering the one that stays.
#[test]
fn vanishing_clients_do_not_stop_the_server() {
    let mut s = Server::bind("tcp://127.0.0.1:*").unwrap();
    let at = s.bound()[0].clone();
    let ctx = zmq::Context::new();
    let mut clients = Vec::new();
    for i in 0..300u32 {
        let d = ctx.socket(zmq::DEALER).unwrap();
        d.connect(&at).unwrap();
        d.send_multipart([&b""[..], &u64::from(i).to_le_bytes(), b"q"], 0)
            .unwrap();
        clients.push(d);
    }
    let mut held = Vec::new();
    while held.len() < 300 {
        match s.recv(Some(5 * SEC)).unwrap() {
            Some(r) => held.push(r),
            None => break,
        }
    }
    drop(clients);
    let mut answered_or_not = 0;
    for r in held {
        s.answer(r.into_parts().1, b"a").unwrap();
        answered_or_not += 1;
    }
    assert_eq!(answered_or_not, 300);
    let mut c = Client::connect(&at).unwrap();
    let t = thread::spawn(move || {
        echo(&mut s, 1);
        s
    });
    assert_eq!(
        c.request(b"still there?", 5 * SEC).unwrap(),
        b"still there?"
    );
    let s = t.join().unwrap();
    let n = s.counts();
    assert_eq!(n.received, 301);
    assert_eq!(n.answered + n.undelivered, 301, "{n:?}");
}

#[test]
fn wrong_configs_are_refused_by_name() {
    let cfg = ptmp::SocketConfig::builder(ptmp::SocketType::Push)
        .bind("tcp://127.0.0.1:*")
        .build()
        .unwrap();
    let e = Server::new(cfg).err().unwrap().to_string();
    assert!(e.contains("a server is a ROUTER socket"), "{e}");
    let e = Client::connect("shm://rr-nope").err().unwrap().to_string();
    assert!(e.contains("not over shm://"), "{e}");
}
