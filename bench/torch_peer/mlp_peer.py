"""The MLP job of examples/mnist_mlp in PyTorch eager mode: Fashion-MNIST,
inputs normalized as actorflow's plan does ((pixel - 72.94) / 90.02),
784-H...-10 with ReLU, softmax cross-entropy (mean over the batch), SGD with
momentum 0.9, learning rate 0.02 decayed by 0.2 after each epoch, a new
shuffle each epoch, the test set evaluated after each. Its best setup:
the whole set held normalized in one tensor, batches gathered by index (no
DataLoader), OpenBLAS (Debian's libopenblas0-pthread) for the products.

  /usr/bin/python3 mlp_peer.py [--threads=1] [--hidden=256] [--batch=64]
      [--epochs=2] [--data-dir=/usr/share/datasets/fashion-mnist]

--threads sets torch.set_num_threads; OPENBLAS_NUM_THREADS (the caller's
environment) sets the products' own threads. Prints one JSON line per
epoch: {"epoch":E,"samples_per_s":R,"train_loss":L,"test_accuracy":A}.
"""
import argparse
import gzip
import json
import os
import time

import numpy as np
import torch

MEAN, STD = 72.94, 90.02


def read_idx(path):
    with gzip.open(path) as f:
        data = f.read()
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
            for i in range(rank)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * rank).reshape(dims)


def load(data_dir, name):
    images = read_idx(os.path.join(data_dir, f"{name}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, f"{name}-labels-idx1-ubyte.gz"))
    x = (images.reshape(len(images), -1).astype(np.float32) - MEAN) / STD
    return torch.from_numpy(x), torch.from_numpy(labels.astype(np.int64))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--hidden", default="256")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--train-limit", type=int, default=0)
    parser.add_argument("--data-dir", default=os.environ.get(
        "ACTORFLOW_FASHION_MNIST", "/usr/share/datasets/fashion-mnist"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    x, y = load(args.data_dir, "train")
    if args.train_limit > 0:
        x, y = x[:args.train_limit], y[:args.train_limit]
    test_x, test_y = load(args.data_dir, "t10k")
    layers, width = [], x.shape[1]
    for units in (int(h) for h in args.hidden.split(",")):
        layers += [torch.nn.Linear(width, units), torch.nn.ReLU()]
        width = units
    model = torch.nn.Sequential(*layers, torch.nn.Linear(width, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    schedule = torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.2)
    loss_fn = torch.nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        order = torch.randperm(len(x))
        total, start = 0.0, time.perf_counter()
        for first in range(0, len(x), args.batch):
            rows = order[first:first + args.batch]
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(x[rows]), y[rows])
            loss.backward()
            optimizer.step()
            total += loss.item() * len(rows)
        seconds = time.perf_counter() - start
        schedule.step()
        with torch.no_grad():
            correct = sum(
                (model(test_x[i:i + 1000]).argmax(1) == test_y[i:i + 1000])
                .sum().item() for i in range(0, len(test_x), 1000))
        print(json.dumps({"epoch": epoch + 1,
                          "samples_per_s": len(x) / seconds,
                          "train_loss": total / len(x),
                          "test_accuracy": correct / len(test_x)}),
              flush=True)


if __name__ == "__main__":
    main()
