"""DALI's Python API on actorflow: `from actorflow.dali import
pipeline_def, fn, types` where DALI code has `from nvidia.dali import
...`. Pipelines run on actorflow's C++ pipeline, on the CPU; what differs
from DALI, and what is not there, is in docs/python.md ("Coming from
DALI").

    from actorflow.dali import pipeline_def, fn, types

    @pipeline_def
    def simple_pipeline():
        jpegs, labels = fn.readers.file(file_root="images", name="Reader")
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        return fn.resize(images, resize_x=224, resize_y=224), labels

    pipe = simple_pipeline(batch_size=8, num_threads=2, device_id=0)
    images, labels = pipe.run()
"""

from actorflow.dali import fn, ops, types  # noqa: F401
from actorflow.dali.pipeline import DataNode, Pipeline, pipeline_def  # noqa: F401
from actorflow.dali.tensors import TensorCPU, TensorListCPU  # noqa: F401
from actorflow.dali import backend, math  # noqa: F401

__all__ = ["DataNode", "Pipeline", "TensorCPU", "TensorListCPU", "fn", "ops",
           "pipeline_def", "types"]
