"""Batches of actorflow pipelines as torch tensors, as DALI's
DALIGenericIterator hands them to a training loop.

    it = GenericIterator(pipe, ["images", "labels"])
    for step in it:
        images, labels = step[0]["images"], step[0]["labels"]

The tensors share the pipeline's memory (no copy): each is valid until the
iterator's next step. Keep one longer with .clone().

Every epoch has len() steps, on every rank: where on_error="skip_sample"
dropped samples and the pipeline's epoch ends early, the last step repeats
(so a DistributedDataParallel loop never waits on a rank that ran out).
"""

import math

import torch  # noqa: F401  (a missing torch fails here, at import)


class GenericIterator:
    """Iterates over one pipeline or a list of them in step. Each step is a
    list with one dict per pipeline, mapping each name of output_map (one
    per pipeline output, in order) to a torch.Tensor. StopIteration ends an
    epoch; reset() starts the next (auto_reset=True: at once). size: samples
    per epoch (-1: the pipelines' epoch_size()); with it the last batch is
    cut to the samples left."""

    def __init__(self, pipelines, output_map, auto_reset=False, size=-1):
        if not isinstance(pipelines, (list, tuple)):
            pipelines = [pipelines]
        if not pipelines:
            raise ValueError("GenericIterator: no pipeline")
        self._pipes = list(pipelines)
        self._output_map = list(output_map)
        if len(set(self._output_map)) != len(self._output_map):
            raise ValueError(
                f"GenericIterator: output_map {self._output_map} repeats a name")
        self._auto_reset = auto_reset
        for pipe in self._pipes:
            pipe.build()
        self._size = size
        self._batch_size = self._pipes[0].batch_size
        self._returned = 0  # samples handed out this epoch (per pipeline)
        self._steps = 0  # steps handed out this epoch
        self._ended = False
        # With samples skipped this epoch, a copy of the last step: what
        # an epoch that ends early repeats (docstring).
        self._last = None
        self._skips = self._skip_count()

    def _skip_count(self):
        return sum(pipe._skipped_count() for pipe in self._pipes)

    def _epoch_samples(self):
        if self._size is not None and self._size > 0:
            return self._size
        size = self._pipes[0].epoch_size()
        return size if size >= 0 else None

    def __len__(self):
        samples = self._epoch_samples()
        if samples is None:
            raise TypeError(
                "GenericIterator: len() needs a known epoch size (a reader, "
                "or size=...)")
        return math.ceil(samples / self._batch_size)

    def __iter__(self):
        return self

    def __next__(self):
        if self._ended:
            raise StopIteration
        limit = self._size if self._size is not None and self._size > 0 else None
        if limit is not None and self._returned >= limit:
            self._end()
        step = []
        try:
            for pipe in self._pipes:
                batches = pipe.run()
                if len(batches) != len(self._output_map):
                    raise ValueError(
                        f"GenericIterator: the pipeline has {len(batches)} "
                        f"outputs, output_map names {len(self._output_map)}")
                step.append({name: batch.as_tensor()
                             for name, batch in zip(self._output_map, batches)})
        except StopIteration:
            if self._last is not None and self._steps < self._epoch_steps():
                self._steps += 1
                return [{k: v.clone() for k, v in d.items()}
                        for d in self._last]
            self._end()
        self._steps += 1
        if self._skip_count() != self._skips:
            self._last = [{k: v.clone() for k, v in d.items()} for d in step]
        n = next(iter(step[0].values())).shape[0]
        if limit is not None and self._returned + n > limit:
            keep = limit - self._returned
            step = [{k: v[:keep] for k, v in d.items()} for d in step]
            n = keep
        self._returned += n
        return step

    def _end(self):
        if self._auto_reset:
            self.reset()
        else:
            self._ended = True
        raise StopIteration

    def _epoch_steps(self):
        try:
            return len(self)
        except TypeError:
            return 0

    def reset(self):
        """Starts the next epoch of every pipeline."""
        for pipe in self._pipes:
            pipe.reset()
        self._returned = 0
        self._steps = 0
        self._ended = False
        self._last = None
        self._skips = self._skip_count()

    next = __next__
