"""Deadlines already passed, sequence numbers no ring reaches, Ctrl-C while
a writer waits for a slow reader, and shared-memory objects used from
another thread."""

import os
import signal
import threading
import time

import pytest

import ptmp

TAG = f"pysig{os.getpid()}"


def test_a_negative_timeout_looks_once_and_does_not_wait():
    ep = f"inproc://{TAG}-neg"
    rx = ptmp.Receiver({"socket": {"type": "PULL", "bind": [ep]}})
    for call in (lambda: rx.recv(timeout=-0.5),
                 lambda: rx.recv_frames(timeout=-1e-9),
                 lambda: rx.recv_many(5, timeout=-1)):
        t0 = time.monotonic()
        assert call() in (None, [])
        # Generous: waiting for ever would never return at all.
        assert time.monotonic() - t0 < 5
    name = f"{TAG}-neg"
    w = ptmp.ShmWriter(name, slots=4, max_message=64)
    try:
        r = ptmp.ShmReader(name)
        t0 = time.monotonic()
        assert r.recv(timeout=-1) is None
        assert r.view(timeout=-1) is None
        assert time.monotonic() - t0 < 5
        # What is already there is still taken.
        w.publish(b"here")
        assert r.recv(timeout=-1) == b"here"
    finally:
        ptmp.shm_remove(name)


def test_read_at_a_sequence_number_no_ring_reaches_is_none():
    name = f"{TAG}-seq"
    w = ptmp.ShmWriter(name, slots=4, max_message=64)
    try:
        r = ptmp.ShmReader(name, start="oldest")
        for i in range(6):
            w.publish(b"m%d" % i)
        assert r.read_at(5) == b"m5"
        for seq in (6, 2**62 + 5, 2**63, 2**63 + 5, 2**64 - 1):
            assert r.read_at(seq) is None, seq
    finally:
        ptmp.shm_remove(name)


@pytest.fixture
def sigint_raises():
    """SIGINT raises KeyboardInterrupt in this test, as it does in an
    interactive Python: a Python started with SIGINT ignored (under nohup
    or some CI runners) keeps it ignored, and the signal would never come."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def _interrupt_soon():
    main = threading.main_thread().ident
    t = threading.Timer(0.3, lambda: signal.pthread_kill(main, signal.SIGINT))
    t.start()
    return t


def test_ctrl_c_interrupts_a_shm_push_sender_waiting_for_its_reader(sigint_raises):
    name = f"{TAG}-push"
    tx = ptmp.Sender({"socket": {"type": "PUSH", "bind": [f"shm://{name}"],
                                 "shm_slots": 4, "shm_block_timeout_ms": 30000}})
    try:
        # A reader that never reads holds the ring full.
        rx = ptmp.Receiver({"socket": {"type": "PULL", "connect": [f"shm://{name}"]}})
        t = _interrupt_soon()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            for i in range(100):
                tx.send(ptmp.TPSet(count=i))
        assert time.monotonic() - t0 < 5
        t.join()
        del rx
    finally:
        tx.close()
        ptmp.shm_remove(name)


def test_ctrl_c_interrupts_a_blocking_shm_writer(sigint_raises):
    name = f"{TAG}-blk"
    w = ptmp.ShmWriter(name, slots=4, max_message=64, policy="block")
    try:
        r = ptmp.ShmReader(name)
        t = _interrupt_soon()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            for _ in range(100):
                w.publish(b"x")
        # The default block timeout is 10 s; Ctrl-C comes well before.
        assert time.monotonic() - t0 < 5
        t.join()
        del r
    finally:
        ptmp.shm_remove(name)


def test_shm_objects_work_from_another_thread():
    name = f"{TAG}-thr"
    w = ptmp.ShmWriter(name, slots=8, max_message=64)
    try:
        r = ptmp.ShmReader(name)
        out, errors = [], []

        def other():
            try:
                w.publish(b"from a thread")
                out.append(r.recv(timeout=5))
                w.publish(b"viewed")
                v = r.view(timeout=5)
                out.append(v)
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        th = threading.Thread(target=other)
        th.start()
        th.join()
        assert not errors, errors
        assert out[0] == b"from a thread"
        # The view taken there is read here.
        with out[1] as v:
            assert bytes(memoryview(v)) == b"viewed"
            assert v.valid()
    finally:
        ptmp.shm_remove(name)
