"""The activation probe of ``trainlab.engine.memory``, run as ``python -m trainlab.engine.memory_probe`` in a child process.

Reads ``{"request": RunRequest fields, "sizes": [b1, b2]}`` on stdin, plans
the run (nothing written), builds its model on its device, takes one
training step at each size and prints one JSON line: the fit, the device's
capacity and what is not the run's (the CUDA context, or the process's
resident memory before the model).  A child, so that what the probe
allocates is given back to the device when it exits.  Exit 2 with the
one-line reason for bad input.
"""

from __future__ import annotations

import json
import sys

from trainlab.api.errors import UsageError
from trainlab.engine import memory
from trainlab.engine.plan import RunRequest, plan_run


def main() -> int:
    spec = json.loads(sys.stdin.read())
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # library prints must not corrupt the result line
    try:
        result = _probe(spec)
    except UsageError as exc:
        print(f"trainlab: {exc}", file=sys.stderr)
        return 2
    real_stdout.write(json.dumps(result) + "\n")
    real_stdout.flush()
    return 0


def _probe(spec: dict) -> dict:
    import psutil
    import torch

    plan = plan_run(RunRequest(**spec["request"]))
    ctx = plan.ctx
    cuda = ctx.is_cuda
    if cuda:
        torch.cuda.init()
        torch.zeros(1, device=ctx.device)
        free, total = torch.cuda.mem_get_info(ctx.device)
        # in use on the device but not by the allocator: the CUDA context (and any other process)
        other = int(total - free - torch.cuda.memory_reserved(ctx.device))
    else:
        other = int(psutil.Process().memory_info().rss)
    capacity = memory.device_memory_bytes(ctx.device)
    model = plan.task.prepare_model(plan.task.build_model(ctx), ctx)
    fit = memory.fit_activations(plan.task, model, ctx, tuple(int(b) for b in spec["sizes"]))
    return {
        "intercept": fit.intercept,
        "per_example": fit.per_example,
        "measured": {str(k): v for k, v in fit.measured.items()},
        "method": fit.method,
        "capacity": capacity,
        "other": other,
        "device": str(ctx.device),
    }


if __name__ == "__main__":
    sys.exit(main())
