"""WebDataset tar shards read by actorflow from local files and over HTTP
(nginx on loopback), beside DataLoader over the same tar files read with
Python's tarfile, on the same cores in the same run.

  tools/bazel run //bench/shards_bench -- [--images=N] [--shards=S]
      [--epochs=E] [--samples=K] [--threads=2] [--batch=32] [--quick]
      [--doc=FILE]

Every side runs DALI's training recipe on photo-sized JPEGs (500 x 375,
made by //examples/pipeline:make_images): decode a random crop, resize to
224 x 224, flip at random, normalize, batches of --batch with labels.
actorflow: actorflow.dali's fn.readers.webdataset over the shards' paths,
then over their http:// URLs served by nginx (Debian's nginx-light, one
worker, keep-alive) on 127.0.0.1. DataLoader: --threads workers, each an
IterableDataset reading its share of the shards with tarfile, decoding with
PIL and transforming with torchvision's RandomResizedCrop(224),
RandomHorizontalFlip, ToTensor, Normalize, with glibc's malloc keeping
freed memory (doc_block.child_env). Each side runs in its own
process, alternated --samples times; a sample is the median images/s of its
epochs after the first. Prints the medians and the ratios HTTP / local
(target: at least 0.9) and actorflow local / DataLoader (target: at least
3). --doc=FILE rewrites the block between "<!-- shards_bench:begin -->" and
"<!-- shards_bench:end -->" there (docs/performance.md) with the table.
"""

import argparse
import io
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

import doc_block
import sanitizers

sanitizers.preload_if_asked()

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def shard_paths(args):
    with open(os.path.join(args.dir, "shards.json")) as f:
        names = json.load(f)
    if args.base_url:
        return [f"{args.base_url}/{n}" for n in names]
    return [os.path.join(args.dir, n) for n in names]


def actorflow_side(args):
    from actorflow.dali import fn, pipeline_def, types
    from actorflow.dali.plugin.pytorch import DALIClassificationIterator
    from actorflow.dali.plugin.pytorch import LastBatchPolicy

    @pipeline_def
    def train(paths):
        jpegs, labels = fn.readers.webdataset(
            paths=paths, ext=["jpg", "cls"], dtypes=[types.UINT8, types.INT64],
            random_shuffle=True, initial_fill=256, name="Reader")
        images = fn.decoders.image_random_crop(
            jpegs, output_type=types.RGB, random_aspect_ratio=[0.8, 1.25],
            random_area=[0.1, 1.0], num_attempts=100)
        images = fn.resize(images, resize_x=224, resize_y=224,
                           interp_type=types.INTERP_TRIANGULAR)
        images = fn.crop_mirror_normalize(
            images, dtype=types.FLOAT, output_layout="CHW", crop=(224, 224),
            mean=[m * 255 for m in MEAN], std=[s * 255 for s in STD],
            mirror=fn.random.coin_flip(probability=0.5))
        return images, labels

    pipe = train(batch_size=args.batch, num_threads=args.threads,
                 device_id=0, seed=12, paths=shard_paths(args))
    pipe.build()
    loader = DALIClassificationIterator(
        pipe, reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL,
        auto_reset=True)
    for epoch in range(args.epochs):
        start, images = time.perf_counter(), 0
        for data in loader:
            images += data[0]["data"].shape[0]
            data[0]["label"].squeeze(-1).long()
        report(epoch, images, time.perf_counter() - start)


def dataloader_side(args):
    import torch
    from PIL import Image
    from torchvision import transforms

    transform = transforms.Compose([
        transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(),
        transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    paths = shard_paths(args)

    class Shards(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            mine = paths[info.id::info.num_workers] if info else paths
            for path in mine:
                with tarfile.open(path) as tar:
                    image = None
                    for member in tar:
                        data = tar.extractfile(member).read()
                        if member.name.endswith(".jpg"):
                            image = Image.open(io.BytesIO(data))
                        elif member.name.endswith(".cls") and image:
                            label = int.from_bytes(data, "little")
                            yield transform(image.convert("RGB")), label
                            image = None

    torch.manual_seed(0)
    loader = torch.utils.data.DataLoader(
        Shards(), batch_size=args.batch, num_workers=args.threads,
        persistent_workers=True)
    for epoch in range(args.epochs):
        start, images = time.perf_counter(), 0
        for batch, labels in loader:
            images += batch.shape[0]
        report(epoch, images, time.perf_counter() - start)


def report(epoch, images, seconds):
    print(json.dumps({"epoch": epoch + 1, "images": images,
                      "images_per_s": images / seconds}), flush=True)


def child(args, side, base_url=None):
    env = doc_block.child_env(with_sanitizer=side != "dataloader",
                              keep_freed_memory=side == "dataloader")
    cmd = [sys.executable, os.path.abspath(__file__), f"--side={side}",
           f"--dir={args.dir}", f"--epochs={args.epochs}",
           f"--threads={args.threads}", f"--batch={args.batch}"]
    if base_url:
        cmd.append(f"--base-url={base_url}")
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"shards_bench: {side} failed ({done.returncode}):\n"
                 f"{done.stdout[-2000:]}{done.stderr[-3000:]}")
    rates = [json.loads(line)["images_per_s"]
             for line in done.stdout.splitlines() if line.startswith("{")]
    if len(rates) < 2:
        sys.exit(f"shards_bench: {side}: fewer than 2 epochs:\n{done.stdout}")
    return statistics.median(rates[1:])


def make_shards(args, out):
    """Photo JPEGs from make_images packed into args.shards tar files of
    (NNNNNN.jpg, NNNNNN.cls) samples, the label as int64."""
    images = os.path.join(out, "images")
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)  # a C++ binary has its own sanitizer
    done = subprocess.run(
        [args.make_images, f"--out={images}", "--kind=photo",
         f"--count={args.images}", "--classes=10"],
        capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"shards_bench: make_images failed ({done.returncode}):\n"
                 f"{done.stderr[-2000:]}")
    files = sorted((os.path.join(c, f), k) for k, c in enumerate(
        sorted(os.listdir(images))) for f in os.listdir(
            os.path.join(images, c)))
    names = [f"train-{s:04d}.tar" for s in range(args.shards)]
    tars = [tarfile.open(os.path.join(out, n), "w") for n in names]
    for i, (path, label) in enumerate(files):
        tar = tars[i % args.shards]
        tar.add(os.path.join(images, path), arcname=f"{i:06d}.jpg")
        data = label.to_bytes(8, "little")
        info = tarfile.TarInfo(f"{i:06d}.cls")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    for tar in tars:
        tar.close()
    shutil.rmtree(images)
    for name in names:
        os.chmod(os.path.join(out, name), 0o644)
    os.chmod(out, 0o755)
    with open(os.path.join(out, "shards.json"), "w") as f:
        json.dump(names, f)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(root, work):
    """nginx serving `root` on a loopback port: (process, base URL)."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(nginx):
        sys.exit("shards_bench: nginx is not installed (tools/bazel installs "
                 "nginx-light with the test packages)")
    port = free_port()
    conf = os.path.join(work, "nginx.conf")
    user = "user root;\n" if os.geteuid() == 0 else ""
    with open(conf, "w") as f:
        f.write(f"""{user}daemon off;
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log;
events {{ worker_connections 256; }}
http {{
  access_log off;
  sendfile on;
  keepalive_requests 100000;
  client_body_temp_path {work}/body;
  proxy_temp_path {work}/proxy;
  fastcgi_temp_path {work}/fastcgi;
  uwsgi_temp_path {work}/uwsgi;
  scgi_temp_path {work}/scgi;
  server {{
    listen 127.0.0.1:{port};
    root {root};
  }}
}}
""")
    server = subprocess.Popen([nginx, "-c", conf, "-p", work],
                              stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):  # up to 10 s for it to listen
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return server, url
        except OSError:
            if server.poll() is not None:
                sys.exit("shards_bench: nginx failed: " +
                         server.stderr.read().decode()[-2000:])
            time.sleep(0.05)
    server.kill()
    sys.exit("shards_bench: nginx did not listen within 10 s")


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=1280)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2,
                        help="pipeline threads / DataLoader workers")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--quick", action="store_true",
                        help="96 images, 2 epochs, 1 sample: that it runs")
    parser.add_argument("--make-images", "--make_images")
    parser.add_argument("--doc", help="the Markdown file whose block to "
                        "rewrite with the figures")
    parser.add_argument("--side", choices=["actorflow", "dataloader"],
                        help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        (actorflow_side if args.side == "actorflow" else dataloader_side)(args)
        return
    if args.quick:
        args.images, args.epochs, args.samples = 96, 2, 1
    if not args.make_images:
        sys.exit("shards_bench: give --make-images")
    work = tempfile.mkdtemp(prefix="shards_bench_",
                            dir=os.environ.get("TEST_TMPDIR"))
    os.chmod(work, 0o755)
    args.dir = os.path.join(work, "shards")
    os.makedirs(args.dir)
    make_shards(args, args.dir)
    server, url = start_nginx(args.dir, work)
    try:
        print(f"shards_bench: {args.images} JPEGs of 500 x 375 in "
              f"{args.shards} tar shards, batch {args.batch}, {args.threads} "
              f"threads / workers, {args.epochs} epochs, {args.samples} "
              f"samples, {os.cpu_count()} CPUs", flush=True)
        sides = {"local": ("actorflow", None), "http": ("actorflow", url),
                 "dataloader": ("dataloader", None)}
        rates = {k: [] for k in sides}
        for _ in range(args.samples):
            for name, (side, base) in sides.items():
                rates[name].append(child(args, side, base))
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(work)
    median = {k: statistics.median(v) for k, v in rates.items()}
    ratios = {"http / local": median["http"] / median["local"],
              "local / DataLoader": median["local"] / median["dataloader"]}
    targets = {"http / local": 0.9, "local / DataLoader": 3.0}
    for name, who in (("local", "actorflow, local tar files"),
                      ("http", "actorflow, http:// on loopback (nginx)"),
                      ("dataloader", f"DataLoader, {args.threads} workers, "
                       "tarfile + PIL + torchvision")):
        runs = " / ".join(f"{r:.0f}" for r in rates[name])
        print(f"{who:45s} {median[name]:8.1f} images/s  ({runs})")
    for name, value in ratios.items():
        print(f"{name:20s} {value:5.2f}x (target >= {targets[name]})")
    held = all(ratios[k] >= targets[k] for k in ratios)
    print(f"shards_bench: targets {'held' if held else 'missed'}", flush=True)
    if args.doc:
        write_doc(args, rates, median, ratios, targets)


def write_doc(args, rates, median, ratios, targets):
    cpu = doc_block.cpu_name()
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    names = {"local": "actorflow.dali, local tar files",
             "http": "actorflow.dali, http:// on loopback (nginx)",
             "dataloader": f"DataLoader, {args.threads} workers, tarfile + "
                           "PIL + torchvision"}
    lines = [
        f"Generated by `tools/bazel run //bench/shards_bench -- --doc=...` "
        f"on {stamp}: {cpu}, {os.cpu_count()} CPUs, {args.images} JPEGs of "
        f"500 x 375 in {args.shards} tar shards, training recipe, batch "
        f"{args.batch}, {args.samples} sample(s) per figure (medians).",
        "",
        "| reader | median | runs |",
        "| --- | ---: | --- |",
        *(f"| {names[k]} | {median[k]:.0f} images/s | "
          + " / ".join(f"{r:.0f}" for r in rates[k]) + " |" for k in names),
        "",
        "| target | ratio | holds |",
        "| --- | ---: | --- |",
        *(f"| {k} >= {targets[k]} | {v:.2f}x | "
          f"{'yes' if v >= targets[k] else '**no**'} |"
          for k, v in ratios.items()),
    ]
    doc_block.rewrite_block(args.doc, "shards_bench", lines)


if __name__ == "__main__":
    main()
