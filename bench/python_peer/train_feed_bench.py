"""A job users run: a PyTorch MLP on Fashion-MNIST fed by an actorflow
pipeline, beside the same script fed by torch.utils.data.DataLoader.

    tools/bazel run //bench/python_peer:train_feed_bench -- [--help]

Runs examples/python/train_fashion_mnist.py four ways, in alternation, each
in a process of its own on the same cores: training fed by actorflow,
training fed by DataLoader (2 worker processes), and each input pipeline
alone (--no-train). Prints the median images/s of each over --rounds rounds
and the ratio of the two training figures. Target: the actorflow-fed loop
is the faster.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def example_path():
    # Under `bazel run`, the example sits in the runfiles tree beside this.
    for root in (os.getcwd(), os.path.join(HERE, "..", "..")):
        path = os.path.join(root, "examples", "python",
                            "train_fashion_mnist.py")
        if os.path.exists(path):
            return path
    sys.exit("train_feed_bench: examples/python/train_fashion_mnist.py "
             "not found")


def images_per_s(args, loader, train):
    cmd = [sys.executable, example_path(), f"--loader={loader}",
           f"--epochs={args.epochs}", f"--threads={args.threads}",
           f"--limit={args.limit}"]
    if not train:
        cmd.append("--no-train")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    # One BLAS thread per training process: the pipeline's threads take the
    # other core (two thread pools on two cores only oversubscribe them).
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env, check=False)
    if done.returncode != 0:
        sys.exit(f"train_feed_bench: {' '.join(cmd)} failed:\n{done.stderr}")
    line = json.loads(done.stdout.strip().splitlines()[-1])
    return line["images_per_s"]


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2,
                        help="pipeline threads / DataLoader workers")
    parser.add_argument("--limit", type=int, default=20000,
                        help="training samples per epoch (0: all 60000)")
    args = parser.parse_args()
    ways = [("actorflow", True), ("dataloader", True), ("actorflow", False),
            ("dataloader", False)]
    figures = {way: [] for way in ways}
    for _ in range(args.rounds):
        for way in ways:
            figures[way].append(images_per_s(args, *way))
    medians = {way: statistics.median(v) for way, v in figures.items()}
    for (loader, train), median in medians.items():
        what = "training fed by" if train else "input alone,"
        print(f"{what} {loader}: {median:.0f} images/s")
    ratio = medians[("actorflow", True)] / medians[("dataloader", True)]
    verdict = "holds" if ratio > 1 else "MISSED"
    print(f"{verdict}: training fed by actorflow {ratio:.2f}x the "
          "DataLoader-fed loop")


if __name__ == "__main__":
    main()
