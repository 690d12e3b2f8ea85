#!/usr/bin/env bash
# Records the CUDA C++ clients (firmware/programs/clients/*.cu) on silicon in ONE device call.
#
#   scripts/gpu_clients.sh pack [OUT_DIR]     # here: compile (hopsync's PTX cache), instrument and
#                                             # write the batch (default out/clients_batch)
#   # then one device call, carrying the batch folder (`carry: ["out/clients_batch"]`):
#   OUT=$OUT bash cosim/gpu/runner/run_batch.sh out/clients_batch
#   scripts/gpu_clients.sh import gpu_results.tar.gz   # here: traces -> cosim/traces/sm90/
#
# The GPU machine has nvcc 13.0 and driver 580 (PTX ISA 9.0 at most) and no network, so nothing
# is compiled there but the runner: the batch holds every client's PTX (nvcc 13.5 from PyPI,
# written at `.version 9.0` and checked with ptxas at that version: --ptx-version 9.0), the
# instrumented copy and the launch descriptions. A client hopsync cannot run yet is listed as
# NOT packed, with the reason (e.g. an instruction another change adds).
set -u
cd "$(dirname "$0")/.."
HOPSYNC=${HOPSYNC:-target/debug/hopsync}
[ -x "$HOPSYNC" ] || cargo build -q --bin hopsync || exit 2
case "${1:-}" in
  pack)
    OUT_DIR=${2:-out/clients_batch}
    rm -rf "$OUT_DIR"
    "$HOPSYNC" gpu pack firmware/programs/clients --ptx-version 9.0 --out "$OUT_DIR"
    status=$?
    echo "device command: OUT=\$OUT bash cosim/gpu/runner/run_batch.sh $OUT_DIR   (carry $OUT_DIR)"
    exit $status
    ;;
  import)
    [ -f "${2:-}" ] || { echo "usage: $0 import gpu_results.tar.gz"; exit 2; }
    tmp=$(mktemp -d)
    tar -xzf "$2" -C "$tmp" && "$HOPSYNC" gpu import "$tmp/gpu_results"
    status=$?
    rm -rf "$tmp"
    exit $status
    ;;
  *)
    sed -n '2,15p' "$0"
    exit 2
    ;;
esac
