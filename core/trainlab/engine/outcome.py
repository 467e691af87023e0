"""How a run ended: one type from the engine to the CLI, the child process and the window.

``RunOutcome`` is built from the run's ``Finished`` event (``from_finished``),
both where the run executed and, from the event's JSON line, in the parent of
a child process: the two are equal field for field.  ``exit_code`` is the one
place that maps an outcome onto the CLI's exit codes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Mapping

from trainlab.runfolder.status import RunStatus

if TYPE_CHECKING:  # pragma: no cover
    from trainlab.api.events import Finished

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class EvaluationStopped(Exception):
    """A stop came during an evaluation that may be cut short (the run's final one): the run ends cancelled."""


@dataclass(frozen=True)
class RunOutcome:
    """The end of one run, as plain values (serialisable to one JSON object).

    ``epochs`` and ``steps`` count what was completed in total (a resumed run
    included); ``best`` is ``{"metric", "value", "step"}`` once a validation
    pass ran, else empty; ``usage_error`` says that the failure was bad input
    (the CLI's exit 2), found before or after the run began; ``failure`` is
    ``{"plugin", "task", "method", "exception"}`` when a plugin's code failed
    (``trainlab.engine.plugin_calls``), else empty.
    """

    run_dir: str
    status: str  # a RunStatus: completed, failed, cancelled
    task: str
    metrics: Mapping[str, Any] = field(default_factory=dict)
    epochs: int = 0
    steps: int = 0
    samples_per_second: float = 0.0
    error: str = ""
    traceback: str = ""
    best: Mapping[str, Any] = field(default_factory=dict)
    usage_error: bool = False
    failure: Mapping[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """0 completed, 130 cancelled, 2 bad input, 1 any other failure."""
        if self.status == RunStatus.COMPLETED:
            return EXIT_OK
        if self.status == RunStatus.CANCELLED:
            return EXIT_INTERRUPTED
        return EXIT_USAGE if self.usage_error else EXIT_FAILED

    @property
    def ok(self) -> bool:
        return self.status == RunStatus.COMPLETED

    def to_json(self) -> dict[str, Any]:
        """The fields, plus ``exit_code`` (and for a plugin's failure ``plugin`` and
        ``method``, as in the CLI's error objects) for readers; ``from_json`` ignores them."""
        data = asdict(self)
        data["exit_code"] = self.exit_code
        if self.failure:
            data["plugin"], data["method"] = self.failure.get("plugin", ""), self.failure.get("method", "")
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "RunOutcome":
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in names}
        values.setdefault("run_dir", "")
        values.setdefault("status", RunStatus.FAILED)
        values.setdefault("task", "")
        values["metrics"] = dict(values.get("metrics") or {})
        values["best"] = dict(values.get("best") or {})
        values["failure"] = dict(values.get("failure") or {})
        return cls(**values)

    @classmethod
    def from_finished(cls, event: "Finished") -> "RunOutcome":
        return cls(
            run_dir=event.run_dir,
            status=event.status,
            task=event.task,
            metrics=dict(event.metrics),
            epochs=event.epochs,
            steps=event.step,
            samples_per_second=event.samples_per_second,
            error=event.error,
            traceback=event.traceback,
            best=dict(event.best),
            usage_error=event.usage_error,
            failure=dict(event.failure),
        )

    @classmethod
    def not_started(
        cls,
        *,
        task: str,
        error: str,
        status: str = RunStatus.FAILED,
        usage_error: bool = False,
        traceback: str = "",
        run_dir: str = "",
        failure: Mapping[str, Any] | None = None,
    ) -> "RunOutcome":
        """A run that ended before it began (bad input, stopped while preparing, a crashed child)."""
        return cls(
            run_dir=run_dir, status=status, task=task, error=error, traceback=traceback, usage_error=usage_error, failure=dict(failure or {})
        )
