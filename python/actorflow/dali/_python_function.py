"""DALI's fn.python_function: a Python function of each sample, run by the
pipeline's own worker threads (the `function` operator, docs/pipelines.md)."""

import atexit
import weakref


from actorflow import _actorflow
from actorflow.dali._args import _check_rest, _device
from actorflow.pipeline import _add_operator, _current_pipeline

# Pipelines whose stages call Python: closed before the interpreter goes, so
# that no worker thread waits for the GIL while it shuts down.
_calling_python = weakref.WeakSet()


@atexit.register
def _close_pipelines_calling_python():
    for pipe in list(_calling_python):
        pipe.close()


def python_function(*inputs, function, num_outputs=1, batch_processing=False,
                    output_layouts=None, device="cpu", name=None, **rest):
    """function(*samples) per sample, numpy arrays in (labels as [1], as
    DALI gives them) and out: one array, or a tuple of num_outputs. The
    outputs' types and largest shapes are what it returns when the pipeline
    builds it and calls it once with zeros of its inputs' largest shapes
    (each input's own where known)."""
    _check_rest("python_function", rest)
    _device("python_function", device)
    if batch_processing:
        raise NotImplementedError(
            "fn.python_function(batch_processing=True) is not in "
            "actorflow.dali: the function runs per sample, on the "
            "pipeline's worker threads")
    if not callable(function):
        raise TypeError(f"fn.python_function: function {function!r} is not "
                        "callable")
    if not inputs:
        raise ValueError("fn.python_function: give at least one input (a "
                         "function of no input is an external_source)")
    num_outputs = int(num_outputs)
    if num_outputs < 1:
        raise ValueError(f"fn.python_function: num_outputs {num_outputs}: "
                         "at least 1 (a function whose result no one reads "
                         "would never run)")
    labels = [node.unit_dim for node in inputs]

    def per_sample(*samples):
        samples = [s.reshape(1) if label and s.ndim == 0 else s
                   for s, label in zip(samples, labels)]
        return function(*samples)

    pipe = _current_pipeline()
    function_id = _actorflow._register_sample_function(per_sample)
    weakref.finalize(pipe, _actorflow._unregister_sample_function,
                     function_id)
    _calling_python.add(pipe)
    nodes = _add_operator("function", list(inputs), num_outputs, "cpu", name,
                          {"function": function_id})
    if num_outputs == 1:
        nodes = (nodes,)
    if isinstance(output_layouts, str) or output_layouts is None:
        output_layouts = [output_layouts] * num_outputs
    for node, layout in zip(nodes, output_layouts):
        node.layout = layout or ""
        node.unit_dim = False
        # Images whose sizes only the files tell: boxed as the first
        # input's (a function that keeps the size; docs/python.md).
        node.bound = inputs[0].bound
        node.device = "gpu" if device != "cpu" else "cpu"
    return nodes[0] if num_outputs == 1 else nodes
