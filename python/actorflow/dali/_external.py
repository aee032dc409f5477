"""fn.external_source: data from Python, batch by batch or sample by
sample, as DALI's sources give it."""

import inspect

from actorflow.dali import types
from actorflow.dali._args import _check_rest, _device, _node
from actorflow.dali.pipeline import Pipeline
from actorflow.pipeline import _add_operator

# ---- external source ----

def external_source(source=None, num_outputs=None, *, cycle=None, name=None,
                    device="cpu", layout=None, dtype=None, ndim=None,
                    batch=True, batch_info=False, shape=None, parallel=False,
                    repeat_last=False, no_copy=False, blocking=None,
                    cuda_stream=None, use_copy_kernel=False, **rest):
    """Data from Python: `source` (an iterable, iter()'d at every epoch's
    start, or a callable; with batch=False they give one sample per call,
    a callable taking a SampleInfo), or feed_input(). num_outputs: each
    call gives a tuple of that many batches. cycle: True/"quiet" starts
    an exhausted iterable over, "raise" (as the default) ends the epoch.
    shape (ours, not DALI's): the largest sample's shape, one per output
    or one for all; without it a source is sized from its first batch
    (twice its largest sample along each axis where the samples differ).
    repeat_last: a batch scheduled when nothing new was fed repeats the
    last batch fed."""
    # no_copy, blocking, cuda_stream, use_copy_kernel: how DALI moves the
    # data, not what it is; the data is copied in here whatever they say.
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
    shapes = shape if shape is not None and isinstance(
        shape[0], (list, tuple)) else [shape] * count
    if len(dtypes) != count or len(layouts) != count or len(shapes) != count:
        raise ValueError("fn.external_source: one dtype, layout and shape "
                         f"per output ({count})")
    nodes = []
    for k in range(count):
        node_name = name if count == 1 else (
            None if name is None else f"{name}.{k}")
        node = _add_operator(
            "external_source", [], 1, "cpu", node_name,
            {"dtype": None if dtypes[k] is None
             else types.to_numpy_dtype(dtypes[k]).name,
             "shape": None if shapes[k] is None
             else [int(d) for d in shapes[k]]})
        nodes.append(_node(node, layout=layouts[k] or "", device=device))
        if repeat_last:
            pipe._repeat_last[node.name] = None
    if source is not None:
        pipe._feeds.append(_ExternalFeed(source, [n.name for n in nodes],
                                         num_outputs is not None, batch,
                                         cycle, batch_info, parallel))
    return nodes[0] if num_outputs is None else tuple(nodes)


_END = object()  # a parallel sample callback's StopIteration


class _ExternalFeed:
    """One `source=` of fn.external_source, pulled once per batch."""

    def __init__(self, source, names, tupled, batch, cycle, batch_info,
                 parallel=False):
        self.source, self.names, self.tupled = source, names, tupled
        self.parallel = bool(parallel)
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
                params = [p for p in inspect.signature(source).parameters
                          .values() if p.default is p.empty and p.kind in
                          (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
                self.takes_arg = len(params) >= 1
            except (TypeError, ValueError):
                pass
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

    def _next_or_end(self, info):
        # A StopIteration may not leave a worker thread's future as itself
        # (a generator re-raises it as RuntimeError): a marker instead.
        try:
            return self._next(info)
        except StopIteration:
            return _END

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
            infos = [types.SampleInfo(self.iteration * n + i, i,
                                      self.iteration, self.epoch)
                     for i in range(n)]
            if self.parallel and self.callable:
                # DALI's parallel source: the sample callbacks on the
                # pipeline's py_num_workers (threads here, in order). A
                # StopIteration in any ends the epoch.
                samples = pipe._parallel_map(self._next_or_end, infos)
                if any(s is _END for s in samples):
                    raise StopIteration
            else:
                samples = [self._next(info) for info in infos]
            outputs = list(zip(*samples)) if self.tupled else (samples,)
        if len(outputs) != len(self.names):
            raise ValueError(f"fn.external_source: the source gave "
                             f"{len(outputs)} outputs, num_outputs is "
                             f"{len(self.names)}")
        for name, data in zip(self.names, outputs):
            pipe.feed_input(name, data)
        self.iteration += 1
