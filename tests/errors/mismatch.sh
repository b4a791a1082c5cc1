#!/usr/bin/env bash
# Two different binaries under one mpirun must fail at start-up on every rank, clearly, not hang.
set -u
# usage: mismatch.sh PROGRAM OTHER MPIRUN [MPIRUN FLAGS...]
program=$1 other=$2
shift 2
out=$(timeout 120 "$@" -np 1 "$program" : -np 1 "$other" 2>&1)
code=$?
echo "$out"
[ "$code" -ne 0 ] || { echo "FAIL: mismatched binaries exited 0"; exit 1; }
[ "$code" -ne 124 ] || { echo "FAIL: mismatched binaries hung"; exit 1; }
n=$(grep -c "runs a different build" <<<"$out")
[ "$n" -eq 2 ] || { echo "FAIL: expected the error on both ranks, saw it $n time(s)"; exit 1; }
echo "mismatch detected on both ranks (exit $code)"
