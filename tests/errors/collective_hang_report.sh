#!/usr/bin/env bash
# A mismatch no message can meet (every rank waits for another's broadcast) hangs; each rank's hang
# report names the collective it waits in, which is how the user finds the mismatch.
set -u
# usage: collective_hang_report.sh PROGRAM
out=$(timeout 6 "$1" roots-both-wait --rill:ranks=2 --rill:hang-report-s=0.5 2>&1)
code=$?
failed=0
for want in "collective #0 of team 0x1: this rank called broadcast<long> (root 1) and waits for message" \
  "collective #0 of team 0x1: this rank called broadcast<long> (root 0) and waits for message"; do
  if ! grep -qF "$want" <<<"$out"; then
    echo "FAIL: no line '$want' in the hang reports"
    failed=1
  fi
done
if [ "$code" -ne 124 ]; then
  echo "FAIL: exit $code, want 124 (the run hangs until the timeout)"
  failed=1
fi
[ "$failed" -eq 0 ] && echo "ok: both ranks' hang reports name their collective" || echo "$out"
exit $failed
