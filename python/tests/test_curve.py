"""CURVE between ptmp and pyzmq, both ways, with certificates made by
pyzmq's zmq.auth: the listed peer's sets arrive, a peer with a key not on
the list or with the wrong server key gets nothing through."""

import os
import time

import pytest

import ptmp

zmq = pytest.importorskip("zmq")
zauth = pytest.importorskip("zmq.auth")
from zmq.auth.thread import ThreadAuthenticator  # noqa: E402


@pytest.fixture
def keys(tmp_path):
    """server, client and stranger certificates, as pyzmq writes them."""
    if not zmq.has("curve"):
        pytest.skip("this pyzmq has no CURVE")
    out = {}
    for name in ("server", "client", "stranger"):
        public, secret = zauth.create_certificates(str(tmp_path), name)
        # pyzmq writes the secret with the umask's mode (0644 as a rule);
        # ptmp reads a secret key only from a file private to its user.
        os.chmod(secret, 0o600)
        out[name] = (public, secret)
    return out


def tpset(i):
    return ptmp.TPSet(count=i, detid=3, tspan=10)


def curve_socket(ctx, kind, secret_file, server_public_file=None):
    """A pyzmq socket with CURVE keys: a client when given the server's key."""
    s = ctx.socket(kind)
    public, secret = zauth.load_certificate(secret_file)
    s.curve_publickey, s.curve_secretkey = public, secret
    if server_public_file is None:
        s.curve_server = True
    else:
        s.curve_serverkey, _ = zauth.load_certificate(server_public_file)
    s.linger = 0
    return s


def test_pyzmq_client_to_ptmp_server(keys):
    rx = ptmp.Receiver({"socket": {
        "type": "PULL", "bind": ["tcp://127.0.0.1:*"],
        "curve": {"secret_key_file": keys["server"][1], "allow": [keys["client"][0]]},
    }})
    ep = rx.bound_endpoints[0]
    ctx = zmq.Context()
    try:
        push = curve_socket(ctx, zmq.PUSH, keys["client"][1], keys["server"][0])
        push.connect(ep)
        for i in range(50):
            push.send_multipart([ptmp.VERSION_FRAME, tpset(i).to_bytes()])
        assert [rx.recv(timeout=10.0).count for _ in range(50)] == list(range(50))
        push.close()
        # A key the server does not list: refused, nothing arrives.
        rogue = curve_socket(ctx, zmq.PUSH, keys["stranger"][1], keys["server"][0])
        rogue.connect(ep)
        rogue.send_multipart([ptmp.VERSION_FRAME, tpset(99).to_bytes()], zmq.NOBLOCK)
        assert rx.recv(timeout=1.0) is None
        rogue.close()
        # No CURVE at all: nothing arrives either.
        plain = ctx.socket(zmq.PUSH)
        plain.linger = 0
        plain.connect(ep)
        plain.send_multipart([ptmp.VERSION_FRAME, tpset(98).to_bytes()], zmq.NOBLOCK)
        assert rx.recv(timeout=1.0) is None
        plain.close()
    finally:
        rx.close()
        ctx.term()


def test_ptmp_client_to_pyzmq_server(keys, tmp_path):
    ctx = zmq.Context()
    auth = ThreadAuthenticator(ctx)
    auth.start()
    try:
        # pyzmq's authenticator admits the keys in a directory of public
        # certificates; only the client's is put there.
        allowed = tmp_path / "allowed"
        allowed.mkdir()
        (allowed / "client.key").write_bytes(open(keys["client"][0], "rb").read())
        auth.configure_curve(domain="*", location=str(allowed))
        pull = curve_socket(ctx, zmq.PULL, keys["server"][1])
        port = pull.bind_to_random_port("tcp://127.0.0.1")
        ep = f"tcp://127.0.0.1:{port}"

        def sender(who):
            return ptmp.Sender({"socket": {
                "type": "PUSH", "connect": [ep], "linger_ms": 0,
                "curve": {"secret_key_file": keys[who][1], "server_key": keys["server"][0]},
            }})

        tx = sender("client")
        for i in range(50):
            tx.send(tpset(i))
        got = []
        while len(got) < 50 and pull.poll(10000):
            frames = pull.recv_multipart()
            assert frames[0] == ptmp.VERSION_FRAME
            got.append(ptmp.TPSet.from_bytes(frames[1]).count)
        assert got == list(range(50))
        tx.close()
        rogue = sender("stranger")
        rogue.send(tpset(99))  # queued for a connection that is refused
        assert not pull.poll(1000)
        report = rogue.finish()
        assert "refused this client's key" in (report["refused"] or ""), report
        assert report["undelivered_is"] == "at_most" and report["undelivered"] == 1, report
    finally:
        auth.stop()
        pull.close()
        ctx.term()


def test_a_refused_ptmp_client_is_told_when_it_waits(keys, tmp_path):
    """A ptmp Receiver or Sender whose key a pyzmq CURVE server does not
    admit raises PtmpError naming the refusal, rather than waiting for
    ever on a connection libzmq never retries."""
    ctx = zmq.Context()
    auth = ThreadAuthenticator(ctx)
    auth.start()
    server = {}
    try:
        allowed = tmp_path / "allowed"
        allowed.mkdir()
        (allowed / "client.key").write_bytes(open(keys["client"][0], "rb").read())
        auth.configure_curve(domain="*", location=str(allowed))
        for kind in (zmq.PUSH, zmq.PULL):
            s = curve_socket(ctx, kind, keys["server"][1])
            server[kind] = (s, f"tcp://127.0.0.1:{s.bind_to_random_port('tcp://127.0.0.1')}")

        def cfg(kind, ep):
            return {"socket": {"type": kind, "connect": [ep], "linger_ms": 0, "curve": {
                "secret_key_file": keys["stranger"][1], "server_key": keys["server"][0]}}}

        rx = ptmp.Receiver(cfg("PULL", server[zmq.PUSH][1]))
        t0 = time.time()
        with pytest.raises(ptmp.PtmpError, match="refused this client's key"):
            rx.recv()  # no timeout: only the refusal ends it
        assert time.time() - t0 < 20
        rx.close()
        tx = ptmp.Sender(cfg("PUSH", server[zmq.PULL][1]))
        with pytest.raises(ptmp.PtmpError, match="refused this client's key"):
            for i in range(100000):  # the queue fills, then the refusal ends the wait
                tx.send(tpset(i))
        tx.close()
    finally:
        auth.stop()
        for s, _ in server.values():
            s.close()
        ctx.term()


def free_ports(n):
    """The first of n loopback tcp ports in a row free a moment ago, below
    the ephemeral range."""
    import random
    import socket

    for _ in range(200):
        base = random.randint(20000, 32000 - n)
        socks = []
        try:
            for i in range(n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", base + i))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free ports")


def test_a_secured_graph_refuses_rogue_pyzmq_peers(keys, tmp_path):
    """A graph with "curve": true: a pyzmq SUB with a key of its own gets
    nothing from the source's PUB, a pyzmq PUSH with its own key puts
    nothing into the sink's bound input, and both refusals are counted in
    the processes' status files."""
    import json
    import subprocess
    import sys
    import time

    # The worker's SUB joins after the source's first sets (a PUB drops
    # what nobody subscribed to yet), so the sink ends at 3/4 of them.
    n = 6000
    port = free_ports(2)
    run_dir = tmp_path / "run"
    out = tmp_path / "out.dump"
    g = {"name": f"pycurve{os.getpid()}", "port_base": port, "curve": True,
         "nodes": [{"name": "src", "type": "source", "data": {"count": n, "rate": 1000, "detid": 1}},
                   {"name": "w", "type": "worker"},
                   {"name": "snk", "type": "sink", "data": {"count": n * 3 // 4, "ofile": str(out)}}],
         "edges": [{"from": "src.out", "to": "w.in", "pattern": "pubsub", "transport": "tcp"},
                   {"from": "w.out", "to": "snk.in", "pattern": "pushpull", "transport": "tcp",
                    "bind": "in"}]}
    runner = subprocess.Popen(
        [sys.executable, "-c",
         "import json, sys, ptmp; r = ptmp.run_graph(json.loads(sys.argv[1]), run_dir=sys.argv[2], ttl=60);"
         " print(json.dumps({'ok': r['ok'], 'reason': r['reason']}))",
         json.dumps(g), str(run_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def status(process):
        try:
            return json.loads((run_dir / "status" / f"{process}.json").read_text())
        except (OSError, ValueError):
            return {}

    def refused():
        return sum(s.get("curve_refused", 0)
                   for p in ("src", "snk") for s in status(p).get("sockets", []))

    try:
        t0 = time.time()
        while not any(x.get("in", 0) > 100 for x in status("snk").get("nodes", [])):
            assert runner.poll() is None, runner.communicate()
            assert time.time() - t0 < 60, "no traffic at the sink"
            time.sleep(0.05)
        server = str(run_dir / "curve" / "graph.key")
        ctx = zmq.Context()
        sub = curve_socket(ctx, zmq.SUB, keys["stranger"][1], server)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(f"tcp://127.0.0.1:{port}")
        push = curve_socket(ctx, zmq.PUSH, keys["stranger"][1], server)
        push.connect(f"tcp://127.0.0.1:{port + 1}")
        push.send_multipart([ptmp.VERSION_FRAME, tpset(10**6).to_bytes()], zmq.NOBLOCK)
        assert not sub.poll(1500), "the rogue SUB read a set"
        t0 = time.time()
        while refused() < 2 and time.time() - t0 < 20:
            time.sleep(0.05)
        assert refused() >= 2, [status(p).get("sockets") for p in ("src", "snk")]
        sub.close()
        push.close()
        ctx.term()
        stdout, stderr = runner.communicate(timeout=90)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 0, stderr
    counts = [s.count for s in ptmp.read_tpsets(out)]
    assert len(counts) == n * 3 // 4 and 10**6 not in counts
    assert counts == sorted(counts) and len(set(counts)) == len(counts)
