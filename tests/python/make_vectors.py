"""Write the vectors ptmp's codec is checked against, made by Python's
protobuf package (not by ptmp):

* crates/ptmp-data/tests/vectors/golden.json: TPSet cases and their bytes as
  protobuf serializes them;
* crates/ptmp-data/tests/vectors/lenient.json: hand-built byte strings that
  stretch the wire format (unknown fields of every wire type, nested groups,
  long varints, over-long keys and lengths, deep nesting) and what protobuf's
  parser makes of each, under both of its Python backends: "upb" (the C
  implementation, protobuf's default, which agrees with C++ protobuf) and
  "python" (the pure-Python one). ptmp follows upb; the few cases where the
  pure-Python backend differs are recorded as such.

    python3 tests/python/make_vectors.py
"""

import json
import os
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import ptmp_pb  # noqa: E402

VECTOR_DIR = pathlib.Path(__file__).parents[2] / "crates/ptmp-data/tests/vectors"
OUT = VECTOR_DIR / "golden.json"
LENIENT = VECTOR_DIR / "lenient.json"
BACKENDS = ("upb", "python")

U32MAX, U64MAX = 2**32 - 1, 2**64 - 1


def cases():
    yield "required only, all zero", {"count": 0, "detid": 0, "created": 0, "tstart": 0}
    yield "extremes", {
        "count": U32MAX,
        "detid": U32MAX,
        "created": -1,
        "tstart": U64MAX,
    }
    yield "realistic header", {
        "count": 1797,
        "detid": 0x00010203,
        "created": 1700000000123456,
        "tstart": 88_000_000_123,
    }
    yield "negative created", {"count": 5, "detid": 1, "created": -1700000000123456, "tstart": 1}
    yield "every optional set", {
        "count": 42,
        "detid": 7,
        "created": 1700000000000001,
        "tstart": 123456789012,
        "tspan": 25,
        "chanbeg": 100,
        "chanend": 163,
        "totaladc": 98765,
        "tps": [
            {"channel": 100, "tstart": 123456789012, "tspan": 10, "adcsum": 500, "adcpeak": 60, "flags": 0},
        ],
    }
    yield "optionals set to zero are still encoded", {
        "count": 1,
        "detid": 2,
        "created": 3,
        "tstart": 4,
        "tspan": 0,
        "chanbeg": 0,
        "chanend": 0,
        "totaladc": 0,
        "tps": [{"channel": 0, "tstart": 0, "tspan": 0, "adcsum": 0, "adcpeak": 0, "flags": 0}],
    }
    yield "trigprims with some optionals", {
        "count": 9,
        "detid": 3,
        "created": 1600000000000000,
        "tstart": 5000,
        "tps": [
            {"channel": 1, "tstart": 5000},
            {"channel": 2, "tstart": 5001, "adcsum": 300},
            {"channel": U32MAX, "tstart": U64MAX, "flags": U32MAX},
            {"channel": 4, "tstart": 5003, "tspan": 3, "adcpeak": 20},
        ],
    }
    tps = []
    for i in range(100):
        tp = {"channel": (i * 37) % 2560, "tstart": 1_000_000 + i * 13}
        if i % 2 == 0:
            tp["tspan"] = i % 17
        if i % 3 == 0:
            tp["adcsum"] = i * 1000
        if i % 5 == 0:
            tp["adcpeak"] = i * 7
        if i % 7 == 0:
            tp["flags"] = i
        tps.append(tp)
    yield "100 trigprims", {
        "count": 100000,
        "detid": 12,
        "created": 1712345678901234,
        "tstart": 1_000_000,
        "tspan": 1300,
        "chanbeg": 0,
        "chanend": 2553,
        "tps": tps,
    }


def vectors():
    return [
        {"name": n, "tpset": d, "hex": ptmp_pb.from_dict(d).SerializeToString().hex()}
        for n, d in cases()
    ]


# ------------------------------------------------------------ lenient cases


def varint(n, width=None):
    """n as a varint; with `width`, padded to that many bytes (non-canonical)."""
    out = []
    while True:
        b, n = n & 0x7F, n >> 7
        if n == 0 and (width is None or len(out) + 1 >= width):
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)


def key(field, wire_type, width=None):
    return varint(field << 3 | wire_type, width)


BASE = bytes.fromhex("0800100018002000")  # the required fields, all zero
TP = bytes.fromhex("08001000")  # a TrigPrim's required fields, all zero


def tps(body):
    return key(9, 2) + varint(len(body)) + body


def group(field, body=b"", depth=1):
    return key(field, 3) * depth + body + key(field, 4) * depth


def unknowns(field):
    """One unknown field of each wire type, numbered `field`."""
    yield "varint", key(field, 0) + varint(150)
    yield "fixed64", key(field, 1) + bytes(range(8))
    yield "length-delimited", key(field, 2) + varint(3) + b"abc"
    yield "empty group", group(field)
    yield "fixed32", key(field, 5) + bytes(range(4))


def lenient_cases():
    """(name, bytes) pairs; what protobuf makes of each is computed, not assumed."""
    u64max = 2**64 - 1
    for field in (10, 15, 16, 2**29 - 1):
        for wt, b in unknowns(field):
            yield f"unknown {wt} field {field} in TPSet", BASE + b
            yield f"unknown {wt} field {field} in TrigPrim", BASE + tps(TP + b)
    # Known field numbers with another wire type are unknown fields.
    for field in (1, 4, 9):
        for wt, b in unknowns(field):
            if not b.startswith(key(field, 0 if field != 9 else 2)):
                yield f"known field {field} as {wt}", BASE + b
    every = b"".join(b for _, b in unknowns(20))
    yield "group holding every wire type", BASE + group(15, every)
    yield "group in a group", BASE + group(15, group(16, every))
    yield "group in a group of the same field", BASE + group(15, group(15))
    yield "group holding a tps field", BASE + group(15, tps(TP))
    yield "group in TrigPrim holding a group", BASE + tps(TP + group(15, group(16, every)))
    yield "group before required fields", group(15, every) + BASE
    for depth in (99, 100, 101):
        yield f"{depth} nested groups in TPSet", BASE + group(15, depth=depth)
        yield f"{depth} nested groups in TrigPrim", BASE + tps(TP + group(15, depth=depth))
    yield "end-group key in 5 bytes", BASE + key(15, 3) + key(15, 4, 5)
    # Malformed groups.
    yield "group end for another field", BASE + key(15, 3) + key(16, 4)
    yield "inner group closed by outer end", BASE + key(15, 3) + key(16, 3) + key(15, 4)
    yield "group never ended", BASE + key(15, 3) + key(20, 0) + varint(1)
    yield "end-group with no group", BASE + key(15, 4)
    yield "end-group first", key(15, 4) + BASE
    yield "end-group with no group in TrigPrim", BASE + tps(TP + key(15, 4))
    yield "group running past its TrigPrim", BASE + tps(TP + key(15, 3)) + key(15, 4)
    yield "group ended by field 0", BASE + key(15, 3) + key(0, 4)
    yield "truncated fixed64 in group", BASE + key(15, 3) + key(20, 1) + bytes(4)
    yield "truncated fixed32 in group", BASE + key(15, 3) + key(20, 5) + bytes(2)
    yield "truncated bytes in group", BASE + key(15, 3) + key(20, 2) + varint(9) + bytes(2)
    yield "11-byte varint in group", BASE + key(15, 3) + key(20, 0) + b"\xff" * 10 + b"\x01" + key(15, 4)
    # Wire types 6 and 7, field number 0.
    for wt in (6, 7):
        yield f"wire type {wt}", BASE + key(15, wt) + bytes(8)
        yield f"wire type {wt} in group", BASE + key(15, 3) + key(16, wt) + key(15, 4)
        yield f"wire type {wt} in TrigPrim", BASE + tps(TP + key(15, wt))
    for wt in range(6):
        yield f"field 0 wire type {wt}", BASE + key(0, wt) + bytes(8)
    # Long varints in known fields.
    set_fields = [("count", 1), ("detid", 2), ("created", 3), ("tstart", 4), ("tspan", 5), ("totaladc", 8)]
    for name, num in set_fields:
        rest = b"".join(key(n, 0) + varint(0) for _, n in set_fields[:4] if n != num)
        for value, width, label in (
            (1, 10, "1 in 10 bytes"),
            (u64max, None, "2^64-1"),
            (2**63, None, "2^63"),
            (2**32 + 5, None, "2^32+5"),
        ):
            yield f"{name} = {label}", key(num, 0) + varint(value, width) + rest
        # 10th byte carrying bits past bit 63: protobuf drops them.
        for last in (0x00, 0x01, 0x02, 0x7F):
            yield f"{name} 10-byte varint ending {last:#04x}", key(num, 0) + b"\xff" * 9 + bytes([last]) + rest
        yield f"{name} 11-byte varint", key(num, 0) + b"\xff" * 10 + b"\x01" + rest
        yield f"{name} 10 bytes all continuing", key(num, 0) + b"\xff" * 10 + rest
    for name, num in (("channel", 1), ("tstart", 2), ("adcsum", 4), ("flags", 6)):
        other = key(2 if num == 1 else 1, 0) + varint(0)
        yield f"TrigPrim {name} = 2^40+7", BASE + tps(key(num, 0) + varint(2**40 + 7) + other)
        yield f"TrigPrim {name} 10-byte varint ending 0x7f", BASE + tps(key(num, 0) + b"\xfe" * 9 + b"\x7f" + other)
        yield f"TrigPrim {name} 11-byte varint", BASE + tps(key(num, 0) + b"\xff" * 10 + b"\x01" + other)
    yield "unknown varint of 10 bytes ending 0x7f", BASE + key(15, 0) + b"\xff" * 9 + b"\x7f"
    yield "unknown varint of 11 bytes", BASE + key(15, 0) + b"\xff" * 10 + b"\x01"
    yield "unknown varint truncated", BASE + key(15, 0) + b"\xff" * 3
    # Keys and length prefixes: how long they may be.
    rest = BASE[2:]
    for width in (2, 5, 6, 10):
        yield f"count key in {width} bytes", key(1, 0, width) + varint(7) + rest
        yield f"unknown key in {width} bytes", BASE + key(15, 0, width) + varint(7)
        yield f"length prefix in {width} bytes", BASE + key(15, 2) + varint(2, width) + b"ab"
        yield f"tps length prefix in {width} bytes", BASE + key(9, 2) + varint(len(TP), width) + TP
    yield "key past 32 bits", BASE + varint(2**32 | 15 << 3) + varint(1)
    yield "length 2^31 - 1", BASE + key(15, 2) + varint(2**31 - 1) + b"ab"
    yield "length 2^31", BASE + key(15, 2) + varint(2**31) + b"ab"
    yield "length 2^32 + 2", BASE + key(15, 2) + varint(2**32 + 2) + b"ab"


def outcome(data):
    """What this process's protobuf backend makes of `data`: the set fields
    of the TPSet, or "error" when parsing fails or a required field is missing
    (C++ protobuf's ParseFromString refuses both)."""
    t = ptmp_pb.TPSet()
    try:
        t.ParseFromString(data)
    except Exception:  # noqa: BLE001 - any refusal is a refusal
        return "error"
    return ptmp_pb.to_dict(t) if t.IsInitialized() else "error"


def backend():
    from google.protobuf.internal import api_implementation

    return api_implementation.Type()


def outcomes_under(name):
    """Outcomes of every lenient case under protobuf backend `name`, computed
    in a child process (the backend is chosen when protobuf is imported)."""
    env = dict(os.environ, PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=name)
    r = subprocess.run(
        [sys.executable, __file__, "--outcomes"], env=env, capture_output=True, text=True, check=True
    )
    got = json.loads(r.stdout)
    if got["backend"] != name:
        sys.exit(f"protobuf backend {name!r} is not available here (got {got['backend']!r})")
    return got["outcomes"]


def lenient_vectors():
    cases = list(lenient_cases())
    names = [n for n, _ in cases]
    assert len(set(names)) == len(names), "case names must be unique"
    per = {b: outcomes_under(b) for b in BACKENDS}
    return [
        {"name": n, "hex": d.hex(), **{b: per[b][i] for b in BACKENDS}}
        for i, (n, d) in enumerate(cases)
    ]


if __name__ == "__main__":
    if sys.argv[1:] == ["--outcomes"]:
        print(json.dumps({"backend": backend(), "outcomes": [outcome(d) for _, d in lenient_cases()]}))
        sys.exit(0)
    OUT.write_text(json.dumps(vectors(), indent=1) + "\n")
    print(f"wrote {OUT}")
    LENIENT.write_text(json.dumps(lenient_vectors(), indent=1) + "\n")
    print(f"wrote {LENIENT}")
