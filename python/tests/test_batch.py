"""Many TPSets per call from Python: Sender.send_many and Receiver.recv_many
over shared memory and zmq, with a sender in another thread and a ring small
enough that the sender has to wait for the receiver again and again."""

import os
import threading

import pytest

import ptmp

TAG = f"pybatch{os.getpid()}"


def remove_shm(name):
    """Remove a channel this test made (its segment outlives its writer)."""
    path = os.path.join(os.environ.get("PTMP_SHM_DIR", "/dev/shm"), f"ptmp.{name}")
    if os.path.exists(path):
        os.remove(path)


def tpset(i):
    return ptmp.TPSet(
        count=i, detid=4, created=1000 + i, tstart=25 * i,
        tps=[ptmp.TrigPrim(channel=k, tstart=25 * i + k, tspan=5, adcsum=30, adcpeak=9, flags=0)
             for k in range(i % 3)],
    )


def endpoint(transport, tmp_path, name):
    return {
        "shm": f"shm://{name}",
        "tcp": "tcp://127.0.0.1:*",
        "ipc": f"ipc://{tmp_path}/batch.ipc",
    }[transport]


@pytest.mark.parametrize("transport", ["shm", "tcp", "ipc"])
def test_batches_from_another_thread_arrive_whole_and_in_order(transport, tmp_path):
    name = f"{TAG}-{transport}"
    n = 3000
    sets = [tpset(i) for i in range(n)]
    # 32 slots: the sender fills the ring many times over and waits for the
    # receiver each time; nothing may be lost or reordered.
    tx = ptmp.Sender({"socket": {"type": "PUSH", "bind": [endpoint(transport, tmp_path, name)],
                                 "shm_slots": 32}})
    ep = tx.bound_endpoints[0] if transport == "tcp" else endpoint(transport, tmp_path, name)
    rx = ptmp.Receiver({"socket": {"type": "PULL", "connect": [ep]}})
    errors = []

    def send():
        try:
            for k in range(0, n, 100):
                tx.send_many(sets[k:k + 100])
        except Exception as e:  # reported by the main thread
            errors.append(e)

    t = threading.Thread(target=send)
    t.start()
    got = []
    while len(got) < n:
        batch = rx.recv_many(256, timeout=10.0)
        assert batch, f"timed out after {len(got)} sets"
        assert len(batch) <= 256
        got.extend(batch)
    t.join()
    assert not errors
    assert got == sets
    assert rx.received == n and tx.sent == n
    assert rx.recv_many(10, timeout=0.05) == []
    rx.close()
    tx.close()
    if transport == "shm":
        remove_shm(name)


def test_recv_many_returns_what_is_there_without_waiting_for_max():
    name = f"{TAG}-some"
    with ptmp.Sender({"socket": {"type": "PUSH", "bind": [f"shm://{name}"]}}) as tx:
        with ptmp.Receiver({"socket": {"type": "PULL", "connect": [f"shm://{name}"]}}) as rx:
            tx.send_many([tpset(0), tpset(1), tpset(2)])
            assert rx.recv_many(1000, timeout=30.0) == [tpset(0), tpset(1), tpset(2)]
            tx.send_many([])
            assert rx.recv_many(5, timeout=0.0) == []
    remove_shm(name)


def test_shm_pubsub_batches_count_what_was_overwritten():
    # A PUB never waits: with 16 slots and 200 sets published before the
    # subscriber reads, it gets the newest ones, in order, and learns how
    # many it lost.
    name = f"{TAG}-pub"
    with ptmp.Sender({"socket": {"type": "PUB", "bind": [f"shm://{name}"], "shm_slots": 16}}) as tx:
        with ptmp.Receiver({"socket": {"type": "SUB", "connect": [f"shm://{name}"]}}) as rx:
            tx.send_many([tpset(i) for i in range(200)])
            got = []
            while True:
                batch = rx.recv_many(64, timeout=0.2)
                if not batch:
                    break
                got.extend(batch)
            counts = [s.count for s in got]
            assert counts == sorted(counts) and counts[-1] == 199
            assert len(got) + rx.lost == 200
    remove_shm(name)
