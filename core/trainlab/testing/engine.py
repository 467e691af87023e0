"""The headless engine as a plugin's tests use it: on the CPU, in a temporary TrainLab home."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from trainlab.engine.predict import predict
from trainlab.engine.prepare import prepare_task
from trainlab.engine.scripting import RunRequest, evaluate_run, run_training


class HeadlessEngine:
    """Train, evaluate and predict through TrainLab's real engine, on the CPU, in ``home``.

    Parameters are given as keyword arguments (``epochs=1``); ``device`` is
    ``cpu`` and ``precision`` ``fp32`` unless a test says otherwise.  Run
    folders go under ``home/runs``, as a user's runs do.
    """

    def __init__(self, home: str | Path):
        self.home = Path(home)

    def train(self, task: str, data: str | Path, *, callbacks: Sequence[Any] = (), out: str | Path | None = None, **params: Any):
        """The ``RunOutcome`` of one run (``UsageError`` for bad input, as ``trainlab train`` exits 2)."""
        values = {"device": "cpu", "precision": "fp32", "telemetry_every": 0, **params}
        request = RunRequest(task=task, data=str(data), params={k: str(v) for k, v in values.items()}, out=str(out) if out else None)
        return run_training(request, callbacks=list(callbacks))

    def resume(self, run_dir: str | Path, *, callbacks: Sequence[Any] = ()):
        return run_training(RunRequest(resume=str(run_dir)), callbacks=list(callbacks))

    def evaluate(self, run_dir: str | Path, data: str | Path | None = None) -> dict[str, Any]:
        return evaluate_run(str(run_dir), str(data) if data else None, device="cpu")

    def predict(self, run_dir: str | Path, inputs: Sequence[str], top_k: int = 3) -> list[Any]:
        return predict(run_dir, list(inputs), top_k, device="cpu", on_warning=lambda message: None)

    def prepare(self, task: str, data: str | Path, **params: Any):
        """The task prepared on ``data`` as the window's data check does (``DataError`` for bad data)."""
        return prepare_task(task, str(data), {k: str(v) for k, v in {"device": "cpu", **params}.items()})
