"""Elastic pipelines from Python: 10,000 small JPEGs in tar shards, 1 % of
them corrupt. Two ranks of two threads run as processes of their own,
checkpoint every 10 batches and die by SIGKILL at a random batch (seeded,
printed); four ranks of three threads, and one of one, resume from their
checkpoint directories. The global batches (the ranks' joined in rank order)
equal an uninterrupted run's, every good sample comes once, every rank makes
as many batches, the skip logs agree."""

import hashlib
import io
import json
import os
import random
import signal
import subprocess
import sys
import tarfile
import tempfile
import unittest

import sanitizers

sanitizers.preload_if_asked()

import numpy  # noqa: E402
from PIL import Image  # noqa: E402

from actorflow import fn  # noqa: E402
from actorflow.pipeline import Pipeline  # noqa: E402

SAMPLES = 10000
SHARDS = 20
GLOBAL_BATCH = 24
CHECKPOINT_EVERY = 10


def corrupt(number):
    return number % 100 == 37


def write_shards(out_dir):
    """SHARDS tar files of (jpg, cls) samples, cls the sample's number."""
    paths = []
    per_shard = SAMPLES // SHARDS
    for s in range(SHARDS):
        path = os.path.join(out_dir, f"shard-{s:02d}.tar")
        with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
            for i in range(per_shard):
                number = s * per_shard + i
                if corrupt(number):
                    jpg = b"no jpeg, sample %d" % number
                else:
                    pixels = (numpy.arange(10 * 10 * 3) * 11 + number * 37)
                    image = Image.fromarray(
                        (pixels % 256).astype(numpy.uint8).reshape(10, 10, 3))
                    buffer = io.BytesIO()
                    image.save(buffer, format="JPEG", quality=95)
                    jpg = buffer.getvalue()
                for ext, data in (
                        ("jpg", jpg),
                        ("cls", numpy.array([number], numpy.int64).tobytes())):
                    info = tarfile.TarInfo(f"{number:06d}.{ext}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        paths.append(path)
    return paths


def make_pipeline(paths, rank, ranks, threads, restore_from=None):
    pipe = Pipeline(batch_size=GLOBAL_BATCH // ranks, num_threads=threads,
                    prefetch_queue_depth=2, seed=3, on_error="skip_sample",
                    restore_from=restore_from)
    with pipe:
        jpg, cls = fn.readers.webdataset(
            paths=paths, ext=["jpg", "cls"], dtypes=["uint8", "int64"],
            shuffle_window=64, shard_id=rank, num_shards=ranks, elastic=True)
        images = fn.crop(fn.decoders.image(jpg), size=[6, 6], random=True)
        pipe.set_outputs(images, cls)
    pipe.build()
    return pipe


def rows_of(batch):
    images, cls = batch
    pixels = images.as_array()
    numbers = cls.as_array().ravel().tolist()
    return [[n, hashlib.sha1(pixels[i].tobytes()).hexdigest()[:16]]
            for i, n in enumerate(numbers)]


def run_epoch(pipe, each):
    """Hands each batch (its index, rows) to `each` to the end of the
    epoch, or until `each` returns False. Returns the batches taken."""
    taken = 0
    while True:
        index = pipe.batches
        try:
            batch = pipe.run()
        except StopIteration:
            return taken
        taken += 1
        if each(index, rows_of(batch)) is False:
            return taken


def killed_rank(paths, rank, ranks, root, die_at):
    """A rank of the killed run: records each batch before checkpointing
    past it, and dies by SIGKILL on taking batch `die_at`."""
    pipe = make_pipeline(paths, rank, ranks, threads=2)
    with open(os.path.join(root, f"records-{rank}"), "w") as records:
        def each(index, rows):
            records.write(json.dumps([index, rows]) + "\n")
            records.flush()
            if (index + 1) % CHECKPOINT_EVERY == 0:
                pipe.checkpoint(os.path.join(root, f"ckpt-rank{rank}"),
                                keep_last=3)
            if index + 1 == die_at:
                os.kill(os.getpid(), signal.SIGKILL)
        run_epoch(pipe, each)
    sys.exit(4)  # ran out of batches first


class ElasticResumeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        os.environ["ACTORFLOW_CACHE_DIR"] = os.path.join(cls.tmp, "cache")
        cls.paths = write_shards(cls.tmp)

    def join(self, ranks, threads, restore_from=None):
        """{batch index: rows joined over the ranks}, skips, batch counts,
        and the index the ranks started at."""
        stream, skips, counts, starts = {}, set(), [], set()
        for rank in range(ranks):
            pipe = make_pipeline(self.paths, rank, ranks, threads,
                                 restore_from)
            starts.add(pipe.batches)

            def each(index, rows):
                stream.setdefault(index, []).extend(rows)
            counts.append(run_epoch(pipe, each))
            skips |= {(s["epoch"], s["position"]) for s in pipe.skipped()}
            pipe.close()
        return stream, skips, counts, starts

    def test_killed_at_2x2_resumes_at_4x3_and_1x1(self):
        seed = int(os.environ.get("ACTORFLOW_SEED", random.randrange(1 << 32)))
        print(f"elastic_resume_test: seed {seed} "
              f"(replay: ACTORFLOW_SEED={seed})")
        rng = random.Random(seed)
        batches = -(-SAMPLES // GLOBAL_BATCH)
        die_at = [rng.randrange(25, batches - 10)]
        die_at.append(die_at[0] + rng.randrange(15))
        print(f"ranks die at batches {die_at} of {batches}")
        root = os.path.join(self.tmp, f"killed-{seed}")
        os.makedirs(root)
        ranks = [subprocess.Popen(
            [sys.executable, __file__, "--rank", str(r), root, str(die_at[r]),
             *self.paths]) for r in range(2)]
        for r, process in enumerate(ranks):
            self.assertEqual(process.wait(), -signal.SIGKILL, f"rank {r}")

        reference, skips, counts, _ = self.join(2, 2)
        self.assertEqual(counts, [batches, batches])
        numbers = [row[0] for rows in reference.values() for row in rows]
        good = [n for n in range(SAMPLES) if not corrupt(n)]
        self.assertEqual(sorted(numbers), good)
        self.assertEqual(len(skips), SAMPLES // 100)

        dirs = [os.path.join(root, f"ckpt-rank{r}") for r in range(2)]
        for ranks, threads in ((4, 3), (1, 1)):
            with self.subTest(ranks=ranks, threads=threads):
                resumed, resumed_skips, counts, starts = self.join(
                    ranks, threads, restore_from=dirs)
                self.assertEqual(len(starts), 1)
                start = starts.pop()
                print(f"resumed at {ranks} x {threads} from batch {start}")
                self.assertGreaterEqual(start, die_at[0] - 30)
                self.assertEqual(len(set(counts)), 1)
                # Before the batch they resumed at, the killed run's rows.
                for r in (1, 0):
                    path = os.path.join(root, f"records-{r}")
                    with open(path) as records:
                        for line in records:
                            index, rows = json.loads(line)
                            if index < start:
                                resumed.setdefault(index, [])
                                resumed[index][:0] = rows
                for index in sorted(reference):
                    self.assertEqual(resumed.get(index), reference[index],
                                     f"batch {index}")
                self.assertEqual(len(resumed), len(reference))
                self.assertEqual(resumed_skips, skips)

    def test_a_missing_rank_is_named(self):
        root = os.path.join(self.tmp, "one-rank")
        pipe = make_pipeline(self.paths, 0, 2, 1)
        run_epoch(pipe, lambda index, rows: index < 4)
        pipe.checkpoint(os.path.join(root, "rank0"))
        pipe.close()
        with self.assertRaisesRegex(
                Exception, r"cover lanes \[0, 12\) of the global batch's 24"):
            make_pipeline(self.paths, 0, 1, 1,
                          restore_from=[os.path.join(root, "rank0")])


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--rank":
        rank, root, die_at = int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
        killed_rank(sys.argv[5:], rank, 2, root, die_at)
    unittest.main()
