"""LossWindow: the training loss between two reads, summed on the device, first non-finite step kept."""

from __future__ import annotations

import math

import pytest
import torch

from trainlab.engine import loss_window
from trainlab.engine.loss_window import LossWindow


def _steps(window: LossWindow, values, factors):
    for v, f in zip(values, factors):
        window.add(torch.tensor(v, dtype=torch.float32), f)


@pytest.mark.parametrize("fold_every", [1, 3, 256])
def test_the_sum_of_value_times_factor_across_folds_and_factor_changes(monkeypatch, fold_every):
    monkeypatch.setattr(loss_window, "FOLD_EVERY", fold_every)
    values = [0.5, 0.25, 2.0, 1.5, 0.125, 3.0, 0.75]
    factors = [128, 128, 128, 128, 64, 1.0, 1.0]  # a short last batch, then a group already multiplied
    window = LossWindow(torch.device("cpu"))
    _steps(window, values, factors)
    total, finite = window.read()
    assert total == pytest.approx(sum(v * f for v, f in zip(values, factors)), rel=1e-6)
    assert finite == len(values) and window.steps == len(values)
    window.reset()
    assert window.read() == (0.0, 0) and window.steps == 0


@pytest.mark.parametrize("fold_every", [1, 2, 4, 256])
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_the_steps_before_the_first_non_finite_one(monkeypatch, fold_every, bad):
    monkeypatch.setattr(loss_window, "FOLD_EVERY", fold_every)
    values = [1.0, 2.0, 3.0, 4.0, 5.0, bad, 1.0, bad, 2.0]
    window = LossWindow(torch.device("cpu"))
    _steps(window, values, [8] * len(values))
    total, finite = window.read()
    assert not math.isfinite(total)
    assert finite == 5  # the sixth step was the first bad one, whatever the folds


def test_a_loss_in_bf16_is_summed_in_float32():
    window = LossWindow(torch.device("cpu"))
    for _ in range(300):  # more than one fold
        window.add(torch.tensor(1.0 / 3.0, dtype=torch.bfloat16), 2.0)
    total, finite = window.read()
    assert finite == 300
    assert total == pytest.approx(300 * 2.0 * float(torch.tensor(1.0 / 3.0, dtype=torch.bfloat16)), rel=1e-6)
