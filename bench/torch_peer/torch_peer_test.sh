#!/usr/bin/env bash
# The benchmark beside PyTorch runs end to end (--quick: one sample, small
# sizes): every job prints a row per peer and a verdict per target. Speed is
# the benchmark's business, not this test's.
set -uo pipefail
out=$(bench/torch_peer/torch_peer.sh --quick "$@" 2>&1)
status=$?
echo "$out"
if ((status != 0)); then
  echo "FAIL: torch_peer exited with $status"
  exit 1
fi
fail=0
for row in "| actorflow, 2 streams |" "| PyTorch, 1 thread |" \
  "| PyTorch, 2 threads |" "| PyTorch, 1 thread + 2 BLAS threads |" \
  "| actorflow, 2 threads |" "| DataLoader, 2 workers, PIL |" \
  "| DataLoader, 2 workers, torchvision.io |" "PyTorch's best >= 1.5x" \
  "DataLoader + PIL >= 2.0x" "targets hold"; do
  if ! grep -qF -- "$row" <<<"$out"; then
    echo "FAIL: no '$row' in the output"
    fail=1
  fi
done
exit $fail
