#!/usr/bin/env bash
# Builds and runs the mbarrier encoding probes on an sm_90 GPU (H100/H200). Results go to $OUT
# (default /tmp/mbarrier_probe_out):
#   env.txt            GPU, driver, nvcc, date
#   log.txt            build and run log
#   sass.txt           the probe's SASS (cuobjdump -sass)
#   safe.json          in-spec sequences, all in one launch, plus the cache-capacity probe
#   safe2.json         the same again (run-to-run determinism)
#   ub.json, forge.json  out-of-spec sequences / words written back after inval and used without init:
#                      one sequence per process (a fault kills its whole launch); when a sequence faults,
#                      its prefixes are run (1, 2, ... steps) until one faults, naming the faulting step.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/mbarrier_probe_out}
mkdir -p "$OUT"
rm -f "$OUT"/safe*.json "$OUT"/ub*.json "$OUT"/forge*.json
export PATH=$PATH:/usr/local/cuda/bin
B=$(mktemp -d)
PROBE="$B/mbarrier_probe"
{
  echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version --format=csv
  nvcc --version
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
if ! nvcc -O2 -arch=sm_90 ${NVCC_EXTRA:-} -o "$PROBE" "$HERE/mbarrier_probe.cu" > "$OUT/log.txt" 2>&1; then
  echo "build failed"; cat "$OUT/log.txt"; exit 1
fi
cuobjdump -sass "$PROBE" > "$OUT/sass.txt" 2>&1
MOCK=${PROBE_MOCK:+--mock}
for f in safe safe2; do
  timeout 120 "$PROBE" $MOCK safe "$OUT/$f.json" >> "$OUT/log.txt" 2>&1
  echo "$f rc=$?" >> "$OUT/log.txt"
done
sanitized=0
for g in ub forge; do
  D="$B/$g"; mkdir -p "$D"
  "$PROBE" $MOCK --list "$g" > "$D/list.txt"
  while read -r i n name; do
    timeout 60 "$PROBE" $MOCK "$g" "$D/$i.json" --only "$i" >> "$D/$i.log" 2>&1
    rc=$?
    echo "full $rc" > "$D/$i.status"
    echo "$g/$name full rc=$rc" >> "$OUT/log.txt"
    if [ "$rc" != 0 ]; then
      for k in $(seq 1 $((n - 1))); do
        timeout 60 "$PROBE" $MOCK "$g" "$D/$i.k.json" --only "$i" --upto "$k" >> "$D/$i.log" 2>&1
        krc=$?
        echo "prefix $k $krc" >> "$D/$i.status"
        if [ "$krc" != 0 ]; then break; fi
        mv "$D/$i.k.json" "$D/$i.json"
      done
      echo "$g/$name prefixes: $(grep prefix "$D/$i.status" | tr '\n' ' ')" >> "$OUT/log.txt"
      tail -n 3 "$D/$i.log" | sed "s|^|  $g/$name: |" >> "$OUT/log.txt"
      if [ "$sanitized" -lt 2 ] && command -v compute-sanitizer > /dev/null; then
        sanitized=$((sanitized + 1))
        echo "== compute-sanitizer on $g/$name" >> "$OUT/log.txt"
        timeout 90 compute-sanitizer --print-limit 3 "$PROBE" "$g" "$B/san.json" --only "$i" 2>&1 | head -40 >> "$OUT/log.txt"
      fi
    fi
  done < "$D/list.txt"
  python3 "$HERE/merge.py" "$g" "$D" "$OUT/$g.json" >> "$OUT/log.txt" 2>&1
done
cat "$OUT/log.txt"
ls -la "$OUT"
