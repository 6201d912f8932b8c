"""Every ```python block of docs/python.md and of README.md's "## Python"
section runs as written: each in a fresh empty directory (its working
directory) and a shared-memory directory of its own (PTMP_SHM_DIR), as a
child process that must exit 0 within 120 s. The blocks set up whatever
they need themselves; the test provides nothing else."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def readme_python_section():
    text = open(os.path.join(ROOT, "README.md")).read()
    start = text.index("\n## Python\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def blocks():
    out = []
    sources = [
        ("README.md#python", readme_python_section()),
        ("docs/python.md", open(os.path.join(ROOT, "docs", "python.md")).read()),
    ]
    for where, text in sources:
        for i, m in enumerate(BLOCK.finditer(text)):
            out.append(pytest.param(m.group(1), id=f"{where}[{i}]"))
    return out


def test_the_documents_have_python_blocks():
    ids = [p.id for p in blocks()]
    assert any(i.startswith("README.md") for i in ids)
    assert sum(i.startswith("docs/python.md") for i in ids) >= 10


@pytest.mark.parametrize("code", blocks())
def test_block_runs_as_written(code, tmp_path):
    if "numpy" in code:
        pytest.importorskip("numpy")
    work = tmp_path / "work"
    shm = tmp_path / "shm"
    work.mkdir()
    shm.mkdir()
    env = dict(os.environ, PTMP_SHM_DIR=str(shm))
    r = subprocess.run([sys.executable, "-c", code], cwd=work, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"block failed:\n{code}\n--- stderr:\n{r.stderr}"
    # Blocks clean up the channels they make.
    assert os.listdir(shm) == [], os.listdir(shm)
