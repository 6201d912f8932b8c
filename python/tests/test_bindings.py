"""The Python bindings: schema objects, every transport, pyzmq interop byte
for byte, dump files, zero-copy shared memory between two processes, agents,
timeouts, Ctrl-C and errors."""

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import ptmp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "python"))
import ptmp_pb  # noqa: E402  (the independent protobuf descriptor)

TAG = f"py{os.getpid()}"


def remove_shm(name):
    """Remove a channel this test made (its segment outlives its writer)."""
    path = os.path.join(os.environ.get("PTMP_SHM_DIR", "/dev/shm"), f"ptmp.{name}")
    if os.path.exists(path):
        os.remove(path)


def sample(i=7, ntps=3):
    return ptmp.TPSet(
        count=i, detid=5, created=ptmp.now_us(), tstart=1000 * i, tspan=50,
        chanbeg=10, chanend=10 + ntps - 1, totaladc=30 * ntps,
        tps=[ptmp.TrigPrim(channel=10 + k, tstart=1000 * i + k, tspan=5, adcsum=30, adcpeak=9, flags=0)
             for k in range(ntps)],
    )


def test_tpset_objects_dicts_and_bytes_agree_with_protobuf():
    s = sample()
    assert len(s) == 3 and s.tps[1].channel == 11
    d = s.to_dict()
    assert ptmp.TPSet.from_dict(d) == s
    b = s.to_bytes()
    assert ptmp.TPSet.from_bytes(b) == s
    # An independent protobuf implementation reads our bytes and writes ones we read.
    pb = ptmp_pb.TPSet()
    pb.ParseFromString(b)
    assert ptmp_pb.to_dict(pb) == d
    assert ptmp.TPSet.from_bytes(ptmp_pb.from_dict(d).SerializeToString()) == s
    s.tps = [ptmp.TrigPrim(channel=1)]
    s.count = 99
    assert len(s) == 1 and s.count == 99
    with pytest.raises(ValueError, match='no field "bogus"'):
        ptmp.TPSet.from_dict({"bogus": 1})
    with pytest.raises(ptmp.WireError):
        ptmp.TPSet.from_bytes(b"\x08")  # truncated


@pytest.mark.parametrize("transport", ["inproc", "ipc", "tcp", "shm"])
def test_round_trip_on_every_transport(transport, tmp_path):
    name = f"{TAG}-{transport}"
    ep = {
        "inproc": f"inproc://{name}",
        "ipc": f"ipc://{tmp_path}/s.ipc",
        "tcp": "tcp://127.0.0.1:*",
        "shm": f"shm://{name}",
    }[transport]
    sock = {"type": "PUSH", "bind": [ep]}
    if transport == "shm":
        # This one thread sends all 200 before it receives: the ring must
        # hold them (a default ring holds 128 unread, then the writer waits).
        sock["shm_slots"] = 256
    with ptmp.Sender({"socket": sock}) as tx:
        if transport == "tcp":
            ep = tx.bound_endpoints[0]
        with ptmp.Receiver({"socket": {"type": "PULL", "connect": [ep]}}) as rx:
            sent = [sample(i, ntps=i % 4) for i in range(200)]
            tx.send_many(sent[:100])
            for s in sent[100:]:
                tx.send(s)
            got = []
            while len(got) < 200:
                batch = rx.recv_many(64, timeout=5.0)
                assert batch, f"timed out after {len(got)}"
                got.extend(batch)
            assert got == sent
            assert rx.recv(timeout=0.05) is None
            assert rx.received == 200 and tx.sent == 200
    if transport == "shm":
        remove_shm(name)


def test_recv_timeout_returns_none_promptly():
    rx = ptmp.Receiver({"socket": {"type": "PULL", "bind": ["tcp://127.0.0.1:*"]}})
    t0 = time.monotonic()
    assert rx.recv(timeout=0.3) is None
    assert 0.25 <= time.monotonic() - t0 < 2.0
    assert rx.recv_frames(timeout=0.0) is None


def test_pyzmq_interop_both_ways_byte_for_byte():
    zmq = pytest.importorskip("zmq")
    ctx = zmq.Context()
    s = sample(42, ntps=5)
    payload = s.to_bytes()
    # pyzmq PUSH -> ptmp Receiver.
    push = ctx.socket(zmq.PUSH)
    port = push.bind_to_random_port("tcp://127.0.0.1")
    rx = ptmp.Receiver({"socket": {"type": "PULL", "connect": [f"tcp://127.0.0.1:{port}"]}})
    push.send_multipart([b"\x00\x00\x00\x00", payload])
    assert rx.recv(timeout=5.0) == s
    # A message that is not PTMP's raises and is counted; the next one works.
    push.send_multipart([b"\x01\x00\x00\x00", payload])
    with pytest.raises(ptmp.WireError):
        rx.recv(timeout=5.0)
    assert rx.errors == 1
    push.send_multipart([b"\x00\x00\x00\x00", payload])
    assert rx.recv(timeout=5.0) == s
    # ptmp Sender -> pyzmq PULL: exactly the two frames PTMP sends.
    tx = ptmp.Sender({"socket": {"type": "PUSH", "bind": ["tcp://127.0.0.1:*"]}})
    pull = ctx.socket(zmq.PULL)
    pull.connect(tx.bound_endpoints[0])
    tx.send(s)
    assert pull.poll(5000)
    frames = pull.recv_multipart()
    assert frames == [ptmp.VERSION_FRAME, payload] and frames[0] == b"\x00\x00\x00\x00"
    tx.send_frames([b"a", b"bc", b""])
    assert pull.poll(5000)
    assert pull.recv_multipart() == [b"a", b"bc", b""]
    tx.close()
    for sock in (push, pull):
        sock.close(0)
    ctx.term()


def test_dump_files(tmp_path):
    p = tmp_path / "x.dump"
    sets = [sample(i) for i in range(5)]
    with ptmp.DumpWriter(p) as w:
        for s in sets:
            w.write_tpset(s)
        w.write([b"not", b"a", b"tpset"])
    msgs = ptmp.read_dump(p)
    assert len(msgs) == 6 and msgs[0] == [ptmp.VERSION_FRAME, sets[0].to_bytes()]
    assert msgs[5] == [b"not", b"a", b"tpset"]
    with pytest.raises(ptmp.WireError, match=r"record 5: message has 3 frame\(s\)"):
        ptmp.read_tpsets(p)
    q = tmp_path / "y.dump"
    with ptmp.DumpWriter(q) as w:
        for s in sets:
            w.write_tpset(s)
    assert ptmp.read_tpsets(q) == sets
    # A truncated file names the offset.
    data = q.read_bytes()
    (tmp_path / "z.dump").write_bytes(data[:-3])
    with pytest.raises(ptmp.WireError, match="z.dump"):
        ptmp.read_dump(tmp_path / "z.dump")



def test_rows_are_one_per_trigprim_with_the_sets_columns(tmp_path):
    p = tmp_path / "rows.dump"
    sets = [sample(0, ntps=2), sample(1, ntps=0), sample(2, ntps=1)]
    with ptmp.DumpWriter(p) as w:
        for s in sets:
            w.write_tpset(s)
    cols = ptmp.read_rows(p)
    assert list(cols) == ["set", "count", "detid", "created", "set_tstart", "set_tspan",
                          "chanbeg", "chanend", "totaladc", "channel", "tstart", "tspan",
                          "adcsum", "adcpeak", "flags"]
    assert all(len(c) == 4 for c in cols.values())
    assert cols["set"] == [0, 0, 1, 2]
    assert cols["set_tstart"] == [0, 0, 1000, 2000]
    # The set of no TrigPrims is kept, as one row without a TrigPrim.
    assert cols["channel"] == [10, 11, None, 10]
    assert cols["tstart"] == [0, 1, None, 2000]
    assert cols["created"][:2] == [sets[0].created] * 2


def test_formats_ptmp_does_not_write_are_refused_by_name(tmp_path):
    with pytest.raises(ptmp.PtmpError, match=r"run\.h5: ptmp does not read or write HDF5 files yet"):
        ptmp.DumpWriter(tmp_path / "run.h5")
    with pytest.raises(ptmp.PtmpError, match="HDF5"):
        ptmp.read_rows(tmp_path / "tps.hdf5")
    assert not (tmp_path / "run.h5").exists()


def test_dump_message_of_no_frames_is_refused_both_ways(tmp_path):
    p = tmp_path / "e.dump"
    with ptmp.DumpWriter(p) as w:
        w.write([b"a"])
        with pytest.raises(ptmp.PtmpError, match="no frames"):
            w.write([])
    assert p.read_bytes() == (2).to_bytes(8, "little") + b"\x01a"
    # One written by other means: an error naming file, record and byte.
    p.write_bytes(p.read_bytes() + (0).to_bytes(8, "little"))
    with pytest.raises(ptmp.WireError, match=r"e\.dump: .*record 1 at byte 10: .*no frames"):
        ptmp.read_dump(p)


def test_dump_claiming_more_than_it_holds_fails_naming_record_and_byte(tmp_path):
    # 13 bytes whose record claims 1 GiB: an error, not a 1 GiB allocation.
    p = tmp_path / "short.dump"
    p.write_bytes((1 << 30).to_bytes(8, "little") + b"\x03abc\x00")
    with pytest.raises(ptmp.WireError, match=r"short\.dump: .*record 0 at byte 0: .*ends after 5"):
        ptmp.read_dump(p)

def test_config_errors_name_key_and_value():
    with pytest.raises(ptmp.ConfigError, match=r"socket.type = \"PUL\""):
        ptmp.Sender({"socket": {"type": "PUL", "bind": ["tcp://127.0.0.1:*"]}})
    with pytest.raises(ptmp.ConfigError, match="tcp endpoint needs HOST:PORT"):
        ptmp.Receiver('{"socket":{"type":"PULL","connect":["tcp://localhost"]}}')


IMAGE = 6_220_800  # 1920 x 1080 x 3


def test_shm_image_zero_copy_between_processes():
    np = pytest.importorskip("numpy")
    name = f"{TAG}-image"
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, numpy as np, ptmp
            w = ptmp.ShmWriter({name!r}, slots=4, max_message={IMAGE}, policy="overwrite")
            img = (np.arange({IMAGE}, dtype=np.uint64) * 2654435761 >> 13).astype(np.uint8)
            w.publish(img)
            print("published", flush=True)
            sys.stdin.readline()  # stay alive until the reader is done
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert writer.stdout.readline().strip() == "published"
        r = ptmp.ShmReader(name, start="oldest", timeout=5.0)
        v = r.view(timeout=5.0)
        assert v is not None and len(v) == IMAGE and v.seq == 0
        base, size = r.mapping
        assert base <= v.address and v.address + IMAGE <= base + size, "the view is the ring slot"
        mv = memoryview(v)
        assert mv.readonly and mv.nbytes == IMAGE
        arr = v.numpy()
        assert arr.shape == (IMAGE,) and not arr.flags.writeable
        assert arr.__array_interface__["data"][0] == v.address, "NumPy shares the slot"
        want = (np.arange(IMAGE, dtype=np.uint64) * 2654435761 >> 13).astype(np.uint8)
        assert hashlib.sha256(mv).digest() == hashlib.sha256(want.tobytes()).digest()
        assert v.valid()
        # The reader cannot move on while the view is held; a view with
        # live buffers cannot be released.
        with pytest.raises(ptmp.ShmError, match="still held"):
            r.recv(timeout=0)
        with pytest.raises(ptmp.ShmError, match="still use this view"):
            v.release()
        del mv, arr
        v.release()
        assert r.recv(timeout=0.05) is None
        assert r.read_at(0)[:16] == want[:16].tobytes()  # history
    finally:
        writer.stdin.write("done\n")
        writer.stdin.flush()
        writer.wait(10)
        remove_shm(name)


def test_shm_overwritten_view_is_detected():
    name = f"{TAG}-torn"
    w = ptmp.ShmWriter(name, slots=2, max_message=64)
    r = ptmp.ShmReader(name, start="next")
    w.publish(b"first")
    v = r.view(timeout=1.0)
    assert bytes(memoryview(v)) == b"first" and v.valid()
    # The writer laps the reader (overwrite policy): the held slot is reused.
    for i in range(4):
        w.publish(b"x%d" % i)
    assert not v.valid()
    v.release()
    remove_shm(name)


def test_run_an_agent_config(tmp_path):
    src = tmp_path / "in.dump"
    with ptmp.DumpWriter(src) as w:
        for i in range(50):
            w.write_tpset(sample(i))
    out = tmp_path / "out.dump"
    cfg = {"ttl": 1.0, "snooze": 100, "proxies": [
        {"name": "src", "type": "czmqat", "data": {
            "ifile": str(src), "output": {"socket": {"type": "PUSH", "bind": [f"inproc://{TAG}-a"]}}}},
        {"name": "f", "type": "filter", "data": {"engine": "passthrough",
            "input": {"socket": {"type": "PULL", "connect": [f"inproc://{TAG}-a"]}},
            "output": {"socket": {"type": "PUSH", "bind": [f"inproc://{TAG}-b"]}}}},
        {"name": "sink", "type": "czmqat", "data": {
            "input": {"socket": {"type": "PULL", "connect": [f"inproc://{TAG}-b"]}}, "ofile": str(out)}},
    ]}
    reports = ptmp.run(cfg)
    by = {r["name"]: r for r in reports}
    assert by["sink"]["copied"] == 50 and by["f"]["in"] == 50
    got = ptmp.read_tpsets(out)
    assert [s.tstart for s in got] == [s.tstart for s in (sample(i) for i in range(50))]
    with pytest.raises(ptmp.ConfigError, match="agent f: engine"):
        cfg["proxies"][1]["data"]["engine"] = "nope"
        ptmp.run(cfg)


def test_ctrl_c_interrupts_a_blocking_recv():
    p = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import signal
            # Python turns SIGINT into KeyboardInterrupt only if it was not
            # ignored when it started (under nohup or some CI runners it is).
            signal.signal(signal.SIGINT, signal.default_int_handler)
            import ptmp
            rx = ptmp.Receiver({"socket": {"type": "PULL", "bind": ["tcp://127.0.0.1:*"]}})
            try:
                print("waiting", flush=True)
                rx.recv()
            except KeyboardInterrupt:
                print("interrupted", flush=True)
        """)],
        stdout=subprocess.PIPE, text=True,
    )
    assert p.stdout.readline().strip() == "waiting"
    time.sleep(0.3)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=10)
    assert "interrupted" in out
    assert time.monotonic() - t0 < 2.0


def test_bench_script_smoke():
    bench = os.path.join(HERE, "..", "bench", "send_recv.py")
    r = subprocess.run([sys.executable, bench, "-n", "2000"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "| ptmp send_many/recv_many |" in r.stdout and "| pyzmq + protobuf |" in r.stdout


def _chain_graph(tmp_path, name):
    out = tmp_path / "out.dump"
    return out, {
        "name": name,
        "nodes": [
            {"name": "src", "type": "source", "data": {"count": 300, "tps": 2}},
            {"name": "w", "type": "worker"},
            {"name": "snk", "type": "sink", "data": {"count": 300, "ofile": str(out)}},
        ],
        "edges": [
            {"from": "src.out", "to": "w.in", "pattern": "pushpull"},
            {"from": "w.out", "to": "snk.in", "pattern": "pushpull"},
        ],
    }


def test_graph_check_names_the_problem(tmp_path):
    _, g = _chain_graph(tmp_path, "pycheck")
    text = ptmp.graph_check(g, run_dir=str(tmp_path / "run"))
    assert "3 processes" in text and "pushpull over shm" in text
    g["edges"].pop()
    with pytest.raises(ptmp.ConfigError, match="node w: port out is not connected"):
        ptmp.graph_check(g)


def test_run_graph_from_python(tmp_path):
    out, g = _chain_graph(tmp_path, "pyrun")
    r = ptmp.run_graph(g, run_dir=str(tmp_path / "run"), ttl=60)
    assert r["ok"] and r["reason"] == "finished", r
    assert r["restarts"] == {"src": 0, "w": 0, "snk": 0}
    reports = {rep["name"]: rep for p in r["processes"] for rep in p["reports"]}
    assert reports["snk"]["counters"]["received"] == 300
    assert reports["w"]["counters"]["forwarded"] == 300
    # The graph's state by the rules `ptmp graph status --json`, `ptmp top`
    # and the monitor use: every node and process ended by itself or was
    # stopped when its inputs ended, and each edge carried every set once,
    # counted by the sockets at both ends (kept past their close).
    st = r["status"]
    assert st["graph"] == "pyrun"
    assert st["states"] == {"src": "finished", "w": "stopped", "snk": "finished"}, st
    assert st["process_states"] == st["states"], st
    edges = {e["id"]: e for e in st["edges"]}
    assert [(e["from"], e["to"]) for e in edges.values()] == [(["src.out"], ["w.in"]), (["w.out"], ["snk.in"])]
    for e in edges.values():
        assert (e["sent"], e["received"], e["lost"], e["sockets"]) == (300, 300, 0, [1, 1]), e
        assert e["rate"] == 0.0 and e["transport"] == "shm", e
    sets = list(ptmp.read_tpsets(str(out)))
    assert [s.count for s in sets] == list(range(300))
    assert all(len(s.tps) == 2 for s in sets)
