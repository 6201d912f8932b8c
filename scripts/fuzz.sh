#!/usr/bin/env bash
# Long fuzz runs of every input ptmp parses (the test command runs each
# target for a few thousand cases only). Each target runs for SECONDS
# (default 60) in its own process; the run prints, per target, the cases
# tried and the failures found, and saves failing inputs in fuzz-out/.
#
#   scripts/fuzz.sh                 # every target, 60 s each
#   scripts/fuzz.sh 600 tpset dump  # two targets, 10 minutes each
#   scripts/fuzz.sh 60 --start 7    # another random sequence
#
# Exit status: 0 when nothing failed, 1 when something did.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
cargo build --profile fuzz --locked -p ptmp-fuzz --bin ptmp-fuzz
exec target/fuzz/ptmp-fuzz --seconds "$seconds" --out fuzz-out "$@"
