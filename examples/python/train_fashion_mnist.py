"""Trains a PyTorch MLP on Fashion-MNIST read by an actorflow pipeline.

    tools/bazel run //examples/python:train_fashion_mnist -- --epochs=1

The pipeline reads the IDX files (Debian's dataset-fashion-mnist), shuffles,
scales pixels to [0, 1] as float32 CHW, and batches on its own threads;
GenericIterator hands each batch to the training loop as torch tensors
without a copy. Prints per epoch the loss, the test accuracy and the
images/s the loop consumed, then one JSON line.

--loader=dataloader feeds the same loop from torch.utils.data.DataLoader
instead (a Dataset over the same files, --threads worker processes, the
same scaling), the way a PyTorch user writes it; --no-train only reads the
batches, to time the input pipeline alone.
"""

import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
import torch

from actorflow import fn
from actorflow.pipeline import Pipeline
from actorflow.plugin.pytorch import GenericIterator

DATA = os.environ.get("ACTORFLOW_FASHION_MNIST",
                      "/usr/share/datasets/fashion-mnist")


def mnist_pipeline(split, batch_size, threads, seed, shuffle_window, limit):
    images = os.path.join(DATA, f"{split}-images-idx3-ubyte.gz")
    labels = os.path.join(DATA, f"{split}-labels-idx1-ubyte.gz")
    for path in (images, labels):
        if not os.path.exists(path):
            sys.exit(f"train_fashion_mnist: {path} is missing: install "
                     "dataset-fashion-mnist or set ACTORFLOW_FASHION_MNIST")
    pipe = Pipeline(batch_size=batch_size, num_threads=threads, seed=seed)
    with pipe:
        image, label = fn.readers.idx(images=images, labels=labels,
                                      shuffle_window=shuffle_window,
                                      limit=limit)
        pixels = fn.crop_mirror_normalize(image, mean=[0.0], std=[255.0])
        pipe.set_outputs(pixels, label)
    return pipe


def read_idx(path):
    """An IDX file (gzip or not) as a numpy array."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
             for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(
        shape)


class IdxDataset(torch.utils.data.Dataset):
    """Fashion-MNIST as a PyTorch user reads it: one sample at a time,
    pixels scaled to [0, 1] as float32 CHW."""

    def __init__(self, split, limit):
        self.images = read_idx(os.path.join(DATA,
                                            f"{split}-images-idx3-ubyte.gz"))
        self.labels = read_idx(os.path.join(DATA,
                                            f"{split}-labels-idx1-ubyte.gz"))
        if limit:
            self.images, self.labels = self.images[:limit], self.labels[:limit]

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        image = torch.from_numpy(self.images[i].astype(np.float32) / 255.0)
        return image.unsqueeze(0), int(self.labels[i])


class LoaderBatches:
    """A DataLoader's batches in GenericIterator's form."""

    def __init__(self, loader):
        self.loader = loader

    def __iter__(self):
        for images, labels in self.loader:
            yield [{"images": images, "labels": labels}]

    def reset(self):
        pass


def batches(split, batch, args, shuffle_window, limit):
    if args.loader == "dataloader":
        return LoaderBatches(torch.utils.data.DataLoader(
            IdxDataset(split, limit), batch_size=batch,
            shuffle=shuffle_window > 0, num_workers=args.threads,
            persistent_workers=args.threads > 0))
    return GenericIterator(
        mnist_pipeline(split, batch, args.threads, args.seed,
                       shuffle_window=shuffle_window, limit=limit),
        ["images", "labels"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2,
                        help="the pipeline's worker threads")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=0,
                        help="train on the first N samples (0: all 60000)")
    parser.add_argument("--loader", choices=["actorflow", "dataloader"],
                        default="actorflow",
                        help="what feeds the loop: the actorflow pipeline, "
                        "or torch.utils.data.DataLoader with --threads "
                        "workers")
    parser.add_argument("--no-train", "--no_train", action="store_true",
                        help="only read the batches (the input pipeline "
                        "alone)")
    args = parser.parse_args()
    if "--no_train" in sys.argv[1:]:
        print("warning: --no_train is spelled --no-train; the old spelling "
              "will go", file=sys.stderr)

    torch.manual_seed(args.seed)
    model = torch.nn.Sequential(torch.nn.Flatten(),
                                torch.nn.Linear(784, args.hidden),
                                torch.nn.ReLU(),
                                torch.nn.Linear(args.hidden, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    train = batches("train", args.batch, args, shuffle_window=4096,
                    limit=args.limit)
    test = batches("t10k", 1000, args, shuffle_window=0, limit=0)

    result = {}
    for epoch in range(args.epochs):
        model.train()
        seen, loss_sum, start = 0, 0.0, time.perf_counter()
        for step in train:
            images, labels = step[0]["images"], step[0]["labels"].long()
            seen += labels.shape[0]
            if args.no_train:
                continue
            loss = torch.nn.functional.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss_sum += loss.item() * labels.shape[0]
        seconds = time.perf_counter() - start
        train.reset()
        model.eval()
        correct = total = 0
        with torch.no_grad():
            for step in test:
                labels = step[0]["labels"].long()
                correct += (model(step[0]["images"]).argmax(1) == labels).sum().item()
                total += labels.shape[0]
        test.reset()
        result = {"epoch": epoch, "loader": args.loader,
                  "loss": loss_sum / max(seen, 1),
                  "accuracy": correct / max(total, 1),
                  "images_per_s": seen / seconds}
        print(f"epoch {epoch}: loss {result['loss']:.4f}, test accuracy "
              f"{100 * result['accuracy']:.2f} %, {result['images_per_s']:.0f} "
              "images/s")
    print(json.dumps({"status": "ok", **result}))


if __name__ == "__main__":
    main()
