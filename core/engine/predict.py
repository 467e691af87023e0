"""Predictions of a trained run (``trainlab predict``, the window's try-it).

The task's predictor is loaded once and kept: the window asks for one input
at a time and must not reload the model for each.
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

from trainlab.api import UsageError
from trainlab.runs import RunDir

_predictors: dict[tuple[str, str], Any] = {}
_predictors_lock = threading.Lock()


def predict(run_dir: str, inputs: Sequence[str], top_k: int = 5, *, device: str = "auto") -> list[dict[str, Any]]:
    """Top-k predictions of a trained run for each input (paths or texts).

    Each result is ``{"input", "kind"}`` and the typed prediction's JSON
    (``trainlab.predictions``): classification keeps ``"predictions":
    [{"label", "probability"}]``; multi-label ``"labels", "scores"``;
    regression ``"value"``.  An input the task could not use has empty
    predictions and an ``"error"``.
    """
    from trainlab.engine.context import trained_task
    from trainlab.predictions import as_prediction

    rd = RunDir(run_dir)
    if not rd.model_dir.is_dir():
        raise UsageError(f"{rd.path}: has no model/ folder (the run did not complete)")
    key = (str(rd.path), device)
    with _predictors_lock:  # one predictor in memory (the window's try-it), loaded once
        cached = _predictors.get(key)
        if cached is None:
            _, task, ctx = trained_task(rd, device)
            cached = (task, task.load_predictor(rd.model_dir, ctx.device), threading.Lock())
            _predictors.clear()
            _predictors[key] = cached
    task, predictor, lock = cached
    items = task.expand_inputs(list(inputs))
    if not items:
        raise UsageError("nothing to predict: no inputs")
    with lock:
        results = predictor(items, int(top_k))
    out: list[dict[str, Any]] = []
    for item, preds in zip(items, results):
        if isinstance(preds, Exception):  # this input only (an unreadable file); see Task.load_predictor
            out.append({"input": item, "predictions": [], "error": str(preds)})
        else:
            prediction = as_prediction(preds)
            out.append({"input": item, "kind": prediction.kind, **prediction.to_json()})
    return out
