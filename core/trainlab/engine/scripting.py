"""The engine for scripts: everything a headless script needs, in one module.

    from trainlab.engine.scripting import RunRequest, run_training, evaluate_run, predict

``run_training`` is ``execute(plan_run(request))`` (through ``run_here``,
as every caller in TrainLab runs a request); ``plan_run`` and ``execute``
are here too for scripts that look at the plan first, ``prepare_task`` for
one that checks the data once and trains several times,
``Callback``/``RunControl``/``RunState`` to follow and steer a run, the
events it emits, and ``RunOutcome`` for what it returns (``RunResult``, its
older name, still imports, with a ``DeprecationWarning``).
docs/engine.md describes each. These names stay here across releases; the
modules that define them may move (``trainlab.engine.runner``, the older
home of this module, still imports for one release with a warning).
Nothing here imports torch until a function needs it: the window imports
``RunRequest`` on its GUI thread.
"""

from __future__ import annotations

import warnings
from typing import Iterable

from trainlab.api.callbacks import Callback, RunControl, RunState
from trainlab.api.errors import UsageError
from trainlab.api.events import EvalResult, Event, Finished, Log, Progress, Started, SystemSample, TrainStep
from trainlab.engine.evaluation import evaluate_run
from trainlab.engine.execute import execute
from trainlab.engine.outcome import RunOutcome
from trainlab.engine.plan import RunPlan, RunRequest, plan_run
from trainlab.engine.predict import predict
from trainlab.engine.prepare import PreparedTask, prepare_task
from trainlab.engine.recorder import data_fingerprint
from trainlab.engine.run_here import run_here
from trainlab.runfolder.index import RunStore

__all__ = [
    "Callback",
    "EvalResult",
    "Event",
    "Finished",
    "Log",
    "Progress",
    "RunControl",
    "RunState",
    "Started",
    "SystemSample",
    "TrainStep",
    "PreparedTask",
    "RunOutcome",
    "RunPlan",
    "RunRequest",
    "data_fingerprint",
    "evaluate_run",
    "execute",
    "plan_run",
    "predict",
    "prepare_task",
    "run_training",
]


def run_training(
    request: RunRequest,
    *,
    callbacks: Iterable[Callback] = (),
    control: RunControl | None = None,
    mp_context: str | None = None,
    store: RunStore | None = None,
) -> RunOutcome:
    """Train (or resume, or continue) a run: ``execute(plan_run(request))``.

    ``callbacks`` also see what is said while planning, as it is said.
    UsageError for bad input, found before the run starts or (the run folder
    then records the failure) after.
    """
    outcome = run_here(request, control=control, callbacks=callbacks, mp_context=mp_context, store=store)
    if outcome.usage_error:
        raise UsageError(outcome.error)
    return outcome


def __getattr__(name: str):
    if name == "RunResult":  # the name before plan_run/execute
        warnings.warn("trainlab.engine.scripting.RunResult is RunOutcome; import RunOutcome", DeprecationWarning, stacklevel=2)
        return RunOutcome
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
