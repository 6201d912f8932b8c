"""Receiver.commit: a receiver with an identity in its shm ring, killed
with SIGKILL, is resumed by its successor at the first set it had not
committed; without commit the ring keeps everything returned."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

import ptmp

TAG = f"pycommit{os.getpid()}"


def remove_shm(name):
    path = os.path.join(os.environ.get("PTMP_SHM_DIR", "/dev/shm"), f"ptmp.{name}")
    if os.path.exists(path):
        os.remove(path)


def pull(name, ident):
    return ptmp.Receiver({"socket": {"type": "PULL", "connect": f"shm://{name}",
                                     "shm_reader_id": ident, "shm_reader_grace_ms": 20000}})


def test_a_killed_receiver_is_resumed_after_what_it_committed():
    name = f"{TAG}-kill"
    tx = ptmp.Sender({"socket": {"type": "PUSH", "bind": f"shm://{name}", "shm_slots": 8,
                                 "shm_block_timeout_ms": 20000}})
    try:
        for n in range(6):
            tx.send(ptmp.TPSet(count=n, detid=1))
        # The child takes six sets, commits the first three, then dies.
        child = textwrap.dedent(f"""
            import os, signal, ptmp
            rx = ptmp.Receiver({{"socket": {{"type": "PULL", "connect": "shm://{name}",
                                 "shm_reader_id": "py/w/in", "shm_reader_grace_ms": 20000}}}})
            for n in range(6):
                assert rx.recv(timeout=10).count == n
                if n == 2:
                    rx.commit(now=True)
            os.kill(os.getpid(), signal.SIGKILL)
        """)
        p = subprocess.run([sys.executable, "-c", child], timeout=60)
        assert p.returncode == -signal.SIGKILL
        rx = pull(name, "py/w/in")
        # A second live receiver of one identity is refused, naming it.
        with pytest.raises(ptmp.PtmpError, match='"py/w/in"'):
            pull(name, "py/w/in")
        got = []
        for n in range(6, 20):
            tx.send(ptmp.TPSet(count=n, detid=1))
            s = rx.recv(timeout=10)
            got.append(s.count)
            rx.commit()
        while (s := rx.recv(timeout=0.2)) is not None:
            got.append(s.count)
        assert got == list(range(3, 20))
        assert rx.lost == 0
        rx.close()
        # Closed: commit says so.
        with pytest.raises(ptmp.PtmpError, match="closed"):
            rx.commit()
    finally:
        tx.close()
        remove_shm(name)


def test_commit_is_harmless_without_an_identity():
    rx = ptmp.Receiver({"socket": {"type": "PULL", "bind": f"ipc:///tmp/{TAG}.ipc"}})
    rx.commit()
    rx.commit(now=True)
    rx.close()
