"""DALI's augmentations (pipeline/augment.h) and cast, with DALI's
arguments; scalar arguments may be fn.random values."""

import math
import numbers
from types import SimpleNamespace as _Namespace

import numpy

from actorflow.dali import _detection, types
from actorflow.dali._args import (_check_rest, _device, _fixed, _floats,
                                  _hw, _node, _per_sample)
from actorflow.pipeline import _add_operator

def cast(data, *, dtype, device="cpu", name=None, **rest):
    """To `dtype`; FLOAT16 is float32 converted as it leaves the pipeline
    (the runtime has no half type), so only the last operator gives it.
    Floating values become integers as DALI converts them: rounded to the
    nearest, halves away from zero, then saturated."""
    _check_rest("cast", rest)
    return _cast(data, dtype, device, name)


def _cast(data, dtype, device="cpu", name=None, rounding="round"):
    """cast's node; rounding as crop_mirror_normalize's: "round", or
    "truncate" (toward zero)."""
    _device("cast", device)
    to = types.to_numpy_dtype(dtype).name
    half = to == "float16"
    attrs = {"to": "float32" if half else to}
    if rounding == "round" and not to.startswith("float") and to != "bool":
        attrs["round"] = True
    node = _add_operator("cast", [data], 1, "cpu", name, attrs)
    node = _node(node, like=data, device=device)
    node.half = half
    return node


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


def _displace(op, data, attrs, interp_type, fill_value, mask, device,
              name):
    """water, sphere and jitter: DALI's displacement filters (nearest by
    default)."""
    if interp_type not in (None, types.INTERP_NN, types.INTERP_LINEAR):
        raise ValueError(f"fn.{op}: interp_type {interp_type}: INTERP_NN or "
                         "INTERP_LINEAR")
    attrs["linear"] = interp_type == types.INTERP_LINEAR
    attrs["fill_value"] = _fill(fill_value)
    _per_sample(op, "mask", mask, attrs)
    return _augment(op, data, attrs, device, name)


def water(data, *, ampl_x=10.0, ampl_y=10.0, freq_x=2 * math.pi / 128,
          freq_y=2 * math.pi / 128, phase_x=0.0, phase_y=0.0,
          interp_type=None, fill_value=0.0, mask=1, device="cpu", name=None,
          **rest):
    """Waves along each axis: pixel (y, x) reads (x + ampl_x sin(freq_x y +
    phase_x), y + ampl_y cos(freq_y x + phase_y))."""
    _check_rest("water", rest)
    attrs = {arg: float(_fixed("water", arg, value)) for arg, value in (
        ("ampl_x", ampl_x), ("ampl_y", ampl_y), ("freq_x", freq_x),
        ("freq_y", freq_y), ("phase_x", phase_x), ("phase_y", phase_y))}
    return _displace("water", data, attrs, interp_type, fill_value, mask,
                     device, name)


def sphere(data, *, interp_type=None, fill_value=0.0, mask=1, device="cpu",
           name=None, **rest):
    """A fisheye about the image's centre."""
    _check_rest("sphere", rest)
    return _displace("sphere", data, {}, interp_type, fill_value, mask,
                     device, name)


def jitter(data, *, nDegree=2, fill_value=0.0, interp_type=None, mask=1,
           device="cpu", name=None, **rest):
    """Each pixel moved by a random whole offset along each axis, from
    -nDegree / 2 to nDegree - 1 - nDegree / 2 (drawn from the pipeline's
    seed and the sample's position)."""
    _check_rest("jitter", rest)
    degree = int(_fixed("jitter", "nDegree", nDegree))
    if degree < 1:
        raise ValueError(f"fn.jitter: nDegree {degree}: at least 1")
    return _displace("jitter", data, {"n_degree": degree}, interp_type,
                     fill_value, mask, device, name)


def jpeg_compression_distortion(data, *, quality=95, device="cpu", name=None,
                                **rest):
    """JPEG's artefacts: each RGB image encoded at `quality` (1 to 100, per
    sample) and decoded."""
    _check_rest("jpeg_compression_distortion", rest)
    attrs = {}
    _per_sample("jpeg_compression_distortion", "quality", quality, attrs)
    return _augment("jpeg_compression_distortion", data, attrs, device, name)


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


def color_space_conversion(data, *, image_type, output_type, device="cpu",
                           name=None, **rest):
    """Between RGB, BGR, GRAY and YCbCr (uint8 or float32 HWC): RGB and BGR
    swap their first and last channel; to GRAY 0.299 R + 0.587 G + 0.114 B;
    from GRAY the value in every channel; YCbCr is JPEG's full range, as
    DALI's (docs/pipelines.md)."""
    _check_rest("color_space_conversion", rest)
    spaces = {types.RGB: "rgb", types.BGR: "bgr", types.GRAY: "gray",
              types.YCbCr: "ycbcr"}
    attrs = {}
    for arg, value in (("image_type", image_type),
                       ("output_type", output_type)):
        if value not in spaces:
            raise ValueError(
                f"fn.color_space_conversion: {arg} {value}: RGB, BGR, GRAY "
                "or YCbCr (actorflow.dali has no other color spaces)")
        attrs[arg] = spaces[value]
    return _augment("color_space_conversion", data, attrs, device, name)


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


def slice(data, anchor=None, window_shape=None, /, *, start=None,
          shape=None, rel_start=None, rel_shape=None, axis_names=None,
          axes=None, normalized_anchor=True, normalized_shape=True,
          out_of_bounds_policy="error", device="cpu", name=None, **rest):
    """A window by start/shape or rel_start/rel_shape, in axis_names order
    (DALI's default "WH": x first), or in `axes` order (dimension indices
    of the data's layout; axis_names wins when both are given, as in
    DALI). Or, as DALI's positional inputs, by an anchor and a shape node
    per sample (random_bbox_crop's), relative unless normalized_anchor /
    normalized_shape is False."""
    _check_rest("slice", rest)
    if out_of_bounds_policy != "error":
        raise ValueError("fn.slice: out_of_bounds_policy: 'error' only")
    if anchor is not None or window_shape is not None:
        if anchor is None or window_shape is None:
            raise ValueError("fn.slice: give both the anchor and the shape "
                             "inputs")
        if any(v is not None for v in (start, shape, rel_start, rel_shape)):
            raise ValueError("fn.slice: a window by input nodes takes no "
                             "start, shape, rel_start or rel_shape")
        return _detection.slice_at("slice", data, anchor, window_shape,
                                   axis_names, axes, normalized_anchor,
                                   normalized_shape, device, name)
    if axis_names is None and axes is not None:
        layout = getattr(data, "layout", "") or ""
        axes = [int(a) for a in ([axes] if isinstance(axes, int) else axes)]
        if not layout or any(not -len(layout) <= a < len(layout)
                             for a in axes):
            raise ValueError(
                f"fn.slice: axes {axes} of data whose layout is "
                f"'{layout}': give axis_names (letters such as \"HW\")")
        axis_names = "".join(layout[a] for a in axes)
    attrs = {"axis_names": axis_names or "WH"}
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


def _join_inputs(op, inputs, axis_name, layout, rest):
    _check_rest(op, rest)
    if not inputs:
        raise ValueError(f"fn.{op}: give at least one input")
    if axis_name is not None:
        if not layout or axis_name not in layout:
            raise ValueError(
                f"fn.{op}: axis_name '{axis_name}' is not in the inputs' "
                f"layout '{layout}'")
        return layout.index(axis_name)
    return None


def cat(*inputs, axis=0, axis_name=None, device="cpu", name=None, **rest):
    """DALI's cat: each sample's inputs joined along an existing axis (the
    extents along it add up; every other axis equal), of one type."""
    layout = inputs[0].layout if inputs else ""
    named = _join_inputs("cat", inputs, axis_name, layout, rest)
    axis = int(axis) if named is None else named
    _device("cat", device)
    if all(node.unit_dim for node in inputs):
        # Labels: [1] per sample in DALI, scalars here; joined along their
        # one axis they are the scalars stacked.
        if axis not in (0, -1):
            raise ValueError(f"fn.cat: axis {axis} for samples of shape [1]")
        node = _add_operator("stack", list(inputs), 1, "cpu", name,
                             {"axis": 0})
        return _node(node, like=inputs[0], unit_dim=False, device=device)
    node = _add_operator("cat", list(inputs), 1, "cpu", name,
                         {"axis": axis})
    node = _node(node, like=inputs[0], device=device)
    bounds = [n.bound for n in inputs if n.bound is not None]
    if bounds:
        # Images whose sizes only the files tell: the joined side is at most
        # as many times the largest.
        node.bound = lambda sizes: len(inputs) * max(b(sizes) for b in bounds)
    return node


def stack(*inputs, axis=0, axis_name=None, device="cpu", name=None, **rest):
    """DALI's stack: each sample's inputs (one shape and type) along a new
    axis inserted at `axis`, named `axis_name` in the layout."""
    _join_inputs("stack", inputs, None, "", rest)
    _device("stack", device)
    if any(node.bound is not None for node in inputs):
        raise ValueError(
            "fn.stack: images whose sizes only the files tell (decoded, not "
            "resized or cropped) stack only at one size: resize or crop "
            "them first")
    axis = int(axis)
    if all(node.unit_dim for node in inputs):
        # Labels, [1] per sample in DALI and scalars here: stacked they are
        # [n], then [n, 1] or [1, n] as DALI's axis puts the new one.
        if axis not in (0, 1, -1, -2):
            raise ValueError(
                f"fn.stack: axis {axis} for samples of shape [1]: in [-2, 1]")
        node = _add_operator("stack", list(inputs), 1, "cpu", name,
                             {"axis": 0})
        node = _node(node, like=inputs[0], unit_dim=False, device=device)
        shape = [len(inputs), 1] if axis in (0, -2) else [1, len(inputs)]
        return reshape(node, shape=shape, device=device)
    node = _add_operator("stack", list(inputs), 1, "cpu", name,
                         {"axis": axis})
    node = _node(node, like=inputs[0], device=device)
    layout = inputs[0].layout
    if layout and axis_name is not None:
        at = axis if axis >= 0 else axis + len(layout) + 1
        node.layout = layout[:at] + axis_name + layout[at:]
    else:
        node.layout = ""
    return node


class PadSpec:
    """fn.pad's arguments, applied as the batch leaves the pipeline (the
    batch's largest extents are known only then)."""

    def __init__(self, axes, fill_value, shape, align):
        self.axes, self.fill_value, self.shape, self.align = (
            axes, fill_value, shape, align)

    def apply(self, samples):
        """The samples padded at the end of each axis to the batch's largest
        extent (or the given one), rounded up to `align`."""
        if not samples:
            return samples
        rank = samples[0].ndim
        axes = range(rank) if self.axes is None else \
            [a + rank if a < 0 else a for a in self.axes]
        target = [None] * rank
        for k, axis in enumerate(axes):
            if not 0 <= axis < rank:
                raise ValueError(f"fn.pad: axis {axis} for samples of "
                                 f"{rank} dimension(s)")
            largest = max(s.shape[axis] for s in samples)
            want = self.shape[k] if self.shape and k < len(self.shape) \
                else -1
            if want >= 0:
                if want < largest:
                    raise ValueError(
                        f"fn.pad: shape {want} along axis {axis} is smaller "
                        f"than a sample's extent {largest}")
                largest = want
            align = self.align[k if len(self.align) > 1 else 0] \
                if self.align else 1
            target[axis] = -(-largest // align) * align
        padded = []
        for sample in samples:
            widths = [(0, 0 if t is None else t - e)
                      for e, t in zip(sample.shape, target)]
            padded.append(numpy.pad(sample, widths,
                                    constant_values=self.fill_value))
        return padded


def pad(data, *, fill_value=0.0, axes=None, axis_names=None, shape=None,
        align=None, device="cpu", name=None, **rest):
    """DALI's pad: every sample padded at the end of its axes (all, or
    `axes` / `axis_names`) with fill_value to the batch's largest extent, or
    `shape` (-1: the largest), rounded up to a multiple of `align`. Done as
    the batch leaves the pipeline: its output is a pipeline output."""
    _check_rest("pad", rest)
    _device("pad", device)
    if axis_names is not None:
        if axes is not None:
            raise ValueError("fn.pad: give axes or axis_names, not both")
        missing = [c for c in axis_names if c not in data.layout]
        if missing:
            raise ValueError(f"fn.pad: axis_names '{axis_names}': "
                             f"{missing} not in the layout '{data.layout}'")
        axes = [data.layout.index(c) for c in axis_names]
    if isinstance(axes, int):
        axes = [axes]
    as_list = (lambda v: None if v is None else
               [int(x) for x in (v if isinstance(v, (list, tuple)) else [v])])
    node = data._like(device="gpu" if device != "cpu" else data.device)
    node.pad = PadSpec(as_list(axes), float(fill_value), as_list(shape),
                       as_list(align))
    return node


def coord_transform(data, *, M=None, T=None, MT=None, dtype=types.FLOAT,
                    device="cpu", name=None, **rest):
    """Points along the last axis mapped to M p + T (float32, or `dtype`).
    M: R x D (rows), or a number (times the identity), none the identity;
    T: R numbers, or one for all; MT: [M T] as rows."""
    _check_rest("coord_transform", rest)
    for arg, value in (("M", M), ("T", T), ("MT", MT)):
        if hasattr(value, "_pipeline") or hasattr(value, "stream_code"):
            raise NotImplementedError(
                f"fn.coord_transform: {arg} per sample (a data node or "
                "fn.random value) is not in actorflow.dali: give numbers")
    if MT is not None:
        if M is not None or T is not None:
            raise ValueError("fn.coord_transform: give MT, or M and T")
        block = numpy.asarray(MT, numpy.float64)
        if block.ndim != 2 or block.shape[1] < 2:
            raise ValueError(
                "fn.coord_transform: MT as rows [M T] (a 2-D list or array "
                f"of R x (D + 1) numbers), got shape {block.shape}")
        M, T = block[:, :-1], block[:, -1]
    attrs = {}
    if M is not None:
        attrs["m"] = [float(v) for v in numpy.asarray(M, numpy.float64)
                      .reshape(-1)]
    if T is not None:
        attrs["t"] = [float(v) for v in numpy.asarray(T, numpy.float64)
                      .reshape(-1)]
    node = _augment("coord_transform", data, attrs, device, name, layout="",
                    bound_same=False)
    node.unit_dim = False
    if types.to_numpy_dtype(dtype).name != "float32":
        node = cast(node, dtype=dtype)
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


def shapes(data, *, dtype=types.INT64, device="cpu", name=None, **rest):
    """Each sample's shape: [rank] values (DALI's default INT64)."""
    _check_rest("shapes", rest)
    node = _augment("shapes", data, {}, device, name, layout="",
                    bound_same=False)
    node.unit_dim = False
    if types.to_numpy_dtype(dtype).name != "int64":
        node = cast(node, dtype=dtype)
    return node


def normalize(data, *, axes=None, axis_names=None, batch=False, ddof=0,
              dtype=None, epsilon=0.0, mean=None, scale=1.0, shift=0.0,
              stddev=None, device="cpu", name=None, **rest):
    """scale * (data - mean) / stddev + shift, per sample: mean and stddev
    one number each, or computed over `axes` / `axis_names` (default: the
    whole sample); epsilon added to the variance, ddof its correction."""
    _check_rest("normalize", rest)
    if batch:
        raise ValueError(
            "fn.normalize: batch=True (statistics over the whole batch) is "
            "not in actorflow.dali: each sample is normalized on its own")
    attrs = {}
    if axes is not None and axis_names is not None:
        raise ValueError("fn.normalize: axes or axis_names, not both")
    if axis_names is not None:
        layout = getattr(data, "layout", "") or ""
        missing = [a for a in axis_names if a not in layout]
        if missing:
            raise ValueError(
                f"fn.normalize: axis_names '{axis_names}': "
                f"{', '.join(missing)} not in the data's layout "
                f"'{layout}'")
        axes = [layout.index(a) for a in axis_names]
    if axes is not None:
        axes = [axes] if isinstance(axes, int) else list(axes)
        if any(int(a) < 0 for a in axes):
            raise ValueError(f"fn.normalize: axes {axes}: none negative")
        attrs["axes"] = [int(a) for a in axes]
    for arg, value in (("mean", mean), ("stddev", stddev)):
        if value is None:
            continue
        value = _fixed("normalize", arg, value)
        if not isinstance(value, numbers.Real):
            raise ValueError(
                f"fn.normalize: {arg}={value!r}: one number (a mean or "
                "stddev per element is not in actorflow.dali)")
        attrs[arg] = float(value)
    attrs.update(scale=float(_fixed("normalize", "scale", scale)),
                 shift=float(_fixed("normalize", "shift", shift)),
                 epsilon=float(epsilon), ddof=int(ddof))
    node = _augment("standardize", data, attrs, device, name)
    if dtype is not None and types.to_numpy_dtype(dtype).name != "float32":
        node = cast(node, dtype=dtype)
    return node


# ---- noise (fn.noise.*) ----

def _gaussian_noise(data, *, mean=0.0, stddev=1.0, device="cpu", name=None,
                    **rest):
    """Each value plus N(mean, stddev) (both per sample), in the input's
    type (uint8 clamped and rounded)."""
    _check_rest("noise.gaussian", rest)
    attrs = {}
    _per_sample("noise.gaussian", "mean", mean, attrs)
    _per_sample("noise.gaussian", "stddev", stddev, attrs)
    return _augment("gaussian_noise", data, attrs, device, name)


def _salt_and_pepper_noise(data, *, prob=0.05, salt_vs_pepper=0.5,
                           salt_val=None, pepper_val=None, per_channel=False,
                           device="cpu", name=None, **rest):
    """Each pixel (each value with per_channel) becomes salt or pepper with
    probability prob (per sample); salt_val / pepper_val default to the
    type's top and bottom (255 / 0; float: 1 / -1)."""
    _check_rest("noise.salt_and_pepper", rest)
    attrs = {"per_channel": bool(per_channel)}
    _per_sample("noise.salt_and_pepper", "prob", prob, attrs)
    _per_sample("noise.salt_and_pepper", "salt_vs_pepper", salt_vs_pepper,
                attrs)
    for arg, value in (("salt_val", salt_val), ("pepper_val", pepper_val)):
        if value is not None:
            attrs[arg] = float(_fixed("noise.salt_and_pepper", arg, value))
    return _augment("salt_and_pepper_noise", data, attrs, device, name)


def _shot_noise(data, *, factor=20.0, device="cpu", name=None, **rest):
    """Each value v becomes factor * Poisson(max(v, 0) / factor) (factor
    per sample; 0 leaves the data as it is)."""
    _check_rest("noise.shot", rest)
    attrs = {}
    _per_sample("noise.shot", "factor", factor, attrs)
    return _augment("shot_noise", data, attrs, device, name)


noise = _Namespace(gaussian=_gaussian_noise,
                   salt_and_pepper=_salt_and_pepper_noise, shot=_shot_noise)
