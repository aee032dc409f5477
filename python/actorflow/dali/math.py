"""DALI's nvidia.dali.math: element-wise functions of data nodes (the
`math` operator; between two nodes, `arith`). abs, floor, ceil, clamp, min
and max with numbers keep the input's type; the rest give float32, as does
any function of two nodes."""

import numbers

from actorflow import pipeline as _base


def _node_of(value, name):
    if not isinstance(value, _base.DataNode):
        raise TypeError(f"math.{name}: {value!r} is not a data node")
    return value


def _unary(name):
    def call(input):
        node = _node_of(input, name)
        return node._derive("math", [node], {"fn": name})
    call.__name__ = name
    call.__doc__ = f"DALI's math.{name}, element by element."
    return call


for _name in ("abs", "fabs", "floor", "ceil", "sqrt", "rsqrt", "cbrt", "exp",
              "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos",
              "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh"):
    globals()[_name] = _unary(_name)


def _number(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"math.{name}: {value!r}: a data node or a number")
    return float(value)


def _binary(name, a, b, swapped=None):
    """name(a, b): arith between two nodes, else math with the number as
    `value` (`swapped`: the function when the number comes first)."""
    a_node = isinstance(a, _base.DataNode)
    b_node = isinstance(b, _base.DataNode)
    if a_node and b_node:
        if a._pipeline is not b._pipeline:
            raise ValueError(f"math.{name}: the nodes are of different "
                             "pipelines")
        return a._derive("arith", [a, b], {"op": name})
    if a_node:
        return a._derive("math", [a], {"fn": name,
                                       "value": _number(b, name)})
    if b_node and swapped is not None:
        return b._derive("math", [b], {"fn": swapped,
                                       "value": _number(a, name)})
    raise TypeError(f"math.{name}({a!r}, {b!r}): give a data node"
                    + (" first" if b_node else ""))


def min(left, right):
    """The smaller of each pair of elements (or of each and a number)."""
    return _binary("min", left, right, swapped="min")


def max(left, right):
    """The larger of each pair of elements (or of each and a number)."""
    return _binary("max", left, right, swapped="max")


def pow(base, exponent):
    """base ** exponent, element by element, float32."""
    return _binary("pow", base, exponent, swapped="rpow")


fpow = pow


def atan2(y, x):
    """atan2 of two data nodes, element by element, float32."""
    if not (isinstance(y, _base.DataNode) and isinstance(x, _base.DataNode)):
        raise TypeError("math.atan2: give two data nodes")
    return _binary("atan2", y, x)


def clamp(input, lo, hi):
    """input limited to [lo, hi] (numbers), its type kept."""
    node = _node_of(input, "clamp")
    if isinstance(lo, _base.DataNode) or isinstance(hi, _base.DataNode):
        raise NotImplementedError(
            "math.clamp with data nodes as bounds is not in actorflow.dali: "
            "give numbers, or math.min(math.max(x, lo), hi)")
    lo, hi = _number(lo, "clamp"), _number(hi, "clamp")
    if lo > hi:
        raise ValueError(f"math.clamp: lo {lo} > hi {hi}")
    return node._derive("math", [node], {"fn": "clamp", "lo": lo, "hi": hi})
