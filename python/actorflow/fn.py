"""Pipeline operators, DALI's names: each call adds an operator to the
pipeline being defined (inside `with pipe:` or `define_graph`) and returns
its output node(s). Keywords are the C++ operators' attributes (docs/pipelines.md), plus a few DALI spellings noted per operator."""

import types as _types

from actorflow.pipeline import _add_operator


def _renamed(kwargs, aliases):
    for dali_name, ours in aliases.items():
        if dali_name in kwargs:
            if ours in kwargs:
                raise ValueError(
                    f"give '{ours}' or its DALI spelling '{dali_name}', not both")
            kwargs[ours] = kwargs.pop(dali_name)
    return kwargs


def external_source(source=None, *, name=None, dtype=None, shape=None,
                    device="cpu"):
    """Samples the caller feeds: Pipeline.feed_input(node, batch) in
    iter_setup, or `source` (an iterable, iter()'d at the start of every
    epoch, or a callable returning one batch per call; a batch is a list of
    per-sample arrays or one array [n, ...]). `dtype`:
    a numpy dtype or its name; without it the first batch fed sets it (as
    DALI takes the type of what is fed). `shape`: the largest sample's
    shape; without it the first batch fed sets it (twice its largest size
    in every dimension where samples differ). Until every external source
    has both, build() defers compiling (and its checks) to the first
    batch fed."""
    return _add_operator(
        "external_source", [], 1, device, name,
        {"dtype": None if dtype is None else _dtype_name(dtype),
         "shape": shape},
        source=source)


def decode_random_crop(data, *, device="cpu", name=None, **kwargs):
    """Decode, [resize,] crop in one step (`decode_random_crop`)."""
    return _add_operator("decode_random_crop", [data], 1, device, name, kwargs)


def resize(data, *, device="cpu", name=None, **kwargs):
    """`size` [h, w] or `shorter` (DALI: `resize_shorter`)."""
    kwargs = _renamed(kwargs, {"resize_shorter": "shorter"})
    return _add_operator("resize", [data], 1, device, name, kwargs)


def crop(data, *, device="cpu", name=None, **kwargs):
    """`size` [h, w] (DALI: `crop`), `random`."""
    kwargs = _renamed(kwargs, {"crop": "size"})
    return _add_operator("crop", [data], 1, device, name, kwargs)


def random_resized_crop(data, *, device="cpu", name=None, **kwargs):
    """The ImageNet crop: `random_area`, `random_aspect_ratio`,
    `num_attempts`, and `size` [h, w] to resize the window to."""
    return _add_operator("random_resized_crop", [data], 1, device, name,
                         kwargs)


def flip(data, *, device="cpu", name=None, **kwargs):
    """`horizontal`, `vertical`: probabilities."""
    return _add_operator("flip", [data], 1, device, name, kwargs)


def sleep(data, *, ms, device="cpu", name=None):
    """Passes each sample on unchanged after `ms` milliseconds (0 to
    60000): a slow stage on purpose, to rehearse what stalls() says about
    one. Not DALI's."""
    return _add_operator("sleep", [data], 1, device, name, {"ms": ms})


def crop_mirror_normalize(data, *, device="cpu", name=None, **kwargs):
    """uint8 HWC -> float32 CHW: `crop`, `crop_pos`, `mirror`, `mean`,
    `std`."""
    return _add_operator("crop_mirror_normalize", [data], 1, device, name,
                         kwargs)


def cast(data, *, device="cpu", name=None, **kwargs):
    """`to` (DALI: `dtype`): a numpy dtype or its name."""
    kwargs = _renamed(kwargs, {"dtype": "to"})
    if "to" in kwargs:
        kwargs["to"] = _dtype_name(kwargs["to"])
    return _add_operator("cast", [data], 1, device, name, kwargs)


def normalize(data, *, device="cpu", name=None, **kwargs):
    """On a batch (after fn.batch): `mean`, `std`, `axis`."""
    return _add_operator("normalize", [data], 1, device, name, kwargs)


def batch(*data, device="cpu", name=None, **kwargs):
    """Batches its inputs (one output each, in order) where a later operator
    works on batches (normalize, cast on a batch). A pipeline has at most
    one; without it the outputs are batched last. Every pipeline output must
    then come out of it. `max_shape` for samples of unknown size;
    device "mixed": copied to the GPU."""
    if not data:
        raise ValueError("fn.batch: give the nodes to batch")
    return _add_operator("batch", list(data), len(data), device, name, kwargs)


def _file_reader(*, name=None, **kwargs):
    """Files' bytes and labels: `dir` (DALI: `file_root`), `files`,
    `labels`, `file_list`, `shard_id`, `num_shards`, `stick_to_shard`,
    `shuffle_window`, `limit`, `elastic` (one global schedule that resumes
    at any number of ranks). Returns (data, labels)."""
    kwargs = _renamed(kwargs, {"file_root": "dir"})
    return _add_operator("file_reader", [], 2, "cpu", name, kwargs)


def _idx_reader(*, name=None, **kwargs):
    """IDX (MNIST format) images [rows, cols, 1] uint8 and, with `labels`,
    int32 labels: `images`, `labels`, `shard_id`, `num_shards`,
    `stick_to_shard`, `shuffle_window`, `limit`. Returns (images, labels),
    or images alone."""
    outputs = 2 if "labels" in kwargs else 1
    return _add_operator("idx_reader", [], outputs, "cpu", name, kwargs)


def _image_decoder(data, *, device="cpu", name=None, **kwargs):
    """JPEG or PNG -> uint8 HWC: `color` ("rgb", "gray"), `max_pixels`."""
    return _add_operator("decode", [data], 1, device, name, kwargs)


def _image_random_crop_decoder(data, *, device="cpu", name=None, **kwargs):
    """decode_random_crop: `size`, `random`, `resize_shorter`, ..."""
    return _add_operator("decode_random_crop", [data], 1, device, name, kwargs)


def _webdataset_reader(*, name=None, **kwargs):
    """WebDataset tar shards: `paths` (local paths or http(s):// URLs),
    `ext` (one output per entry; alternatives separated by ';'),
    `missing_component_behavior`, `dtypes`, `shard_id`, `num_shards`,
    `stick_to_shard`, `shuffle_window`, `limit`, `elastic`; for URLs
    `read_ahead_bytes`, `read_ahead_blocks`, `http_attempts`. Returns one
    node per entry of `ext`."""
    ext = kwargs.get("ext")
    if isinstance(ext, str):
        kwargs["ext"] = ext = [ext]
    if not ext:
        raise ValueError("fn.readers.webdataset: give ext, one entry per "
                         "output")
    return _add_operator("webdataset_reader", [], len(ext), "cpu", name,
                         kwargs)


def _caffe_reader(*, name=None, **kwargs):
    """A Caffe LMDB: `path` (its directory), `image_available`,
    `label_available` (both true: two outputs), `shard_id`, `num_shards`,
    `stick_to_shard`, `shuffle_window`, `limit`. Returns (images, labels)
    or the one available."""
    count = int(kwargs.get("image_available", True)) + int(
        kwargs.get("label_available", True))
    return _add_operator("caffe_reader", [], max(count, 1), "cpu", name,
                         kwargs)


readers = _types.SimpleNamespace(file=_file_reader, idx=_idx_reader,
                                 webdataset=_webdataset_reader,
                                 caffe=_caffe_reader)
readers.caffe.__name__ = "caffe"
readers.file.__name__ = "file"
readers.webdataset.__name__ = "webdataset"
readers.idx.__name__ = "idx"
decoders = _types.SimpleNamespace(image=_image_decoder,
                                  image_random_crop=_image_random_crop_decoder)


def _dtype_name(dtype):
    if isinstance(dtype, str):
        return dtype
    import numpy
    return numpy.dtype(dtype).name
