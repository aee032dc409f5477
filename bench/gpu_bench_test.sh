#!/usr/bin/env bash
# Smoke test of the GPU benchmark: a tiny run must finish and print every
# figure (it checks its own pipeline for lost or reordered pieces). Without
# a usable device the benchmark prints SKIPPED, and so does this test.
set -euo pipefail
out=$("$1" --samples=1 --round-trips=20 --pieces=50 --kernel-us=1)
echo "$out"
if grep -q '^SKIPPED: ' <<<"$out"; then exit 0; fi
for figure in "event + poller callback" "cudaStreamSynchronize" \
  "sync loop" "register_num 1" "register_num 2" "register_num 4"; do
  grep -q "$figure" <<<"$out" || { echo "missing: $figure"; exit 1; }
done
