#!/usr/bin/env bash
# A stand-in for the runner on a machine without a GPU: runs the launches of a batch file on the
# golden engine (`hopsync gpu golden --list`) and writes results as the runner does, so that
# run_batch.sh and calibrate_all.sh can be tried end to end (RUNNER=.../golden_runner.sh).
# Usage as the runner's: golden_runner.sh LIST_FILE OUT_DIR [--resume] [--timeout S]
# Environment: HOPSYNC, the hopsync binary (default: hopsync on the PATH).
set -u
LIST=$1 OUTDIR=$2
exec "${HOPSYNC:-hopsync}" gpu golden "$(dirname "$LIST")" "$OUTDIR" --list "$(basename "$LIST")"
