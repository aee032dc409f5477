"""Jobs from Python: operators with placements, compiled to a plan.

    job = actorflow.Job(pieces=1000)
    job.op("source", "source", shape=[256], value=1.0, step=1.0)
    job.op("double", "scale", inputs=["source"], factor=2.0)
    job.op("triple", "scale", inputs=["source"], factor=3.0)
    job.op("add", "add", inputs=["double", "triple"])
    job.op("checksum", "checksum", inputs=["add"])
    print(actorflow.run(job)["sinks"])     # or actorflow.compile(job)

The same messages as proto/job.proto, written as its text format; the C++
compiler checks everything and names the operator and input at fault.
"""

import re

_DTYPES = {
    "float32": "DT_FLOAT32",
    "float64": "DT_FLOAT64",
    "int8": "DT_INT8",
    "uint8": "DT_UINT8",
    "int32": "DT_INT32",
    "int64": "DT_INT64",
    "bool": "DT_BOOL",
}


def _quote(text):
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _attr(value):
    """An AttrValue in text format, from a Python value."""
    if isinstance(value, bool):
        return "b: " + ("true" if value else "false")
    if isinstance(value, int):
        return f"i: {value}"
    if isinstance(value, float):
        return f"f: {value!r}"
    if isinstance(value, str):
        return "s: " + _quote(value)
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, bool) for v in value) and value:
            raise TypeError("a list attribute holds ints, floats or strings")
        if all(isinstance(v, int) for v in value):
            return "list { i: [" + ", ".join(str(v) for v in value) + "] }"
        if all(isinstance(v, (int, float)) for v in value):
            return "list { f: [" + ", ".join(repr(float(v)) for v in value) + "] }"
        if all(isinstance(v, str) for v in value):
            return "list { s: [" + ", ".join(_quote(v) for v in value) + "] }"
    raise TypeError(
        f"attribute value {value!r}: use a bool, int, float, str or a list of "
        "ints, floats or strings")


_SPLIT = re.compile(r"^split\((\d+)\)$")


def _signature(text):
    """"split(N)", "broadcast", "partial_sum" or None (inferred)."""
    if text is None:
        return "{ }"
    match = _SPLIT.match(text)
    if match:
        return "{ split: " + match.group(1) + " }"
    if text in ("broadcast", "partial_sum"):
        return "{ " + text + ": true }"
    raise ValueError(
        f"signature {text!r}: write 'split(AXIS)', 'broadcast' or "
        "'partial_sum' (or None: inferred)")


class Job:
    """A job under construction. op() adds an operator; text() is the
    job's text format; compile() (or actorflow.compile(job)) the Plan.
    actorflow.run, Session and load_plan take a Job wherever they take a
    plan."""

    def __init__(self, pieces=0, memory_budget_bytes=0, streams_per_device=0):
        self.pieces = pieces
        self.memory_budget_bytes = memory_budget_bytes
        self.streams_per_device = streams_per_device
        self._ops = []

    def op(self, name, op_type, inputs=(), device="cpu", devices=(0,),
           machines=(0,), shape=None, blobs=None, stage=0, initial=False,
           outputs=(), input_signatures=None, output_signatures=None,
           register_num=None, replicas=1, **attrs):
        """Adds an operator.

        inputs: "producer", "producer.output" or "key=producer.output".
        device: "cpu" or "gpu"; devices, machines: the placement (every
        device on every machine; more than one: data parallel); replicas:
        towers per device, each on streams of its own.
        shape: output "out" is one float32 blob "data" of this shape;
        blobs: [(name, dtype, shape)] instead (a source's).
        input_signatures: one per input ("split(0)", "broadcast",
        "partial_sum", None: inferred); output_signatures: {output: ...}.
        register_num: {output: buffers} instead of the compiler's sizing.
        Other keywords are the kernel's attributes."""
        if device not in ("cpu", "gpu"):
            raise ValueError(f"op {name!r}: device is 'cpu' or 'gpu', not {device!r}")
        lines = [f"  name: {_quote(name)}", f"  op_type: {_quote(op_type)}"]
        for key in sorted(attrs):
            lines.append(f"  attr {{ key: {_quote(key)} value {{ {_attr(attrs[key])} }} }}")
        for text in inputs:
            lines.append(f"  input: {_quote(text)}")
        placement = "  placement { device_type: " + device.upper()
        placement += "".join(f" machine_id: {int(m)}" for m in machines)
        placement += "".join(f" device_id: {int(d)}" for d in devices)
        if int(replicas) != 1:
            placement += f" replicas: {int(replicas)}"
        placement += " }"
        lines.append(placement)
        if input_signatures is not None:
            if len(input_signatures) != len(inputs):
                raise ValueError(
                    f"op {name!r}: {len(input_signatures)} input_signatures "
                    f"for {len(inputs)} inputs")
            for sig in input_signatures:
                lines.append("  input_signature " + _signature(sig))
        for out, sig in sorted((output_signatures or {}).items()):
            lines.append(
                f"  output_signature {{ key: {_quote(out)} value {_signature(sig)} }}")
        if stage:
            lines.append(f"  stage: {int(stage)}")
        if shape is not None:
            lines.append("  shape: [" + ", ".join(str(int(d)) for d in shape) + "]")
        for blob_name, dtype, blob_shape in blobs or ():
            if dtype not in _DTYPES:
                raise ValueError(f"op {name!r}: dtype {dtype!r} is not one of {sorted(_DTYPES)}")
            dims = ", ".join(str(int(d)) for d in blob_shape)
            lines.append(f"  blob {{ name: {_quote(blob_name)} data_type: "
                         f"{_DTYPES[dtype]} shape: [{dims}] }}")
        if initial:
            lines.append("  initial: true")
        for out in outputs:
            lines.append(f"  output: {_quote(out)}")
        for out, num in sorted((register_num or {}).items()):
            lines.append(f"  register_num {{ key: {_quote(out)} value: {int(num)} }}")
        self._ops.append("op {\n" + "\n".join(lines) + "\n}\n")
        return self

    def text(self):
        """The job in protobuf text format (proto/job.proto)."""
        head = f"total_piece_num: {int(self.pieces)}\n"
        if self.memory_budget_bytes:
            head += f"memory_budget_bytes: {int(self.memory_budget_bytes)}\n"
        if self.streams_per_device:
            head += f"streams_per_device: {int(self.streams_per_device)}\n"
        # A job's text starts with an op, so that loaders tell it from a plan.
        return "".join(self._ops) + head

    def _job_text(self):
        return self.text()

    def compile(self):
        """The Plan (ValueError naming the operator when it does not
        compile)."""
        from actorflow._actorflow import compile as _compile
        return _compile(self)

    def save(self, path):
        """Writes the job's text to `path` (actorflow run/compile take it)."""
        with open(path, "w", encoding="utf-8") as out:
            out.write(self.text())

    def __repr__(self):
        return f"<actorflow.Job of {len(self._ops)} ops, {self.pieces} pieces>"
