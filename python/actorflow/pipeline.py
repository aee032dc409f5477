"""DALI-style pipelines: declare operators in Python (actorflow.fn), run
them on the C++ pipeline (actor runtime threads, no GIL), take batches
without a copy.

    pipe = Pipeline(batch_size=32, num_threads=2, seed=1)
    with pipe:
        jpegs, labels = fn.readers.file(dir="/data/images")
        images = fn.decoders.image(jpegs)
        images = fn.resize(images, shorter=256)
        pipe.set_outputs(fn.crop_mirror_normalize(images, crop=[224, 224]),
                         labels)
    pipe.build()
    images, labels = pipe.run()      # StopIteration at the end of an epoch

or subclassed, with define_graph() and iter_setup() feeding external
sources, as in DALI. A batch's memory is the pipeline's: valid until the
next run()/outputs(), or release_outputs() with share_outputs().
"""

import itertools
import os
import threading
import time

import numpy

from actorflow import _actorflow

_defining = threading.local()


def _current_pipeline():
    stack = getattr(_defining, "stack", None)
    if not stack:
        raise RuntimeError(
            "an operator is called outside a pipeline's definition: call it "
            "inside `with pipe:` or in define_graph()")
    return stack[-1]


def _add_operator(op, inputs, num_outputs, device, name, attrs, source=None):
    return _current_pipeline()._declare(op, inputs, num_outputs, device, name,
                                        attrs, source)


class DataNode:
    """One output of an operator: what later operators take as input."""

    def __init__(self, pipeline, name):
        self._pipeline = pipeline
        self.name = name

    def __repr__(self):
        return f"DataNode('{self.name}')"


class Batch:
    """One output of a batch: n samples, each of its own shape, in one
    buffer [n, largest shape...] (smaller samples zero-padded). Views, not
    copies: valid until the pipeline releases the batch (then any use
    raises RuntimeError)."""

    def __init__(self, name, data, shapes, lease):
        self.name = name
        self._data = data
        self._shapes = shapes
        self._lease = lease

    def _check(self):
        if not self._lease.valid:
            raise RuntimeError(
                f"batch '{self.name}' was released (a batch is valid until "
                "the next run()/outputs(), or release_outputs())")

    def __len__(self):
        return int(self._shapes.shape[0])

    def shape(self):
        """Each sample's shape, as a list of tuples."""
        self._check()
        return [tuple(int(d) for d in row) for row in self._shapes]

    def is_dense_tensor(self):
        self._check()
        box = self._data.shape[1:]
        return bool(numpy.all(self._shapes == numpy.asarray(box, numpy.int64)))

    def as_array(self):
        """The whole batch as one read-only numpy array [n, ...], no copy.
        ValueError when samples' shapes differ (use as_arrays())."""
        if not self.is_dense_tensor():
            raise ValueError(
                f"batch '{self.name}': samples have different shapes "
                f"{sorted(set(self.shape()))[:4]}...; use as_arrays() for one "
                "array per sample")
        return self._data

    def as_arrays(self):
        """One read-only numpy view per sample, each of its own shape."""
        self._check()
        return [self._data[(i,) + tuple(slice(0, int(d)) for d in row)]
                for i, row in enumerate(self._shapes)]

    def as_tensor(self):
        """The batch as a torch.Tensor sharing its memory (no copy)."""
        import torch
        self.as_array()
        return torch.from_dlpack(self)

    def __dlpack__(self, stream=None):
        return _actorflow.to_dlpack(self.as_array())

    def __dlpack_device__(self):
        return (1, 0)

    def __repr__(self):
        return (f"<actorflow Batch '{self.name}': {len(self)} samples, "
                f"{self._data.dtype}>")


class _Lease:
    __slots__ = ("valid",)

    def __init__(self):
        self.valid = True


class Pipeline:
    """A pipeline of batch_size samples per batch over num_threads worker
    threads, prefetch_queue_depth batches ahead. seed seeds every random
    operator (and shuffling): the same seed gives the same batches whatever
    num_threads and depth. on_error: "fail" stops at a bad sample,
    "skip_sample" drops it (skipped() names it). fuse_decode: decode with
    resize/crop in one step (docs/pipelines.md, "Decoding less"). device_id: DALI's;
    0 (or None, -1): GPU operators run on device 0. restore_from (or DALI's
    checkpoint=): a checkpoint (or a directory of them, the newest taken)
    written by checkpoint(); the batches then go on exactly where it left
    off. With an elastic reader (elastic=True), a list of directories: every
    rank's of the run that wrote them, at any number of ranks then and now
    (docs/pipelines.md, "At scale"). enable_checkpointing is DALI's:
    checkpoints are always on. autotune=True: the pipeline chooses its
    worker threads and prefetch depth while it runs, from the images/s it
    hands out (num_threads and prefetch_queue_depth are where it starts),
    within autotune_cpus threads (default: the CPUs this process may use)
    and autotune_memory bytes of added resident memory (default: no limit);
    it never changes a batch. autotune_report() says what it tried."""

    _node_class = DataNode  # what operators return

    # Positional arguments in DALI's order (batch_size, num_threads,
    # device_id, seed); the rest by keyword only, so that DALI code that
    # passes device_id third never binds it to something else.
    def __init__(self, batch_size, num_threads=1, device_id=None, seed=0, *,
                 prefetch_queue_depth=2, on_error="fail", fuse_decode=True,
                 restore_from=None, checkpoint=None,
                 enable_checkpointing=True, autotune=False, autotune_cpus=None,
                 autotune_memory=None):
        # device_id as DALI has it: GPU operators run on device 0, the only
        # one a pipeline uses; None and -1 (no GPU) are accepted too.
        if device_id not in (None, -1, 0):
            raise ValueError(
                f"Pipeline: device_id {device_id}: GPU operators run on "
                "device 0 (give 0, -1 or None)")
        self.device_id = device_id
        if batch_size < 1 or num_threads < 1 or prefetch_queue_depth < 1:
            raise ValueError(
                "Pipeline: batch_size, num_threads and prefetch_queue_depth "
                f"must be >= 1, got {batch_size}, {num_threads}, "
                f"{prefetch_queue_depth}")
        if seed is None or seed < 0:
            seed = 0
        self._native = _actorflow._Pipeline(
            batch_size, num_threads, prefetch_queue_depth, seed, on_error,
            fuse_decode, autotune=bool(autotune),
            autotune_cpus=int(autotune_cpus or 0),
            autotune_memory_bytes=int(autotune_memory or 0))
        self.batch_size = batch_size
        self.num_threads = num_threads
        self.prefetch_queue_depth = prefetch_queue_depth
        self.seed = seed
        self._ops = []  # (op, name, inputs, outputs, device, attrs)
        self._outputs = None
        self._names = set()
        self._counter = itertools.count()
        self._sources = {}  # external source name -> callable or iterator
        self._source_objects = {}  # external source name -> source= as given
        self._epoch_begins = True  # no source pulled yet this epoch
        self._shapes = {}  # external source name -> declared shape or None
        self._dtypes = {}  # external source name -> dtype name or None
        self._pending = []  # (name, data, shapes) fed before the build
        self._built = False
        self._native_built = False
        self._scheduled = 0  # batches scheduled and not yet taken
        self._held = []  # leases of batches held, oldest first
        self._exhausted = False  # iter_setup/source ended this epoch
        self._started = False  # the epoch's first run() has prefetched
        self._waited_ns = 0  # the caller's time in take, since the build
        self._taken = 0  # batches taken since the build
        if restore_from is not None and checkpoint is not None:
            raise ValueError(
                "Pipeline: give restore_from or checkpoint (its DALI name), "
                "not both")
        restore = restore_from if restore_from is not None else checkpoint
        if restore is None:
            self._restore_from = None
        elif isinstance(restore, (list, tuple)):
            self._restore_from = [os.fspath(d) for d in restore]
        else:
            self._restore_from = [os.fspath(restore)]

    # ---- definition ----

    def __enter__(self):
        stack = getattr(_defining, "stack", None)
        if stack is None:
            stack = _defining.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _defining.stack.pop()
        return False

    def define_graph(self):
        """Subclasses return the outputs (a node or a tuple of nodes)."""
        raise NotImplementedError(
            "define the pipeline in `with pipe:` ending in set_outputs(...), "
            "or subclass Pipeline and override define_graph()")

    def iter_setup(self):
        """Called before each batch is scheduled: feed external sources
        here. Raising StopIteration ends the epoch."""

    def set_outputs(self, *nodes):
        for node in nodes:
            if not isinstance(node, DataNode) or node._pipeline is not self:
                raise ValueError(
                    f"set_outputs: {node!r} is not a node of this pipeline")
        self._outputs = [node.name for node in nodes]
        # A node given twice is fetched once: each output's place among the
        # names fetched.
        fetched = list(dict.fromkeys(self._outputs))
        self._output_slots = [fetched.index(n) for n in self._outputs]

    def _declare(self, op, inputs, num_outputs, device, name, attrs, source):
        if self._built:
            raise RuntimeError(f"operator '{op}': the pipeline is built")
        for node in inputs:
            if not isinstance(node, DataNode) or node._pipeline is not self:
                raise ValueError(
                    f"operator '{op}': input {node!r} is not a node of this "
                    "pipeline")
        if name is None:
            name = f"{op}_{next(self._counter)}"
        if name in self._names:
            raise ValueError(f"operator '{op}': the name '{name}' is taken")
        self._names.add(name)
        outputs = [name] + [f"{name}.{k}" for k in range(1, num_outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        if op == "external_source":
            self._shapes[name] = attrs.pop("shape", None)
            self._dtypes[name] = attrs.pop("dtype", None)
            if source is not None:
                self._sources[name] = source
                self._source_objects[name] = source
        self._ops.append([op, name, [n.name for n in inputs], outputs, device,
                          attrs])
        nodes = tuple(self._node_class(self, o) for o in outputs)
        return nodes[0] if num_outputs == 1 else nodes

    def build(self):
        """Checks and compiles the pipeline and starts its threads. Every
        problem is reported at once (ValueError, one per line)."""
        if self._built:
            return
        self._define()
        self._built = True
        if self._sources_known():
            self._build_native()
        # else: the first batch fed gives the external source its shape
        # and dtype.

    def _define(self):
        """Runs define_graph() unless the outputs are set."""
        if self._outputs is not None:
            return
        self.__enter__()
        try:
            outputs = self.define_graph()
        finally:
            self.__exit__()
        if not isinstance(outputs, (tuple, list)):
            outputs = (outputs,)
        self.set_outputs(*outputs)

    def _sources_known(self):
        return all(self._shapes[name] is not None and
                   self._dtypes[name] is not None for name in self._shapes)

    def _build_native(self):
        for op, name, inputs, outputs, device, attrs in self._ops:
            attrs = dict(attrs)
            if op == "external_source":
                attrs["shape"] = list(self._shapes[name])
                attrs["dtype"] = self._dtypes[name]
            self._native.add(op, name, inputs, outputs, device, attrs)
        self._native.set_outputs(list(dict.fromkeys(self._outputs)))
        self._native.build()
        self._native_built = True
        if self._restore_from is not None:
            self._native.restore(self._restore_from)
        # Batches fed before the native pipeline existed, in order (build()
        # makes it once every source's shape is known, as after a feed).
        pending, self._pending = self._pending, []
        for name, batch, shapes in pending:
            self._feed(name, batch, shapes)

    def checkpoint(self, directory, keep_last=0):
        """Writes a checkpoint under `directory` (directory/ckpt-<piece>)
        and returns its path: the batches after a restore from it are
        exactly those this pipeline hands out next, prefetched ones
        included. keep_last: keep only the newest so many there."""
        self._require_native()
        return self._native.checkpoint(os.fspath(directory), keep_last)["path"]

    def autotune_report(self):
        """The tuner's state: "enabled", the "threads" and "depth" running
        now, "settled" (it tries nothing more), "batches_to_settle", and
        its "trials" (each "threads", "depth", "images_per_s",
        "memory_bytes")."""
        self._require_native()
        return self._native.autotune()

    @property
    def epoch(self):
        """The epoch under way (0 first; reset() moves to the next)."""
        self._require_native()
        return self._native.epoch()

    @property
    def batches(self):
        """Batches handed out in this epoch: the next one's index (after a
        restore, where the checkpoint left off)."""
        self._require_native()
        return self._native.batches()

    @property
    def plan(self):
        """The compiled Plan (actorflow.validate, dot, save work on it)."""
        self._require_native()
        return self._native.plan

    def epoch_size(self, name=None):
        """Samples per epoch of the reader (-1 with an external source)."""
        self._require_native()
        return self._native.epoch_size()

    def stats(self):
        """Where the time went since the build: "operators", per task of
        the plan (an operator, or a fused chain, named as in `plan`): its
        "acts" (batches), "busy_ms" (in its work), "starved_ms" (waiting
        for its input: what feeds it is slow), "back_pressured_ms"
        (waiting for a free output: what reads it is slow) and
        "register_bytes" (the memory its output registers and the samples
        they point to take now); "batches"
        taken and "caller_wait_ms", the time run()/outputs() waited for
        them (near zero: the pipeline keeps ahead of the caller). And,
        live, "stalls": stalls()'s report since the last stats() or
        stalls() (per stage shares, samples_per_s, the verdict line)."""
        self._require_native()
        return {"operators": self._native.stats(), "batches": self._taken,
                "caller_wait_ms": self._waited_ns / 1e6,
                "stalls": self._native.stalls()}

    def stalls(self):
        """Where the pipeline stalled since the last stalls() or stats()
        (the first: since build), live: "window_ms", "batches", "batches_per_s",
        "samples_per_s", "caller_wait" (the share of the window run()
        waited for a batch), "stages" (per stage, its "threads", "acts",
        "samples_per_s" it went through, the share of the window they
        were "busy", "starved" and "back_pressured", and the
        "register_bytes" its registers and their samples hold at the
        window's end), and one "verdict"
        line: "input-bound 38 %:
        decode, 2 of 2 threads busy 98 %", or "input is not the
        bottleneck: the caller waited 2 % of the time"."""
        self._require_native()
        return self._native.stalls()

    def _skipped_count(self):
        """len(skipped()), without making its dicts (a per-step check)."""
        return self._native.skipped_count() if self._native_built else 0

    def skipped(self):
        """Samples dropped by on_error="skip_sample": dicts of epoch,
        position, file, error."""
        if not self._native_built:
            return []
        return self._native.skipped()

    # ---- external input ----

    def feed_input(self, data_node, data):
        """A batch for an external source: a list of per-sample arrays
        (shapes may differ, same rank and dtype) or one array whose first
        dimension is the batch."""
        name = data_node.name if isinstance(data_node, DataNode) else data_node
        if name not in self._shapes:
            raise ValueError(
                f"feed_input: no external source '{name}' (external sources: "
                f"{sorted(self._shapes) or 'none'})")
        batch, shapes = _pack(name, data)
        if self._shapes[name] is None:
            self._shapes[name] = _headroom(shapes, batch.shape[1:])
        if self._dtypes[name] is None:
            self._dtypes[name] = batch.dtype.name
        if not self._native_built:
            self._pending.append((name, batch, shapes))
            return
        self._feed(name, batch, shapes)

    def _feed(self, name, batch, shapes):
        box = list(batch.shape[1:])
        limit = list(self._shapes[name])
        if len(box) != len(limit) or any(b > m for b, m in zip(box, limit)):
            raise ValueError(
                f"feed_input '{name}': samples up to {box}, larger than the "
                f"{limit} the pipeline was built for; give "
                f"fn.external_source(shape=...) the largest sample's shape")
        if box != limit:
            padded = numpy.zeros([batch.shape[0]] + limit, batch.dtype)
            padded[(slice(None),) + tuple(slice(0, b) for b in box)] = batch
            batch = padded
        self._native.feed_input(name, batch, shapes)

    # ---- running ----

    def schedule_run(self):
        """Schedules one batch: calls iter_setup (and pulls each source)
        first. After the epoch's end it schedules nothing."""
        self._require_built()
        if self._exhausted:
            return
        epoch_begins, self._epoch_begins = self._epoch_begins, False
        try:
            self._pull_sources(epoch_begins)
        except StopIteration:
            self._exhausted = True
            return
        if not self._native_built:
            self._build_native()
        self._native.schedule()
        self._scheduled += 1

    def _pull_sources(self, epoch_begins):
        """Feeds every external source one batch: iter_setup(), then each
        `source=`. StopIteration ends the epoch."""
        if epoch_begins:
            # As DALI does: an iterable source is iter()'d at the start of
            # every epoch (an iterator class resets there; an iterator
            # returns itself and goes on).
            for name, source in self._source_objects.items():
                if not _is_plain_callable(source):
                    self._sources[name] = iter(source)
        self.iter_setup()
        for name, source in self._sources.items():
            self.feed_input(name, _next_batch(source))

    def share_outputs(self):
        """The next batch (a tuple of Batch, one per output), held until
        release_outputs(); StopIteration at the end of the epoch."""
        return self._take(share=True)

    def release_outputs(self):
        """Releases the oldest batch share_outputs() handed out."""
        self._require_native()
        if not self._held:
            raise RuntimeError("release_outputs: no batch is held")
        self._native.release()
        self._held.pop(0).valid = False

    def outputs(self):
        """Releases every batch held, then returns the next."""
        return self._take(share=False)

    def run(self):
        """Schedules what keeps prefetch_queue_depth batches in the making
        and returns the next batch (a tuple of Batch, one per output),
        valid until the next run(). StopIteration at the end of the epoch;
        reset() starts the next."""
        self._require_built()
        if not self._started:
            self._started = True
            for _ in range(self.prefetch_queue_depth):
                self.schedule_run()
        else:
            self.schedule_run()
        return self.outputs()

    def _take(self, share, owned=False):
        """The next batch: held until released (share), until the next
        take (neither), or the caller's (owned: arrays that own their
        memory, the pipeline's buffers themselves where it can hand them
        over; such a Batch never expires)."""
        self._require_built()
        if self._scheduled == 0:
            if self._exhausted:
                raise StopIteration
            raise RuntimeError(
                "no batch is scheduled: call schedule_run() (or run())")
        self._require_native()
        if not share:
            for lease in self._held:
                lease.valid = False
            self._held = []
        begin = time.perf_counter_ns()
        taken = self._native.take_owned() if owned else \
            self._native.take(share)
        self._waited_ns += time.perf_counter_ns() - begin
        if taken is None:
            self._scheduled = 0
            raise StopIteration
        self._scheduled -= 1
        self._taken += 1
        lease = _Lease()
        if not owned:
            self._held.append(lease)
        batches, given = [], set()
        for slot in self._output_slots:
            name, data, shapes = taken[slot]
            if owned and slot in given:
                data = data.copy()  # an output given twice: its own copy
            given.add(slot)
            batches.append(Batch(name, data, shapes, lease))
        return tuple(batches)

    def reset(self):
        """Drops what is scheduled or held and starts the next epoch."""
        self._require_built()
        for lease in self._held:
            lease.valid = False
        self._held = []
        self._scheduled = 0
        self._exhausted = False
        self._started = False
        self._epoch_begins = True
        self._pending = []
        if self._native_built:
            self._native.reset()

    def close(self):
        """Stops the pipeline and joins its threads (also when collected)."""
        for lease in self._held:
            lease.valid = False
        self._held = []
        self._native.close()

    def __del__(self):
        native = getattr(self, "_native", None)
        if native is not None:
            native.close()

    def _require_built(self):
        if not self._built:
            raise RuntimeError("the pipeline is not built: call build()")

    def _require_native(self):
        self._require_built()
        if not self._native_built:
            unknown = sorted(
                name for name in self._shapes
                if self._shapes[name] is None or self._dtypes[name] is None)
            raise RuntimeError(
                "the pipeline waits for its first batch from feed_input "
                f"(external source {', '.join(repr(n) for n in unknown)} has "
                "no shape or dtype yet: feed it, or give "
                "fn.external_source shape= and dtype=)")


def _is_plain_callable(source):
    """A callable that is not an iterator: called once per batch."""
    return callable(source) and not hasattr(source, "__next__")


def _next_batch(source):
    """A plain callable is called; anything else is the iterator the
    epoch's start made of the source (schedule_run)."""
    return source() if _is_plain_callable(source) else next(source)


def _pack(name, data):
    """(batch [n, box...], shapes int64 [n, rank]) from what feed_input
    takes."""
    if isinstance(data, numpy.ndarray):
        if data.ndim == 0:
            raise ValueError(f"feed_input '{name}': a batch has a first "
                             "dimension (samples); got a scalar")
        shapes = numpy.tile(numpy.asarray(data.shape[1:], numpy.int64),
                            (data.shape[0], 1))
        return numpy.ascontiguousarray(data), shapes
    samples = [numpy.asarray(s) for s in data]
    if not samples:
        raise ValueError(f"feed_input '{name}': an empty batch")
    dtypes = {s.dtype for s in samples}
    ranks = {s.ndim for s in samples}
    if len(dtypes) != 1 or len(ranks) != 1:
        raise ValueError(
            f"feed_input '{name}': samples must share dtype and rank, got "
            f"dtypes {sorted(str(d) for d in dtypes)} and ranks "
            f"{sorted(ranks)}")
    shapes = numpy.asarray([s.shape for s in samples],
                           numpy.int64).reshape(len(samples), -1)
    box = shapes.max(axis=0) if len(samples) else []
    batch = numpy.zeros([len(samples)] + [int(b) for b in box],
                        samples[0].dtype)
    for i, s in enumerate(samples):
        batch[(i,) + tuple(slice(0, d) for d in s.shape)] = s
    return batch, shapes


def _headroom(shapes, box):
    """The shape an external source is built for when none was given:
    twice the first batch's largest size in every dimension where its
    samples differ, that size where they agree."""
    low = shapes.min(axis=0) if shapes.size else numpy.asarray(box)
    return [int(b) if int(lo) == int(b) else 2 * int(b)
            for lo, b in zip(low, box)]
