#!/usr/bin/env bash
# The runner's resume loop, shared by run_batch.sh and calibrate_all.sh (cosim/gpu/runner/README.md):
# runs every launch of a batch file with `runner --resume` until each has a result, going on after
# hangs and crashes.
#
# Usage: run_launches.sh RUNNER LIST_FILE RESULTS_DIR DEADLINE LOG
#   LIST_FILE: launch descriptions, one a line, relative to its folder (batch.txt, plain.txt, ...).
#   DEADLINE: epoch seconds after which no runner pass starts (what is left is reported `skipped`).
# Environment: KERNEL_TIMEOUT (s, default 20) per launch.
# Writes RESULTS_DIR/NAME.result per launch: the runner's, or `status crashed` for a launch that
# died with the runner, or `status skipped` for one never started.
set -u
BIN=$1 LIST=$2 RES=$3 DEADLINE=$4 LOG=$5
mkdir -p "$RES"
total=$(grep -cv '^\s*\(#\|$\)' "$LIST")
for attempt in $(seq 1 $((total + 1))); do
  before=$(ls "$RES"/*.result 2>/dev/null | wc -l)
  left=$(( DEADLINE - $(date +%s) ))
  [ "$left" -le 0 ] && { echo "== time budget spent before $(basename "$LIST") finished" >> "$LOG"; break; }
  timeout "$left" "$BIN" "$LIST" "$RES" --resume --timeout "${KERNEL_TIMEOUT:-20}" >> "$LOG" 2>&1
  rc=$?
  echo "== runner pass $attempt on $(basename "$LIST") -> $RES exited $rc" >> "$LOG"
  # A launch that started but left no result crashed the runner (a timeout writes its own result).
  for s in "$RES"/*.started; do
    [ -e "$s" ] || continue
    n=$(basename "$s" .started)
    [ -e "$RES/$n.result" ] || printf 'launch %s\nstatus crashed\nerror HOPSYNC_RUNNER_DIED\nmessage the runner exited with status %s during this launch\n' "$n" "$rc" > "$RES/$n.result"
    rm -f "$s"
  done
  [ "$rc" = 0 ] && break
  after=$(ls "$RES"/*.result 2>/dev/null | wc -l)
  [ "$after" -le "$before" ] && { echo "== no progress; stopping" >> "$LOG"; break; }
done
grep -v '^\s*\(#\|$\)' "$LIST" | while read -r l; do
  n=$(basename "$l" .launch)
  [ -e "$RES/$n.result" ] || printf 'launch %s\nstatus skipped\nerror HOPSYNC_SKIPPED\nmessage not run: the batch stopped (budget or no progress)\n' "$n" > "$RES/$n.result"
done
ok=$(grep -l '^status ok' "$RES"/*.result 2>/dev/null | wc -l)
echo "== $(basename "$LIST") -> $RES: $ok of $total launches ok" >> "$LOG"
grep -L '^status ok' "$RES"/*.result 2>/dev/null | xargs -r grep -H '^\(status\|error\|message\|jit\)' >> "$LOG"
exit 0
