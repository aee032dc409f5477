"""The image pipeline's job in PyTorch: a DataLoader over a directory of
JPEGs, decode, shorter side to 256, random 224 crop, horizontal flip half
the time, normalize with the ImageNet mean and std to float32 CHW, batches
of 32, each given its best setup (workers each on one thread, persistent
across epochs, nothing pinned: there is no GPU to feed).

  /usr/bin/python3 dataloader_peer.py --dir=DIR --decoder=pil|torchvision
      [--workers=2] [--batch=32] [--epochs=2]

Prints one JSON line per epoch: {"epoch":E,"images":N,"images_per_s":R}.
"""
import argparse
import json
import os
import sys
import time

import torch
import torchvision
from torchvision import transforms

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def list_images(root):
    classes = sorted(d for d in os.listdir(root)
                     if os.path.isdir(os.path.join(root, d)))
    files = []
    for label, name in enumerate(classes):
        folder = os.path.join(root, name)
        for f in sorted(os.listdir(folder)):
            if f.lower().endswith((".jpg", ".jpeg")):
                files.append((os.path.join(folder, f), label))
    return files


class PilImages(torch.utils.data.Dataset):
    """torchvision's usual recipe: PIL decode, then PIL transforms."""

    def __init__(self, files):
        from PIL import Image
        self.image = Image
        self.files = files
        self.transform = transforms.Compose([
            transforms.Resize(256),
            transforms.RandomCrop(224),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            transforms.Normalize(MEAN, STD),
        ])

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        path, label = self.files[i]
        with open(path, "rb") as f:
            image = self.image.open(f).convert("RGB")
            return self.transform(image), label


class TorchvisionImages(torch.utils.data.Dataset):
    """torchvision.io's decoder (libjpeg-turbo) and tensor transforms."""

    def __init__(self, files):
        self.files = files
        self.transform = transforms.Compose([
            transforms.Resize(256, antialias=False),
            transforms.RandomCrop(224),
            transforms.RandomHorizontalFlip(),
            transforms.ConvertImageDtype(torch.float32),
            transforms.Normalize(MEAN, STD),
        ])

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        path, label = self.files[i]
        data = torchvision.io.read_file(path)
        image = torchvision.io.decode_jpeg(data, mode=torchvision.io.ImageReadMode.RGB)
        return self.transform(image), label


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--decoder", choices=["pil", "torchvision"],
                        required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    files = list_images(args.dir)
    if not files:
        sys.exit(f"no .jpg files under {args.dir}/<class>/")
    torch.manual_seed(0)
    data = (PilImages if args.decoder == "pil" else TorchvisionImages)(files)
    loader = torch.utils.data.DataLoader(
        data, batch_size=args.batch, shuffle=False,
        num_workers=args.workers, persistent_workers=args.workers > 0)
    for epoch in range(args.epochs):
        start = time.perf_counter()
        images = 0
        for batch, labels in loader:
            images += batch.shape[0]
        seconds = time.perf_counter() - start
        print(json.dumps({"epoch": epoch + 1, "images": images,
                          "images_per_s": images / seconds}), flush=True)


if __name__ == "__main__":
    main()
