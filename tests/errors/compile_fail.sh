#!/usr/bin/env bash
# A program that misuses Rill's API must fail to compile with an error that names the problem
# in Rill's words, first, and briefly.
set -u
# usage: compile_fail.sh CXX INCLUDE_DIR SOURCE EXPECTED_TEXT MAX_ERROR_LINES
cxx=$1 include=$2 source=$3 expected=$4 max_errors=$5
out=$("$cxx" -std=c++20 -fsyntax-only -I"$include" "$source" 2>&1)
code=$?
errors=$(grep -c "error:" <<<"$out")
if [ "$code" -eq 0 ]; then
  echo "FAIL: $source compiled"; exit 1
fi
if ! grep -q -- "$expected" <<<"$out"; then
  echo "FAIL: the errors do not say '$expected':"; echo "$out" | head -60; exit 1
fi
if [ "$errors" -gt "$max_errors" ]; then
  echo "FAIL: $errors errors (at most $max_errors wanted):"; echo "$out" | grep "error:"; exit 1
fi
echo "ok: $errors error(s), saying: $(grep -m1 -o -- "$expected.*" <<<"$out" | cut -c1-160)"
