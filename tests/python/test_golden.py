"""ptmp's TPSet bytes held against Python's protobuf package, an independent
implementation built here from a hand-written descriptor of PTMP's schema.

The committed vectors (crates/ptmp-data/tests/vectors/golden.json) were made
by Python protobuf; the Rust tests check ptmp against them, these tests check
them against Python protobuf and run ptmp's codec on Python's bytes and the
reverse through the `golden` example.
"""

import json
import pathlib
import random
import shutil
import subprocess

import pytest
from google.protobuf.message import DecodeError

import make_vectors
import ptmp_pb

ROOT = pathlib.Path(__file__).resolve().parents[2]
VECTORS = ROOT / "crates/ptmp-data/tests/vectors/golden.json"


def committed():
    return json.loads(VECTORS.read_text())


def test_committed_vectors_are_what_python_protobuf_serializes():
    assert committed() == make_vectors.vectors()


@pytest.mark.parametrize("case", committed(), ids=lambda c: c["name"])
def test_python_parses_each_vector_back(case):
    t = ptmp_pb.TPSet()
    t.ParseFromString(bytes.fromhex(case["hex"]))
    assert t.IsInitialized()
    assert ptmp_pb.to_dict(t) == case["tpset"]
    assert t.SerializeToString().hex() == case["hex"]


def test_optional_zero_is_present_not_absent():
    case = next(c for c in committed() if c["name"].startswith("optionals set to zero"))
    t = ptmp_pb.TPSet()
    t.ParseFromString(bytes.fromhex(case["hex"]))
    assert t.HasField("tspan") and t.tspan == 0
    assert t.tps[0].HasField("flags") and t.tps[0].flags == 0


def test_python_refuses_a_set_missing_a_required_field():
    # count=1, detid=2 only: created and tstart are missing. C++ protobuf's
    # ParseFromString fails on it; Python's backends either raise or parse
    # partially and report the message uninitialized.
    t = ptmp_pb.TPSet()
    try:
        t.ParseFromString(bytes.fromhex("08011002"))
    except DecodeError:
        return
    assert not t.IsInitialized()
    assert sorted(t.FindInitializationErrors()) == ["created", "tstart"]


def golden(*args, stdin=None):
    cargo = shutil.which("cargo")
    if cargo is None:
        pytest.skip("cargo is not on PATH: cannot run ptmp's codec")
    r = subprocess.run(
        [cargo, "run", "-q", "-p", "ptmp-data", "--example", "golden", "--", *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_ptmp_encodes_exactly_as_python():
    lines = golden("encode", str(VECTORS))
    assert lines == [c["hex"] for c in committed()]


def random_set(rng):
    d = {
        "count": rng.randrange(2**32),
        "detid": rng.randrange(2**32),
        "created": rng.randrange(-(2**63), 2**63),
        "tstart": rng.randrange(2**64),
    }
    for k in ("tspan", "chanbeg", "chanend", "totaladc"):
        if rng.random() < 0.5:
            d[k] = rng.choice([0, 1, 127, 128, rng.randrange(2**32)])
    tps = []
    for _ in range(rng.randrange(6)):
        tp = {"channel": rng.randrange(2**32), "tstart": rng.randrange(2**64)}
        for k in ("tspan", "adcsum", "adcpeak", "flags"):
            if rng.random() < 0.5:
                tp[k] = rng.randrange(2**32)
        tps.append(tp)
    if tps:
        d["tps"] = tps
    return d


def test_ptmp_decodes_what_python_serializes():
    rng = random.Random(20261122)
    sets = [random_set(rng) for _ in range(50)]
    hexes = [ptmp_pb.from_dict(d).SerializeToString().hex() for d in sets]
    # Python serializes a partial message only when asked to; ptmp must refuse it.
    partial = ptmp_pb.TPSet(count=1, detid=2).SerializePartialToString().hex()
    out = golden("decode", stdin="\n".join(hexes + [partial]) + "\n")
    assert len(out) == 51
    for d, line in zip(sets, out):
        assert json.loads(line) == d
    err = json.loads(out[-1])["error"]
    assert "missing required field 'created'" in err


# ------------------------------------------------------------ lenient cases

LENIENT = ROOT / "crates/ptmp-data/tests/vectors/lenient.json"


def lenient():
    return json.loads(LENIENT.read_text())


def test_lenient_cases_are_the_committed_bytes():
    cases = lenient()
    assert [(c["name"], c["hex"]) for c in cases] == [
        (n, d.hex()) for n, d in make_vectors.lenient_cases()
    ]
    assert len(cases) >= 150


@pytest.mark.parametrize("case", lenient(), ids=lambda c: c["name"])
def test_this_protobuf_backend_does_what_is_recorded(case):
    # Run under each backend (PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=upb or
    # =python) to check both columns of the file.
    name = make_vectors.backend()
    if name not in make_vectors.BACKENDS:
        pytest.skip(f"protobuf backend {name!r} has no recorded column")
    assert make_vectors.outcome(bytes.fromhex(case["hex"])) == case[name]


def test_the_backends_differ_only_where_recorded():
    # The pure-Python backend compares keys as bytes and has its own limits:
    # these are the only cases where ptmp cannot agree with both backends.
    differ = sorted(c["name"] for c in lenient() if c["upb"] != c["python"])
    assert differ == sorted(
        [
            "100 nested groups in TPSet",
            "end-group key in 5 bytes",
            "count key in 2 bytes",
            "count key in 5 bytes",
            "unknown key in 6 bytes",
            "unknown key in 10 bytes",
            "length prefix in 6 bytes",
            "length prefix in 10 bytes",
            "tps length prefix in 6 bytes",
            "tps length prefix in 10 bytes",
            "key past 32 bits",
        ]
    )


def test_ptmp_accepts_and_refuses_as_upb_does():
    cases = lenient()
    out = golden("decode", stdin="\n".join(c["hex"] for c in cases) + "\n")
    assert len(out) == len(cases)
    live = make_vectors.backend() == "upb"
    wrong = []
    for c, line in zip(cases, out):
        got = json.loads(line)
        got = "error" if "error" in got else got
        want = make_vectors.outcome(bytes.fromhex(c["hex"])) if live else c["upb"]
        if got != want:
            wrong.append(f"{c['name']}: ptmp {got}, protobuf {want}")
    assert not wrong, "\n".join(wrong)
