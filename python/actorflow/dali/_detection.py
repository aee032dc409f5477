"""DALI's detection operators: bb_flip, bbox_paste, random_bbox_crop and
box_encoder (the SSD recipe), and slice with the window given per sample
by other nodes (pipeline/box_transforms.h, bbox_crop.h, box_encoder.h,
slice_at.h)."""

from actorflow.dali._args import (_check_rest, _device, _fixed, _floats,
                                  _node, _per_sample, _probability)
from actorflow.pipeline import _add_operator

_LAYOUTS = {"xyXY": True, "xyWH": False}


def _ltrb(op, bbox_layout, ltrb, default):
    if bbox_layout is not None and ltrb is not None:
        raise ValueError(f"fn.{op}: give bbox_layout or ltrb, not both")
    if bbox_layout is not None:
        if bbox_layout not in _LAYOUTS:
            raise ValueError(f"fn.{op}: bbox_layout '{bbox_layout}': "
                             "\"xyXY\" or \"xyWH\" (2-D boxes)")
        return _LAYOUTS[bbox_layout]
    return default if ltrb is None else bool(ltrb)


def _range(op, arg, value):
    values = _floats(value)
    if len(values) != 2:
        raise ValueError(f"fn.{op}: {arg}: [min, max], got {value!r}")
    return values


def bb_flip(data, *, ltrb=False, horizontal=1, vertical=0, device="cpu",
            name=None, **rest):
    """Boxes [N, 4] (relative) mirrored as their image: x -> 1 - x where
    `horizontal` (per sample: fn.random.coin_flip shared with the image's
    flip gives both the same side), y -> 1 - y where `vertical`."""
    _check_rest("bb_flip", rest)
    _device("bb_flip", device)
    attrs = {"ltrb": bool(ltrb)}
    _probability("bb_flip", "horizontal", horizontal, attrs)
    _probability("bb_flip", "vertical", vertical, attrs)
    node = _add_operator("bb_flip", [data], 1, "cpu", name, attrs)
    return _node(node, like=data, device=device)


def bbox_paste(data, *, ratio, paste_x=0.5, paste_y=0.5, ltrb=False,
               device="cpu", name=None, **rest):
    """Boxes [N, 4] (relative) where fn.paste puts their image: on a canvas
    `ratio` times its size at (paste_x, paste_y), each per sample; the same
    fn.random values given to paste give both the same draws."""
    _check_rest("bbox_paste", rest)
    _device("bbox_paste", device)
    attrs = {"ltrb": bool(ltrb)}
    for arg, value in (("ratio", ratio), ("paste_x", paste_x),
                       ("paste_y", paste_y)):
        _per_sample("bbox_paste", arg, value, attrs)
    node = _add_operator("bbox_paste", [data], 1, "cpu", name, attrs)
    return _node(node, like=data, device=device)


def random_bbox_crop(boxes, labels=None, *, aspect_ratio=(1.0, 1.0),
                     thresholds=(0.0,), threshold_type="iou",
                     scaling=(1.0, 1.0), num_attempts=1,
                     total_num_attempts=-1, allow_no_crop=True,
                     all_boxes_above_threshold=True, bbox_layout=None,
                     ltrb=None, bbox_prune_threshold=None, crop_shape=None,
                     input_shape=None, output_bbox_indices=False,
                     shape_layout=None, device="cpu", name=None, **rest):
    """SSD's random crop: (anchor, shape, boxes[, labels]), the window
    relative (x, y) and (w, h), the boxes whose centres it holds in its
    coordinates, and their labels."""
    _check_rest("random_bbox_crop", rest)
    _device("random_bbox_crop", device)
    for arg, value in (("crop_shape", crop_shape),
                       ("input_shape", input_shape),
                       ("shape_layout", shape_layout)):
        if value is not None:
            raise ValueError(f"fn.random_bbox_crop: {arg}: windows in "
                             "pixels are not in actorflow.dali (relative "
                             "windows only)")
    if output_bbox_indices:
        raise ValueError("fn.random_bbox_crop: output_bbox_indices is not "
                         "in actorflow.dali")
    attrs = {
        "aspect_ratio": _range("random_bbox_crop", "aspect_ratio",
                               aspect_ratio),
        "scaling": _range("random_bbox_crop", "scaling", scaling),
        "thresholds": _floats(thresholds),
        "threshold_type": str(threshold_type),
        "num_attempts": int(_fixed("random_bbox_crop", "num_attempts",
                                   num_attempts)),
        "total_num_attempts": int(total_num_attempts),
        "allow_no_crop": bool(allow_no_crop),
        "all_boxes_above_threshold": bool(all_boxes_above_threshold),
        "ltrb": _ltrb("random_bbox_crop", bbox_layout, ltrb, True),
    }
    if bbox_prune_threshold is not None:
        attrs["bbox_prune_threshold"] = float(bbox_prune_threshold)
    inputs = [boxes] if labels is None else [boxes, labels]
    outs = _add_operator("random_bbox_crop", inputs, len(inputs) + 2, "cpu",
                         name, attrs)
    anchor, shape, kept = (_node(n, device=device) for n in outs[:3])
    kept = _node(kept, like=boxes, device=device)
    if labels is None:
        return anchor, shape, kept
    return anchor, shape, kept, _node(outs[3], like=labels, device=device)


def box_encoder(bboxes, labels, *, anchors, criteria=0.5, offset=False,
                scale=1.0, means=(0.0, 0.0, 0.0, 0.0),
                stds=(1.0, 1.0, 1.0, 1.0), device="cpu", name=None, **rest):
    """SSD's matching of ltrb boxes and int32 labels to `anchors` (ltrb,
    4 values each): (boxes [A, 4], labels [A])."""
    _check_rest("box_encoder", rest)
    _device("box_encoder", device)
    attrs = {"anchors": _floats(anchors), "criteria": float(criteria),
             "offset": bool(offset), "scale": float(scale),
             "means": _floats(means), "stds": _floats(stds)}
    boxes, classes = _add_operator("box_encoder", [bboxes, labels], 2, "cpu",
                                   name, attrs)
    return (_node(boxes, device=device),
            _node(classes, device=device))


def _window_axes(op, data, axis_names, axes):
    """The data's dimensions the window's entries are along: axis_names
    letters of its layout (DALI's default "WH"), or `axes` indices."""
    layout = getattr(data, "layout", "") or ""
    if axis_names is None and axes is not None:
        axes = [int(a) for a in ([axes] if isinstance(axes, int) else axes)]
        if any(not -len(layout) <= a < len(layout) for a in axes) and layout:
            raise ValueError(f"fn.{op}: axes {axes} of data of layout "
                             f"'{layout}'")
        return [a % len(layout) if layout else a for a in axes]
    names = axis_names or "WH"
    if not layout or any(c not in layout for c in names):
        raise ValueError(f"fn.{op}: axis_names '{names}' of data whose "
                         f"layout is '{layout}': give axes (dimension "
                         "indices)")
    return [layout.index(c) for c in names]


def window_attrs(op, data, axis_names, axes, normalized_anchor,
                 normalized_shape):
    """The attrs slice_at and decode_slice read for the window (of `data`'s
    layout)."""
    return {"axes": _window_axes(op, data, axis_names, axes),
            "normalized_anchor": bool(normalized_anchor),
            "normalized_shape": bool(normalized_shape)}


def slice_at(op, data, anchor, shape, axis_names, axes, normalized_anchor,
             normalized_shape, device, name):
    """data's window at the per-sample anchor and shape nodes."""
    _device(op, device)
    attrs = window_attrs(op, data, axis_names, axes, normalized_anchor,
                         normalized_shape)
    node = _add_operator("slice_at", [data, anchor, shape], 1, "cpu", name,
                         attrs)
    return _node(node, like=data, device=device)
