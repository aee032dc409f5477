"""The DALI tutorial's external-source flow on actorflow: an iterator reads
JPEG files in batches, a Pipeline subclass feeds them (and their labels)
in iter_setup, decodes, resizes, crop-mirror-normalizes, and a PyTorch
iterator hands the batches out.

    tools/bazel run //examples/pipeline:make_images -- --out=/tmp/images --kind=photo --count=256
    tools/bazel run //examples/python:external_source -- --dir=/tmp/images
"""

import argparse
import json
import os
import sys
import time

import numpy

from actorflow import fn
from actorflow.pipeline import Pipeline
from actorflow.plugin.pytorch import GenericIterator


class ExternalInputIterator:
    """Batches of (JPEG bytes, label) from the .jpg files under a
    directory, labelled by their first-level subdirectory."""

    def __init__(self, directory, batch_size):
        classes = sorted(d for d in os.listdir(directory)
                         if os.path.isdir(os.path.join(directory, d)))
        self.files = []
        for label, name in enumerate(classes):
            folder = os.path.join(directory, name)
            self.files += [(os.path.join(folder, f), label)
                           for f in sorted(os.listdir(folder))
                           if f.lower().endswith((".jpg", ".jpeg"))]
        if not self.files:
            sys.exit(f"external_source: no .jpg files under {directory}/*/")
        self.batch_size = batch_size

    def __iter__(self):
        self.i = 0
        return self

    def __next__(self):
        if self.i >= len(self.files):
            raise StopIteration
        chunk = self.files[self.i:self.i + self.batch_size]
        self.i += len(chunk)
        jpegs = [numpy.fromfile(path, numpy.uint8) for path, _ in chunk]
        labels = numpy.array([label for _, label in chunk], numpy.int32)
        return jpegs, labels

    def __len__(self):
        return len(self.files)


class ExternalSourcePipeline(Pipeline):
    def __init__(self, source, batch_size, num_threads, seed):
        super().__init__(batch_size=batch_size, num_threads=num_threads,
                         seed=seed)
        self.source = source
        self.iterator = iter(source)

    def define_graph(self):
        self.jpegs = fn.external_source(name="jpegs")
        self.labels = fn.external_source(name="labels", dtype=numpy.int32)
        images = fn.decoders.image(self.jpegs)
        images = fn.resize(images, shorter=256)
        images = fn.crop_mirror_normalize(
            images, crop=[224, 224], crop_pos="random", mirror=0.5,
            mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375])
        return images, self.labels

    def iter_setup(self):
        jpegs, labels = next(self.iterator)  # StopIteration ends the epoch
        self.feed_input(self.jpegs, jpegs)
        self.feed_input(self.labels, labels)

    def reset(self):
        super().reset()
        self.iterator = iter(self.source)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", required=True,
                        help="JPEGs under DIR/<class>/ (make_images makes some)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not os.path.isdir(args.dir):
        sys.exit(f"external_source: --dir {args.dir} is not a directory")

    source = ExternalInputIterator(args.dir, args.batch)
    pipe = ExternalSourcePipeline(source, args.batch, args.threads, args.seed)
    iterator = GenericIterator(pipe, ["images", "labels"], size=len(source))
    for epoch in range(args.epochs):
        images = 0
        start = time.perf_counter()
        for step in iterator:
            batch = step[0]
            if images == 0:
                print(f"first batch: images {tuple(batch['images'].shape)} "
                      f"{batch['images'].dtype}, labels "
                      f"{batch['labels'][:8].tolist()}")
            images += batch["images"].shape[0]
        rate = images / (time.perf_counter() - start)
        print(f"epoch {epoch}: {images} images, {rate:.0f} images/s")
        iterator.reset()
    print(json.dumps({"status": "ok", "images": images,
                      "images_per_s": round(rate, 1)}))


if __name__ == "__main__":
    main()
