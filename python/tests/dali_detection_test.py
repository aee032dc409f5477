"""actorflow.dali's detection operators as DALI's SSD recipe uses them:
fn.readers.coco against a reading of the annotations by DALI's rules,
bb_flip, random_bbox_crop, box_encoder and slice by per-sample windows
against numpy, and the whole SSD pipeline into torch."""

import json
import os
import tempfile
import unittest
import warnings

import sanitizers

sanitizers.preload_if_asked()

import numpy  # noqa: E402
from PIL import Image  # noqa: E402

from actorflow.dali import fn, ops, pipeline_def, types  # noqa: E402
from actorflow.dali.pipeline import Pipeline  # noqa: E402
from actorflow.dali.plugin.pytorch import DALIGenericIterator  # noqa: E402

warnings.simplefilter("ignore")  # "mixed" runs on the host, said once

CATEGORIES = [{"id": 9}, {"id": 3}, {"id": 7}]


def make_coco(root, count=14, seed=0):
    """JPEGs under root/images and root/instances.json: image i has i % 4
    objects (one crowd, one too thin for size_threshold), ids in reverse
    file order, one image no annotation names."""
    rng = numpy.random.default_rng(seed)
    os.makedirs(os.path.join(root, "images"), exist_ok=True)
    images, annotations = [], []
    for i in range(count):
        w, h = 60 + 7 * i, 40 + 5 * i
        pixels = rng.integers(0, 256, (h, w, 3), dtype=numpy.uint8)
        Image.fromarray(pixels).save(
            os.path.join(root, "images", f"{i:03d}.jpg"), quality=90)
        images.append({"id": 500 - 3 * i, "file_name": f"{i:03d}.jpg",
                       "width": w, "height": h})
        for k in range(i % 4):
            box = [float(rng.uniform(0, w / 2)), float(rng.uniform(0, h / 2)),
                   float(rng.uniform(1, w / 2)), float(rng.uniform(1, h / 2))]
            if k == 2 and i % 8 == 3:
                box[3] = 0.05  # under size_threshold's 0.1
            annotations.append({"image_id": 500 - 3 * i, "bbox": box,
                                "category_id": CATEGORIES[(i + k) % 3]["id"],
                                "iscrowd": int(k == 1 and i % 5 == 2)})
    path = os.path.join(root, "instances.json")
    with open(path, "w") as f:
        json.dump({"images": images, "annotations": annotations,
                   "categories": CATEGORIES}, f)
    return path


def coco_reference(path, ltrb=False, ratio=False, skip_empty=False,
                   include_iscrowd=True, avoid_class_remapping=False):
    """{file name: (boxes float32 [M, 4], labels, id)} by DALI's rules."""
    with open(path) as f:
        doc = json.load(f)
    remap = {c["id"]: k + 1 for k, c in enumerate(doc["categories"])}
    out = {}
    for info in sorted(doc["images"], key=lambda i: i["id"]):
        boxes, labels = [], []
        for a in doc["annotations"]:
            b = numpy.float32(a["bbox"])
            if (a["image_id"] != info["id"] or b[2] < 0.1 or b[3] < 0.1 or
                    (a["iscrowd"] and not include_iscrowd)):
                continue
            if ltrb:
                b = numpy.float32([b[0], b[1], b[0] + b[2], b[1] + b[3]])
            if ratio:
                b = b / numpy.float32([info["width"], info["height"]] * 2)
            boxes.append(b)
            labels.append(a["category_id"] if avoid_class_remapping
                          else remap[a["category_id"]])
        if skip_empty and not boxes:
            continue
        out[info["file_name"]] = (
            numpy.float32(boxes).reshape(-1, 4), labels, info["id"])
    return out


def iou(a, b):
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    inter = max(w, 0) * max(h, 0)
    union = ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) -
             inter)
    return 0.0 if union <= 0 else inter / union


def run_nodes(sources, build, threads=1, seed=5, layouts=()):
    """build(*external sources fed `sources`, lists of per-sample arrays,
    the first of `layouts` if given): each output's samples as numpy
    arrays."""
    pipe = Pipeline(batch_size=len(sources[0]), num_threads=threads,
                    seed=seed)
    layouts = list(layouts) + [None] * (len(sources) - len(layouts))
    with pipe:
        nodes = [fn.external_source(source=lambda s=s: s, layout=layout)
                 for s, layout in zip(sources, layouts)]
        built = build(*nodes)
        pipe.set_outputs(*built)
    return [[numpy.array(out.at(i)) for i in range(len(out))]
            for out in pipe.run()]


def random_boxes(rng, count):
    """Per sample 0 to 4 ltrb boxes (relative) and int32 labels."""
    boxes, labels = [], []
    for i in range(count):
        n = i % 5
        lt = rng.uniform(0, 0.6, (n, 2))
        wh = rng.uniform(0.05, 0.4, (n, 2))
        boxes.append(numpy.float32(numpy.hstack([lt, lt + wh])).reshape(n, 4))
        labels.append(numpy.int32(rng.integers(1, 20, (n, 1))))
    return boxes, labels


class CocoReaderTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.root = cls.dir.name
        cls.annotations = make_coco(cls.root)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def read_all(self, batch_size=5, threads=2, shards=1, **kwargs):
        pipe = Pipeline(batch_size=batch_size, num_threads=threads, seed=1)
        with pipe:
            outs = fn.readers.coco(
                file_root=os.path.join(self.root, "images"),
                annotations_file=self.annotations, image_ids=True,
                name="Reader", **kwargs)
            pipe.set_outputs(*outs)
        size = pipe.epoch_size("Reader") // shards
        got = []
        while len(got) < size:
            data, boxes, labels, ids = pipe.run()
            for i in range(len(data)):
                got.append((bytes(numpy.array(data.at(i))),
                            numpy.array(boxes.at(i)),
                            numpy.array(labels.at(i)),
                            numpy.array(ids.at(i))))
        return got[:size]

    def check(self, got, want, name_of_id):
        self.assertEqual(len(got), len(want))
        for data, boxes, labels, ids in got:
            name = name_of_id[int(ids[0])]
            want_boxes, want_labels, want_id = want[name]
            with open(os.path.join(self.root, "images", name), "rb") as f:
                self.assertEqual(data, f.read())
            self.assertEqual(ids.shape, (1,))
            self.assertEqual(ids.dtype, numpy.int32)
            self.assertEqual(boxes.dtype, numpy.float32)
            self.assertEqual(boxes.shape, (len(want_labels), 4))
            self.assertTrue(numpy.array_equal(boxes, want_boxes), name)
            self.assertEqual(labels.dtype, numpy.int32)
            self.assertEqual(labels.shape, (len(want_labels), 1))
            self.assertEqual(labels.ravel().tolist(), want_labels)

    def test_every_image_once_by_dalis_rules(self):
        with open(self.annotations) as f:
            name_of_id = {i["id"]: i["file_name"]
                          for i in json.load(f)["images"]}
        for options in ({}, {"ltrb": True, "ratio": True},
                        {"skip_empty": True, "include_iscrowd": False},
                        {"avoid_class_remapping": True, "ratio": True}):
            got = self.read_all(**options)
            self.check(got, coco_reference(self.annotations, **options),
                       name_of_id)
            # Unshuffled: in id order, as DALI reads them.
            ids = [int(g[3][0]) for g in got]
            self.assertEqual(ids, sorted(ids), options)

    def test_images_argument_picks_and_orders(self):
        # images=: those files only, in that order (DALI's), a name the
        # annotations lack left out.
        with open(self.annotations) as f:
            info = {i["file_name"]: i["id"] for i in json.load(f)["images"]}
        picked = ["007.jpg", "002.jpg", "nope.jpg", "011.jpg"]
        got = self.read_all(batch_size=3, images=picked)
        self.assertEqual([int(g[3][0]) for g in got],
                         [info[n] for n in picked if n in info])

    def test_shards_and_shuffle(self):
        whole = {int(g[3][0]) for g in self.read_all()}
        halves = [self.read_all(shard_id=s, num_shards=2, shards=2)
                  for s in (0, 1)]
        seen = [int(g[3][0]) for half in halves for g in half]
        self.assertEqual(sorted(seen), sorted(whole))
        one = self.read_all(random_shuffle=True, threads=1)
        two = self.read_all(random_shuffle=True, threads=3)
        self.assertEqual([int(g[3][0]) for g in one],
                         [int(g[3][0]) for g in two])
        self.assertNotEqual([int(g[3][0]) for g in one], sorted(whole))
        for a, b in zip(one, two):
            self.assertTrue(numpy.array_equal(a[1], b[1]))

    def test_errors(self):
        images = os.path.join(self.root, "images")
        with self.assertRaisesRegex(ValueError, "polygon_masks"):
            fn.readers.coco(file_root=images,
                            annotations_file=self.annotations,
                            polygon_masks=True)
        bad = os.path.join(self.root, "bad.json")
        with open(bad, "w") as f:
            json.dump({"images": [{"id": 1, "file_name": "000.jpg",
                                   "width": 4, "height": 4}],
                       "annotations": [{"image_id": 1, "category_id": 42,
                                        "bbox": [0, 0, 2, 2]}],
                       "categories": CATEGORIES}, f)
        with self.assertRaisesRegex(ValueError, "category_id 42"):
            fn.readers.coco(file_root=images, annotations_file=bad)
        with open(bad, "w") as f:
            json.dump({"images": [{"id": 1, "file_name": "000.jpg"}],
                       "annotations": [{"image_id": 1, "bbox": [0, 0, 2, 2],
                                        "category_id": 9}],
                       "categories": CATEGORIES}, f)
        with self.assertRaisesRegex(ValueError, "without 'width'"):
            fn.readers.coco(file_root=images, annotations_file=bad,
                            ratio=True)
        with open(bad, "w") as f:
            f.write("{not json")
        with self.assertRaisesRegex(ValueError, "not JSON"):
            fn.readers.coco(file_root=images, annotations_file=bad)
        with self.assertRaisesRegex(ValueError, "No such file"):
            fn.readers.coco(file_root=images,
                            annotations_file=bad + ".missing")


class BoxOperatorTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.boxes, cls.labels = random_boxes(numpy.random.default_rng(4), 24)

    def test_bb_flip(self):
        xywh = [numpy.hstack([b[:, :2], b[:, 2:] - b[:, :2]])
                for b in self.boxes]
        h, v, both, kept = run_nodes([self.boxes, xywh], lambda b, w: (
            fn.bb_flip(b, ltrb=True),
            fn.bb_flip(w, vertical=1, horizontal=0),
            fn.bb_flip(b, ltrb=True, horizontal=1, vertical=1),
            fn.bb_flip(b, ltrb=True, horizontal=0)))
        one = numpy.float32(1)
        for i, b in enumerate(self.boxes):
            want = numpy.stack([one - b[:, 2], b[:, 1], one - b[:, 0],
                                b[:, 3]], axis=1)
            self.assertTrue(numpy.array_equal(h[i], want.reshape(-1, 4)))
            w = xywh[i]
            want = numpy.stack([w[:, 0], one - w[:, 1] - w[:, 3], w[:, 2],
                                w[:, 3]], axis=1)
            self.assertTrue(numpy.array_equal(v[i], want.reshape(-1, 4)))
            want = numpy.stack([one - b[:, 2], one - b[:, 3], one - b[:, 0],
                                one - b[:, 1]], axis=1)
            self.assertTrue(numpy.array_equal(both[i], want.reshape(-1, 4)))
            self.assertTrue(numpy.array_equal(kept[i], b))

    def test_bb_flip_shares_the_images_coin(self):
        # A coin given to flip and bb_flip turns an image and its boxes
        # together, in every sample.
        images = [numpy.arange(2 * 5 * 3, dtype=numpy.uint8).reshape(2, 5, 3)
                  ] * len(self.boxes)
        coin = fn.random.coin_flip(probability=0.5)
        flipped, boxes = run_nodes([images, self.boxes], lambda x, b: (
            fn.flip(x, horizontal=coin), fn.bb_flip(b, ltrb=True,
                                                    horizontal=coin)))
        turned = [not numpy.array_equal(f, images[0]) for f in flipped]
        self.assertTrue(0 < sum(turned) < len(turned))
        for i, b in enumerate(self.boxes):
            if len(b):
                self.assertEqual(not numpy.array_equal(boxes[i], b),
                                 turned[i])

    def test_bbox_paste_follows_the_pasted_image(self):
        # A white rectangle on black, pasted on a larger black canvas at
        # random: the boxes bbox_paste gives, in the canvas's pixels, hold
        # the rectangle to within what paste's whole pixels allow (its
        # offset truncated, its canvas rounded: under 1.5 pixels).
        image = numpy.zeros((40, 60, 3), numpy.uint8)
        image[8:20, 10:30] = 255
        box = numpy.float32([[10 / 60, 8 / 40, 30 / 60, 20 / 40]])
        xywh = numpy.hstack([box[:, :2], box[:, 2:] - box[:, :2]])
        ratio = fn.random.uniform(range=(1.0, 3.0))
        at_x = fn.random.uniform(range=(0.0, 1.0))
        at_y = fn.random.uniform(range=(0.0, 1.0))
        pasted, boxes, wh = run_nodes(
            [[image] * 16, [box] * 16, [xywh] * 16], lambda x, b, w: (
                fn.paste(x, ratio=ratio, paste_x=at_x, paste_y=at_y,
                         fill_value=0),
                fn.bbox_paste(b, ltrb=True, ratio=ratio, paste_x=at_x,
                              paste_y=at_y),
                fn.bbox_paste(w, ratio=ratio, paste_x=at_x, paste_y=at_y)),
            layouts=["HWC"])
        self.assertGreater(len({p.shape for p in pasted}), 4)
        for canvas, b, w in zip(pasted, boxes, wh):
            h, wide = canvas.shape[:2]
            ys, xs = numpy.nonzero(canvas[:, :, 0] > 127)
            found = [xs.min(), ys.min(), xs.max() + 1, ys.max() + 1]
            want = b[0] * numpy.float32([wide, h, wide, h])
            self.assertTrue(numpy.allclose(found, want, atol=1.5),
                            (found, want))
            self.assertTrue(numpy.allclose(
                w[0], [b[0][0], b[0][1], b[0][2] - b[0][0],
                       b[0][3] - b[0][1]], atol=1e-6))
        with self.assertRaisesRegex(ValueError, "'ratio': at least 1"):
            run_nodes([[box]], lambda b: (fn.bbox_paste(b, ratio=0.5),))

    def check_crop(self, anchor, shape, kept, labels, boxes, in_labels,
                   threshold, scaling=(0.3, 1.0), ratio=(0.5, 2.0)):
        self.assertEqual(anchor.shape, (2,))
        self.assertEqual(shape.shape, (2,))
        x, y = anchor
        w, h = shape
        self.assertTrue(0 <= x and 0 <= y and x + w <= 1 + 1e-6 and
                        y + h <= 1 + 1e-6)
        window = [x, y, x + w, y + h]
        whole = (x, y, w, h) == (0, 0, 1, 1)
        if not whole:
            self.assertTrue(scaling[0] - 1e-6 <= w <= scaling[1] + 1e-6)
            self.assertTrue(ratio[0] - 1e-5 <= w / h <= ratio[1] + 1e-5)
            for b in boxes:
                self.assertGreaterEqual(iou(window, b), threshold - 1e-6)
        inside = [k for k, b in enumerate(boxes)
                  if x <= (b[0] + b[2]) / 2 <= x + w and
                  y <= (b[1] + b[3]) / 2 <= y + h]
        if not whole:
            self.assertTrue(inside)
        want = (boxes[inside] - numpy.float32([x, y, x, y])) / numpy.float32(
            [w, h, w, h])
        self.assertTrue(numpy.allclose(kept, numpy.clip(want, 0, 1),
                                       atol=1e-6))
        self.assertTrue(numpy.array_equal(labels, in_labels[inside]))

    def test_random_bbox_crop(self):
        def build(b, l):
            return fn.random_bbox_crop(
                b, l, aspect_ratio=[0.5, 2.0], thresholds=[0.1],
                scaling=[0.3, 1.0], allow_no_crop=False, num_attempts=20,
                total_num_attempts=2000)
        got = run_nodes([self.boxes, self.labels], build)
        crops = 0
        for i in range(len(self.boxes)):
            self.check_crop(*(out[i] for out in got), self.boxes[i],
                            self.labels[i], 0.1)
            crops += not numpy.array_equal(got[1][i], [1, 1])
        print("random_bbox_crop: windows", crops)
        self.assertGreater(crops, len(self.boxes) // 2)
        # The seed decides, not the threads or the run.
        again = run_nodes([self.boxes, self.labels], build, threads=3)
        for a, b in zip(got, again):
            for x, y in zip(a, b):
                self.assertTrue(numpy.array_equal(x, y))
        other = run_nodes([self.boxes, self.labels], build, seed=6)
        self.assertFalse(all(numpy.array_equal(x, y)
                             for x, y in zip(got[0], other[0])))

    def test_random_bbox_crop_options(self):
        # SSD's options: a threshold or no crop, drawn per round; without
        # labels three outputs; xywh boxes in and out; a window no box
        # allows gives the whole image after total_num_attempts.
        xywh = [numpy.hstack([b[:, :2], b[:, 2:] - b[:, :2]])
                for b in self.boxes]
        anchor, shape, kept = run_nodes([xywh], lambda b: fn.random_bbox_crop(
            b, bbox_layout="xyWH", thresholds=[0.0, 0.5], scaling=[0.5, 1.0],
            aspect_ratio=[0.5, 2.0], num_attempts=10))
        for i, b in enumerate(self.boxes):
            ltrb = numpy.hstack([kept[i][:, :2], kept[i][:, :2] +
                                 kept[i][:, 2:]]).reshape(-1, 4)
            self.check_crop(anchor[i], shape[i], ltrb,
                            numpy.zeros(len(ltrb)), b,
                            numpy.zeros(len(b)), 0.0, scaling=(0.5, 1.0))
        # Samples without boxes too: no window can hold one.
        anchor, shape, kept = run_nodes([self.boxes], lambda b:
                                        fn.random_bbox_crop(
            b, thresholds=[0.99], scaling=[0.9, 1.0], allow_no_crop=False,
            total_num_attempts=50))
        empty = [numpy.zeros((0, 4), numpy.float32)] * 8
        whole = run_nodes([empty], lambda b: fn.random_bbox_crop(
            b, thresholds=[0.5], allow_no_crop=False))
        for a, s, k in zip(*whole):
            self.assertEqual((a.tolist(), s.tolist(), k.shape),
                             ([0, 0], [1, 1], (0, 4)))
        for i, b in enumerate(self.boxes):
            self.assertEqual(anchor[i].tolist(), [0, 0])
            self.assertEqual(shape[i].tolist(), [1, 1])
            self.assertTrue(numpy.array_equal(kept[i], b))
        with self.assertRaisesRegex(ValueError, "crop_shape"):
            fn.random_bbox_crop(self.boxes, crop_shape=[10, 10])
        with self.assertRaisesRegex(ValueError, "bbox_layout"):
            run_nodes([self.boxes], lambda b: fn.random_bbox_crop(
                b, bbox_layout="yxYX"))
        with self.assertRaisesRegex(ValueError, "thresholds"):
            run_nodes([self.boxes], lambda b: fn.random_bbox_crop(
                b, thresholds=[1.5]))

    def test_box_encoder(self):
        rng = numpy.random.default_rng(8)
        lt = rng.uniform(0, 0.7, (12, 2))
        anchors = numpy.float32(numpy.hstack([lt, lt + rng.uniform(
            0.1, 0.3, (12, 2))]))
        labels = [l.ravel() for l in self.labels]
        means, stds = [0.1, -0.1, 0.0, 0.2], [0.1, 0.1, 0.2, 0.2]
        plain_boxes, plain_labels, off_boxes, off_labels = run_nodes(
            [self.boxes, labels], lambda b, l: (
                *fn.box_encoder(b, l, anchors=anchors.ravel(), criteria=0.3),
                *fn.box_encoder(b, l, anchors=anchors.ravel(), criteria=0.3,
                                offset=True, scale=2.0, means=means,
                                stds=stds)))

        def cwh(box):
            return numpy.float32([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2,
                                  box[2] - box[0], box[3] - box[1]])
        matched = 0
        for i, boxes in enumerate(self.boxes):
            # The reference: each box's best anchor is its own, every other
            # anchor the best box over the criteria (ties: the later).
            ious = numpy.array([[iou(b, a) for a in anchors] for b in boxes])
            for b in range(len(boxes)):
                ious[b, numpy.flatnonzero(ious[b] == ious[b].max())[-1]] = 2
            self.assertEqual(plain_boxes[i].shape, (12, 4))
            self.assertEqual(plain_labels[i].shape, (12,))
            for k, anchor in enumerate(anchors):
                best = (numpy.flatnonzero(ious[:, k] == ious[:, k].max())[-1]
                        if len(boxes) else None)
                if best is not None and ious[best, k] > 0.3:
                    matched += 1
                    self.assertEqual(plain_labels[i][k], labels[i][best])
                    self.assertTrue(numpy.allclose(plain_boxes[i][k],
                                                   cwh(boxes[best])))
                    b, p = 2 * cwh(boxes[best]), 2 * cwh(anchor)
                    want = [((b[0] - p[0]) / p[2] - means[0]) / stds[0],
                            ((b[1] - p[1]) / p[3] - means[1]) / stds[1],
                            (numpy.log(b[2] / p[2]) - means[2]) / stds[2],
                            (numpy.log(b[3] / p[3]) - means[3]) / stds[3]]
                    self.assertTrue(numpy.allclose(off_boxes[i][k], want,
                                                   atol=1e-5))
                    self.assertEqual(off_labels[i][k], labels[i][best])
                else:
                    self.assertEqual(plain_labels[i][k], 0)
                    self.assertTrue(numpy.allclose(plain_boxes[i][k],
                                                   cwh(anchor)))
                    self.assertEqual(off_boxes[i][k].tolist(), [0, 0, 0, 0])
        self.assertGreater(matched, 10)
        with self.assertRaisesRegex(ValueError, "anchors"):
            run_nodes([self.boxes, labels], lambda b, l: fn.box_encoder(
                b, l, anchors=[0, 0, 1]))

    def test_slice_by_nodes(self):
        rng = numpy.random.default_rng(2)
        images = [rng.integers(0, 256, (20 + i, 30 - i, 3), dtype=numpy.uint8)
                  for i in range(6)]
        anchors = [numpy.float32(rng.uniform(0, 0.5, 2)) for _ in images]
        shapes = [numpy.float32(rng.uniform(0.1, 0.5, 2)) for _ in images]
        pixels = [numpy.float32([3, 2])] * len(images)
        spans = [numpy.float32([5, 4])] * len(images)
        rel, absolute, by_axes = run_nodes(
            [images, anchors, shapes, pixels, spans],
            lambda x, a, s, p, q: (
                fn.slice(x, a, s),
                fn.slice(x, p, q, normalized_anchor=False,
                         normalized_shape=False),
                fn.slice(x, a, s, axes=[0, 1])), layouts=["HWC"])
        for i, image in enumerate(images):
            h, w = image.shape[:2]
            x0 = int(numpy.floor(anchors[i][0] * w + 0.5))
            x1 = int(numpy.floor((anchors[i][0] + shapes[i][0]) * w + 0.5))
            y0 = int(numpy.floor(anchors[i][1] * h + 0.5))
            y1 = int(numpy.floor((anchors[i][1] + shapes[i][1]) * h + 0.5))
            self.assertTrue(numpy.array_equal(rel[i], image[y0:y1, x0:x1]))
            self.assertTrue(numpy.array_equal(absolute[i], image[2:6, 3:8]))
            y0 = int(numpy.floor(anchors[i][0] * h + 0.5))
            y1 = int(numpy.floor((anchors[i][0] + shapes[i][0]) * h + 0.5))
            x0 = int(numpy.floor(anchors[i][1] * w + 0.5))
            x1 = int(numpy.floor((anchors[i][1] + shapes[i][1]) * w + 0.5))
            self.assertTrue(numpy.array_equal(by_axes[i],
                                              image[y0:y1, x0:x1]))
        too_far = [numpy.float32([0.8, 0.0])] * len(images)
        with self.assertRaisesRegex(ValueError, "outside the sample"):
            run_nodes([images, too_far, shapes], lambda x, a, s: (
                fn.slice(x, a, s),), layouts=["HWC"])


class DecodeSliceTest(unittest.TestCase):

    def test_image_slice_is_decode_then_slice(self):
        # decoders.image_slice decodes only the window's rows and columns
        # of a JPEG: the pixels of decoding whole and slicing, per pixel,
        # for windows anywhere (and a PNG, decoded whole).
        with tempfile.TemporaryDirectory() as root:
            make_coco(root, count=6)
            names = sorted(os.listdir(os.path.join(root, "images")))
            encoded = []
            for n in names:
                with open(os.path.join(root, "images", n), "rb") as f:
                    encoded.append(numpy.frombuffer(f.read(), numpy.uint8))
            png = io_png(numpy.random.default_rng(3).integers(
                0, 256, (33, 47, 3), dtype=numpy.uint8))
            encoded.append(png)
        rng = numpy.random.default_rng(9)
        files = encoded * 4
        anchors = [numpy.float32(rng.uniform(0, 0.6, 2)) for _ in files]
        shapes = [numpy.float32(rng.uniform(0.05, 0.4, 2)) for _ in files]
        fused, plain, gray = run_nodes([files, anchors, shapes],
                                       lambda x, a, s: (
            fn.decoders.image_slice(x, a, s),
            fn.slice(fn.decoders.image(x), a, s),
            fn.decoders.image_slice(x, a, s, output_type=types.GRAY)))
        for f, p, g in zip(fused, plain, gray):
            self.assertGreater(f.size, 0)
            self.assertTrue(numpy.array_equal(f, p))
            self.assertEqual(g.shape, f.shape[:2] + (1,))
        with self.assertRaisesRegex(ValueError, "outside the sample"):
            run_nodes([files, [numpy.float32([0.9, 0])] * len(files),
                       shapes], lambda x, a, s: (
                fn.decoders.image_slice(x, a, s),))


def io_png(pixels):
    """The PNG file of `pixels`, as uint8 bytes."""
    import io
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return numpy.frombuffer(out.getvalue(), numpy.uint8)


@pipeline_def
def ssd_pipeline(file_root, annotations_file, anchors):
    """DALI's SSD training pipeline (its PyTorch example), on the CPU."""
    images, bboxes, labels = fn.readers.coco(
        file_root=file_root, annotations_file=annotations_file,
        skip_empty=True, ratio=True, ltrb=True, random_shuffle=False,
        shuffle_after_epoch=True, name="Reader")
    crop_begin, crop_size, bboxes, labels = fn.random_bbox_crop(
        bboxes, labels, device="cpu", aspect_ratio=[0.5, 2.0],
        thresholds=[0, 0.1, 0.3, 0.5, 0.7, 0.9], scaling=[0.3, 1.0],
        bbox_layout="xyXY", allow_no_crop=True, num_attempts=50)
    images = fn.decoders.image_slice(images, crop_begin, crop_size,
                                     device="cpu", output_type=types.RGB)
    flip_coin = fn.random.coin_flip(probability=0.5)
    images = fn.resize(images, resize_x=300, resize_y=300,
                       min_filter=types.DALIInterpType.INTERP_TRIANGULAR)
    images = fn.crop_mirror_normalize(
        images, crop=(300, 300), mean=[0.485 * 255, 0.456 * 255,
                                       0.406 * 255],
        std=[0.229 * 255, 0.224 * 255, 0.225 * 255], mirror=flip_coin,
        dtype=types.FLOAT, output_layout="CHW", pad_output=False)
    bboxes = fn.bb_flip(bboxes, ltrb=True, horizontal=flip_coin)
    bboxes, labels = fn.box_encoder(bboxes, labels, criteria=0.5,
                                    anchors=anchors)
    return images, bboxes, labels


class SsdPipelineTest(unittest.TestCase):

    def test_ssd_recipe_into_torch(self):
        with tempfile.TemporaryDirectory() as root:
            annotations = make_coco(root, count=12)
            grid = numpy.linspace(0, 1, 5)
            anchors = [[x0, y0, x1, y1] for x0, x1 in zip(grid, grid[1:])
                       for y0, y1 in zip(grid, grid[1:])]
            anchors = numpy.float32(anchors).ravel().tolist()
            pipe = ssd_pipeline(batch_size=4, num_threads=2, device_id=0,
                                seed=7, file_root=os.path.join(root,
                                                               "images"),
                                annotations_file=annotations,
                                anchors=anchors)
            pipe.build()
            loader = DALIGenericIterator(
                pipe, ["images", "boxes", "labels"], reader_name="Reader")
            batches = 0
            labelled = 0
            for data in loader:
                images = data[0]["images"]
                self.assertEqual(tuple(images.shape[1:]), (3, 300, 300))
                self.assertEqual(tuple(data[0]["boxes"].shape[1:]), (16, 4))
                self.assertEqual(tuple(data[0]["labels"].shape[1:]), (16,))
                labels = data[0]["labels"].numpy()
                self.assertTrue(((labels >= 0) & (labels <= 3)).all())
                labelled += int((labels > 0).sum())
                batches += 1
            # 12 images, 3 without an object (skip_empty): 9, 3 batches.
            self.assertEqual(batches, 3)
            self.assertGreater(labelled, 0)

    def test_ops_names(self):
        # DALI's object API names reach the same operators.
        self.assertIs(ops.BbFlip()._call, fn.bb_flip)
        self.assertIs(ops.BBoxPaste(ratio=2)._call, fn.bbox_paste)
        self.assertIs(ops.RandomBBoxCrop()._call, fn.random_bbox_crop)
        self.assertIs(ops.BoxEncoder(anchors=[0, 0, 1, 1])._call,
                      fn.box_encoder)
        self.assertIs(ops.readers.COCO()._call, fn.readers.coco)
        self.assertIs(ops.COCOReader()._call, fn.readers.coco)
        self.assertIs(ops.decoders.ImageSlice()._call, fn.decoders.image_slice)


if __name__ == "__main__":
    unittest.main()
