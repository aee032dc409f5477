"""actorflow.pipeline, actorflow.fn and the PyTorch iterator: DALI's flows
(with-block and subclass, readers and external sources), batches as numpy
and torch without copies, epochs, errors word for word, collection
mid-run."""

import gc
import gzip
import os
import unittest

import sanitizers
from thread_count import threads_after_join, threads_now

sanitizers.preload_if_asked()

import numpy  # noqa: E402
import torch  # noqa: E402

from actorflow import fn  # noqa: E402
from actorflow.pipeline import Pipeline  # noqa: E402
from actorflow.plugin.pytorch import GenericIterator  # noqa: E402
from image_fixtures import make_images  # noqa: E402

FASHION = os.environ.get("ACTORFLOW_FASHION_MNIST",
                         "/usr/share/datasets/fashion-mnist")
MEAN = [123.675, 116.28, 103.53]
STD = [58.395, 57.12, 57.375]



class ImagePipeline(Pipeline):
    """The DALI tutorial's shape: external JPEG bytes fed in iter_setup."""

    def __init__(self, files, **kwargs):
        super().__init__(**kwargs)
        self.files = files
        self.position = 0

    def define_graph(self):
        # In the reader pipeline's order, so that each random operator
        # has the same index (its random draws depend on it).
        self.jpegs = fn.external_source(name="jpegs")
        images = fn.decoders.image(self.jpegs)
        images = fn.resize(images, shorter=64)
        images = fn.crop(images, size=[56, 56], random=True)
        images = fn.flip(images, horizontal=0.5)
        images = fn.crop_mirror_normalize(images, mean=MEAN, std=STD)
        self.labels = fn.external_source(name="labels", dtype=numpy.int32)
        return images, self.labels

    def iter_setup(self):
        if self.position >= len(self.files):
            raise StopIteration
        chunk = self.files[self.position:self.position + self.batch_size]
        self.position += len(chunk)
        self.feed_input(self.jpegs, [read_bytes(f) for f in chunk])
        self.feed_input(self.labels, numpy.array(
            [label_of(f) for f in chunk], numpy.int32))


def read_bytes(path):
    return numpy.fromfile(path, numpy.uint8)


def label_of(path):
    name = os.path.basename(os.path.dirname(path))
    return int(name[len("class"):]) if name.startswith("class") else -1


def reader_pipeline(root, batch_size=8, num_threads=2, depth=2, seed=7,
                    on_error="fail", **kwargs):
    pipe = Pipeline(batch_size=batch_size, num_threads=num_threads,
                    prefetch_queue_depth=depth, seed=seed, on_error=on_error,
                    **kwargs)
    with pipe:
        jpegs, labels = fn.readers.file(dir=root)
        images = fn.decoders.image(jpegs)
        images = fn.resize(images, shorter=64)
        images = fn.crop(images, size=[56, 56], random=True)
        images = fn.flip(images, horizontal=0.5)
        pipe.set_outputs(fn.crop_mirror_normalize(images, mean=MEAN, std=STD),
                         labels)
    pipe.build()
    return pipe


def epoch(pipe):
    """Every batch of one epoch, copied: [(images, labels)]."""
    out = []
    while True:
        try:
            batches = pipe.run()
        except StopIteration:
            return out
        out.append(tuple(b.as_array().copy() for b in batches))


class PipelineTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = os.environ.get("TEST_TMPDIR", "/tmp/actorflow_pipeline_test")
        cls.root = os.path.join(cls.tmp, "images")
        cls.files = make_images(cls.root, 20, seed=1)

    def test_with_block_epochs_and_determinism(self):
        pipe = reader_pipeline(self.root)
        self.assertEqual(pipe.epoch_size(), 20)
        first = epoch(pipe)
        self.assertEqual([len(b[0]) for b in first], [8, 8, 4])
        self.assertEqual(first[0][0].shape, (8, 3, 56, 56))
        self.assertEqual(first[0][0].dtype, numpy.float32)
        labels = numpy.concatenate([b[1] for b in first])
        expected = [int(os.path.basename(os.path.dirname(f))[-1])
                    for f in self.files]
        self.assertEqual(labels.tolist(), expected)
        with self.assertRaises(StopIteration):
            pipe.run()
        pipe.reset()
        second = epoch(pipe)
        self.assertEqual(numpy.concatenate([b[1] for b in second]).tolist(),
                         expected)
        # A new epoch draws new crops.
        self.assertFalse(numpy.array_equal(first[0][0], second[0][0]))
        # The same seed gives the same batches whatever threads and depth.
        other = epoch(reader_pipeline(self.root, num_threads=1, depth=3))
        for a, b in zip(first, other):
            numpy.testing.assert_array_equal(a[0], b[0])
        pipe.close()

    def test_checkpoint_and_restore(self):
        reference = epoch(reader_pipeline(self.root, batch_size=4))
        pipe = reader_pipeline(self.root, batch_size=4)
        for _ in range(2):
            pipe.run()
        where = os.path.join(self.tmp, "pipeline_checkpoints")
        path = pipe.checkpoint(where, keep_last=1)
        self.assertTrue(os.path.isdir(path))
        after = epoch(pipe)  # the live pipeline goes on undisturbed
        self.assertEqual(len(after), len(reference) - 2)
        for a, b in zip(after, reference[2:]):
            numpy.testing.assert_array_equal(a[0], b[0])
        # A new pipeline from the checkpoint (DALI's keyword too) hands out
        # the same batches.
        for kwargs in ({"restore_from": where}, {"checkpoint": path}):
            restored = epoch(reader_pipeline(self.root, batch_size=4,
                                             **kwargs))
            self.assertEqual(len(restored), len(reference) - 2)
            for a, b in zip(restored, reference[2:]):
                numpy.testing.assert_array_equal(a[0], b[0])
                numpy.testing.assert_array_equal(a[1], b[1])
        with self.assertRaises(RuntimeError) as caught:
            reader_pipeline(self.root, batch_size=4, seed=8,
                            restore_from=where)
        self.assertIn("is of another plan: task '", str(caught.exception))
        self.assertIn("attr 'seed' is {i: 7} in the checkpoint, {i: 8} in "
                      "this plan", str(caught.exception))
        pipe.close()

    def test_external_source_matches_reader(self):
        from_reader = epoch(reader_pipeline(self.root))
        pipe = ImagePipeline(self.files, batch_size=8, num_threads=2, seed=7)
        pipe.build()
        fed = epoch(pipe)
        self.assertEqual(len(fed), len(from_reader))
        for a, b in zip(fed, from_reader):
            numpy.testing.assert_array_equal(a[0], b[0])
            numpy.testing.assert_array_equal(a[1], b[1])
        self.assertEqual(pipe.epoch_size(), -1)
        with self.assertRaises(StopIteration):
            pipe.run()
        # The next epoch calls iter_setup again.
        pipe.position = 0
        pipe.reset()
        self.assertEqual(len(epoch(pipe)), 3)

    def test_external_sources_skip_a_bad_sample_together(self):
        files = self.files[:8]
        pipe = ImagePipeline(files, batch_size=8, num_threads=2, seed=7,
                             on_error="skip_sample")
        pipe.build()
        garbage = numpy.frombuffer(b"not a jpeg", numpy.uint8)
        pipe.iter_setup = lambda: (
            pipe.feed_input(pipe.jpegs, [read_bytes(f) for f in files[:3]] +
                            [garbage] + [read_bytes(f) for f in files[3:7]]),
            pipe.feed_input(pipe.labels, numpy.array(
                [label_of(f) for f in files[:3]] + [99] +
                [label_of(f) for f in files[3:7]], numpy.int32)))
        pipe.schedule_run()
        images, labels = pipe.outputs()
        self.assertEqual(len(images), 7)
        self.assertEqual(labels.as_array().tolist(),
                         [label_of(f) for f in files[:7]])
        self.assertEqual([(s["epoch"], s["position"]) for s in pipe.skipped()],
                         [(0, 3)])
        with self.assertRaises(ValueError) as caught:
            pipe.feed_input("labels", numpy.zeros(3, numpy.int32))
            pipe.feed_input("jpegs", [garbage] * 2)
        self.assertEqual(str(caught.exception),
                         "FeedInput 'jpegs': 2 samples, but 'labels' was fed "
                         "3 for the same batch")

    def test_batches_as_numpy_and_torch(self):
        pipe = reader_pipeline(self.root)
        images, labels = pipe.run()
        array = images.as_array()
        self.assertFalse(array.flags.writeable)
        tensor = images.as_tensor()
        self.assertEqual(tensor.data_ptr(), array.ctypes.data)
        self.assertEqual(tuple(tensor.shape), array.shape)
        self.assertEqual(tensor.dtype, torch.float32)
        self.assertEqual(labels.as_tensor().dtype, torch.int32)
        self.assertEqual(len(images), 8)
        self.assertEqual(images.shape(), [(3, 56, 56)] * 8)
        self.assertEqual([a.shape for a in images.as_arrays()],
                         [(3, 56, 56)] * 8)
        pipe.run()
        with self.assertRaises(RuntimeError) as caught:
            images.as_array()
        self.assertEqual(str(caught.exception),
                         "batch 'crop_mirror_normalize_5' was released (a "
                         "batch is valid until the next run()/outputs(), or "
                         "release_outputs())")

    def test_share_and_release(self):
        pipe = reader_pipeline(self.root, depth=2)
        pipe.schedule_run()
        pipe.schedule_run()
        first = pipe.share_outputs()
        second = pipe.share_outputs()
        self.assertEqual(first[1].as_array().tolist(),
                         [0, 0, 0, 0, 0, 0, 0, 1])
        self.assertEqual(len(second[0]), 8)
        pipe.release_outputs()
        with self.assertRaises(RuntimeError):
            first[0].as_array()
        second[0].as_array()  # still held
        pipe.release_outputs()
        with self.assertRaises(RuntimeError) as caught:
            pipe.release_outputs()
        self.assertEqual(str(caught.exception),
                         "release_outputs: no batch is held")
        with self.assertRaises(RuntimeError) as caught:
            pipe.outputs()
        self.assertEqual(str(caught.exception),
                         "no batch is scheduled: call schedule_run() (or run())")

    def test_idx_reader_reads_fashion_mnist(self):
        images_path = os.path.join(FASHION, "t10k-images-idx3-ubyte.gz")
        labels_path = os.path.join(FASHION, "t10k-labels-idx1-ubyte.gz")
        pipe = Pipeline(batch_size=32, num_threads=2)
        with pipe:
            images, labels = fn.readers.idx(images=images_path,
                                            labels=labels_path, limit=100)
            pipe.set_outputs(images, labels)
        pipe.build()
        got = epoch(pipe)
        with gzip.open(images_path) as f:
            raw = numpy.frombuffer(f.read(), numpy.uint8, offset=16)
        with gzip.open(labels_path) as f:
            raw_labels = numpy.frombuffer(f.read(), numpy.uint8, offset=8)
        images = numpy.concatenate([b[0] for b in got])
        numpy.testing.assert_array_equal(
            images, raw[:100 * 784].reshape(100, 28, 28, 1))
        numpy.testing.assert_array_equal(
            numpy.concatenate([b[1] for b in got]), raw_labels[:100])

    def test_an_output_given_twice(self):
        # One node as two outputs: fetched once, handed out twice.
        images_path = os.path.join(FASHION, "t10k-images-idx3-ubyte.gz")
        labels_path = os.path.join(FASHION, "t10k-labels-idx1-ubyte.gz")
        pipe = Pipeline(batch_size=10, num_threads=2)
        with pipe:
            images, labels = fn.readers.idx(images=images_path,
                                            labels=labels_path, limit=20)
            pipe.set_outputs(labels, images, labels)
        pipe.build()
        for first, images, again in epoch(pipe):
            self.assertEqual(images.shape, (10, 28, 28, 1))
            numpy.testing.assert_array_equal(first, again)

    def test_feed_input_forms(self):
        pipe = Pipeline(batch_size=4, num_threads=1)
        with pipe:
            x = fn.external_source(name="x", dtype=numpy.float32, shape=[3, 5])
            pipe.set_outputs(fn.cast(x, dtype=numpy.float64))
        pipe.build()
        pipe.feed_input("x", [numpy.ones((2, 3), numpy.float32),
                              numpy.full((3, 5), 2, numpy.float32)])
        pipe.schedule_run()
        (out,) = pipe.outputs()
        self.assertEqual(out.shape(), [(2, 3), (3, 5)])
        arrays = out.as_arrays()
        numpy.testing.assert_array_equal(arrays[0], numpy.ones((2, 3)))
        numpy.testing.assert_array_equal(arrays[1], numpy.full((3, 5), 2))
        self.assertEqual(arrays[0].dtype, numpy.float64)
        with self.assertRaises(ValueError) as caught:
            out.as_array()
        self.assertEqual(str(caught.exception),
                         "batch 'cast_0': samples have different shapes "
                         "[(2, 3), (3, 5)]...; use as_arrays() for one array "
                         "per sample")
        whole = numpy.arange(60, dtype=numpy.float32).reshape(4, 3, 5)
        pipe.feed_input("x", whole)
        pipe.schedule_run()
        (out,) = pipe.outputs()
        numpy.testing.assert_array_equal(out.as_array(), whole)
        with self.assertRaises(ValueError) as caught:
            pipe.feed_input("x", numpy.ones((1, 4, 5), numpy.float32))
        self.assertEqual(str(caught.exception),
                         "feed_input 'x': samples up to [4, 5], larger than "
                         "the [3, 5] the pipeline was built for; give "
                         "fn.external_source(shape=...) the largest sample's "
                         "shape")
        with self.assertRaises(ValueError) as caught:
            pipe.feed_input("x", numpy.ones((1, 3, 5), numpy.int32))
        self.assertEqual(str(caught.exception),
                         "feed 'input.x': blob 'x': the tensor is int32, the "
                         "blob float32")
        with self.assertRaises(ValueError) as caught:
            pipe.feed_input("y", numpy.ones((1, 3, 5), numpy.float32))
        self.assertEqual(str(caught.exception),
                         "feed_input: no external source 'y' (external "
                         "sources: ['x'])")

    def test_batch_normalize_and_fused_decoder(self):
        pipe = Pipeline(batch_size=2)
        with pipe:
            x = fn.external_source(name="x", dtype=numpy.float32, shape=[2])
            with self.assertRaises(ValueError) as caught:
                fn.batch()
            self.assertEqual(str(caught.exception),
                             "fn.batch: give the nodes to batch")
            pipe.set_outputs(fn.normalize(fn.batch(x), mean=[1.0, 3.0],
                                          std=[2.0, 4.0]))
        pipe.build()
        pipe.feed_input("x", numpy.array([[1, 3], [5, 11]], numpy.float32))
        pipe.schedule_run()
        (out,) = pipe.outputs()
        numpy.testing.assert_allclose(out.as_array(), [[0, 0], [2, 2]])

        pipe = Pipeline(batch_size=4, num_threads=2)
        with pipe:
            jpegs, _ = fn.readers.file(dir=self.root, limit=4)
            pipe.set_outputs(fn.decoders.image_random_crop(
                jpegs, size=[32, 48], resize_shorter=64))
        pipe.build()
        (images,) = pipe.run()
        self.assertEqual(images.as_array().shape, (4, 32, 48, 3))
        self.assertEqual(images.as_array().dtype, numpy.uint8)

    def test_source_argument(self):
        batches = [numpy.full((2, 3), i, numpy.int32) for i in range(3)]
        pipe = Pipeline(batch_size=2, num_threads=1)
        with pipe:
            pipe.set_outputs(fn.external_source(iter(batches), dtype="int32",
                                                shape=[3]))
        pipe.build()
        got = []
        while True:
            try:
                got.append(pipe.run()[0].as_array().copy())
            except StopIteration:
                break
        self.assertEqual([g.tolist() for g in got],
                         [b.tolist() for b in batches])

    def test_external_source_takes_the_type_fed(self):
        # DALI's seed flow: iter_setup feeds int32 labels and float32
        # values to sources declared without a dtype (or a shape).
        class Fed(Pipeline):
            def define_graph(self):
                self.labels = fn.external_source(name="labels")
                self.values = fn.external_source(name="values")
                return self.labels, self.values

            def iter_setup(self):
                self.feed_input(self.labels,
                                numpy.array([[3], [1]], numpy.int32))
                self.feed_input(self.values, [numpy.full(2, 0.5, numpy.float32),
                                              numpy.full(2, 1.5, numpy.float32)])

        pipe = Fed(batch_size=2, num_threads=1)
        pipe.build()
        with self.assertRaises(RuntimeError) as caught:
            pipe.epoch_size()
        self.assertIn("external source 'labels', 'values' has no shape or "
                      "dtype yet", str(caught.exception))
        labels, values = pipe.run()
        self.assertEqual(labels.as_array().dtype, numpy.int32)
        self.assertEqual(labels.as_array().tolist(), [[3], [1]])
        self.assertEqual(values.as_array().dtype, numpy.float32)
        self.assertEqual(values.as_array().tolist(), [[0.5, 0.5], [1.5, 1.5]])
        # A dtype given is still checked against what is fed.
        pipe = Pipeline(batch_size=2, num_threads=1)
        with pipe:
            x = fn.external_source(name="x", dtype=numpy.uint8, shape=[1])
            pipe.set_outputs(x)
        pipe.build()
        with self.assertRaises(Exception) as caught:
            pipe.feed_input(x, numpy.array([[1], [2]], numpy.int32))
        self.assertIn("int32", str(caught.exception))

    def test_iterable_source_is_iterated_each_epoch(self):
        # DALI calls iter() on an iterable source at every epoch's start:
        # an iterator class starts over there.
        class Counting:
            def __init__(self):
                self.iters = 0

            def __iter__(self):
                self.iters += 1
                self.i = 0
                return self

            def __next__(self):
                if self.i == 3:
                    raise StopIteration
                self.i += 1
                return numpy.full((2, 1), self.i, numpy.int32)

        source = Counting()
        pipe = Pipeline(batch_size=2, num_threads=1)
        with pipe:
            pipe.set_outputs(fn.external_source(source))
        pipe.build()
        for epoch in range(2):
            got = []
            while True:
                try:
                    got.append(int(pipe.run()[0].as_array()[0, 0]))
                except StopIteration:
                    break
            self.assertEqual(got, [1, 2, 3], f"epoch {epoch}")
            self.assertEqual(source.iters, epoch + 1)
            pipe.reset()

    def test_stats(self):
        pipe = reader_pipeline(self.root, batch_size=4)
        pipe.run()
        pipe.run()
        first = pipe.stats()
        self.assertEqual(first["batches"], 2)
        self.assertGreaterEqual(first["caller_wait_ms"], 0)
        ops = first["operators"]
        columns = {"acts", "busy_ms", "starved_ms", "back_pressured_ms"}
        for task, figures in ops.items():
            self.assertEqual(set(figures), columns | {"register_bytes"}, task)
        # The decoding stages (per worker) did the work of two batches.
        decoding = [f for t, f in ops.items() if "decode" in t]
        self.assertTrue(decoding, sorted(ops))
        self.assertGreaterEqual(sum(f["acts"] for f in decoding), 2)
        self.assertGreater(sum(f["busy_ms"] for f in decoding), 0)
        epoch(pipe)
        later = pipe.stats()
        self.assertGreater(later["batches"], first["batches"])
        for task, figures in later["operators"].items():
            for column in columns:
                self.assertGreaterEqual(figures[column],
                                        ops[task][column], (task, column))

    def test_stalls(self):
        pipe = reader_pipeline(self.root, batch_size=4)
        pipe.run()
        pipe.run()
        report = pipe.stalls()
        self.assertEqual(report["batches"], 2)
        self.assertGreater(report["window_ms"], 0)
        self.assertGreaterEqual(report["caller_wait"], 0)
        self.assertLessEqual(report["caller_wait"], 1)
        decoding = [s for name, s in report["stages"].items()
                    if "decode" in name]
        self.assertTrue(decoding, sorted(report["stages"]))
        for stage in report["stages"].values():
            self.assertEqual(set(stage), {"threads", "acts", "samples_per_s",
                                          "busy", "starved", "back_pressured",
                                          "register_bytes"})
            self.assertGreaterEqual(stage["samples_per_s"], 0)
        # The images it made (56 x 56 x 3 bytes at least, 4 a batch) sit in
        # the decoding stage's registers.
        self.assertGreaterEqual(sum(s["register_bytes"] for s in decoding),
                                4 * 56 * 56 * 3)
        # Every stage went through the window's samples (and whatever it
        # made ahead of the caller).
        self.assertGreater(min(s["samples_per_s"] for s in decoding), 0)
        self.assertRegex(report["verdict"],
                         r"^(input-bound \d+ %: .+, \d+ of \d+ threads? "
                         r"busy \d+ %|input is not the bottleneck: the "
                         r"caller waited \d+ % of the time)$")
        # The next window starts where this one ended, for stats() too,
        # which carries the same live report.
        self.assertEqual(pipe.stalls()["batches"], 0)
        pipe.run()
        live = pipe.stats()["stalls"]
        self.assertEqual(live["batches"], 1)
        self.assertIn("verdict", live)
        self.assertEqual(pipe.stalls()["batches"], 0)

    def test_autotune_never_changes_a_batch(self):
        def pipeline(tune):
            pipe = Pipeline(batch_size=2, num_threads=1, seed=3,
                            prefetch_queue_depth=1, autotune=tune,
                            autotune_cpus=3)
            with pipe:
                jpegs, labels = fn.readers.file(dir=self.root,
                                                shuffle_window=8)
                images = fn.decoders.image_random_crop(jpegs, size=[16, 16])
                images = fn.flip(images)
                pipe.set_outputs(images, labels)
            pipe.build()
            return pipe
        plain, tuned = pipeline(False), pipeline(True)
        # Epochs of 10 batches: enough for windows of 16 batches and 50 ms
        # to end and the tuner to move at least once.
        for _ in range(30):
            want, got = epoch(plain), epoch(tuned)
            self.assertEqual(len(want), len(got))
            for (a, la), (b, lb) in zip(want, got):
                numpy.testing.assert_array_equal(a, b)
                numpy.testing.assert_array_equal(la, lb)
            plain.reset()
            tuned.reset()
        report = tuned.autotune_report()
        self.assertTrue(report["enabled"])
        self.assertGreaterEqual(len(report["trials"]), 2)
        self.assertEqual(set(report["trials"][0]),
                         {"threads", "depth", "images_per_s", "memory_bytes"})
        self.assertFalse(plain.autotune_report()["enabled"])

    def test_sleep_passes_samples_through(self):
        def pipeline(ms):
            pipe = Pipeline(batch_size=4, num_threads=2, seed=3)
            with pipe:
                jpegs, labels = fn.readers.file(dir=self.root)
                images = fn.decoders.image(jpegs)
                images = fn.resize(images, size=[32, 32])
                if ms is not None:
                    images = fn.sleep(images, ms=ms)
                pipe.set_outputs(images, labels)
            pipe.build()
            return pipe
        plain = epoch(pipeline(None))
        slowed = epoch(pipeline(1))
        self.assertEqual(len(plain), len(slowed))
        for (a, la), (b, lb) in zip(plain, slowed):
            numpy.testing.assert_array_equal(a, b)
            numpy.testing.assert_array_equal(la, lb)
        half = epoch(pipeline(0.5))  # a float of milliseconds
        self.assertEqual(len(half), len(plain))
        with self.assertRaisesRegex(Exception, r"attr 'ms'.*0 to 60000"):
            pipeline(-2)

    def test_bad_samples(self):
        root = os.path.join(self.tmp, "broken")
        make_images(root, 6, seed=2)
        bad = os.path.join(root, "class0", "zz_garbage.jpg")
        with open(bad, "wb") as f:
            f.write(b"not a jpeg at all")
        pipe = reader_pipeline(root, batch_size=4, on_error="skip_sample")
        got = epoch(pipe)
        self.assertEqual(sum(len(b[0]) for b in got), 6)
        skipped = pipe.skipped()
        self.assertEqual(len(skipped), 1)
        self.assertEqual(skipped[0]["file"], bad)
        self.assertEqual(skipped[0]["epoch"], 0)
        # Through the iterator, the epoch keeps its len() steps, the last
        # one repeated: a rank with a bad file runs as many steps as the
        # others.
        nine = os.path.join(self.tmp, "nine")
        make_images(nine, 8, seed=3)
        with open(os.path.join(nine, "class1", "zz_cut.jpg"), "wb") as f:
            f.write(b"\xff\xd8\xff\xe0 cut short")
        it = GenericIterator(
            reader_pipeline(nine, batch_size=4, on_error="skip_sample"),
            ["images", "labels"], auto_reset=True)
        self.assertEqual(len(it), 3)  # 9 files, 8 good: 2 full batches
        for _ in range(2):
            steps = [step[0]["labels"].clone() for step in it]
            self.assertEqual([len(s) for s in steps], [4, 4, 4])
            self.assertTrue(torch.equal(steps[2], steps[1]))
        failing = reader_pipeline(root, batch_size=4)
        with self.assertRaises(RuntimeError) as caught:
            epoch(failing)
        self.assertIn(f"('{bad}')", str(caught.exception))
        self.assertIn("operator 'decode_1'", str(caught.exception))

    def test_definition_errors(self):
        with self.assertRaises(RuntimeError) as caught:
            fn.resize(None, shorter=3)
        self.assertEqual(str(caught.exception),
                         "an operator is called outside a pipeline's "
                         "definition: call it inside `with pipe:` or in "
                         "define_graph()")
        pipe = Pipeline(batch_size=2)
        with pipe:
            jpegs, _ = fn.readers.file(dir=self.root)
            pipe.set_outputs(fn.resize(fn.decoders.image(jpegs), bogus=1))
        with self.assertRaises(ValueError) as caught:
            pipe.build()
        self.assertIn("operator 'resize_2' (resize): unknown attr 'bogus' "
                      "(resize takes: size, shorter, longer, resize_x, "
                      "resize_y, mode, max_size, antialias, interp, "
                      "shorter_uniform, shorter_normal, shorter_stream, "
                      "longer_uniform, "
                      "longer_normal, longer_stream, resize_x_uniform, "
                      "resize_x_normal, resize_x_stream, resize_y_uniform, "
                      "resize_y_normal, resize_y_stream)",
                      str(caught.exception))
        with self.assertRaises(ValueError) as caught:
            Pipeline(batch_size=2, on_error="ignore")
        self.assertEqual(str(caught.exception),
                         'Pipeline: on_error is "fail" or "skip_sample", not '
                         '"ignore"')
        pipe = Pipeline(batch_size=2)
        with pipe:
            pipe.set_outputs(fn.flip(fn.external_source(shape=[1],
                                                        dtype=numpy.uint8),
                                     horizontal={}))
        with self.assertRaises(ValueError) as caught:
            pipe.build()
        self.assertEqual(str(caught.exception),
                         "operator 'flip_1': argument 'horizontal' = {}: wants "
                         "a bool, int, float, str, or a list of ints, floats "
                         "or strs")
        with self.assertRaises(NotImplementedError):
            Pipeline(batch_size=2).build()
        pipe = Pipeline(batch_size=2, device_id=0)
        with pipe:
            x = fn.external_source(name="x", dtype=numpy.float32, shape=[2])
            y = fn.external_source(name="y", dtype=numpy.int32, shape=[])
            pipe.set_outputs(fn.normalize(fn.batch(x), mean=[1.0], std=[2.0]),
                             y)
        with self.assertRaises(ValueError) as caught:
            pipe.build()
        self.assertEqual(str(caught.exception),
                         "SetOutputs: 'y' is not batched: with a batch "
                         "operator, every output must come out of it (the one "
                         "batch drops a failed sample from all outputs)")
        with self.assertRaises(ValueError) as caught:
            Pipeline(batch_size=2, device_id=1)
        self.assertEqual(str(caught.exception),
                         "Pipeline: device_id 1: GPU operators run on device 0 "
                         "(give 0, -1 or None)")
        # DALI's positional order: batch_size, num_threads, device_id, seed.
        pipe = Pipeline(8, 3, 0, 42)
        self.assertEqual((pipe.batch_size, pipe.num_threads, pipe.device_id,
                          pipe.seed, pipe.prefetch_queue_depth),
                         (8, 3, 0, 42, 2))
        with self.assertRaises(TypeError):
            Pipeline(8, 3, 0, 42, 4)  # prefetch_queue_depth by keyword only

    def test_collected_mid_run_joins_threads(self):
        # The first blocking call starts the one interrupter thread (for
        # Ctrl-C), which lives until exit: start it before counting.
        epoch(reader_pipeline(self.root))
        before = threads_now()
        pipe = reader_pipeline(self.root)
        pipe.schedule_run()
        pipe.schedule_run()
        pipe.share_outputs()  # one held, one in flight
        self.assertGreater(threads_now(), before)
        del pipe
        gc.collect()
        self.assertEqual(threads_after_join(before), before)


class GenericIteratorTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        tmp = os.environ.get("TEST_TMPDIR", "/tmp/actorflow_pipeline_test")
        cls.root = os.path.join(tmp, "iterator_images")
        make_images(cls.root, 20, seed=3)

    def test_two_pipelines_in_step(self):
        pipes = [reader_pipeline(self.root, seed=s) for s in (1, 2)]
        it = GenericIterator(pipes, ["images", "labels"])
        self.assertEqual(len(it), 3)
        steps = 0
        for step in it:
            self.assertEqual(len(step), 2)
            for d in step:
                self.assertEqual(sorted(d), ["images", "labels"])
                self.assertIsInstance(d["images"], torch.Tensor)
            self.assertTrue(torch.equal(step[0]["labels"], step[1]["labels"]))
            self.assertFalse(torch.equal(step[0]["images"], step[1]["images"]))
            steps += 1
        self.assertEqual(steps, 3)
        with self.assertRaises(StopIteration):
            next(it)
        it.reset()
        self.assertEqual(sum(1 for _ in it), 3)

    def test_auto_reset_and_size(self):
        it = GenericIterator(reader_pipeline(self.root), ["images", "labels"],
                             auto_reset=True, size=10)
        self.assertEqual(len(it), 2)
        for _ in range(2):  # auto_reset: the next epoch follows at once
            sizes = [step[0]["labels"].shape[0] for step in it]
            self.assertEqual(sizes, [8, 2])
        with self.assertRaises(ValueError) as caught:
            GenericIterator(reader_pipeline(self.root), ["a", "a"])
        self.assertEqual(str(caught.exception),
                         "GenericIterator: output_map ['a', 'a'] repeats a "
                         "name")


if __name__ == "__main__":
    unittest.main(verbosity=2)
