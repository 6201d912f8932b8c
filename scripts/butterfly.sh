#!/usr/bin/env bash
# The butterfly experiments of docs/benchmarks.md: the tutorial's runs
# (work scaled from 500 ms to 50 ms), then tiny work on every transport.
#   bash scripts/butterfly.sh [PTMP] [N]     (defaults: target/release/ptmp, 300)
set -euo pipefail
PTMP=${1:-target/release/ptmp}
N=${2:-300}
row() { "$PTMP" butterfly --json "$@" 2>/dev/null | tail -1; }
echo "# the tutorial's experiments: n=$N"
for args in "--c1 1 --c2 1 --t1 50 --t2 50" "--c1 2 --c2 2 --t1 50 --t2 50" \
            "--c1 3 --c2 3 --t1 50 --t2 50" "--c1 2 --c2 1 --t1 50 --t2 50" \
            "--c1 1 --c2 1 --t1 25 --t2 75"; do
  # shellcheck disable=SC2086
  row $args -n "$N"
done
echo "# tiny work: 1/1, n=100000 (spin waits)"
for t in 0.01 0.001 0; do
  row --t1 $t --t2 $t --wait spin -n 100000 --placement thread
  row --t1 $t --t2 $t --wait spin -n 100000 --transport shm
  row --t1 $t --t2 $t --wait spin -n 100000 --transport ipc
  row --t1 $t --t2 $t --wait spin -n 100000 --transport tcp --port-base 27400
done
