#!/usr/bin/env bash
# Runs torch_peer.py on Debian's Python (another python3 may come first on
# PATH, without torch), from the runfiles root where Bazel starts it.
set -euo pipefail
if [[ ! -x /usr/bin/python3 ]] || ! /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null; then
  echo "torch_peer: needs Debian's python3-torch and python3-torchvision" \
    "for /usr/bin/python3 (tools/bazel installs them for tests and" \
    "benchmarks)" >&2
  exit 1
fi
# bench/ for doc_block, which the Python benchmarks share.
PYTHONPATH="bench${PYTHONPATH:+:$PYTHONPATH}" \
  exec /usr/bin/python3 bench/torch_peer/torch_peer.py "$@"
