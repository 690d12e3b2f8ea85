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
  bash "$HERE/build_runner.sh" "$BIN" "$LOG" || {
    echo "runner build failed"; cat "$LOG"; tar -C "$WORK" -czf "$OUT/gpu_results.tar.gz" gpu_results; exit 1; }
fi
cp "$BATCH"/*.pack.json "$BATCH"/batch.txt "$RES"/ 2>/dev/null
start=$(date +%s)
bash "$HERE/run_launches.sh" "$BIN" "$BATCH/batch.txt" "$RES" $(( start + ${BATCH_BUDGET:-300} )) "$LOG"
echo "== $(ls "$RES"/*.result 2>/dev/null | wc -l) results in $(( $(date +%s) - start )) s" >> "$LOG"
tar -C "$WORK" -czf "$OUT/gpu_results.tar.gz" gpu_results
cp "$LOG" "$OUT/log.txt"
cat "$LOG"
ls -la "$OUT"
