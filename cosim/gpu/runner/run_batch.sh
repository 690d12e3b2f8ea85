#!/usr/bin/env bash
# Everything hopsync does on the GPU machine, in one command (cosim/gpu/runner/README.md):
#   builds the runner with nvcc, records the provenance, runs every launch of the batch (going on
#   after hangs and crashes), and packs the results into $OUT/gpu_results.tar.gz.
#
# Usage, on the device:  OUT=$OUT bash cosim/gpu/runner/run_batch.sh [BATCH_DIR]
#   BATCH_DIR: written here by `hopsync gpu pack firmware/programs --out cosim/gpu/batch`
#              (default: cosim/gpu/batch).
# Environment: KERNEL_TIMEOUT (s, default 20) per launch; BATCH_BUDGET (s, default 300) for all
#   launches (what is left then is reported `skipped`); RUNNER (a prebuilt runner: skip the build).
# Then, back on the development machine:
#   tar -xzf gpu_results.tar.gz -C /tmp && hopsync gpu import /tmp/gpu_results
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BATCH=$(cd "${1:-$HERE/../batch}" && pwd) || { echo "no batch folder"; exit 2; }
OUT=${OUT:-/tmp/hopsync_gpu_out}
mkdir -p "$OUT"
export PATH=$PATH:/usr/local/cuda/bin
WORK=$(mktemp -d)
RES="$WORK/gpu_results"
mkdir -p "$RES"
LOG="$RES/log.txt"
{
  echo "date_utc $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "nvidia_smi $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1)"
  echo "nvcc $(nvcc --version 2>&1 | grep -i 'release' | head -n 1)"
  echo "hostname $(hostname)"
} > "$RES/env.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$RES/nvidia_smi.txt" 2>&1
nvcc --version > "$RES/nvcc_version.txt" 2>&1
cat "$RES/env.txt"

if [ -n "${RUNNER:-}" ]; then
  BIN=$RUNNER
else
  BIN="$WORK/runner"
  echo "== nvcc -O2 -arch=sm_90 runner.cpp -lcuda" >> "$LOG"
  if ! nvcc -O2 -arch=sm_90 "$HERE/runner.cpp" -lcuda -o "$BIN" >> "$LOG" 2>&1; then
    echo "== retry with the driver stubs folder" >> "$LOG"
    nvcc -O2 -arch=sm_90 "$HERE/runner.cpp" -L/usr/local/cuda/lib64/stubs -lcuda -o "$BIN" >> "$LOG" 2>&1 || {
      echo "runner build failed"; cat "$LOG"; tar -C "$WORK" -czf "$OUT/gpu_results.tar.gz" gpu_results; exit 1; }
  fi
fi

cp "$BATCH"/*.pack.json "$BATCH"/batch.txt "$RES"/ 2>/dev/null
total=$(grep -cv '^\s*\(#\|$\)' "$BATCH/batch.txt")
start=$(date +%s)
budget=${BATCH_BUDGET:-300}
for attempt in $(seq 1 $((total + 1))); do
  before=$(ls "$RES"/*.result 2>/dev/null | wc -l)
  left=$(( budget - ($(date +%s) - start) ))
  [ "$left" -le 0 ] && { echo "== batch budget of $budget s spent" >> "$LOG"; break; }
  timeout "$left" "$BIN" "$BATCH/batch.txt" "$RES" --resume --timeout "${KERNEL_TIMEOUT:-20}" >> "$LOG" 2>&1
  rc=$?
  echo "== runner pass $attempt exited $rc" >> "$LOG"
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
grep -v '^\s*\(#\|$\)' "$BATCH/batch.txt" | while read -r l; do
  n=$(basename "$l" .launch)
  [ -e "$RES/$n.result" ] || printf 'launch %s\nstatus skipped\nerror HOPSYNC_SKIPPED\nmessage not run: the batch stopped (budget or no progress)\n' "$n" > "$RES/$n.result"
done
echo "== $(ls "$RES"/*.result 2>/dev/null | wc -l) results of $total launches in $(( $(date +%s) - start )) s" >> "$LOG"
grep -l '^status ok' "$RES"/*.result 2>/dev/null | wc -l | sed 's/^/ok: /' >> "$LOG"
grep -L '^status ok' "$RES"/*.result 2>/dev/null | xargs -r grep -H '^\(status\|error\|message\|jit\)' >> "$LOG"
tar -C "$WORK" -czf "$OUT/gpu_results.tar.gz" gpu_results
cp "$LOG" "$OUT/log.txt"
cat "$LOG"
ls -la "$OUT"
