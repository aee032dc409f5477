"""fn.readers: DALI's file, webdataset, caffe, numpy, tfrecord, coco and
mxnet readers on actorflow's file_reader (numpy: with npy_decode; coco:
with table_rows for the annotations), webdataset_reader, caffe_reader,
tfrecord_reader and recordio_reader."""

import fnmatch
import json
import os
import types as _pytypes

import numpy

from actorflow.dali import types
from actorflow.dali._args import _check_rest, _node
from actorflow.dali.pipeline import Pipeline, _image_size
from actorflow.pipeline import _add_operator

# ---- readers ----

_IMAGE_FILTERS = ["*.jpg", "*.jpeg", "*.png", "*.bmp", "*.tif", "*.tiff",
                  "*.pnm", "*.ppm", "*.pgm", "*.pbm", "*.jp2", "*.webp"]


def _list_files(root, filters, case_sensitive):
    """DALI's listing of file_root: each sorted subdirectory is a class
    (label = its index), its files (recursively) matching a filter, sorted."""
    def matches(name):
        if case_sensitive:
            return any(fnmatch.fnmatchcase(name, f) for f in filters)
        return any(fnmatch.fnmatchcase(name.lower(), f.lower())
                   for f in filters)
    if not os.path.isdir(root):
        raise ValueError(f"fn.readers.file: file_root '{root}' is not a "
                         "directory")
    files, labels = [], []
    classes = sorted(d for d in os.listdir(root)
                     if os.path.isdir(os.path.join(root, d)))
    for label, cls in enumerate(classes):
        found = []
        for dirpath, _, names in os.walk(os.path.join(root, cls)):
            found += [os.path.join(dirpath, n) for n in names if matches(n)]
        files += sorted(found)
        labels += [label] * len(found)
    if not files:
        raise ValueError(f"fn.readers.file: no file under '{root}' matches "
                         f"{filters}")
    return files, labels


def _shard_attrs(shard_id, num_shards, stick_to_shard, random_shuffle,
                 initial_fill, shuffle_after_epoch=False):
    """Every reader's sharding and shuffling attrs, DALI's way: with
    random_shuffle the whole list is permuted (shuffle_list) before a
    window of initial_fill; shuffle_after_epoch shuffles the whole shard."""
    attrs = {"shard_id": int(shard_id), "num_shards": int(num_shards),
             "stick_to_shard": bool(stick_to_shard)}
    if shuffle_after_epoch:
        attrs["shuffle_window"] = 2 ** 31 - 1  # the whole shard
    elif random_shuffle:
        attrs["shuffle_window"] = max(2, int(initial_fill))
        attrs["shuffle_list"] = True
    return attrs


def _register_reader(node, attrs, pad_last_batch, sizes):
    """Tells the pipeline being defined of a reader: its reader_meta, and
    `sizes` (None, or () -> each image's (height, width)) for the box of
    decoded images."""
    pipe = Pipeline.current()
    if isinstance(pipe, Pipeline):
        pipe._reader_sizes = sizes
        pipe._add_reader(node.name, {
            "number_of_shards": attrs["num_shards"],
            "shard_id": attrs["shard_id"],
            "pad_last_batch": bool(pad_last_batch),
            "stick_to_shard": attrs["stick_to_shard"]})


def _read_file_list(path, root):
    """(files, labels) from a file list (`path [label]` per line; blank
    lines and lines starting with # skipped), relative paths under root."""
    files, labels = [], []
    try:
        with open(path) as listing:
            lines = listing.read().splitlines()
    except OSError as e:
        raise ValueError(f"fn.readers.file: file_list '{path}': "
                         f"{e.strerror}") from None
    for number, line in enumerate(lines, 1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) > 2 or (len(fields) == 2 and
                               not fields[1].lstrip("-").isdigit()):
            raise ValueError(f"fn.readers.file: {path}:{number}: expected "
                             f"'path [label]', got '{line.strip()}'")
        files.append(os.path.join(root, fields[0]))
        labels.append(int(fields[1]) if len(fields) == 2 else 0)
    return files, labels


def _file_reader(*, file_root=None, files=None, labels=None, file_list=None,
                 file_filters=None, case_sensitive_filter=False,
                 shard_id=0, num_shards=1, random_shuffle=False,
                 initial_fill=1024, shuffle_after_epoch=False,
                 stick_to_shard=False, pad_last_batch=False, name=None,
                 device="cpu", dir_filters=None, **rest):
    """(data, labels): each file's bytes and its label (int32 [1])."""
    _check_rest("readers.file", rest)
    if random_shuffle and shuffle_after_epoch:
        raise ValueError("fn.readers.file: random_shuffle and "
                         "shuffle_after_epoch exclude each other")
    attrs = _shard_attrs(shard_id, num_shards, stick_to_shard,
                         random_shuffle, initial_fill, shuffle_after_epoch)
    if file_root is not None and file_list is not None and files is None:
        # As in DALI: the list's paths are relative to file_root (without
        # it, to the list's own directory: the C++ reader's rule).
        files, labels = _read_file_list(os.fspath(file_list),
                                        os.fspath(file_root))
        file_list, file_root = None, None
    given = [k for k, v in (("file_root", file_root), ("files", files),
                            ("file_list", file_list)) if v is not None]
    if file_root is not None and files is not None:
        given = ["files"]  # relative to file_root, as in DALI
    if len(given) != 1:
        raise ValueError("fn.readers.file: give one of file_root, files and "
                         f"file_list (got {given or 'none'})")
    if file_list is not None:
        attrs["file_list"] = os.fspath(file_list)
    elif files is not None:
        root = "" if file_root is None else os.fspath(file_root)
        attrs["files"] = [os.path.join(root, os.fspath(f)) for f in files]
        attrs["labels"] = ([int(x) for x in labels] if labels is not None
                           else list(range(len(files))))
    else:
        listed, listed_labels = _list_files(
            os.fspath(file_root), file_filters or _IMAGE_FILTERS,
            case_sensitive_filter)
        attrs["files"], attrs["labels"] = listed, listed_labels
    data, label = _add_operator("file_reader", [], 2, "cpu", name, attrs)
    files = attrs.get("files")
    _register_reader(data, attrs, pad_last_batch, None if files is None else (
        lambda: [_image_size(path) for path in files]))
    return _node(data), _node(label, unit_dim=True)


def _tar_image_sizes(paths):
    """(height, width) of every image among the tar files' members, from
    each member's header (a bound for decoded images: members that are no
    image are passed over)."""
    import tarfile
    from actorflow import _actorflow
    sizes = []
    for path in paths:
        try:
            with tarfile.open(path) as tar:
                for member in tar:
                    if not member.isfile():
                        continue
                    data = tar.extractfile(member)
                    head = data.read(1 << 16)
                    if head[:2] == b"\xff\xd8" and member.size > len(head):
                        head += data.read()  # a header past a large EXIF
                    try:
                        sizes.append(_actorflow._image_size(head))
                    except (ValueError, RuntimeError):
                        pass  # no image: a label, json, ...
        except (OSError, tarfile.TarError) as e:
            raise ValueError(f"fn.readers.webdataset: '{path}': {e}") \
                from None
    return sizes


def _webdataset_reader(*, paths, ext, index_paths=None,
                       missing_component_behavior="", dtypes=None,
                       shard_id=0, num_shards=1, random_shuffle=False,
                       initial_fill=1024, stick_to_shard=False,
                       pad_last_batch=False, case_sensitive_extensions=True,
                       name=None, device="cpu", **rest):
    """WebDataset tar shards (local paths or http(s):// URLs): one output
    per entry of `ext` (alternatives separated by ';'), each a sample's
    component as bytes (or `dtypes`). index_paths are accepted and not
    needed: the tar headers are read when the pipeline is built."""
    _check_rest("readers.webdataset", rest)
    if not case_sensitive_extensions:
        raise ValueError("fn.readers.webdataset: case_sensitive_extensions="
                         "False is not in actorflow.dali")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if isinstance(ext, str):
        ext = [ext]
    attrs = {"paths": [os.fspath(p) for p in paths], "ext": list(ext),
             "missing_component_behavior":
                 missing_component_behavior or "empty",
             **_shard_attrs(shard_id, num_shards, stick_to_shard,
                            random_shuffle, initial_fill)}
    if dtypes is not None:
        if not isinstance(dtypes, (list, tuple)):
            dtypes = [dtypes] * len(ext)
        attrs["dtypes"] = [types.to_numpy_dtype(d).name for d in dtypes]
    nodes = _add_operator("webdataset_reader", [], len(ext), "cpu", name,
                          attrs)
    if not isinstance(nodes, tuple):
        nodes = (nodes,)
    tars = list(attrs["paths"])
    _register_reader(nodes[0], attrs, pad_last_batch,
                     lambda: _tar_image_sizes(tars))
    nodes = tuple(_node(n) for n in nodes)
    return nodes[0] if len(nodes) == 1 else nodes


def _caffe_reader(*, path, image_available=True, label_available=True,
                  shard_id=0, num_shards=1, random_shuffle=False,
                  initial_fill=1024, stick_to_shard=False,
                  pad_last_batch=False, name=None, device="cpu", **rest):
    """A Caffe LMDB (`path`: its directory): (images, labels), or the one
    that is available. Images: each record's encoded bytes (raw records:
    uint8 [height, width, channels]); labels: int32 [1]."""
    _check_rest("readers.caffe", rest)
    if not image_available and not label_available:
        raise ValueError("fn.readers.caffe: image_available and "
                         "label_available are both False: nothing to read")
    attrs = {"path": os.fspath(path),
             "image_available": bool(image_available),
             "label_available": bool(label_available),
             **_shard_attrs(shard_id, num_shards, stick_to_shard,
                            random_shuffle, initial_fill)}
    count = int(bool(image_available)) + int(bool(label_available))
    nodes = _add_operator("caffe_reader", [], count, "cpu", name, attrs)
    if not isinstance(nodes, tuple):
        nodes = (nodes,)
    from actorflow import _actorflow
    _register_reader(nodes[0], attrs, pad_last_batch,
                     lambda: _actorflow._caffe_image_sizes(attrs["path"]))
    out = []
    if image_available:
        out.append(_node(nodes[0]))
    if label_available:
        out.append(_node(nodes[-1], unit_dim=True))
    return out[0] if len(out) == 1 else tuple(out)


def _npy_header(path):
    """(dtype name, shape) from a .npy file's header."""
    import numpy
    try:
        with open(path, "rb") as f:
            version = numpy.lib.format.read_magic(f)
            read = (numpy.lib.format.read_array_header_1_0
                    if version == (1, 0) else
                    numpy.lib.format.read_array_header_2_0)
            shape, _, dtype = read(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"fn.readers.numpy: '{path}': {e}") from None
    return dtype.name, tuple(shape)


def _numpy_reader(*, file_root=None, files=None, file_list=None,
                  file_filter="*.npy", shard_id=0, num_shards=1,
                  random_shuffle=False, initial_fill=1024,
                  shuffle_after_epoch=False, stick_to_shard=False,
                  pad_last_batch=False, name=None, device="cpu", **rest):
    """NumPy .npy files, one array per sample, of the files' own dtype and
    shapes: `files` (relative to file_root when given), a `file_list` (a
    path per line), or every file under file_root matching file_filter,
    sorted. The headers are read when the pipeline is defined: every file
    must hold the same dtype and rank; the batch's box is the largest
    extent along each axis."""
    roi = sorted(k for k in rest if k.startswith(("roi_", "rel_roi"))
                 or k in ("out_of_bounds_policy", "fill_value"))
    if roi:
        raise ValueError(f"fn.readers.numpy: {', '.join(roi)}: regions of "
                         "interest are not in actorflow.dali (read the "
                         "arrays, then fn.slice)")
    rest = {k: v for k, v in rest.items()
            if k not in ("use_o_direct", "register_buffers",
                         "cache_header_information")}
    _check_rest("readers.numpy", rest)
    root = "" if file_root is None else os.fspath(file_root)
    if files is not None:
        paths = [os.path.join(root, os.fspath(f)) for f in files]
    elif file_list is not None:
        with open(os.fspath(file_list)) as listing:
            paths = [os.path.join(root, line.split()[0])
                     for line in listing if line.strip()]
    elif file_root is not None:
        if not os.path.isdir(root):
            raise ValueError(f"fn.readers.numpy: file_root '{root}' is not "
                             "a directory")
        paths = sorted(os.path.join(d, n) for d, _, names in os.walk(root)
                       for n in names if fnmatch.fnmatchcase(n, file_filter))
    else:
        raise ValueError("fn.readers.numpy: give file_root, files or "
                         "file_list")
    if not paths:
        raise ValueError(f"fn.readers.numpy: no file under '{root}' matches "
                         f"'{file_filter}'")
    headers = [_npy_header(p) for p in paths]
    dtype, first = headers[0]
    for path, (other, shape) in zip(paths, headers):
        if other != dtype or len(shape) != len(first):
            raise ValueError(
                f"fn.readers.numpy: '{path}' holds {other} {shape} where "
                f"'{paths[0]}' holds {dtype} {first}: every file must have "
                "one dtype and rank")
    largest = [max(shape[a] for _, shape in headers)
               for a in range(len(first))]
    data, _ = _file_reader(files=paths, shard_id=shard_id,
                           num_shards=num_shards,
                           random_shuffle=random_shuffle,
                           initial_fill=initial_fill,
                           shuffle_after_epoch=shuffle_after_epoch,
                           stick_to_shard=stick_to_shard,
                           pad_last_batch=pad_last_batch, name=name)
    pipe = Pipeline.current()
    if isinstance(pipe, Pipeline):
        pipe._reader_sizes = None  # no images: the box is known here
    node = _add_operator("npy_decode", [data], 1, "cpu", None,
                         {"dtype": dtype, "max_shape": largest})
    return _node(node, device=device)


def _tfrecord_reader(*, path, index_path=None, features, shard_id=0,
                     num_shards=1, random_shuffle=False, initial_fill=1024,
                     stick_to_shard=False, pad_last_batch=False, name=None,
                     device="cpu", **rest):
    """TFRecord files (`path`: one or a list), each record a
    tf.train.Example; a dict of one output per entry of `features`
    (actorflow.dali.tfrecord's FixedLenFeature / VarLenFeature).
    index_path is accepted and not needed: the files' framing is read when
    the pipeline is built."""
    from actorflow.dali import tfrecord as tfrec
    rest = {k: v for k, v in rest.items()
            if k not in ("use_o_direct", "dont_use_mmap")}
    _check_rest("readers.tfrecord", rest)
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    if not features:
        raise ValueError("fn.readers.tfrecord: give features")
    kinds, shapes, defaults = [], [], []
    for key, spec in features.items():
        where = f"fn.readers.tfrecord: feature '{key}'"
        if spec.dtype not in (tfrec.int64, tfrec.float32, tfrec.string):
            raise ValueError(f"{where}: dtype {spec.dtype!r} (tfrec.int64, "
                             "tfrec.float32 or tfrec.string)")
        if isinstance(spec, tfrec.VarLenFeature):
            if spec.dtype == tfrec.string:
                raise ValueError(f"{where}: a VarLenFeature of strings is "
                                 "not in actorflow.dali")
            shape = "var"
        elif isinstance(spec, tfrec.FixedLenFeature):
            if spec.dtype == tfrec.string and spec.shape:
                raise ValueError(f"{where}: a string feature is one value "
                                 "(shape ()) in actorflow.dali")
            shape = ",".join(str(d) for d in spec.shape)
        else:
            raise ValueError(f"{where}: a tfrec.FixedLenFeature or "
                             "tfrec.VarLenFeature")
        if spec.dtype == tfrec.string:
            if spec.default_value not in ("", b"", None):
                raise ValueError(f"{where}: a string default other than "
                                 "'' is not in actorflow.dali")
            fallback = 0.0
        else:
            fallback = float(spec.default_value or 0)
        kinds.append(spec.dtype)
        shapes.append(shape)
        defaults.append(fallback)
    attrs = {"paths": [os.fspath(p) for p in paths],
             "features": list(features), "kinds": kinds, "shapes": shapes,
             "defaults": defaults,
             **_shard_attrs(shard_id, num_shards, stick_to_shard,
                            random_shuffle, initial_fill)}
    nodes = _add_operator("tfrecord_reader", [], len(features), "cpu", name,
                          attrs)
    if not isinstance(nodes, tuple):
        nodes = (nodes,)
    # Decoded images: resize or crop them (no pass over the records).
    _register_reader(nodes[0], attrs, pad_last_batch, None)
    return {key: _node(node, device=device)
            for key, node in zip(features, nodes)}


def _mxnet_reader(*, path, index_path=None, shard_id=0, num_shards=1,
                  random_shuffle=False, initial_fill=1024,
                  stick_to_shard=False, pad_last_batch=False, name=None,
                  device="cpu", **rest):
    """(data, labels): MXNet RecordIO image records (`path`: one .rec file
    or a list, read in order as one dataset), each image's encoded bytes
    and its labels, float32 [1] (or [n] for a record of n labels).
    index_path is accepted and not needed: the files' framing is read when
    the pipeline is built."""
    _check_rest("readers.mxnet", rest)
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    if not paths:
        raise ValueError("fn.readers.mxnet: give path (the .rec files)")
    attrs = {"paths": [os.fspath(p) for p in paths],
             **_shard_attrs(shard_id, num_shards, stick_to_shard,
                            random_shuffle, initial_fill)}
    data, labels = _add_operator("recordio_reader", [], 2, "cpu", name,
                                 attrs)
    # Decoded images: resize or crop them (no pass over the records).
    _register_reader(data, attrs, pad_last_batch, None)
    return _node(data, device=device), _node(labels, device=device)


def _coco_annotations(path, *, images, ltrb, ratio, skip_empty,
                      size_threshold, include_iscrowd, avoid_class_remapping):
    """DALI's reading of a COCO annotations file: (file names, per image
    its boxes (float32 [M, 4]), labels and id), images in id order (or
    `images`' order), categories renumbered 1.. in the file's order."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise ValueError(f"fn.readers.coco: annotations_file '{path}': "
                         f"{e.strerror}") from None
    except ValueError as e:
        raise ValueError(f"fn.readers.coco: annotations_file '{path}': not "
                         f"JSON ({e})") from None
    infos = sorted(doc.get("images", []), key=lambda i: i["id"])
    if images is not None:
        by_name = {i["file_name"]: i for i in infos}
        infos = [by_name[n] for n in images if n in by_name]
    categories = {c["id"]: k + 1
                  for k, c in enumerate(doc.get("categories", []))}
    per_image = {i["id"]: [] for i in infos}
    for number, a in enumerate(doc.get("annotations", [])):
        if a.get("iscrowd", 0) and not include_iscrowd:
            continue
        box = numpy.asarray(a.get("bbox", ()), numpy.float32)
        if box.shape != (4,):
            raise ValueError(f"fn.readers.coco: {path}: annotation {number}: "
                             f"bbox must hold 4 values, got {box.size}")
        if box[2] < size_threshold or box[3] < size_threshold:
            continue
        if a.get("image_id") in per_image:
            per_image[a["image_id"]].append((box, a["category_id"], number))
    files, boxes, labels, ids = [], [], [], []
    for info in infos:
        found = per_image[info["id"]]
        if skip_empty and not found:
            continue
        rows = numpy.zeros((len(found), 4), numpy.float32)
        classes = []
        for k, (box, category, number) in enumerate(found):
            if ltrb:
                box = box.copy()
                box[2:] += box[:2]
            if ratio:
                size = numpy.float32([info["width"], info["height"]] * 2)
                box = box / size
            rows[k] = box
            if avoid_class_remapping:
                classes.append(int(category))
            elif category in categories:
                classes.append(categories[category])
            else:
                raise ValueError(
                    f"fn.readers.coco: {path}: annotation {number}: "
                    f"category_id {category} is not in 'categories'")
        files.append(info["file_name"])
        boxes.append(rows)
        labels.append(classes)
        ids.append(int(info["id"]))
    if not files:
        raise ValueError(f"fn.readers.coco: {path}: no images"
                         + (" with annotations" if skip_empty else ""))
    return files, boxes, labels, ids


def _table(index, rows, width, dtype):
    """Per sample, row `index` of `rows` (a list of arrays): float32 or
    int32 values."""
    rows = [numpy.asarray(r, dtype).ravel() for r in rows]
    offsets = [0]
    for row in rows:
        offsets.append(offsets[-1] + row.size)
    attr = "values" if dtype == numpy.float32 else "int_values"
    return _add_operator("table_rows", [index], 1, "cpu", None,
                         {attr: numpy.concatenate(rows).tolist(),
                          "offsets": offsets, "row_width": width})


def _coco_reader(*, file_root=None, annotations_file=None, ltrb=False,
                 ratio=False, skip_empty=False, size_threshold=0.1,
                 include_iscrowd=True, avoid_class_remapping=False,
                 image_ids=False, images=None, polygon_masks=False,
                 pixelwise_masks=False, shard_id=0, num_shards=1,
                 random_shuffle=False, initial_fill=1024,
                 shuffle_after_epoch=False, stick_to_shard=False,
                 pad_last_batch=False, name=None, device="cpu",
                 preprocessed_annotations="",
                 save_preprocessed_annotations=False,
                 save_preprocessed_annotations_dir="", **rest):
    """(images, boxes, labels[, image_ids]): each image's bytes, its boxes
    float32 [M, 4] (xywh, or ltrb; in pixels, or relative with ratio), their
    labels int32 [M, 1] and, with image_ids, its id int32 [1]; sharded and
    shuffled as fn.readers.file."""
    _check_rest("readers.coco", rest)
    for arg, value in (("polygon_masks", polygon_masks),
                       ("pixelwise_masks", pixelwise_masks),
                       ("preprocessed_annotations", preprocessed_annotations),
                       ("save_preprocessed_annotations",
                        save_preprocessed_annotations)):
        if value:
            raise ValueError(f"fn.readers.coco: {arg} is not in "
                             "actorflow.dali (boxes, labels and ids only)")
    if file_root is None or annotations_file is None:
        raise ValueError("fn.readers.coco: give file_root and "
                         "annotations_file")
    path = os.fspath(annotations_file)
    try:
        files, boxes, labels, ids = _coco_annotations(
            path, images=images, ltrb=ltrb, ratio=ratio,
            skip_empty=skip_empty, size_threshold=float(size_threshold),
            include_iscrowd=include_iscrowd,
            avoid_class_remapping=avoid_class_remapping)
    except (KeyError, TypeError) as e:
        raise ValueError(f"fn.readers.coco: {path}: not COCO's layout (an "
                         f"image or annotation without {e}, or of another "
                         "shape)") from None
    data, index = _file_reader(
        file_root=file_root, files=files, labels=list(range(len(files))),
        shard_id=shard_id, num_shards=num_shards,
        random_shuffle=random_shuffle, initial_fill=initial_fill,
        shuffle_after_epoch=shuffle_after_epoch,
        stick_to_shard=stick_to_shard, pad_last_batch=pad_last_batch,
        name=name, device=device)
    outputs = [data,
               _node(_table(index, boxes, 4, numpy.float32)),
               _node(_table(index, labels, 1, numpy.int32))]
    if image_ids:
        outputs.append(_node(_table(index, [[i] for i in ids], 0,
                                    numpy.int32)))
    return tuple(outputs)


readers = _pytypes.SimpleNamespace(file=_file_reader,
                                   webdataset=_webdataset_reader,
                                   caffe=_caffe_reader, numpy=_numpy_reader,
                                   tfrecord=_tfrecord_reader,
                                   coco=_coco_reader, mxnet=_mxnet_reader)
readers.file.__name__ = "file"
readers.webdataset.__name__ = "webdataset"
readers.caffe.__name__ = "caffe"
readers.numpy.__name__ = "numpy"
readers.tfrecord.__name__ = "tfrecord"
readers.coco.__name__ = "coco"
readers.mxnet.__name__ = "mxnet"
