"""DALI's nvidia.dali.plugin.base_iterator: LastBatchPolicy, which the
framework iterators (actorflow.dali.plugin.pytorch) take; importable
without torch."""

import enum


class LastBatchPolicy(enum.Enum):
    """What the last batch of an epoch holds. FILL: a full batch (samples
    from the next epoch, or the shard's padding); DROP: it is dropped;
    PARTIAL: only the epoch's own samples."""
    FILL = 0
    DROP = 1
    PARTIAL = 2
