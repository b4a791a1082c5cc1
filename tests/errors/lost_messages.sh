#!/usr/bin/env bash
# The fault injector of the local transport (--rill:faults) against the delivery audit: a lost
# message and a rank that stops answering each end the run with exit code 3 and a line naming the
# ranks, within the timeout (a hang fails); a slow rank is no fault, and its run gives exact results.
set -u
# usage: lost_messages.sh PROGRAM
prog=$1
failed=0
expect() {  # expect CODE PATTERN ARGS...
  local want=$1 pattern=$2
  shift 2
  local out code
  out=$(timeout 90 "$prog" "$@" 2>&1)
  code=$?
  if [ "$code" -ne "$want" ] || ! grep -qE "$pattern" <<<"$out"; then
    echo "FAIL: $* exited $code (want $want) or printed no line matching '$pattern':"
    echo "$out" | tail -20
    failed=1
  else
    echo "ok: $* -> exit $code, $(grep -E "$pattern" <<<"$out" | head -1)"
  fi
}
audit="--rill:hang-report-s=0.5"
never="message\(s\) from rank [0-9]+ never arrived: rank [0-9]+ had handed [0-9]+ to the transport"
# Lost on the way, found by termination detection (nothing else waits for them).
expect 3 "$never" fire-and-forget --rill:ranks=3 --rill:faults=drop=25 $audit
expect 3 "$never" fire-and-forget --rill:ranks=2 --rill:chaos=9 --rill:faults=drop=50 $audit
# Lost on the way, found through the hang report of the rank that waits for an answer.
expect 3 "$never" rpc --rill:ranks=2 --rill:faults=drop=25 $audit
expect 3 "$never" rpc --rill:ranks=3 --rill:chaos=4 --rill:workers=2 --rill:faults=drop=40 $audit
# A rank that stops answering, named by the others (or, cut off, it names them all): found by the
# hang report of a rank waiting for it, and by a sender that waits for room to send to it.
silent="rank\(s\) (1 have|0, 2 have) not answered a delivery audit for [0-9.]+ s.*--rill:unresponsive-s"
expect 3 "$silent" rpc --rill:ranks=3 --rill:faults=stall=1@3 $audit --rill:unresponsive-s=2
expect 3 "$silent" fire-and-forget --rill:ranks=3 --rill:faults=stall=1@1 $audit --rill:unresponsive-s=2
# A slow rank is only slow.
expect 0 "^answers: 4000$" rpc --rill:ranks=3 --rill:chaos=3 --rill:faults=slow=1:2 $audit
expect 0 "^arrived: 4000$" fire-and-forget --rill:ranks=3 --rill:faults=slow=2:20 $audit
exit $failed
