"""DALI's Pipeline and @pipeline_def on actorflow's pipeline: the same
calls, outputs as TensorListCPU, and readers that run on across epochs
inside run() with full batches, as DALI's do."""

import concurrent.futures
import functools
import inspect
import os
import warnings

import numpy

from actorflow import pipeline as _base
from actorflow.dali import _checkpoint, tensors, types


class DataNode(_base.DataNode):
    """An operator's output; `node * 2`, `node / 255 - 0.5`, `coin *
    node` add operators (scale_shift), `node * other_node` one (arith).
    `.gpu()` marks it for the GPU: a framework
    iterator then hands it out as a CUDA tensor where torch sees a GPU
    (operators themselves run on the host; docs/python.md)."""

    def __init__(self, pipeline, name):
        super().__init__(pipeline, name)
        self.layout = ""
        self.unit_dim = False  # scalar samples come out as [1] (labels)
        self.device = "cpu"
        # Images whose size only the files tell: a function from the
        # files' (height, width) to the largest side a sample can have.
        self.bound = None
        # FLOAT16: computed in float32 and converted as it leaves the
        # pipeline (the runtime has no half type); outputs only.
        self.half = False
        # fn.pad's PadSpec: applied as the batch leaves; outputs only.
        self.pad = None

    def _like(self, **changes):
        node = DataNode(self._pipeline, self.name)
        node.layout, node.unit_dim, node.device, node.bound, node.half = (
            self.layout, self.unit_dim, self.device, self.bound, self.half)
        node.pad = self.pad
        for key, value in changes.items():
            setattr(node, key, value)
        return node

    def gpu(self):
        _say_host_once("gpu")
        return self._like(device="gpu")

    def cpu(self):
        return self._like(device="cpu")

    # Arithmetic. With numbers: each sample's elements as float32, times a
    # scale plus a shift (operator scale_shift); a list, array or Constant
    # of several numbers gives one per element of the last axis (a channel
    # each, for HWC images), as DALI broadcasts them. With a fn.random
    # value (+ and *): that value per sample (`coin * images`). Between two
    # data nodes (+ - * /): operator arith, element by element, or a
    # single-valued sample against every element; float32 out.
    def _scale_shift(self, scale, shift):
        def attr(values):
            return values[0] if len(values) == 1 else values
        return self._derive("scale_shift", [self],
                            {"scale": attr(scale), "shift": attr(shift)})

    def _derive(self, op, inputs, attrs):
        node = self._pipeline._declare(op, inputs, 1, "cpu", None, attrs,
                                       None)
        node.layout = next((n.layout for n in inputs if n.layout), "")
        node.unit_dim = all(n.unit_dim for n in inputs)
        node.device = "gpu" if any(n.device == "gpu" for n in inputs) \
            else "cpu"
        node.bound = next((n.bound for n in inputs if n.bound is not None),
                          None)
        return node

    def _by_random(self, value, arg):
        """scale_shift with `arg` (scale or shift) drawn per sample."""
        from actorflow.dali._args import _per_sample
        attrs = {"scale": 1.0, "shift": 0.0}
        _per_sample("scale_shift", arg, value, attrs)
        return self._derive("scale_shift", [self], attrs)

    def _binary(self, other, op, symbol):
        """arith with another node, else None (other is no data node)."""
        if not isinstance(other, _base.DataNode):
            return None
        if other._pipeline is not self._pipeline:
            raise ValueError(f"{self!r} {symbol} {other!r}: the nodes are "
                             "of different pipelines")
        return self._derive("arith", [self, other], {"op": op})

    def _number(self, other, op):
        """other as a list of floats: one, or one per last-axis element."""
        given = other
        if isinstance(other, types.Constant):
            other = other.value
        if isinstance(other, (list, tuple)):
            other = numpy.asarray(other)
        if isinstance(other, numpy.ndarray):
            if other.ndim <= 1 and other.size >= 1 and \
                    other.dtype.kind in "iuf":
                return [float(v) for v in other.reshape(-1)]
            other = object()  # refused below, named
        if isinstance(other, bool) or not isinstance(
                other, (int, float, numpy.integer, numpy.floating)):
            raise TypeError(
                f"{self!r} {op} {given!r}: arithmetic on data nodes takes "
                "numbers (one, or one per element of the last axis), "
                "fn.random values (+ and *), or data nodes")
        return [float(other)]

    def __add__(self, other):
        if hasattr(other, "stream_code"):
            return self._by_random(other, "shift")
        node = self._binary(other, "add", "+")
        return node if node is not None else self._scale_shift(
            [1.0], self._number(other, "+"))

    def __sub__(self, other):
        if hasattr(other, "stream_code"):
            negated = -other
            if negated is NotImplemented:
                raise TypeError(f"{self!r} - {other!r}: add the value's "
                                "negation instead (a coin flip has none)")
            return self._by_random(negated, "shift")
        node = self._binary(other, "sub", "-")
        return node if node is not None else self._scale_shift(
            [1.0], [-v for v in self._number(other, "-")])

    def __rsub__(self, other):
        return self._scale_shift([-1.0], self._number(other, "-"))

    def __mul__(self, other):
        if hasattr(other, "stream_code"):
            return self._by_random(other, "scale")
        node = self._binary(other, "mul", "*")
        return node if node is not None else self._scale_shift(
            self._number(other, "*"), [0.0])

    def __truediv__(self, other):
        node = self._binary(other, "div", "/")
        if node is not None:
            return node
        divisors = self._number(other, "/")
        if 0 in divisors:
            raise ZeroDivisionError(f"{self!r} / {other!r}: a zero divisor")
        return self._scale_shift([1.0 / d for d in divisors], [0.0])

    def __rtruediv__(self, other):
        raise TypeError(f"{other!r} / {self!r}: a number divided by a data "
                        "node is not in actorflow.dali")

    def __neg__(self):
        return self._scale_shift([-1.0], [0.0])

    __radd__ = __add__
    __rmul__ = __mul__


_said = set()


def _say_host_once(device):
    """Tells once per process that "mixed"/"gpu" operators run on the host."""
    if "host" in _said:
        return
    _said.add("host")
    warnings.warn(
        f"actorflow.dali: device '{device}': operators run on the host (no "
        "nvJPEG here); outputs marked .gpu() or made on 'mixed'/'gpu' come "
        "out of the framework iterators as CUDA tensors where torch sees a "
        "GPU, else on the CPU with the same values", stacklevel=3)


def _refuse_random_as_data(node, where):
    """fn.random values are per-sample arguments (_args.RandomArgument):
    say so where one is used as data, rather than that it is no node."""
    from actorflow.dali import _args  # imports this module
    if isinstance(node, _args.RandomArgument):
        raise ValueError(
            f"{node!r} as {where}: actorflow.dali draws fn.random values "
            "inside the operator given them as an argument (mirror=, "
            "angle=, crop_pos_x=, ...), or combined with a data node "
            "(images * fn.random.uniform(...)); it is not data on its own "
            "(docs/python.md, 'Coming from DALI')")


def _serialized(checkpoint):
    """Whether Pipeline(checkpoint=...) was given DALI's serialized
    checkpoint (bytes, or a file of them) rather than a directory or a list
    of directories."""
    if isinstance(checkpoint, (bytes, bytearray, memoryview)):
        return True
    return isinstance(checkpoint, (str, os.PathLike)) and \
        os.path.isfile(checkpoint)


class Pipeline(_base.Pipeline):
    """DALI's Pipeline: Pipeline(batch_size, num_threads, device_id, seed,
    ...) with DALI's keyword arguments. build() is optional; run() returns
    one TensorListCPU per output. With a reader, run() never ends: it goes
    on into the next epoch and every batch is full (pad_last_batch: the
    epoch's last batch repeats its last sample instead)."""

    _node_class = DataNode

    def __init__(self, batch_size=-1, num_threads=-1, device_id=-1, seed=-1,
                 exec_pipelined=True, prefetch_queue_depth=2, exec_async=True,
                 bytes_per_sample=0, set_affinity=False, max_streams=-1,
                 default_cuda_stream_priority=0, *, enable_memory_stats=False,
                 enable_checkpointing=False, checkpoint=None,
                 py_num_workers=1, py_start_method="fork",
                 py_callback_pickler=None, output_dtype=None,
                 output_ndim=None, exec_dynamic=False,
                 experimental_exec_dynamic=False, stream=None,
                 on_error="fail", fuse_decode=True, restore_from=None):
        if batch_size is None or batch_size < 1:
            raise ValueError(
                f"Pipeline: batch_size {batch_size}: give the batch size (at "
                "least 1)")
        if num_threads is None or num_threads < 1:
            num_threads = len(os.sched_getaffinity(0))
        if isinstance(prefetch_queue_depth, dict):
            prefetch_queue_depth = prefetch_queue_depth.get("cpu_size", 2)
        if device_id is not None and device_id < -1:
            raise ValueError(f"Pipeline: device_id {device_id}: a GPU's "
                             "index, or -1 / None for none")
        # Operators run on the host whatever the device (one pipeline per
        # GPU in DALI's multi-GPU examples): device_id says where the
        # framework iterators put the outputs marked for a GPU, and
        # Pipeline.current().device_id gives the shard in those examples.
        # DALI's checkpoint=: the bytes checkpoint() returned, or a file
        # holding them; a directory is actorflow's (restore_from).
        unpacked = None
        if checkpoint is not None and _serialized(checkpoint):
            data = checkpoint
            if isinstance(checkpoint, (str, os.PathLike)):
                with open(checkpoint, "rb") as f:
                    data = f.read()
            unpacked = _checkpoint.Unpacked(data)
            checkpoint = unpacked.path
        try:
            super().__init__(batch_size, num_threads,
                             None if device_id in (None, -1) else 0, seed,
                             prefetch_queue_depth=prefetch_queue_depth,
                             on_error=on_error, fuse_decode=fuse_decode,
                             restore_from=restore_from, checkpoint=checkpoint)
        except BaseException:
            if unpacked is not None:
                unpacked.cleanup()
            raise
        # Kept until the build has restored from it.
        self._unpacked = unpacked
        # An iterator made over this pipeline goes on from this place.
        self._iterator_state = None if unpacked is None else unpacked.iterator
        self.device_id = device_id
        self._output_nodes = []
        self._readers = {}  # op name -> reader_meta without sizes
        self._feeds = []  # _ExternalFeed, in declaration order
        # external_source(repeat_last=True): name -> the last batch fed
        # (None before the first), and how many fed batches no scheduled
        # batch has taken yet.
        self._repeat_last = {}
        self._unclaimed = {}
        # per output: samples read ahead of a batch
        self._carry = None if unpacked is None else unpacked.carry
        # () -> (height, width) of each of the reader's images, when known
        self._reader_sizes = None
        # run()'s schedule for the next step, made while outputs() copies
        # this one out (_step): the next run() schedules nothing more.
        self._prepaid = False
        self._prepay_now = False
        # share_outputs() batches not yet released (a reader's: owned)
        self._shared = 0
        # external_source(parallel=True): py_num_workers threads calling
        # its per-sample callbacks, made when first needed.
        self.py_num_workers = max(1, int(py_num_workers or 1))
        self._py_workers = None

    # ---- definition ----

    @staticmethod
    def current():
        """The pipeline being defined (in `with pipe:` or a @pipeline_def
        function), or None."""
        stack = getattr(_base._defining, "stack", None)
        return stack[-1] if stack else None

    def set_outputs(self, *nodes):
        for node in nodes:
            _refuse_random_as_data(node, "an output of the pipeline")
        super().set_outputs(*nodes)
        self._output_nodes = list(nodes)

    def _declare(self, op, inputs, num_outputs, device, name, attrs, source):
        for node in inputs:
            _refuse_random_as_data(node, f"an input of operator '{op}'")
            if getattr(node, "half", False):
                raise ValueError(
                    f"operator '{op}': its input {node.name} is FLOAT16, "
                    "which actorflow.dali makes as an output leaves the "
                    "pipeline (operators compute in float32): give FLOAT16 "
                    "to the last operator only")
            if getattr(node, "pad", None) is not None and op != "batch":
                raise ValueError(
                    f"operator '{op}': its input {node.name} is fn.pad's "
                    "output, which actorflow.dali pads as the batch leaves "
                    "the pipeline (the batch's largest extents are known "
                    "only then): pad last")
        return super()._declare(op, inputs, num_outputs, device, name, attrs,
                                source)

    def build(self):
        if not self._built:
            self._define()
            # Decoded images fed through external sources (no reader to
            # list them): their box waits for the first batch fed.
            self._box_from_fed = (
                not self._readers and bool(self._shapes) and
                self._reader_sizes is None and
                any(n.bound is not None for n in self._output_nodes))
            if not self._box_from_fed:
                self._batch_to_largest_image()
            self._building = True
            try:
                super().build()
            finally:
                self._building = False
            if any(n.device == "gpu" for n in self._output_nodes):
                _say_host_once("gpu")

    def _batch_to_largest_image(self, sizes=None, headroom=1):
        """Decoded images batched as they are (DALI's TensorList of
        different shapes): the batch's box is the largest image the
        reader's files hold, read from their headers (or `sizes`, times
        `headroom`)."""
        unbounded = [n for n in self._output_nodes if n.bound is not None]
        if not unbounded:
            return
        if sizes is None and self._reader_sizes is None:
            raise ValueError(
                f"outputs {[n.name for n in unbounded]}: images of unknown "
                "size from a reader whose images are not listed here "
                "(file_list, tfrecord): resize or crop them to one size")
        if sizes is None:
            sizes = self._reader_sizes()
        largest = headroom * max(n.bound(sizes) for n in unbounded)
        # One batch input per node (an output given twice is batched once).
        unique = list({n.name: n for n in self._output_nodes}.values())
        self.__enter__()
        try:
            batched = _base._add_operator(
                "batch", unique, len(unique), "cpu", None,
                {"max_shape": [largest] * 3})
        finally:
            self.__exit__()
        if not isinstance(batched, tuple):
            batched = (batched,)
        renamed = {old.name: new.name for old, new in zip(unique, batched)}
        nodes = [old._like() for old in self._output_nodes]
        for node in nodes:
            node.name = renamed[node.name]
        self.set_outputs(*nodes)

    def _require_built(self):
        if not self._built:
            self.build()

    def checkpoint(self, directory=None, keep_last=0, *, filename=None):
        """DALI's: with no directory, the pipeline's state as bytes (also
        written to `filename` when given), which Pipeline(checkpoint=...)
        goes on from, given those bytes or the file. With a directory,
        actorflow's: a checkpoint under it, whose path is returned
        (docs/checkpoints.md)."""
        if directory is not None:
            return super().checkpoint(directory, keep_last)
        self._require_native()
        data = _checkpoint.pack(self)
        if filename is not None:
            with open(filename, "wb") as f:
                f.write(data)
        return data

    def _build_native(self):
        if getattr(self, "_box_from_fed", False):
            # The first batch's encoded images, from their headers; twice
            # the largest side, as an external source sizes itself
            # (actorflow.pipeline._headroom).
            if not self._pending:
                if getattr(self, "_building", False):
                    return  # built when the first batch is fed
                raise ValueError(
                    "decoded images of unknown size from external sources "
                    "that were fed nothing: feed_input() a batch (or give "
                    "source=) before run()")
            self._box_from_fed = False
            from actorflow import _actorflow
            sizes = []
            for _, batch, shapes in self._pending:
                if batch.dtype != numpy.uint8 or batch.ndim != 2:
                    continue
                for row, shape in zip(batch, shapes):
                    try:
                        sizes.append(_actorflow._image_size(
                            row[:int(shape[0])].tobytes()))
                    except (ValueError, RuntimeError):
                        pass  # not an image: labels, say
            if not sizes:
                raise ValueError(
                    "decoded images of unknown size, and the first batch "
                    "the external sources gave holds no image header: "
                    "resize or crop them to one size")
            self._built = False  # the batch operator joins the definition
            try:
                self._batch_to_largest_image(sizes, headroom=2)
            finally:
                self._built = True
        super()._build_native()
        # Restored from it: a DALI checkpoint's unpacked copy is done with.
        # (A build that failed keeps it, for another try, until the
        # pipeline goes.)
        if self._unpacked is not None:
            self._unpacked.cleanup()
            self._unpacked = None

    def _pull_sources(self, epoch_begins):
        super()._pull_sources(epoch_begins)
        for feed in self._feeds:
            feed.pull(self, epoch_begins)
        # The batch about to be scheduled takes one fed batch from each
        # repeat_last source, the last one again when none is waiting.
        for name, last in self._repeat_last.items():
            if self._unclaimed.get(name, 0) == 0:
                if last is None:
                    raise ValueError(
                        f"external_source '{name}' (repeat_last=True): "
                        "nothing fed yet to repeat; feed_input() a first "
                        "batch")
                self.feed_input(name, last)
            self._unclaimed[name] -= 1

    def feed_input(self, data_node, data, layout=None, cuda_stream=None,
                   use_copy_kernel=False):
        data = _as_host(data)
        super().feed_input(data_node, data)
        name = getattr(data_node, "name", data_node)
        if name in self._repeat_last:
            self._repeat_last[name] = data
            self._unclaimed[name] = self._unclaimed.get(name, 0) + 1

    # ---- readers ----

    def _add_reader(self, name, meta):
        self._readers[name] = meta

    def reader_meta(self, name=None):
        """DALI's reader_meta: epoch_size (the whole dataset),
        epoch_size_padded, number_of_shards, shard_id, pad_last_batch,
        stick_to_shard; for every reader when name is None."""
        if name is None:
            return {n: self.reader_meta(n) for n in self._readers}
        if name not in self._readers:
            raise ValueError(
                f"reader_meta: no reader named '{name}' (readers: "
                f"{sorted(self._readers) or 'none'}); name it with "
                "fn.readers.file(..., name=...)")
        self._require_native()
        meta = dict(self._readers[name])
        total = int(self._native.dataset_size())
        shards = meta["number_of_shards"]
        per_shard = -(-total // shards)
        if meta["pad_last_batch"]:
            per_shard = -(-per_shard // self.batch_size) * self.batch_size
            padded = per_shard * shards
        else:
            padded = total
        meta.update(epoch_size=total, epoch_size_padded=padded)
        return meta

    def epoch_size(self, name=None):
        """DALI's: the reader's whole dataset (every shard); a dict of
        every reader's when name is None."""
        if name is None:
            return {n: self.reader_meta(n)["epoch_size"] for n in self._readers}
        return self.reader_meta(name)["epoch_size"]

    def shard_size(self):
        """Samples this pipeline's shard yields per epoch (ours: every
        shard has as many, a short one repeating its last sample)."""
        self._require_native()
        return int(self._native.epoch_size())

    # ---- running ----

    def schedule_run(self):
        """DALI's: the first schedules prefetch_queue_depth batches (DALI
        prefetches so), each later one a batch, so that a loop of
        share_outputs(), release_outputs(), schedule_run() keeps that many
        in the making."""
        if self._started:
            super().schedule_run()
            return
        self._started = True
        for _ in range(self.prefetch_queue_depth):
            super().schedule_run()

    def outputs(self):
        """DALI's: the next scheduled batch (schedule_run() makes them). A
        reader's pipeline gives full batches across epochs, as run() does."""
        if not self._readers:
            return self._taken_batch()
        return self._full_batch(self._scheduled_batch)

    def _scheduled_batch(self, more):
        """The next batch schedule_run() made. Topping up a short batch
        (`more`), or at an epoch's end, the batch is scheduled here: the
        caller scheduled one batch per step, and those it scheduled past
        the reader's turn end with the epoch."""
        if more and self._scheduled == 0:
            self.schedule_run()
        try:
            return self._taken_batch()
        except StopIteration:
            _base.Pipeline.reset(self)
            self.schedule_run()
            return self._taken_batch()

    def _taken_batch(self):
        # The batch is handed over at once (its buffers themselves, the
        # registers taking recycled ones: no copy) and its registers given
        # back, so the pipeline holds nothing of the caller's (a checkpoint
        # may be taken between any two steps).
        for _ in range(len(self._held)):
            super().release_outputs()
        batches = self._take(share=False, owned=True)
        if self._prepay_now:
            self.schedule_run()
            self._prepaid = True
        return self._tensor_lists(batches, owned=True)

    def _step(self):
        """The base run(), but a reader's pipeline schedules the next step's
        batch while this one is copied out rather than once the caller comes
        back: a batch of 32 float images takes the caller's thread about 5 ms
        to copy, and with only the next batch in the making the pipeline's
        workers would run out of samples meanwhile. The batches are the
        same; in the making are at most prefetch_queue_depth, as before. Not
        with external sources or an iter_setup of the caller's, which a
        schedule would call early."""
        self._prepay_now = bool(self._readers) and not self._feeds and \
            not self._shapes and not self._sources and \
            type(self).iter_setup is _base.Pipeline.iter_setup
        try:
            if self._started and self._prepaid:
                self._prepaid = False
                return self._taken_batch()
            self._prepaid = False
            self.schedule_run()
            return self._taken_batch()
        finally:
            self._prepay_now = False

    def share_outputs(self):
        """DALI's: the next scheduled batch, until release_outputs(). A
        reader's pipeline gives full batches across epochs, as run() does
        (owned: they stay valid after the release)."""
        if not self._readers:
            return self._tensor_lists(super().share_outputs())
        lists = self._full_batch(self._scheduled_batch)
        self._shared += 1
        return lists

    def release_outputs(self):
        if not self._readers:
            super().release_outputs()
            return
        if self._shared == 0:
            raise RuntimeError("release_outputs: no batch is held")
        self._shared -= 1

    def _tensor_lists(self, batches, owned=False):
        lists = []
        for k, batch in enumerate(batches):
            node = self._output_nodes[k] if k < len(self._output_nodes) \
                else None
            shapes = batch._shapes
            data = batch._data
            if node is not None and node.unit_dim and data.ndim == 1:
                data = data.reshape(-1, 1)
                shapes = numpy.ones((len(batch), 1), numpy.int64)
            lists.append(tensors.TensorListCPU.from_batch(
                data, shapes, node.layout if node is not None else "",
                numpy.float16 if node is not None and node.half else None,
                owned=owned))
        # A reader's batches are padded once whole (_full_batch).
        return tuple(lists) if self._readers else self._padded(lists)

    def _padded(self, lists):
        """fn.pad's outputs padded to their batch's largest extents."""
        lists = list(lists)
        for k, node in enumerate(self._output_nodes[:len(lists)]):
            if node.pad is not None:
                lists[k] = tensors.TensorListCPU(
                    node.pad.apply(lists[k]._samples), node.layout)
        return tuple(lists)

    def run(self, **pipeline_inputs):
        """The next batch: one TensorListCPU per output, owned (keep it).
        Without a reader, StopIteration ends the epoch (reset() starts the
        next); a reader's pipeline goes on into the next epoch."""
        if pipeline_inputs:
            for name, data in pipeline_inputs.items():
                self.feed_input(name, data)
        self._require_built()
        if not self._readers:
            return super().run()
        return self._full_batch(self._stepped_batch)

    def _stepped_batch(self, more):
        del more  # run() schedules every batch it takes
        try:
            return self._step()
        except StopIteration:
            self._prepaid = False
            _base.Pipeline.reset(self)  # the reader's next epoch
            return self._step()

    def _full_batch(self, take):
        """A reader's batches as DALI's: `take()`'s batches, the epoch's
        short last one topped up from the next epoch (or its last sample
        repeated, pad_last_batch), so every batch is full."""
        n = self.batch_size
        pad = any(meta["pad_last_batch"] for meta in self._readers.values())
        more = False
        while True:
            lists = take(more)
            more = True
            got = len(lists[0])
            if self._carry is None and got == n:
                return self._padded(lists)
            if self._carry is None:
                self._carry = [[] for _ in lists]
            for k, tl in enumerate(lists):
                self._carry[k].extend(tl._samples)
            if got < n and pad:
                # The epoch's last batch: its last sample repeats.
                for samples in self._carry:
                    samples.extend([samples[-1]] * (n - len(samples)))
            if len(self._carry[0]) >= n:
                out = tuple(tensors.TensorListCPU(s[:n], tl.layout())
                            for s, tl in zip(self._carry, lists))
                rest = [s[n:] for s in self._carry]
                self._carry = rest if rest[0] else None
                return self._padded(out)

    def _parallel_map(self, function, items):
        """[function(item)] in order, on py_num_workers threads."""
        if self._py_workers is None:
            self._py_workers = concurrent.futures.ThreadPoolExecutor(
                self.py_num_workers, thread_name_prefix="py_worker")
        return list(self._py_workers.map(function, items))

    def close(self):
        if self._py_workers is not None:
            self._py_workers.shutdown(wait=True)
            self._py_workers = None
        super().close()

    def __del__(self):
        workers = getattr(self, "_py_workers", None)
        if workers is not None:
            workers.shutdown(wait=True)
        super().__del__()

    def reset(self):
        """Starts the next epoch of external sources. A reader's pipeline
        runs on across epochs by itself (as DALI's readers do), so there it
        changes nothing."""
        if not self._readers:
            super().reset()


def _image_size(path):
    """(height, width) from an image file's header."""
    from actorflow import _actorflow
    with open(path, "rb") as f:
        head = f.read(1 << 16)
        try:
            return _actorflow._image_size(head)
        except ValueError:
            # A header past the first 64 KiB (a large EXIF block).
            return _actorflow._image_size(head + f.read())


def _as_host(data):
    """numpy arrays from what DALI's feed_input takes: numpy arrays, torch
    tensors (moved to the host), lists of either, TensorListCPU."""
    if isinstance(data, tensors.TensorListCPU):
        return [data.at(i) for i in range(len(data))]
    if isinstance(data, numpy.ndarray):
        return data
    if hasattr(data, "detach") and hasattr(data, "cpu"):
        return data.detach().cpu().numpy()
    if isinstance(data, (list, tuple)):
        return [_as_host(s) if not isinstance(s, numpy.ndarray) else s
                for s in data]
    return numpy.asarray(data)


_PIPELINE_ARGS = frozenset(
    inspect.signature(Pipeline.__init__).parameters) - {"self"}


def pipeline_def(fn=None, *, enable_conditionals=False, **pipeline_kwargs):
    """DALI's decorator: the function defines the graph and returns its
    outputs; calling it with Pipeline's arguments (batch_size, num_threads,
    device_id, seed, prefetch_queue_depth, ...) and its own returns the
    pipeline. Arguments given to the decorator are defaults."""
    if enable_conditionals:
        raise NotImplementedError(
            "pipeline_def(enable_conditionals=True): conditionals are not "
            "in actorflow.dali")

    def decorate(func):
        @functools.wraps(func)
        def create(*args, **kwargs):
            own = dict(pipeline_kwargs)
            for key in list(kwargs):
                if key in _PIPELINE_ARGS and key not in inspect.signature(
                        func).parameters:
                    own[key] = kwargs.pop(key)
            pipe = Pipeline(**own)
            with pipe:
                outputs = func(*args, **kwargs)
                if outputs is None:
                    raise ValueError(
                        f"@pipeline_def {func.__name__}: returns no outputs")
                if not isinstance(outputs, (tuple, list)):
                    outputs = (outputs,)
                pipe.set_outputs(*outputs)
            return pipe
        create._is_pipeline_def = True
        return create

    return decorate(fn) if fn is not None else decorate
