"""DALI's `fn`: operators with DALI's names, arguments and defaults, on
actorflow's operators (docs/python.md, "Coming from DALI", lists each
mapping and what is not there). Performance hints DALI takes
(bytes_per_sample_hint, preserve, ...) are accepted and have no effect;
an argument that would change results and is not supported is a
ValueError naming it. Readers, external sources and augmentations live in
their own modules (_readers, _external, _augment); decoders and the
resize/crop family here."""

import math
import types as _pytypes

from actorflow.dali import types
from actorflow.dali._args import (  # noqa: F401
    RandomArgument, _check_rest, _device, _fixed, _floats, _hw, _node,
    _probability, random)
from actorflow.dali._augment import (  # noqa: F401
    brightness, brightness_contrast, cast, color_twist, contrast, erase,
    gaussian_blur, hsv, hue, one_hot, paste, reshape, rotate, saturation,
    slice, transpose, warp_affine)
from actorflow.dali._external import external_source  # noqa: F401
from actorflow.dali._readers import readers
from actorflow.pipeline import _add_operator

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
