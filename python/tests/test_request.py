"""Request and response from Python: ptmp.Client asks, ptmp.Server answers
(over ipc and tcp, from other threads, many requests out at once), every
failure raised by name, Ctrl-C ending a wait, and a plain pyzmq REQ socket
asking a ptmp server."""

import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import ptmp


@pytest.fixture(params=["ipc", "tcp"])
def address(request, tmp_path):
    if request.param == "ipc":
        return f"ipc://{tmp_path}/req.sock"
    return "tcp://127.0.0.1:*"


@pytest.fixture
def pair(address):
    """A server and a client connected to it."""
    with ptmp.Server(address) as s, ptmp.Client(s.bound[0]) as c:
        yield s, c


def serve(server, n, how=lambda r: r.answer(r.data)):
    """Answer `n` requests on a thread of its own (an echo unless told)."""
    def run():
        for _ in range(n):
            r = server.recv(timeout=10)
            assert r is not None
            how(r)
    t = threading.Thread(target=run)
    t.start()
    return t


def test_echo(pair):
    s, c = pair
    t = serve(s, 3)
    for body in (b"ping", b"", bytes(range(256)) * 100):
        assert c.request(body, timeout=5) == body
    t.join()
    assert c.counts()["answered"] == 3 and c.in_flight == 0
    assert s.counts() == {"received": 3, "answered": 3, "refused": 0,
                          "unreadable": 0, "undelivered": 0}


def test_request_takes_any_bytes_like_object(pair):
    s, c = pair
    t = serve(s, 2, lambda r: r.answer(bytearray(r.data[::-1])))
    assert c.request(bytearray(b"abc")) == b"cba"
    assert c.request(memoryview(b"xyz")) == b"zyx"
    t.join()
    with pytest.raises(TypeError):
        c.send("text is not bytes")


def test_answers_from_other_threads(pair):
    s, c = pair
    workers = []

    def hand_over(r):
        # Answered on another thread while the server waits in recv.
        w = threading.Thread(target=lambda: (time.sleep(0.05), r.answer(b"re:" + r.data)))
        w.start()
        workers.append(w)

    t = serve(s, 5, hand_over)
    for i in range(5):
        assert c.request(b"%d" % i, timeout=5) == b"re:%d" % i
    t.join()
    for w in workers:
        w.join()


def test_a_request_answered_on_another_thread_goes_out_at_the_next_recv(pair):
    s, c = pair
    c.send(b"later")
    r = s.recv(timeout=5)
    done = threading.Event()

    def answer_while_receiving():
        # The server's thread is in recv below: the answer is left for it.
        time.sleep(0.2)
        r.answer(b"from a thread")
        done.set()

    w = threading.Thread(target=answer_while_receiving)
    w.start()
    assert s.recv(timeout=1) is None  # woken, sends the answer, goes on waiting
    w.join()
    assert done.is_set()
    assert c.recv(timeout=5)[1] == b"from a thread"
    assert r.answered


def test_many_in_flight_matched_by_id_in_reverse_order(pair):
    s, c = pair
    sent = {c.send(b"q%d" % i): b"q%d" % i for i in range(20)}
    assert c.in_flight == 20
    reqs = [s.recv(timeout=5) for _ in sent]
    assert sorted(r.data for r in reqs) == sorted(sent.values())
    for r in reversed(reqs):
        r.answer(b"a:" + r.data)
    got = [c.recv(timeout=5) for _ in sent]
    assert [i for i, _ in got] == sorted(sent, reverse=True)
    assert {i: a for i, a in got} == {i: b"a:" + q for i, q in sent.items()}
    assert c.in_flight == 0
    assert c.recv(timeout=None) is None  # nothing out: at once


def test_request_keeps_the_other_answers_for_recv(pair):
    s, c = pair
    first = c.send(b"first")
    t = serve(s, 2)
    assert c.request(b"second") == b"second"
    assert c.recv(timeout=5) == (first, b"first")
    t.join()


def test_recv_without_waiting_takes_what_has_come(pair):
    s, c = pair
    i = c.send(b"x")
    s.recv(timeout=5).answer(b"y")
    deadline = time.monotonic() + 5
    while (got := c.recv(timeout=0)) is None:
        assert time.monotonic() < deadline, "an answer that came is never taken"
    assert got == (i, b"y")


def test_one_client_shared_by_threads(pair):
    s, c = pair
    t = serve(s, 4 * 10 + 5)
    errors = []

    def ask(k):
        try:
            for j in range(10):
                body = b"t%d-%d" % (k, j)
                assert c.request(body, timeout=10) == body
        except Exception as e:  # reported below, not lost in the thread
            errors.append(e)

    askers = [threading.Thread(target=ask, args=(k,)) for k in range(4)]
    for a in askers:
        a.start()
    # Meanwhile, on this thread: requests of its own, whose answers recv
    # gives back, never those the other threads wait for.
    mine = {c.send(b"m%d" % i, timeout=10): b"m%d" % i for i in range(5)}
    got = {}
    while len(got) < len(mine):
        r = c.recv(timeout=10)
        assert r is not None
        got[r[0]] = r[1]
    for a in askers:
        a.join()
    t.join()
    assert errors == []
    assert got == mine
    assert c.counts()["answered"] == 45 and c.in_flight == 0


def test_refusal_raises_with_the_servers_words(pair):
    s, c = pair
    t = serve(s, 1, lambda r: r.refuse("not on a Sunday"))
    with pytest.raises(ptmp.RequestRefused, match="not on a Sunday") as e:
        c.request(b"please")
    t.join()
    assert e.value.why == "not on a Sunday"
    assert isinstance(e.value, ptmp.RequestError) and isinstance(e.value, ptmp.PtmpError)
    assert c.counts()["refused"] == 1 and s.counts()["refused"] == 1


def test_a_failed_request_from_recv_raises_with_its_id_and_the_rest_go_on(pair):
    s, c = pair
    a, b = c.send(b"a"), c.send(b"b")
    ra, rb = s.recv(timeout=5), s.recv(timeout=5)
    ra.refuse("no a")
    rb.answer(b"B")
    with pytest.raises(ptmp.RequestRefused, match=f"request {a} to .*no a") as e:
        c.recv(timeout=5)
    assert e.value.id == a
    assert c.recv(timeout=5) == (b, b"B")


def test_a_request_dropped_unanswered_is_refused(pair):
    s, c = pair
    i = c.send(b"x")
    r = s.recv(timeout=5)
    del r
    with pytest.raises(ptmp.RequestRefused, match="without answering") as e:
        c.recv(timeout=5)
    assert e.value.id == i


def test_a_request_is_answered_once(pair):
    s, c = pair
    c.send(b"x")
    r = s.recv(timeout=5)
    assert not r.answered
    r.answer(b"one")
    with pytest.raises(ptmp.PtmpError, match="already answered"):
        r.answer(b"two")
    with pytest.raises(ptmp.PtmpError, match="already answered"):
        r.refuse("no")
    assert c.recv(timeout=5)[1] == b"one"


def test_timeout_raises_within_the_time(pair):
    s, c = pair
    t0 = time.monotonic()
    with pytest.raises(ptmp.RequestTimeout, match="no answer within 300 ms") as e:
        c.request(b"unanswered", timeout=0.3)
    took = time.monotonic() - t0
    assert 0.29 <= took < 1.5, took
    assert isinstance(e.value, TimeoutError)
    assert c.counts()["timed_out"] == 1 and c.in_flight == 0
    # The server got it; an answer now comes too late and is dropped.
    late = s.recv(timeout=5)
    late.answer(b"late")
    t = serve(s, 1)
    assert c.request(b"next") == b"next"
    t.join()
    assert c.counts()["late"] == 1


def test_no_server_raises(tmp_path):
    with ptmp.Client(f"ipc://{tmp_path}/nobody.sock") as c:
        t0 = time.monotonic()
        with pytest.raises(TimeoutError, match="no server at ipc://.*nobody.sock"):
            c.request(b"anyone?", timeout=0.3)
        assert time.monotonic() - t0 < 1.5


def test_server_gone_fails_the_requests_out():
    s = ptmp.Server("tcp://127.0.0.1:*")
    c = ptmp.Client(s.bound[0])
    i = c.send(b"x", timeout=30)
    r = s.recv(timeout=5)
    assert r.data == b"x"
    t0 = time.monotonic()
    s.close()
    with pytest.raises(ptmp.ServerGone, match="ended while the request was out") as e:
        c.recv(timeout=10)
    assert time.monotonic() - t0 < 5
    assert isinstance(e.value, ConnectionError) and e.value.id == i
    assert c.counts()["gone"] == 1
    with pytest.raises(ptmp.PtmpError, match="server is closed"):
        r.answer(b"too late")
    c.close()


def test_too_big_raises_at_once(address):
    with ptmp.Server(address) as s:
        cfg = {"socket": {"connect": [s.bound[0]], "max_message": 100}}
        with ptmp.Client(config=cfg) as c:
            with pytest.raises(ptmp.RequestError, match="200 bytes, over the limit of 100") as e:
                c.send(b"x" * 200)
            assert e.value.id is None
            assert c.counts()["sent"] == 0


def test_close_sends_the_answers_given_and_refuses_the_rest():
    s = ptmp.Server("tcp://127.0.0.1:*")
    c = ptmp.Client(s.bound[0])
    a = c.send(b"a")
    r = s.recv(timeout=5)
    b = c.send(b"b")
    r.answer(b"A")
    # "b" is refused as the server closes if it arrived, else its server
    # is gone: either way it fails at once.
    s.close()
    assert c.recv(timeout=5) == (a, b"A")
    with pytest.raises((ptmp.RequestRefused, ptmp.ServerGone)) as e:
        c.recv(timeout=5)
    assert e.value.id == b
    assert s.counts()["answered"] == 1
    with pytest.raises(ptmp.PtmpError, match="closed"):
        s.recv(timeout=0.1)
    c.close()
    with pytest.raises(ptmp.PtmpError, match="closed"):
        c.request(b"x")
    assert c.counts()["sent"] == 2


def test_configs_and_arguments(tmp_path):
    addr = f"ipc://{tmp_path}/cfg.sock"
    with ptmp.Server(config={"socket": {"type": "ROUTER", "bind": [addr]}}) as s:
        with ptmp.Client(config='{"socket": {"connect": ["%s"]}}' % addr) as c:
            t = serve(s, 1)
            assert c.request(b"cfg") == b"cfg"
            t.join()
    with ptmp.Server([f"ipc://{tmp_path}/one.sock", "tcp://127.0.0.1:*"]) as s:
        assert len(s.bound) == 2
    with pytest.raises(ptmp.ConfigError, match="socket.type"):
        ptmp.Client(config={"socket": {"type": "PUSH", "connect": [addr]}})
    with pytest.raises(ValueError):
        ptmp.Client()
    with pytest.raises(ValueError):
        ptmp.Server(addr, config={"socket": {"bind": [addr]}})
    with ptmp.Client(addr) as c:
        for bad in (0, -1.0, float("nan")):
            with pytest.raises(ValueError):
                c.request(b"x", timeout=bad)


def test_pyzmq_req_socket_asks_a_ptmp_server(address):
    zmq = pytest.importorskip("zmq")
    with ptmp.Server(address) as s:
        ctx = zmq.Context()
        req = ctx.socket(zmq.REQ)
        req.setsockopt(zmq.LINGER, 0)
        req.setsockopt(zmq.RCVTIMEO, 5000)
        req.connect(s.bound[0])
        try:
            req.send(b"ping")
            r = s.recv(timeout=5)
            assert r.data == b"ping"
            r.answer(b"pong")
            assert req.recv_multipart() == [b"\x00", b"pong"]
            req.send(b"again")
            s.recv(timeout=5).refuse("no more")
            assert req.recv_multipart() == [b"\x01", b"no more"]
            # A DEALER speaking no protocol at all: counted, answered so.
            d = ctx.socket(zmq.DEALER)
            d.setsockopt(zmq.LINGER, 0)
            d.setsockopt(zmq.RCVTIMEO, 5000)
            d.connect(s.bound[0])
            d.send(b"no delimiter")
            assert s.recv(timeout=0.5) is None
            assert s.counts()["unreadable"] == 1
            d.close()
        finally:
            req.close()
            ctx.term()


def interrupt(code):
    """Run `code` in a child Python, send it SIGINT once it says it is
    waiting, and return what it printed and how long it took to end."""
    p = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import signal
            # Python turns SIGINT into KeyboardInterrupt only if it was not
            # ignored when it started (under nohup or some CI runners it is).
            signal.signal(signal.SIGINT, signal.default_int_handler)
            import ptmp
        """) + textwrap.dedent(code)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert p.stdout.readline().strip() == "waiting"
        time.sleep(0.3)  # into the wait itself
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=10)
        return out, time.monotonic() - t0, p.returncode
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_ctrl_c_interrupts_a_server_waiting_for_requests():
    out, took, rc = interrupt("""
        s = ptmp.Server("tcp://127.0.0.1:*")
        try:
            print("waiting", flush=True)
            s.recv(None)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
    """)
    assert "interrupted" in out and rc == 0
    assert took < 3.0


def test_ctrl_c_interrupts_a_request_to_nobody(tmp_path):
    out, took, rc = interrupt(f"""
        c = ptmp.Client("ipc://{tmp_path}/nobody.sock")
        try:
            print("waiting", flush=True)
            c.request(b"x", timeout=600)
        except KeyboardInterrupt:
            print("interrupted", c.in_flight, flush=True)
    """)
    assert "interrupted 0" in out and rc == 0
    assert took < 3.0


def test_ctrl_c_interrupts_a_send_waiting_for_room(tmp_path):
    # A queue of one request, full: the second send waits for room.
    out, took, rc = interrupt(f"""
        c = ptmp.Client(config={{"socket": {{
            "connect": ["ipc://{tmp_path}/nobody.sock"], "sndhwm": 1}}}})
        c.send(b"first", timeout=600)
        try:
            print("waiting", flush=True)
            c.send(b"second", timeout=600)
        except KeyboardInterrupt:
            print("interrupted", c.in_flight, flush=True)
    """)
    assert "interrupted 1" in out and rc == 0
    assert took < 3.0


def test_ctrl_c_unhandled_ends_the_process_with_keyboard_interrupt():
    p = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import signal
            signal.signal(signal.SIGINT, signal.default_int_handler)
            import ptmp
            s = ptmp.Server("tcp://127.0.0.1:*")
            print("waiting", flush=True)
            s.recv()
        """)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert p.stdout.readline().strip() == "waiting"
        time.sleep(0.3)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=10)
        assert "KeyboardInterrupt" in err
        assert p.returncode != 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
