"""Finds a CUDA toolkit at analysis time; without one the build is CPU-only.

The generated repository @local_cuda always has:
  //:defs.bzl      CUDA_ENABLED (bool) and CUDA_PATH (string, "" if none)
  //:cuda_runtime  headers + static cudart when CUDA_ENABLED, empty otherwise

Where to look: $CUDA_PATH if set, else /usr/local/cuda. ACTORFLOW_CUDA=off
(e.g. `--config=nocuda`) forces a CPU-only build on a machine that has CUDA.
"""

_EMPTY_BUILD = """
package(default_visibility = ["//visibility:public"])

# No CUDA toolkit was found (or ACTORFLOW_CUDA=off): a CPU-only build.
cc_library(name = "cuda_runtime")
"""

_CUDA_BUILD = """
package(default_visibility = ["//visibility:public"])

# CUDA toolkit found at {path}.
cc_library(
    name = "cuda_runtime",
    hdrs = glob(["include/**"]),
    includes = ["include"],
    srcs = ["lib/libcudart_static.a"],
    linkopts = ["-ldl", "-lrt", "-lpthread"],
)
"""

def _cuda_configure_impl(ctx):
    mode = ctx.os.environ.get("ACTORFLOW_CUDA", "auto")
    if mode not in ["auto", "on", "off"]:
        fail("ACTORFLOW_CUDA must be auto, on or off, got '%s'" % mode)
    explicit = ctx.os.environ.get("CUDA_PATH", "")
    path = explicit if explicit else "/usr/local/cuda"
    has_toolkit = (ctx.path(path + "/include/cuda_runtime.h").exists and
                   ctx.path(path + "/lib64/libcudart_static.a").exists)
    if explicit and not has_toolkit and mode != "off":
        fail("CUDA_PATH=%s has no include/cuda_runtime.h and " % path +
             "lib64/libcudart_static.a; unset it for a CPU-only build")
    if mode == "on" and not has_toolkit:
        fail("ACTORFLOW_CUDA=on but no CUDA toolkit at %s" % path)
    enabled = has_toolkit and mode != "off"
    if enabled:
        ctx.symlink(path + "/include", "include")
        ctx.symlink(path + "/lib64/libcudart_static.a", "lib/libcudart_static.a")
        ctx.file("BUILD.bazel", _CUDA_BUILD.format(path = path))
    else:
        ctx.file("BUILD.bazel", _EMPTY_BUILD)
    ctx.file("defs.bzl", "CUDA_ENABLED = %s\nCUDA_PATH = %r\n" % (
        enabled,
        path if enabled else "",
    ))

cuda_configure = repository_rule(
    implementation = _cuda_configure_impl,
    environ = ["CUDA_PATH", "ACTORFLOW_CUDA"],
    local = True,
)
