#!/usr/bin/env python3
"""Python send/recv rate of empty TPSets over tcp: ptmp (per call and
batched) beside pyzmq plus the protobuf package doing the same in Python.

    python3 python/bench/send_recv.py [-n 200000]

One process, the sender on a thread, the receiver on the main thread; the
rate is messages over the time from the first send to the last receive, and
every message is checked (count sequence) so loss cannot hide.

Needs, in one Python environment: the ptmp package (the wheel, or
`pip install ./python`), pyzmq and protobuf (`pip install pyzmq protobuf`),
and the generated message module `ptmp_pb` in tests/python of this
repository, which the script puts on its path itself: run it from a
checkout. The test command's environment (.venv) has all of them.
"""

import argparse
import os
import sys
import threading
import time

import ptmp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "python"))


def run_ptmp(n, batch):
    tx = ptmp.Sender({"socket": {"type": "PUSH", "bind": ["tcp://127.0.0.1:*"], "sndhwm": 100000}})
    rx = ptmp.Receiver({"socket": {"type": "PULL", "connect": [tx.bound_endpoints[0]], "hwm": 100000}})

    def send():
        if batch:
            for b in range(0, n, 1000):
                tx.send_many([ptmp.TPSet(count=i, detid=1, created=ptmp.now_us(), tstart=i)
                              for i in range(b, min(n, b + 1000))])
        else:
            for i in range(n):
                tx.send(ptmp.TPSet(count=i, detid=1, created=ptmp.now_us(), tstart=i))

    t0 = time.perf_counter()
    th = threading.Thread(target=send)
    th.start()
    got = 0
    while got < n:
        if batch:
            sets = rx.recv_many(1000, timeout=10.0)
        else:
            s = rx.recv(timeout=10.0)
            sets = [s] if s is not None else []
        if not sets:
            raise SystemExit(f"ptmp: timed out after {got} of {n}")
        for s in sets:
            if s.count != got:
                raise SystemExit(f"ptmp: expected count {got}, got {s.count}")
            got += 1
    dt = time.perf_counter() - t0
    th.join()
    tx.close()
    return n / dt


def run_pyzmq(n):
    import zmq
    import ptmp_pb

    ctx = zmq.Context()
    push = ctx.socket(zmq.PUSH)
    push.sndhwm = 100000
    port = push.bind_to_random_port("tcp://127.0.0.1")
    pull = ctx.socket(zmq.PULL)
    pull.rcvhwm = 100000
    pull.connect(f"tcp://127.0.0.1:{port}")
    version = b"\x00\x00\x00\x00"

    def send():
        for i in range(n):
            t = ptmp_pb.TPSet()
            t.count, t.detid, t.created, t.tstart = i, 1, time.time_ns() // 1000, i
            push.send_multipart([version, t.SerializeToString()])

    t0 = time.perf_counter()
    th = threading.Thread(target=send)
    th.start()
    for i in range(n):
        frames = pull.recv_multipart()
        t = ptmp_pb.TPSet()
        t.ParseFromString(frames[1])
        if frames[0] != version or t.count != i:
            raise SystemExit(f"pyzmq: bad message {i}")
    dt = time.perf_counter() - t0
    th.join()
    push.close(0)
    pull.close(0)
    ctx.term()
    return n / dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=200000, help="messages per row")
    a = ap.parse_args()
    from google.protobuf.internal import api_implementation

    base = run_pyzmq(a.n)
    per = run_ptmp(a.n, batch=False)
    bat = run_ptmp(a.n, batch=True)
    print(f"{a.n} empty TPSets over tcp, one process (protobuf backend: {api_implementation.Type()})\n")
    print("| implementation | messages/s | vs pyzmq + protobuf |")
    print("|---|---|---|")
    print(f"| pyzmq + protobuf | {base:,.0f} | 1.00 |")
    print(f"| ptmp send/recv | {per:,.0f} | {per / base:.2f} |")
    print(f"| ptmp send_many/recv_many | {bat:,.0f} | {bat / base:.2f} |")


if __name__ == "__main__":
    main()
