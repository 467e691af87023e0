"""The memory estimate by Start, in the real window.

The toy task of the fixtures (an MLP on a CSV) for the figure, its staleness,
a failing estimate and the "does not fit" advice; a tiny BERT folder built
from a config (as tests/plugins/text/test_lora.py does) for what a LoRA run writes.  The
machine has no GPU: "does not fit" fakes the RAM at the hardware boundary,
``trainlab.engine.memory.device_memory_bytes``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from trainlab_desktop.run.estimate_view import format_size

ESTIMATE_TIMEOUT_MS = 180_000
RUN_TIMEOUT_MS = 180_000


def prepare(qtbot, win, data: Path, task: str = "toy-classification", **params) -> None:
    win.show_page("train")
    assert win.select_task(task)
    if params:
        assert win.params_form.set_values({k: str(v) for k, v in params.items()}) == []
    win.data_panel.set_path(str(data))
    qtbot.waitUntil(lambda: not win.data_panel.checking, timeout=120_000)
    assert win.start_blockers() == []


def estimate(qtbot, win):
    """Press the Estimate link; the result it brought."""
    view = win.controls.estimate
    assert view.button.isEnabled()
    with qtbot.waitSignal(win.train_page.estimates.resultReady, timeout=ESTIMATE_TIMEOUT_MS) as got:
        qtbot.mouseClick(view.button, Qt.MouseButton.LeftButton)
    return got.args[0]


def engine_estimate(win, task: str, data: Path):
    """``trainlab.engine.memory``'s own estimate of the plan the form describes (what train --dry-run prints)."""
    from trainlab.engine.plan import RunRequest, plan_run
    from trainlab.engine.memory import estimate_memory

    values = win.params_form.param_values
    plan = plan_run(RunRequest(task=task, data=str(data), params=values.explicit(), remembered=values.remembered()))
    return plan.memory or estimate_memory(plan)


def test_the_estimate_shows_by_start_and_is_the_engines_own(qtbot, window, toy_csv):
    prepare(qtbot, window, toy_csv, epochs=1, batch_size=8, device="cpu")
    view = window.controls.estimate
    assert "not estimated" in view.line.text()

    result = estimate(qtbot, window)
    assert result.error == "" and result.measured
    engine = engine_estimate(window, "toy-classification", toy_csv)
    assert engine.probe["cached"]  # the window's probe, found by the same key
    shown = window.train_page.estimates.result().memory
    for part in ("weights", "gradients", "optimizer", "activations", "other", "micro_batch", "trainable"):
        assert getattr(shown, part) == getattr(engine, part), part
    assert engine.weights > 0 and engine.activations > 0
    text = view.line.text()
    assert f"needs about {format_size(engine.total)} of your" in text and "free RAM" in text
    tip = view.line.toolTip()
    for word in ("weights:", "gradients:", "optimizer states:", "activations (micro-batch of 8):", "the process before the model:"):
        assert word in tip, (word, tip)
    assert not view.advice.isVisible()  # a tiny MLP fits


def test_a_changed_batch_size_marks_the_figure_stale_and_a_new_one_grows(qtbot, window, toy_csv):
    prepare(qtbot, window, toy_csv, epochs=1, batch_size=8, device="cpu")
    first = estimate(qtbot, window)
    estimates = window.train_page.estimates

    editor = window.params_form.field_editor("batch_size")
    editor.setText("64")  # as typed: the form's own edit signal
    assert estimates.stale
    assert "for other settings" in window.controls.estimate.line.text()
    editor.setText("16")
    editor.setText("8")  # back to the estimated settings: the cached figure, at once
    assert not estimates.stale and estimates.result() is not None
    editor.setText("64")

    second = estimate(qtbot, window)
    assert not estimates.stale
    assert second.memory.micro_batch == 64 and first.memory.micro_batch == 8
    assert second.memory.activations > first.memory.activations
    assert second.memory.total > first.memory.total
    # the learning rate changes no memory: the figure stays fresh
    window.params_form.field_editor("lr").setText("0.02")
    assert not estimates.stale


def test_a_failing_estimate_says_why_and_start_still_runs(qtbot, window, toy_csv, monkeypatch):
    import trainlab.viewmodel.estimate as estimate_module

    monkeypatch.setattr(estimate_module, "ESTIMATE_TIMEOUT_S", 0.01)  # the probe "times out"
    prepare(qtbot, window, toy_csv, epochs=1, batch_size=8, device="cpu")
    result = estimate(qtbot, window)
    assert result.memory is None and "took longer than" in result.error
    line = window.controls.estimate.line.text()
    assert line.startswith("No estimate: the estimate took longer than")
    assert window.controls.start_action.isEnabled()

    with qtbot.waitSignal(window.runFinished, timeout=RUN_TIMEOUT_MS) as finished:
        window.controls.start_action.trigger()
    assert finished.args[0].status == "completed"
    assert window.error_box is None  # never an error box


def test_start_without_an_estimate_does_not_wait_and_counts_the_weights_once_the_run_ended(qtbot, window, toy_csv):
    prepare(qtbot, window, toy_csv, epochs=1, batch_size=8, device="cpu", step_delay=0.05)  # ~24 steps: 1 s or more
    estimates = window.train_page.estimates
    assert estimates.result() is None
    window.controls.start_action.trigger()
    assert window.running  # started at once: no estimate in front of it
    qtbot.waitUntil(lambda: window.session.progress.step > 0, timeout=RUN_TIMEOUT_MS)
    assert not estimates.running()  # nothing beside the run
    qtbot.waitUntil(lambda: not window.running, timeout=RUN_TIMEOUT_MS)
    qtbot.waitUntil(lambda: estimates.result() is not None, timeout=ESTIMATE_TIMEOUT_MS)
    result = estimates.result()
    assert result.error == "" and not result.measured
    from trainlab.engine.plan import RunRequest, plan_run
    from trainlab.engine.memory import meta_model, static_bytes

    values = window.params_form.param_values
    plan = plan_run(RunRequest(task="toy-classification", data=str(toy_csv), params=values.explicit(), remembered=values.remembered()))
    static = static_bytes(meta_model(plan.task, plan.ctx))
    assert (result.memory.weights, result.memory.gradients, result.memory.optimizer) == (static.weights, static.gradients, static.optimizer)
    assert "activations not measured" in window.controls.estimate.line.text()


def run_to_the_end(qtbot, win) -> None:
    with qtbot.waitSignal(win.runFinished, timeout=RUN_TIMEOUT_MS) as finished:
        win.controls.start_action.trigger()
    assert finished.args[0].status == "completed"


def test_once_the_run_has_ended_the_line_is_settled_while_the_weights_are_counted(qtbot, window, toy_csv):
    """Nobody asked for the count after a run: the line keeps what it said before the run, never
    "estimating", and the Estimate link stays live; the figure shows once the count is in."""
    prepare(qtbot, window, toy_csv, epochs=1, batch_size=8, device="cpu")
    estimates, view = window.train_page.estimates, window.controls.estimate
    before = view.line.text()
    assert before.startswith("Memory: not estimated")
    run_to_the_end(qtbot, window)
    assert estimates.running()  # the count, in a child process that takes seconds to import torch
    assert view.line.text() == before
    assert view.button.isEnabled()
    qtbot.waitUntil(lambda: not estimates.running(), timeout=ESTIMATE_TIMEOUT_MS)
    assert estimates.result() is not None and not estimates.result().measured
    assert "activations not measured" in view.line.text()


def test_estimate_pressed_while_the_weights_are_counted_after_a_run_measures_at_once(qtbot, window, toy_csv):
    prepare(qtbot, window, toy_csv, epochs=1, batch_size=8, device="cpu")
    estimates, view = window.train_page.estimates, window.controls.estimate
    run_to_the_end(qtbot, window)
    assert estimates.running()
    qtbot.mouseClick(view.button, Qt.MouseButton.LeftButton)  # the count gives way to the probe
    assert view.line.text() == "Memory: estimating\u2026" and not view.button.isEnabled()
    qtbot.waitUntil(lambda: not estimates.running(), timeout=ESTIMATE_TIMEOUT_MS)
    result = estimates.result()
    assert result.error == "" and result.measured
    assert "needs about" in view.line.text() and "activations not measured" not in view.line.text()


def test_start_ends_a_probe_still_running_and_counts_the_weights_instead(qtbot, window, toy_csv):
    prepare(qtbot, window, toy_csv, epochs=1, batch_size=8, device="cpu")
    estimates = window.train_page.estimates
    qtbot.mouseClick(window.controls.estimate.button, Qt.MouseButton.LeftButton)
    assert estimates.running()
    window.controls.start_action.trigger()  # the probe would compete with the run for its device
    assert window.running
    assert not window.controls.estimate.button.isEnabled()  # no probe while a run is in flight
    qtbot.waitUntil(lambda: not window.running, timeout=RUN_TIMEOUT_MS)
    qtbot.waitUntil(lambda: estimates.result() is not None, timeout=ESTIMATE_TIMEOUT_MS)
    result = estimates.result()
    assert result.error == "" and not result.measured  # the static part, not the probe's figure
    assert window.controls.estimate.button.isEnabled()


def test_does_not_fit_says_so_offers_what_helps_and_never_blocks_start(qtbot, window, toy_csv, monkeypatch):
    import trainlab.engine.memory

    monkeypatch.setattr(trainlab.engine.memory, "device_memory_bytes", lambda device: 50_000_000)  # 50 MB of free RAM
    prepare(qtbot, window, toy_csv, epochs=1, batch_size=8, device="cpu")
    result = estimate(qtbot, window)
    view = window.controls.estimate
    assert result.memory.total > 50_000_000 * 0.9
    assert view.advice.isVisible()
    assert "Does not fit" in view.advice_text.text() and "You can still start" in view.advice_text.text()
    assert "of your 50 MB free RAM" in view.line.text()
    # the toy task has neither gradient checkpointing nor LoRA: only what it supports is offered
    assert set(view.remedy_buttons) == {"micro_batch_size"}
    assert window.controls.start_action.isEnabled()

    with qtbot.waitSignal(window.train_page.estimates.resultReady, timeout=ESTIMATE_TIMEOUT_MS):
        qtbot.mouseClick(view.remedy_buttons["micro_batch_size"], Qt.MouseButton.LeftButton)
    assert window.params_form.values()["micro_batch_size"] == "auto"
    assert window.train_page.estimates.result() is not None  # estimated again for the new settings

    with qtbot.waitSignal(window.runFinished, timeout=RUN_TIMEOUT_MS) as finished:
        window.controls.start_action.trigger()
    assert finished.args[0].status == "completed"


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory):
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    from trainlab_plugins.text.models import tiny_bert_vocab_dir

    folder = tmp_path_factory.mktemp("bert")
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert_vocab_dir()))
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64)
    torch.manual_seed(0)
    BertForMaskedLM(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


@pytest.mark.long
def test_a_lora_run_shows_what_it_writes_and_the_free_space(qtbot, window, bert_folder, tmp_path):
    from trainlab_resources import resource_path

    data = tmp_path / "texts"
    data.mkdir()
    for split in ("train", "val"):
        lines = (resource_path("samples", "text") / f"{split}.csv").read_text(encoding="utf-8").splitlines(keepends=True)
        (data / f"{split}.csv").write_text("".join(lines[:41]), encoding="utf-8")
    prepare(qtbot, window, data, task="text-classification", model=str(bert_folder), finetune="lora", epochs=1,
            batch_size=8, max_length=32, device="cpu")
    view = window.controls.estimate
    merged = window.data_panel.summary.extra["finetune"]["outputs"]["merged_model_bytes"]
    assert merged > 0
    assert view.disk.isVisible()
    assert f"Writes about {format_size(merged)}: merged model + adapters" in view.disk.text()
    assert " free in " in view.disk.text()

    result = estimate(qtbot, window)  # the adapters' size comes with the estimate
    assert result.error == "" and 0 < result.memory.gradients < result.memory.weights
    assert f"Writes about {format_size(merged + result.memory.gradients)}: merged model + adapters" in view.disk.text()

    combo = window.params_form.field_editor("merged_model")
    combo.setCurrentIndex(combo.findData("never"))  # as chosen: the data check runs again
    qtbot.waitUntil(lambda: "adapters only" in view.disk.text(), timeout=120_000)
    assert "Writes the adapters only" in view.disk.text()  # their size: with the next estimate
