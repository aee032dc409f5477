#!/usr/bin/env bash
# The wheel of //python:wheel installs offline into a fresh venv made with
# --system-site-packages (Debian's numpy and torch stay visible), imports,
# and runs a plan and a pipeline from outside the source tree.
#   wheel_test.sh WHEEL PLAN [--asan]
set -euo pipefail
wheel=$(realpath "$1")
plan=$(realpath "$2")
if [[ "${3:-}" == "--asan" ]]; then
  # The extension is built with ASan: python3 needs the runtime first.
  export LD_PRELOAD=$(clang -print-file-name=libclang_rt.asan-x86_64.so)
  export ASAN_OPTIONS=detect_leaks=0
fi
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install --no-index --quiet "$wheel"
cd "$work"
"$work/venv/bin/python" - "$plan" <<'PY'
import sys

import numpy

import actorflow
from actorflow import fn
from actorflow.pipeline import Pipeline

assert actorflow.__file__.startswith(sys.prefix), actorflow.__file__
summary = actorflow.run(sys.argv[1])
assert summary["sinks"]["sink"]["checksum"] == 640640000, summary
pipe = Pipeline(batch_size=2)
with pipe:
    pipe.set_outputs(fn.external_source(name="x", dtype="int64", shape=[2]))
pipe.build()
pipe.feed_input("x", numpy.array([[1, 2], [3, 4]]))
pipe.schedule_run()
(batch,) = pipe.outputs()
assert batch.as_array().tolist() == [[1, 2], [3, 4]]
print("wheel: installed in", sys.prefix, "and ran", summary)
PY
