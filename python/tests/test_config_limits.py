"""Hostile configurations through the Python API: NUL bytes in endpoints,
nesting beyond the limit, and Jsonnet that never ends (time limit, Ctrl-C)."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import ptmp

ENDLESS = "local f(n) = if n == 0 then 0 else f(n - 1) + f(n - 1); {ttl: f(60)}"


def nested(n):
    """A list nested n deep, built without recursion."""
    v = []
    for _ in range(n - 1):
        v = [v]
    return v


def test_a_nul_in_an_endpoint_is_a_config_error():
    for cls, stype in [(ptmp.Sender, "PUSH"), (ptmp.Receiver, "PULL")]:
        cfg = {"socket": {"type": stype, "bind": ["tcp://127.0.0.1\x00x:5000"]}}
        with pytest.raises(ptmp.ConfigError, match=r"socket.bind\[0\].*NUL byte"):
            cls(cfg)


def test_deep_configs_are_refused_naming_the_limit(tmp_path):
    deep_text = '{"socket": ' + "[" * 100000 + "]" * 100000 + "}"
    with pytest.raises(ptmp.ConfigError, match="127 levels"):
        ptmp.Sender(deep_text)
    # Dicts: deeper than Python's own recursion limit, and just over ours.
    for depth in [100000, 200]:
        with pytest.raises(ptmp.ConfigError, match="limit"):
            ptmp.run({"proxies": nested(depth)})
        with pytest.raises(ptmp.ConfigError, match="limit"):
            ptmp.graph_check({"nodes": nested(depth)})
    for name in ["deep.json", "deep.jsonnet"]:
        f = tmp_path / name
        f.write_text('{"proxies": ' + "[" * 100000 + "]" * 100000 + "}")
        with pytest.raises(ptmp.ConfigError, match="limit"):
            ptmp.run(str(f))
        with pytest.raises(ptmp.ConfigError, match="limit"):
            ptmp.graph_check(str(f))


def test_config_timeout_ends_an_endless_jsonnet(tmp_path):
    f = tmp_path / "endless.jsonnet"
    f.write_text(ENDLESS)
    for call in [ptmp.run, ptmp.graph_check]:
        t0 = time.monotonic()
        with pytest.raises(ptmp.ConfigError, match="time limit of 0.5 s"):
            call(str(f), config_timeout=0.5)
        assert time.monotonic() - t0 < 20


def test_ctrl_c_stops_an_endless_jsonnet(tmp_path):
    f = tmp_path / "endless.jsonnet"
    f.write_text(ENDLESS)
    p = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import signal
            # Python turns SIGINT into KeyboardInterrupt only if it was not
            # ignored when it started (under nohup or some CI runners it is).
            signal.signal(signal.SIGINT, signal.default_int_handler)
            import ptmp
            try:
                print("evaluating", flush=True)
                ptmp.run({str(f)!r})
            except KeyboardInterrupt:
                print("interrupted", flush=True)
        """)],
        stdout=subprocess.PIPE, text=True, env=os.environ.copy(),
    )
    assert p.stdout.readline().strip() == "evaluating"
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=20)
    assert "interrupted" in out
    assert p.returncode == 0


def test_finish_reports_undelivered_messages():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ep = f"tcp://127.0.0.1:{port}"
    tx = ptmp.Sender({"socket": {"type": "PUSH", "connect": [ep], "linger_ms": 200}})
    for i in range(3):
        tx.send(ptmp.TPSet(count=i))
    assert tx.finish() == {"sent": 3, "undelivered": 3, "undelivered_is": "exact", "refused": None}
    rx = ptmp.Receiver({"socket": {"type": "PULL", "bind": [ep]}})
    tx = ptmp.Sender({"socket": {"type": "PUSH", "connect": [ep]}})
    for i in range(3):
        tx.send(ptmp.TPSet(count=i))
    assert tx.finish() == {"sent": 3, "undelivered": 0, "undelivered_is": "exact", "refused": None}
    assert [rx.recv(timeout=5).count for _ in range(3)] == [0, 1, 2]
    rx.close()
