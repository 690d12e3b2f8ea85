#!/usr/bin/env bash
# The silicon side of `hopsync calibrate`, in one device command (cosim/gpu/runner/README.md,
# "Calibration"): builds the runner, records the card, clocks, driver, nvcc and date, runs every
# calibration program's unchanged launch RUNS times and every traced program's instrumented launch
# once, and packs everything into $OUT/calibration_results.tar.gz (split into parts of 15 MiB,
# at most 8, if larger).
#
# Usage, on the device:  OUT=$OUT bash cosim/gpu/runner/calibrate_all.sh [BATCH_DIR]
#   BATCH_DIR: written on the development machine by `hopsync calibrate pack` (default
#              cosim/gpu/calib_batch): calibration/ (plain.txt) and whole/ (traced.txt).
# Environment: RUNS (default 5) runs of the calibration launches; KERNEL_TIMEOUT (s, default 20)
#   per launch; BUDGET (s, default 420) for all launches, so that the command ends within 9 minutes
#   with the runner's build (what is left then is reported `skipped`); RUNNER (a prebuilt runner:
#   skip the build); CLOCK_SAMPLE_MS (default 500) nvidia-smi's clock sampling period.
# Then, back on the development machine:
#   cat calibration_results.tar.gz* | tar -xz -C /tmp && hopsync calibrate import /tmp/calibration_results
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BATCH=$(cd "${1:-$HERE/../calib_batch}" && pwd) || { echo "no batch folder: run \`hopsync calibrate pack\` first"; exit 2; }
[ -f "$BATCH/calibration/plain.txt" ] && [ -f "$BATCH/whole/traced.txt" ] || { echo "$BATCH is not a \`hopsync calibrate pack\` folder"; exit 2; }
OUT=${OUT:-/tmp/hopsync_gpu_out}
RUNS=${RUNS:-5}
mkdir -p "$OUT"
export PATH=$PATH:/usr/local/cuda/bin
start=$(date +%s)
deadline=$(( start + ${BUDGET:-420} ))
WORK=$(mktemp -d)
RES="$WORK/calibration_results"
mkdir -p "$RES/calibration" "$RES/whole"
LOG="$RES/log.txt"
clocks() {
  nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,temperature.gpu,power.draw --format=csv,noheader 2>&1 | head -n 1
}
{
  echo "date_utc $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "nvidia_smi $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1)"
  echo "nvcc $(nvcc --version 2>&1 | grep -i 'release' | head -n 1)"
  echo "hostname $(hostname)"
  echo "clocks_start sm, max sm, mem, max mem, temperature, power: $(clocks)"
} > "$RES/env.txt"
nvidia-smi -q -d CLOCK,PERFORMANCE > "$RES/nvidia_smi_clocks.txt" 2>&1
# The SM clock while the batch runs: %clock64 counts SM cycles, but memory latencies in SM cycles
# move with the SM clock; the record keeps the samples.
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv -lms "${CLOCK_SAMPLE_MS:-500}" > "$RES/clocks.csv" 2>&1 &
sampler=$!
cat "$RES/env.txt"

if [ -n "${RUNNER:-}" ]; then
  BIN=$RUNNER
else
  BIN="$WORK/runner"
  bash "$HERE/build_runner.sh" "$BIN" "$LOG" || { echo "runner build failed"; cat "$LOG"; }
fi
cp "$BATCH"/calibration/*.pack.json "$RES/calibration/"
cp "$BATCH"/whole/*.pack.json "$RES/whole/"
for r in $(seq 1 "$RUNS"); do
  bash "$HERE/run_launches.sh" "$BIN" "$BATCH/calibration/plain.txt" "$RES/calibration/run$r" "$deadline" "$LOG"
done
bash "$HERE/run_launches.sh" "$BIN" "$BATCH/whole/traced.txt" "$RES/whole" "$deadline" "$LOG"

echo "clocks_end sm, max sm, mem, max mem, temperature, power: $(clocks)" >> "$RES/env.txt"
kill "$sampler" 2>/dev/null
wait "$sampler" 2>/dev/null
echo "== done in $(( $(date +%s) - start )) s" >> "$LOG"
tar -C "$WORK" -czf "$OUT/calibration_results.tar.gz" calibration_results
size=$(stat -c %s "$OUT/calibration_results.tar.gz")
if [ "$size" -gt $(( 15 * 1024 * 1024 )) ]; then
  # At most 8 result files of less than 16 MiB each come back.
  split -b 15M -d -a 1 "$OUT/calibration_results.tar.gz" "$OUT/calibration_results.tar.gz.part"
  rm "$OUT/calibration_results.tar.gz"
fi
cp "$LOG" "$OUT/log.txt"
rm -rf "$WORK"
tail -n 40 "$OUT/log.txt"
ls -la "$OUT"
