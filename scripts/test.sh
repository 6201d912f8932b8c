#!/usr/bin/env bash
# Every test of the project: formatting, lints, the Rust tests (unit,
# integration, multi-process), the Python cross-checks of the wire format and
# the Python bindings' tests (the package is built and installed first).
# Needs: cargo, python3 with the packages in tests/python/requirements.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo test"
cargo test --workspace --locked

echo "== Python bindings: build and install (maturin, release)"
python3 -m pip install --quiet --disable-pip-version-check --no-build-isolation ./python

echo "== pytest (wire format vs an independent protobuf; the Python bindings)"
python3 -m pytest tests/python python/tests -q
