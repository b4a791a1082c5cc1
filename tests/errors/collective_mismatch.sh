#!/usr/bin/env bash
# Mismatched collectives under mpirun stop every run with exit code 3 naming both calls.
set -u
# usage: collective_mismatch.sh PROGRAM MPIRUN [MPIRUN FLAGS...]
program=$1
shift
failed=0
for np in 2 4; do
  for pair in broadcast-reduce allreduce-barrier; do
    out=$(timeout 120 "$@" -np "$np" "$program" "$pair" 2>&1)
    code=$?
    if [ "$code" -eq 3 ] && grep -q "rill: fatal: collective #0 of team 0x1: rank [0-9]* called .* rank [0-9]* " <<<"$out"; then
      echo "ok: $pair on $np ranks"
    else
      echo "FAIL: $pair on $np ranks: exit $code (want 3; 124 = hung):"
      echo "$out"
      failed=1
    fi
  done
done
exit $failed
