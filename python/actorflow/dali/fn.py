"""DALI's `fn`: operators with DALI's names, arguments and defaults, on
actorflow's operators (docs/python.md, "Coming from DALI", lists each
mapping and what is not there). Performance hints DALI takes
(bytes_per_sample_hint, preserve, ...) are accepted and have no effect;
an argument that would change results and is not supported is a
ValueError naming it."""

import fnmatch
import math
import os
import types as _pytypes

from actorflow.dali import types
from actorflow.dali.pipeline import Pipeline, _say_host_once
from actorflow.pipeline import _add_operator

# Arguments that only tune DALI's own memory or scheduling.
_HINTS = frozenset({
    "bytes_per_sample_hint", "preserve", "seed", "hw_decoder_load",
    "host_memory_padding", "device_memory_padding",
    "host_memory_padding_jpeg2k", "device_memory_padding_jpeg2k",
    "preallocate_width_hint", "preallocate_height_hint", "affine",
    "hybrid_huffman_threshold", "split_stages", "use_chunk_allocator",
    "use_fast_idct", "jpeg_fancy_upsampling", "memory_stats",
    "read_ahead", "prefetch_queue_depth", "dont_use_mmap", "lazy_init",
    "skip_cached_images", "tensor_init_bytes", "num_threads",
    "decoding_threads", "cuda_stream", "use_copy_kernel", "no_copy",
    "blocking", "parallel", "minibatch_size", "adjust_color",
})


def _check_rest(op, rest):
    unknown = sorted(k for k in rest if k not in _HINTS)
    if unknown:
        raise ValueError(
            f"fn.{op}: {', '.join(repr(k) for k in unknown)}: not supported "
            "by actorflow.dali (docs/python.md, 'Coming from DALI')")


def _device(op, device):
    if device not in ("cpu", "mixed", "gpu"):
        raise ValueError(f"fn.{op}: device '{device}' (cpu, mixed or gpu)")
    if device != "cpu":
        _say_host_once(device)
    return device


def _node(node, layout=None, unit_dim=None, device="cpu", like=None):
    if like is not None:
        node.layout, node.unit_dim = like.layout, like.unit_dim
        node.bound = like.bound
        if like.device == "gpu":
            device = "gpu"
    if layout is not None:
        node.layout = layout
    if unit_dim is not None:
        node.unit_dim = unit_dim
    node.device = "gpu" if device in ("gpu", "mixed") else "cpu"
    return node


# ---- random values as arguments ----

class RandomArgument:
    """What fn.random.* returns: one value per sample, drawn from the
    pipeline's seed, the operator, the epoch and the sample's position.
    It is an argument of another operator (mirror=, horizontal=,
    crop_pos_x=, ...), where that operator draws it; not a pipeline
    output."""

    def __init__(self, kind, stream=None, inverted=False, **params):
        self.kind = kind
        self.params = params
        # Which value it is: every operator given this node (or arithmetic
        # on it) draws the same one per sample, as in DALI. inverted: it is
        # the value negated (a coin flip: its complement).
        self.stream = _new_stream() if stream is None else stream
        self.inverted = inverted

    def _derived(self, kind, flip, **params):
        return RandomArgument(kind, stream=self.stream,
                              inverted=self.inverted != flip, **params)

    def stream_code(self):
        """The attr value `<arg>_stream` (pipeline/sample_args.h)."""
        return self.stream | ((1 << 40) if self.inverted else 0)

    def _affine(self, scale, shift):
        """scale * value + shift, for uniform and normal values."""
        if self.kind == "uniform" and self.params["values"] is None:
            lo, hi = (scale * r + shift for r in self.params["range"])
            return self._derived("uniform", scale < 0,
                                 range=(min(lo, hi), max(lo, hi)),
                                 values=None)
        if self.kind == "normal":
            return self._derived(
                "normal", scale < 0, mean=scale * self.params["mean"] + shift,
                stddev=abs(scale) * self.params["stddev"])
        return NotImplemented

    def __rsub__(self, other):
        # 1 - coin_flip(p) is coin_flip(1 - p).
        if self.kind == "coin_flip" and other == 1:
            return self._derived("coin_flip", True,
                                 probability=1 - self.params["probability"])
        return self._affine(-1.0, float(other))

    def __add__(self, other):
        return self._affine(1.0, float(other))

    def __sub__(self, other):
        return self._affine(1.0, -float(other))

    def __mul__(self, other):
        return self._affine(float(other), 0.0)

    def __truediv__(self, other):
        return self._affine(1.0 / float(other), 0.0)

    def __neg__(self):
        return self._affine(-1.0, 0.0)

    __radd__ = __add__
    __rmul__ = __mul__

    def __repr__(self):
        return f"fn.random.{self.kind}({self.params})"


def _coin_flip(*, probability=0.5, dtype=None, shape=None, device="cpu",
               **rest):
    _check_rest("random.coin_flip", rest)
    if shape not in (None, (), []):
        raise ValueError("fn.random.coin_flip: shape: only one value per "
                         "sample, used as an argument")
    if not 0 <= probability <= 1:
        raise ValueError(f"fn.random.coin_flip: probability {probability} "
                         "is not in [0, 1]")
    return RandomArgument("coin_flip", probability=float(probability))


def _uniform(*, range=(-1.0, 1.0), values=None, dtype=None, shape=None,
             device="cpu", **rest):
    _check_rest("random.uniform", rest)
    return RandomArgument("uniform", range=tuple(float(r) for r in range),
                          values=values)


def _normal(*, mean=0.0, stddev=1.0, dtype=None, shape=None, device="cpu",
            **rest):
    _check_rest("random.normal", rest)
    return RandomArgument("normal", mean=float(mean), stddev=float(stddev))


random = _pytypes.SimpleNamespace(coin_flip=_coin_flip, uniform=_uniform,
                                  normal=_normal)

_streams_outside = [0]  # random values made outside a pipeline's definition


def _new_stream():
    """The next random value's number in the pipeline being defined (so the
    same definitions give the same numbers, hence the same draws)."""
    pipe = Pipeline.current()
    holder = pipe.__dict__ if isinstance(pipe, Pipeline) else None
    if holder is None:
        _streams_outside[0] += 1
        return _streams_outside[0] + (1 << 30)
    holder["_random_streams"] = holder.get("_random_streams", 0) + 1
    return holder["_random_streams"]


def _probability(op, arg, value, attrs):
    """A per-sample 0/1 argument (mirror=, horizontal=) as the probability
    our operators take (attrs[arg]): 0, 1, False, True, or
    fn.random.coin_flip(p) (then also attrs[arg + "_stream"])."""
    if isinstance(value, RandomArgument):
        if value.kind != "coin_flip":
            raise ValueError(f"fn.{op}: {arg}: takes 0/1 or "
                             f"fn.random.coin_flip, got {value!r}")
        attrs[arg + "_stream"] = value.stream_code()
        attrs[arg] = value.params["probability"]
        return
    if isinstance(value, types.Constant):
        value = value.value.item()
    if value in (0, 1):  # ints, bools, floats 0.0 / 1.0
        attrs[arg] = float(value)
        return
    raise ValueError(f"fn.{op}: {arg}: 0 or 1 (or fn.random.coin_flip), "
                     f"got {value!r}")


def _fixed(op, arg, value):
    """A scalar argument that must not vary per sample."""
    if isinstance(value, RandomArgument):
        raise ValueError(
            f"fn.{op}: {arg}={value!r}: per-sample values for '{arg}' are "
            "not in actorflow.dali (docs/python.md, 'Coming from DALI')")
    if isinstance(value, types.Constant):
        return value.value.tolist()
    return value


def _per_sample(op, arg, value, attrs, ours=None):
    """A scalar argument our operator may draw per sample: a number, a
    types.Constant, or fn.random.uniform / normal / coin_flip (attrs
    `<arg>_uniform`, `_normal`, `_coin_flip`: pipeline/sample_args.h)."""
    ours = ours or arg
    if isinstance(value, RandomArgument):
        if value.kind == "uniform":
            if value.params["values"] is not None:
                raise ValueError(f"fn.{op}: {arg}: fn.random.uniform(values="
                                 "...) is not in actorflow.dali")
            attrs[ours + "_uniform"] = list(value.params["range"])
        elif value.kind == "normal":
            attrs[ours + "_normal"] = [value.params["mean"],
                                       value.params["stddev"]]
        else:
            attrs[ours + "_coin_flip"] = value.params["probability"]
        attrs[ours + "_stream"] = value.stream_code()
        return
    if isinstance(value, types.Constant):
        value = value.value.item()
    attrs[ours] = float(value)


def _hw(op, arg, value):
    """A (height, width) pair from a scalar or a pair."""
    value = _fixed(op, arg, value)
    if isinstance(value, (int, float)):
        value = [value, value]
    value = [int(round(float(v))) for v in value]
    if len(value) != 2:
        raise ValueError(f"fn.{op}: {arg}: one size or (height, width), "
                         f"got {value}")
    return value


def _floats(value):
    value = _fixed("", "", value)
    if isinstance(value, (int, float)):
        return [float(value)]
    return [float(v) for v in value]


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
    attrs = {"shard_id": int(shard_id), "num_shards": int(num_shards),
             "stick_to_shard": bool(stick_to_shard)}
    if shuffle_after_epoch:
        attrs["shuffle_window"] = 2 ** 31 - 1  # the whole shard
    elif random_shuffle:
        attrs["shuffle_window"] = max(2, int(initial_fill))
    given = [k for k, v in (("file_root", file_root), ("files", files),
                            ("file_list", file_list)) if v is not None]
    if file_root is not None and file_list is not None:
        attrs["file_list"] = os.fspath(file_list)  # paths relative to it
        given = ["file_list"]
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
    pipe = Pipeline.current()
    if isinstance(pipe, Pipeline):
        pipe._reader_files = attrs.get("files")
        pipe._add_reader(data.name, {
            "number_of_shards": int(num_shards), "shard_id": int(shard_id),
            "pad_last_batch": bool(pad_last_batch),
            "stick_to_shard": bool(stick_to_shard)})
    return _node(data), _node(label, unit_dim=True)


def _webdataset_reader(*, paths, ext, index_paths=None,
                       missing_component_behavior="", dtypes=None,
                       shard_id=0, num_shards=1, random_shuffle=False,
                       initial_fill=1024, stick_to_shard=False,
                       pad_last_batch=False, case_sensitive_extensions=True,
                       name=None, device="cpu", **rest):
    """WebDataset tar shards (local files): one output per entry of `ext`
    (alternatives separated by ';'), each a sample's component as bytes
    (or `dtypes`). index_paths are accepted and not needed: the tar headers
    are read when the pipeline is built."""
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
             "shard_id": int(shard_id), "num_shards": int(num_shards),
             "stick_to_shard": bool(stick_to_shard)}
    if random_shuffle:
        attrs["shuffle_window"] = max(2, int(initial_fill))
    if dtypes is not None:
        if not isinstance(dtypes, (list, tuple)):
            dtypes = [dtypes] * len(ext)
        attrs["dtypes"] = [types.to_numpy_dtype(d).name for d in dtypes]
    nodes = _add_operator("webdataset_reader", [], len(ext), "cpu", name,
                          attrs)
    if not isinstance(nodes, tuple):
        nodes = (nodes,)
    pipe = Pipeline.current()
    if isinstance(pipe, Pipeline):
        pipe._reader_files = None
        pipe._add_reader(nodes[0].name, {
            "number_of_shards": int(num_shards), "shard_id": int(shard_id),
            "pad_last_batch": bool(pad_last_batch),
            "stick_to_shard": bool(stick_to_shard)})
    nodes = tuple(_node(n) for n in nodes)
    return nodes[0] if len(nodes) == 1 else nodes


readers = _pytypes.SimpleNamespace(file=_file_reader,
                                   webdataset=_webdataset_reader)
readers.file.__name__ = "file"
readers.webdataset.__name__ = "webdataset"


# ---- decoders ----

def _color(op, output_type):
    if output_type in (None, types.RGB, "rgb"):
        return "rgb"
    if output_type in (types.GRAY, "gray"):
        return "gray"
    raise ValueError(f"fn.{op}: output_type {output_type}: RGB or GRAY")


def _image_decoder(data, *, device="cpu", output_type=types.RGB, name=None,
                   **rest):
    """JPEG/PNG -> uint8 HWC."""
    _check_rest("decoders.image", rest)
    _device("decoders.image", device)
    node = _add_operator("decode", [data], 1, "cpu", name,
                         {"color": _color("decoders.image", output_type)})
    node = _node(node, layout="HWC", device=device)
    node.bound = _largest_side
    return node


def _image_random_crop_decoder(data, *, device="cpu", output_type=types.RGB,
                               random_area=(0.08, 1.0),
                               random_aspect_ratio=(3 / 4, 4 / 3),
                               num_attempts=10, name=None, **rest):
    """Decode, then the ImageNet crop (a random window of the image, left
    at its own size)."""
    _check_rest("decoders.image_random_crop", rest)
    _device("decoders.image_random_crop", device)
    decoded = _add_operator(
        "decode", [data], 1, "cpu", None,
        {"color": _color("decoders.image_random_crop", output_type)})
    node = _add_operator("random_resized_crop", [decoded], 1, "cpu", name,
                         {"random_area": _floats(random_area),
                          "random_aspect_ratio": _floats(random_aspect_ratio),
                          "num_attempts": int(num_attempts)})
    node = _node(node, layout="HWC", device=device)
    node.bound = _largest_side
    return node


def _largest_side(sizes):
    return max(max(h, w) for h, w in sizes)


decoders = _pytypes.SimpleNamespace(image=_image_decoder,
                                    image_random_crop=_image_random_crop_decoder)
decoders.image.__name__ = "image"
decoders.image_random_crop.__name__ = "image_random_crop"


# ---- image operators ----

_LINEAR = (None, types.INTERP_LINEAR, types.INTERP_TRIANGULAR)


def _interp(op, interp_type):
    if interp_type not in _LINEAR:
        raise ValueError(
            f"fn.{op}: interp_type {interp_type}: INTERP_LINEAR or "
            "INTERP_TRIANGULAR (both bilinear here)")


def random_resized_crop(data, *, size, random_area=(0.08, 1.0),
                        random_aspect_ratio=(3 / 4, 4 / 3), num_attempts=10,
                        interp_type=None, antialias=True, device="cpu",
                        name=None, **rest):
    _check_rest("random_resized_crop", rest)
    _interp("random_resized_crop", interp_type)
    _device("random_resized_crop", device)
    node = _add_operator("random_resized_crop", [data], 1, "cpu", name,
                         {"size": _hw("random_resized_crop", "size", size),
                          "random_area": _floats(random_area),
                          "random_aspect_ratio": _floats(random_aspect_ratio),
                          "num_attempts": int(num_attempts)})
    node = _node(node, like=data, device=device)
    node.bound = None
    return node


def resize(data, *, resize_x=None, resize_y=None, resize_shorter=None,
           resize_longer=None, size=None, mode="default", max_size=None,
           interp_type=None, antialias=True, min_filter=None,
           mag_filter=None, dtype=None, device="cpu", name=None, **rest):
    """resize_x and resize_y, size (height, width), resize_shorter, or
    mode "not_smaller" with both sides equal."""
    _check_rest("resize", rest)
    _interp("resize", interp_type)
    for f in (min_filter, mag_filter):
        _interp("resize", f)
    _device("resize", device)
    for arg, value in (("resize_longer", resize_longer),
                       ("max_size", max_size)):
        if value is not None:
            raise ValueError(f"fn.resize: '{arg}': not supported by "
                             "actorflow.dali")
    x = None if resize_x is None else _fixed("resize", "resize_x", resize_x)
    y = None if resize_y is None else _fixed("resize", "resize_y", resize_y)
    attrs = {}
    if resize_shorter is not None:
        if x is not None or y is not None or size is not None:
            raise ValueError("fn.resize: resize_shorter with another size")
        attrs["shorter"] = int(round(float(
            _fixed("resize", "resize_shorter", resize_shorter))))
    else:
        if size is not None:
            y, x = _hw("resize", "size", size)
        if x is None or y is None:
            raise ValueError(
                "fn.resize: give resize_x and resize_y (or size), or "
                "resize_shorter; one side alone is not in actorflow.dali")
        x, y = int(round(float(x))), int(round(float(y)))
        if mode == "not_smaller" and x == y:
            attrs["shorter"] = x
        elif mode in ("default", "stretch"):
            attrs["size"] = [y, x]
        else:
            raise ValueError(f"fn.resize: mode '{mode}' with {x} x {y}: "
                             "default, stretch, or not_smaller with a square")
    node = _add_operator("resize", [data], 1, "cpu", name, attrs)
    node = _node(node, like=data, device=device)
    node.bound = None
    if "shorter" in attrs and data.bound is not None:
        shorter = attrs["shorter"]
        node.bound = lambda sizes: max(
            shorter, max(math.ceil(shorter * max(h, w) / min(h, w)) + 1
                         for h, w in sizes))
    if dtype is not None and types.to_numpy_dtype(dtype).name != "uint8":
        node = cast(node, dtype=dtype)
    return node


def _crop_pos(op, x, y):
    """"center" or "random" from DALI's crop_pos_x / crop_pos_y."""
    def kind(v):
        if isinstance(v, RandomArgument) and v.kind == "uniform" and \
                v.params["range"] == (0.0, 1.0) and v.params["values"] is None:
            return "random"
        v = _fixed(op, "crop_pos", v)
        if float(v) == 0.5:
            return "center"
        return None
    kx, ky = kind(x), kind(y)
    if kx is None or ky is None or kx != ky:
        raise ValueError(
            f"fn.{op}: crop_pos_x={x!r}, crop_pos_y={y!r}: both 0.5 (centre) "
            "or both fn.random.uniform(range=(0, 1)) are in actorflow.dali")
    return kx


def _crop_size(op, crop, crop_h, crop_w):
    if crop is not None:
        return _hw(op, "crop", crop)
    if crop_h or crop_w:
        return [int(crop_h), int(crop_w)]
    return None


def crop(data, *, crop=None, crop_h=0, crop_w=0, crop_pos_x=0.5,
         crop_pos_y=0.5, dtype=None, out_of_bounds_policy="error",
         device="cpu", name=None, **rest):
    _check_rest("crop", rest)
    _device("crop", device)
    if out_of_bounds_policy != "error":
        raise ValueError("fn.crop: out_of_bounds_policy: 'error' only")
    size = _crop_size("crop", crop, crop_h, crop_w)
    if size is None:
        raise ValueError("fn.crop: give crop (or crop_h and crop_w)")
    pos = _crop_pos("crop", crop_pos_x, crop_pos_y)
    node = _add_operator("crop", [data], 1, "cpu", name,
                         {"size": size, "random": pos == "random"})
    node = _node(node, like=data, device=device)
    node.bound = None
    if dtype is not None and types.to_numpy_dtype(dtype).name != "uint8":
        node = cast(node, dtype=dtype)
    return node


def crop_mirror_normalize(data, *, dtype=types.FLOAT, output_layout="CHW",
                          crop=None, crop_h=0, crop_w=0, crop_pos_x=0.5,
                          crop_pos_y=0.5, mirror=0, mean=0.0, std=1.0,
                          scale=1.0, shift=0.0, pad_output=False,
                          out_of_bounds_policy="error", device="cpu",
                          name=None, **rest):
    """uint8 HWC -> float32 CHW: ((v - mean) / std) * scale + shift of the
    (mirrored) window."""
    _check_rest("crop_mirror_normalize", rest)
    _device("crop_mirror_normalize", device)
    if types.to_numpy_dtype(dtype).name != "float32":
        raise ValueError(f"fn.crop_mirror_normalize: dtype {dtype}: FLOAT "
                         "only")
    if output_layout not in ("CHW", "HWC"):
        raise ValueError(f"fn.crop_mirror_normalize: output_layout "
                         f"'{output_layout}': CHW or HWC")
    if pad_output:
        raise ValueError("fn.crop_mirror_normalize: pad_output is not in "
                         "actorflow.dali")
    if out_of_bounds_policy != "error":
        raise ValueError("fn.crop_mirror_normalize: out_of_bounds_policy: "
                         "'error' only")
    scale = float(_fixed("crop_mirror_normalize", "scale", scale))
    shift = float(_fixed("crop_mirror_normalize", "shift", shift))
    if scale == 0:
        raise ValueError("fn.crop_mirror_normalize: scale 0")
    means, stds = _floats(mean), _floats(std)
    if len(means) != len(stds) and 1 not in (len(means), len(stds)):
        raise ValueError("fn.crop_mirror_normalize: mean and std: one value "
                         "or one per channel each")
    width = max(len(means), len(stds))
    means = means * width if len(means) == 1 else means
    stds = stds * width if len(stds) == 1 else stds
    # ((v - m) / s) * scale + shift == (v - (m - shift * s / scale)) /
    # (s / scale): the same operator, exactly.
    attrs = {"mean": [m - shift * s / scale for m, s in zip(means, stds)],
             "std": [s / scale for s in stds]}
    _probability("crop_mirror_normalize", "mirror", mirror, attrs)
    size = _crop_size("crop_mirror_normalize", crop, crop_h, crop_w)
    if size is not None:
        # The crop as its own operator, so that a decode and resize before
        # it fuse with it and compute only the window (docs/pipelines.md,
        # "Decoding less"); the values are the same.
        pos = _crop_pos("crop_mirror_normalize", crop_pos_x, crop_pos_y)
        data = _node(_add_operator("crop", [data], 1, "cpu", None,
                                   {"size": size, "random": pos == "random"}),
                     like=data)
    node = _add_operator("crop_mirror_normalize", [data], 1, "cpu", name,
                         attrs)
    node = _node(node, like=data, layout="CHW", device=device)
    if size is not None:
        node.bound = None
    if output_layout == "HWC":
        node = transpose(node, perm=[1, 2, 0], device=device)
    return node


def flip(data, *, horizontal=1, vertical=0, depthwise=0, device="cpu",
         name=None, **rest):
    _check_rest("flip", rest)
    _device("flip", device)
    if depthwise:
        raise ValueError("fn.flip: depthwise is not in actorflow.dali")
    attrs = {}
    _probability("flip", "horizontal", horizontal, attrs)
    _probability("flip", "vertical", vertical, attrs)
    node = _add_operator("flip", [data], 1, "cpu", name, attrs)
    return _node(node, like=data, device=device)


def cast(data, *, dtype, device="cpu", name=None, **rest):
    _check_rest("cast", rest)
    _device("cast", device)
    node = _add_operator("cast", [data], 1, "cpu", name,
                         {"to": types.to_numpy_dtype(dtype).name})
    return _node(node, like=data, device=device)


# ---- external source ----

def external_source(source=None, num_outputs=None, *, cycle=None, name=None,
                    device="cpu", layout=None, dtype=None, ndim=None,
                    batch=True, batch_info=False, **rest):
    """Data from Python: `source` (an iterable, iter()'d at every epoch's
    start, or a callable; with batch=False they give one sample per call,
    a callable taking a SampleInfo), or feed_input(). num_outputs: each
    call gives a tuple of that many batches. cycle: True/"quiet" starts
    an exhausted iterable over, "raise" (as the default) ends the epoch."""
    _check_rest("external_source", rest)
    _device("external_source", device)
    pipe = Pipeline.current()
    if not isinstance(pipe, Pipeline):
        raise RuntimeError("fn.external_source: call it while defining an "
                           "actorflow.dali Pipeline")
    count = 1 if num_outputs is None else int(num_outputs)
    dtypes = dtype if isinstance(dtype, (list, tuple)) else [dtype] * count
    layouts = layout if isinstance(layout, (list, tuple)) else \
        [layout] * count
    if len(dtypes) != count or len(layouts) != count:
        raise ValueError("fn.external_source: one dtype and layout per "
                         f"output ({count})")
    nodes = []
    for k in range(count):
        node_name = name if count == 1 else (
            None if name is None else f"{name}.{k}")
        node = _add_operator(
            "external_source", [], 1, "cpu", node_name,
            {"dtype": None if dtypes[k] is None
             else types.to_numpy_dtype(dtypes[k]).name, "shape": None})
        nodes.append(_node(node, layout=layouts[k] or "", device=device))
    if source is not None:
        pipe._feeds.append(_ExternalFeed(source, [n.name for n in nodes],
                                         num_outputs is not None, batch,
                                         cycle, batch_info))
    return nodes[0] if num_outputs is None else tuple(nodes)


class _ExternalFeed:
    """One `source=` of fn.external_source, pulled once per batch."""

    def __init__(self, source, names, tupled, batch, cycle, batch_info):
        self.source, self.names, self.tupled = source, names, tupled
        self.batch, self.batch_info = batch, batch_info
        if cycle not in (None, False, True, "no", "quiet", "raise"):
            raise ValueError(f"fn.external_source: cycle {cycle!r}: False, "
                             "True, 'no', 'quiet' or 'raise'")
        self.cycle = cycle in (True, "quiet")
        self.callable = callable(source) and not hasattr(source, "__next__") \
            and not hasattr(source, "__iter__")
        self.takes_arg = False
        if self.callable:
            try:
                import inspect
                params = [p for p in inspect.signature(source).parameters
                          .values() if p.default is p.empty and p.kind in
                          (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
                self.takes_arg = len(params) >= 1
            except (TypeError, ValueError):
                pass
        import inspect
        self.generator = inspect.isgeneratorfunction(source)
        if self.generator:
            self.callable = False
        self.iterator = None
        self.iteration = 0
        self.epoch = -1

    def _next(self, info):
        if self.callable:
            return self.source(info) if self.takes_arg else self.source()
        try:
            return next(self.iterator)
        except StopIteration:
            if not self.cycle:
                raise
            self.iterator = self._restart()
            return next(self.iterator)

    def _restart(self):
        return self.source() if self.generator else iter(self.source)

    def pull(self, pipe, epoch_begins):
        if epoch_begins:
            self.epoch += 1
            self.iteration = 0
            if not self.callable:
                self.iterator = self._restart()
        if self.batch:
            info = types.BatchInfo(self.iteration, self.epoch) \
                if self.batch_info else self.iteration
            data = self._next(info)
            outputs = data if self.tupled else (data,)
        else:
            n = pipe.batch_size
            samples = [self._next(types.SampleInfo(
                self.iteration * n + i, i, self.iteration, self.epoch))
                for i in range(n)]
            outputs = list(zip(*samples)) if self.tupled else (samples,)
        if len(outputs) != len(self.names):
            raise ValueError(f"fn.external_source: the source gave "
                             f"{len(outputs)} outputs, num_outputs is "
                             f"{len(self.names)}")
        for name, data in zip(self.names, outputs):
            pipe.feed_input(name, data)
        self.iteration += 1


# ---- augmentations ----

def _augment(op, data, attrs, device, name, layout=None, bound_same=True):
    _device(op, device)
    node = _node(_add_operator(op, [data], 1, "cpu", name, attrs), like=data,
                 device=device)
    if layout is not None:
        node.layout = layout
    if not bound_same:
        node.bound = None
    return node


def _fill(value):
    return None if value is None else _floats(value)


def _linear_only(op, interp_type):
    if interp_type not in (None, types.INTERP_LINEAR):
        raise ValueError(f"fn.{op}: interp_type {interp_type}: "
                         "INTERP_LINEAR only")


def brightness_contrast(data, *, brightness=1.0, brightness_shift=0.0,
                        contrast=1.0, contrast_center=None, dtype=None,
                        device="cpu", name=None, **rest):
    _check_rest("brightness_contrast", rest)
    attrs = {}
    _per_sample("brightness_contrast", "brightness", brightness, attrs)
    _per_sample("brightness_contrast", "brightness_shift", brightness_shift,
                attrs)
    _per_sample("brightness_contrast", "contrast", contrast, attrs)
    if contrast_center is not None:
        attrs["contrast_center"] = float(_fixed(
            "brightness_contrast", "contrast_center", contrast_center))
    node = _augment("brightness_contrast", data, attrs, device, name)
    return node if dtype is None else cast(node, dtype=dtype)


def brightness(data, *, brightness=1.0, brightness_shift=0.0, **kwargs):
    return brightness_contrast(data, brightness=brightness,
                               brightness_shift=brightness_shift, **kwargs)


def contrast(data, *, contrast=1.0, contrast_center=None, **kwargs):
    return brightness_contrast(data, contrast=contrast,
                               contrast_center=contrast_center, **kwargs)


def hsv(data, *, hue=0.0, saturation=1.0, value=1.0, dtype=None,
        device="cpu", name=None, **rest):
    _check_rest("hsv", rest)
    attrs = {}
    for arg, v in (("hue", hue), ("saturation", saturation),
                   ("value", value)):
        _per_sample("hsv", arg, v, attrs)
    node = _augment("hsv", data, attrs, device, name)
    return node if dtype is None else cast(node, dtype=dtype)


def hue(data, *, hue=0.0, **kwargs):
    return hsv(data, hue=hue, **kwargs)


def saturation(data, *, saturation=1.0, **kwargs):
    return hsv(data, saturation=saturation, **kwargs)


def color_twist(data, *, hue=0.0, saturation=1.0, brightness=1.0,
                contrast=1.0, dtype=None, device="cpu", name=None, **rest):
    _check_rest("color_twist", rest)
    attrs = {}
    for arg, v in (("hue", hue), ("saturation", saturation),
                   ("brightness", brightness), ("contrast", contrast)):
        _per_sample("color_twist", arg, v, attrs)
    node = _augment("color_twist", data, attrs, device, name)
    return node if dtype is None else cast(node, dtype=dtype)


def rotate(data, *, angle, fill_value=None, keep_size=False, size=None,
           interp_type=None, device="cpu", name=None, **rest):
    """Counter-clockwise by `angle` degrees; the output holds the whole
    turned image unless keep_size or size."""
    _check_rest("rotate", rest)
    _linear_only("rotate", interp_type)
    attrs = {"keep_size": bool(keep_size), "fill_value": _fill(fill_value)}
    if size is not None:
        attrs["size"] = _hw("rotate", "size", size)
    _per_sample("rotate", "angle", angle, attrs)
    node = _augment("rotate", data, attrs, device, name,
                    bound_same=keep_size and size is None)
    if data.bound is not None and not keep_size and size is None:
        inner = data.bound  # any turn fits in the diagonal
        node.bound = lambda sizes: int(math.ceil(inner(sizes) * 1.4143)) + 2
    return node


def warp_affine(data, *, matrix, size=None, fill_value=None,
                inverse_map=True, interp_type=None, device="cpu", name=None,
                **rest):
    """matrix: 2 x 3 (6 values), mapping output to input coordinates
    (inverse_map=False: input to output)."""
    _check_rest("warp_affine", rest)
    _linear_only("warp_affine", interp_type)
    attrs = {"matrix": _floats(matrix), "inverse_map": bool(inverse_map),
             "fill_value": _fill(fill_value)}
    if size is not None:
        attrs["size"] = _hw("warp_affine", "size", size)
    return _augment("warp_affine", data, attrs, device, name,
                    bound_same=size is None)


def erase(data, *, anchor, shape, axis_names="HW", fill_value=None,
          normalized_anchor=False, normalized_shape=False, normalized=None,
          device="cpu", name=None, **rest):
    _check_rest("erase", rest)
    if normalized is not None:
        normalized_anchor = normalized_shape = bool(normalized)
    attrs = {"anchor": _floats(anchor), "shape": _floats(shape),
             "axis_names": axis_names, "fill_value": _fill(fill_value),
             "normalized_anchor": bool(normalized_anchor),
             "normalized_shape": bool(normalized_shape)}
    return _augment("erase", data, attrs, device, name)


def paste(data, *, ratio, paste_x=0.5, paste_y=0.5, fill_value=None,
          device="cpu", name=None, **rest):
    _check_rest("paste", rest)
    attrs = {"fill_value": _fill(fill_value)}
    for arg, v in (("ratio", ratio), ("paste_x", paste_x),
                   ("paste_y", paste_y)):
        _per_sample("paste", arg, v, attrs)
    node = _augment("paste", data, attrs, device, name)
    if data.bound is not None:
        high = attrs.get("ratio_uniform", [attrs.get("ratio", 1.0)])[-1]
        inner = data.bound
        node.bound = lambda sizes: int(math.ceil(inner(sizes) * high))
    return node


def gaussian_blur(data, *, sigma=None, window_size=None, device="cpu",
                  name=None, **rest):
    _check_rest("gaussian_blur", rest)
    attrs = {}
    if sigma is not None:
        attrs["sigma"] = _floats(sigma)
    if window_size is not None:
        w = _fixed("gaussian_blur", "window_size", window_size)
        attrs["window_size"] = [int(x) for x in (
            w if isinstance(w, (list, tuple)) else [w])]
    return _augment("gaussian_blur", data, attrs, device, name)


def slice(data, *, start=None, shape=None, rel_start=None, rel_shape=None,
          axis_names="WH", out_of_bounds_policy="error", device="cpu",
          name=None, **rest):
    """A window by start/shape or rel_start/rel_shape, in axis_names order
    (DALI's default "WH": x first)."""
    _check_rest("slice", rest)
    if out_of_bounds_policy != "error":
        raise ValueError("fn.slice: out_of_bounds_policy: 'error' only")
    attrs = {"axis_names": axis_names}
    for arg, v in (("start", start), ("shape", shape),
                   ("rel_start", rel_start), ("rel_shape", rel_shape)):
        if v is not None:
            attrs[arg] = _floats(v)
    return _augment("slice", data, attrs, device, name,
                    bound_same=rel_shape is not None)


def transpose(data, *, perm, output_layout=None, transpose_layout=True,
              device="cpu", name=None, **rest):
    _check_rest("transpose", rest)
    perm = [int(p) for p in perm]
    layout = output_layout
    if layout is None and transpose_layout and len(data.layout) == len(perm):
        layout = "".join(data.layout[p] for p in perm)
    # The batch's bound fills every unknown side alike: a permutation
    # keeps it.
    return _augment("transpose", data, {"perm": perm}, device, name,
                    layout=layout or "")


def reshape(data, *, shape, layout=None, device="cpu", name=None, **rest):
    _check_rest("reshape", rest)
    node = _augment("reshape", data, {"shape": [int(d) for d in shape]},
                    device, name, layout=layout or "", bound_same=False)
    node.unit_dim = False
    return node


def one_hot(data, *, num_classes, axis=-1, dtype=types.FLOAT, on_value=1.0,
            off_value=0.0, device="cpu", name=None, **rest):
    """Integer labels -> float32 [..., num_classes] (a label [1] counts as
    a scalar, as in DALI)."""
    _check_rest("one_hot", rest)
    if axis != -1:
        raise ValueError("fn.one_hot: axis -1 only")
    node = _augment("one_hot", data,
                    {"num_classes": int(num_classes),
                     "on_value": float(on_value),
                     "off_value": float(off_value)},
                    device, name, bound_same=False)
    node.unit_dim = False
    if types.to_numpy_dtype(dtype).name != "float32":
        node = cast(node, dtype=dtype)
    return node


# ---- operators DALI has and actorflow.dali has not (yet) ----

def _missing(op):
    def call(*args, **kwargs):
        raise NotImplementedError(
            f"fn.{op} is not in actorflow.dali yet (docs/python.md, 'Coming "
            "from DALI', lists the operators there are)")
    call.__name__ = op.split(".")[-1]
    return call


for _op in ("normalize", "jitter", "water", "sphere", "coord_transform",
            "pad", "cat", "stack", "resize_crop_mirror", "noise"):
    globals()[_op] = _missing(_op)
readers.tfrecord = _missing("readers.tfrecord")
readers.numpy = _missing("readers.numpy")
readers.caffe = _missing("readers.caffe")
readers.mxnet = _missing("readers.mxnet")
readers.coco = _missing("readers.coco")
