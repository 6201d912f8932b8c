"""Listing and removing shared-memory channels from Python (shm_list,
shm_remove), as `ptmp shm ls --json` and `ptmp shm rm` do. Each test works
in a shm directory of its own (PTMP_SHM_DIR), in a child process so the
variable is read fresh."""

import json
import os
import subprocess
import sys
import textwrap

from _parts import ptmp_bin


def run_py(shm_dir, code):
    env = dict(os.environ, PTMP_SHM_DIR=str(shm_dir))
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_list_shows_each_channel_as_shm_ls_does(tmp_path):
    got = run_py(tmp_path, """
        import json, os, ptmp
        w = ptmp.ShmWriter("alpha", slots=8, max_message=128)
        w.publish(b"one"); w.publish(b"two")
        b = ptmp.ShmWriter("beta", slots=4, max_message=64, policy="block")
        print(json.dumps({"pid": os.getpid(), "list": ptmp.shm_list()}))
    """)
    chans = got["list"]
    assert [c["name"] for c in chans] == ["alpha", "beta"]
    a, b = chans
    assert a["slots"] == 8 and a["max_message"] == 128 and a["published"] == 2
    assert a["policy"] == "overwrite" and b["policy"] == "block"
    assert a["writer_pid"] == got["pid"] and a["writer_alive"] is True
    assert a["publish_fence"] in ("full", "by-readers")
    # `ptmp shm ls --json` lists the same fields with the same values, but
    # for the writer's: its process has ended since, and a writer that
    # ends clears its pid.
    ls = subprocess.run([ptmp_bin(), "shm", "ls", "--json"], capture_output=True,
                        text=True, timeout=60,
                        env=dict(os.environ, PTMP_SHM_DIR=str(tmp_path)))
    assert ls.returncode == 0, ls.stderr
    listed = [json.loads(line) for line in ls.stdout.splitlines()]
    assert [c["name"] for c in listed] == ["alpha", "beta"]
    for py, cli in zip(chans, listed):
        assert (cli["writer_pid"], cli["writer_alive"]) == (0, False)
        assert set(cli) == set(py)
        for k, v in cli.items():
            if k not in ("writer_pid", "writer_alive"):
                assert py[k] == v, (k, py, cli)
    assert a["path"] == str(tmp_path / "ptmp.alpha") and a["bytes"] > 0
    assert a["untrusted"] is False and "error" not in a


def test_an_unreadable_segment_is_listed_with_its_error(tmp_path):
    (tmp_path / "ptmp.junk").write_bytes(b"not a ring")
    (tmp_path / "other-file").write_bytes(b"ignored")
    got = run_py(tmp_path, """
        import json, ptmp
        print(json.dumps(ptmp.shm_list()))
    """)
    assert len(got) == 1 and got[0]["name"] == "junk"
    assert got[0]["error"] and "slots" not in got[0]


def test_remove_by_name_and_stale(tmp_path):
    # A channel whose writer process has ended: stale.
    run_py(tmp_path, """
        import ptmp
        ptmp.ShmWriter("gone", slots=4, max_message=64).publish(b"x")
        print("{}")
    """)
    # An unreadable segment of this user's (mode 0600): stale too. One of
    # a wider mode is refused as untrusted and kept (name it to remove it).
    (tmp_path / "ptmp.junk").write_bytes(b"not a ring")
    (tmp_path / "ptmp.junk").chmod(0o600)
    (tmp_path / "ptmp.wide").write_bytes(b"not a ring")
    (tmp_path / "ptmp.wide").chmod(0o644)
    got = run_py(tmp_path, """
        import json, ptmp
        live = ptmp.ShmWriter("live", slots=4, max_message=64)
        keep = ptmp.ShmWriter("keep", slots=4, max_message=64)
        out = {"before": [c["name"] for c in ptmp.shm_list()]}
        out["stale"] = ptmp.shm_remove(stale=True)
        out["named"] = ptmp.shm_remove("keep")
        try:
            ptmp.shm_remove("keep")
        except ptmp.ShmError as e:
            out["again"] = str(e)
        for kw in [{}, {"name": "live", "stale": True}]:
            try:
                ptmp.shm_remove(**kw)
            except ValueError as e:
                out.setdefault("bad", []).append(str(e))
        out["untrusted"] = [c["name"] for c in ptmp.shm_list() if c["untrusted"]]
        out["wide"] = ptmp.shm_remove("wide")
        out["after"] = [c["name"] for c in ptmp.shm_list()]
        print(json.dumps(out))
    """)
    assert got["before"] == ["gone", "junk", "keep", "live", "wide"]
    assert got["stale"] == ["gone", "junk"]
    assert got["named"] == ["keep"]
    assert "keep" in got["again"]
    assert len(got["bad"]) == 2
    assert got["untrusted"] == ["wide"] and got["wide"] == ["wide"]
    assert got["after"] == ["live"]
    # A segment outlives its writer: "live" stays until removed.
    assert os.listdir(tmp_path) == ["ptmp.live"]
