"""Write crates/ptmp-data/tests/vectors/golden.json: TPSet cases and their
bytes as serialized by Python's protobuf package (not by ptmp).

    python3 tests/python/make_vectors.py
"""

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import ptmp_pb  # noqa: E402

OUT = pathlib.Path(__file__).parents[2] / "crates/ptmp-data/tests/vectors/golden.json"

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


if __name__ == "__main__":
    OUT.write_text(json.dumps(vectors(), indent=1) + "\n")
    print(f"wrote {OUT}")
