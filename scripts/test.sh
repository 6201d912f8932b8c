#!/usr/bin/env bash
# Every test of the project: formatting, lints, the Rust tests (unit,
# integration, multi-process), the Python cross-checks of the wire format and
# the Python bindings' tests (the package is built and installed first).
# Needs: cargo, a C++ compiler, python3 with its venv module. The Python
# packages (tests/python/requirements.txt) go into a virtual environment of
# the project's own, .venv at the repository root (or $PTMP_VENV), made on the
# first run and reused after; the system Python is never changed.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== shape: files under 900 lines, functions under 150, no import circles"
python3 scripts/structure.py

echo "== cargo doc (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet

# The C library's tests (and python/tests/test_c_interop.py) compile C and
# C++ programs against libptmp.a, which `cargo test` does not build.
echo "== the C library (libptmp.a, libptmp.so)"
cargo build -p ptmp-c --locked --quiet

echo "== cargo test"
cargo test --workspace --locked

# The shared-memory ring's synchronisation (seqlock publish and read, reader
# and writer wake-ups), model-checked over every interleaving with loom. The
# --cfg changes every crate's build, so it gets a target directory of its own.
echo "== loom: the ring's synchronisation, every interleaving"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test -p ptmp-shm --test loom --release --locked --quiet

venv="${PTMP_VENV:-.venv}"
echo "== Python: virtual environment $venv"
# Made again (--clear) if an earlier attempt left it without pip.
if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  if ! python3 -m venv --clear "$venv"; then
    echo "error: python3 -m venv failed; on Debian or Ubuntu install python3-venv" >&2
    exit 1
  fi
fi
py="$venv/bin/python"
# maturin's build backend runs the `maturin` program it installed into the
# environment's bin directory, so that directory goes first on the PATH, as
# activating the environment would do.
PATH="$(cd "$venv/bin" && pwd):$PATH"
export PATH
"$py" -m pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt

# The bindings as users get them: a wheel (release, stripped), installed by
# pip with nothing on the PATH but the environment's own programs, so no
# Rust toolchain or C compiler can take part in the install.
echo "== Python bindings: a wheel (maturin, release, stripped), installed into $venv"
rm -rf target/wheels
(cd python && maturin build --release --strip --locked --quiet --out ../target/wheels)
wheel=$(ls target/wheels/ptmp-*.whl)
echo "   $wheel: $(du -h "$wheel" | cut -f1)"
env -i HOME="$HOME" PATH="$(cd "$venv/bin" && pwd)" "$py" -m pip install --quiet \
  --disable-pip-version-check --no-index --no-deps --force-reinstall "$wheel"

echo "== pytest (wire format vs an independent protobuf; the Python bindings)"
"$py" -m pytest tests/python python/tests -q

# The README's first command, run as the README writes it (taken from it, so
# the two cannot drift apart): it must work verbatim on a fresh clone.
main_job=$(awk '/^Run the main job on defaults/ {f = 1} f && /^    cargo / {sub(/^    /, ""); print; exit}' README.md)
if [ -z "$main_job" ]; then
  echo "error: README.md has no main-job command under \"Run the main job on defaults\"" >&2
  exit 1
fi
echo "== the README's main job: $main_job"
bash -c "$main_job"
