"""DALI's ResNet-50 input pipelines on actorflow.dali beside torchvision's
ImageNet recipe in DataLoader, on the same cores in the same run.

  tools/bazel run //bench/dali_peer -- [--images=N] [--epochs=E]
      [--samples=S] [--threads=2] [--batch=32] [--dir=DIR] [--quick]

train: DALI's create_dali_pipeline(dali_cpu=True, is_training=True) as
DALI's example writes it (image_random_crop, resize to 224, coin-flip
mirror, crop_mirror_normalize), through DALIClassificationIterator into
torch; beside DataLoader (--threads workers) over torchvision's
RandomResizedCrop(224), RandomHorizontalFlip, ToTensor, Normalize with PIL
decoding. val: resize the shorter side to 256, centre crop 224, normalize;
beside Resize(256), CenterCrop(224), ToTensor, Normalize. Photo-sized
JPEGs (500 x 375, with texture, 10 class folders) made by
//examples/pipeline:make_images unless --dir. Each side runs in its own
process, alternated --samples times; a sample is the median images/s of
its epochs after the first. Prints the median of the samples per side and
the ratio actorflow / DataLoader (target: at least 3 for both recipes),
the first epoch's images/s apart (start-up, and actorflow reading where
each JPEG's MCUs begin for the later epochs' windows),
and per side the CPU time and minor page faults per image of its whole
process tree (DataLoader's workers included), from /proc.
--doc=FILE rewrites the block between "<!-- dali_peer:begin -->" and
"<!-- dali_peer:end -->" there (docs/performance.md) with the table.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import doc_block
import sanitizers

sanitizers.preload_if_asked()

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def actorflow_side(args):
    from actorflow.dali import fn, pipeline_def, types
    from actorflow.dali.plugin.pytorch import DALIClassificationIterator
    from actorflow.dali.plugin.pytorch import LastBatchPolicy

    @pipeline_def
    def create_dali_pipeline(data_dir, crop, size, shard_id, num_shards,
                             dali_cpu=False, is_training=True):
        images, labels = fn.readers.file(
            file_root=data_dir, shard_id=shard_id, num_shards=num_shards,
            random_shuffle=is_training, pad_last_batch=True, name="Reader")
        dali_device = "cpu" if dali_cpu else "gpu"
        decoder_device = "cpu" if dali_cpu else "mixed"
        if is_training:
            images = fn.decoders.image_random_crop(
                images, device=decoder_device, output_type=types.RGB,
                random_aspect_ratio=[0.8, 1.25], random_area=[0.1, 1.0],
                num_attempts=100)
            images = fn.resize(images, device=dali_device, resize_x=crop,
                               resize_y=crop,
                               interp_type=types.INTERP_TRIANGULAR)
            mirror = fn.random.coin_flip(probability=0.5)
        else:
            images = fn.decoders.image(images, device=decoder_device,
                                       output_type=types.RGB)
            images = fn.resize(images, device=dali_device, size=size,
                               mode="not_smaller",
                               interp_type=types.INTERP_TRIANGULAR)
            mirror = False
        images = fn.crop_mirror_normalize(
            images.gpu() if not dali_cpu else images, dtype=types.FLOAT,
            output_layout="CHW", crop=(crop, crop),
            mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
            std=[0.229 * 255, 0.224 * 255, 0.225 * 255], mirror=mirror)
        labels = labels.gpu() if not dali_cpu else labels
        return images, labels

    pipe = create_dali_pipeline(
        batch_size=args.batch, num_threads=args.threads, device_id=0,
        seed=12, data_dir=args.dir, crop=224, size=256, dali_cpu=True,
        shard_id=0, num_shards=1, is_training=args.recipe == "train")
    pipe.build()
    loader = DALIClassificationIterator(
        pipe, reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL,
        auto_reset=True)
    for epoch in range(args.epochs):
        start, images, used = time.perf_counter(), 0, tree_usage()
        for data in loader:
            images += data[0]["data"].shape[0]
            data[0]["label"].squeeze(-1).long()
        report(epoch, images, time.perf_counter() - start, used)


def dataloader_side(args):
    import torch
    from PIL import Image
    from torchvision import transforms

    if args.recipe == "train":
        steps = [transforms.RandomResizedCrop(224),
                 transforms.RandomHorizontalFlip()]
    else:
        steps = [transforms.Resize(256), transforms.CenterCrop(224)]
    transform = transforms.Compose(
        steps + [transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    classes = sorted(d for d in os.listdir(args.dir)
                     if os.path.isdir(os.path.join(args.dir, d)))
    files = [(os.path.join(args.dir, c, f), k)
             for k, c in enumerate(classes)
             for f in sorted(os.listdir(os.path.join(args.dir, c)))]

    class Images(torch.utils.data.Dataset):
        def __len__(self):
            return len(files)

        def __getitem__(self, i):
            path, label = files[i]
            with open(path, "rb") as f:
                return transform(Image.open(f).convert("RGB")), label

    torch.manual_seed(0)
    loader = torch.utils.data.DataLoader(
        Images(), batch_size=args.batch, shuffle=args.recipe == "train",
        num_workers=args.threads, persistent_workers=True)
    for epoch in range(args.epochs):
        start, images, used = time.perf_counter(), 0, tree_usage()
        for batch, labels in loader:
            images += batch.shape[0]
        report(epoch, images, time.perf_counter() - start, used)


def tree_usage():
    """(CPU seconds, minor page faults) of this process and its children
    (DataLoader's workers) so far, from /proc."""
    me = str(os.getpid())
    tick = os.sysconf("SC_CLK_TCK")
    cpu = faults = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                # Fields after the command's closing parenthesis: state is
                # the first, ppid the second, minflt the eighth, utime and
                # stime the twelfth and thirteenth.
                rest = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # a process that ended meanwhile
        if pid == me or rest[1] == me:
            cpu += (int(rest[11]) + int(rest[12])) / tick
            faults += int(rest[7])
    return cpu, faults


def report(epoch, images, seconds, used):
    cpu, faults = tree_usage()
    print(json.dumps({"epoch": epoch + 1, "images": images,
                      "images_per_s": images / seconds,
                      "cpu_ms_per_image": (cpu - used[0]) * 1e3 / images,
                      "faults_per_image": (faults - used[1]) / images}),
          flush=True)


def child(args, side, recipe):
    env = doc_block.child_env(with_sanitizer=side != "dataloader",
                              keep_freed_memory=side == "dataloader")
    cmd = [sys.executable, os.path.abspath(__file__), f"--side={side}",
           f"--recipe={recipe}", f"--dir={args.dir}",
           f"--epochs={args.epochs}", f"--threads={args.threads}",
           f"--batch={args.batch}"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"dali_peer: {side} {recipe} failed ({done.returncode}):\n"
                 f"{done.stdout[-2000:]}{done.stderr[-3000:]}")
    epochs = [json.loads(line)
              for line in done.stdout.splitlines() if line.startswith("{")]
    if len(epochs) < 2:
        sys.exit(f"dali_peer: {side} {recipe}: fewer than 2 epochs:\n"
                 f"{done.stdout}")
    # The first epoch pays for start-up (imports, workers, caches, and
    # reading where each JPEG's MCUs begin): reported apart.
    got = {key: statistics.median(e[key] for e in epochs[1:])
           for key in ("images_per_s", "cpu_ms_per_image",
                       "faults_per_image")}
    got["first_images_per_s"] = epochs[0]["images_per_s"]
    return got


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=640)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2,
                        help="pipeline threads / DataLoader workers")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--dir", help="JPEGs under DIR/<class>/ (default: "
                        "made with --make-images)")
    parser.add_argument("--quick", action="store_true",
                        help="96 images, 2 epochs, 1 sample: that it runs")
    parser.add_argument("--make-images", "--make_images")
    parser.add_argument("--doc", help="the Markdown file whose block to "
                        "rewrite with the figures")
    parser.add_argument("--side", choices=["actorflow", "dataloader"],
                        help=argparse.SUPPRESS)
    parser.add_argument("--recipe", choices=["train", "val"],
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        (actorflow_side if args.side == "actorflow" else dataloader_side)(args)
        return
    if args.quick:
        args.images, args.epochs, args.samples = 96, 2, 1
    made = None
    if args.dir is None:
        if not args.make_images:
            sys.exit("dali_peer: give --dir or --make-images")
        made = tempfile.mkdtemp(prefix="dali_peer_",
                                dir=os.environ.get("TEST_TMPDIR"))
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)  # a C++ binary has its own sanitizer
        done = subprocess.run(
            [args.make_images, f"--out={made}", "--kind=photo",
             f"--count={args.images}", "--classes=10"],
            capture_output=True, text=True, env=env)
        if done.returncode != 0:
            sys.exit(f"dali_peer: make_images failed ({done.returncode}):\n"
                     f"{done.stderr[-2000:]}")
        args.dir = made
    print(f"dali_peer: {args.images} JPEGs of 500 x 375, batch {args.batch}, "
          f"{args.threads} threads / workers, {args.epochs} epochs, "
          f"{args.samples} samples, {os.cpu_count()} CPUs", flush=True)
    ratios, rows = {}, []
    names = {"train": "training (image_random_crop, resize 224, flip)",
             "val": "validation (resize 256, centre crop 224)"}
    for recipe in ("train", "val"):
        samples = {"actorflow": [], "dataloader": []}
        for _ in range(args.samples):
            for side in samples:
                samples[side].append(child(args, side, recipe))
        rates = {side: [s["images_per_s"] for s in got]
                 for side, got in samples.items()}
        ours = statistics.median(rates["actorflow"])
        peer = statistics.median(rates["dataloader"])
        ratios[recipe] = ours / peer
        print(f"{recipe:5s} actorflow.dali  {ours:8.1f} images/s   "
              f"DataLoader {peer:8.1f} images/s   ratio {ours / peer:5.2f}  "
              f"(target >= 3)", flush=True)
        firsts = {side: statistics.median(s["first_images_per_s"]
                                          for s in got)
                  for side, got in samples.items()}
        print(f"      first epoch: actorflow.dali "
              f"{firsts['actorflow']:8.1f} images/s   DataLoader "
              f"{firsts['dataloader']:8.1f} images/s   ratio "
              f"{firsts['actorflow'] / firsts['dataloader']:5.2f}",
              flush=True)
        for side, who in (("actorflow", "actorflow.dali, "
                           "DALIClassificationIterator"),
                          ("dataloader", f"DataLoader, {args.threads} "
                           "workers, torchvision + PIL")):
            runs = " / ".join(f"{r:.0f}" for r in rates[side])
            median = statistics.median(rates[side])
            cpu = statistics.median(s["cpu_ms_per_image"]
                                    for s in samples[side])
            faults = statistics.median(s["faults_per_image"]
                                       for s in samples[side])
            print(f"      {side:10s} CPU {cpu:5.2f} ms/image, "
                  f"{faults:6.0f} page faults/image", flush=True)
            rows.append(f"| {names[recipe]} | {who} | {median:.0f} images/s "
                        f"| {runs} | {cpu:.2f} | {faults:.0f} "
                        f"| {firsts[side]:.0f} images/s "
                        f"| {ours / median:.2f}x |")
    if made:
        import shutil
        shutil.rmtree(made)
    held = all(r >= 3 for r in ratios.values())
    print(f"dali_peer: target {'held' if held else 'missed'}: " +
          ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))
    if args.doc:
        write_doc(args, rows, ratios)


def write_doc(args, rows, ratios):
    cpu = doc_block.cpu_name()
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [
        f"Generated by `tools/bazel run //bench/dali_peer -- --doc=...` on "
        f"{stamp}: {cpu}, {os.cpu_count()} CPUs, {args.images} JPEGs of "
        f"500 x 375, batch {args.batch}, {args.samples} sample(s) per "
        "figure (medians).",
        "",
        "| pipeline | who | median | runs | CPU ms / image "
        "| page faults / image | first epoch | actorflow.dali / it |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |",
        *rows,
        "",
        "| target | ratio | holds |",
        "| --- | ---: | --- |",
        *(f"| {k}: DataLoader >= 3x | {v:.2f}x | "
          f"{'yes' if v >= 3 else '**no**'} |" for k, v in ratios.items()),
    ]
    doc_block.rewrite_block(args.doc, "dali_peer", lines)


if __name__ == "__main__":
    main()
