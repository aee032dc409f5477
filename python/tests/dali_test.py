"""actorflow.dali run as DALI's users write it: DALI's getting-started
flow, the ResNet-50 training and validation pipelines with
DALIClassificationIterator, external sources fed as DALI's examples feed
them, readers that run on across epochs with full batches, the iterators'
epoch counting under each LastBatchPolicy, and clear errors for what is
not there."""

import io
import math
import os
import shutil
import tarfile
import tempfile
import time
import unittest
import warnings

import sanitizers

sanitizers.preload_if_asked()

import numpy  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

from actorflow.dali import fn, ops, pipeline_def, types  # noqa: E402
from actorflow.dali.pipeline import Pipeline  # noqa: E402
from actorflow.dali.plugin.pytorch import (  # noqa: E402
    DALIClassificationIterator, DALIGenericIterator, DALIRaggedIterator,
    LastBatchPolicy, feed_ndarray, to_torch_type)
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


class HybridTrainPipe(Pipeline):
    """The same training pipeline in DALI's object API (ops and
    define_graph), as DALI's examples before fn wrote it."""

    def __init__(self, batch_size, num_threads, device_id, data_dir, crop,
                 seed):
        super().__init__(batch_size, num_threads, device_id, seed=seed)
        self.input = ops.readers.File(file_root=data_dir, shard_id=0,
                                      num_shards=1, random_shuffle=True,
                                      pad_last_batch=True)
        self.decode = ops.ImageDecoderRandomCrop(
            device="mixed", output_type=types.RGB,
            random_aspect_ratio=[0.8, 1.25], random_area=[0.1, 1.0],
            num_attempts=100)
        self.res = ops.Resize(device="gpu", resize_x=crop, resize_y=crop,
                              interp_type=types.INTERP_TRIANGULAR)
        self.cmnp = ops.CropMirrorNormalize(
            device="gpu", dtype=types.FLOAT, output_layout=types.NCHW,
            crop=(crop, crop), mean=MEAN, std=STD)
        self.coin = ops.random.CoinFlip(probability=0.5)

    def define_graph(self):
        rng = self.coin()
        self.jpegs, self.labels = self.input(name="Reader")
        images = self.decode(self.jpegs)
        images = self.res(images)
        output = self.cmnp(images.gpu(), mirror=rng)
        return [output, self.labels]


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

        # The augmentation gallery's way: turned by a random angle, no
        # resize; each sample keeps its own turned size.
        @pipeline_def
        def rotated_pipeline():
            jpegs, labels = fn.readers.file(file_root=root,
                                            random_shuffle=True,
                                            initial_fill=21)
            images = fn.decoders.image(jpegs, device="cpu")
            return fn.rotate(images, angle=fn.random.uniform(
                range=(-10.0, 10.0))), labels

        pipe = rotated_pipeline(batch_size=8, num_threads=2, device_id=0,
                                seed=1234)
        rotated, labels = pipe.run()
        self.assertEqual(len(rotated), 8)
        self.assertGreater(len(set(rotated.shape())), 1)

    def test_encoded_files_come_out_as_they_are(self):
        # DALI's pipelines may return the reader's bytes themselves (to peek
        # at files, or to decode elsewhere): one sample per file, its length.
        root = self.root

        @pipeline_def
        def encoded_pipeline():
            jpegs, labels = fn.readers.file(file_root=root)
            return jpegs, fn.decoders.image(jpegs), labels

        pipe = encoded_pipeline(batch_size=8, num_threads=2, device_id=0)
        jpegs, images, labels = pipe.run()
        self.assertFalse(jpegs.is_dense_tensor())
        self.assertEqual(jpegs.dtype, types.UINT8)
        for i in range(8):
            with open(self.paths[i], "rb") as f:
                encoded = f.read()
            self.assertEqual(jpegs.shape()[i], (len(encoded),))
            self.assertEqual(numpy.array(jpegs.at(i)).tobytes(), encoded)
            with Image.open(self.paths[i]) as im:
                self.assertEqual(images.at(i).shape, (im.height, im.width, 3))
        self.assertEqual(numpy.array(labels.as_tensor()).ravel().tolist(),
                         self.labels[:8])

    def test_peek_image_shape_and_older_fn_names(self):
        root = self.root

        @pipeline_def
        def peek_pipeline():
            jpegs, labels = fn.readers.file(file_root=root)
            return (fn.peek_image_shape(jpegs),
                    fn.peek_image_shape(jpegs, dtype=types.INT32,
                                        image_type=types.GRAY),
                    fn.shapes(fn.decoders.image(jpegs)))

        pipe = peek_pipeline(batch_size=6, num_threads=2, device_id=0)
        peeked, gray, decoded = pipe.run()
        self.assertEqual(peeked.dtype, types.INT64)
        self.assertEqual(gray.dtype, types.INT32)
        for i in range(6):
            with Image.open(self.paths[i]) as im:
                want = [im.height, im.width, 3]
            self.assertEqual(numpy.array(peeked.at(i)).tolist(), want)
            self.assertEqual(numpy.array(decoded.at(i)).tolist(), want)
            self.assertEqual(numpy.array(gray.at(i)).tolist(), want[:2] + [1])

        # What is not an image is that sample's error, naming the file.
        bad = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, bad)
        os.makedirs(os.path.join(bad, "c"))
        with open(os.path.join(bad, "c", "note.jpg"), "wb") as f:
            f.write(b"not an image at all")

        @pipeline_def
        def bad_pipeline():
            jpegs, _ = fn.readers.file(file_root=bad)
            return fn.peek_image_shape(jpegs)

        with self.assertRaisesRegex(Exception, "note.jpg"):
            bad_pipeline(batch_size=1, num_threads=1, device_id=0).run()

        # DALI's older fn names are the same operators.
        @pipeline_def
        def older_names():
            jpegs, labels = fn.file_reader(file_root=root,
                                           random_shuffle=True)
            images = fn.image_decoder_random_crop(jpegs)
            images = fn.resize(images, resize_x=32, resize_y=32)
            flip = fn.coin_flip(probability=0.5)
            return fn.flip(images, horizontal=flip), labels

        @pipeline_def
        def newer_names():
            jpegs, labels = fn.readers.file(file_root=root,
                                            random_shuffle=True)
            images = fn.decoders.image_random_crop(jpegs)
            images = fn.resize(images, resize_x=32, resize_y=32)
            flip = fn.random.coin_flip(probability=0.5)
            return fn.flip(images, horizontal=flip), labels

        older = older_names(batch_size=8, num_threads=2, device_id=0, seed=7)
        newer = newer_names(batch_size=8, num_threads=2, device_id=0, seed=7)
        for _ in range(2):
            (a, la), (b, lb) = older.run(), newer.run()
            self.assertTrue(numpy.array_equal(a.as_array(), b.as_array()))
            self.assertTrue(numpy.array_equal(la.as_array(), lb.as_array()))

    def test_dali_module_paths(self):
        # Where DALI users' code imports from, with only "nvidia.dali"
        # changed to "actorflow.dali".
        import importlib
        backend = importlib.import_module("actorflow.dali.backend")
        base = importlib.import_module("actorflow.dali.plugin.base_iterator")
        from actorflow import dali
        from actorflow.dali import tensors
        self.assertIs(dali.backend, backend)
        self.assertIs(backend.TensorListCPU, tensors.TensorListCPU)
        self.assertIs(backend.TensorCPU, tensors.TensorCPU)
        self.assertIs(base.LastBatchPolicy, LastBatchPolicy)

    def test_random_shuffle_shuffles_the_whole_list(self):
        # DALI's random_shuffle permutes the whole list (a fixed seed), then
        # a window of initial_fill shuffles on: with one shard too, the
        # first batch is not the first class's files. Each file's label is
        # its own number: class * 16 + index.
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root)
        files = []
        for c in range(4):
            for i in range(16):
                files.append(f"c{c}_{i:02d}.jpg")
                with open(os.path.join(root, files[-1]), "wb") as f:
                    f.write(bytes([c, i]))

        @pipeline_def
        def shuffled(random_shuffle):
            _, labels = fn.readers.file(file_root=root, files=files,
                                        labels=list(range(64)),
                                        random_shuffle=random_shuffle,
                                        initial_fill=4)
            return labels

        for random_shuffle in (True, False):
            pipe = shuffled(batch_size=8, num_threads=1, seed=3,
                            random_shuffle=random_shuffle)
            epoch = [numpy.array(pipe.run()[0].as_tensor()).ravel()
                     for _ in range(8)]
            classes = set((epoch[0] // 16).tolist())
            self.assertEqual(len(classes) > 1, random_shuffle, classes)
            self.assertEqual(sorted(numpy.concatenate(epoch).tolist()),
                             list(range(64)))
        # A file_list elsewhere whose paths are relative to file_root, as
        # DALI reads it (comments and blank lines skipped).
        listing = os.path.join(tempfile.mkdtemp(), "list.txt")
        self.addCleanup(shutil.rmtree, os.path.dirname(listing))
        with open(listing, "w") as f:
            f.write("# path label\n\nc3_15.jpg 7\nc1_02.jpg 9\n")
        pipe = Pipeline(batch_size=2, num_threads=1)
        with pipe:
            data, labels = fn.readers.file(file_root=root, file_list=listing)
            pipe.set_outputs(labels)
        (labels,) = pipe.run()
        self.assertEqual(numpy.array(labels.as_tensor()).ravel().tolist(),
                         [7, 9])
        with open(listing, "w") as f:
            f.write("c3_15.jpg seven\n")
        with Pipeline(batch_size=2, num_threads=1):
            with self.assertRaisesRegex(ValueError, "list.txt:1: expected"):
                fn.readers.file(file_root=root, file_list=listing)

    def test_augmentation_gallery_over_a_caffe_lmdb(self):
        # DALI's augmentation gallery as written there, its imports changed,
        # over a Caffe LMDB holding the test images (record i: file i).
        import lmdb
        from proto import caffe_datum_pb2

        db_folder = os.path.join(self.root, "lmdb")
        sizes = []
        with lmdb.open(db_folder, map_size=64 << 20) as env:
            with env.begin(write=True) as txn:
                for i, path in enumerate(self.paths):
                    with open(path, "rb") as f:
                        datum = caffe_datum_pb2.CaffeDatum(
                            data=f.read(), label=self.labels[i],
                            encoded=True)
                    with Image.open(path) as im:
                        sizes.append((im.size[1], im.size[0]))
                    txn.put(f"{i:08d}".encode(), datum.SerializeToString())

        augmentations = {}
        augmentations["erase"] = lambda images: fn.erase(
            images, anchor=[0.3, 0.2], shape=[0.5, 0.6],
            normalized_anchor=True, normalized_shape=True, axis_names="HW")
        augmentations["slice"] = lambda images: fn.slice(
            images, rel_start=[0.3, 0.2], rel_shape=[0.5, 0.6],
            axis_names="HW")
        augmentations["water"] = lambda images: fn.water(images)
        augmentations["sphere"] = lambda images: fn.sphere(images)
        augmentations["rotate"] = lambda images: fn.rotate(
            images, angle=30, interp_type=types.INTERP_LINEAR, fill_value=0)
        augmentations["warp_affine"] = lambda images: fn.warp_affine(
            images, matrix=[1.0, 0.8, 0.0, 0.0, 1.2, 0.0],
            interp_type=types.INTERP_LINEAR)
        augmentations["brightness_contrast"] = \
            lambda images: fn.brightness_contrast(images, brightness=0.5,
                                                  contrast=1.5)
        augmentations["jpeg compression distortion"] = (
            lambda images: fn.jpeg_compression_distortion(images, quality=5))
        augmentations["hsv"] = lambda images: fn.hsv(images, hue=45.0,
                                                     saturation=0.2)
        augmentations["paste"] = lambda images: fn.paste(
            images, ratio=2.0, fill_value=(55, 155, 155), paste_x=0.1,
            paste_y=0.7)
        augmentations["vertical and horizontal flip"] = lambda images: \
            fn.flip(images, vertical=1, horizontal=1)

        @pipeline_def()
        def augmentation_gallery_pipe(path):
            encoded, labels = fn.readers.caffe(path=path, random_shuffle=True)
            images = fn.decoders.image(encoded, device="mixed",
                                       output_type=types.RGB)
            return tuple([labels, images] +
                         [aug(images) for aug in augmentations.values()])

        pipe = augmentation_gallery_pipe(path=db_folder, batch_size=32,
                                         num_threads=2, device_id=0, seed=10)
        pipe.build()
        pipe_out = pipe.run()
        self.assertEqual(len(pipe_out), 2 + len(augmentations))
        labels, images = pipe_out[0].as_cpu(), pipe_out[1].as_cpu()
        self.assertEqual(numpy.array(labels.as_tensor()).shape, (32, 1))
        out = dict(zip(augmentations, pipe_out[2:]))
        for i in range(32):
            image = images.at(i)
            h, w = image.shape[:2]
            self.assertIn((h, w), sizes)
            for name in ("erase", "water", "sphere", "warp_affine",
                         "brightness_contrast", "hsv",
                         "jpeg compression distortion"):
                self.assertEqual(out[name].at(i).shape, image.shape, name)
            self.assertTrue(numpy.array_equal(
                out["vertical and horizontal flip"].at(i), image[::-1, ::-1]))
            self.assertEqual(out["paste"].at(i).shape, (2 * h, 2 * w, 3))
            def half_up(v):
                return math.floor(v + 0.5)
            y, x = half_up(0.3 * h), half_up(0.2 * w)
            self.assertTrue(numpy.array_equal(
                out["slice"].at(i),
                image[y:y + half_up(0.5 * h), x:x + half_up(0.6 * w)]))
            self.assertGreater(out["rotate"].at(i).shape[0], h)
        # 30 records in a batch of 32: the reader ran on into its next
        # epoch, as DALI's does.
        (meta,) = pipe.reader_meta().values()
        self.assertEqual(meta["epoch_size"], 30)

        # DALI's PyTorch basic example as written there (one pipeline per
        # "GPU", each its shard; a random shorter side; a random crop
        # place), through DALIGenericIterator with its assertions.
        BATCH_SIZE, N, label_range = 4, 2, (0, 999)

        @pipeline_def
        def caffe_pipeline(num_gpus):
            device_id = Pipeline.current().device_id
            jpegs, labels = fn.readers.caffe(
                name='Reader', path=db_folder, random_shuffle=True,
                shard_id=device_id, num_shards=num_gpus)
            images = fn.decoders.image(jpegs, device='mixed')
            images = fn.resize(
                images,
                resize_shorter=fn.random.uniform(range=(256, 480)),
                interp_type=types.INTERP_LINEAR)
            images = fn.crop_mirror_normalize(
                images,
                crop_pos_x=fn.random.uniform(range=(0.0, 1.0)),
                crop_pos_y=fn.random.uniform(range=(0.0, 1.0)),
                dtype=types.FLOAT,
                crop=(227, 227),
                mean=[128., 128., 128.],
                std=[1., 1., 1.])
            return images, labels

        pipes = [caffe_pipeline(batch_size=BATCH_SIZE, num_gpus=N,
                                device_id=device_id, num_threads=2)
                 for device_id in range(N)]
        for pipe in pipes:
            pipe.build()
        dali_iter = DALIGenericIterator(pipes, ['data', 'label'],
                                        reader_name='Reader')
        steps = 0
        for i, data in enumerate(dali_iter):
            for d in data:
                label = d["label"]
                image = d["data"]
                assert (numpy.equal(numpy.mod(label, 1), 0).all())
                assert ((label >= label_range[0]).all())
                assert ((label <= label_range[1]).all())
                self.assertEqual(tuple(image.shape), (BATCH_SIZE, 3, 227, 227))
            steps += 1
        self.assertEqual(steps, 4)  # 15 records a shard, batches of 4

        # actorflow's own API over the same database: labels as stored, in
        # key order, and each image decoded from its record's file.
        from actorflow import fn as own_fn
        from actorflow.pipeline import Pipeline as OwnPipeline
        own = OwnPipeline(batch_size=10, num_threads=1)
        with own:
            encoded, labels = own_fn.readers.caffe(path=db_folder)
            own.set_outputs(own_fn.resize(own_fn.decoders.image(encoded),
                                          size=[8, 8]), labels)
        own.build()
        images, labels = own.run()
        self.assertEqual(numpy.array(labels.as_array()).ravel().tolist(),
                         self.labels[:10])
        self.assertEqual(numpy.array(images.as_array()).shape,
                         (10, 8, 8, 3))

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

    def test_labels_cat_and_stack_as_dali_shapes_them(self):
        # DALI's labels are [1] per sample: cat gives [2], stack [2, 1] or
        # [1, 2].
        root = self.root

        @pipeline_def(batch_size=6, num_threads=2, device_id=None)
        def labels_twice():
            _, labels = fn.readers.file(file_root=root, name="Reader")
            sevens = fn.cast(labels * 0 + 7, dtype=types.INT32)
            return (labels, fn.cat(labels, sevens),
                    fn.stack(labels, labels), fn.stack(labels, labels, axis=1))

        labels, both, rows, columns = labels_twice().run()
        want = labels.as_array()
        self.assertEqual(want.shape, (6, 1))
        self.assertTrue(numpy.array_equal(
            both.as_array(), numpy.concatenate([want, want * 0 + 7], 1)))
        self.assertTrue(numpy.array_equal(rows.as_array(),
                                          numpy.stack([want, want], 1)))
        self.assertTrue(numpy.array_equal(columns.as_array(),
                                          numpy.stack([want, want], 2)))

    def test_python_function(self):
        # DALI's python_function: numpy in and out per sample (labels as
        # [1]), one output or several, run by the pipeline's own threads;
        # the same through ops.PythonFunction.
        root = self.root
        seen_label_shapes = set()

        def invert_and_shape(image):
            return 255 - image, numpy.array(image.shape, numpy.int32)

        def doubled(label):
            seen_label_shapes.add(label.shape)
            return label * 2

        @pipeline_def(batch_size=6, num_threads=2, device_id=None,
                      exec_async=False, exec_pipelined=False)
        def with_functions(use_ops):
            jpegs, labels = fn.readers.file(file_root=root, name="Reader")
            images = fn.resize(fn.decoders.image(jpegs), resize_x=40,
                               resize_y=30)
            if use_ops:
                inverted, shapes = ops.PythonFunction(
                    function=invert_and_shape, num_outputs=2,
                    output_layouts=["HWC", ""])(images)
                twice = ops.PythonFunction(function=doubled)(labels)
            else:
                inverted, shapes = fn.python_function(
                    images, function=invert_and_shape, num_outputs=2,
                    output_layouts=["HWC", ""])
                twice = fn.python_function(labels, function=doubled)
            return images, inverted, shapes, labels, twice

        runs = []
        for use_ops in (False, True):
            pipe = with_functions(use_ops)
            batches = [pipe.run() for _ in range(6)]  # past the epoch
            runs.append([[t.as_array() for t in b] for b in batches])
            for images, inverted, shapes, labels, twice in batches:
                self.assertEqual(inverted.layout(), "HWC")
                self.assertTrue(numpy.array_equal(inverted.as_array(),
                                                  255 - images.as_array()))
                self.assertEqual(shapes.as_array().tolist(), [[30, 40, 3]] * 6)
                self.assertEqual(twice.as_array().dtype, numpy.int32)
                self.assertTrue(numpy.array_equal(twice.as_array(),
                                                  labels.as_array() * 2))
        self.assertEqual(seen_label_shapes, {(1,)})
        for fn_arrays, ops_arrays in zip(*runs):
            for a, b in zip(fn_arrays, ops_arrays):
                self.assertTrue(numpy.array_equal(a, b))

    def test_python_function_errors(self):
        root = self.root

        def refuse_class(label):
            if label[0] == 2:
                raise KeyError(f"label {label[0]} refused")
            return label

        def pipe_of(function, on_error="fail", **kwargs):
            @pipeline_def(batch_size=30, num_threads=2, device_id=None,
                          on_error=on_error)
            def one():
                _, labels = fn.readers.file(file_root=root)
                return fn.python_function(labels, function=function,
                                          **kwargs)
            return one()

        with self.assertRaisesRegex(Exception, "KeyError: 'label 2 refused'"):
            pipe_of(refuse_class).run()
        # Skipped: the batch stays full of the other classes' labels.
        (labels,) = pipe_of(refuse_class, on_error="skip_sample").run()
        self.assertEqual(len(labels), 30)
        self.assertNotIn(2, labels.as_array().ravel().tolist())
        with self.assertRaisesRegex(
                ValueError, "returned <class 'numpy.ndarray'>, not a tuple "
                "or list of 2 values"):
            pipe_of(lambda x: x, num_outputs=2).run()
        with self.assertRaisesRegex(NotImplementedError, "batch_processing"):
            pipe_of(lambda x: x, batch_processing=True)
        with self.assertRaisesRegex(TypeError, "is not callable"):
            pipe_of(5)

    def test_pad_on_a_readers_batches_across_epochs(self):
        # Decoded images of their own sizes, padded per batch: batches of 7
        # from 30 files carry samples over each epoch's turn, and each
        # batch is padded to its own largest image.
        root = self.root

        @pipeline_def(batch_size=7, num_threads=2, device_id=None)
        def decoded():
            jpegs, _ = fn.readers.file(file_root=root, name="Reader")
            images = fn.decoders.image(jpegs)
            return images, fn.pad(images, axis_names="HW")

        pipe = decoded()
        for _ in range(6):
            images, padded = pipe.run()
            h = max(images.at(i).shape[0] for i in range(7))
            w = max(images.at(i).shape[1] for i in range(7))
            self.assertEqual(padded.as_array().shape, (7, h, w, 3))
            for i in range(7):
                image = images.at(i)
                self.assertTrue(numpy.array_equal(
                    padded.at(i)[:image.shape[0], :image.shape[1]], image))
                self.assertEqual(padded.at(i)[image.shape[0]:].sum(), 0)
                self.assertEqual(padded.at(i)[:, image.shape[1]:].sum(), 0)

    def test_crop_out_of_bounds_after_the_decoder(self):
        # Not fused into the decoder (which decodes inside windows only):
        # the decoded image, padded.
        root = self.root

        @pipeline_def(batch_size=4, num_threads=2, device_id=None)
        def padded():
            jpegs, _ = fn.readers.file(file_root=root)
            images = fn.decoders.image(jpegs)
            return images, fn.crop(images, crop=(400, 30), crop_pos_y=0.0,
                                   out_of_bounds_policy="pad")

        images, crops = padded().run()
        for i in range(4):
            image = images.at(i)
            h, w = image.shape[:2]
            self.assertLess(h, 400)
            left = int(numpy.floor(0.5 * (w - 30) + 0.5))  # roundf
            want = numpy.zeros((400, 30, 3), numpy.uint8)
            want[:h] = image[:, left:left + 30]
            self.assertTrue(numpy.array_equal(crops.at(i), want))

    def test_decoders_turn_exif_orientations_upright(self):
        # Photos from phones store an EXIF orientation: DALI's decoders (and
        # PIL's exif_transpose) show them upright; adjust_orientation=False
        # keeps them as stored. Fused decoding (a crop's window decoded
        # alone, the ImageNet crop) gives the unfused chain's pixels.
        from PIL import ImageOps
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root)
        os.makedirs(os.path.join(root, "a"))
        rng = numpy.random.default_rng(8)
        stored = (rng.integers(0, 256, (48, 80, 3)) // 16 * 16).astype(
            numpy.uint8)
        for orientation in range(1, 9):
            exif = Image.Exif()
            exif[0x0112] = orientation
            Image.fromarray(stored).save(
                os.path.join(root, "a", f"{orientation}.jpg"), quality=95,
                exif=exif.tobytes())

        def run(fuse, adjust=True):
            @pipeline_def(batch_size=8, num_threads=2, device_id=None,
                          seed=3, fuse_decode=fuse)
            def oriented():
                jpegs, _ = fn.readers.file(file_root=root)
                images = fn.decoders.image(jpegs,
                                           adjust_orientation=adjust)
                return (images, fn.peek_image_shape(
                            jpegs, adjust_orientation=adjust),
                        fn.crop(images, crop=(30, 30), crop_pos_x=0.3,
                                crop_pos_y=0.6),
                        fn.decoders.image_random_crop(
                            jpegs, adjust_orientation=adjust))
            return [t for t in oriented().run()]

        images, shapes, crops, area = run(fuse=True)
        unfused = run(fuse=False)
        for i in range(8):
            path = os.path.join(root, "a", f"{i + 1}.jpg")
            with Image.open(path) as im:
                want = numpy.asarray(ImageOps.exif_transpose(im)
                                     .convert("RGB"))
            self.assertEqual(images.at(i).shape, want.shape)
            self.assertLessEqual(
                numpy.abs(images.at(i).astype(int) - want).max(), 1)
            self.assertEqual(shapes.at(i).tolist(), list(want.shape))
            self.assertTrue(numpy.array_equal(crops.at(i),
                                              unfused[2].at(i)))
            self.assertTrue(numpy.array_equal(area.at(i), unfused[3].at(i)))
        as_stored = run(fuse=True, adjust=False)
        for i in range(8):
            self.assertEqual(as_stored[0].at(i).shape, (48, 80, 3))
            self.assertEqual(as_stored[1].at(i).tolist(), [48, 80, 3])

    def test_ragged_iterator(self):
        # Boxes per image, as a detection pipeline has them: a list of
        # tensors, a sparse COO tensor, or dense where the shapes agree.
        boxes = [numpy.arange(4 * k, dtype=numpy.float32).reshape(k, 4) + k
                 for k in (1, 3, 2, 4, 3)]
        labels = [numpy.array([k], numpy.int32) for k in range(5)]

        def batches():
            for start in (0, 2):
                yield boxes[start:start + 3][:2], labels[start:start + 2]

        pipe = Pipeline(batch_size=2, num_threads=1)
        with pipe:
            b, y = fn.external_source(source=batches, num_outputs=2)
            pipe.set_outputs(b, b, y)
        it = DALIRaggedIterator(
            pipe, ["list", "coo", "label"],
            output_types=[DALIRaggedIterator.SPARSE_LIST_TAG,
                          DALIRaggedIterator.SPARSE_COO_TAG,
                          DALIRaggedIterator.DENSE_TAG], size=4)
        steps = list(it)
        self.assertEqual(len(steps), 2)
        for step, start in zip(steps, (0, 2)):
            got = step[0]
            self.assertEqual(len(got["list"]), 2)
            for i in range(2):
                self.assertTrue(torch.equal(
                    got["list"][i], torch.from_numpy(boxes[start + i])))
            coo = got["coo"]
            self.assertTrue(coo.is_sparse)
            dense = coo.to_dense()
            largest = max(boxes[start].shape[0], boxes[start + 1].shape[0])
            self.assertEqual(tuple(dense.shape), (2, largest, 4))
            for i in range(2):
                rows = boxes[start + i].shape[0]
                self.assertTrue(torch.equal(
                    dense[i, :rows], torch.from_numpy(boxes[start + i])))
                self.assertEqual(float(dense[i, rows:].abs().sum()), 0.0)
            self.assertEqual(got["label"].tolist(), [[start], [start + 1]])
        with self.assertRaisesRegex(ValueError, "one of dense"):
            DALIRaggedIterator(pipe, ["a", "b", "c"],
                               output_types=["dense", "ragged", "dense"])

    def test_dali_low_level_loop(self):
        # DALI's loop without run(): one schedule_run() prefetches
        # prefetch_queue_depth batches, then each share_outputs() /
        # release_outputs() is followed by one schedule_run(). Batches of 7
        # from 30 files: the loop runs into its third epoch, and its batches
        # are full across the turns, as run()'s are.
        root = self.root

        @pipeline_def(batch_size=7, num_threads=2, device_id=0, seed=4,
                      prefetch_queue_depth=3)
        def shuffled():
            _, labels = fn.readers.file(file_root=root, random_shuffle=True,
                                        name="Reader")
            return labels

        by_run = shuffled()
        want = [by_run.run()[0].as_array().tolist() for _ in range(10)]
        pipe = shuffled()
        pipe.build()
        pipe.schedule_run()
        got = [pipe.share_outputs()[0].as_array().tolist()]
        pipe.release_outputs()
        # Two more are in the making: no schedule_run() needed for them.
        for _ in range(2):
            got.append(pipe.share_outputs()[0].as_array().tolist())
            pipe.release_outputs()
        for _ in range(7):
            pipe.schedule_run()
            got.append(pipe.share_outputs()[0].as_array().tolist())
            pipe.release_outputs()
        self.assertEqual(got, want)
        with self.assertRaisesRegex(RuntimeError, "no batch is held"):
            pipe.release_outputs()
        # schedule_run() then outputs(), each step: the same batches.
        pipe = shuffled()
        got = []
        for _ in range(10):
            pipe.schedule_run()
            got.append(pipe.outputs()[0].as_array().tolist())
        self.assertEqual(got, want)

    def test_a_step_schedules_the_next_before_copying_this_one(self):
        # run() copies its batch out of the pipeline; the next step's batch
        # is scheduled before that copy, so prefetch_queue_depth batches are
        # in the making when run() returns (not one fewer), never more, and
        # the batches are the reader's order all the same.
        root = self.root

        @pipeline_def(batch_size=4, num_threads=2, device_id=None,
                      prefetch_queue_depth=2)
        def labels_only():
            _, labels = fn.readers.file(file_root=root, name="Reader")
            return labels

        pipe = labels_only()
        for step in range(5):
            (labels,) = pipe.run()
            self.assertEqual(numpy.array(labels.as_tensor()).ravel().tolist(),
                             self.labels[4 * step:4 * step + 4])
            want = step + 1 + 2  # taken, then two in the making
            # The schedule task counts a chunk once it has run it, soon
            # after run() fed it: poll, with a deadline.
            deadline = time.monotonic() + 60
            while True:
                issued = pipe.stats()["operators"]["schedule"]["acts"]
                if issued >= want or time.monotonic() > deadline:
                    break
            self.assertEqual(issued, want)

    def test_object_api_pipeline_is_the_fn_pipeline(self):
        # ops + define_graph give, bit for bit, what fn gives.
        by_ops = HybridTrainPipe(batch_size=4, num_threads=2, device_id=0,
                                 data_dir=self.root, crop=32, seed=12)
        by_fn = create_dali_pipeline(
            batch_size=4, num_threads=2, device_id=0, seed=12,
            data_dir=self.root, crop=32, size=40, dali_cpu=True,
            shard_id=0, num_shards=1, is_training=True)
        steps = 0
        for a, b in zip(DALIClassificationIterator(by_ops,
                                                   reader_name="Reader"),
                        DALIClassificationIterator(by_fn,
                                                   reader_name="Reader")):
            self.assertTrue(torch.equal(a[0]["data"], b[0]["data"]))
            self.assertTrue(torch.equal(a[0]["label"], b[0]["label"]))
            steps += 1
        self.assertEqual(steps, 8)  # 30 images, batches of 4, FILL
        # DALI's older examples copy outputs with feed_ndarray.
        images, labels = by_ops.run()
        into = torch.empty(images.as_tensor().shape(),
                           dtype=to_torch_type[images.dtype])
        self.assertEqual((into.shape, into.dtype),
                         ((4, 3, 32, 32), torch.float32))
        self.assertEqual(to_torch_type[labels.dtype], torch.int32)
        self.assertIs(feed_ndarray(images, into), into)
        self.assertTrue(torch.equal(into, torch.from_numpy(
            numpy.asarray(images.as_tensor()))))
        with self.assertRaisesRegex(ValueError, "shapes differ"):
            feed_ndarray(images, torch.empty((4, 3, 32, 31)))
        self.assertEqual(repr(ops.Flip(horizontal=1)),
                         "ops.Flip({'horizontal': 1})")
        with self.assertRaisesRegex(AttributeError,
                                    "ops.VideoReader: DALI's operator"):
            ops.VideoReader(filenames=["a.mp4"])
        with self.assertRaisesRegex(AttributeError, "ops.readers.Video"):
            ops.readers.Video()

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

    def test_state_dict_resumes_exactly(self):
        # A training loop saves the iterator with the model mid-epoch (in
        # torch.save's format) and a new process goes on from it: the
        # batches after the load are those the first iterator gave next.
        def loader():
            pipe = create_dali_pipeline(
                batch_size=4, num_threads=2, device_id=0, seed=9,
                data_dir=self.root, crop=24, size=30, dali_cpu=True,
                shard_id=0, num_shards=1, is_training=True)
            return DALIClassificationIterator(
                pipe, reader_name="Reader", auto_reset=True)

        def take(it, n):
            # Across epochs: StopIteration ends one, auto_reset starts the
            # next.
            steps = []
            while len(steps) < n:
                try:
                    steps.append(next(it)[0])
                except StopIteration:
                    pass
            return steps

        first = loader()
        take(first, 5)  # 8 batches an epoch
        buffer = io.BytesIO()
        torch.save({"loader": first.state_dict()}, buffer)
        want = take(first, 12)  # into the next epoch
        buffer.seek(0)
        second = loader()
        second.load_state_dict(torch.load(buffer)["loader"])
        got = take(second, 12)
        self.assertEqual(len(got), 12)
        for a, b in zip(want, got):
            self.assertTrue(torch.equal(a["data"], b["data"]))
            self.assertTrue(torch.equal(a["label"], b["label"]))
        with self.assertRaisesRegex(RuntimeError, "before"):
            second.load_state_dict(first.state_dict())
        with self.assertRaisesRegex(ValueError, "not a state_dict"):
            loader().load_state_dict({"counter": 3})

        # A state_dict() of the earlier format (a tar of each checkpoint
        # directory beside the carried samples) still loads.
        older = loader()
        take(older, 5)
        pipelines = []
        for pipe in older._pipes:
            with tempfile.TemporaryDirectory() as directory:
                path = pipe.checkpoint(directory)
                buffer = io.BytesIO()
                with tarfile.open(fileobj=buffer, mode="w") as tar:
                    tar.add(path, arcname="checkpoint")
            pipelines.append({"checkpoint": buffer.getvalue(),
                              "carry": pipe._carry})
        state = {"format": "actorflow.dali iterator 1",
                 "pipelines": pipelines, "counter": older._counter,
                 "ahead": older._ahead, "ended": older._ended}
        want = take(older, 12)
        third = loader()
        third.load_state_dict(state)
        for a, b in zip(want, take(third, 12)):
            self.assertTrue(torch.equal(a["data"], b["data"]))

    def test_dali_checkpointing_api(self):
        # DALI's checkpointing: checkpoint() returns bytes (also written to
        # a file), checkpoint= takes them (or the file); a batch size that
        # does not divide the epoch leaves samples carried over, random
        # angles and shuffling carry their draws.
        root = self.root

        @pipeline_def(enable_checkpointing=True)
        def rotated(checkpointed=None):
            jpegs, labels = fn.readers.file(file_root=root,
                                            random_shuffle=True,
                                            name="Reader")
            images = fn.resize(fn.decoders.image(jpegs), size=(20, 20))
            angles = fn.random.uniform(range=(-30.0, 30.0))
            return fn.rotate(images, angle=angles, keep_size=True), labels

        def make(**kwargs):
            return rotated(batch_size=7, num_threads=2, device_id=0,
                           seed=12, **kwargs)

        def take(pipe, n):
            return [tuple(numpy.array(o.as_array()) for o in pipe.run())
                    for _ in range(n)]

        live = make()
        # 30 files, 7 a batch: the 5th batch ends the epoch with 2 and
        # takes 5 of the next epoch's first 7; 2 are carried over.
        take(live, 5)
        saved = live.checkpoint()
        self.assertIsInstance(saved, bytes)
        where = os.path.join(tempfile.mkdtemp(), "checkpoint_file.cpt")
        self.addCleanup(shutil.rmtree, os.path.dirname(where))
        written = live.checkpoint(filename=where)
        want = take(live, 9)  # on into the next epochs
        with open(where, "rb") as f:
            from_file = f.read()
        self.assertEqual(from_file, written)
        for restored in (make(checkpoint=saved), make(checkpoint=from_file),
                         make(checkpoint=where)):
            restored.build()
            got = take(restored, 9)
            for (a, la), (b, lb) in zip(want, got):
                self.assertTrue(numpy.array_equal(a, b))
                self.assertTrue(numpy.array_equal(la, lb))
        with self.assertRaisesRegex(ValueError, "no checkpoint"):
            make(checkpoint=b"not a checkpoint")

        # The iterators' checkpoints(): new pipelines made from them, under
        # a new iterator, go on where the old one was, epoch count included.
        def iterator(pipes):
            return DALIGenericIterator(pipes, ["data", "label"],
                                       reader_name="Reader",
                                       last_batch_policy=LastBatchPolicy.DROP)

        def steps(it):
            return [step[0]["label"].clone() for step in it]

        first = iterator([make()])
        for _ in range(2):
            next(first)
        checkpoints = first.checkpoints()
        rest = steps(first)
        self.assertEqual(len(rest), 4 - 2)  # 30 // 7 batches, 2 taken
        second = iterator([make(checkpoint=checkpoints[0])])
        again = steps(second)
        self.assertEqual(len(again), len(rest))
        for a, b in zip(rest, again):
            self.assertTrue(torch.equal(a, b))
        # The next epochs go on alike too.
        first.reset()
        second.reset()
        for a, b in zip(steps(first), steps(second)):
            self.assertTrue(torch.equal(a, b))

    def test_tfrecord_reader(self):
        # TFRecords written here as TensorFlow frames them (the checksums
        # left 0: they are skipped), each record a tf.train.Example; DALI's
        # ResNet-50 TFRecord flow reads them through fn.readers.tfrecord.
        import struct
        from proto import tf_example_pb2 as tfpb
        import actorflow.dali.tfrecord as tfrec

        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        files = []
        for part in range(2):
            path = os.path.join(tmp, f"train-{part}.tfrecord")
            files.append(path)
            with open(path, "wb") as out:
                for i in range(part * 15, part * 15 + 15):
                    example = tfpb.TfExample()
                    feature = example.features.feature
                    with open(self.paths[i], "rb") as f:
                        feature["image/encoded"].bytes_list.value.append(
                            f.read())
                    feature["image/class/label"].int64_list.value.append(
                        self.labels[i] + 1)
                    if i % 3:  # else missing: an empty vector
                        feature["image/object/bbox/xmin"].float_list \
                            .value.extend([0.25 * k for k in range(i % 3)])
                    data = example.SerializeToString()
                    out.write(struct.pack("<Q", len(data)) + b"\0" * 4 +
                              data + b"\0" * 4)

        @pipeline_def
        def tfrecord_pipe(num_shards, shard_id, dense_only=False):
            inputs = fn.readers.tfrecord(
                path=files, index_path=[p + ".idx" for p in files],
                features={
                    "image/encoded": tfrec.FixedLenFeature((), tfrec.string,
                                                           ""),
                    "image/class/label": tfrec.FixedLenFeature(
                        [1], tfrec.int64, -1),
                    "image/object/bbox/xmin": tfrec.VarLenFeature(
                        tfrec.float32, 0.0),
                    "image/class/text": tfrec.FixedLenFeature(
                        [], tfrec.string, ""),
                },
                shard_id=shard_id, num_shards=num_shards, name="Reader")
            images = fn.decoders.image(inputs["image/encoded"],
                                       output_type=types.RGB)
            images = fn.resize(images, resize_x=16, resize_y=16)
            if dense_only:
                return images, inputs["image/class/label"]
            return (images, inputs["image/class/label"],
                    inputs["image/object/bbox/xmin"],
                    inputs["image/class/text"])

        pipe = tfrecord_pipe(batch_size=5, num_threads=2, device_id=0,
                             num_shards=1, shard_id=0)
        self.assertEqual(pipe.epoch_size("Reader"), 30)
        for step in range(6):
            images, labels, xmin, text = pipe.run()
            self.assertEqual(images.as_array().shape, (5, 16, 16, 3))
            self.assertEqual(labels.dtype, types.INT64)
            for j in range(5):
                i = step * 5 + j
                self.assertEqual(labels.at(j).tolist(), [self.labels[i] + 1])
                self.assertEqual(xmin.at(j).tolist(),
                                 [0.25 * k for k in range(i % 3)])
                self.assertEqual(text.at(j).size, 0)  # missing: empty
        # The same records through DALI's iterator, shard by shard.
        seen = []
        for shard in range(2):
            pipe = tfrecord_pipe(batch_size=5, num_threads=1, device_id=0,
                                 num_shards=2, shard_id=shard,
                                 dense_only=True)
            it = DALIGenericIterator(pipe, ["x", "y"], reader_name="Reader")
            for step in it:
                seen += step[0]["y"].ravel().tolist()
        self.assertEqual(sorted(seen), sorted(v + 1 for v in self.labels))
        # A record cut short, and a feature of another kind, are named.
        with open(os.path.join(tmp, "cut.tfrecord"), "wb") as out:
            out.write(struct.pack("<Q", 1000) + b"\0" * 20)
        with Pipeline(batch_size=2, num_threads=1) as bad:
            bad.set_outputs(fn.readers.tfrecord(
                path=os.path.join(tmp, "cut.tfrecord"), index_path=None,
                features={"x": tfrec.FixedLenFeature([1], tfrec.int64, 0)}
            )["x"])
        with self.assertRaisesRegex(ValueError, "cut.tfrecord': the record "
                                    "at byte 0 claims 1000 bytes"):
            bad.build()
        with Pipeline(batch_size=2, num_threads=1) as bad:
            bad.set_outputs(fn.readers.tfrecord(
                path=files[0], index_path=None,
                features={"image/class/label": tfrec.FixedLenFeature(
                    [1], tfrec.float32, 0.0)})["image/class/label"])
        with self.assertRaisesRegex(ValueError, r"train-0.tfrecord@0'\): "
                                    "feature 'image/class/label' is not a "
                                    "float list"):
            bad.run()

    def test_mxnet_recordio_reader(self):
        # RecordIO written here as MXNet's im2rec frames it (dmlc's
        # recordio: a record holding the magic number is split into parts
        # at it); DALI's MXNet ResNet-50 flow reads it through
        # fn.readers.mxnet. Record 4's image gets the magic appended (read
        # back whole from its parts), record 7 carries three labels.
        import struct
        magic = struct.pack("<I", 0xced7230a)

        def frame(flag, part):
            pad = b"\0" * (-len(part) % 4)
            return magic + struct.pack("<I", flag << 29 | len(part)) + \
                part + pad

        def record(data):
            parts = data.split(magic)
            if len(parts) == 1:
                return frame(0, data)
            return b"".join(frame(1 if k == 0 else
                                  3 if k == len(parts) - 1 else 2, p)
                            for k, p in enumerate(parts))

        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        images, labels, files = [], [], []
        for part in range(2):
            path = os.path.join(tmp, f"train-{part}.rec")
            files.append(path)
            with open(path, "wb") as out:
                for i in range(part * 10, part * 10 + 10):
                    with open(self.paths[i], "rb") as f:
                        image = f.read()
                    if i == 4:
                        image += magic + b"tail"  # after the JPEG's end
                    want = [float(self.labels[i])] if i != 7 else \
                        [1.5, 2.5, 3.5]
                    header = struct.pack(
                        "<IfQQ", 0 if i != 7 else 3,
                        want[0] if i != 7 else 0.0, i, 0)
                    extra = b"" if i != 7 else struct.pack("<3f", *want)
                    out.write(record(header + extra + image))
                    images.append(image)
                    labels.append(want)

        @pipeline_def
        def mxnet_pipe(shard_id, num_shards):
            jpegs, labels = fn.readers.mxnet(
                path=files, index_path=[p[:-4] + ".idx" for p in files],
                shard_id=shard_id, num_shards=num_shards, name="Reader")
            decoded = fn.resize(fn.decoders.image(jpegs), resize_x=8,
                                resize_y=8)
            return jpegs, labels, decoded

        pipe = mxnet_pipe(batch_size=5, num_threads=2, device_id=0,
                          shard_id=0, num_shards=1)
        self.assertEqual(pipe.epoch_size("Reader"), 20)
        for step in range(4):
            jpegs, got, decoded = pipe.run()
            self.assertEqual(got.dtype, types.FLOAT)
            self.assertEqual(decoded.as_array().shape, (5, 8, 8, 3))
            for j in range(5):
                i = step * 5 + j
                self.assertEqual(bytes(jpegs.at(j)), images[i])
                self.assertEqual(got.at(j).tolist(), labels[i])
        seen = []
        for shard in range(2):
            pipe = mxnet_pipe(batch_size=5, num_threads=1, device_id=0,
                              shard_id=shard, num_shards=2)
            for step in range(2):
                jpegs = pipe.run()[0]
                seen += [bytes(jpegs.at(j)) for j in range(5)]
        self.assertEqual(sorted(seen), sorted(images))
        self.assertIs(ops.MXNetReader(path=files)._call, fn.readers.mxnet)
        # A file that is no RecordIO, and one cut short, are named.
        for name, data in (("junk.rec", b"not a record"),
                           ("cut.rec", record(b"\0" * 40)[:30])):
            with open(os.path.join(tmp, name), "wb") as out:
                out.write(data)
            with Pipeline(batch_size=2, num_threads=1) as bad:
                bad.set_outputs(*fn.readers.mxnet(
                    path=os.path.join(tmp, name)))
            with self.assertRaisesRegex(ValueError, name):
                bad.build()

    def test_numpy_reader(self):
        # DALI's fn.readers.numpy over files numpy.save wrote (one in
        # Fortran order, one in format version 2), of their own shapes.
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root)
        rng = numpy.random.default_rng(8)
        arrays = [rng.integers(-1000, 1000, (3 + i % 4, 5, 2),
                               dtype=numpy.int32) for i in range(10)]
        os.makedirs(os.path.join(root, "sub"))
        for i, a in enumerate(arrays):
            # Nested files count; other names do not.
            path = os.path.join(root, "sub" if i >= 6 else "",
                                f"{i:02d}.npy")
            if i == 2:
                numpy.save(path, numpy.asfortranarray(a))
            elif i == 3:
                with open(path, "wb") as f:
                    numpy.lib.format.write_array(f, a, version=(2, 0))
            else:
                numpy.save(path, a)
        with open(os.path.join(root, "notes.txt"), "w") as f:
            f.write("not an array")
        order = sorted(
            [os.path.join(root, f"{i:02d}.npy") for i in range(6)] +
            [os.path.join(root, "sub", f"{i:02d}.npy") for i in range(6, 10)])
        want = [arrays[int(os.path.basename(p)[:2])] for p in order]

        @pipeline_def
        def arrays_pipe(shard_id=0, num_shards=1):
            return fn.readers.numpy(file_root=root, shard_id=shard_id,
                                    num_shards=num_shards, name="Reader")

        pipe = arrays_pipe(batch_size=5, num_threads=2, seed=1)
        for step in range(2):
            (out,) = pipe.run()
            self.assertEqual(out.dtype, types.INT32)
            self.assertFalse(out.is_dense_tensor())
            for j in range(5):
                self.assertTrue(numpy.array_equal(out.at(j),
                                                  want[step * 5 + j]))
        self.assertEqual(pipe.epoch_size("Reader"), 10)
        # Two shards together read every file once.
        seen = []
        for shard in range(2):
            pipe = arrays_pipe(batch_size=5, num_threads=1, seed=1,
                               shard_id=shard, num_shards=2)
            (out,) = pipe.run()
            seen += [out.at(j).tobytes() for j in range(len(out))]
        self.assertEqual(sorted(seen), sorted(a.tobytes() for a in arrays))
        # files= relative to file_root; one shape, so a dense batch.
        pipe = Pipeline(batch_size=2, num_threads=1)
        with pipe:
            pipe.set_outputs(fn.readers.numpy(file_root=root,
                                              files=["04.npy", "00.npy"]))
        (out,) = pipe.run()
        self.assertTrue(out.is_dense_tensor())
        self.assertTrue(numpy.array_equal(out.as_array()[0], arrays[4]))
        # Files that disagree, and what is not here, are named.
        numpy.save(os.path.join(root, "sub", "odd.npy"),
                   numpy.zeros((2, 2), numpy.float32))
        with Pipeline(batch_size=2, num_threads=1):
            with self.assertRaisesRegex(ValueError, "odd.npy' holds float32"):
                fn.readers.numpy(file_root=root)
            with self.assertRaisesRegex(ValueError, "roi_start"):
                fn.readers.numpy(file_root=root, roi_start=[0, 0])
            with self.assertRaisesRegex(ValueError, "notes.txt"):
                fn.readers.numpy(file_root=root, file_filter="*.txt")

    def test_webdataset_shards(self):
        # Two tar shards of (jpg, cls, and sometimes json) samples, one key
        # longer than a ustar name holds (a pax header).
        tmp = tempfile.mkdtemp()
        try:
            shards = []
            for s in range(2):
                shard = os.path.join(tmp, f"shard{s}.tar")
                with tarfile.open(shard, "w") as tar:
                    for i, path in enumerate(self.paths[s * 15:s * 15 + 15]):
                        key = f"part{s}/" + ("k" * 120 if i == 0 else
                                             f"sample{i:03d}")
                        tar.add(path, arcname=key + ".jpg")
                        label = numpy.array([s * 15 + i], numpy.int64)
                        for ext, data in (("cls", label.tobytes()),
                                          ("json", b"{}")):
                            if ext == "json" and i % 2:
                                continue
                            info = tarfile.TarInfo(f"{key}.{ext}")
                            info.size = len(data)
                            tar.addfile(info, io.BytesIO(data))
                shards.append(shard)
            root = self.root

            @pipeline_def(batch_size=6, num_threads=2, device_id=0)
            def from_tars(behavior):
                jpg, cls, meta = fn.readers.webdataset(
                    paths=shards, ext=["jpg", "cls", "json"],
                    dtypes=[types.UINT8, types.INT64, types.UINT8],
                    missing_component_behavior=behavior, name="Reader")
                return (fn.resize(fn.decoders.image(jpg), size=(40, 50)),
                        cls, meta)

            @pipeline_def(batch_size=6, num_threads=2, device_id=0)
            def from_files():
                jpg, _ = fn.readers.file(file_root=root)
                return fn.resize(fn.decoders.image(jpg), size=(40, 50))

            pipe = from_tars("")
            self.assertEqual(pipe.epoch_size("Reader"), 30)
            files = from_files()
            for step in range(5):
                images, cls, meta = pipe.run()
                (want,) = files.run()
                self.assertTrue(numpy.array_equal(images.as_array(),
                                                  want.as_array()))
                self.assertEqual(cls.as_array().ravel().tolist(),
                                 list(range(6 * step, 6 * step + 6)))
                # "empty": a sample without json has an empty component.
                self.assertEqual([meta.at(i).size for i in range(6)],
                                 [0 if i % 15 % 2 else 2
                                  for i in range(6 * step, 6 * step + 6)])
            # Decoded without a resize, each image its own size (DALI's
            # webdataset example): the box from the members' headers.
            @pipeline_def(batch_size=6, num_threads=2, device_id=0)
            def decoded():
                img_raw, cls = fn.readers.webdataset(
                    paths=shards, ext=["jpg", "cls"],
                    missing_component_behavior="error")
                img = fn.decoders.image(img_raw, output_type=types.RGB)
                return img, cls

            images, cls = decoded().run()
            for i in range(6):
                with Image.open(self.paths[i]) as im:
                    self.assertEqual(images.at(i).shape,
                                     (im.size[1], im.size[0], 3))
            skip = from_tars("skip")
            self.assertEqual(skip.epoch_size("Reader"), 16)
            with self.assertRaisesRegex(ValueError, "has no 'json' component"):
                from_tars("error").build()
            with open(os.path.join(tmp, "broken.tar"), "wb") as f:
                f.write(b"x" * 2048)

            @pipeline_def(batch_size=2, num_threads=1, device_id=0)
            def broken():
                return fn.readers.webdataset(
                    paths=[os.path.join(tmp, "broken.tar")], ext=["jpg"])

            with self.assertRaisesRegex(ValueError, "no tar header at byte 0"):
                broken().build()
        finally:
            shutil.rmtree(tmp)

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
        # Every step kept, more steps than the batch stage has registers:
        # none is written over, and each batch inside the first epoch is
        # the batch stage's buffer itself, handed over (a capsule owns its
        # memory), not a copy of it. (The eighth straddles two epochs of
        # the 30 files and is put together from both.)
        pipe = images()
        steps = [pipe.run()[0] for _ in range(8)]
        arrays = [step.as_array() for step in steps]
        copies = [numpy.array(a) for a in arrays]
        for _ in range(4):
            pipe.run()
        for array, copy in zip(arrays, copies):
            self.assertTrue(numpy.array_equal(array, copy))
        for array in arrays[:30 // 4]:
            self.assertEqual(type(array.base).__name__, "PyCapsule")
        self.assertEqual(len({a.ctypes.data for a in arrays}), len(arrays))

    def test_crop_positions_as_dali_places_them(self):
        # DALI's anchor: roundf(crop_pos * (size - crop size)), halves away
        # from zero. A 24 x 25 image and a 15 x 16 window leave 9 rows and
        # 9 columns of room; the centre (0.5) is row 5 and column 5 (4.5
        # rounded up), where a floor would give 4.
        root = self.root
        places = [(0.5, 0.5), (0.0, 1.0), (0.3, 0.75)]

        @pipeline_def(batch_size=4, num_threads=2, device_id=0)
        def crops():
            jpegs, _ = fn.readers.file(file_root=root)
            images = fn.resize(fn.decoders.image(jpegs), size=[24, 25])
            outs = [images]
            for y, x in places:
                outs.append(fn.crop(images, crop=(15, 16), crop_pos_y=y,
                                    crop_pos_x=x))
            outs.append(fn.crop_mirror_normalize(
                images, crop=(15, 16), crop_pos_y=0.3, crop_pos_x=0.75,
                mean=MEAN, std=STD))
            return tuple(outs)

        images, *cropped, normalized = crops().run()
        base = images.as_array()
        for (y, x), out in zip(places, cropped):
            top = int(numpy.floor(numpy.float32(y) * 9 + numpy.float32(0.5)))
            left = int(numpy.floor(numpy.float32(x) * 9 + numpy.float32(0.5)))
            self.assertTrue(numpy.array_equal(
                out.as_array(), base[:, top:top + 15, left:left + 16]),
                (y, x, top, left))
        window = base[:, 3:18, 7:23].astype(numpy.float64)  # 2.7, 6.75
        ref = ((window - MEAN) / STD).transpose(0, 3, 1, 2)
        numpy.testing.assert_allclose(normalized.as_array(), ref, rtol=1e-5,
                                      atol=1e-4)

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

        @pipeline_def(batch_size=4, num_threads=1, device_id=0)
        def hwc():
            jpegs, _ = fn.readers.file(file_root=root)
            images = fn.resize(fn.decoders.image(jpegs), size=[24, 24])
            return fn.crop_mirror_normalize(
                images, crop=(16, 16), mean=MEAN, std=STD, scale=2.0,
                shift=3.0, output_layout="HWC")

        (hwc_out,) = hwc().run()
        self.assertEqual(hwc_out.layout(), "HWC")
        base = images.as_array().astype(numpy.float64)
        self.assertTrue(numpy.array_equal(flipped.as_array(),
                                          base[:, :, ::-1].astype(
                                              numpy.uint8)))
        window = base[:, 4:20, 4:20, :]
        ref = ((window - MEAN) / STD * 2.0 + 3.0).transpose(0, 3, 1, 2)
        numpy.testing.assert_allclose(outs["0"], ref, rtol=1e-5, atol=1e-4)
        self.assertTrue(numpy.array_equal(hwc_out.as_array(),
                                          outs["0"].transpose(0, 2, 3, 1)))
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

        # DALI's example itself: JPEG files read by an iterator class
        # (numpy bytes, torch uint8 labels), decoded and enhanced without a
        # resize, so each image keeps its own size; the box comes from the
        # first batch's headers (twice its largest side).
        paths, labels_of_paths = self.paths[:10], self.labels[:10]

        class JpegIterator:
            def __init__(self, batch_size):
                self.batch_size = batch_size

            def __iter__(self):
                self.i = 0
                return self

            def __next__(self):
                if self.i >= len(paths):
                    self.__iter__()
                    raise StopIteration
                batch, labels = [], []
                for _ in range(self.batch_size):
                    k = self.i % len(paths)
                    batch.append(numpy.fromfile(paths[k], dtype=numpy.uint8))
                    labels.append(torch.tensor([labels_of_paths[k]],
                                               dtype=torch.uint8))
                    self.i += 1
                return batch, labels

        pipe = Pipeline(batch_size=4, num_threads=2, device_id=0)
        with pipe:
            jpegs, labels = fn.external_source(source=JpegIterator(4),
                                               num_outputs=2,
                                               dtype=types.UINT8)
            decode = fn.decoders.image(jpegs, device="mixed",
                                       output_type=types.RGB)
            enhance = fn.brightness_contrast(decode, contrast=2)
            pipe.set_outputs(enhance, labels)
        pipe.build()
        for step in range(3):
            images, labels = pipe.run()
            for j in range(4):
                k = (step * 4 + j) % 10
                with Image.open(paths[k]) as im:
                    w, h = im.size
                self.assertEqual(images.as_cpu().at(j).shape, (h, w, 3))
                self.assertEqual(labels.at(j).tolist(), [labels_of_paths[k]])
        # An image larger than the first batch's box: an error naming both.
        def encoded(h, w):
            out = io.BytesIO()
            Image.fromarray(numpy.zeros((h, w, 3), numpy.uint8)).save(
                out, "JPEG")
            return numpy.frombuffer(out.getvalue(), numpy.uint8)

        fed = iter([[encoded(50, 60)] * 2, [encoded(300, 200)] * 2])
        # One batch in flight: the second is pulled by the second run().
        pipe = Pipeline(batch_size=2, num_threads=1, prefetch_queue_depth=1)
        with pipe:
            pipe.set_outputs(fn.decoders.image(fn.external_source(
                source=lambda: next(fed), shape=[4096])))
        self.assertEqual(pipe.run()[0].shape(), [(50, 60, 3)] * 2)
        with self.assertRaisesRegex(ValueError, r"uint8 \[300, 200, 3\], "
                                    r"which does not fit the batch's uint8 "
                                    r"\[120, 120, 3\]"):
            pipe.run()
        pipe = Pipeline(batch_size=2, num_threads=1)
        with pipe:
            pipe.set_outputs(fn.decoders.image(fn.external_source(name="x")))
        pipe.build()
        with self.assertRaisesRegex(ValueError, "were fed nothing"):
            pipe.run()

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

    def test_parallel_external_source(self):
        # DALI's parallel source: per-sample callbacks on py_num_workers
        # workers; the batches in order, as the serial source gives them,
        # and a StopIteration from any sample ends the epoch.
        import threading
        callers = set()

        def sample(info):
            if info.idx_in_epoch >= 10:
                raise StopIteration
            callers.add(threading.current_thread().name)
            return numpy.full((2, 3), info.idx_in_epoch * 10 + info.epoch_idx,
                              numpy.int32)

        def epochs(parallel):
            pipe = Pipeline(batch_size=5, num_threads=2, py_num_workers=3,
                            py_start_method="spawn")
            with pipe:
                pipe.set_outputs(fn.external_source(
                    source=sample, batch=False, parallel=parallel,
                    no_copy=True, prefetch_queue_depth=2))
            got = []
            for _ in range(2):
                while True:
                    try:
                        got.append(pipe.run()[0].as_array().tolist())
                    except StopIteration:
                        break
                pipe.reset()
            pipe.close()
            return got

        serial = epochs(False)
        self.assertEqual(callers, {threading.current_thread().name})
        callers.clear()
        self.assertEqual(epochs(True), serial)
        self.assertEqual(len(serial), 4)  # 2 batches per epoch
        self.assertTrue(all(name.startswith("py_worker") for name in callers))
        self.assertEqual(serial[2][0], [[1] * 3] * 2)  # the second epoch

    def test_repeat_last(self):
        # Fed once (before the first run too), repeated until fed again;
        # nothing fed is an error naming the source.
        def batch(value):
            return [numpy.full((2,), value, numpy.int32)] * 2

        pipe = Pipeline(batch_size=2, num_threads=1, prefetch_queue_depth=1)
        with pipe:
            x = fn.external_source(name="x", repeat_last=True)
            y = fn.external_source(name="y")
            pipe.set_outputs(x, y + 0)

        def step(y_value):
            pipe.feed_input("y", batch(y_value))
            xs, ys = pipe.run()
            return int(xs.as_array()[0, 0]), int(ys.as_array()[0, 0])

        with self.assertRaisesRegex(ValueError, "'x' .*nothing fed yet"):
            step(0)
        pipe = Pipeline(batch_size=2, num_threads=1, prefetch_queue_depth=1)
        with pipe:
            x = fn.external_source(name="x", repeat_last=True)
            y = fn.external_source(name="y")
            pipe.set_outputs(x, y + 0)
        pipe.feed_input("x", batch(7))
        self.assertEqual([step(v) for v in range(3)],
                         [(7, 0), (7, 1), (7, 2)])
        pipe.feed_input("x", batch(8))
        self.assertEqual([step(v) for v in range(3, 5)], [(8, 3), (8, 4)])

    def test_resize_sizes_as_dali_gives_them(self):
        # Each image's output size by DALI's rule for its arguments
        # (written here from DALI's documentation of mode and max_size),
        # through the decoder, with decoding fused where it can be.
        def dali_size(h, w, y=0.0, x=0.0, mode="default", limit=(0, 0)):
            size, asked = [float(h), float(w)], [y, x]
            given = [a > 0 for a in asked]
            if mode in ("default", "stretch"):
                out = [a if g else s for a, g, s in zip(asked, given, size)]
                if mode == "default" and given[0] != given[1]:
                    k = 0 if given[0] else 1
                    out[1 - k] = size[1 - k] * asked[k] / size[k]
                out = [min(o, m) if m else o for o, m in zip(out, limit)]
            else:
                scales = [a / s for a, s, g in zip(asked, size, given) if g]
                scale = max(scales) if mode == "not_smaller" else min(scales)
                for m, s in zip(limit, size):
                    if m:
                        scale = min(scale, m / s)
                out = [s * scale for s in size]
            return tuple(max(1, math.floor(o + 0.5)) for o in out) + (3,)

        cases = [
            (dict(resize_x=20), dict(x=20)),
            (dict(resize_y=30, mode="stretch"), dict(y=30, mode="stretch")),
            (dict(resize_longer=25), dict(y=25, x=25, mode="not_larger")),
            (dict(resize_shorter=40, max_size=50),
             dict(y=40, x=40, mode="not_smaller", limit=(50, 50))),
            (dict(size=(0, 12), mode="not_larger"),
             dict(x=12, mode="not_larger")),
            (dict(resize_x=16, resize_y=16, mode="not_smaller",
                  max_size=(0, 20)),
             dict(y=16, x=16, mode="not_smaller", limit=(0, 20))),
            # The validation recipe's form: a shorter-side resize, fused.
            (dict(size=24, mode="not_smaller"),
             dict(y=24, x=24, mode="not_smaller")),
            (dict(size=(30, 40), max_size=(25, 0)), dict(y=25, x=40)),
        ]
        root = self.root
        pipe = Pipeline(batch_size=6, num_threads=2, seed=1)
        with pipe:
            jpegs, _ = fn.readers.file(file_root=root)
            images = fn.decoders.image(jpegs)
            pipe.set_outputs(*[fn.resize(images, **args)
                               for args, _ in cases])
        outputs = pipe.run()
        for (args, rule), out in zip(cases, outputs):
            for i in range(6):
                with Image.open(self.paths[i]) as im:
                    w, h = im.size
                self.assertEqual(out.at(i).shape, dali_size(h, w, **rule),
                                 f"{args} of {h} x {w}")
        # A fixed size is one dense batch.
        self.assertTrue(outputs[-1].is_dense_tensor())

    def test_resize_sides_drawn_per_sample(self):
        # The scale augmentation: resize_shorter=fn.random.uniform. One
        # random node given to two resizes is one value per sample.
        root = self.root

        @pipeline_def
        def scaled():
            jpegs, _ = fn.readers.file(file_root=root)
            images = fn.decoders.image(jpegs)
            side = fn.random.uniform(range=(20, 40))
            return (fn.resize(images, resize_shorter=side),
                    fn.resize(images, resize_x=side, resize_y=16),
                    fn.resize(images, resize_shorter=side, antialias=False))

        def shapes(threads):
            pipe = scaled(batch_size=10, num_threads=threads, seed=4)
            return [[out.shape() for out in pipe.run()] for _ in range(2)]

        runs = shapes(1)
        sides = set()
        for step, (short, wide, plain) in enumerate(runs):
            for i, (a, b, c) in enumerate(zip(short, wide, plain)):
                with Image.open(self.paths[step * 10 + i]) as im:
                    w, h = im.size
                side = min(a[:2])
                sides.add(side)
                self.assertTrue(20 <= side <= 40, a)
                # The other side by DALI's rule for some value that rounds
                # to this side.
                scale = side / min(h, w)
                self.assertLessEqual(
                    abs(max(a[:2]) - max(h, w) * scale), max(h, w) / min(h, w))
                self.assertEqual(b, (16, side, 3))
                self.assertEqual(c, a)
        self.assertGreater(len(sides), 5)
        # The same seed, the same draws, whatever the threads.
        self.assertEqual(shapes(3), runs)
        with Pipeline(batch_size=2, num_threads=1):
            with self.assertRaisesRegex(ValueError, "a per-sample side"):
                fn.resize(fn.external_source(name="x"),
                          resize_shorter=fn.random.coin_flip())

    def test_what_is_not_there_is_named(self):
        root = self.root
        pipe = Pipeline(batch_size=2, num_threads=1)
        with pipe:
            jpegs, _ = fn.readers.file(file_root=root)
            images = fn.decoders.image(jpegs)
            with self.assertRaisesRegex(ValueError, "mode 'stretch' with "
                                        "resize_shorter"):
                fn.resize(images, resize_shorter=10, mode="stretch")
            with self.assertRaisesRegex(ValueError, "give one of"):
                fn.resize(images, resize_x=10, resize_longer=20)
            with self.assertRaisesRegex(ValueError, "mode 'fit'"):
                fn.resize(images, resize_x=10, mode="fit")
            with self.assertRaisesRegex(ValueError, "'roi_start'"):
                fn.resize(images, size=[4, 4], roi_start=[0, 0])
            with self.assertRaisesRegex(NotImplementedError,
                                        "fn.readers.caffe2"):
                fn.readers.caffe2(path=root)
            with self.assertRaisesRegex(AttributeError,
                                        "fn.squeeze is not in actorflow"):
                fn.squeeze(images)
            self.assertFalse(hasattr(fn, "expand_dims"))
            with self.assertRaisesRegex(TypeError, "takes numbers"):
                images * "two"
            with self.assertRaisesRegex(ValueError, "both numbers or both"):
                fn.crop(images, crop=(4, 4),
                        crop_pos_x=fn.random.uniform(range=(0.0, 1.0)))
            with self.assertRaisesRegex(ValueError, "crop_pos_y=1.5"):
                fn.crop(images, crop=(4, 4), crop_pos_y=1.5)
            with self.assertRaisesRegex(
                    ValueError, "input of operator 'cast'.*not data"):
                fn.cast(fn.random.coin_flip(), dtype=types.FLOAT)
            with self.assertRaisesRegex(ValueError, "output of the pipe"):
                pipe.set_outputs(images, fn.random.uniform(range=(0, 1)))
            with self.assertRaisesRegex(ValueError, "mirror"):
                fn.crop_mirror_normalize(images, mirror=2)
        with self.assertRaisesRegex(ValueError, "batch_size"):
            Pipeline(num_threads=2)
        with self.assertRaisesRegex(ValueError, "no reader named 'Nope'"):
            pipe.reader_meta("Nope")


def run_on(images, build, batch_size=None, threads=1, seed=3, outputs=None):
    """Runs build(node) on `images` (a list of HWC arrays) fed through an
    external source; returns the output's samples as numpy arrays (with
    `outputs`, build gives that many nodes: a list of samples per node)."""
    pipe = Pipeline(batch_size=batch_size or len(images), num_threads=threads,
                    seed=seed)
    with pipe:
        built = build(fn.external_source(source=lambda: images, layout="HWC"))
        pipe.set_outputs(*(built if outputs else (built,)))
    lists = pipe.run()
    got = [[out.at(i) for i in range(len(out))] for out in lists]
    return got if outputs else got[0]


def round_half_up(values):
    return numpy.floor(numpy.clip(values, 0, 255) + 0.5).astype(numpy.uint8)


def hsv_matrix(hue, saturation, value):
    to_yiq = numpy.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322],
                          [0.211, -0.523, 0.312]])
    to_rgb = numpy.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647],
                          [1.0, -1.106, 1.703]])
    h = numpy.radians(hue)
    chroma = value * saturation
    turn = numpy.array([[value, 0, 0],
                        [0, chroma * numpy.cos(h), -chroma * numpy.sin(h)],
                        [0, chroma * numpy.sin(h), chroma * numpy.cos(h)]])
    return to_rgb @ turn @ to_yiq


def numpy_blur(image, sigma, window):
    r = window // 2
    x = numpy.arange(window) - r
    k = numpy.exp(-x * x / (2 * sigma * sigma))
    k /= k.sum()
    padded = numpy.pad(image.astype(numpy.float64), ((r, r), (r, r), (0, 0)),
                       mode="reflect")
    rows = sum(k[t] * padded[:, t:t + image.shape[1]] for t in range(window))
    out = sum(k[t] * rows[t:t + image.shape[0]] for t in range(window))
    return round_half_up(out)


class AugmentationTest(unittest.TestCase):
    """Each operator against a numpy (or PIL) reference of its formula."""

    @classmethod
    def setUpClass(cls):
        rng = numpy.random.default_rng(11)
        cls.images = [rng.integers(0, 256, (20 + 3 * i, 30 - 2 * i, 3),
                                   dtype=numpy.uint8) for i in range(3)]

    def test_color_operators(self):
        got = run_on(self.images, lambda x: fn.brightness_contrast(
            x, brightness=1.5, brightness_shift=0.1, contrast=0.7))
        for image, out in zip(self.images, got):
            want = round_half_up(0.1 * 255 + 1.5 * (
                128 + 0.7 * (image.astype(numpy.float64) - 128)))
            self.assertLessEqual(numpy.abs(out.astype(int) - want).max(), 1)
        got = run_on(self.images, lambda x: fn.hsv(
            x, hue=40.0, saturation=0.6, value=1.1))
        for image, out in zip(self.images, got):
            want = round_half_up(image @ hsv_matrix(40.0, 0.6, 1.1).T)
            self.assertLessEqual(numpy.abs(out.astype(int) - want).max(), 1)
        got = run_on(self.images, lambda x: fn.color_twist(
            x, hue=-25.0, saturation=1.3, brightness=0.9, contrast=1.2))
        for image, out in zip(self.images, got):
            # hsv, then brightness and contrast, rounded once.
            raw = image @ hsv_matrix(-25.0, 1.3, 1.0).T
            want = round_half_up(0.9 * (128 + 1.2 * (raw - 128)))
            self.assertLessEqual(numpy.abs(out.astype(int) - want).max(), 1)

    def test_cat_and_stack(self):
        def joined(build):
            pipe = Pipeline(batch_size=len(self.images), num_threads=2)
            with pipe:
                x = fn.external_source(source=lambda: self.images,
                                       layout="HWC")
                pipe.set_outputs(*build(x))
            return pipe.run()

        side, rows, pair, last = joined(lambda x: (
            fn.cat(x, fn.flip(x), axis=1),
            fn.cat(x, x, fn.flip(x, horizontal=0, vertical=1), axis_name="H"),
            fn.stack(x, fn.flip(x), axis_name="F"),
            fn.stack(x, x, axis=-1)))
        self.assertEqual(side.layout(), "HWC")
        self.assertEqual(pair.layout(), "FHWC")
        self.assertEqual(last.layout(), "")
        for i, image in enumerate(self.images):
            mirrored = image[:, ::-1]
            self.assertTrue(numpy.array_equal(
                side.at(i), numpy.concatenate([image, mirrored], 1)))
            self.assertTrue(numpy.array_equal(
                rows.at(i), numpy.concatenate([image, image, image[::-1]])))
            self.assertTrue(numpy.array_equal(
                pair.at(i), numpy.stack([image, mirrored])))
            self.assertTrue(numpy.array_equal(
                last.at(i), numpy.stack([image, image], -1)))
        with self.assertRaisesRegex(ValueError,
                                    "input '.*' is float32, '.*' uint8"):
            joined(lambda x: (fn.cat(x, fn.cast(x, dtype=types.FLOAT)),))
        with self.assertRaisesRegex(ValueError, "axis_name 'F' is not in"):
            joined(lambda x: (fn.cat(x, x, axis_name="F"),))
        # Samples of different heights stack only where they are equal.
        with self.assertRaisesRegex(Exception, "stacked samples have one"):
            joined(lambda x: (fn.stack(x, fn.transpose(x, perm=[1, 0, 2])),))

    def test_pad(self):
        # Each sample padded at its axes' ends to the batch's largest extent
        # (or the given shape, -1: the largest), rounded up to align.
        pipe = Pipeline(batch_size=len(self.images), num_threads=2)
        with pipe:
            x = fn.external_source(source=lambda: self.images, layout="HWC")
            pipe.set_outputs(x, fn.pad(x, fill_value=7),
                             fn.pad(x, axis_names="H", align=8),
                             fn.pad(x, axes=(0, 1), shape=(40, -1)))
        plain, full, rows, shaped = pipe.run()
        tallest = max(image.shape[0] for image in self.images)
        widest = max(image.shape[1] for image in self.images)

        def padded(image, h, w, fill=0):
            return numpy.pad(image, [(0, h - image.shape[0]),
                                     (0, w - image.shape[1]), (0, 0)],
                             constant_values=fill)

        self.assertEqual(full.layout(), "HWC")
        self.assertTrue(full.is_dense_tensor())
        for i, image in enumerate(self.images):
            self.assertTrue(numpy.array_equal(plain.at(i), image))
            self.assertTrue(numpy.array_equal(
                full.at(i), padded(image, tallest, widest, 7)))
            self.assertTrue(numpy.array_equal(
                rows.at(i), padded(image, -(-tallest // 8) * 8,
                                   image.shape[1])))
            self.assertTrue(numpy.array_equal(
                shaped.at(i), padded(image, 40, widest)))
        with self.assertRaisesRegex(ValueError, "shape 10 along axis 0 is "
                                    "smaller than a sample's extent"):
            run_on(self.images, lambda x: fn.pad(x, axes=0, shape=10))
        with self.assertRaisesRegex(ValueError, "is fn.pad's output"):
            run_on(self.images, lambda x: fn.flip(fn.pad(x)))

    def test_dali_math(self):
        # nvidia.dali.math's functions against numpy: with numbers, between
        # nodes, type kept where DALI keeps it.
        from actorflow.dali import math as dmath
        got = run_on(self.images, lambda x: (
            dmath.clamp(x, 50, 200), dmath.sqrt(x), dmath.max(x, 128),
            dmath.min(x, fn.flip(x)), dmath.pow(2, x / 64),
            dmath.atan2(x - 100.0, fn.flip(x) + 1.0), dmath.floor(x / 3),
            dmath.abs(x - 128.0)), outputs=8)
        for i, image in enumerate(self.images):
            x = image.astype(numpy.float64)
            mirrored = x[:, ::-1]
            clamped, root, top, low, powered, angle, floored, dist = (
                g[i] for g in got)
            self.assertEqual(clamped.dtype, numpy.uint8)
            self.assertTrue(numpy.array_equal(clamped,
                                              numpy.clip(image, 50, 200)))
            self.assertEqual(root.dtype, numpy.float32)
            self.assertTrue(numpy.allclose(root, numpy.sqrt(x)))
            self.assertEqual(top.dtype, numpy.uint8)
            self.assertTrue(numpy.array_equal(top, numpy.maximum(image, 128)))
            self.assertTrue(numpy.array_equal(low, numpy.minimum(x, mirrored)))
            self.assertTrue(numpy.allclose(powered, 2 ** (x / 64), rtol=1e-5))
            self.assertTrue(numpy.allclose(
                angle, numpy.arctan2(x - 100, mirrored + 1), atol=1e-6))
            self.assertTrue(numpy.array_equal(floored,
                                              numpy.floor(x / numpy.float32(3))))
            self.assertTrue(numpy.array_equal(dist, numpy.abs(x - 128)))
        with self.assertRaisesRegex(NotImplementedError, "bounds"):
            run_on(self.images, lambda x: dmath.clamp(x, x, 3))
        with self.assertRaisesRegex(TypeError, "give two data nodes"):
            run_on(self.images, lambda x: dmath.atan2(x, 1.0))
        with self.assertRaisesRegex(TypeError, "not a data node"):
            dmath.sqrt(4.0)

    def test_color_space_conversion(self):
        def convert(images, image_type, output_type):
            return run_on(images, lambda x: fn.color_space_conversion(
                x, image_type=image_type, output_type=output_type))

        for image, bgr, gray in zip(self.images,
                                    convert(self.images, types.RGB, types.BGR),
                                    convert(self.images, types.RGB,
                                            types.GRAY)):
            self.assertTrue(numpy.array_equal(bgr, image[..., ::-1]))
            luma = image.astype(numpy.float32) @ numpy.array(
                [0.299, 0.587, 0.114], numpy.float32)
            self.assertEqual(gray.shape, image.shape[:2] + (1,))
            self.assertLessEqual(numpy.abs(
                gray[..., 0].astype(int) - round_half_up(luma)).max(), 1)
        # BGR's own order: to RGB is the swap back, to GRAY the same luma.
        swapped = [image[..., ::-1].copy() for image in self.images]
        for image, back, gray in zip(
                self.images, convert(swapped, types.BGR, types.RGB),
                convert(swapped, types.BGR, types.GRAY)):
            self.assertTrue(numpy.array_equal(back, image))
            self.assertTrue(numpy.array_equal(
                gray, convert([image], types.RGB, types.GRAY)[0]))
        grays = convert(self.images, types.RGB, types.GRAY)
        for gray, rgb in zip(grays, convert(grays, types.GRAY, types.RGB)):
            self.assertTrue(numpy.array_equal(rgb, numpy.repeat(gray, 3, 2)))
        floats = [image.astype(numpy.float32) / 255 for image in self.images]
        for image, gray in zip(floats, convert(floats, types.RGB, types.GRAY)):
            self.assertEqual(gray.dtype, numpy.float32)
            self.assertTrue(numpy.allclose(
                gray[..., 0], image @ numpy.array([0.299, 0.587, 0.114]),
                atol=1e-6))
        # YCbCr, JPEG's full range: as PIL converts (its integer arithmetic
        # within 1), back to RGB within 2, Y as the gray.
        ycbcr = convert(self.images, types.RGB, types.YCbCr)
        for image, out, back, luma in zip(
                self.images, ycbcr, convert(ycbcr, types.YCbCr, types.RGB),
                convert(ycbcr, types.YCbCr, types.GRAY)):
            want = numpy.asarray(Image.fromarray(image).convert("YCbCr"))
            self.assertLessEqual(numpy.abs(out.astype(int) - want).max(), 1)
            self.assertLessEqual(numpy.abs(back.astype(int) - image).max(), 2)
            self.assertTrue(numpy.array_equal(luma, out[..., :1]))
        for gray, out in zip(grays, convert(grays, types.GRAY, types.YCbCr)):
            self.assertTrue(numpy.array_equal(out[..., 0], gray[..., 0]))
            self.assertTrue((out[..., 1:] == 128).all())
        with self.assertRaisesRegex(ValueError, "RGB, BGR, GRAY or YCbCr"):
            convert(self.images, types.RGB, types.ANY_DATA)
        with self.assertRaisesRegex(ValueError, "channel"):
            convert(self.images, types.GRAY, types.RGB)

    def test_normalize(self):
        images = [image.astype(numpy.float64) for image in self.images]
        got = run_on(self.images, lambda x: fn.normalize(x))
        for image, out in zip(images, got):
            self.assertEqual(out.dtype, numpy.float32)
            want = (image - image.mean()) / image.std()
            self.assertLess(numpy.abs(out - want).max(), 1e-5)
        # Per channel (DALI's axis_names on an HWC layout), with Bessel's
        # correction, scale and shift.
        got = run_on(self.images, lambda x: fn.normalize(
            x, axis_names="HW", ddof=1, scale=64.0, shift=128.0))
        for image, out in zip(images, got):
            mean = image.mean(axis=(0, 1))
            std = image.std(axis=(0, 1), ddof=1)
            want = 64 * (image - mean) / std + 128
            self.assertLess(numpy.abs(out - want).max(), 1e-3)
        got = run_on(self.images, lambda x: fn.normalize(
            x, mean=types.Constant(100.0), stddev=50, epsilon=0.0))
        for image, out in zip(images, got):
            self.assertLess(numpy.abs(out - (image - 100) / 50).max(), 1e-6)
        with Pipeline(batch_size=2, num_threads=1):
            x = fn.external_source(name="x", layout="HWC")
            with self.assertRaisesRegex(ValueError, "batch=True"):
                fn.normalize(x, batch=True)
            with self.assertRaisesRegex(ValueError, "'D' not in|D not in"):
                fn.normalize(x, axis_names="D")
            with self.assertRaisesRegex(ValueError, "one number"):
                fn.normalize(x, mean=[1.0, 2.0, 3.0])

    def test_noise_operators(self):
        flat = [numpy.full((120, 100, 3), 100, numpy.uint8) for _ in range(3)]
        # gaussian: the noise's mean and deviation, per sample with a
        # random stddev; uint8 out.
        got = run_on(flat, lambda x: fn.noise.gaussian(
            x, mean=2.0, stddev=fn.random.uniform(range=(5, 15))))
        deviations = []
        for out in got:
            self.assertEqual(out.dtype, numpy.uint8)
            noise = out.astype(numpy.float64) - 100
            self.assertLess(abs(noise.mean() - 2.0), 0.3)
            self.assertTrue(4.5 < noise.std() < 15.5, noise.std())
            deviations.append(round(noise.std(), 3))
        self.assertEqual(len(set(deviations)), 3)
        # salt and pepper: a pixel's channels together, as DALI's default.
        got = run_on(flat, lambda x: fn.noise.salt_and_pepper(
            x, prob=0.2, salt_vs_pepper=0.5))
        for out in got:
            self.assertTrue(numpy.all(out == out[..., :1]))
            hit = out[..., 0] != 100
            self.assertLess(abs(hit.mean() - 0.2), 0.02)
            self.assertEqual(set(numpy.unique(out[..., 0][hit])), {0, 255})
        # shot: multiples of the factor around the value; float in, float
        # out with float's own values.
        got = run_on(flat, lambda x: fn.noise.shot(x, factor=5.0))
        for out in got:
            self.assertTrue(numpy.all(out % 5 == 0))
            self.assertLess(abs(out.mean() - 100), 1.0)
            self.assertLess(abs(out.var() - 500), 40)  # 5 * 100
        floats = [image.astype(numpy.float32) / 255 for image in self.images]
        got = run_on(floats, lambda x: fn.noise.salt_and_pepper(
            x, prob=1.0, per_channel=True))
        for image, out in zip(floats, got):
            self.assertEqual(out.dtype, numpy.float32)
            self.assertEqual(set(numpy.unique(out)), {-1.0, 1.0})
        # The same seed, the same noise, whatever the threads.
        one = run_on(flat, lambda x: fn.noise.gaussian(x, stddev=3.0))
        two = run_on(flat, lambda x: fn.noise.gaussian(x, stddev=3.0),
                     threads=2, batch_size=3)
        for a, b in zip(one, two):
            self.assertTrue(numpy.array_equal(a, b))

    def test_geometric_operators(self):
        got = run_on(self.images, lambda x: fn.rotate(x, angle=90))
        for image, out in zip(self.images, got):
            self.assertTrue(numpy.array_equal(out, numpy.rot90(image)))
        got = run_on(self.images, lambda x: fn.rotate(
            x, angle=30, fill_value=0))
        for image, out in zip(self.images, got):
            want = numpy.asarray(Image.fromarray(image).rotate(
                30, resample=Image.BILINEAR, expand=True))
            self.assertEqual(out.shape, want.shape)
            # PIL's bilinear filter, on noise: within rounding (measured
            # 0.49-0.52) away from the corners' edges.
            h, w = out.shape[:2]
            mid = (slice(h // 3, 2 * h // 3), slice(w // 3, 2 * w // 3))
            diff = numpy.abs(out[mid].astype(int) - want[mid].astype(int))
            self.assertLess(diff.mean(), 1.0)
        got = run_on(self.images, lambda x: fn.warp_affine(
            x, matrix=[1, 0, -2, 0, 1, -1], fill_value=7))
        for image, out in zip(self.images, got):
            want = numpy.full_like(image, 7)
            want[1:, 2:] = image[:-1, :-2]
            self.assertTrue(numpy.array_equal(out, want))
        got = run_on(self.images, lambda x: fn.gaussian_blur(
            x, sigma=1.5))
        for image, out in zip(self.images, got):
            want = numpy_blur(image, 1.5, 2 * math.ceil(4.5) + 1)
            self.assertLessEqual(numpy.abs(out.astype(int) - want).max(), 1)

    def test_region_and_layout_operators(self):
        got = run_on(self.images, lambda x: fn.erase(
            x, anchor=[2, 3, 10, 1], shape=[4, 5, 2, 2], fill_value=[9, 8, 7]))
        for image, out in zip(self.images, got):
            want = image.copy()
            want[2:6, 3:8] = [9, 8, 7]
            want[10:12, 1:3] = [9, 8, 7]
            self.assertTrue(numpy.array_equal(out, want))
        got = run_on(self.images, lambda x: fn.paste(
            x, ratio=2, paste_x=0.25, paste_y=1.0, fill_value=4))
        for image, out in zip(self.images, got):
            h, w = image.shape[:2]
            want = numpy.full((2 * h, 2 * w, 3), 4, numpy.uint8)
            x0 = int(w * 0.25)
            want[h:, x0:x0 + w] = image
            self.assertTrue(numpy.array_equal(out, want))
        got = run_on(self.images, lambda x: fn.slice(
            x, rel_start=[0.2, 0.1], rel_shape=[0.5, 0.5]))
        for image, out in zip(self.images, got):
            h, w = image.shape[:2]
            y, x = round(0.1 * h), round(0.2 * w)
            self.assertTrue(numpy.array_equal(
                out, image[y:y + round(0.5 * h), x:x + round(0.5 * w)]))
        # The same window by dimension indices, height first.
        got = run_on(self.images, lambda x: fn.slice(
            x, rel_start=[0.1, 0.2], rel_shape=[0.5, 0.5], axes=[0, 1]))
        for image, out in zip(self.images, got):
            h, w = image.shape[:2]
            y, x = round(0.1 * h), round(0.2 * w)
            self.assertTrue(numpy.array_equal(
                out, image[y:y + round(0.5 * h), x:x + round(0.5 * w)]))
        got = run_on(self.images, lambda x: fn.transpose(x, perm=[2, 0, 1]))
        for image, out in zip(self.images, got):
            self.assertTrue(numpy.array_equal(out, image.transpose(2, 0, 1)))
        same = [self.images[0]] * 2
        got = run_on(same, lambda x: fn.reshape(x, shape=[-1, 3]))
        self.assertTrue(numpy.array_equal(got[0], same[0].reshape(-1, 3)))

    def test_resize_antialiases_as_pil_does(self):
        # DALI's default (antialias=True; INTERP_TRIANGULAR always) against
        # PIL's BILINEAR, which filters the same way (PIL rounds between its
        # two passes: a level apart at most, rarely).
        for interp in (None, types.INTERP_TRIANGULAR):
            got = run_on(self.images, lambda x: fn.resize(
                x, size=(9, 11), interp_type=interp))
            for image, out in zip(self.images, got):
                want = numpy.asarray(Image.fromarray(image).resize(
                    (11, 9), Image.BILINEAR)).astype(int)
                diff = numpy.abs(out.astype(int) - want)
                self.assertLessEqual(diff.max(), 2)
                self.assertLess(diff.mean(), 0.5)
        # antialias=False with INTERP_LINEAR: two taps per axis, which skip
        # most of a 2x-shrunk image's pixels.
        got = run_on(self.images[:1], lambda x: fn.resize(
            x, size=(10, 15), antialias=False))
        image = self.images[0].astype(numpy.float32)
        want = (image[0::2, 0::2] + image[1::2, 0::2] + image[0::2, 1::2] +
                image[1::2, 1::2])[:10, :15] / 4
        self.assertLessEqual(numpy.abs(got[0] - want).max(), 0.5)

    def test_crop_mirror_normalize_pads_channels(self):
        # pad_output: 3 channels become 4, the fourth filled with
        # fill_values; the first three as without it. HWC puts it last.
        mean, std = [10.0, 20.0, 30.0], [2.0, 4.0, 8.0]
        for layout in ("CHW", "HWC"):
            got = run_on(self.images, lambda x: fn.crop_mirror_normalize(
                x, mean=mean, std=std, pad_output=True, fill_values=7.0,
                output_layout=layout))
            for image, out in zip(self.images, got):
                want = (image.astype(numpy.float32) - mean) / std
                want = numpy.concatenate(
                    [want, numpy.full(image.shape[:2] + (1,), 7.0)], axis=2)
                if layout == "CHW":
                    want = want.transpose(2, 0, 1)
                self.assertEqual(out.dtype, numpy.float32)
                self.assertEqual(out.shape, want.shape)
                self.assertTrue(numpy.allclose(out, want, atol=1e-5))

    def test_float16_outputs(self):
        # FLOAT16 from crop_mirror_normalize or cast: float32 values
        # rounded to half as they leave the pipeline, as torch.float16
        # through the iterator; an operator after it is refused.
        mean, std = [10.0, 20.0, 30.0], [50.0, 60.0, 70.0]

        def normalized(dtype):
            return run_on(self.images[:1] * 2, lambda x: (
                fn.crop_mirror_normalize(x, crop=(16, 20), mean=mean,
                                         std=std, dtype=dtype)))

        wide, half = normalized(types.FLOAT), normalized(types.FLOAT16)
        self.assertEqual(half[0].dtype, numpy.float16)
        self.assertTrue(numpy.array_equal(half[0],
                                          wide[0].astype(numpy.float16)))
        got = run_on(self.images[:1], lambda x: fn.cast(
            x, dtype=types.FLOAT16))
        self.assertEqual(got[0].dtype, numpy.float16)
        self.assertTrue(numpy.array_equal(got[0], self.images[0]))
        pipe = Pipeline(batch_size=2, num_threads=1)
        with pipe:
            x = fn.external_source(source=lambda: self.images[:1] * 2,
                                   layout="HWC")
            out = fn.crop_mirror_normalize(x, crop=(16, 20),
                                           dtype=types.FLOAT16)
            with self.assertRaisesRegex(ValueError, "FLOAT16"):
                fn.flip(out)
            with self.assertRaisesRegex(ValueError, "FLOAT16"):
                out * 2
            pipe.set_outputs(out)
        (step,) = next(iter(DALIGenericIterator(pipe, ["data"], size=2)))
        batch = step["data"]
        self.assertEqual(batch.dtype, torch.float16)
        self.assertEqual(tuple(batch.shape), (2, 3, 16, 20))

    def test_water_sphere_and_jpeg_distortion(self):
        # The augmentation gallery's three distortions, against numpy and
        # PIL references of their definitions.
        def nearest(image, px, py, fill=0):
            h, w = image.shape[:2]
            sx, sy = numpy.floor(px).astype(int), numpy.floor(py).astype(int)
            inside = (sx >= 0) & (sy >= 0) & (sx < w) & (sy < h)
            want = numpy.full_like(image, fill)
            want[inside] = image[sy[inside], sx[inside]]
            return want

        got = run_on(self.images, lambda x: fn.water(x))
        for image, out in zip(self.images, got):
            y, x = numpy.mgrid[0:image.shape[0], 0:image.shape[1]].astype(
                numpy.float32)
            freq = numpy.float32(2 * math.pi / 128)
            px = x + numpy.float32(10) * numpy.sin(freq * y)
            py = y + numpy.float32(10) * numpy.cos(freq * x)
            self.assertTrue(numpy.array_equal(out, nearest(image, px, py)))
        got = run_on(self.images, lambda x: fn.sphere(x, fill_value=9))
        for image, out in zip(self.images, got):
            h, w = image.shape[:2]
            y, x = numpy.mgrid[0:h, 0:w].astype(numpy.float32)
            mid_y, mid_x = numpy.float32(h / 2), numpy.float32(w / 2)
            d = numpy.float32(int(max(mid_x, mid_y)))
            dy, dx = y + 0.5 - mid_y, x + 0.5 - mid_x
            r = numpy.sqrt(dx * dx + dy * dy) / d
            want = nearest(image, mid_x + r * dx, mid_y + r * dy, fill=9)
            # float32 both; a point on a pixel edge may round either way
            self.assertLess((out != want).any(axis=2).mean(), 0.01)
        for quality in (5, 90):
            got = run_on(self.images, lambda x: fn.jpeg_compression_distortion(
                x, quality=quality))
            for image, out in zip(self.images, got):
                buffer = io.BytesIO()
                Image.fromarray(image).save(buffer, "JPEG", quality=quality)
                want = numpy.asarray(Image.open(buffer).convert("RGB"))
                self.assertEqual(out.shape, image.shape)
                self.assertLess(numpy.abs(out.astype(int) - want).mean(), 1.0)
        # A mask of 0 leaves the image alone.
        got = run_on(self.images, lambda x: fn.water(x, mask=0))
        for image, out in zip(self.images, got):
            self.assertTrue(numpy.array_equal(out, image))

    def test_crop_out_of_bounds(self):
        # A window larger than the image: padded with fill_values where it
        # sticks out (anchored as DALI: roundf(pos * (in - size))), or cut to
        # the image; where it fits, the plain crop.
        def corner(size, extent, pos):
            if size <= extent and pos == 0.5:
                return (extent - size) // 2
            value = numpy.float32(pos) * numpy.float32(extent - size)
            return int(numpy.sign(value) * numpy.floor(abs(value) + 0.5))

        def window(image, top, left, h, w, fill):
            out = numpy.empty((h, w, 3), numpy.uint8)
            out[:] = fill
            for y in range(h):
                for x in range(w):
                    sy, sx = top + y, left + x
                    if 0 <= sy < image.shape[0] and 0 <= sx < image.shape[1]:
                        out[y, x] = image[sy, sx]
            return out

        for pos_x in (0.5, 0.0, 1.0):
            padded, trimmed = run_on(self.images, lambda x: (
                fn.crop(x, crop=(26, 26), crop_pos_x=pos_x,
                        out_of_bounds_policy="pad", fill_values=(9, 8, 7)),
                fn.crop(x, crop=(26, 26), crop_pos_x=pos_x,
                        out_of_bounds_policy="trim_to_shape")), outputs=2)
            for i, image in enumerate(self.images):
                h, w = image.shape[:2]
                top = corner(26, h, 0.5)
                left = corner(26, w, pos_x)
                self.assertTrue(numpy.array_equal(
                    padded[i], window(image, top, left, 26, 26, (9, 8, 7))))
                y0, x0 = max(top, 0), max(left, 0)
                y1, x1 = min(top + 26, h), min(left + 26, w)
                self.assertTrue(numpy.array_equal(trimmed[i],
                                                  image[y0:y1, x0:x1]))
        with self.assertRaisesRegex(ValueError, "'error', 'pad' or"):
            run_on(self.images, lambda x: fn.crop(
                x, crop=(4, 4), out_of_bounds_policy="wrap"))

    def test_coord_transform_and_resize_crop_mirror(self):
        points = [numpy.array([[1, 2], [3, 4], [-5, 0.5]], numpy.float32),
                  numpy.array([[0, 0]], numpy.float32)]
        m = numpy.array([[0, 1], [2, 0], [1, 1]], numpy.float32)
        t = numpy.array([10, 20, 30], numpy.float32)
        mapped, scaled, block, ints = run_on(points, lambda p: (
            fn.coord_transform(p, M=m, T=t),
            fn.coord_transform(p, M=2.0, T=1.0),
            fn.coord_transform(p, MT=numpy.hstack([m, t[:, None]])),
            fn.coord_transform(p, M=m, dtype=types.INT32)), outputs=4)
        for i, p in enumerate(points):
            want = p @ m.T + t
            self.assertTrue(numpy.allclose(mapped[i], want))
            self.assertTrue(numpy.array_equal(block[i], mapped[i]))
            self.assertTrue(numpy.allclose(scaled[i], 2 * p + 1))
            self.assertEqual(ints[i].dtype, numpy.int32)
            halves_away = numpy.sign(p @ m.T) * numpy.floor(
                numpy.abs(p @ m.T) + 0.5)  # as DALI's cast rounds
            self.assertTrue(numpy.array_equal(ints[i], halves_away))
        with self.assertRaisesRegex(ValueError, "'m' has 5 values"):
            run_on(points, lambda p: fn.coord_transform(p, M=[1, 2, 3, 4, 5]))
        # resize_crop_mirror: the three operators it is, one after another.
        got, want = run_on(self.images, lambda x: (
            fn.resize_crop_mirror(x, resize_shorter=30, crop=(24, 20),
                                  crop_pos_x=0.2, mirror=1),
            fn.flip(fn.crop(fn.resize(x, resize_shorter=30), crop=(24, 20),
                            crop_pos_x=0.2), horizontal=1)), outputs=2)
        for a, b in zip(got, want):
            self.assertEqual(a.shape, (24, 20, 3))
            self.assertTrue(numpy.array_equal(a, b))

    def test_jitter(self):
        # Each pixel is one of its neighbours at an offset from -1 to 1
        # (nDegree 3), or the fill beyond the border; the offsets follow the
        # seed.
        got = run_on(self.images, lambda x: fn.jitter(x, nDegree=3,
                                                      fill_value=7))
        for image, out in zip(self.images, got):
            h, w = image.shape[:2]
            padded = numpy.full((h + 2, w + 2, 3), 7, numpy.uint8)
            padded[1:-1, 1:-1] = image
            matches = numpy.zeros((h, w), bool)
            for dy in (-1, 0, 1):
                for dx in (-1, 0, 1):
                    shifted = padded[1 + dy:1 + dy + h, 1 + dx:1 + dx + w]
                    matches |= (shifted == out).all(axis=2)
            self.assertTrue(matches.all())
            self.assertGreater((out != image).any(axis=2).mean(), 0.3)
        again = run_on(self.images, lambda x: fn.jitter(x, nDegree=3,
                                                        fill_value=7))
        other = run_on(self.images, lambda x: fn.jitter(x, nDegree=3,
                                                        fill_value=7), seed=4)
        self.assertTrue(all(numpy.array_equal(a, b)
                            for a, b in zip(got, again)))
        self.assertFalse(all(numpy.array_equal(a, b)
                             for a, b in zip(got, other)))
        # nDegree 1: no offset; mask 0: the image as it is.
        for build in (lambda x: fn.jitter(x, nDegree=1),
                      lambda x: fn.jitter(x, mask=0)):
            for image, out in zip(self.images, run_on(self.images, build)):
                self.assertTrue(numpy.array_equal(out, image))
        with self.assertRaisesRegex(ValueError, "nDegree 0"):
            run_on(self.images, lambda x: fn.jitter(x, nDegree=0))

    def test_resize_nearest_as_dali_interp_nn(self):
        # A segmentation mask's way: INTERP_NN copies source pixels, at
        # floor((i + 0.5) * in / out) in float, never mixing labels.
        def nearest(image, h, w):
            def index(out, size):
                return numpy.minimum(numpy.floor(
                    (numpy.arange(out, dtype=numpy.float32) + 0.5) *
                    numpy.float32(size / out)).astype(int), size - 1)
            return image[index(h, image.shape[0])][:, index(w, image.shape[1])]

        mask = (numpy.arange(7 * 9, dtype=numpy.uint8) % 5).reshape(7, 9, 1)
        for build, (h, w) in (
                (lambda x: fn.resize(x, size=[4, 20],
                                     interp_type=types.INTERP_NN), (4, 20)),
                (lambda x: fn.resize(x, resize_x=18, resize_y=5,
                                     min_filter=types.INTERP_NN,
                                     mag_filter=types.INTERP_NN), (5, 18))):
            (got,) = run_on([mask], build)
            self.assertTrue(numpy.array_equal(got, nearest(mask, h, w)),
                            (h, w))
        image = self.images[0]
        (got,) = run_on([image], lambda x: fn.resize(
            x, size=[13, 17], interp_type=types.INTERP_NN))
        self.assertTrue(numpy.array_equal(got, nearest(image, 13, 17)))
        with self.assertRaisesRegex(ValueError, "INTERP_NN both ways"):
            run_on([mask], lambda x: fn.resize(
                x, size=[4, 4], min_filter=types.INTERP_NN))
        with self.assertRaisesRegex(ValueError, "or INTERP_NN"):
            run_on([mask], lambda x: fn.resize(
                x, size=[4, 4], interp_type=types.INTERP_CUBIC))

    def test_shapes_as_dali_gives_them(self):
        wide = run_on(self.images, lambda x: fn.shapes(x))
        narrow = run_on(self.images, lambda x: fn.shapes(x, dtype=types.INT32))
        for image, a, b in zip(self.images, wide, narrow):
            self.assertEqual(a.dtype, numpy.int64)
            self.assertEqual(b.dtype, numpy.int32)
            self.assertEqual(tuple(a), image.shape)
            self.assertEqual(tuple(b), image.shape)
        cropped = run_on(self.images, lambda x: fn.shapes(
            fn.crop(x, crop=(5, 7))))
        self.assertEqual([tuple(c) for c in cropped],
                         [(5, 7, 3)] * len(self.images))

    def test_older_dali_names_of_crop_mirror_normalize(self):
        # DALI's older examples: output_dtype for dtype, image_type (which
        # DALI ignores).
        image = self.images[0]
        (older,) = run_on([image], lambda x: fn.crop_mirror_normalize(
            x, output_dtype=types.FLOAT16, image_type=types.RGB, crop=(8, 8),
            mean=MEAN, std=STD))
        (newer,) = run_on([image], lambda x: fn.crop_mirror_normalize(
            x, dtype=types.FLOAT16, crop=(8, 8), mean=MEAN, std=STD))
        self.assertEqual(older.dtype, numpy.float16)
        self.assertTrue(numpy.array_equal(older, newer))
        with self.assertRaisesRegex(ValueError, "output_dtype .* differ"):
            run_on([image], lambda x: fn.crop_mirror_normalize(
                x, dtype=types.FLOAT, output_dtype=types.UINT8))

    def test_casts_round_as_dali_converts(self):
        # DALI's conversions to integers round to the nearest (halves away
        # from zero), then saturate; a truncating cast gives 2, -2, 300's
        # low byte.
        values = numpy.float32([[[2.5, -2.5, 2.49], [-0.6, 300.7, -300.0]]])
        for dtype, want in ((types.UINT8, [3, 0, 2, 0, 255, 0]),
                            (types.INT8, [3, -3, 2, -1, 127, -128]),
                            (types.INT32, [3, -3, 2, -1, 301, -300])):
            (got,) = run_on([values], lambda x: fn.cast(x, dtype=dtype))
            self.assertEqual(got.dtype, types.to_numpy_dtype(dtype))
            self.assertEqual(got.ravel().tolist(), want, dtype)
        # crop_mirror_normalize to UINT8 or INT8: its float values
        # converted so, or truncated with rounding="truncate".
        image = self.images[0]
        scaled = (image.astype(numpy.float32) - 0.5) * numpy.float32(0.75)
        for dtype, rounding, convert in (
                (types.UINT8, "round", lambda v: numpy.clip(
                    numpy.sign(v) * numpy.floor(numpy.abs(v) + 0.5), 0, 255)),
                (types.INT8, "round", lambda v: numpy.clip(
                    numpy.sign(v) * numpy.floor(numpy.abs(v) + 0.5), -128,
                    127)),
                (types.UINT8, "truncate",
                 lambda v: numpy.clip(numpy.trunc(v), 0, 255))):
            (got,) = run_on([image], lambda x: fn.crop_mirror_normalize(
                x, dtype=dtype, output_layout="HWC", mean=0.5, std=1.0,
                scale=0.75, rounding=rounding))
            self.assertEqual(got.dtype, types.to_numpy_dtype(dtype))
            self.assertTrue(numpy.array_equal(got, convert(scaled)),
                            (dtype, rounding))

    def test_arithmetic_with_numbers(self):
        got = run_on(self.images, lambda x: (x / 255.0 - 0.5) * 2)
        for image, out in zip(self.images, got):
            self.assertEqual(out.dtype, numpy.float32)
            want = (image.astype(numpy.float32) / 255.0 - 0.5) * 2
            numpy.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
        got = run_on(self.images, lambda x: 1 - fn.cast(x, dtype=types.INT32))
        for image, out in zip(self.images, got):
            self.assertTrue(numpy.array_equal(out, 1.0 - image))
        # Per-channel numbers broadcast along the last axis, as DALI's.
        mean = numpy.array([123.7, 116.3, 103.5])
        got = run_on(self.images, lambda x: (x - mean) / [58.4, 57.1, 57.4])
        for image, out in zip(self.images, got):
            want = (image.astype(numpy.float32) - mean.astype(numpy.float32))\
                / numpy.float32([58.4, 57.1, 57.4])
            numpy.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
        got = run_on(self.images, lambda x: types.Constant([1, 2, 3]) * x)
        for image, out in zip(self.images, got):
            self.assertTrue(numpy.array_equal(out, image * [1.0, 2.0, 3.0]))
        pipe = Pipeline(batch_size=1, num_threads=1)
        with pipe:
            x = fn.external_source(source=lambda: self.images[:1],
                                   layout="HWC")
            pipe.set_outputs(x * [1.0, 2.0])
        # Named when the samples' channels are known (the first run here:
        # an external source's shape is known when it is fed).
        with self.assertRaisesRegex(ValueError, r"need 1 value or 3 \(the "
                                    r"last axis of \[20, 30, 3\]\), got 2"):
            pipe.build()
            pipe.run()
        with pipe:
            with self.assertRaisesRegex(TypeError, "one per element of the "
                                        "last axis"):
                x * numpy.ones((2, 2))

    def test_arithmetic_between_nodes_and_with_random_values(self):
        # DALI's blend, one coin per sample: coin * flipped + (1 - coin) *
        # image is the flipped image or the image itself, whole.
        got = run_on(self.images[:1] * 8, lambda x: (
            lambda coin: coin * fn.flip(x) + (1 - coin) * x)(
                fn.random.coin_flip(probability=0.5)), threads=2)
        kinds = set()
        for out in got:
            image = self.images[0].astype(numpy.float32)
            if numpy.array_equal(out, image):
                kinds.add("kept")
            else:
                self.assertTrue(numpy.array_equal(out, image[:, ::-1]))
                kinds.add("flipped")
        self.assertEqual(kinds, {"kept", "flipped"})  # 8 coins, seed 3
        # Two external sources, element by element, and a one-valued
        # sample against every element.
        masks = [(image[:, :, :1] > 128).astype(numpy.uint8).repeat(3, 2)
                 for image in self.images]
        scales = [numpy.array([k + 2], numpy.float32) for k in range(3)]
        pipe = Pipeline(batch_size=3, num_threads=2)
        with pipe:
            x = fn.external_source(source=lambda: self.images, layout="HWC")
            m = fn.external_source(source=lambda: masks, layout="HWC")
            s = fn.external_source(source=lambda: scales)
            pipe.set_outputs(x * m, x / s - x, x + x)
        masked, scaled, doubled = pipe.run()
        for k, image in enumerate(self.images):
            wide = image.astype(numpy.float32)
            self.assertTrue(numpy.array_equal(masked.at(k), wide * masks[k]))
            numpy.testing.assert_allclose(scaled.at(k),
                                          wide / (k + 2) - wide, rtol=1e-6)
            self.assertTrue(numpy.array_equal(doubled.at(k), 2 * wide))
        # Broadcast as NumPy does: a one-channel mask against RGB, and a
        # value per channel from a node; numpy's own result is the check.
        thin = [mask[:, :, :1] for mask in masks]
        gains = [numpy.array([1, 2, 3], numpy.float32) * (k + 1)
                 for k in range(3)]
        pipe = Pipeline(batch_size=3, num_threads=2)
        with pipe:
            x = fn.external_source(source=lambda: self.images, layout="HWC")
            m = fn.external_source(source=lambda: thin, layout="HWC")
            g = fn.external_source(source=lambda: gains)
            pipe.set_outputs(x * m, x * g - m)
        masked, gained = pipe.run()
        for k, image in enumerate(self.images):
            wide = image.astype(numpy.float32)
            self.assertTrue(numpy.array_equal(masked.at(k), wide * thin[k]))
            self.assertTrue(numpy.array_equal(gained.at(k),
                                              wide * gains[k] - thin[k]))

    def test_one_hot_of_reader_labels(self):
        root = tempfile.mkdtemp()
        try:
            paths = make_images(root, 6, seed=2)

            @pipeline_def(batch_size=6, num_threads=1, device_id=0)
            def labels():
                _, label = fn.readers.file(file_root=root)
                return label, fn.one_hot(label, num_classes=3)

            label, hot = labels().run()
            want = numpy.eye(3, dtype=numpy.float32)[labels_of(paths)]
            self.assertTrue(numpy.array_equal(hot.as_array(), want))
            self.assertEqual(label.as_array().shape, (6, 1))
        finally:
            shutil.rmtree(root)

    def test_one_random_value_given_to_two_operators(self):
        # A segmentation pipeline flips an image and its mask with one coin
        # and turns both by one angle: they must agree, as in DALI.
        y, x = numpy.mgrid[0:40, 0:50]
        smooth = numpy.stack([y * 5, x * 4, (x + y) * 2], -1).astype(
            numpy.uint8)
        image = [smooth] * 8

        pipe = Pipeline(batch_size=8, num_threads=2, seed=5)
        with pipe:
            x = fn.external_source(source=lambda: image, layout="HWC")
            coin = fn.random.coin_flip(probability=0.5)
            angle = fn.random.uniform(range=(-30.0, 30.0))
            a = fn.rotate(fn.flip(x, horizontal=coin), angle=angle)
            b = fn.rotate(fn.flip(x, horizontal=coin), angle=angle)
            c = fn.flip(x, horizontal=1 - coin)
            d = fn.flip(x, horizontal=coin)
            # Turned by the angle, then by minus the angle: back, within
            # the interpolation.
            e = fn.rotate(fn.rotate(x, angle=angle, keep_size=True),
                          angle=-angle, keep_size=True)
            pipe.set_outputs(a, b, c, d, e)
        a, b, c, d, e = pipe.run()
        flipped = 0
        for i in range(8):
            self.assertTrue(numpy.array_equal(a.at(i), b.at(i)))
            # The complement: exactly one of c, d is the mirror image.
            mirrored = numpy.array_equal(d.at(i), image[0][:, ::-1])
            self.assertEqual(numpy.array_equal(c.at(i), image[0][:, ::-1]),
                             not mirrored)
            flipped += mirrored
            h, w = image[0].shape[:2]
            middle = (slice(h // 3, 2 * h // 3), slice(w // 3, 2 * w // 3))
            diff = numpy.abs(e.at(i)[middle].astype(int) -
                             image[0][middle].astype(int))
            self.assertLess(diff.mean(), 2.0)  # a smooth image: exact-ish
        self.assertTrue(0 < flipped < 8)
        self.assertGreater(len(set(a.shape())), 1)

    def test_random_arguments_per_sample(self):
        # One value per sample: a tensor per sample (DALI's shape=) or
        # integer values are refused, not ignored.
        for make in (lambda: fn.random.uniform(range=(0, 1), shape=(2,)),
                     lambda: fn.random.normal(shape=[3]),
                     lambda: fn.random.coin_flip(shape=2)):
            with self.assertRaisesRegex(ValueError, "only one value"):
                make()
        with self.assertRaisesRegex(ValueError, "floats"):
            fn.random.uniform(range=(0, 10), dtype=types.INT32)
        fn.random.uniform(range=(0, 1), shape=(1,), dtype=types.FLOAT)
        zeros = [numpy.zeros((4, 4, 3), numpy.uint8)] * 8
        # uniform(0, 1) * 0.1: a shift of 0 to 25.5, one per sample.
        got = run_on(zeros, lambda x: fn.brightness_contrast(
            x, brightness_shift=fn.random.uniform(range=(0, 1)) * 0.1))
        shifts = [int(out[0, 0, 0]) for out in got]
        for out, shift in zip(got, shifts):
            self.assertTrue((out == shift).all())
            self.assertLessEqual(shift, 26)
        self.assertGreater(len(set(shifts)), 3)
        again = run_on(zeros, lambda x: fn.brightness_contrast(
            x, brightness_shift=fn.random.uniform(range=(0, 1)) * 0.1),
            threads=2)
        self.assertEqual([int(o[0, 0, 0]) for o in again], shifts)
        # Turned by any angle, each sample has its own size, bounded by the
        # diagonal; with keep_size, the image's.
        image = [self.images[0]] * 6
        turned = run_on(image, lambda x: fn.rotate(
            x, angle=fn.random.uniform(range=(-45.0, 45.0))))
        diagonal = math.ceil(math.hypot(*self.images[0].shape[:2]))
        self.assertGreater(len({t.shape for t in turned}), 1)
        for t in turned:
            self.assertLessEqual(max(t.shape[:2]), diagonal)
        kept = run_on(image, lambda x: fn.rotate(
            x, angle=fn.random.uniform(range=(-45.0, 45.0)), keep_size=True))
        self.assertEqual({k.shape for k in kept}, {self.images[0].shape})


if __name__ == "__main__":
    unittest.main()
