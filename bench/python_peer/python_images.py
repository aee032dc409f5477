"""python_peer's image job: the image_pipeline example's pipeline (file
reader, decode, shorter side 256, random crop 224, flip, normalize to
float32 CHW, batch 32) declared with actorflow.fn and read through
GenericIterator into torch tensors. Prints images/s per epoch and one JSON
line with the last epoch's.

    python_images.py --dir=DIR [--threads=2] [--batch=32] [--epochs=2]
"""

import argparse
import json
import time

from actorflow import fn
from actorflow.pipeline import Pipeline
from actorflow.plugin.pytorch import GenericIterator


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    pipe = Pipeline(batch_size=args.batch, num_threads=args.threads)
    with pipe:
        files, labels = fn.readers.file(dir=args.dir)
        images = fn.decoders.image(files, color="rgb")
        images = fn.resize(images, shorter=256)
        images = fn.crop(images, size=[224, 224], random=True)
        images = fn.flip(images, horizontal=0.5)
        images = fn.crop_mirror_normalize(images, mean=[123.675, 116.28, 103.53],
                                          std=[58.395, 57.12, 57.375])
        pipe.set_outputs(images, labels)
    iterator = GenericIterator(pipe, ["images", "labels"])
    rate = 0.0
    for epoch in range(args.epochs):
        count = 0
        start = time.perf_counter()
        for step in iterator:
            count += step[0]["images"].shape[0]
        seconds = time.perf_counter() - start
        iterator.reset()
        rate = count / seconds
        print(f"epoch {epoch}: {count} images in {seconds:.3f} s, "
              f"{rate:.1f} images/s", flush=True)
    print(json.dumps({"status": "ok", "images_per_s": rate}))


if __name__ == "__main__":
    main()
