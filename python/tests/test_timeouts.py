"""Odd timeout values from Python: NaN is refused with a ValueError naming
it, infinity and values too large to represent wait for ever (like None),
never a Rust panic."""

import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import ptmp

TAG = f"pyto{os.getpid()}"


def test_nan_timeouts_are_value_errors(tmp_path):
    rx = ptmp.Receiver({"socket": {"type": "PULL", "bind": [f"inproc://{TAG}-nan"]}})
    for call in (lambda: rx.recv(timeout=float("nan")),
                 lambda: rx.recv_many(10, timeout=float("nan")),
                 lambda: rx.recv_frames(timeout=float("nan")),
                 lambda: ptmp.ShmReader(f"{TAG}-none", timeout=float("nan"))):
        with pytest.raises(ValueError, match="timeout nan"):
            call()
    with pytest.raises(ValueError, match="ttl nan"):
        ptmp.run({"proxies": []}, ttl=float("nan"))
    g = tmp_path / "g.jsonnet"
    g.write_text("{name: 'x', nodes: [{name: 's', type: 'source'}, {name: 'k', type: 'sink'}],"
                 " edges: [{from: 's.out', to: 'k.in', pattern: 'pushpull'}]}")
    for kw in ({"ttl": float("nan")}, {"config_timeout": float("nan")}, {"ttl": 0}):
        with pytest.raises(ValueError, match="must be more than 0"):
            ptmp.run_graph(str(g), run_dir=str(tmp_path / "run"), **kw)


@pytest.mark.parametrize("timeout", [float("inf"), 1e30, 1e300])
def test_huge_timeouts_wait_until_data_comes(timeout):
    ep = f"inproc://{TAG}-{timeout}"
    rx = ptmp.Receiver({"socket": {"type": "PULL", "bind": [ep]}})
    tx = ptmp.Sender({"socket": {"type": "PUSH", "connect": [ep]}})
    t = threading.Timer(0.3, lambda: tx.send(ptmp.TPSet(count=5)))
    t.start()
    t0 = time.monotonic()
    got = rx.recv(timeout=timeout)
    assert got is not None and got.count == 5
    assert time.monotonic() - t0 < 20
    t.join()
    t = threading.Timer(0.3, lambda: tx.send(ptmp.TPSet(count=6)))
    t.start()
    assert [s.count for s in rx.recv_many(5, timeout=timeout)] == [6]
    t.join()


def test_huge_shm_timeouts():
    name = f"{TAG}-shm"
    w = ptmp.ShmWriter(name, slots=4, max_message=64)
    # ShmWriter belongs to its thread: another process publishes late.
    late = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time, ptmp
        r = ptmp.ShmReader({name!r}, timeout=float("inf"))
        time.sleep(0.3)
        with r.view(timeout=1e300) as v:
            print(bytes(memoryview(v)).decode(), flush=True)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and late.poll() is None:
            w.publish(b"late")
            time.sleep(0.1)
        out, _ = late.communicate(timeout=20)
        assert out.strip() == "late"
    finally:
        late.kill()
        ptmp.shm_remove(name)


def test_an_infinite_ttl_is_accepted_and_a_huge_one_named():
    # ttl=inf runs until the agents end or Ctrl-C (ptmper's negative ttl):
    # accepted, so a bad agent is what fails, at once.
    with pytest.raises(ptmp.ConfigError, match="nope"):
        ptmp.run({"proxies": [{"name": "a", "type": "nope"}]}, ttl=float("inf"))
    with pytest.raises(ptmp.ConfigError, match="ttl"):
        ptmp.run({"proxies": []}, ttl=1e30)
