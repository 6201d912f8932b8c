#!/usr/bin/env bash
# Install ptmp's C library under PREFIX:
#   PREFIX/lib/libptmp.so, PREFIX/lib/libptmp.a,
#   PREFIX/include/ptmp.h (C), PREFIX/include/ptmp.hpp (C++17, header-only),
#   PREFIX/lib/pkgconfig/ptmp.pc (pkg-config),
#   PREFIX/lib/cmake/ptmp/ptmpConfig.cmake and ptmpConfigVersion.cmake
#   (CMake: find_package(ptmp), targets ptmp::ptmp and ptmp::ptmp_static)
# Builds the release library first, unless PTMP_C_LIB_DIR names a directory
# that already holds libptmp.so and libptmp.a (the tests use that, since a
# nested cargo build would wait on the running one's lock).
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 PREFIX" >&2
    exit 2
fi
prefix=$1
root=$(cd "$(dirname "$0")/.." && pwd)

if [ -n "${PTMP_C_LIB_DIR:-}" ]; then
    libdir=$PTMP_C_LIB_DIR
else
    cargo build --release -p ptmp-c --manifest-path "$root/Cargo.toml"
    libdir=${CARGO_TARGET_DIR:-$root/target}/release
fi

version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1)
mkdir -p "$prefix/lib/pkgconfig" "$prefix/lib/cmake/ptmp" "$prefix/include"
prefix=$(cd "$prefix" && pwd)
install -m 0755 "$libdir/libptmp.so" "$prefix/lib/libptmp.so"
install -m 0644 "$libdir/libptmp.a" "$prefix/lib/libptmp.a"
install -m 0644 "$root/crates/ptmp-c/include/ptmp.h" "$prefix/include/ptmp.h"
install -m 0644 "$root/crates/ptmp-c/include/ptmp.hpp" "$prefix/include/ptmp.hpp"
sed -e "s|@PREFIX@|$prefix|g" -e "s|@VERSION@|$version|g" \
    "$root/crates/ptmp-c/ptmp.pc.in" > "$prefix/lib/pkgconfig/ptmp.pc"
for f in ptmpConfig ptmpConfigVersion; do
    sed -e "s|@VERSION@|$version|g" "$root/crates/ptmp-c/$f.cmake.in" \
        > "$prefix/lib/cmake/ptmp/$f.cmake"
done
echo "installed ptmp $version under $prefix"
