"""What the engine adds to DistributedDataParallel (used by the DDP strategy, ``trainlab.engine.strategy.ddp``).

* ``FlagsInBucket``: a communication hook that carries each step's
  out-of-memory flags in the gradients' own all-reduce on CPU groups;
* ``batch_norms_if_only_buffers``: which models may do without DDP's
  broadcast of their buffers before every forward.
"""

from __future__ import annotations

from typing import Any


class FlagsInBucket:
    """A DDP communication hook that carries the step's out-of-memory flags in the gradients' all-reduce.

    The first bucket (index 0: every synchronising backward reduces it) goes
    out as one tensor with the flags appended; the reply is split again, the
    gradients averaged as DDP's own all-reduce hook does, the flags summed
    (rank ``r`` alone sets element ``r``, so each is 0 or 1 in any float
    type).  The other buckets go through DDP's default hook.  A backward
    that nobody gave flags to sends zeros, so every rank's bucket has the
    same length.  It costs one copy of the first bucket each way instead of a
    collective of its own per step, which costs a step a share worth saving
    on shared CPU cores (docs/distributed.md has the figures).
    """

    def __init__(self, world_size: int):
        self.world_size = world_size
        self.outgoing: Any = None  # this step's flags, until the first bucket takes them
        self.arrived: Any = None  # every rank's, once the first bucket's all-reduce ended

    # Unannotated: DDP refuses a hook whose annotations are not its own types,
    # and this module's are strings (``from __future__ import annotations``).
    def hook(self, state, bucket):  # noqa: ANN001, ANN201
        import torch
        import torch.distributed as dist
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        if bucket.index() != 0:
            return default_hooks.allreduce_hook(None, bucket)
        gradients = bucket.buffer()
        flags, self.outgoing = self.outgoing, None
        if flags is None:
            flags = torch.zeros(self.world_size)
        count = gradients.numel()
        combined = torch.cat([gradients.div_(self.world_size), flags.to(gradients.dtype)])

        def split(future: Any) -> Any:
            reduced = future.value()[0]
            self.arrived = reduced[count:]
            gradients.copy_(reduced[:count])
            return gradients

        return dist.all_reduce(combined, async_op=True).get_future().then(split)


def batch_norms_if_only_buffers(model: Any) -> list[Any]:
    """The model's batch norms if their running statistics are all of its buffers, else []."""
    from torch.nn.modules.batchnorm import _BatchNorm

    norms = [m for m in model.modules() if isinstance(m, _BatchNorm) and m.track_running_stats]
    owned = {id(b) for norm in norms for b in norm.buffers(recurse=False)}
    buffers = list(model.buffers())
    return norms if buffers and all(id(b) in owned for b in buffers) else []
