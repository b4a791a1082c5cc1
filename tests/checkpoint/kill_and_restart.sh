#!/usr/bin/env bash
# docs/checkpoint.md's test: examples/checkpoint.cpp killed with SIGKILL in the middle of its run
# and in the middle of a checkpoint, restarted each time, ends with the checksum of a run that was
# never interrupted.
#   kill_and_restart.sh EXE [LAUNCHER...]     e.g. kill_and_restart.sh rill-checkpoint timeout 120 mpirun -np 2
set -euo pipefail
exe=$1
shift
launcher=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(--points 262144 --steps 40 --every 5)

checksum() { sed -n 's/.*checksum \(.*\)$/\1/p'; }
# Waits up to 60 s for a file matching the glob in dir; fails the test otherwise. (The run is
# another process: its files are all there is to wait on, so the test polls for them.)
wait_for() {
  local dir=$1 glob=$2
  for _ in $(seq 6000); do
    compgen -G "$dir/$glob" > /dev/null && return 0
    sleep 0.01
  done
  echo "kill_and_restart: no $glob appeared in $dir" >&2
  exit 1
}
# Starts the run in a process group of its own, so that kill -9 reaches every rank.
start() { setsid "${launcher[@]}" "$exe" --dir "$work/run" "${args[@]}" "$@" > "$work/killed.out" 2>&1 & pid=$!; }
# (mpirun puts each rank in a process group of its own: they are found by their command line too,
# and the test goes on only once none is left, so that none finishes a checkpoint afterwards.)
kill_group() {
  kill -9 -- "-$pid" 2> /dev/null || true
  pkill -9 -f -- "--dir $work/run" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
  for _ in $(seq 1000); do
    pgrep -f -- "--dir $work/run" > /dev/null || return 0
    pkill -9 -f -- "--dir $work/run" 2> /dev/null || true
    sleep 0.01
  done
  echo "kill_and_restart: the killed run's processes are still there" >&2
  exit 1
}

reference=$("${launcher[@]}" "$exe" --dir "$work/reference" "${args[@]}" | checksum)
[[ -n "$reference" ]] || { echo "kill_and_restart: the uninterrupted run printed no checksum" >&2; exit 1; }

# 1. Killed in the middle of the run, once its first checkpoint is complete.
start --step-ms 20
wait_for "$work/run" 'state-5.bin'
kill_group
# 2. Restarted, and killed in the middle of a checkpoint: its file is still a temporary one.
start --step-ms 5 --pause-ms 2000
wait_for "$work/run" '.state-*.rill-*'
kill_group
newest=$(ls "$work/run" | sed -n 's/^state-\([0-9]*\)\.bin$/\1/p' | sort -n | tail -1)
half=$(ls -a "$work/run" | grep -c '^\.state-.*\.rill-' || true)
echo "kill_and_restart: killed twice; newest complete checkpoint: step $newest; half-written ones left: $half"
((half >= 1)) || { echo "kill_and_restart: the second kill did not come in the middle of a checkpoint" >&2; exit 1; }
# 3. Restarted to the end.
restarted=$("${launcher[@]}" "$exe" --dir "$work/run" "${args[@]}")
echo "$restarted"
grep -q "started after step $newest)" <<< "$restarted" || {
  echo "kill_and_restart: the restart did not continue after step $newest" >&2
  exit 1
}
result=$(checksum <<< "$restarted")
if [[ "$result" != "$reference" ]]; then
  echo "kill_and_restart: checksum $result after the kills and restarts, $reference without" >&2
  exit 1
fi
echo "kill_and_restart: same checksum as the uninterrupted run ($reference)"
