"""DALI's TensorList and Tensor on the CPU: one pipeline output of one
iteration, a batch of samples whose shapes may differ. They own their
memory: keep them as long as you like."""

import numpy

from actorflow.dali import types


class TensorCPU:
    """One sample, or a dense batch as one tensor: numpy's array protocol
    (numpy.array(t)), DLPack (torch.from_dlpack(t)), shape(), dtype,
    layout()."""

    def __init__(self, array, layout=""):
        self._array = array
        self._layout = layout

    def shape(self):
        return list(self._array.shape)

    @property
    def dtype(self):
        return types.to_dali_type(self._array.dtype)

    def layout(self):
        return self._layout

    def as_array(self):
        return self._array

    def as_cpu(self):
        return self

    def squeeze(self, dim=None):
        return TensorCPU(numpy.squeeze(self._array, axis=dim))

    def __array__(self, dtype=None, copy=None):
        return self._array if dtype is None else self._array.astype(dtype)

    def __dlpack__(self, stream=None):
        return self._array.__dlpack__()

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()

    def __len__(self):
        return len(self._array)

    def __repr__(self):
        return f"TensorCPU(shape={self.shape()}, dtype={self.dtype.name})"


class TensorListCPU:
    """n samples: at(i) / [i] (a numpy array of the sample's own shape),
    iteration, len(), shape() (each sample's), layout(), dtype,
    is_dense_tensor(), as_array() and as_tensor() (the batch as one
    array/tensor when all samples share a shape), as_cpu()."""

    def __init__(self, samples, layout=""):
        self._samples = samples  # list of numpy arrays, owned
        self._layout = layout
        self._dense = None

    @classmethod
    def from_batch(cls, data, shapes, layout="", dtype=None, owned=False):
        """From a padded batch [n, box...] and per-sample shapes [n, rank]:
        copies what it keeps (converted to `dtype` if given), but for a
        dense batch that is the caller's own already (owned) and needs no
        conversion, which it keeps as it is."""
        box = numpy.asarray(data.shape[1:], numpy.int64)
        if shapes.shape[0] and numpy.all(shapes == box):
            out = cls([], layout)
            keep = owned and (dtype is None or numpy.dtype(dtype) == data.dtype)
            out._dense = data if keep else numpy.array(data, dtype=dtype)
            out._samples = list(out._dense)
            return out
        return cls([numpy.array(data[(i,) + tuple(slice(0, int(d)) for d in row)],
                                dtype=dtype)
                    for i, row in enumerate(shapes)], layout)

    def __len__(self):
        return len(self._samples)

    def at(self, i):
        return self._samples[i]

    def __getitem__(self, i):
        return TensorCPU(self._samples[i], self._layout)

    def __iter__(self):
        return (TensorCPU(s, self._layout) for s in self._samples)

    def shape(self):
        return [tuple(s.shape) for s in self._samples]

    def layout(self):
        return self._layout

    @property
    def dtype(self):
        if not self._samples:
            return types.NO_TYPE
        return types.to_dali_type(self._samples[0].dtype)

    def is_dense_tensor(self):
        return len({s.shape for s in self._samples}) <= 1

    def as_array(self):
        if self._dense is None:
            if not self.is_dense_tensor():
                raise RuntimeError(
                    "as_array: the samples' shapes differ "
                    f"({sorted(set(self.shape()))[:3]}...): take them one by "
                    "one with at(i)")
            self._dense = numpy.stack(self._samples) if self._samples else \
                numpy.zeros((0,))
        return self._dense

    def as_tensor(self):
        return TensorCPU(self.as_array(), self._layout)

    def as_cpu(self):
        return self

    def as_reshaped_tensor(self, shape):
        return TensorCPU(self.as_array().reshape(shape), self._layout)

    def __repr__(self):
        return (f"TensorListCPU({len(self)} samples, dtype="
                f"{self.dtype.name}, layout='{self._layout}')")
