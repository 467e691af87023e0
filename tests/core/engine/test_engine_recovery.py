"""Out-of-memory recovery in evaluation, the schedule on steps the fp16 gradient scaler
skips, and bfloat16 asked of the run's own GPU.

One process on the CPU; the out-of-memory errors are torch's own, raised by
the DDP probe task (tests/fixtures/ddp_probe) on batches above a size.
tests/core/engine/test_distributed_recovery.py checks training's recovery across ranks.
"""

from __future__ import annotations

import contextlib

import pytest
import torch

from helpers import FIXTURE_PLUGINS, PROBE_PLUGIN
from trainlab.api.errors import UsageError
from trainlab.api.callbacks import Callback
from trainlab.engine.device import resolve_precision
from trainlab.engine.loop import scaled_step
from trainlab.engine.scripting import RunRequest, run_training
from trainlab.api.events import EvalResult, Log


class Events(Callback):
    def __init__(self):
        self.events = []

    def on_event(self, event):
        self.events.append(event)


def _run(data, out, **params):
    seen = Events()
    values = {"device": "cpu", "precision": "fp32", "telemetry_every": 0, "epochs": 1, "batch_size": 8, **params}
    request = RunRequest(task="ddp-probe", data=str(data), params={k: str(v) for k, v in values.items()}, out=str(out))
    return run_training(request, callbacks=[seen]), seen.events


def test_evaluation_out_of_memory_scores_each_batch_in_pieces_with_the_same_metrics(monkeypatch, tmp_path, toy_csv):
    for path in (FIXTURE_PLUGINS, PROBE_PLUGIN):
        monkeypatch.syspath_prepend(str(path))
    normal, _ = _run(toy_csv, tmp_path / "normal")
    pieces, events = _run(toy_csv, tmp_path / "pieces", eval_oom_above=3)  # 8 -> 4 -> 2 examples a piece
    assert normal.status == "completed" and pieces.status == "completed", pieces.error
    said = [e.message for e in events if isinstance(e, Log) and "out of memory while evaluating" in e.message]
    assert len(said) == 2 and "2 pieces" in said[0] and "4 pieces" in said[1]  # once each, kept for the next passes
    assert pieces.metrics["accuracy"] == normal.metrics["accuracy"]
    assert abs(pieces.metrics["loss"] - normal.metrics["loss"]) < 1e-6
    (evaluation,) = [e for e in events if isinstance(e, EvalResult)]
    assert evaluation.metrics["accuracy"] == normal.metrics["accuracy"]


def test_evaluation_out_of_memory_on_single_examples_fails_the_run_with_advice(monkeypatch, tmp_path, toy_csv):
    for path in (FIXTURE_PLUGINS, PROBE_PLUGIN):
        monkeypatch.syspath_prepend(str(path))
    failed, _ = _run(toy_csv, tmp_path / "run", eval_oom_above=1, batch_size=16)  # 16 in 8 pieces of 2: still too many
    assert failed.status == "failed" and "out of memory while evaluating" in failed.error and "--batch-size" in failed.error


def test_a_step_the_gradient_scaler_skips_does_not_advance_the_schedule():
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**4)
    before = [p.detach().clone() for p in model.parameters()]
    scaler.scale(model(torch.tensor([[float("inf"), 1.0]])).sum()).backward()  # inf gradients, as an fp16 overflow
    scaler.unscale_(optimizer)
    assert scaled_step(optimizer, scaler) is False
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))  # the step was not taken
    optimizer.zero_grad()
    scaler.scale(model(torch.tensor([[1.0, 1.0]])).sum()).backward()
    scaler.unscale_(optimizer)
    assert scaled_step(optimizer, scaler) is True
    assert not all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_bf16_is_asked_of_the_runs_gpu_not_the_current_one(monkeypatch):
    """Two GPUs, the current one (0) without bfloat16 and the run's (1) with it: torch's
    CUDA queries stand in for the hardware, which this machine lacks."""
    current = {"index": 0}

    @contextlib.contextmanager
    def device(which):
        saved, current["index"] = current["index"], torch.device(which).index
        try:
            yield
        finally:
            current["index"] = saved

    monkeypatch.setattr(torch.cuda, "device", device)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: current["index"] == 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *args: f"GPU {current['index']}")
    assert resolve_precision(torch.device("cuda:1"), "bf16") == "bf16"
    with pytest.raises(UsageError, match="does not support bfloat16"):
        resolve_precision(torch.device("cuda:0"), "bf16")
    assert current["index"] == 0  # the current device is left as it was
