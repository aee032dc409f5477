"""actorflow from Python: plans, sessions, Python kernels and DALI-style
pipelines on the C++ actor runtime.

    import actorflow
    plan = actorflow.load_plan("examples/plans/quickstart.pbtxt")
    print(actorflow.run(plan)["sinks"])

Importing starts no thread. Every call that waits releases the GIL and
answers Ctrl-C with KeyboardInterrupt. Errors are Python exceptions whose
message is the runtime's: ValueError for bad input, RuntimeError for a
failed run, TimeoutError for a run past its limit, EOFError for a fetch
after the run's last piece.
"""

from actorflow._actorflow import (  # noqa: F401
    FetchedArray,
    Plan,
    Session,
    compile,
    dot,
    dtypes,
    load_kernels,
    load_plan,
    run,
    validate,
)
from actorflow import fn, pipeline, plugin  # noqa: F401
from actorflow.job import Job  # noqa: F401

__all__ = [
    "FetchedArray",
    "Job",
    "Plan",
    "Session",
    "compile",
    "dot",
    "dtypes",
    "fn",
    "load_kernels",
    "load_plan",
    "pipeline",
    "plugin",
    "run",
    "validate",
]
