"""actorflow's jobs beside the tools users would pick instead, on the same
cores in the same run: training the Fashion-MNIST MLP beside PyTorch, and
the image pipeline beside torch.utils.data.DataLoader.

  tools/bazel run //bench/torch_peer -- [--samples=3] [--quick]
      [--only=mlp,images] [--dir=DIR] [--images=1000] [--no-readme]

Jobs, each run --samples times with the peers in turn (medians):
  mlp small   examples/mnist_mlp, 784-256-10, batch 64, two epochs: training
              samples/s of epoch 2 (the steady state), actorflow on 2
              streams; PyTorch (mlp_peer.py) on 1 thread, on 2 threads
              (torch's), and on 1 torch thread with 2 OpenBLAS threads.
  mlp large   the same at 784-1024-1024-10, batch 256 (compute-bound).
  images      examples/pipeline/image_pipeline (2 threads) beside a
              DataLoader with 2 workers decoding with PIL, and with
              torchvision.io (dataloader_peer.py): decode, shorter side 256,
              random crop 224, flip, normalize, batches of 32; images/s of
              epoch 2, over --images photo-sized JPEGs (500 x 375, made by
              make_images --kind=photo unless --dir is given).
Targets on 2 cores: training at least 1.5x PyTorch's best at both sizes
(every setup above; a second row states the ratio to PyTorch on 1 and 2
torch threads with OPENBLAS_NUM_THREADS=1 alone, the setup without
oversubscription that one might call "PyTorch at 2 threads"); images/s at
least 1.5x the DataLoader with torchvision.io and 2x with PIL.

PyTorch runs on Debian's /usr/bin/python3 with OpenBLAS picking its own
kernels for the CPU (OPENBLAS_CORETYPE unset: AVX-512 ones where the CPU
has them; --openblas-coretype=keep leaves the caller's setting) and glibc's
malloc keeping freed memory for reuse, as jemalloc or tcmalloc would
(doc_block.keep_freed_memory_in).
Rewrites the block between <!-- torch_peer:begin --> and
<!-- torch_peer:end --> in docs/performance.md (--readme=PATH, --no-readme).
"""
import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

from doc_block import keep_freed_memory_in
from peer_report import cpu_model, rewrite_readme, warn_old_spellings

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"


def run(cmd, env=None):
    """Runs cmd; returns its stdout, or exits naming the failed command."""
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"torch_peer: {' '.join(cmd)} failed ({done.returncode}):\n"
                 f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.stdout


def json_lines(text):
    return [json.loads(line) for line in text.splitlines()
            if line.startswith("{")]


def peer_env(args, openblas_threads):
    env = keep_freed_memory_in(dict(os.environ))
    env["OPENBLAS_NUM_THREADS"] = str(openblas_threads)
    env["OMP_NUM_THREADS"] = env["OPENBLAS_NUM_THREADS"]
    if args.openblas_coretype == "auto":
        env.pop("OPENBLAS_CORETYPE", None)
    return env


def actorflow_mlp(args, hidden, batch):
    cmd = [args.mnist_mlp, "--epochs=2", f"--hidden={hidden}",
           f"--batch={batch}", "--streams=2"]
    if args.train_limit:
        cmd.append(f"--train-limit={args.train_limit}")
    # "epoch 2: ..., 226400 samples/s (train ...": the steady state.
    out = run(cmd)
    rates = re.findall(r"^epoch 2: .*?([0-9.]+) samples/s", out, re.M)
    if not rates:
        sys.exit(f"torch_peer: no epoch 2 line from mnist_mlp:\n{out}")
    return float(rates[-1])


def torch_mlp(args, hidden, batch, threads, openblas_threads):
    cmd = [PYTHON, os.path.join(HERE, "mlp_peer.py"), f"--threads={threads}",
           f"--hidden={hidden}", f"--batch={batch}", "--epochs=2"]
    if args.train_limit:
        cmd.append(f"--train-limit={args.train_limit}")
    lines = json_lines(run(cmd, peer_env(args, openblas_threads)))
    return lines[-1]["samples_per_s"]


def actorflow_images(args, directory):
    out = run([args.image_pipeline, f"--dir={directory}", "--threads=2",
               "--epochs=2", "--batch=32"])
    rates = re.findall(r"^epoch 1: .*?([0-9.]+) images/s", out, re.M)
    if not rates:
        sys.exit(f"torch_peer: no epoch line from image_pipeline:\n{out}")
    return float(rates[-1])


def torch_images(args, directory, decoder):
    out = run([PYTHON, os.path.join(HERE, "dataloader_peer.py"),
               f"--dir={directory}", f"--decoder={decoder}", "--workers=2",
               "--batch=32", "--epochs=2"], peer_env(args, 1))
    return json_lines(out)[-1]["images_per_s"]


class Job:
    """One job: actorflow and its peers, each a list of samples."""

    def __init__(self, name, unit, target_rows):
        self.name, self.unit = name, unit
        self.runs = {}  # peer -> [samples]
        self.order = []
        self.targets = target_rows  # [(label, [peers], ratio)]

    def add(self, peer, value):
        if peer not in self.runs:
            self.runs[peer] = []
            self.order.append(peer)
        self.runs[peer].append(value)

    def median(self, peer):
        return statistics.median(self.runs[peer])


def measure(args, job, peers):
    """peers: [(name, callable)], run in turn, --samples times, rotating who
    goes first so no peer always runs on a warm or a cold machine."""
    for sample in range(args.samples):
        turn = peers[sample % len(peers):] + peers[:sample % len(peers)]
        for name, call in turn:
            value = call()
            job.add(name, value)
            print(f"  {job.name}: {name}: {value:.0f} {job.unit}", flush=True)


def table(jobs):
    lines = ["| job | who | median | runs | actorflow / it |",
             "| --- | --- | ---: | --- | ---: |"]
    for job in jobs:
        ours = job.median(job.order[0])
        for peer in job.order:
            runs = " / ".join(f"{v:.0f}" for v in job.runs[peer])
            ratio = ours / job.median(peer)
            lines.append(f"| {job.name} | {peer} | {job.median(peer):.0f} "
                         f"{job.unit} | {runs} | {ratio:.2f}x |")
    lines += ["", "| target | ratio | holds |", "| --- | ---: | --- |"]
    verdicts = []
    for job in jobs:
        ours = job.median(job.order[0])
        for label, peers, want in job.targets:
            best = max(job.median(p) for p in peers)
            ratio = ours / best
            holds = "yes" if ratio >= want else "**no**"
            lines.append(f"| {job.name}: {label} >= {want}x | {ratio:.2f}x "
                         f"| {holds} |")
            verdicts.append(ratio >= want)
    return "\n".join(lines), verdicts


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 1 sample, the small MLP on 6400 "
                             "training samples, 64 images; never rewrites "
                             "docs/performance.md")
    parser.add_argument("--only", default="mlp,images")
    parser.add_argument("--dir", help="a directory of JPEGs under <class>/")
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--train-limit", "--train_limit", type=int, default=0)
    parser.add_argument("--openblas-coretype", "--openblas_coretype",
                        choices=["auto", "keep"], default="auto")
    parser.add_argument("--readme")
    parser.add_argument("--no-readme", "--no_readme", action="store_true")
    parser.add_argument("--mnist-mlp", "--mnist_mlp", required=True)
    parser.add_argument("--image-pipeline", "--image_pipeline", required=True)
    parser.add_argument("--make-images", "--make_images", required=True)
    args = parser.parse_args()
    warn_old_spellings(sys.argv[1:])
    if args.quick:
        args.samples, args.train_limit, args.images = 1, 6400, 64
        args.no_readme = True
    if args.samples < 1:
        sys.exit("torch_peer: --samples: at least 1")
    only = set(args.only.split(","))
    if not only <= {"mlp", "images"}:
        sys.exit(f"torch_peer: --only: mlp and/or images, got {args.only}")
    print(f"torch_peer: {cpu_model()}, {os.cpu_count()} CPUs, "
          f"{args.samples} sample(s) per figure", flush=True)

    jobs = []
    if "mlp" in only:
        sizes = [("784-256-10, batch 64", "256", 64),
                 ("784-1024-1024-10, batch 256", "1024,1024", 256)]
        for size, hidden, batch in sizes[:1] if args.quick else sizes:
            job = Job(f"MLP {size}", "samples/s",
                      [("PyTorch's best", ["PyTorch, 1 thread",
                                           "PyTorch, 2 threads",
                                           "PyTorch, 1 thread + 2 BLAS "
                                           "threads"], 1.5),
                       ("PyTorch at 1 and 2 torch threads",
                        ["PyTorch, 1 thread", "PyTorch, 2 threads"], 1.5)])
            measure(args, job, [
                ("actorflow, 2 streams",
                 lambda h=hidden, b=batch: actorflow_mlp(args, h, b)),
                ("PyTorch, 1 thread",
                 lambda h=hidden, b=batch: torch_mlp(args, h, b, 1, 1)),
                ("PyTorch, 2 threads",
                 lambda h=hidden, b=batch: torch_mlp(args, h, b, 2, 1)),
                ("PyTorch, 1 thread + 2 BLAS threads",
                 lambda h=hidden, b=batch: torch_mlp(args, h, b, 1, 2)),
            ])
            jobs.append(job)
    scratch = None
    if "images" in only:
        directory = args.dir
        if directory is None:
            scratch = tempfile.mkdtemp(prefix="torch_peer_photos.")
            directory = scratch
            run([args.make_images, f"--out={directory}", "--kind=photo",
                 f"--count={args.images}", "--width=500", "--height=375"])
        job = Job("images (JPEG 500x375 -> 224, batch 32)", "images/s",
                  [("DataLoader + torchvision.io",
                    ["DataLoader, 2 workers, torchvision.io"], 1.5),
                   ("DataLoader + PIL", ["DataLoader, 2 workers, PIL"], 2.0)])
        measure(args, job, [
            ("actorflow, 2 threads", lambda: actorflow_images(args, directory)),
            ("DataLoader, 2 workers, PIL",
             lambda: torch_images(args, directory, "pil")),
            ("DataLoader, 2 workers, torchvision.io",
             lambda: torch_images(args, directory, "torchvision")),
        ])
        jobs.append(job)
    if scratch:
        shutil.rmtree(scratch, ignore_errors=True)

    text, verdicts = table(jobs)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M UTC")
    section = (f"Generated by `tools/bazel run //bench/torch_peer` on {stamp}: "
               f"{cpu_model()}, {os.cpu_count()} CPUs, {args.samples} "
               f"sample(s) per figure (medians).\n\n{text}")
    print(f"\n{text}\n")
    readme = args.readme
    if readme is None and os.environ.get("BUILD_WORKSPACE_DIRECTORY"):
        readme = os.path.join(os.environ["BUILD_WORKSPACE_DIRECTORY"],
                              "docs", "performance.md")
    if not args.no_readme and readme and only == {"mlp", "images"}:
        rewrite_readme(readme, "torch_peer", section)
        print(f"torch_peer: rewrote the torch_peer block of {readme}")
    print(f"torch_peer: {sum(verdicts)} of {len(verdicts)} targets hold")


if __name__ == "__main__":
    main()
