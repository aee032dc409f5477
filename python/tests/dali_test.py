"""actorflow.dali run as DALI's users write it: DALI's getting-started
flow, the ResNet-50 training and validation pipelines with
DALIClassificationIterator, external sources fed as DALI's examples feed
them, readers that run on across epochs with full batches, the iterators'
epoch counting under each LastBatchPolicy, and clear errors for what is
not there."""

import math
import os
import shutil
import tempfile
import unittest
import warnings

import sanitizers

sanitizers.preload_if_asked()

import numpy  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

from actorflow.dali import fn, pipeline_def, types  # noqa: E402
from actorflow.dali.pipeline import Pipeline  # noqa: E402
from actorflow.dali.plugin.pytorch import (  # noqa: E402
    DALIClassificationIterator, DALIGenericIterator, LastBatchPolicy)
from image_fixtures import make_images  # noqa: E402

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]

warnings.simplefilter("ignore")  # "mixed" runs on the host, said once


@pipeline_def
def create_dali_pipeline(data_dir, crop, size, shard_id, num_shards,
                         dali_cpu=False, is_training=True):
    # DALI's PyTorch ResNet-50 example, as written there.
    images, labels = fn.readers.file(file_root=data_dir, shard_id=shard_id,
                                     num_shards=num_shards,
                                     random_shuffle=is_training,
                                     pad_last_batch=True, name="Reader")
    dali_device = "cpu" if dali_cpu else "gpu"
    decoder_device = "cpu" if dali_cpu else "mixed"
    if is_training:
        images = fn.decoders.image_random_crop(
            images, device=decoder_device, output_type=types.RGB,
            random_aspect_ratio=[0.8, 1.25], random_area=[0.1, 1.0],
            num_attempts=100)
        images = fn.resize(images, device=dali_device, resize_x=crop,
                           resize_y=crop, interp_type=types.INTERP_TRIANGULAR)
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
        output_layout="CHW", crop=(crop, crop), mean=MEAN, std=STD,
        mirror=mirror)
    labels = labels.gpu() if not dali_cpu else labels
    return images, labels


def labels_of(paths):
    classes = sorted({os.path.basename(os.path.dirname(p)) for p in paths})
    return [classes.index(os.path.basename(os.path.dirname(p)))
            for p in paths]


class DaliTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp()
        cls.paths = make_images(cls.root, 30, seed=5)
        cls.labels = labels_of(cls.paths)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root)

    def test_getting_started_batches_images_of_their_own_sizes(self):
        root = self.root

        @pipeline_def
        def simple_pipeline():
            jpegs, labels = fn.readers.file(file_root=root)
            images = fn.decoders.image(jpegs, device="cpu")
            return images, labels

        pipe = simple_pipeline(batch_size=8, num_threads=1, device_id=0)
        pipe.build()
        images, labels = pipe.run()
        self.assertFalse(images.is_dense_tensor())
        self.assertTrue(labels.is_dense_tensor())
        self.assertEqual(images.layout(), "HWC")
        self.assertEqual(images.dtype, types.UINT8)
        self.assertEqual(numpy.array(labels.as_tensor()).shape, (8, 1))
        self.assertEqual(numpy.array(labels.as_tensor()).ravel().tolist(),
                         self.labels[:8])
        for i in range(8):
            with Image.open(self.paths[i]) as im:
                ref = numpy.asarray(im.convert("RGB"), numpy.int16)
            self.assertEqual(images.at(i).shape, ref.shape)
            self.assertEqual(images.shape()[i], ref.shape)
            # libjpeg-turbo both, perhaps with other IDCT settings.
            self.assertLess(numpy.abs(images.at(i) - ref).mean(), 1.0)
            self.assertTrue(numpy.array_equal(numpy.array(images[i]),
                                              images.at(i)))
        with self.assertRaisesRegex(RuntimeError, "shapes differ"):
            images.as_array()
        self.assertEqual(len(list(images)), 8)

    def test_readers_run_on_across_epochs_with_full_batches(self):
        root = self.root
        for pad in (False, True):
            @pipeline_def(batch_size=8, num_threads=2, device_id=None)
            def labels_only():
                _, labels = fn.readers.file(file_root=root, name="Reader",
                                            pad_last_batch=pad)
                return labels

            pipe = labels_only()
            self.assertEqual(pipe.epoch_size("Reader"), 30)
            self.assertEqual(pipe.epoch_size(), {"Reader": 30})
            seen = []
            for _ in range(8):
                (labels,) = pipe.run()
                self.assertEqual(len(labels), 8)
                seen += numpy.array(labels.as_tensor()).ravel().tolist()
            if pad:
                # 30 + the last repeated twice, then the next epoch.
                want = (self.labels + [self.labels[-1]] * 2) * 2
            else:
                want = self.labels + self.labels + self.labels
            self.assertEqual(seen, want[:64])
            self.assertEqual(pipe.reader_meta("Reader")["epoch_size_padded"],
                             32 if pad else 30)

    def test_resnet50_training_and_validation_through_the_iterator(self):
        for training in (True, False):
            seen_by_shard = []
            for shard in (0, 1):
                pipe = create_dali_pipeline(
                    batch_size=4, num_threads=2, device_id=0, seed=12,
                    data_dir=self.root, crop=32, size=40, dali_cpu=False,
                    shard_id=shard, num_shards=2, is_training=training)
                pipe.build()
                it = DALIClassificationIterator(
                    pipe, reader_name="Reader",
                    last_batch_policy=LastBatchPolicy.PARTIAL,
                    auto_reset=True)
                # The example's loop length: 15 samples per shard.
                self.assertEqual(int(math.ceil(it._size / 4)), 4)
                self.assertEqual(len(it), 4)
                for _ in range(2):
                    steps, labels = 0, []
                    for data in it:
                        x, y = data[0]["data"], data[0]["label"]
                        self.assertEqual(x.dtype, torch.float32)
                        self.assertEqual(tuple(x.shape[1:]), (3, 32, 32))
                        self.assertEqual(y.shape[1], 1)
                        self.assertEqual(y.dtype, torch.int32)
                        self.assertGreater(float(x.min()), -2.2)
                        self.assertLess(float(x.max()), 2.7)
                        labels += y.squeeze(-1).long().tolist()
                        steps += 1
                    self.assertEqual(steps, 4)
                    self.assertEqual(len(labels), 15)
                seen_by_shard.append(set(labels))
            if training:
                # A seeded shuffle of the whole list before sharding: each
                # shard holds every class, not a run of them.
                for seen in seen_by_shard:
                    self.assertEqual(seen, {0, 1, 2})

    def test_last_batch_policies_count_epochs_as_dali_does(self):
        root = self.root
        want_stream = self.labels * 5

        @pipeline_def(batch_size=8, num_threads=1, device_id=0)
        def labels_only():
            _, labels = fn.readers.file(file_root=root, name="Reader")
            return labels

        for policy, steps, samples in (
                (LastBatchPolicy.FILL, [4, 4, 4], [32, 32, 32]),
                (LastBatchPolicy.PARTIAL, [4, 4, 4], [30, 30, 30]),
                (LastBatchPolicy.DROP, [3, 3, 3], [24, 24, 24])):
            it = DALIGenericIterator(labels_only(), ["label"],
                                     reader_name="Reader",
                                     last_batch_policy=policy)
            self.assertEqual(len(it), 3 if policy == LastBatchPolicy.DROP
                             else 4)
            got_steps, got_samples, stream = [], [], []
            for _ in range(3):
                n = k = 0
                for data in it:  # iter() starts the next epoch
                    got = data[0]["label"].ravel().tolist()
                    stream += got
                    n += len(got)
                    k += 1
                got_steps.append(k)
                got_samples.append(n)
            if policy == LastBatchPolicy.FILL:
                # The epoch after a filled batch owes 2 samples fewer: 28,
                # then 26 (still 4 batches each).
                self.assertEqual(stream, want_stream[:96])
            self.assertEqual((got_steps, got_samples), (steps, samples),
                             policy)

    def test_tensors_a_caller_keeps_are_not_overwritten(self):
        root = self.root

        @pipeline_def(batch_size=4, num_threads=2, device_id=0)
        def images():
            jpegs, labels = fn.readers.file(file_root=root, name="Reader")
            return fn.resize(fn.decoders.image(jpegs), size=(20, 24)), labels

        it = DALIGenericIterator(images(), ["x", "y"], reader_name="Reader")
        first = next(it)[0]
        kept = first["x"].clone()
        for _ in range(5):
            next(it)
        self.assertTrue(torch.equal(first["x"], kept))
        self.assertEqual(tuple(first["x"].shape), (4, 20, 24, 3))

    def test_dali_scalars_mirror_and_normalization(self):
        root = self.root
        outs = {}
        for mirror in (0, False, 1, True, fn.random.coin_flip(
                probability=1.0)):
            @pipeline_def(batch_size=4, num_threads=1, device_id=0)
            def cmn():
                jpegs, _ = fn.readers.file(file_root=root)
                images = fn.resize(fn.decoders.image(jpegs), size=[24, 24])
                flipped = fn.flip(images, horizontal=1)
                return (images, flipped, fn.crop_mirror_normalize(
                    images, crop=(16, 16), mirror=mirror, mean=MEAN, std=STD,
                    scale=2.0, shift=3.0))

            images, flipped, out = cmn().run()
            outs[repr(mirror)] = out.as_array()
        base = images.as_array().astype(numpy.float64)
        self.assertTrue(numpy.array_equal(flipped.as_array(),
                                          base[:, :, ::-1].astype(
                                              numpy.uint8)))
        window = base[:, 4:20, 4:20, :]
        ref = ((window - MEAN) / STD * 2.0 + 3.0).transpose(0, 3, 1, 2)
        numpy.testing.assert_allclose(outs["0"], ref, rtol=1e-5, atol=1e-4)
        numpy.testing.assert_allclose(outs["1"], ref[..., ::-1], rtol=1e-5,
                                      atol=1e-4)
        self.assertTrue(numpy.array_equal(outs["0"], outs["False"]))
        self.assertTrue(numpy.array_equal(outs["1"], outs["True"]))
        coin = [k for k in outs if k.startswith("fn.random")][0]
        self.assertTrue(numpy.array_equal(outs["1"], outs[coin]))

    def test_same_batches_whatever_threads_depth_and_fusion(self):
        # Decoding fused with the ImageNet crop and its resize (training),
        # or with the resize and centre crop (validation), gives the
        # unfused chain's values exactly (at full scale: the resize keeps
        # more than half of each side, so no DCT scaling).
        root = self.root

        def batches(threads, depth, fuse, training):
            pipe = create_dali_pipeline(
                batch_size=6, num_threads=threads, device_id=0, seed=4,
                prefetch_queue_depth=depth, fuse_decode=fuse, data_dir=root,
                crop=80, size=100, dali_cpu=True, shard_id=0, num_shards=1,
                is_training=training)
            return [tuple(t.as_array() for t in pipe.run()) for _ in range(6)]

        for training in (True, False):
            one = batches(1, 1, True, training)
            for other in (batches(2, 3, True, training),
                          batches(2, 2, False, training)):
                for a, b in zip(one, other):
                    self.assertTrue(numpy.array_equal(a[0], b[0]))
                    self.assertTrue(numpy.array_equal(a[1], b[1]))

    def test_external_sources_as_dali_examples_feed_them(self):
        class ExternalInputIterator:
            # DALI's example: an iterator class, int32 labels, no dtype.
            def __init__(self, batch_size):
                self.batch_size = batch_size

            def __iter__(self):
                self.i = 0
                return self

            def __next__(self):
                if self.i >= 3:
                    raise StopIteration
                self.i += 1
                data = [numpy.full((2, 3), self.i * 10 + k, numpy.uint8)
                        for k in range(self.batch_size)]
                labels = [numpy.array([self.i * 10 + k], numpy.int32)
                          for k in range(self.batch_size)]
                return data, labels

        pipe = Pipeline(batch_size=4, num_threads=2, device_id=0)
        with pipe:
            data, labels = fn.external_source(
                source=ExternalInputIterator(4), num_outputs=2)
            pipe.set_outputs(fn.cast(data, dtype=types.FLOAT), labels)
        pipe.build()
        for epoch in range(2):
            got = []
            while True:
                try:
                    d, l = pipe.run()
                except StopIteration:
                    break
                self.assertEqual(d.dtype, types.FLOAT)
                self.assertEqual(l.dtype, types.INT32)
                self.assertTrue(numpy.array_equal(
                    d.as_array()[:, 0, 0], l.as_array()[:, 0]))
                got += l.as_array()[:, 0].tolist()
            self.assertEqual(got, [i * 10 + k for i in (1, 2, 3)
                                   for k in range(4)])
            pipe.reset()

        # batch=False: one sample per call, with DALI's SampleInfo; torch
        # tensors accepted; cycle="quiet" never ends the epoch.
        def sample(info):
            return torch.tensor([info.idx_in_epoch, info.idx_in_batch,
                                 info.iteration], dtype=torch.int64)

        def generator():
            yield [numpy.array([1.5], numpy.float32)] * 3

        pipe = Pipeline(batch_size=3, num_threads=1)
        with pipe:
            pipe.set_outputs(
                fn.external_source(source=sample, batch=False),
                fn.external_source(source=generator, cycle="quiet"))
        for step in range(3):
            info, value = pipe.run()
            self.assertEqual(info.as_array().tolist(),
                             [[3 * step + i, i, step] for i in range(3)])
            self.assertEqual(value.as_array().ravel().tolist(), [1.5] * 3)

    def test_what_is_not_there_is_named(self):
        root = self.root
        pipe = Pipeline(batch_size=2, num_threads=1)
        with pipe:
            jpegs, _ = fn.readers.file(file_root=root)
            images = fn.decoders.image(jpegs)
            with self.assertRaisesRegex(ValueError, "'max_size'"):
                fn.resize(images, resize_shorter=10, max_size=20)
            with self.assertRaisesRegex(ValueError, "'roi_start'"):
                fn.resize(images, size=[4, 4], roi_start=[0, 0])
            with self.assertRaisesRegex(NotImplementedError, "fn.rotate"):
                fn.rotate(images, angle=10)
            with self.assertRaisesRegex(TypeError, "arithmetic"):
                images * 2
            with self.assertRaisesRegex(ValueError, "'angle'|crop_pos"):
                fn.crop(images, crop=(4, 4), crop_pos_x=0.1)
            with self.assertRaisesRegex(ValueError, "mirror"):
                fn.crop_mirror_normalize(images, mirror=2)
        with self.assertRaisesRegex(ValueError, "batch_size"):
            Pipeline(num_threads=2)
        with self.assertRaisesRegex(ValueError, "no reader named 'Nope'"):
            pipe.reader_meta("Nope")


if __name__ == "__main__":
    unittest.main()
