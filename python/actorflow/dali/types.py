"""DALI's `types`: data types, image types, interpolation types and
`Constant`, as `nvidia.dali.types` names them."""

import enum

import numpy


class DALIDataType(enum.Enum):
    """Element types; `.numpy` is the numpy dtype (None: no such type)."""
    NO_TYPE = None
    UINT8 = "uint8"
    UINT16 = "uint16"
    UINT32 = "uint32"
    UINT64 = "uint64"
    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT16 = "float16"
    FLOAT = "float32"
    FLOAT64 = "float64"
    BOOL = "bool"

    @property
    def numpy(self):
        return None if self.value is None else numpy.dtype(self.value)


class DALIImageType(enum.Enum):
    RGB = "rgb"
    BGR = "bgr"
    GRAY = "gray"
    YCbCr = "ycbcr"
    ANY_DATA = "any"


class DALIInterpType(enum.Enum):
    INTERP_NN = "nn"
    INTERP_LINEAR = "linear"
    INTERP_CUBIC = "cubic"
    INTERP_LANCZOS3 = "lanczos3"
    INTERP_TRIANGULAR = "triangular"
    INTERP_GAUSSIAN = "gaussian"


globals().update(DALIDataType.__members__)
globals().update(DALIImageType.__members__)
globals().update(DALIInterpType.__members__)
FLOAT32 = DALIDataType.FLOAT
DOUBLE = DALIDataType.FLOAT64


def to_numpy_dtype(dtype):
    """A DALIDataType, numpy dtype or its name, as a numpy dtype."""
    if isinstance(dtype, DALIDataType):
        if dtype.value is None:
            raise ValueError("types.NO_TYPE has no element type")
        return numpy.dtype(dtype.value)
    return numpy.dtype(dtype)


def to_dali_type(dtype):
    """A numpy dtype as a DALIDataType."""
    return DALIDataType(numpy.dtype(dtype).name)


class Constant:
    """A value given where an operator takes a node or an argument: a
    scalar or an array, with an optional `dtype` and `shape`."""

    def __init__(self, value, dtype=None, shape=None, layout=None,
                 device=None, **kwargs):
        array = numpy.asarray(value)
        if dtype is not None:
            array = array.astype(to_numpy_dtype(dtype))
        if shape is not None:
            array = numpy.broadcast_to(array, shape).copy()
        self.value = array
        self.layout = layout

    def __repr__(self):
        return f"Constant({self.value.tolist()!r})"


class PipelineAPIType(enum.Enum):
    BASIC = 0
    ITERATOR = 1
    SCHEDULED = 2


class SampleInfo:
    """What a per-sample (batch=False) external source callable gets."""

    def __init__(self, idx_in_epoch, idx_in_batch, iteration, epoch_idx):
        self.idx_in_epoch = idx_in_epoch
        self.idx_in_batch = idx_in_batch
        self.iteration = iteration
        self.epoch_idx = epoch_idx


class BatchInfo:
    """What a batch_info=True external source callable gets."""

    def __init__(self, iteration, epoch_idx):
        self.iteration = iteration
        self.epoch_idx = epoch_idx


# Layouts as DALI's legacy constants name them.
NCHW = "CHW"
NHWC = "HWC"
