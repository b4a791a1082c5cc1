#!/usr/bin/env bash
# Mismatched collectives under mpirun stop the run with a message naming both calls.
set -u
# usage: collective_mismatch.sh PROGRAM MPIRUN [MPIRUN FLAGS...]
program=$1
shift
failed=0
for np in 2 4; do
  for pair in broadcast-reduce allreduce-barrier reduce-operators; do
    out=$(timeout 120 "$@" -np "$np" "$program" "$pair" 2>&1)
    code=$?
    # Exit 3 from the rank that found it; a launcher may report its own code for the ranks it
    # killed then (MPICH's Hydra says 9): any failure but a timeout, with the message.
    if [ "$code" -ne 0 ] && [ "$code" -ne 124 ] && grep -q "rill: fatal: collective #0 of team 0x1: rank [0-9]* called .* rank [0-9]* " <<<"$out"; then
      echo "ok: $pair on $np ranks"
    else
      echo "FAIL: $pair on $np ranks: exit $code (want a failure naming both calls; 124 = hung):"
      echo "$out"
      failed=1
    fi
  done
done
exit $failed
