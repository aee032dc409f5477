"""Trains a PyTorch MLP on Fashion-MNIST read by an actorflow pipeline.

    tools/bazel run //examples/python:train_fashion_mnist -- --epochs=1

The pipeline reads the IDX files (Debian's dataset-fashion-mnist), shuffles,
scales pixels to [0, 1] as float32 CHW, and batches on its own threads;
GenericIterator hands each batch to the training loop as torch tensors
without a copy. Prints per epoch the loss, the test accuracy and the
images/s the loop consumed, then one JSON line.
"""

import argparse
import json
import os
import sys
import time

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
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    model = torch.nn.Sequential(torch.nn.Flatten(),
                                torch.nn.Linear(784, args.hidden),
                                torch.nn.ReLU(),
                                torch.nn.Linear(args.hidden, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    train = GenericIterator(
        mnist_pipeline("train", args.batch, args.threads, args.seed,
                       shuffle_window=4096, limit=args.limit),
        ["images", "labels"])
    test = GenericIterator(
        mnist_pipeline("t10k", 1000, args.threads, args.seed,
                       shuffle_window=0, limit=0),
        ["images", "labels"])

    result = {}
    for epoch in range(args.epochs):
        model.train()
        seen, loss_sum, start = 0, 0.0, time.perf_counter()
        for step in train:
            images, labels = step[0]["images"], step[0]["labels"].long()
            loss = torch.nn.functional.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            seen += labels.shape[0]
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
        result = {"epoch": epoch, "loss": loss_sum / max(seen, 1),
                  "accuracy": correct / max(total, 1),
                  "images_per_s": seen / seconds}
        print(f"epoch {epoch}: loss {result['loss']:.4f}, test accuracy "
              f"{100 * result['accuracy']:.2f} %, {result['images_per_s']:.0f} "
              "images/s")
    print(json.dumps({"status": "ok", **result}))


if __name__ == "__main__":
    main()
