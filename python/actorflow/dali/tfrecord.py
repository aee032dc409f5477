"""DALI's nvidia.dali.tfrecord: the features fn.readers.tfrecord reads
from each record's tf.train.Example.

    import actorflow.dali.tfrecord as tfrec
    inputs = fn.readers.tfrecord(path=files, index_path=indexes, features={
        "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
        "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1)})
"""

int64 = "int64"
float32 = "float32"
string = "bytes"


class FixedLenFeature:
    """A feature of a fixed shape (() a single value): int64, float32, or
    string (one value, its bytes). A record without it gets
    default_value (numbers; a string's must be "")."""

    def __init__(self, shape, dtype, default_value):
        if isinstance(shape, int):
            shape = [shape]
        self.shape = [int(d) for d in shape]
        self.dtype = dtype
        self.default_value = default_value


class VarLenFeature:
    """Every value of an int64 or float32 feature, as a vector (a record
    without it gives an empty one)."""

    def __init__(self, dtype, default_value):
        self.dtype = dtype
        self.default_value = default_value
