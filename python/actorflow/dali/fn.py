"""DALI's `fn`: operators with DALI's names, arguments and defaults, on
actorflow's operators (docs/python.md, "Coming from DALI", lists each
mapping and what is not there). Performance hints DALI takes
(bytes_per_sample_hint, preserve, ...) are accepted and have no effect;
an argument that would change results and is not supported is a
ValueError naming it. Readers, external sources and augmentations live in
their own modules (_readers, _external, _augment); decoders and the
resize/crop family here."""

import types as _pytypes

from actorflow.dali import types
from actorflow.dali._args import (  # noqa: F401
    RandomArgument, _check_rest, _device, _fixed, _floats, _hw, _node,
    _largest_draw, _per_sample, _probability, random)
from actorflow.dali._augment import (  # noqa: F401
    _cast, brightness, brightness_contrast, cast, cat, color_space_conversion,
    color_twist, contrast, coord_transform, erase, gaussian_blur, hsv, hue,
    jitter, jpeg_compression_distortion, noise, normalize, one_hot, pad,
    paste, reshape, rotate, saturation, shapes, slice, sphere, stack,
    transpose, warp_affine, water)
from actorflow.dali._detection import (  # noqa: F401
    bb_flip, bbox_paste, box_encoder, random_bbox_crop,
    window_attrs as _window_attrs)
from actorflow.dali._external import external_source  # noqa: F401
from actorflow.dali._python_function import python_function  # noqa: F401
from actorflow.dali._readers import readers
from actorflow import _actorflow
from actorflow.pipeline import _add_operator

# ---- decoders ----

def _color(op, output_type):
    if output_type in (None, types.RGB, "rgb"):
        return "rgb"
    if output_type in (types.GRAY, "gray"):
        return "gray"
    raise ValueError(f"fn.{op}: output_type {output_type}: RGB or GRAY")


def _image_decoder(data, *, device="cpu", output_type=types.RGB,
                   adjust_orientation=True, name=None, **rest):
    """JPEG/PNG -> uint8 HWC; a JPEG turned upright as its EXIF orientation
    says (adjust_orientation, as DALI's)."""
    _check_rest("decoders.image", rest)
    _device("decoders.image", device)
    node = _add_operator("decode", [data], 1, "cpu", name,
                         {"color": _color("decoders.image", output_type),
                          "adjust_orientation": bool(adjust_orientation)})
    node = _node(node, layout="HWC", device=device)
    node.bound = _largest_side
    return node


def _image_random_crop_decoder(data, *, device="cpu", output_type=types.RGB,
                               random_area=(0.08, 1.0),
                               random_aspect_ratio=(3 / 4, 4 / 3),
                               num_attempts=10, adjust_orientation=True,
                               name=None, **rest):
    """Decode, then the ImageNet crop (a random window of the upright image,
    left at its own size)."""
    _check_rest("decoders.image_random_crop", rest)
    _device("decoders.image_random_crop", device)
    decoded = _add_operator(
        "decode", [data], 1, "cpu", None,
        {"color": _color("decoders.image_random_crop", output_type),
         "adjust_orientation": bool(adjust_orientation)})
    node = _add_operator("random_resized_crop", [decoded], 1, "cpu", name,
                         {"random_area": _floats(random_area),
                          "random_aspect_ratio": _floats(random_aspect_ratio),
                          "num_attempts": int(num_attempts)})
    node = _node(node, layout="HWC", device=device)
    node.bound = _largest_side
    return node


def _largest_side(sizes):
    return max(max(h, w) for h, w in sizes)


def _image_slice_decoder(data, anchor, shape, /, *, device="cpu",
                         output_type=types.RGB, axis_names=None, axes=None,
                         normalized_anchor=True, normalized_shape=True,
                         adjust_orientation=True, name=None, **rest):
    """The window the anchor and shape nodes give per sample
    (random_bbox_crop's: relative, x and y first) of each decoded image;
    a JPEG's rows and columns outside it are not transformed."""
    _check_rest("decoders.image_slice", rest)
    _device("decoders.image_slice", device)
    # The window's axes in the decoded image's layout (HWC).
    hwc = _pytypes.SimpleNamespace(layout="HWC")
    attrs = _window_attrs("decoders.image_slice", hwc, axis_names, axes,
                          normalized_anchor, normalized_shape)
    attrs.update(color=_color("decoders.image_slice", output_type),
                 adjust_orientation=bool(adjust_orientation))
    node = _add_operator("decode_slice", [data, anchor, shape], 1, "cpu",
                         name, attrs)
    node = _node(node, layout="HWC", device=device)
    node.bound = _largest_side
    return node


decoders = _pytypes.SimpleNamespace(image=_image_decoder,
                                    image_random_crop=_image_random_crop_decoder,
                                    image_slice=_image_slice_decoder)
decoders.image.__name__ = "image"
decoders.image_random_crop.__name__ = "image_random_crop"


def peek_image_shape(data, *, dtype=types.INT64, image_type=types.RGB,
                     adjust_orientation=True, device="cpu", name=None,
                     **rest):
    """An encoded image's shape, [height, width, channels], from its header
    (nothing decoded): channels as `image_type` decodes it (3, or 1 for
    GRAY); height and width as shown upright (a JPEG's EXIF orientation)
    with adjust_orientation, as the decoders give it."""
    _check_rest("peek_image_shape", rest)
    _device("peek_image_shape", device)
    channels = 1 if _color("peek_image_shape", image_type) == "gray" else 3
    node = _add_operator("peek_image_shape", [data], 1, "cpu", name,
                         {"channels": channels,
                          "adjust_orientation": bool(adjust_orientation)})
    node = _node(node, layout="", device=device)
    if types.to_numpy_dtype(dtype).name != "int64":
        node = cast(node, dtype=dtype)
    return node


# ---- image operators ----

_LINEAR = (None, types.INTERP_LINEAR, types.INTERP_TRIANGULAR)


def _interp(op, interp_type):
    if interp_type not in _LINEAR:
        raise ValueError(
            f"fn.{op}: interp_type {interp_type}: INTERP_LINEAR or "
            "INTERP_TRIANGULAR")


def _antialias(op, antialias, *filters):
    """DALI's rule: linear filtering antialiases where the image shrinks
    when `antialias` (the default) or when a filter is INTERP_TRIANGULAR."""
    for f in filters:
        _interp(op, f)
    return bool(_fixed(op, "antialias", antialias)) or \
        types.INTERP_TRIANGULAR in filters


def random_resized_crop(data, *, size, random_area=(0.08, 1.0),
                        random_aspect_ratio=(3 / 4, 4 / 3), num_attempts=10,
                        interp_type=None, antialias=True, device="cpu",
                        name=None, **rest):
    _check_rest("random_resized_crop", rest)
    smooth = _antialias("random_resized_crop", antialias, interp_type)
    _device("random_resized_crop", device)
    node = _add_operator("random_resized_crop", [data], 1, "cpu", name,
                         {"size": _hw("random_resized_crop", "size", size),
                          "random_area": _floats(random_area),
                          "random_aspect_ratio": _floats(random_aspect_ratio),
                          "num_attempts": int(num_attempts),
                          "antialias": smooth})
    node = _node(node, like=data, device=device)
    node.bound = None
    return node


_RESIZE_MODES = ("default", "stretch", "not_larger", "not_smaller")


def _resize_pair(arg, value):
    """(height, width) floats from one value or a pair; 0 is a side not
    given, as in DALI."""
    value = _fixed("resize", arg, value)
    if isinstance(value, (int, float)):
        value = [value, value]
    value = [float(v) for v in value]
    if len(value) != 2 or any(not v >= 0 for v in value):
        raise ValueError(f"fn.resize: {arg}={value}: one size or (height, "
                         "width), none negative")
    return value


def resize(data, *, resize_x=None, resize_y=None, resize_shorter=None,
           resize_longer=None, size=None, mode="default", max_size=None,
           interp_type=None, antialias=True, min_filter=None,
           mag_filter=None, dtype=None, device="cpu", name=None, **rest):
    """One of: resize_x and/or resize_y, or size (height, width; 0 for a
    side not given), sized by mode ("default", "stretch", "not_larger",
    "not_smaller"); resize_shorter; resize_longer. max_size (one value or
    (height, width)) limits the result, as DALI's does."""
    _check_rest("resize", rest)
    # DALI's filters: interp_type for both ways, min_filter (shrinking)
    # and mag_filter (growing) each overriding it.
    filters = [f if f is not None else interp_type
               for f in (min_filter, mag_filter)]
    for f in filters:
        if f not in _LINEAR + (types.INTERP_NN,):
            raise ValueError(f"fn.resize: interp_type {f}: INTERP_LINEAR, "
                             "INTERP_TRIANGULAR or INTERP_NN")
    nearest = types.INTERP_NN in filters
    if nearest and filters != [types.INTERP_NN] * 2:
        raise ValueError(
            f"fn.resize: min_filter {filters[0]}, mag_filter {filters[1]}: "
            "INTERP_NN both ways or neither in actorflow.dali")
    smooth = False if nearest else _antialias(
        "resize", antialias, interp_type, min_filter, mag_filter)
    _device("resize", device)
    if mode not in _RESIZE_MODES:
        raise ValueError(f"fn.resize: mode '{mode}': one of "
                         f"{', '.join(_RESIZE_MODES)}")
    attrs = {}
    # A side may be drawn per sample: fn.random.uniform / normal. The rule
    # then sizes the batch's box by the largest value it can draw.
    drawn = {}

    def side(arg, value):
        if isinstance(value, RandomArgument):
            if value.kind == "coin_flip" or (
                    value.kind == "uniform" and
                    value.params["values"] is not None):
                raise ValueError(
                    f"fn.resize: {arg}={value!r}: a per-sample side is "
                    "fn.random.uniform(range=...) or fn.random.normal")
            drawn[arg] = value
            return _largest_draw(value)
        return _resize_pair(arg, value)[0]

    y = x = 0.0
    if resize_y is not None:
        y = side("resize_y", resize_y)
    if resize_x is not None:
        x = side("resize_x", resize_x)
    if size is not None:
        if x or y:
            raise ValueError("fn.resize: size with resize_x / resize_y")
        y, x = _resize_pair("size", size)
    sides = {}
    for arg, value in (("resize_shorter", resize_shorter),
                       ("resize_longer", resize_longer)):
        if value is not None:
            sides[arg] = side(arg, value)
    if (x > 0 or y > 0) + len(sides) != 1 or 0 in sides.values():
        raise ValueError(
            "fn.resize: give one of resize_x / resize_y / size, "
            "resize_shorter or resize_longer (each above 0)")
    if sides and mode != "default":
        raise ValueError(f"fn.resize: mode '{mode}' with {next(iter(sides))}"
                         ", which keeps the aspect ratio itself")
    limit = [0.0, 0.0] if max_size is None else _resize_pair("max_size",
                                                             max_size)
    if "resize_shorter" in sides:
        y = x = sides["resize_shorter"]
        rule_mode = "not_smaller"
        if "resize_shorter" not in drawn:
            attrs["shorter"] = int(round(y))
            y = x = float(attrs["shorter"])
    elif "resize_longer" in sides:
        y = x = sides["resize_longer"]
        rule_mode = "not_larger"
        if "resize_longer" not in drawn:
            attrs["longer"] = int(round(y))
            y = x = float(attrs["longer"])
    elif x > 0 and x == y and y.is_integer() and mode == "not_smaller" \
            and max_size is None and not drawn:
        # The same size by the same arithmetic as the rule's (RuleSize and
        # ShorterSideSize), and a plain resize fuses with its decoder.
        attrs["shorter"] = int(round(y))
        rule_mode = mode
    elif x > 0 and y > 0 and mode in ("default", "stretch") and \
            max_size is None and not drawn:
        attrs["size"] = [int(round(y)), int(round(x))]
        rule_mode = None  # one size for every sample
    else:
        for arg, value in (("resize_y", y), ("resize_x", x)):
            if arg not in drawn:
                attrs[arg] = value
        attrs["mode"] = mode
        rule_mode = mode
    ours = {"resize_shorter": "shorter", "resize_longer": "longer"}
    for arg, value in drawn.items():
        _per_sample("resize", arg, value, attrs, ours=ours.get(arg, arg))
    if max_size is not None:
        attrs["max_size"] = limit
    if nearest:
        attrs["interp"] = "nn"  # DALI's NN does not antialias
    else:
        attrs["antialias"] = smooth
    node = _add_operator("resize", [data], 1, "cpu", name, attrs)
    node = _node(node, like=data, device=device)
    node.bound = None
    if rule_mode is not None and data.bound is not None:
        # Each image's own size: the batch's box is the largest of them
        # (one pixel of room for rounding).
        def bound(sizes, rule=(y, x, rule_mode, *limit)):
            return 1 + max(max(_actorflow._resize_size(h, w, *rule))
                           for h, w in sizes)
        node.bound = bound
    if dtype is not None and types.to_numpy_dtype(dtype).name != "uint8":
        node = cast(node, dtype=dtype)
    return node


def _crop_pos(op, x, y):
    """The crop's placement attrs from DALI's crop_pos_x / crop_pos_y: each
    a number in [0, 1] (the window's first row is roundf(crop_pos_y *
    (height - crop height)), as DALI places it), or both
    fn.random.uniform(range=(0, 1)) (a window drawn anywhere)."""
    def drawn(v):
        return isinstance(v, RandomArgument) and v.kind == "uniform" and \
            v.params["range"] == (0.0, 1.0) and v.params["values"] is None
    if drawn(x) and drawn(y):
        return {"random": True}
    if drawn(x) or drawn(y):
        raise ValueError(
            f"fn.{op}: crop_pos_x={x!r}, crop_pos_y={y!r}: both numbers or "
            "both fn.random.uniform(range=(0, 1)) in actorflow.dali")
    pos = []
    for name, v in (("crop_pos_y", y), ("crop_pos_x", x)):
        v = float(_fixed(op, name, v))
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"fn.{op}: {name}={v}: within [0, 1]")
        pos.append(v)
    return {"random": False, "pos": pos}


def _crop_size(op, crop, crop_h, crop_w):
    if crop is not None:
        return _hw(op, "crop", crop)
    if crop_h or crop_w:
        return [int(crop_h), int(crop_w)]
    return None


def crop(data, *, crop=None, crop_h=0, crop_w=0, crop_pos_x=0.5,
         crop_pos_y=0.5, dtype=None, out_of_bounds_policy="error",
         fill_values=None, device="cpu", name=None, **rest):
    """DALI's crop: a window of crop (h, w) at crop_pos; one that leaves the
    image is the sample's error, or with out_of_bounds_policy "pad" filled
    with fill_values (0) there, or with "trim_to_shape" cut to the image."""
    _check_rest("crop", rest)
    _device("crop", device)
    if out_of_bounds_policy not in ("error", "pad", "trim_to_shape"):
        raise ValueError(
            f"fn.crop: out_of_bounds_policy '{out_of_bounds_policy}': "
            "'error', 'pad' or 'trim_to_shape'")
    size = _crop_size("crop", crop, crop_h, crop_w)
    if size is None:
        raise ValueError("fn.crop: give crop (or crop_h and crop_w)")
    attrs = {"size": size, **_crop_pos("crop", crop_pos_x, crop_pos_y)}
    if out_of_bounds_policy != "error":
        attrs["out_of_bounds"] = out_of_bounds_policy
        if fill_values is not None:
            attrs["fill_values"] = _floats(fill_values)
    node = _add_operator("crop", [data], 1, "cpu", name, attrs)
    node = _node(node, like=data, device=device)
    node.bound = None
    if dtype is not None and types.to_numpy_dtype(dtype).name != "uint8":
        node = cast(node, dtype=dtype)
    return node


_crop_window = crop  # for operators whose own argument is named crop


def crop_mirror_normalize(data, *, dtype=None, output_layout="CHW",
                          crop=None, crop_h=0, crop_w=0, crop_pos_x=0.5,
                          crop_pos_y=0.5, mirror=0, mean=0.0, std=1.0,
                          scale=1.0, shift=0.0, pad_output=False,
                          fill_values=0.0, out_of_bounds_policy="error",
                          rounding="round", output_dtype=None, device="cpu",
                          name=None, **rest):
    """uint8 HWC -> float32 CHW: ((v - mean) / std) * scale + shift of the
    (mirrored) window. pad_output: channels added up to a power of two (3
    -> 4), filled with fill_values (one value, or one per channel). dtype
    UINT8 or INT8: those values converted as DALI converts them, rounded
    (rounding="round": to the nearest, halves away from zero; "truncate":
    toward zero) and saturated. output_dtype: DALI's older name for
    dtype."""
    _check_rest("crop_mirror_normalize", rest)
    _device("crop_mirror_normalize", device)
    if output_dtype is not None and dtype is not None and \
            output_dtype != dtype:
        raise ValueError(f"fn.crop_mirror_normalize: dtype {dtype} and "
                         f"output_dtype {output_dtype} (its older name) "
                         "differ")
    dtype = dtype if dtype is not None else (
        output_dtype if output_dtype is not None else types.FLOAT)
    out_type = types.to_numpy_dtype(dtype).name
    half = out_type == "float16"
    if out_type not in ("float32", "float16", "uint8", "int8"):
        raise ValueError(f"fn.crop_mirror_normalize: dtype {dtype}: FLOAT, "
                         "FLOAT16, UINT8 or INT8")
    if rounding not in ("round", "truncate"):
        raise ValueError(f"fn.crop_mirror_normalize: rounding '{rounding}': "
                         "'round' or 'truncate'")
    if output_layout not in ("CHW", "HWC"):
        raise ValueError(f"fn.crop_mirror_normalize: output_layout "
                         f"'{output_layout}': CHW or HWC")
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
    if _fixed("crop_mirror_normalize", "pad_output", pad_output):
        attrs["pad_output"] = True
        attrs["fill_values"] = _floats(
            _fixed("crop_mirror_normalize", "fill_values", fill_values))
    size = _crop_size("crop_mirror_normalize", crop, crop_h, crop_w)
    if size is not None:
        # The crop as its own operator, so that a decode and resize before
        # it fuse with it and compute only the window (docs/pipelines.md,
        # "Decoding less"); the values are the same.
        place = _crop_pos("crop_mirror_normalize", crop_pos_x, crop_pos_y)
        data = _node(_add_operator("crop", [data], 1, "cpu", None,
                                   {"size": size, **place}),
                     like=data)
    node = _add_operator("crop_mirror_normalize", [data], 1, "cpu", name,
                         attrs)
    node = _node(node, like=data, layout="CHW", device=device)
    if size is not None:
        node.bound = None
    if out_type in ("uint8", "int8"):
        node = _cast(node, dtype, device, rounding=rounding)
    if output_layout == "HWC":
        node = transpose(node, perm=[1, 2, 0], device=device)
    node.half = half  # computed in float32, converted on the way out
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


def resize_crop_mirror(data, *, crop=None, crop_h=0, crop_w=0,
                       crop_pos_x=0.5, crop_pos_y=0.5, mirror=0,
                       resize_x=None, resize_y=None, resize_shorter=None,
                       resize_longer=None, max_size=None, interp_type=None,
                       antialias=True, min_filter=None, mag_filter=None,
                       device="cpu", name=None, **rest):
    """DALI's resize_crop_mirror: resize, then crop, then mirror
    horizontally where `mirror` (per sample) is 1, as those three give."""
    _check_rest("resize_crop_mirror", rest)
    resized = resize(data, resize_x=resize_x, resize_y=resize_y,
                     resize_shorter=resize_shorter,
                     resize_longer=resize_longer, max_size=max_size,
                     interp_type=interp_type, antialias=antialias,
                     min_filter=min_filter, mag_filter=mag_filter,
                     device=device)
    cropped = _crop_window(resized, crop=crop, crop_h=crop_h, crop_w=crop_w,
                           crop_pos_x=crop_pos_x, crop_pos_y=crop_pos_y,
                           device=device)
    return flip(cropped, horizontal=mirror, device=device, name=name)


# ---- DALI's names from before its readers, decoders and random
# namespaces (its fn keeps them as deprecated aliases) ----

file_reader = readers.file
caffe_reader = readers.caffe
mxnet_reader = readers.mxnet
coco_reader = readers.coco
numpy_reader = readers.numpy
image_decoder = decoders.image
image_decoder_random_crop = decoders.image_random_crop
image_decoder_slice = decoders.image_slice
coin_flip = random.coin_flip
uniform = random.uniform
normal_distribution = random.normal


# ---- operators DALI has and actorflow.dali has not (yet) ----

def _missing(op):
    def call(*args, **kwargs):
        raise NotImplementedError(
            f"fn.{op} is not in actorflow.dali yet (docs/python.md, 'Coming "
            "from DALI', lists the operators there are)")
    call.__name__ = op.split(".")[-1]
    return call


readers.caffe2 = _missing("readers.caffe2")


def __getattr__(name):
    # Any other name DALI's fn might have (fn.squeeze, fn.expand_dims, ...):
    # still an AttributeError (hasattr stays False), saying where to look.
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"module 'actorflow.dali.fn' has no attribute '{name}': fn.{name} is "
        "not in actorflow.dali (docs/python.md, 'Coming from DALI', lists "
        "the operators there are)")
