"""actorflow from Python beside actorflow from C++ and beside PyTorch's
DataLoader, on the same cores in the same run.

  tools/bazel run //bench/python_peer -- [--samples=3] [--quick]
      [--dir=DIR] [--images=1000]

Jobs, each run --samples times with the peers in turn (medians):
  images      the JPEG pipeline of the torch_peer benchmark (decode, shorter
              side 256, random crop 224, flip, normalize, batch 32,
              2 threads; over --images photo-sized JPEGs; actorflow: the
              median images/s of --epochs epochs but the first, DataLoader:
              epoch 2) read through actorflow.plugin.pytorch.GenericIterator
              into torch tensors (python_images.py), beside the same
              pipeline in C++ (examples/pipeline/image_pipeline
              --checksum=false: it takes each batch and touches nothing,
              as the iterator does) and beside DataLoader with 2 workers
              decoding with PIL and with torchvision.io (glibc's malloc
              keeping freed memory, its best setup:
              doc_block.keep_freed_memory_in).
  round trip  Session.feed then Session.fetch of a 4-float piece through
              examples/python/feed_fetch.pbtxt from Python, against the
              same two calls from C++ (round_trip): microseconds each.
  kernel      what a Python kernel costs per call: a plan of 1000 pieces
              (chain.pbtxt: source -> double -> sink, 256 floats) run with
              `double` as the built-in `scale` and bound to a Python
              function; (Python - built-in) / pieces.
Target: images/s from Python within 5 % of the C++ pipeline: the median,
over samples, of the ratio of the two run back to back (>= 0.95), so the
lead over DataLoader holds from Python. Rewrites the block between
<!-- python_peer:begin --> and <!-- python_peer:end --> in docs/performance.md
(--readme=PATH, --no-readme; never in --quick mode).
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import sanitizers

sanitizers.preload_if_asked()

import numpy  # noqa: E402

import actorflow  # noqa: E402
from doc_block import keep_freed_memory_in  # noqa: E402
from peer_report import (cpu_model, rewrite_readme,  # noqa: E402
                         warn_old_spellings)

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "actorflow from Python (GenericIterator)"
CPP = "actorflow from C++"


def run(cmd, env=None):
    if env is None:
        # C++ binaries carry their own sanitizer runtime, if any.
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"python_peer: {' '.join(cmd)} failed ({done.returncode}):\n"
                 f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.stdout


def last_json(text):
    return [json.loads(line) for line in text.splitlines()
            if line.startswith("{")][-1]


def python_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    env["OPENBLAS_NUM_THREADS"] = "1"
    return env


def steady_rate(out, who):
    """The median images/s of the epochs after the first ("epoch k: ...,
    R images/s" lines)."""
    rates = [float(line.rsplit(",", 1)[1].split()[0])
             for line in out.splitlines() if line.startswith("epoch ")]
    if len(rates) < 2:
        sys.exit(f"python_peer: fewer than 2 epoch lines from {who}:\n{out}")
    return statistics.median(rates[1:])


def images_python(args, directory):
    out = run([sys.executable, os.path.join(HERE, "python_images.py"),
               f"--dir={directory}", "--threads=2", "--batch=32",
               f"--epochs={args.epochs}"], python_env())
    return steady_rate(out, "python_images.py")


def images_cpp(args, directory):
    out = run([args.image_pipeline, f"--dir={directory}", "--threads=2",
               "--batch=32", f"--epochs={args.epochs}", "--checksum=false"])
    return steady_rate(out, "image_pipeline")


def images_dataloader(args, directory, decoder):
    env = keep_freed_memory_in(python_env())
    env.pop("LD_PRELOAD", None)  # PyTorch alone needs no ASan runtime
    out = run([sys.executable, args.dataloader_peer, f"--dir={directory}",
               f"--decoder={decoder}", "--workers=2", "--batch=32",
               "--epochs=2"], env)
    return last_json(out)["images_per_s"]


def round_trip_python(args):
    piece = numpy.zeros(4, numpy.float32)
    with actorflow.Session(args.feed_fetch_plan) as session:
        for _ in range(100):  # warm up
            session.feed("in", piece)
            session.fetch("out")
        start = time.perf_counter()
        for _ in range(args.round_trips):
            session.feed("in", piece)
            session.fetch("out")
        return (time.perf_counter() - start) / args.round_trips * 1e6


def round_trip_cpp(args):
    out = run([args.round_trip, f"--plan={args.feed_fetch_plan}",
               f"--round-trips={args.round_trips}", "--samples=1"])
    return last_json(out)["median_us"]


def kernel_cost(args):
    """Microseconds per call: (Python kernel - built-in) over the pieces."""
    def wall(kernels):
        with actorflow.Session(args.chain_plan, kernels=kernels) as session:
            session.run(100)  # warm up
            return session.run(args.pieces)["wall_ms"]
    builtin = wall({})
    python = wall({"double": lambda x: x * 2})
    return (python - builtin) * 1e3 / args.pieces, builtin * 1e3 / args.pieces


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 1 sample, 64 images, fewer calls")
    parser.add_argument("--dir", help="a directory of JPEGs under <class>/")
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=3,
                        help="per actorflow run; the figure is the median of "
                             "all but the first")
    parser.add_argument("--round-trips", "--round_trips", type=int, default=5000)
    parser.add_argument("--pieces", type=int, default=5000)
    parser.add_argument("--readme", help="the Markdown file whose block to rewrite "
                        "(default: the workspace's docs/performance.md under "
                        "`tools/bazel run`)")
    parser.add_argument("--no-readme", "--no_readme", action="store_true")
    parser.add_argument("--image-pipeline", "--image_pipeline", required=True)
    parser.add_argument("--make-images", "--make_images", required=True)
    parser.add_argument("--dataloader-peer", "--dataloader_peer", required=True)
    parser.add_argument("--round-trip", "--round_trip", required=True)
    parser.add_argument("--feed-fetch-plan", "--feed_fetch_plan", required=True)
    parser.add_argument("--chain-plan", "--chain_plan", required=True)
    args = parser.parse_args()
    warn_old_spellings(sys.argv[1:])
    if args.quick:
        args.samples, args.images, args.epochs = 1, 64, 2
        args.no_readme = True
        args.round_trips, args.pieces = 500, 500
    if args.samples < 1 or args.epochs < 2:
        sys.exit("python_peer: --samples: at least 1; --epochs: at least 2")

    directory, scratch = args.dir, None
    if directory is None:
        scratch = directory = tempfile.mkdtemp(prefix="python_peer_photos.")
        run([args.make_images, f"--out={directory}", "--kind=photo",
             f"--count={args.images}", "--width=500", "--height=375"])
    peers = [
        (PYTHON, lambda: images_python(args, directory)),
        (CPP, lambda: images_cpp(args, directory)),
        ("DataLoader, 2 workers, PIL",
         lambda: images_dataloader(args, directory, "pil")),
        ("DataLoader, 2 workers, torchvision.io",
         lambda: images_dataloader(args, directory, "torchvision")),
    ]
    runs = {name: [] for name, _ in peers}
    pair_ratios = []  # Python / C++, the two run back to back
    trips = {"Python": [], "C++": []}
    costs, builtins = [], []
    for sample in range(args.samples):
        turn = peers[sample % len(peers):] + peers[:sample % len(peers)]
        # Python and C++ next to each other, so the machine's drift between
        # samples does not enter their ratio.
        pair = [p for p in turn if p[0] in (PYTHON, CPP)]
        others = [p for p in turn if p[0] not in (PYTHON, CPP)]
        for name, call in pair + others:
            runs[name].append(call())
            print(f"  images: {name}: {runs[name][-1]:.0f} images/s",
                  flush=True)
        pair_ratios.append(runs[PYTHON][-1] / runs[CPP][-1])
        trips["C++"].append(round_trip_cpp(args))
        trips["Python"].append(round_trip_python(args))
        cost, builtin = kernel_cost(args)
        costs.append(cost)
        builtins.append(builtin)
        print(f"  round trip: Python {trips['Python'][-1]:.1f} us, C++ "
              f"{trips['C++'][-1]:.1f} us; Python kernel +{cost:.1f} us per "
              f"call (built-in piece {builtin:.1f} us)", flush=True)
    if scratch:
        shutil.rmtree(scratch, ignore_errors=True)

    median = {name: statistics.median(v) for name, v in runs.items()}
    ours = median[peers[0][0]]
    lines = ["| job | who | median | runs | Python / it |",
             "| --- | --- | ---: | --- | ---: |"]
    for name, _ in peers:
        lines.append(
            f"| images (JPEG 500x375 -> 224, batch 32) | {name} | "
            f"{median[name]:.0f} images/s | "
            f"{' / '.join(f'{v:.0f}' for v in runs[name])} | "
            f"{ours / median[name]:.2f}x |")
    trip_py, trip_cc = (statistics.median(trips["Python"]),
                        statistics.median(trips["C++"]))
    lines.append(f"| feed + fetch round trip | Python | {trip_py:.1f} us | "
                 f"{' / '.join(f'{v:.1f}' for v in trips['Python'])} | |")
    lines.append(f"| feed + fetch round trip | C++ | {trip_cc:.1f} us | "
                 f"{' / '.join(f'{v:.1f}' for v in trips['C++'])} | "
                 f"{trip_py / trip_cc:.2f}x the time |")
    lines.append(f"| Python kernel, per call | over the built-in | "
                 f"+{statistics.median(costs):.1f} us | "
                 f"{' / '.join(f'{v:.1f}' for v in costs)} | |")
    ratio = statistics.median(pair_ratios)
    holds = ratio >= 0.95
    lines += ["", "| target | ratio (median of back-to-back pairs) | holds |",
              "| --- | ---: | --- |",
              f"| images/s from Python >= 0.95x C++ | {ratio:.2f}x "
              f"({' / '.join(f'{r:.2f}' for r in pair_ratios)}) | "
              f"{'yes' if holds else '**no**'} |"]
    text = "\n".join(lines)
    print("\n" + text + "\n")
    readme = args.readme
    if readme is None and os.environ.get("BUILD_WORKSPACE_DIRECTORY"):
        readme = os.path.join(os.environ["BUILD_WORKSPACE_DIRECTORY"],
                              "docs", "performance.md")
    if readme and not args.no_readme:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%M UTC")
        rewrite_readme(readme, "python_peer", (
            f"Generated by `tools/bazel run //bench/python_peer` on {stamp}: "
            f"{cpu_model()}, {os.cpu_count()} CPUs, {args.samples} sample(s) "
            f"per figure (medians).\n\n{text}"))
        print(f"python_peer: rewrote the python_peer block of {readme}")
    print(f"python_peer: {'1 of 1' if holds else '0 of 1'} targets hold")


if __name__ == "__main__":
    main()
