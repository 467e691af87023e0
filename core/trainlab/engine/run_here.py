"""Control, plan, execute: the one way a request becomes a run in this process.

Every caller that trains in its own process comes here: the CLI's ``train``,
a child process (``child_main``), a rank of a group (``distributed_run``),
scripts (``run_training``), the queue's and the sweep's runs, and the
window's training thread.  The request is planned (``plan_run``) with the
run's ``RunControl`` asked whether to stop while the data is prepared, then
executed under the same control; the callbacks hear what is said while
planning too, as it is said.

A stop asked for while planning raises ``StopRequested`` (a
``KeyboardInterrupt``: exit 130 where nothing catches it); bad input raises
``UsageError`` before the run folder exists, and is an outcome (``failed``,
``usage_error``) once it does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from trainlab.api.callbacks import Callback, RunControl
from trainlab.engine.device import set_training_threads
from trainlab.engine.execute import execute
from trainlab.engine.outcome import RunOutcome
from trainlab.engine.plan import RunPlan, RunRequest, plan_run
from trainlab.engine.prepare import PreparedTask
from trainlab.runfolder.index import RunStore


def run_here(
    request: RunRequest,
    *,
    control: RunControl | None = None,
    callbacks: Iterable[Callback] = (),
    prepared: PreparedTask | None = None,
    record_extra: Mapping[str, Any] | None = None,
    before_execute: Callable[[RunPlan], None] | None = None,
    mp_context: str | None = None,
    store: RunStore | None = None,
) -> RunOutcome:
    """Plan ``request`` and execute the plan in this process; the run's outcome.

    ``prepared``: the data check's ``PreparedTask``, taken over when it still
    fits.  ``record_extra`` joins run.json (the queue's ``study``).
    ``before_execute`` sees the plan before it runs (a rank agrees with the
    others there).
    """
    control = control or RunControl()
    callbacks = list(callbacks)
    set_training_threads()  # before preparing: the same count for every run, whoever starts it

    def log(event: Any) -> None:
        for callback in callbacks:
            callback.on_event(event)

    plan = plan_run(request, prepared=prepared, log=log if callbacks else None, mp_context=mp_context,
                    should_stop=lambda: control.stop_requested)  # fmt: skip
    if record_extra:
        plan.record.update(dict(record_extra))
    if before_execute is not None:
        before_execute(plan)
    return execute(plan, callbacks=callbacks, control=control, store=store)
