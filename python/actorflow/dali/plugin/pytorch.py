"""DALI's PyTorch iterators on actorflow pipelines: DALIGenericIterator,
DALIClassificationIterator, DALIRaggedIterator and LastBatchPolicy (and feed_ndarray,
to_torch_type), counting epochs as DALI
does (reader_name, size, last_batch_policy, last_batch_padded). Each step
is a list with one dict per pipeline, mapping each name of output_map to
a torch.Tensor the caller owns (kept across steps). Outputs marked .gpu()
or made on "mixed"/"gpu" are CUDA tensors where torch sees a GPU."""

import math
import warnings

import numpy
import torch

from actorflow.dali import _checkpoint, tensors
from actorflow.dali.plugin.base_iterator import LastBatchPolicy  # noqa: F401
from actorflow.dali.types import DALIDataType

# DALI's table: the torch dtype of each element type (a TensorListCPU's
# or a TensorCPU's .dtype), for tensors a caller allocates to feed_ndarray.
to_torch_type = {
    DALIDataType.FLOAT: torch.float32,
    DALIDataType.FLOAT64: torch.float64,
    DALIDataType.FLOAT16: torch.float16,
    DALIDataType.UINT8: torch.uint8,
    DALIDataType.INT8: torch.int8,
    DALIDataType.BOOL: torch.bool,
    DALIDataType.INT16: torch.int16,
    DALIDataType.INT32: torch.int32,
    DALIDataType.INT64: torch.int64,
}


def _dense(output, name):
    if isinstance(output, tensors.TensorListCPU):
        if not output.is_dense_tensor():
            raise RuntimeError(
                f"output '{name}': the samples' shapes differ "
                f"({sorted(set(output.shape()))[:3]}...): resize or crop to "
                "one size before a framework iterator")
        return output.as_array()
    return numpy.array(output.as_array())  # an actorflow.pipeline Batch


def feed_ndarray(dali_tensor, arr, cuda_stream=None):
    """DALI's helper: copies a TensorCPU (or a dense TensorListCPU) into
    the torch tensor `arr`, which must have its shape (and, as in DALI, a
    matching element size); returns arr. cuda_stream is accepted and
    unused: the copy is torch's."""
    if isinstance(dali_tensor, tensors.TensorListCPU):
        dali_tensor = dali_tensor.as_tensor()
    source = torch.from_numpy(numpy.ascontiguousarray(
        numpy.asarray(dali_tensor)))
    if tuple(source.shape) != tuple(arr.shape):
        raise ValueError(f"feed_ndarray: shapes differ: {tuple(source.shape)} "
                         f"into {tuple(arr.shape)}")
    if source.element_size() != arr.element_size():
        raise ValueError(f"feed_ndarray: a {source.dtype} tensor into a "
                         f"{arr.dtype} one")
    with torch.no_grad():
        arr.copy_(source.to(arr.dtype))
    return arr


class DALIGenericIterator:
    """pipelines: one or a list (one per GPU in DALI; here each its own
    shard). output_map: a name per pipeline output. reader_name: the
    reader (fn.readers.*(name=...)) whose shard sets the epoch; else size
    (samples per epoch across the pipelines), else the pipelines'
    StopIteration."""

    def __init__(self, pipelines, output_map, size=-1, reader_name=None,
                 auto_reset=False, fill_last_batch=None, dynamic_shape=False,
                 last_batch_padded=False,
                 last_batch_policy=LastBatchPolicy.FILL,
                 prepare_first_batch=True):
        if not isinstance(pipelines, (list, tuple)):
            pipelines = [pipelines]
        if not pipelines:
            raise ValueError("DALIGenericIterator: no pipeline")
        self._pipes = list(pipelines)
        self.batch_size = self._pipes[0].batch_size
        if any(p.batch_size != self.batch_size for p in self._pipes):
            raise ValueError("DALIGenericIterator: the pipelines' batch sizes "
                             "differ")
        self.output_map = list(output_map)
        if len(set(self.output_map)) != len(self.output_map):
            raise ValueError(f"DALIGenericIterator: output_map "
                             f"{self.output_map} repeats a name")
        if fill_last_batch is not None:
            last_batch_policy = (LastBatchPolicy.FILL if fill_last_batch
                                 else LastBatchPolicy.PARTIAL)
        if not isinstance(last_batch_policy, LastBatchPolicy):
            raise ValueError(f"DALIGenericIterator: last_batch_policy "
                             f"{last_batch_policy!r} is no LastBatchPolicy")
        self._policy = last_batch_policy
        if auto_reset in ("yes", "quiet"):
            auto_reset = True
        elif auto_reset == "no":
            auto_reset = False
        self._auto_reset = bool(auto_reset)
        self._reader_name = reader_name
        if reader_name is not None and size > 0:
            raise ValueError("DALIGenericIterator: give reader_name or size, "
                             "not both")
        for pipe in self._pipes:
            pipe.build()
        self._padded = bool(last_batch_padded)
        self._shard = None  # samples per epoch of each pipeline's shard
        if reader_name is not None:
            metas = [p.reader_meta(reader_name) for p in self._pipes]
            self._padded = any(m["pad_last_batch"] for m in metas)
            self._shard = self._pipes[0].shard_size()
            self._size = -(-self._shard // self.batch_size) * self.batch_size
        else:
            self._size = int(size)
            if self._size < 0 and self._policy == LastBatchPolicy.FILL:
                # No count to fill up to: the pipelines' own ends rule.
                self._policy = LastBatchPolicy.PARTIAL
        self._counter = 0  # samples handed out this epoch (per pipeline)
        self._ahead = 0  # of them read in the previous epoch (FILL)
        self._ended = False
        # Pipelines made from checkpoints() go on from the place saved
        # with them.
        places = [getattr(p, "_iterator_state", None) for p in self._pipes]
        if places and all(place is not None for place in places):
            self._go_on_from(places[0])
        self._devices = [self._device_of(p) for p in self._pipes]

    def _device_of(self, pipe):
        nodes = getattr(pipe, "_output_nodes", [])
        want = [getattr(n, "device", "cpu") == "gpu" for n in nodes]
        if any(want) and not torch.cuda.is_available():
            return [None] * len(want)  # said once by the pipeline
        # The pipeline's own GPU where torch has it, as DALI's.
        index = getattr(pipe, "device_id", None)
        gpu = (f"cuda:{index}" if isinstance(index, int) and
               0 <= index < torch.cuda.device_count() else "cuda")
        return [gpu if w else None for w in want]

    # ---- epochs ----

    def _epoch_need(self):
        """Samples this epoch still owes each pipeline (None: unbounded)."""
        if self._shard is not None:
            return self._shard - self._ahead
        if self._size > 0:
            return -(-self._size // len(self._pipes)) - self._ahead
        return None

    def __len__(self):
        if self._shard is not None:
            need = self._shard
        elif self._size > 0:
            need = -(-self._size // len(self._pipes))
        else:
            raise TypeError("DALIGenericIterator: len() needs reader_name or "
                            "size")
        if self._policy == LastBatchPolicy.DROP:
            return need // self.batch_size
        return math.ceil(need / self.batch_size)

    @property
    def size(self):
        return self._size

    def __iter__(self):
        if self._ended:
            self.reset()
        return self

    def __next__(self):
        if self._ended:
            raise StopIteration
        need = self._epoch_need()
        n = self.batch_size
        if need is not None:
            left = need - self._counter
            if left <= 0 or (self._policy == LastBatchPolicy.DROP and
                             left < n):
                self._end_epoch(left)
        step = []
        try:
            outputs = [p.run() for p in self._pipes]
        except StopIteration:
            self._end_epoch(0)
        keep = n
        if need is not None and self._policy == LastBatchPolicy.PARTIAL:
            keep = min(n, need - self._counter)
        for pipe_index, outs in enumerate(outputs):
            if len(outs) != len(self.output_map):
                raise ValueError(
                    f"DALIGenericIterator: the pipeline has {len(outs)} "
                    f"outputs, output_map names {len(self.output_map)}")
            step_dict = {}
            devices = self._devices[pipe_index]
            for k, (name, out) in enumerate(zip(self.output_map, outs)):
                device = devices[k] if k < len(devices) else None
                step_dict[name] = self._torch_output(k, name, out, keep,
                                                     device)
            step.append(step_dict)
        self._counter += len(next(iter(step[0].values()))) if keep < n else n
        return step

    def _torch_output(self, k, name, out, keep, device):
        """Output k of a step: its first `keep` samples as one tensor."""
        array = _dense(out, name)
        tensor = torch.from_numpy(array[:keep] if keep < len(array)
                                  else array)
        if device is not None:
            tensor = tensor.to(device, non_blocking=True)
        return tensor

    next = __next__

    def _end_epoch(self, left):
        if self._policy == LastBatchPolicy.FILL and not self._padded and \
                self._epoch_need() is not None:
            # Samples of the next epoch the last full batch held.
            self._ahead = max(0, self._counter - self._epoch_need())
        else:
            self._ahead = 0
        self._ended = True
        if self._auto_reset:
            self.reset()
        raise StopIteration

    # 2: each pipeline's checkpoint as Pipeline.checkpoint() serializes it;
    # 1 (still read): a tar of its directory beside the carried samples.
    _STATE_FORMAT = "actorflow.dali iterator 2"
    _STATE_FORMATS = ("actorflow.dali iterator 1", _STATE_FORMAT)

    def _place(self):
        return {"counter": self._counter, "ahead": self._ahead,
                "ended": self._ended}

    def _go_on_from(self, place):
        self._counter = int(place["counter"])
        self._ahead = int(place["ahead"])
        self._ended = bool(place["ended"])

    def checkpoints(self):
        """DALI's: each pipeline's checkpoint (bytes, as
        Pipeline.checkpoint() returns them) with this iterator's place in
        the epoch. Pipelines made with checkpoint= these, under a new
        iterator, hand out exactly the batches this one hands out next."""
        place = self._place()
        return [_checkpoint.pack(pipe, iterator=place) for pipe in self._pipes]

    def state_dict(self):
        """The iterator's place, as a dict that torch.save, Lightning,
        accelerate and torch.distributed.checkpoint store with the model:
        each pipeline's checkpoint (docs/checkpoints.md; the batches after
        a load are exactly those this iterator hands out next) and the
        epoch's count."""
        return {"format": self._STATE_FORMAT,
                "pipelines": [_checkpoint.pack(pipe) for pipe in self._pipes],
                **self._place()}

    def load_state_dict(self, state):
        """Goes on from a state_dict() of an iterator over the same
        pipelines; call it before the first step."""
        if not isinstance(state, dict) or \
                state.get("format") not in self._STATE_FORMATS:
            raise ValueError("load_state_dict: not a state_dict() of an "
                             "actorflow.dali iterator")
        if len(state["pipelines"]) != len(self._pipes):
            raise ValueError(
                f"load_state_dict: the state has {len(state['pipelines'])} "
                f"pipelines, this iterator {len(self._pipes)}")
        for pipe in self._pipes:
            if pipe._started or pipe._scheduled:
                raise RuntimeError("load_state_dict: call it before the "
                                   "iterator's first step")
        older = state["format"] != self._STATE_FORMAT
        for pipe, saved in zip(self._pipes, state["pipelines"]):
            unpacked = _checkpoint.Unpacked(
                saved["checkpoint"] if older else saved)
            try:
                pipe._native.restore([unpacked.path])
            finally:
                unpacked.cleanup()
            if hasattr(pipe, "_carry"):
                pipe._carry = saved["carry"] if older else unpacked.carry
        self._go_on_from(state)

    def reset(self):
        """Starts the next epoch, once this one has ended (DALI ignores a
        reset in the middle of an epoch, and so does this)."""
        if not self._ended and self._counter > 0 and \
                self._epoch_need() is not None:
            warnings.warn("DALIGenericIterator: reset() in the middle of an "
                          "epoch is ignored, as DALI ignores it")
            return
        if self._ended:
            for pipe in self._pipes:
                pipe.reset()  # a reader's pipeline runs on by itself
        self._ended = False
        self._counter = 0


class DALIClassificationIterator(DALIGenericIterator):
    """DALIGenericIterator with output_map ["data", "label"]."""

    def __init__(self, pipelines, size=-1, reader_name=None,
                 auto_reset=False, fill_last_batch=None, dynamic_shape=False,
                 last_batch_padded=False,
                 last_batch_policy=LastBatchPolicy.FILL,
                 prepare_first_batch=True):
        super().__init__(pipelines, ["data", "label"], size=size,
                         reader_name=reader_name, auto_reset=auto_reset,
                         fill_last_batch=fill_last_batch,
                         dynamic_shape=dynamic_shape,
                         last_batch_padded=last_batch_padded,
                         last_batch_policy=last_batch_policy,
                         prepare_first_batch=prepare_first_batch)


class DALIRaggedIterator(DALIGenericIterator):
    """DALIGenericIterator whose outputs may hold samples of different
    shapes: output_types, one per output, says how each comes out:
    DENSE_TAG one tensor (the samples' shapes equal), SPARSE_LIST_TAG a
    list of one tensor per sample, SPARSE_COO_TAG a torch sparse COO tensor
    of [samples, largest extent along each axis] holding every sample's
    elements at their own positions."""

    DENSE_TAG = "dense"
    SPARSE_LIST_TAG = "sparse_list"
    SPARSE_COO_TAG = "sparse_coo"

    def __init__(self, pipelines, output_map, size=-1, reader_name=None,
                 output_types=None, auto_reset=False, fill_last_batch=None,
                 dynamic_shape=False, last_batch_padded=False,
                 last_batch_policy=LastBatchPolicy.FILL,
                 prepare_first_batch=True):
        tags = (self.DENSE_TAG, self.SPARSE_LIST_TAG, self.SPARSE_COO_TAG)
        if output_types is None:
            output_types = [self.DENSE_TAG] * len(output_map)
        output_types = list(output_types)
        if len(output_types) != len(output_map):
            raise ValueError(
                f"DALIRaggedIterator: {len(output_types)} output_types for "
                f"{len(output_map)} outputs")
        for tag in output_types:
            if tag not in tags:
                raise ValueError(f"DALIRaggedIterator: output type {tag!r}: "
                                 f"one of {', '.join(tags)}")
        self._output_types = output_types
        super().__init__(pipelines, output_map, size=size,
                         reader_name=reader_name, auto_reset=auto_reset,
                         fill_last_batch=fill_last_batch,
                         dynamic_shape=dynamic_shape,
                         last_batch_padded=last_batch_padded,
                         last_batch_policy=last_batch_policy,
                         prepare_first_batch=prepare_first_batch)

    def _torch_output(self, k, name, out, keep, device):
        tag = self._output_types[k]
        if tag == self.DENSE_TAG:
            return super()._torch_output(k, name, out, keep, device)
        samples = [torch.from_numpy(numpy.array(out.at(i)))
                   for i in range(min(keep, len(out)))]
        if device is not None:
            samples = [s.to(device, non_blocking=True) for s in samples]
        if tag == self.SPARSE_LIST_TAG:
            return samples
        return _sparse_coo(samples)


def _sparse_coo(samples):
    """Ragged samples as one sparse COO tensor: element e of sample i at
    (i, *e's position in the sample)."""
    if not samples:
        return torch.sparse_coo_tensor(torch.zeros((1, 0), dtype=torch.long),
                                       torch.zeros(0), (0,))
    rank = samples[0].dim()
    if any(s.dim() != rank for s in samples):
        raise RuntimeError("DALIRaggedIterator: SPARSE_COO_TAG wants samples "
                           "of one rank")
    indices, values = [], []
    for i, sample in enumerate(samples):
        # Every position of the sample, in its own (row-major) order.
        at = torch.nonzero(torch.ones(sample.shape, dtype=torch.bool,
                                      device=sample.device)).t() if rank \
            else torch.zeros((0, 1), dtype=torch.long, device=sample.device)
        indices.append(torch.cat([torch.full((1, at.shape[1]), i,
                                             dtype=torch.long,
                                             device=sample.device), at]))
        values.append(sample.reshape(-1))
    size = [len(samples)] + [max(s.shape[d] for s in samples)
                             for d in range(rank)]
    return torch.sparse_coo_tensor(torch.cat(indices, 1), torch.cat(values),
                                   size)
