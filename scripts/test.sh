#!/usr/bin/env bash
# Every test of the project: formatting, lints, the Rust tests (unit,
# integration, multi-process) and the Python cross-checks of the wire format.
# Needs: cargo, python3 with the packages in tests/python/requirements.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo test"
cargo test --workspace --locked

echo "== pytest (independent protobuf implementation vs our bytes)"
python3 -m pytest tests/python -q
