"""Lets a Python test load an extension built with AddressSanitizer
(tools/bazel test --config=asan_thread_safety): BUILD passes --asan there,
and the test re-executes itself with clang's ASan runtime preloaded, as
an uninstrumented python3 must have it first."""

import os
import subprocess
import sys


def preload_if_asked():
    if "--asan" not in sys.argv:
        return
    sys.argv.remove("--asan")
    if "libclang_rt.asan" in os.environ.get("LD_PRELOAD", ""):
        return
    runtime = subprocess.run(
        ["clang", "-print-file-name=libclang_rt.asan-x86_64.so"],
        check=True, capture_output=True, text=True).stdout.strip()
    env = dict(os.environ)
    env["LD_PRELOAD"] = runtime
    # CPython frees little at exit by design: leaks are not ours to report.
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") +
                           ":detect_leaks=0").lstrip(":")
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable] + sys.argv, env)
