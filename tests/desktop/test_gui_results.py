"""The results view: metrics, per-class table, confusion matrix and its examples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QColor, QImage  # noqa: E402

LABELS = ["cat", "dog", "bird"]
# rows: true label, columns: predicted label
MATRIX = [[8, 3, 1], [0, 10, 0], [2, 0, 6]]


def _example(example, true, predicted, confidence, key):
    return {"key": key, "example": example, "true": true, "predicted": predicted, "confidence": confidence}


def write_run(root: Path, *, images: bool, task: str = "image-classification") -> Path:
    """A run folder with a hand-written eval.json in the engine's format."""
    root.mkdir(parents=True)
    examples: dict[tuple[str, str], list[str]] = {}
    for t, row in enumerate(MATRIX):
        for p, count in enumerate(row):
            names = []
            for k in range(count):
                if images:
                    path = root / "data" / LABELS[t] / f"{LABELS[t]}_{p}_{k}.png"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    image = QImage(64, 48, QImage.Format.Format_RGB32)
                    image.fill(QColor(40 * t, 80 * p, 25 * k))
                    assert image.save(str(path))
                    names.append(str(path))
                else:
                    names.append(f"a {LABELS[t]} sentence number {k} read as {LABELS[p]}")
            examples[(LABELS[t], LABELS[p])] = names
    misclassified, correct = [], []
    for (true, predicted), names in examples.items():
        for k, name in enumerate(names):
            # confidences deliberately out of order in the file
            confidence = [0.55, 0.97, 0.71, 0.62, 0.88, 0.93, 0.51, 0.66, 0.8, 0.59][k % 10]
            record = _example(name, true, predicted, confidence, f"{true}-{predicted}-{k}")
            (correct if true == predicted else misclassified).append(record)
    per_class = []
    for i, label in enumerate(LABELS):
        tp = MATRIX[i][i]
        support = sum(MATRIX[i])
        predicted = sum(row[i] for row in MATRIX)
        precision, recall = tp / predicted, tp / support
        per_class.append(
            {
                "label": label,
                "precision": precision,
                "recall": recall,
                "f1": 2 * precision * recall / (precision + recall),
                "support": support,
            }
        )
    report = {
        "samples": 30,
        "accuracy": 24 / 30,
        "macro_f1": sum(r["f1"] for r in per_class) / 3,
        "loss": 0.5123,
        "label_names": LABELS,
        "per_class": per_class,
        "confusion_matrix": MATRIX,
        "misclassified": misclassified,
        "correct_examples": correct,
    }
    (root / "eval.json").write_text(json.dumps(report), encoding="utf-8")
    run = {"id": "20250101-000000-test-0001", "name": "my run", "task": task, "status": "completed"}
    (root / "run.json").write_text(json.dumps(run), encoding="utf-8")
    return root


def click_cell(qtbot, view, row, column):
    table = view.confusion.table
    rect = table.visualRect(table.model().index(row, column))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def metric(view, name):
    table = view.metrics_table
    for row in range(table.rowCount()):
        if table.item(row, 0).text() == name:
            return table.item(row, 1).text()
    raise AssertionError(f"no {name} row")


@pytest.fixture
def results(qtbot):
    from trainlab_desktop.results.page import ResultsView

    view = ResultsView()
    qtbot.addWidget(view)
    view.resize(1100, 760)
    view.show()
    qtbot.waitExposed(view)
    return view


def test_results_show_metrics_per_class_scores_and_the_matrix(qtbot, results, tmp_path):
    run = write_run(tmp_path / "run", images=False, task="text-classification")
    with qtbot.waitSignal(results.loaded):
        assert results.load_run(str(run))

    assert results.title.text() == "my run"
    assert metric(results, "Accuracy") == "80.00%"
    assert metric(results, "Examples") == "30"
    assert metric(results, "Misclassified") == "6"
    classes = results.class_table
    assert [classes.item(r, 0).text() for r in range(classes.rowCount())] == LABELS
    assert classes.item(1, 1).text() == "0.769"  # dog precision 10/13
    assert classes.item(1, 4).text() == "10"

    model = results.confusion.model
    assert model.data(model.index(0, 1)) == "3"
    assert model.data(model.index(1, 0)) == ""  # zero cells stay quiet
    results.confusion.percent_button.click()
    assert model.data(model.index(0, 1)) == "25%"
    # mistakes and correct cells are told apart by colour, not only by text
    assert model.cell_color(0, 1).red() > model.cell_color(0, 1).blue()
    assert model.cell_color(1, 1).blue() > model.cell_color(1, 1).red()


def test_clicking_a_cell_lists_its_texts_most_confident_first(qtbot, results, tmp_path):
    run = write_run(tmp_path / "run", images=False, task="text-classification")
    results.load_run(str(run))
    # it opens on the biggest mistake: cat read as dog
    assert "“cat” predicted as “dog”: 3 examples" in results.examples_title.text()

    click_cell(qtbot, results, 2, 0)  # bird predicted as cat
    assert results.examples_stack.currentWidget() is results.text_table
    table = results.text_table
    assert table.rowCount() == 2
    texts = [table.item(r, 2).text() for r in range(2)]
    assert texts == ["a bird sentence number 1 read as cat", "a bird sentence number 0 read as cat"]
    assert [table.item(r, 0).text() for r in range(2)] == ["97.0%", "55.0%"]
    assert "“bird” predicted as “cat”: 2 examples" in results.examples_title.text()

    click_cell(qtbot, results, 1, 1)  # the diagonal: correct examples
    confidences = [e.confidence for e in results.listed]
    assert len(confidences) == 10 and confidences == sorted(confidences, reverse=True)
    assert "predicted correctly" in results.examples_title.text()

    click_cell(qtbot, results, 1, 0)  # an empty cell
    assert table.rowCount() == 0


def test_image_examples_show_as_thumbnails(qtbot, results, tmp_path):
    run = write_run(tmp_path / "run", images=True)
    results.load_run(str(run))
    click_cell(qtbot, results, 0, 2)  # cat predicted as bird: one image
    assert results.examples_stack.currentWidget() is results.image_list
    assert results.examples_title.text().startswith("“cat” predicted as “bird”: 1 example \u2014")
    click_cell(qtbot, results, 0, 1)  # cat predicted as dog: three images
    images = results.image_list
    assert images.count() == 3
    assert [images.item(i).text() for i in range(3)] == ["dog · 97%", "dog · 71%", "dog · 55%"]
    qtbot.waitUntil(lambda: results.thumbnails_pending() == 0, timeout=5000)
    pixmap = images.item(0).icon().pixmap(96, 96)
    # the thumbnail is the image (64x48 scaled to fit 96), not the grey square placeholder
    assert pixmap.width() == 96 and pixmap.height() == 72
    assert str(run / "data" / "cat") in images.item(0).toolTip()


def test_a_run_without_eval_json_says_so(qtbot, results, tmp_path):
    run = tmp_path / "bare"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"id": "x", "task": "image-classification", "status": "failed"}))
    assert not results.load_run(str(run))
    assert results.message.isVisible()
    assert "no evaluation" in results.message.text()
    assert not results.body.isVisible()


def test_a_report_with_a_test_split_offers_both(qtbot, results, tmp_path):
    run = write_run(tmp_path / "run", images=False)
    data = json.loads((run / "eval.json").read_text())
    test = dict(data, accuracy=0.5)
    (run / "eval.json").write_text(json.dumps({"val": data, "test": test}))
    results.load_run(str(run))
    assert results.split_box.isVisible() and results.split_box.count() == 2
    assert metric(results, "Accuracy") == "80.00%"
    results.split_box.setCurrentIndex(1)
    assert metric(results, "Accuracy") == "50.00%"


def test_a_damaged_run_json_is_named_and_the_results_still_show(qtbot, results, tmp_path):
    run = write_run(tmp_path / "run", images=False)
    (run / "run.json").write_text("[1, 2, 3]")
    with qtbot.waitSignal(results.loaded):
        assert results.load_run(str(run))
    assert results.title.text() == "run"  # the folder's name
    assert results.notice.isVisible()
    assert str(run / "run.json") in results.notice.text() and "not a JSON object" in results.notice.text()
    assert metric(results, "Accuracy") == "80.00%"


@pytest.mark.parametrize(
    ("content", "reason"),
    [("{not json", "is not valid JSON"), (json.dumps({"label_names": ["a"], "confusion_matrix": "x"}), "'confusion_matrix'")],
)
def test_a_damaged_eval_json_is_named_in_the_view(qtbot, results, tmp_path, content, reason):
    run = write_run(tmp_path / "run", images=False)
    (run / "eval.json").write_text(content)
    assert not results.load_run(str(run))
    assert results.message.isVisible() and not results.body.isVisible()
    assert str(run / "eval.json") in results.message.text() and reason in results.message.text()


def test_an_early_report_and_later_evaluations_on_other_data_open(qtbot, results, tmp_path):
    run = write_run(tmp_path / "run", images=False)
    data = json.loads((run / "eval.json").read_text())
    data["per_class"] = {row["label"]: {k: v for k, v in row.items() if k != "label"} for row in data["per_class"]}
    data["correct"] = data.pop("correct_examples")  # how early reports named them
    (run / "eval.json").write_text(json.dumps({"val": data}))
    other = dict(data, accuracy=0.25, split="train", data="/elsewhere/rows.csv")
    (run / "eval-20250102-101500.json").write_text(json.dumps(other))
    results.load_run(str(run))
    assert results.split_box.isVisible()
    titles = [results.split_box.itemText(i) for i in range(results.split_box.count())]
    assert titles == ["Validation", "Training, evaluated 2025-01-02 10:15"]
    assert results.split_box.itemData(1, Qt.ItemDataRole.ToolTipRole) == "/elsewhere/rows.csv"
    assert [results.class_table.item(r, 0).text() for r in range(3)] == LABELS
    click_cell(qtbot, results, 1, 1)
    assert len(results.listed) == 10  # the correct examples, under their early name
    results.split_box.setCurrentIndex(1)
    assert metric(results, "Accuracy") == "25.00%"


def test_the_status_reads_as_in_the_history(qtbot, results, tmp_path):
    run = write_run(tmp_path / "run", images=False, task="text-classification")
    info = json.loads((run / "run.json").read_text())
    for status, error, word in (("completed", "", "Completed"), ("cancelled", "interrupted", "Stopped"),
                                ("failed", "interrupted: the training process ended without finishing the run",
                                 "Interrupted")):
        (run / "run.json").write_text(json.dumps(dict(info, status=status, error=error)))
        results.load_run(str(run))
        assert results.subtitle.text() == f"text-classification · {word}"
