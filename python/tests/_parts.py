"""One rule for tests that need a real part they cannot provide themselves
(root and iproute2 for network namespaces, a C++ compiler, the built ptmp
program or C library): the test fails, naming it, unless this run opted out
with PTMP_ALLOW_MISSING_PARTS=1, in which case it is skipped with the reason.
CI never opts out, so it cannot go green with a part left out."""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def missing_part(why: str) -> None:
    if os.environ.get("PTMP_ALLOW_MISSING_PARTS") == "1":
        pytest.skip(f"{why} (PTMP_ALLOW_MISSING_PARTS=1)")
    pytest.fail(
        f"{why}\nInstall it (.ci/run lists every real part), or set "
        "PTMP_ALLOW_MISSING_PARTS=1 to skip it",
        pytrace=False,
    )


def ptmp_bin() -> str:
    """The ptmp program: $PTMP_BIN, else the one built in target/debug or
    target/release (cargo build -p ptmp-cli)."""
    env = os.environ.get("PTMP_BIN")
    if env:
        return env
    for d in ("debug", "release"):
        p = ROOT / "target" / d / "ptmp"
        if p.exists():
            return str(p)
    missing_part("the ptmp program is not built (cargo build -p ptmp-cli)")
