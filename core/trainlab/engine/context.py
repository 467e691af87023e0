"""What every engine entry point sets up the same way: the task, its context, the seed.

Training, evaluation and prediction each instantiate a task from the plugin
registry, resolve the device and precision into a ``RunContext``, and (when
training) seed every generator; the random-generator snapshot lets a run
start from exactly the state its preparation left, however much later it
executes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from trainlab.api.params import ENGINE_PARAMS, RunParams, resolve
from trainlab.api.taskbase import RunContext
from trainlab.engine import distributed
from trainlab.engine.plugin_calls import PluginCalls
from trainlab.pluginhost.host import import_factory, registry
from trainlab.engine.device import enable_tf32, resolve_device, resolve_precision


def task_for(task_id: str, params: dict[str, Any]):
    """(registry entry, task instance); UsageError for an unknown task, PluginCallError
    (naming the plugin) for a factory that does not import or raises."""
    entry = registry().task(task_id)
    with PluginCalls.of(entry).call("factory"):
        task = import_factory(entry.spec.factory)(entry.spec, params)
    return entry, task


def make_context(params: RunParams, run_dir: Path | None, log: Callable[[str], None], mp_context: str | None) -> RunContext:
    """The task's view of the run; UsageError for a device this machine lacks."""

    engine = params.engine
    device = resolve_device(engine.device)
    precision = resolve_precision(device, engine.precision)
    enable_tf32(device)
    from trainlab.engine.shared_memory import SharedArrays

    group = distributed.current()
    return RunContext(
        device=device,
        precision=precision,
        seed=engine.seed,
        run_dir=run_dir,
        params=params,
        log=log,
        multiprocessing_context=mp_context,
        processes_on_this_machine=group.local_world_size if group is not None else 1,
        _shared=SharedArrays(group) if group is not None else None,
    )


def seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


@dataclass(frozen=True)
class RandomState:
    """The global generators' states (Python, NumPy, torch CPU and CUDA), in memory."""

    python: Any
    numpy: Any
    torch: Any
    cuda: Any = None

    @classmethod
    def capture(cls) -> "RandomState":
        import numpy as np
        import torch

        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
        return cls(random.getstate(), np.random.get_state(), torch.get_rng_state(), cuda)

    def restore(self) -> None:
        import numpy as np
        import torch

        random.setstate(self.python)
        np.random.set_state(self.numpy)
        torch.set_rng_state(self.torch)
        if self.cuda is not None:
            torch.cuda.set_rng_state_all(self.cuda)


def class_weights(task, ctx: RunContext):
    """Inverse-frequency loss weights from the task's label counts (None without counts)."""
    import torch

    counts = list(task.label_counts())
    if not counts:
        ctx.log("class weighting is on but the task reports no label counts; ignored")
        return None
    total = sum(counts)
    weights = [total / (len(counts) * c) if c else 0.0 for c in counts]
    return torch.tensor(weights, dtype=torch.float32, device=ctx.device)


def trained_task(run_dir, device: str = "auto"):
    """(record, task, ctx) of a finished run, its parameters as trained, on ``device``."""
    import sys

    record = run_dir.read()
    entry = registry().task(record["task"])
    params = resolve(entry.spec, ENGINE_PARAMS, {}, {"device": device}, recorded=record["parameters"])
    _, task = task_for(record["task"], params)
    # what the task fitted when it trained (target scaling, thresholds), from
    # the run folder or its exported model
    from trainlab.engine.fitted import load_fitted_state

    label_names = record.get("label_names")
    if label_names:
        task.label_names = list(label_names)
    with PluginCalls.of(entry, task).call("load_fitted_state"):
        load_fitted_state(task, run_dir.path, run_dir.model_dir)
    ctx = make_context(params, run_dir.path, lambda message: print(message, file=sys.stderr), None)
    return record, task, ctx
