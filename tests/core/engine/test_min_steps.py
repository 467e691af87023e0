"""min_steps: a run on small data takes the epochs its steps need; on large data its epochs."""

from __future__ import annotations

from trainlab.engine.plan import plan_run
from trainlab.engine.scripting import RunRequest


def test_min_steps_adds_epochs_only_where_the_data_is_small(toy_plugin, toy_csv, tmp_path):
    said = []
    request = RunRequest(task="toy-classification", data=str(toy_csv), out=str(tmp_path / "a"),
                         params={"epochs": "2", "batch_size": "32", "min_steps": "50", "device": "cpu"})  # fmt: skip
    plan = plan_run(request, log=said.append)
    per_epoch = plan.steps_per_epoch
    assert per_epoch * 2 < 50  # 192 training rows of the toy data: 6 steps an epoch
    assert plan.epochs == -(-50 // per_epoch) and plan.total_steps >= 50
    assert any(f"{plan.epochs} epochs instead of 2: min_steps=50" in event.message for event in said)
    enough = plan_run(RunRequest(task="toy-classification", data=str(toy_csv), out=str(tmp_path / "b"),
                                 params={"epochs": "2", "batch_size": "32", "min_steps": str(per_epoch), "device": "cpu"}))  # fmt: skip
    assert enough.epochs == 2 and enough.total_steps == 2 * per_epoch
