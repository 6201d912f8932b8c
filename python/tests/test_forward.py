"""Receiver.forward: a message passed on to a Sender without entering
Python, frames as they came; kept, never lost, while the sender has no
room."""

import os
import time

import ptmp

TAG = f"pyfwd{os.getpid()}"


def remove_shm(name):
    path = os.path.join(os.environ.get("PTMP_SHM_DIR", "/dev/shm"), f"ptmp.{name}")
    if os.path.exists(path):
        os.remove(path)


def sock(ty, attach, ep, **more):
    return {"socket": {"type": ty, attach: [ep], **more}}


MESSAGES = [[b"a", b"\x07" * 1000, b""], [b"only"], [b""], [b"\x03" * 255]]


def test_forward_ring_to_ring_and_from_tcp():
    a, b = f"{TAG}-a", f"{TAG}-b"
    try:
        tx = ptmp.Sender(sock("PUSH", "bind", f"shm://{a}", shm_max_message=2048))
        mid = ptmp.Receiver(sock("PULL", "connect", f"shm://{a}"))
        on = ptmp.Sender(sock("PUSH", "bind", f"shm://{b}", shm_max_message=2048))
        end = ptmp.Receiver(sock("PULL", "connect", f"shm://{b}"))
        for m in MESSAGES:
            tx.send_frames(m)
        for i in range(len(MESSAGES)):
            assert mid.forward(on, timeout=5.0), f"message {i}"
        t0 = time.monotonic()
        assert mid.forward(on, timeout=0.05) is False
        assert time.monotonic() - t0 < 2.0
        assert [end.recv_frames(timeout=5.0) for _ in MESSAGES] == MESSAGES
        assert mid.received == len(MESSAGES) and on.sent == len(MESSAGES)

        # From tcp into the ring: through the receiver's buffer.
        z = ptmp.Sender(sock("PUSH", "bind", "tcp://127.0.0.1:*"))
        zr = ptmp.Receiver(sock("PULL", "connect", z.bound_endpoints[0]))
        s = ptmp.TPSet(count=3, detid=1, created=ptmp.now_us(), tstart=9)
        z.send(s)
        assert zr.forward(on, timeout=5.0)
        assert end.recv(timeout=5.0) == s
    finally:
        remove_shm(a)
        remove_shm(b)


def test_a_forward_without_room_keeps_the_message():
    a, b = f"{TAG}-ka", f"{TAG}-kb"
    try:
        tx = ptmp.Sender(sock("PUSH", "bind", f"shm://{a}"))
        mid = ptmp.Receiver(sock("PULL", "connect", f"shm://{a}"))
        on = ptmp.Sender(sock("PUSH", "bind", f"shm://{b}", shm_slots=4))
        end = ptmp.Receiver(sock("PULL", "connect", f"shm://{b}"))
        msgs = [[bytes([i]) * 10] for i in range(6)]
        for m in msgs:
            tx.send_frames(m)
        for i in range(4):
            assert mid.forward(on, timeout=5.0), f"message {i}"
        # The next ring is full: the fifth is taken and kept.
        assert mid.forward(on, timeout=0.05) is False
        assert mid.received == 5 and on.sent == 4
        got = [end.recv_frames(timeout=5.0)]
        assert mid.forward(on, timeout=5.0), "the kept one"
        got.append(end.recv_frames(timeout=5.0))
        assert mid.forward(on, timeout=5.0), "the last"
        got += [end.recv_frames(timeout=5.0) for _ in range(4)]
        assert got == msgs
    finally:
        remove_shm(a)
        remove_shm(b)
