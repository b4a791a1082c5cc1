#!/usr/bin/env bash
# Start-up must stop every rank with a clear error, never hang or run wrong, when the ranks were
# started with different options that must agree, or by another MPI's launcher.
set -u
# usage: start_checks.sh PROGRAM MPIRUN [MPIRUN FLAGS...]
program=$1
shift
failed=0

# expect NAME EXPECTED_COUNT WORDS COMMAND...: exit 3 (fatal), no timeout, WORDS on EXPECTED_COUNT lines.
expect() {
  local name=$1 count=$2 words=$3
  shift 3
  local out code n
  out=$(timeout 120 "$@" 2>&1)
  code=$?
  n=$(grep -cF -- "$words" <<<"$out")
  if [ "$code" -eq 3 ] && [ "$n" -eq "$count" ]; then
    echo "ok: $name (exit $code)"
  else
    echo "FAIL: $name: exit $code (want 3, 124 = hung), '$words' on $n line(s) (want $count):"
    echo "$out"
    failed=1
  fi
}

for option in --rill:segment=256MiB --rill:global-heap=32MiB --rill:node-ring=0 --rill:agg-bytes=8KiB --rill:steal=off; do
  expect "ranks started with different $option" 2 "${option%%=*}=" \
    "$@" -np 1 "$program" "$option" : -np 1 "$program"
done
# The same through the environment of one rank only.
expect "RILL_SEGMENT on one rank" 2 "must be the same on every rank" \
  "$@" -np 1 env RILL_SEGMENT=64MiB "$program" : -np 1 "$program"

# A process that another MPI's launcher started (PMI_SIZE says 2) but that this MPI sees alone.
expect "another launcher's job size" 1 "PMI_SIZE=2" env PMI_SIZE=2 "$program" --rill:transport=mpi
if command -v mpirun.mpich >/dev/null && ! ldd "$program" | grep -q libmpich; then
  expect "mpirun.mpich starting an Open MPI build" 2 "sees a job of 1" mpirun.mpich -np 2 "$program"
fi
exit $failed
