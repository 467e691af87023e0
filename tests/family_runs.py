"""Real toy runs of each task family, trained once per test module (a few seconds each)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURE_PLUGINS, write_toy_csv, write_toy_multilabel_csv, write_toy_regression_csv


def train_toy(root: Path, task: str, **params: str) -> str:
    """Train the toy fixture task ``task`` under ``root`` and return its run folder."""
    import trainlab.pluginhost.host as host

    root.mkdir(parents=True, exist_ok=True)
    if task == "toy-regression":
        data = write_toy_regression_csv(root / "reg.csv")
    elif task == "toy-classification":
        data = write_toy_csv(root / "toy.csv")
    else:
        data = write_toy_multilabel_csv(root / "ml.csv", rows=400)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRAINLAB_HOME", str(root / "home"))
        mp.syspath_prepend(str(FIXTURE_PLUGINS))
        mp.setattr(host, "_registry", None)
        from trainlab.engine.scripting import RunRequest, run_training

        result = run_training(RunRequest(task=task, data=str(data), params=dict(params), out=str(root / "run")))
    assert result.status == "completed", result.error
    return result.run_dir
