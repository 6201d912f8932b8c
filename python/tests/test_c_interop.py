"""The C++ side of ptmp (crates/ptmp-c: ptmp.hpp over libptmp.a) with the
Python side, in real processes: a Python sender to a C++ receiver written
with PTMP's call shape, and a C++ shared-memory writer of 6 MB frames,
filled in place, to a Python reader that looks at them through NumPy
without a copy.

The C++ programs are built here with the system c++ against the libptmp.a
that `cargo build -p ptmp-c` left in the target directory (scripts/test.sh
builds it before the tests)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from _parts import missing_part

import ptmp

ROOT = Path(__file__).resolve().parents[2]
CRATE = ROOT / "crates" / "ptmp-c"
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
LIB = TARGET / "debug" / "libptmp.a"
TAG = f"cxx{os.getpid()}"


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """Compiles tests/cpp/NAME.cpp once per module; returns its path."""
    if shutil.which("c++") is None:
        missing_part("no C++ compiler (c++) on the PATH")
    if not LIB.exists():
        missing_part(f"{LIB} is missing: run `cargo build -p ptmp-c` first")
    out = tmp_path_factory.mktemp("cxx")
    built = {}

    def make(name):
        if name not in built:
            exe = out / name
            cmd = ["c++", "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror",
                   "-I", str(CRATE / "include"), str(CRATE / "tests" / "cpp" / f"{name}.cpp"),
                   str(LIB), "-lstdc++", "-lpthread", "-ldl", "-lm", "-lrt", "-o", str(exe)]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, f"{' '.join(cmd)}\n{r.stderr}"
            built[name] = exe
        return built[name]

    return make


def expected(i):
    """Set number i as the C++ receiver checks it (tests/cpp/receiver.cpp)."""
    n = i % 7
    tps = [ptmp.TrigPrim(5 + k, 7_000_000_000 + 25 * i + k, 3, 10 * k, 0xFFFFFFF0 + k, i % 2)
           for k in range(n)]
    return ptmp.TPSet(count=i, detid=11, created=1_700_000_000_000_000 + i,
                      tstart=7_000_000_000 + 25 * i, tspan=25, chanbeg=5, chanend=5 + n,
                      totaladc=1000 + i, tps=tps)


def test_python_sender_to_cpp_receiver(build):
    exe = build("receiver")
    n = 40
    with ptmp.Sender({"socket": {"type": "PUSH", "bind": ["tcp://127.0.0.1:*"]}}) as tx:
        cfg = '{"socket":{"type":"PULL","connect":["%s"]}}' % tx.bound_endpoints[0]
        child = subprocess.Popen([str(exe), cfg, str(n)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        try:
            for i in range(n):
                tx.send(expected(i))
            out, err = child.communicate(timeout=60)
        finally:
            if child.poll() is None:
                child.kill()
    assert child.returncode == 0, f"stdout:\n{out}\nstderr:\n{err}"
    assert f"received {n}, then a timeout" in out


def test_cpp_shm_writer_of_6mb_frames_to_numpy_views(build):
    np = pytest.importorskip("numpy")
    exe = build("shm_writer")
    name = f"{TAG}-frames"
    frames, size = 6, 6 * 1024 * 1024
    words = size // 4
    child = subprocess.Popen([str(exe), name, str(frames), str(size)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready = child.stdout.readline()
        assert ready == f"ready {size}\n", ready + child.stderr.read()
        # Attached before the writer starts (it waits for our line), and the
        # channel blocks the writer for us, so every frame comes.
        r = ptmp.ShmReader(name, start="next", timeout=10.0)
        child.stdin.write("go\n")
        child.stdin.flush()
        base, length = r.mapping
        k = np.arange(words, dtype=np.uint64)
        for f in range(frames):
            with r.view(timeout=30.0) as v:
                assert v is not None, f"frame {f} did not come"
                assert len(v) == size and v.seq == f and v.lost == 0
                a = np.frombuffer(v, dtype=np.uint32)
                # Zero-copy: the array's memory is the reader's mapping of
                # the ring, not a copy of it.
                assert base <= a.ctypes.data and a.ctypes.data + a.nbytes <= base + length
                want = ((f * 1000003 + k) & 0xFFFFFFFF).astype(np.uint32)
                same = np.array_equal(a, want)
                # The seqlock check after use: what was compared was whole.
                assert v.valid()
                assert same, f"frame {f}: first words {a[:4]} want {want[:4]}"
                del a
        assert child.stdout.readline() == f"wrote {frames}\n"
        child.stdin.write("done\n")
        child.stdin.flush()
        assert child.wait(timeout=30) == 0, child.stderr.read()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        ptmp.shm_remove(name)
