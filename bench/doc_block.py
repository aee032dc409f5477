"""What the Python benchmarks share: the CPU's name for a table's heading,
and rewriting a generated block of a Markdown file."""

import os
import platform
import sys


def cpu_name():
    """The CPU's model name (from /proc/cpuinfo), else the architecture."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def rewrite_block(path, name, lines):
    """Replaces what lies between "<!-- NAME:begin -->" and "<!-- NAME:end
    -->" in `path` with `lines` (markers included); exits naming the file
    when it has no such block."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    with open(path) as f:
        text = f.read()
    if begin not in text or end not in text:
        sys.exit(f"{name}: {path} has no {begin} ... {end} block")
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    with open(path, "w") as f:
        f.write(head + "\n".join([begin, *lines, end]) + tail)


def child_env(with_sanitizer=True, keep_freed_memory=False):
    """The environment for a benchmark's side in a process of its own: this
    one's module path, one BLAS/OpenMP thread, and without the ASan runtime
    preload for a side that is PyTorch alone.

    keep_freed_memory: as keep_freed_memory_in() below."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    env["OMP_NUM_THREADS"] = env["OPENBLAS_NUM_THREADS"] = "1"
    if not with_sanitizer:
        env.pop("LD_PRELOAD", None)
    return keep_freed_memory_in(env) if keep_freed_memory else env


def keep_freed_memory_in(env):
    """Sets `env` so that glibc's malloc keeps freed memory for reuse: a
    PyTorch peer's best setup. torch allocates fresh tensors for every
    sample, and glibc hands large freed blocks back to the kernel, so each
    one is paged in anew (on a VM a page fault can cost tens of
    microseconds); the allocators PyTorch's performance advice names
    (jemalloc, tcmalloc) keep them, as this does. Returns `env`."""
    env["MALLOC_MMAP_THRESHOLD_"] = env["MALLOC_TRIM_THRESHOLD_"] = \
        str(1 << 30)
    return env
