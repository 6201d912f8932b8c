"""``run_graph`` under the signals that end Python by default: the graph is
stopped as Ctrl-C stops it, its shared-memory rings are removed, and the
error names the signal (before, Python died at once and left two rings in
/dev/shm each time)."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

SHM = os.environ.get("PTMP_SHM_DIR", "/dev/shm")


def _rings(name):
    return sorted(f for f in os.listdir(SHM) if f"{name}." in f)


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGALRM"])
def test_run_graph_stopped_by_a_signal_removes_its_rings_and_names_it(tmp_path, sig):
    name = f"pysig{os.getpid()}{sig[3:].lower()}"
    graph = {
        "name": name,
        "nodes": [
            {"name": "src", "type": "source", "data": {"rate": 1000}},
            {"name": "w", "type": "worker"},
            {"name": "snk", "type": "sink"},
        ],
        "edges": [
            {"from": "src.out", "to": "w.in", "pattern": "pushpull"},
            {"from": "w.out", "to": "snk.in", "pattern": "pushpull"},
        ],
    }
    script = textwrap.dedent(f"""
        import sys, ptmp
        try:
            ptmp.run_graph({graph!r}, run_dir={str(tmp_path / "run")!r}, ttl=300)
        except ptmp.PtmpError as e:
            print("raised:", e, flush=True)
            sys.exit(3)
        print("returned", flush=True)
    """)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        # Running: both rings made and the sink taking sets.
        deadline = time.monotonic() + 60
        status = tmp_path / "run" / "status" / "snk.json"
        while len(_rings(name)) < 2 or not status.exists():
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline, "the graph never started"
            time.sleep(0.05)
        p.send_signal(getattr(signal, sig))
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 3, (p.returncode, out, err)
    assert f"run_graph: stopped by {sig}" in out, (out, err)
    assert _rings(name) == [], err
