#!/bin/sh
# Camera-frame fan-out over shared memory: one PUB writes large messages
# (TPSets of 20000 TrigPrims, about 300 kB each, standing in for camera
# frames) into one shm:// ring; three SUB readers in their own processes
# read every frame from the same ring, zero-copy, without the writer
# sending anything three times.
#
# Run it as shipped (from the repository, with `ptmp` on PATH):
#
#   sh examples/shm-fanout.sh            # or: sh examples/shm-fanout.sh 500
#
# The same by hand, in four shells: the readers first (they wait for the
# ring to appear; shm:// PUB cannot yet wait for subscribers), then the
# writer:
#
#   ptmp recv -n 100 -p SUB -a connect -e shm://frames -T 5000 --json    # three times
#   ptmp send -n 100 --rate 50 --ntps 20000 --begin-wait 500 \
#     --config '{"socket":{"type":"PUB","bind":["shm://frames"],"shm_max_message":1048576,"shm_slots":64}}'
#   ptmp shm rm frames
#
# What you should see: each reader ends with a JSON line with
# "received":100, "gaps":0, "lost":0; the writer says "sent 100 TPSets ...
# undelivered: 0"; the script prints
# "ok: 3 readers got 100 frames each" and removes the ring (`ptmp shm ls`
# shows nothing left).
set -eu
N=${1:-100}
PTMP=${PTMP:-ptmp}
NAME=frames-$$
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"; "$PTMP" shm rm "$NAME" >/dev/null 2>&1 || true' EXIT

for r in 1 2 3; do
  "$PTMP" recv -n "$N" -p SUB -a connect -e "shm://$NAME" -T 5000 --json \
    >"$DIR/recv$r.json" 2>"$DIR/recv$r.err" &
done
"$PTMP" send -n "$N" --rate 50 --ntps 20000 --begin-wait 500 \
  --config "{\"socket\":{\"type\":\"PUB\",\"bind\":[\"shm://$NAME\"],\"shm_max_message\":1048576,\"shm_slots\":64}}" \
  2>"$DIR/send.err" &
SENDER=$!
wait "$SENDER" || { cat "$DIR/send.err" >&2; exit 1; }
wait
cat "$DIR/send.err" >&2
ok=0
for r in 1 2 3; do
  tail -n 1 "$DIR/recv$r.json"
  if tail -n 1 "$DIR/recv$r.json" | grep -q "\"received\":$N[,}]"; then ok=$((ok + 1)); fi
done
if [ "$ok" -ne 3 ]; then
  echo "FAILED: only $ok of 3 readers got $N frames" >&2
  for r in 1 2 3; do cat "$DIR/recv$r.err" >&2; done
  exit 1
fi
echo "ok: 3 readers got $N frames each"
