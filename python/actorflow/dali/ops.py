"""DALI's object API (nvidia.dali.ops) over fn: `ops.X(**arguments)` makes
an operator object; calling it with inputs (and more arguments) adds the
fn operator of the same name, snake_cased, to the pipeline being defined:
ops.CropMirrorNormalize -> fn.crop_mirror_normalize, ops.readers.File ->
fn.readers.file, ops.random.CoinFlip -> fn.random.coin_flip. DALI's older
names (FileReader, ImageDecoder, ImageDecoderRandomCrop, CoinFlip, Uniform,
...) are there too. With a Pipeline subclass's define_graph() and
iter_setup(), as DALI's examples before fn wrote them:

    class TrainPipe(Pipeline):
        def __init__(self, batch_size, num_threads, device_id, data_dir):
            super().__init__(batch_size, num_threads, device_id, seed=12)
            self.input = ops.readers.File(file_root=data_dir,
                                          random_shuffle=True)
            self.decode = ops.decoders.ImageRandomCrop(output_type=types.RGB)
            self.res = ops.Resize(resize_x=224, resize_y=224)
            self.coin = ops.random.CoinFlip(probability=0.5)

        def define_graph(self):
            jpegs, labels = self.input(name="Reader")
            images = self.res(self.decode(jpegs))
            return images, labels
"""

import re
import types as _pytypes

from actorflow.dali import fn


def _snake(name):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


class _Operator:
    """An operator object: its arguments now, its inputs when called."""

    def __init__(self, call, op_name, **arguments):
        self._call = call
        self._op_name = op_name
        self._arguments = arguments

    def __call__(self, *inputs, **arguments):
        merged = dict(self._arguments)
        merged.update(arguments)
        return self._call(*inputs, **merged)

    def __repr__(self):
        return f"ops.{self._op_name}({self._arguments})"


def _operator_class(call, op_name):
    def make(**arguments):
        return _Operator(call, op_name, **arguments)
    make.__name__ = op_name.split(".")[-1]
    make.__doc__ = f"DALI's ops.{op_name}: calls {call.__name__} (fn)."
    return make


class _Namespace(_pytypes.ModuleType):
    """ops, ops.readers, ops.decoders, ...: a CamelCase name is the fn
    namespace's snake_case function."""

    def __init__(self, name, functions, prefix=""):
        super().__init__(name)
        self._functions = functions
        self._prefix = prefix

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        call = getattr(self._functions, _snake(name), None)
        if call is None or not callable(call):
            raise AttributeError(
                f"ops.{self._prefix}{name}: DALI's operator is not in "
                "actorflow.dali (docs/python.md, 'Coming from DALI')")
        return _operator_class(call, self._prefix + name)


readers = _Namespace("readers", fn.readers, "readers.")
decoders = _Namespace("decoders", fn.decoders, "decoders.")
random = _Namespace("random", fn.random, "random.")
noise = _Namespace("noise", fn.noise, "noise.")

# DALI's names from before its readers, decoders and random namespaces.
_OLDER = {
    "FileReader": fn.readers.file,
    "CaffeReader": fn.readers.caffe,
    "NumpyReader": fn.readers.numpy,
    "ImageDecoder": fn.decoders.image,
    "ImageDecoderRandomCrop": fn.decoders.image_random_crop,
    "ImageDecoderSlice": fn.decoders.image_slice,
    "COCOReader": fn.readers.coco,
    "MXNetReader": fn.readers.mxnet,
    "CoinFlip": fn.random.coin_flip,
    "Uniform": fn.random.uniform,
    "NormalDistribution": fn.random.normal,
}


def __getattr__(name):
    if name in _OLDER:
        return _operator_class(_OLDER[name], name)
    if name.startswith("_"):
        raise AttributeError(name)
    call = getattr(fn, _snake(name), None)
    if call is None or not callable(call) or isinstance(call, type):
        raise AttributeError(
            f"ops.{name}: DALI's operator is not in actorflow.dali "
            "(docs/python.md, 'Coming from DALI')")
    return _operator_class(call, name)
