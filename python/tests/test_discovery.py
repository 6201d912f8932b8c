"""Presence seen by an independent implementation: Python's `zeroconf`
package (DNS-SD over multicast DNS) browses for the `_ptmp._tcp` services
that `ptmp peers --announce` announces, and announces its own for
`ptmp peers` to list; hostile announcements from it are counted and
ignored; the Python bindings' `ptmp.Peers` sees its joins and leaves. Each test runs in a fresh network namespace (loopback with
multicast on), so it neither depends on nor disturbs the host's network.

Needs root and iproute2 (`ip netns`), the `ptmp` program built
(target/debug or target/release, or $PTMP_BIN) and zeroconf; skipped with
the reason otherwise."""

import hashlib
import hmac
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from _parts import missing_part, ptmp_bin

zeroconf = pytest.importorskip("zeroconf")

ROOT = Path(__file__).resolve().parents[2]
TYPE = "_ptmp._tcp.local."
# A CURVE public key in Z85 (the server key of libzmq's own test vectors).
CURVE_KEY = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"


@pytest.fixture
def netns():
    if shutil.which("ip") is None or os.geteuid() != 0:
        missing_part("network namespaces need root and iproute2")
    name = f"ptmpdpy-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    if subprocess.run(["ip", "netns", "add", name], capture_output=True).returncode != 0:
        missing_part("cannot make a network namespace here")
    try:
        for cmd in (["link", "set", "lo", "up"], ["link", "set", "lo", "multicast", "on"]):
            subprocess.run(["ip", "-n", name] + cmd, check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name])


def in_ns(ns, argv, **kw):
    return subprocess.Popen(["ip", "netns", "exec", ns] + argv,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kw)


# The zeroconf side, run as its own process inside the namespace.
PEER = textwrap.dedent("""
    import json, socket, sys, time
    from zeroconf import (IPVersion, ServiceBrowser, ServiceInfo,
                          ServiceStateChange, Zeroconf)
    mode, arg, secs = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3])
    zc = Zeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
    TYPE = "_ptmp._tcp.local."
    if mode == "browse":
        seen = {}
        def changed(zeroconf, service_type, name, state_change):
            if state_change is ServiceStateChange.Added:
                seen[name] = None
        ServiceBrowser(zc, TYPE, handlers=[changed])
        end = time.time() + secs
        while time.time() < end and len(seen) < arg["want"]:
            time.sleep(0.1)
        out = []
        for name in list(seen):
            info = zc.get_service_info(TYPE, name, timeout=3000)
            if info is None:
                continue
            props = {k.decode(): (v.decode() if v is not None else None)
                     for k, v in info.properties.items()}
            out.append({"name": name, "port": info.port,
                        "addresses": info.parsed_addresses(), "txt": props})
        print(json.dumps(out), flush=True)
    else:
        for i, svc in enumerate(arg):
            props = {k.encode(): (bytes.fromhex(v[4:]) if isinstance(v, str)
                                  and v.startswith("hex:") else
                                  (None if v is None else v.encode()))
                     for k, v in svc["txt"].items()}
            info = ServiceInfo(TYPE, svc["instance"] + "." + TYPE,
                               addresses=[socket.inet_aton("127.0.0.1")],
                               port=svc.get("port", 9), properties=props,
                               server=f"zcpeer{i}-{svc['instance'].replace('/', '-')}.local.")
            zc.register_service(info)
        print("registered", flush=True)
        time.sleep(secs)
        zc.unregister_all_services()
    zc.close()
""")


def zc_peer(ns, mode, arg, secs):
    return in_ns(ns, [sys.executable, "-c", PEER, mode, json.dumps(arg), str(secs)])


def honest_txt(node, port, group="default", pid=4242, secret=None, instance=None, **over):
    txt = {"v": "1", "node": node, "port": port, "addr": "tcp://127.0.0.1:6000",
           "transport": "tcp", "host": "pyhost", "pid": str(pid),
           "start": str(int(time.time()) - 100), "group": group}
    txt.update(over)
    return signed(txt, secret, instance) if secret is not None else txt


def signed(txt, secret, instance):
    """The TXT entries with their signature, version 2: the signature
    version, the instance name, the addresses announced (zeroconf's
    127.0.0.1) and the time are added, then HMAC-SHA256 of every entry but
    sig, sorted by key, as "key=value\n" (an entry without a value as
    "key=\n")."""
    txt = txt | {"sv": "2", "inst": instance, "ips": "127.0.0.1",
                 "t": str(int(time.time()))}
    text = "".join(f"{k}={v or ''}\n" for k, v in sorted(txt.items()))
    return txt | {"sig": hmac.new(secret, text.encode(), hashlib.sha256).hexdigest()}


@pytest.mark.parametrize("args,says", [
    (["--announce", "a/b", "--port", "out=tcp://*:1"], 'node name "a/b"'),
    (["--announce", "a", "--port", "bad"], "give NAME=ADDRESS"),
    (["--announce", "a"], "needs at least one --port"),
    (["--secret-file", "/nonexistent/key"], "--secret-file /nonexistent/key"),
    (["--wait", "nan"], "'nan' for '--wait <DURATION>'"),
    (["--watch", "--for=-1"], "'-1' for '--for <DURATION>'"),
    (["--group", ""], "group name is empty"),
    (["--liveness-timeout", "1e18"], "longer than a year"),
    (["--liveness-timeout", "2h"], "at most an hour"),
    (["--announce", "a", "--port", "x" * 30 + "=tcp://*:1"], "more than 24"),
])
def test_bad_arguments_are_refused_before_anything_is_sent(args, says):
    # No namespace needed: each is refused before the network is touched.
    r = subprocess.run([ptmp_bin(), "peers"] + args, capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert says in r.stderr, r.stderr


def test_zeroconf_sees_what_ptmp_announces(netns):
    ann = in_ns(netns, [ptmp_bin(), "peers", "--announce", "apa1-tcs",
                        "--port", "out=tcp://*:7101", "--port", "in=tcp://127.0.0.1:7102",
                        "--wait", "0", "--for", "12"])
    try:
        assert ann.stdout.readline().strip() == "announced apa1-tcs"
        zc = zc_peer(netns, "browse", {"want": 2}, 8)
        out, err = zc.communicate(timeout=30)
        assert zc.returncode == 0, err
        got = {s["txt"]["port"]: s for s in json.loads(out)}
        assert set(got) == {"out", "in"}, out
        t = got["out"]["txt"]
        assert t["v"] == "1" and t["node"] == "apa1-tcs" and t["group"] == "default"
        assert t["addr"] == "tcp://*:7101" and t["transport"] == "tcp"
        assert t["pid"] == str(ann.pid)
        assert abs(int(t["start"]) - time.time()) < 60
        assert t["host"] == Path("/proc/sys/kernel/hostname").read_text().strip()
        assert got["in"]["txt"]["addr"] == "tcp://127.0.0.1:7102"
        assert "127.0.0.1" in got["out"]["addresses"]
        assert got["out"]["name"].startswith("apa1-tcs/out#")
    finally:
        ann.kill()
        ann.wait()


def test_an_empty_listing_says_why_it_may_be_empty(netns):
    # Nobody in the namespace: the header alone would look like a fault.
    r = subprocess.run(["ip", "netns", "exec", netns, ptmp_bin(), "peers", "--wait", "1",
                        "--group", "lonely"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["NAME", "PORTS", "HOST", "PID", "UPTIME"], r.stdout
    assert 'no peers of group "lonely" announced themselves within 1s' in r.stderr, r.stderr
    assert "same secret" in r.stderr, r.stderr


def test_ptmp_peers_lists_a_zeroconf_announcement(netns):
    zc = zc_peer(netns, "announce",
                 [{"instance": "pynode/out", "txt": honest_txt("pynode", "out")},
                  {"instance": "pynode/in", "txt": honest_txt("pynode", "in",
                                                              addr="tcp://*:6001")}], 10)
    try:
        assert zc.stdout.readline().strip() == "registered"
        r = subprocess.run(["ip", "netns", "exec", netns, ptmp_bin(), "peers", "--wait", "3"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert lines[0].split() == ["NAME", "PORTS", "HOST", "PID", "UPTIME"], r.stdout
        row = [l for l in lines if l.startswith("pynode")]
        assert len(row) == 1, r.stdout
        cols = row[0].split()
        # The wildcard address is filled in with the address zeroconf gave.
        assert "in=tcp://127.0.0.1:6001" in cols and "out=tcp://127.0.0.1:6000" in cols
        assert "pyhost" in cols and "4242" in cols
        # Started 100 s before the announcement: the uptime says so.
        m, s = cols[-1].rstrip("s").split("m")
        assert 100 <= int(m) * 60 + int(s) < 160, row
        # The same as JSON, one object per port.
        r = subprocess.run(["ip", "netns", "exec", netns, ptmp_bin(), "peers", "--wait", "3",
                            "--json"], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        ports = {p["name"]: p for p in json.loads(r.stdout)}
        assert set(ports) == {"pynode/in", "pynode/out"}, r.stdout
        p = ports["pynode/in"]
        assert p["address"] == "tcp://*:6001" and p["endpoint"] == "tcp://127.0.0.1:6001"
        assert p["pid"] == 4242 and p["host"] == "pyhost" and p["group"] == "default"
        assert 100 <= p["uptime"] < 160 and p["transport"] == "tcp"
    finally:
        zc.kill()
        zc.wait()


def test_hostile_zeroconf_announcements_are_counted_and_ignored(netns, tmp_path):
    secret = b"s3cret"
    (tmp_path / "secret").write_bytes(secret + b"\n")
    # A secret file is read only if it is private to its user.
    (tmp_path / "secret").chmod(0o600)
    watch = in_ns(netns, [ptmp_bin(), "peers", "--watch", "--for", "12",
                          "--group", "exp1", "--secret-file", str(tmp_path / "secret")])
    watch_json = in_ns(netns, [ptmp_bin(), "peers", "--watch", "--for", "12", "--json",
                               "--group", "exp1", "--secret-file", str(tmp_path / "secret")])
    time.sleep(0.5)
    good = dict(group="exp1", secret=secret)
    hostile = [
        # Bytes that are not UTF-8.
        {"instance": "h1", "txt": honest_txt("h1", "out", instance="h1", **good)
         | {"host": "hex:fffe00"}},
        # A key with no value, and no node name (signed: only the content is bad).
        {"instance": "h2", "txt": signed({"v": "1", "group": "exp1", "flag": None}, secret, "h2")},
        # Signed with the wrong secret: a forged group membership.
        {"instance": "h3", "txt": honest_txt("h3", "out", group="exp1", secret=b"guess",
                                                instance="h3")},
        # Too big: six fields of 200 bytes.
        {"instance": "h4", "txt": honest_txt("h4", "out", instance="h4", **good)
         | {f"pad{i}": "x" * 200 for i in range(6)}},
        # An honest one with its server's CURVE key, signed by the
        # independent implementation.
        {"instance": "ok", "txt": honest_txt("honest", "out", instance="ok", ck=CURVE_KEY,
                                             **good)},
        # A CURVE key that is not one (39 characters), signed.
        {"instance": "h5", "txt": honest_txt("h5", "out", instance="h5", ck=CURVE_KEY[:-1],
                                             **good)},
    ]
    # zeroconf registers one at a time, about 1.5 s each.
    zc = zc_peer(netns, "announce", hostile, 8)
    try:
        out, err = watch.communicate(timeout=40)
        assert watch.returncode == 0, err
        assert "joined honest/out tcp://127.0.0.1:6000 host pyhost pid 4242" in out, out
        counts = [l for l in out.splitlines() if l.startswith("ignored announcements")]
        assert counts, out
        last = counts[-1].split()
        n = {last[i]: int(last[i + 1]) for i in range(2, len(last) - 1, 2)}
        assert n["malformed"] >= 3 and n["forged"] >= 1 and n["oversized"] >= 1, counts[-1]
        for bad in ("h1", "h2", "h3", "h4", "h5"):
            assert f"joined {bad}/" not in out
        # The same seen as JSON lines.
        jout, err = watch_json.communicate(timeout=40)
        assert watch_json.returncode == 0, err
        events = [json.loads(l) for l in jout.splitlines()]
        joined = [e["peer"] for e in events if e["event"] == "joined"]
        assert [p["name"] for p in joined] == ["honest/out"], events
        assert joined[0]["curve_key"] == CURVE_KEY, joined
        ignored = [e for e in events if e["event"] == "ignored"][-1]
        assert ignored["malformed"] >= 3 and ignored["forged"] >= 1, ignored
        assert ignored["oversized"] >= 1, ignored
    finally:
        zc.kill()
        zc.wait()


def test_a_name_held_by_zeroconf_is_refused_to_ptmp(netns):
    zc = zc_peer(netns, "announce",
                 [{"instance": "twin/out", "txt": honest_txt("twin", "out")}], 10)
    try:
        assert zc.stdout.readline().strip() == "registered"
        r = subprocess.run(["ip", "netns", "exec", netns, ptmp_bin(), "peers", "--announce",
                            "twin", "--port", "out=tcp://*:7103", "--wait", "3", "--for", "1"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 1, (r.stdout, r.stderr)
        # Both locations: the one present (zeroconf's) and ours.
        assert "tcp://127.0.0.1:6000 on pyhost (pid 4242)" in r.stderr, r.stderr
        assert "tcp://*:7103" in r.stderr, r.stderr
    finally:
        zc.kill()
        zc.wait()


def test_python_peers_announces_and_iterates_events(netns):
    pytest.importorskip("ptmp")
    code = textwrap.dedent("""
        import json, ptmp
        with ptmp.Peers() as p:
            p.announce("pyself", {"out": "tcp://*:7401"})
            print("announced", flush=True)
            seen = []
            for ev in p:
                seen.append([ev["event"], ev["peer"]["name"]])
                if ev["event"] == "left" and ev["peer"]["name"] == "zc/out":
                    break
            me = p.resolve("pyself", "out", 5.0)
            try:
                p.resolve("ghost", "out", 0.3)
                missing = None
            except ptmp.PtmpError as e:
                missing = str(e)
            print(json.dumps({"seen": seen, "me": me, "missing": missing,
                              "listed": [x["name"] for x in p.list()]}), flush=True)
    """)
    me = in_ns(netns, [sys.executable, "-c", code])
    zc = None
    try:
        assert me.stdout.readline().strip() == "announced"
        # zeroconf announces for 3 s, then says goodbye.
        zc = zc_peer(netns, "announce", [{"instance": "zc/out", "txt": honest_txt("zc", "out")}], 3)
        out, err = me.communicate(timeout=40)
        assert me.returncode == 0, err
        got = json.loads(out.strip().splitlines()[-1])
        seen = got["seen"]
        assert ["joined", "zc/out"] in seen and seen[-1] == ["left", "zc/out"], seen
        assert seen.index(["joined", "zc/out"]) < seen.index(["left", "zc/out"])
        assert got["me"]["endpoint"] == "tcp://127.0.0.1:7401"
        assert got["me"]["pid"] == me.pid and got["me"]["transport"] == "tcp"
        assert "ghost/out" in got["missing"]
        assert got["listed"] == ["pyself/out"], got["listed"]
    finally:
        me.kill()
        me.wait()
        if zc is not None:
            zc.kill()
            zc.wait()
