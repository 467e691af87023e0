"""The engine for scripts: everything a headless script needs, in one module.

    from trainlab.engine.scripting import RunRequest, run_training, evaluate_run, predict

``run_training`` is ``execute(plan_run(request))``; ``plan_run`` and
``execute`` are here too for scripts that look at the plan first,
``prepare_task`` for one that checks the data once and trains several
times, ``Callback``/``RunControl``/``RunState`` to follow and steer a run, the
events it emits, and ``RunResult`` (= ``RunOutcome``) for what it returns.
docs/engine.md describes each. These names stay here across releases; the
modules that define them may move (``trainlab.engine.runner``, the older
home of this module, still imports for one release with a warning).
Nothing here imports torch until a function needs it: the window imports
``RunRequest`` on its GUI thread.
"""

from __future__ import annotations

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
from trainlab.runfolder.index import RunStore

RunResult = RunOutcome  # the name before plan_run/execute

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
    "RunResult",
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
    callbacks = list(callbacks)

    def log(event: Event) -> None:
        for callback in callbacks:
            callback.on_event(event)

    control = control or RunControl()
    plan = plan_run(request, log=log, mp_context=mp_context, should_stop=lambda: control.stop_requested)
    outcome = execute(plan, callbacks=callbacks, control=control, store=store)
    if outcome.usage_error:
        raise UsageError(outcome.error)
    return outcome
