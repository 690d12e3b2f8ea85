#!/usr/bin/env bash
# Builds the runner with the device's nvcc (shared by run_batch.sh and calibrate_all.sh).
# Usage: build_runner.sh BIN LOG   (exit status non-zero when nvcc fails, with and without the
# driver stubs folder; nvcc's output is in LOG).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$1 LOG=$2
export PATH=$PATH:/usr/local/cuda/bin
echo "== nvcc -O2 -arch=sm_90 runner.cpp -lcuda" >> "$LOG"
nvcc -O2 -arch=sm_90 "$HERE/runner.cpp" -lcuda -o "$BIN" >> "$LOG" 2>&1 && exit 0
echo "== retry with the driver stubs folder" >> "$LOG"
nvcc -O2 -arch=sm_90 "$HERE/runner.cpp" -L/usr/local/cuda/lib64/stubs -lcuda -o "$BIN" >> "$LOG" 2>&1
