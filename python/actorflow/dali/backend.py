"""DALI's nvidia.dali.backend, as far as users' code reaches into it: the
tensor types a pipeline's run() returns (actorflow.dali.tensors)."""

from actorflow.dali.tensors import TensorCPU, TensorListCPU  # noqa: F401

__all__ = ["TensorCPU", "TensorListCPU"]
