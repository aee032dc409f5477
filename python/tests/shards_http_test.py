"""Tar shards over HTTP: a real server on loopback (shard_server.py) that
resets and cuts short answers on purpose gives the same batches as the same
shards read from local files, nothing lost or read twice; a member cut off by
a truncated shard is named and skipped; ranks get whole shards."""

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
import urllib.request

import sanitizers

sanitizers.preload_if_asked()

import numpy  # noqa: E402

from actorflow import fn  # noqa: E402
from actorflow.pipeline import Pipeline  # noqa: E402
from image_fixtures import make_images  # noqa: E402

SHARDS = 6
PER_SHARD = 20
CUT_AT = 9  # the truncated shard ends inside this member's data


def write_shards(images, out_dir):
    """SHARDS tar files of PER_SHARD (jpg, cls) samples, cls the sample's
    number; the last one cut off inside member CUT_AT's jpg."""
    os.makedirs(out_dir)
    names = []
    for s in range(SHARDS):
        name = f"shard{s}.tar"
        path = os.path.join(out_dir, name)
        cut = None
        with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
            for i in range(PER_SHARD):
                number = s * PER_SHARD + i
                key = f"s{s}/{number:04d}"
                if s == SHARDS - 1 and i == CUT_AT:
                    cut = tar.fileobj.tell() + 512 + 100  # inside its data
                tar.add(images[number % len(images)], arcname=key + ".jpg")
                data = numpy.array([number], numpy.int64).tobytes()
                info = tarfile.TarInfo(key + ".cls")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        if cut is not None:
            with open(path, "r+b") as f:
                f.truncate(cut)
        names.append(name)
    return names


def make_pipeline(paths, restore_from=None, num_threads=2, batch_size=8,
                  **reader):
    pipe = Pipeline(batch_size=batch_size, num_threads=num_threads,
                    prefetch_queue_depth=2, seed=5, on_error="skip_sample",
                    restore_from=restore_from)
    with pipe:
        jpg, cls = fn.readers.webdataset(
            paths=paths, ext=["jpg", "cls"], dtypes=["uint8", "int64"],
            name="reader", **reader)
        images = fn.resize(fn.decoders.image(jpg), size=[24, 24])
        pipe.set_outputs(images, cls)
    pipe.build()
    return pipe


def take(pipe, batches):
    """The numbers of the next `batches` batches, each a list, going on
    into the next epoch ("end" marks where one ends)."""
    out = []
    while len(out) < batches:
        try:
            out.append(pipe.run()[1].as_array().ravel().tolist())
        except StopIteration:
            out.append("end")
            pipe.reset()
    return out


def run_epochs(paths, epochs=2, **reader):
    """Per epoch, [(images, numbers)] of its batches; and the skipped
    samples' names."""
    pipe = make_pipeline(paths, **reader)
    out = []
    for _ in range(epochs):
        batches = []
        while True:
            try:
                images, numbers = pipe.run()
            except StopIteration:
                break
            batches.append((images.as_array().copy(),
                            numbers.as_array().ravel().tolist()))
        out.append(batches)
        pipe.reset()
    return out, sorted({s["file"] for s in pipe.skipped()})


class ShardsOverHttpTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        images = make_images(os.path.join(cls.tmp, "images"), 40, seed=11)
        cls.dir = os.path.join(cls.tmp, "shards")
        cls.names = write_shards(images, cls.dir)
        # The remote shards' index cache, this test's own.
        os.environ["ACTORFLOW_CACHE_DIR"] = os.path.join(cls.tmp, "cache")
        cls.server = cls.start_server("--reset-every", "7",
                                      "--short-every", "5")

    @classmethod
    def start_server(cls, *faults):
        server = subprocess.Popen(
            [sys.executable, os.path.join(os.path.dirname(__file__),
                                          "shard_server.py"),
             cls.dir, *faults], stdout=subprocess.PIPE, text=True)
        line = server.stdout.readline()
        if not line.startswith("port "):
            server.kill()
            cls.stop_server(server)
            raise RuntimeError(f"shard_server.py said {line!r}")
        server.url = f"http://127.0.0.1:{int(line.split()[1])}"
        return server

    @staticmethod
    def stop_server(server):
        server.terminate()
        server.wait()
        server.stdout.close()

    @classmethod
    def tearDownClass(cls):
        cls.stop_server(cls.server)
        shutil.rmtree(cls.tmp)

    def local(self):
        return [os.path.join(self.dir, n) for n in self.names]

    def urls(self, server=None):
        return [f"{(server or self.server).url}/{n}" for n in self.names]

    def stats(self):
        with urllib.request.urlopen(self.server.url + "/stats") as answer:
            return json.load(answer)

    def test_same_batches_as_local_files_through_resets(self):
        want, want_skipped = run_epochs(self.local(), shuffle_window=16)
        before = self.stats()
        got, skipped = run_epochs(self.urls(), shuffle_window=16)
        after = self.stats()
        # Fetched ahead in runs: over two epochs (and through the retries
        # a third of the answers need), fewer requests than one epoch has
        # samples.
        self.assertLess(after["gets"] - before["gets"], SHARDS * PER_SHARD)
        self.assertGreater(after["resets"] - before["resets"], 0)
        self.assertGreater(after["shorts"] - before["shorts"], 0)
        # And with nothing fetched ahead: each sample read when filled.
        on_demand, _ = run_epochs(self.urls(), shuffle_window=16,
                                  read_ahead_bytes=0)
        for run in (got, on_demand):
            self.assertEqual([len(e) for e in run], [len(e) for e in want])
            for epoch_got, epoch_want in zip(run, want):
                for (gi, gn), (wi, wn) in zip(epoch_got, epoch_want):
                    self.assertEqual(gn, wn)
                    self.assertTrue(numpy.array_equal(gi, wi))
        # Every good sample once per epoch, in an order of its own; the cut
        # one named.
        good = SHARDS * PER_SHARD - (PER_SHARD - CUT_AT)
        orders = []
        for batches in got:
            numbers = [n for _, ns in batches for n in ns]
            self.assertEqual(len(numbers), len(set(numbers)))
            self.assertEqual(len(numbers), good)
            orders.append(numbers)
        self.assertNotEqual(orders[0], orders[1])
        cut = (SHARDS - 1) * PER_SHARD + CUT_AT
        self.assertEqual(skipped, [f"{self.urls()[-1]}:s{SHARDS - 1}/"
                                   f"{cut:04d}.jpg"])
        self.assertEqual(want_skipped, [f"{self.local()[-1]}:s{SHARDS - 1}/"
                                        f"{cut:04d}.jpg"])

    def test_elastic_ranks_over_http_match_local_files(self):
        # Elastic ranks fetch their lanes' samples ahead over a faulty
        # server and hand out what one rank reading local files does.
        (want,), _ = run_epochs(self.local(), epochs=1, shuffle_window=16,
                                elastic=True)
        joined = []
        for rank in range(2):
            (got,), _ = run_epochs(self.urls(), epochs=1, shard_id=rank,
                                   num_shards=2, shuffle_window=16,
                                   elastic=True, batch_size=4)
            joined.append(got)
        self.assertEqual(len(joined[0]), len(joined[1]))
        self.assertEqual(len(joined[0]), len(want))
        for (wi, wn), (ai, an), (bi, bn) in zip(want, *joined):
            # The global batch of 8: rank 0's 4 rows, then rank 1's.
            self.assertEqual(wn, an + bn)
            if len(ai) and len(bi):
                self.assertTrue(numpy.array_equal(
                    wi, numpy.concatenate([ai, bi])))

    def test_ranks_get_whole_shards(self):
        # Two ranks, shuffled: each reads a run of whole shards (cut only
        # at the ends of its range), and together they read every sample.
        seen = []
        for rank in range(2):
            (got,), _ = run_epochs(self.urls(), epochs=1, shard_id=rank,
                                   num_shards=2, shuffle_window=8,
                                   stick_to_shard=True)
            numbers = [n for _, ns in got for n in ns]
            shards = {n // PER_SHARD for n in numbers}
            # 60 samples of 120: three shards, or parts of four.
            self.assertLessEqual(len(shards), 4)
            seen.append(set(numbers))
        self.assertFalse(seen[0] & seen[1])
        cut = set(range((SHARDS - 1) * PER_SHARD + CUT_AT,
                        SHARDS * PER_SHARD))
        self.assertEqual(seen[0] | seen[1] | cut,
                         set(range(SHARDS * PER_SHARD)))

    def test_resume_mid_epoch(self):
        # A checkpoint five batches into an epoch, with samples fetched
        # ahead and some held in the shuffle window: the restored pipeline
        # hands out the batches the live one does, into the next epoch.
        live = make_pipeline(self.urls(), shuffle_window=32)
        take(live, 5)
        where = os.path.join(self.tmp, "resume")
        live.checkpoint(where)
        want = take(live, 20)
        # At the same num_threads, and at others (the batches depend on
        # none of the worker threads).
        for threads in (2, 1, 3):
            restored = make_pipeline(self.urls(), restore_from=where,
                                     num_threads=threads, shuffle_window=32)
            self.assertEqual(take(restored, 20), want, threads)

    def test_index_cached_for_the_next_build(self):
        # A build scans each shard's headers once; the next build over the
        # same URLs reads none, until a shard changes.
        os.environ["ACTORFLOW_CACHE_DIR"] = os.path.join(self.tmp, "fresh")
        try:
            gets = []
            for _ in range(2):
                before = self.stats()["gets"]
                make_pipeline(self.urls()).close()
                gets.append(self.stats()["gets"] - before)
            self.assertGreaterEqual(gets[0], SHARDS)
            self.assertEqual(gets[1], 0)
            changed = os.path.join(self.dir, self.names[0])
            stamp = os.path.getmtime(changed) + 60
            os.utime(changed, (stamp, stamp))
            before = self.stats()["gets"]
            make_pipeline(self.urls()).close()
            self.assertGreaterEqual(self.stats()["gets"] - before, 1)
        finally:
            os.environ["ACTORFLOW_CACHE_DIR"] = os.path.join(self.tmp,
                                                             "cache")

    def test_errors_name_the_url(self):
        with self.assertRaisesRegex(ValueError, "nothing.tar': HTTP 404"):
            run_epochs([self.server.url + "/nothing.tar"])
        # A server that is gone: refused connections, retried, then named.
        gone = self.start_server()
        urls = self.urls(gone)
        self.stop_server(gone)
        with self.assertRaisesRegex(
                ValueError, r"shard0.tar': Failed to connect .*\(2 attempts\)"):
            run_epochs(urls, http_attempts=2)


if __name__ == "__main__":
    unittest.main()
