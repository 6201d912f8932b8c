"""Sockets named by their peers from Python: after `ptmp.use_discovery`
(or with a "discovery" key beside the config's "socket"), a Sender binds
`name://NODE/PORT` (announced on the network) and a Receiver in another
process connects to that name, TPSets pass, and the
receiver follows the name when it comes back from another process; a
name that never appears is an error naming it. Each test runs in a fresh
network namespace (loopback with multicast on), so it neither depends on
nor disturbs the host's network.

Needs root and iproute2 (`ip netns`) for the namespaces; skipped with the
reason otherwise."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import uuid

import pytest

from _parts import missing_part

ptmp = pytest.importorskip("ptmp")


@pytest.fixture
def netns():
    if shutil.which("ip") is None or os.geteuid() != 0:
        missing_part("network namespaces need root and iproute2")
    name = f"ptmpnpy-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    if subprocess.run(["ip", "netns", "add", name], capture_output=True).returncode != 0:
        missing_part("cannot make a network namespace here")
    try:
        for cmd in (["link", "set", "lo", "up"], ["link", "set", "lo", "multicast", "on"]):
            subprocess.run(["ip", "-n", name] + cmd, check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name])


def py_in(ns, code, *args):
    return subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c",
                             textwrap.dedent(code), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def last_json(p, timeout):
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, f"exit {p.returncode}\n{out}\n{err}"
    return json.loads(out.strip().splitlines()[-1])


# Binds name://pysrc/out and sends N sets counted from 0.
SENDER = """
    import json, sys, ptmp
    ptmp.use_discovery(group="pyname", secret_file=sys.argv[1])
    n = int(sys.argv[2])
    tx = ptmp.Sender({"socket": {"type": "PUSH", "bind": ["name://pysrc/out"]}})
    names = ptmp.announced_names()
    for i in range(n):
        tx.send(ptmp.TPSet(count=i, detid=7, tstart=i))
    print(json.dumps({"names": names, "bound": tx.bound_endpoints,
                      "finish": tx.finish()}), flush=True)
"""

# Connects to name://pysrc/out and receives N sets.
RECEIVER = """
    import json, sys, ptmp
    ptmp.use_discovery(group="pyname", secret_file=sys.argv[1], timeout=20.0)
    n = int(sys.argv[2])
    rx = ptmp.Receiver({"socket": {"type": "PULL", "connect": ["name://pysrc/out"]}})
    print("connected", flush=True)
    got = []
    while len(got) < n:
        s = rx.recv(timeout=20.0)
        if s is None:
            break
        got.append([s.count, s.detid])
    try:
        ptmp.use_discovery(group="pyname")
        again = None
    except ptmp.ConfigError as e:
        again = str(e)
    print(json.dumps({"got": got, "again": again}), flush=True)
"""


def test_a_name_without_presence_or_with_bad_settings_is_refused():
    # This pytest process never turns presence on.
    with pytest.raises(ptmp.PtmpError, match="name://far/out"):
        ptmp.Receiver({"socket": {"type": "PULL", "connect": ["name://far/out"]}})
    with pytest.raises(ptmp.PtmpError, match="name://far/out"):
        ptmp.Sender({"socket": {"type": "PUSH", "bind": ["name://far/out"]}})
    # Refused before anything starts: presence stays off.
    with pytest.raises(ValueError, match="timeout"):
        ptmp.use_discovery(timeout=0)
    with pytest.raises(ValueError, match="group"):
        ptmp.use_discovery(group="two words")
    with pytest.raises(ValueError, match="secret_file"):
        ptmp.use_discovery(secret_file="/nonexistent/ptmp-key")
    with pytest.raises(ValueError, match="either"):
        ptmp.use_discovery(secret=b"k", secret_file="/etc/hostname")
    assert ptmp.announced_names() == []
    with pytest.raises(ptmp.PtmpError, match="discovery"):
        ptmp.Receiver({"socket": {"type": "PULL", "connect": ["name://far/out"]}})


def test_sets_pass_by_name_between_processes_and_follow_a_new_sender(netns, tmp_path):
    key = tmp_path / "key"
    key.write_text("python-names\n")
    # A secret file is read only if it is private to its user.
    key.chmod(0o600)
    rx = py_in(netns, RECEIVER, str(key), "300")
    try:
        first = last_json(py_in(netns, SENDER, str(key), "100"), 60)
        assert first["names"] == ["pysrc/out"], first
        assert first["bound"][0].startswith("tcp://"), first
        assert first["finish"]["undelivered"] == 0, first
        # The same name from another process, at another port: the idle
        # receiver follows it.
        second = last_json(py_in(netns, SENDER, str(key), "200"), 60)
        assert second["bound"] != first["bound"], (first, second)
        got = last_json(rx, 60)
    finally:
        rx.kill()
        rx.wait()
    counts = [c for c, _ in got["got"]]
    assert counts == list(range(100)) + list(range(200)), counts
    assert all(d == 7 for _, d in got["got"])
    assert "already on" in got["again"], got


# A sender and a receiver whose configs turn presence on with their own
# "discovery" key, as `ptmp send --config` reads it: no use_discovery.
KEYED_SENDER = """
    import json, sys, ptmp
    n = int(sys.argv[1])
    tx = ptmp.Sender({"discovery": {"group": "pykey", "timeout": 20},
                      "socket": {"type": "PUSH", "bind": ["name://pykey/out"]}})
    names = ptmp.announced_names()
    for i in range(n):
        tx.send(ptmp.TPSet(count=i, detid=9, tstart=i))
    print(json.dumps({"names": names, "finish": tx.finish()}), flush=True)
"""

KEYED_RECEIVER = """
    import json, sys, ptmp
    n = int(sys.argv[1])
    rx = ptmp.Receiver({"discovery": {"group": "pykey", "timeout": 20},
                        "socket": {"type": "PULL", "connect": ["name://pykey/out"]}})
    got = []
    while len(got) < n:
        s = rx.recv(timeout=20.0)
        if s is None:
            break
        got.append([s.count, s.detid])
    try:
        ptmp.Receiver({"discovery": {"group": "other"},
                       "socket": {"type": "PULL", "connect": ["name://pykey/out"]}})
        other = None
    except ptmp.ConfigError as e:
        other = str(e)
    print(json.dumps({"got": got, "other": other}), flush=True)
"""


def test_sockets_whose_config_has_a_discovery_key_connect_by_name(netns):
    """`ptmp.Sender` and `ptmp.Receiver` read the "discovery" key beside
    "socket" (as `ptmp send --config` and `ptmp.run` do): presence is
    turned on from it, the name bound is announced, the name connected to
    is found, and every set passes; a socket asking for another group than
    the one on is refused naming both."""
    rx = py_in(netns, KEYED_RECEIVER, "150")
    try:
        sent = last_json(py_in(netns, KEYED_SENDER, "150"), 60)
        got = last_json(rx, 60)
    finally:
        rx.kill()
        rx.wait()
    assert sent["names"] == ["pykey/out"], sent
    assert sent["finish"]["undelivered"] == 0, sent
    assert got["got"] == [[i, 9] for i in range(150)], got
    assert "already on in this process with group \"pykey\"" in got["other"], got
    assert "\"other\"" in got["other"], got


def test_a_bad_discovery_key_beside_a_socket_is_refused_naming_it():
    # Refused before anything starts: presence stays off in this process.
    sock = {"type": "PULL", "connect": ["name://far/out"]}
    with pytest.raises(ptmp.ConfigError, match=r"config: discovery\.grup: unknown key"):
        ptmp.Receiver({"discovery": {"grup": "x"}, "socket": sock})
    with pytest.raises(ptmp.ConfigError, match=r"discovery = 3"):
        ptmp.Sender({"discovery": 3, "socket": {"type": "PUSH", "bind": ["name://far/out"]}})
    with pytest.raises(ptmp.ConfigError, match=r"discovery\.announce = true"):
        ptmp.Receiver({"discovery": {"announce": True}, "socket": sock})
    assert ptmp.announced_names() == []


def test_a_name_that_never_appears_is_an_error_naming_it(netns):
    p = py_in(netns, """
        import json, ptmp
        ptmp.use_discovery(group="pyname", timeout=1.0)
        try:
            ptmp.Receiver({"socket": {"type": "PULL", "connect": ["name://ghost/out"]}})
            err = None
        except ptmp.PtmpError as e:
            err = str(e)
        print(json.dumps({"err": err}), flush=True)
    """)
    got = last_json(p, 30)
    assert got["err"] is not None
    assert "name://ghost/out" in got["err"] and "within 1s" in got["err"], got


def test_run_with_a_discovery_key_connects_its_agents_by_name(netns):
    """`ptmp.run` of a config whose "discovery" key asks for presence (as
    `ptmp run` reads it): the source binds a name, the sink connects to it,
    every set arrives, and the name goes when the agents end. A second run
    asking for another group is refused, naming both."""
    code = """
        import json, ptmp
        cfg = {"discovery": {"group": "pyrun", "timeout": 20}, "proxies": [
            {"name": "runsrc", "type": "source", "data": {"count": 400, "rate": 2000,
                "output": {"socket": {"type": "PUSH", "bind": ["name://runsrc/out"]}}}},
            {"name": "runsnk", "type": "sink", "data": {"count": 400,
                "input": {"socket": {"type": "PULL", "connect": ["name://runsrc/out"]}}}}]}
        reports = {r["name"]: r for r in ptmp.run(cfg, ttl=60)}
        try:
            ptmp.run({"discovery": {"group": "other"}, "proxies": []})
            other = None
        except ptmp.ConfigError as e:
            other = str(e)
        print(json.dumps({"received": reports["runsnk"]["received"],
                          "names": ptmp.announced_names(), "other": other}))
    """
    got = last_json(py_in(netns, code), 60)
    assert got["received"] == 400, got
    assert got["names"] == [], got
    assert "already on in this process with group \"pyrun\"" in got["other"], got
    assert "\"other\"" in got["other"], got


def test_a_bad_discovery_key_in_a_run_is_refused_naming_it():
    with pytest.raises(ptmp.ConfigError, match=r"discovery\.grup: unknown key"):
        ptmp.run({"discovery": {"grup": "x"}, "proxies": []})
    with pytest.raises(ptmp.ConfigError, match=r"discovery = 3"):
        ptmp.run({"discovery": 3, "proxies": []})
