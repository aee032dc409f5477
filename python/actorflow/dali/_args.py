"""What every actorflow.dali operator shares: DALI's arguments checked
and coerced (scalars, pairs, probabilities), fn.random values as
per-sample arguments, and the nodes' layouts."""

import types as _pytypes

from actorflow.dali import types
from actorflow.dali.pipeline import Pipeline, _say_host_once

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
    # Deprecated in DALI, where it is ignored (the data's layout and type
    # say what it said).
    "image_type",
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
        if hasattr(other, "_by_random"):  # a data node: per sample
            return other + self
        return self._affine(1.0, float(other))

    def __sub__(self, other):
        return self._affine(1.0, -float(other))

    def __mul__(self, other):
        if hasattr(other, "_by_random"):  # a data node: per sample
            return other * self
        return self._affine(float(other), 0.0)

    def __truediv__(self, other):
        return self._affine(1.0 / float(other), 0.0)

    def __neg__(self):
        return self._affine(-1.0, 0.0)

    __radd__ = __add__
    __rmul__ = __mul__

    def __repr__(self):
        return f"fn.random.{self.kind}({self.params})"


def _one_value(op, shape):
    """DALI's random operators may make a tensor per sample (shape=);
    actorflow.dali's make one value per sample, so another shape is
    refused rather than ignored."""
    if shape not in (None, (), [], 1, (1,), [1]):
        raise ValueError(f"fn.random.{op}: shape {shape}: only one value per "
                         "sample, used as an argument")


def _float_values(op, dtype):
    if dtype is not None and types.to_numpy_dtype(dtype).kind != "f":
        raise ValueError(f"fn.random.{op}: dtype {dtype}: the values are "
                         "floats (cast the node they are combined with)")


def _coin_flip(*, probability=0.5, dtype=None, shape=None, device="cpu",
               **rest):
    _check_rest("random.coin_flip", rest)
    _one_value("coin_flip", shape)
    if not 0 <= probability <= 1:
        raise ValueError(f"fn.random.coin_flip: probability {probability} "
                         "is not in [0, 1]")
    return RandomArgument("coin_flip", probability=float(probability))


def _uniform(*, range=(-1.0, 1.0), values=None, dtype=None, shape=None,
             device="cpu", **rest):
    _check_rest("random.uniform", rest)
    _one_value("uniform", shape)
    _float_values("uniform", dtype)
    return RandomArgument("uniform", range=tuple(float(r) for r in range),
                          values=values)


def _normal(*, mean=0.0, stddev=1.0, dtype=None, shape=None, device="cpu",
            **rest):
    _check_rest("random.normal", rest)
    _one_value("normal", shape)
    _float_values("normal", dtype)
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


def _largest_draw(value):
    """The largest value a fn.random argument given to _per_sample draws:
    uniform's top, normal's mean + 6 stddev (where the C++ ScalarArg's
    high() puts it: pipeline/sample_args.h)."""
    if value.kind == "uniform":
        return float(max(value.params["range"]))
    if value.kind == "normal":
        return value.params["mean"] + 6 * value.params["stddev"]
    return 1.0


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
