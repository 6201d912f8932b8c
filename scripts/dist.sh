#!/usr/bin/env bash
# What ptmp ships, built into dist/ (or OUT):
#   ptmp-VERSION-linux-ARCH.tar.gz: bin/ptmp, lib/libptmp.so, lib/libptmp.a,
#     include/ptmp.h, include/ptmp.hpp, lib/pkgconfig/ptmp.pc and the CMake
#     package files, under a top directory of the same name; unpack it
#     anywhere and point PKG_CONFIG_PATH or CMAKE_PREFIX_PATH at it.
#   ptmp-VERSION-*.whl: the Python package, for `pip install` with no Rust.
# Everything is built with the `dist` profile (the release build without
# debug information) and stripped of what a user does not run.
#
# usage: scripts/dist.sh [OUT]       (needs what the README's Install lists,
#                                     and maturin for the wheel)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)
target=${CARGO_TARGET_DIR:-$root/target}

version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1)
name="ptmp-$version-linux-$(uname -m)"

echo "== ptmp and libptmp (cargo, profile dist)"
cargo build --locked --profile dist -p ptmp-cli -p ptmp-c --manifest-path "$root/Cargo.toml"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
PTMP_C_LIB_DIR="$target/dist" bash "$root/scripts/install-c.sh" "$stage/$name" >/dev/null
install -D -m 0755 "$target/dist/ptmp" "$stage/$name/bin/ptmp"
# The profile strips what it links (the program, libptmp.so); the static
# library is an archive of objects, whose debug sections go here.
strip --strip-debug "$stage/$name/lib/libptmp.a"
# pkg-config and CMake files name the prefix they were made for: make them
# relative to where the tree is unpacked.
sed -i "s|^prefix=.*|prefix=\${pcfiledir}/../..|" "$stage/$name/lib/pkgconfig/ptmp.pc"
tar -C "$stage" -czf "$out/$name.tar.gz" "$name"

echo "== the Python wheel (maturin)"
(cd "$root/python" && maturin build --locked --profile dist --strip --out "$out")

echo "== built in $out"
ls -l "$out"
