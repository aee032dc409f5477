"""Test images: textured JPEGs of varied sizes in class folders."""

import os

import numpy
from PIL import Image


def make_images(root, count, seed):
    """Textured JPEGs of varied sizes under root/class<k>/."""
    rng = numpy.random.default_rng(seed)
    paths = []
    for i in range(count):
        h, w = int(rng.integers(90, 140)), int(rng.integers(100, 170))
        y, x = numpy.mgrid[0:h, 0:w]
        base = numpy.stack([(x * 3 + i * 7) % 256, (y * 5) % 256,
                            ((x + y) * 2) % 256], axis=-1)
        noise = rng.integers(0, 60, size=(h, w, 3))
        pixels = numpy.clip(base + noise, 0, 255).astype(numpy.uint8)
        folder = os.path.join(root, f"class{i % 3}")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"{i:03d}.jpg")
        Image.fromarray(pixels).save(path, quality=90)
        paths.append(path)
    return sorted(paths)
