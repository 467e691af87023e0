"""text-generation in the real window: the data check in the task's words, a short run's live scores, and the answers side by side."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from trainlab_resources import resource_path

RUN_TIMEOUT_MS = 240_000


def _few_sample_chats(folder: Path) -> Path:
    """A folder of the bundled sample's first chats (16 to train, 4 to validate): the plumbing, not the accuracy."""
    sample = resource_path("samples", "text-generation")
    folder.mkdir()
    for name, n in (("train", 16), ("val", 4)):
        lines = (sample / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()[:n]
        (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_the_window_checks_chats_trains_tiny_chat_and_lists_the_answers_worst_first(
    qtbot, window, tmp_path
):
    data = _few_sample_chats(tmp_path / "chats")
    assert window.select_task("text-generation")
    window.data_panel.set_path(str(data))
    qtbot.waitUntil(lambda: not window.data_panel.checking, timeout=120_000)
    panel = window.data_panel
    assert panel.error == "", panel.error
    assert (
        "Train: 16 examples" in panel.status.text()
        and "Validation: 4 examples" in panel.status.text()
    )
    notes = panel.task_notes.text()
    assert not panel.task_notes.isHidden(), notes
    assert (
        "length in tokens mean" in notes and "tokens trained" in notes
    )  # the token-length distribution
    first = json.loads(
        (data / "train.jsonl").read_text(encoding="utf-8").splitlines()[0]
    )["messages"][-1]["content"]
    assert (
        f"⟦{first}<|im_end|>⟧" in notes
    )  # the rendered example, the answer and its end-of-turn token trained

    params = {
        "epochs": "2",
        "batch_size": "8",
        "max_length": "64",
        "eval_generations": "4",
        "max_new_tokens": "4",
        "log_interval": "0",
        "device": "cpu",
    }
    assert window.params_form.set_values(params) == []
    assert window.start_blockers() == []
    with qtbot.waitSignal(window.runFinished, timeout=RUN_TIMEOUT_MS) as blocker:
        window.controls.start_action.trigger()
        qtbot.waitUntil(
            lambda: "tokens/s" in window.controls.line.text(), timeout=RUN_TIMEOUT_MS
        )
    result = blocker.args[0]
    assert result.status == "completed", result

    # the loss, and each generation score beside it once per epoch, under its declared title
    assert window.plots.point_counts()["eval"] == 2
    points = window.plots.metric_points()
    for name in ("exact_match", "rouge_l", "chrf", "stopped"):
        assert points.get(name) == 2, points
    titles = " ".join(window.plots.metrics.titles())
    for title in ("Exact match", "ROUGE-L", "chrF", "Stops by itself"):
        assert title in titles, titles

    # the results view: prompt, expected and generated side by side, the lowest chrF first
    results = window.results
    assert results is not None and Path(results.run_dir) == Path(result.run_dir)
    table = results.page.details.table("generations")
    prompts = table.column_texts("prompt")
    assert len(prompts) == 4
    val = [
        json.loads(line)["messages"]
        for line in (data / "val.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert set(prompts) == {m[0]["content"] for m in val}
    assert set(table.column_texts("expected")) == {m[-1]["content"] for m in val}
    assert len(table.column_texts("generated")) == 4
    scores = [float(t) for t in table.column_texts("chrf")]
    assert scores == sorted(scores)
