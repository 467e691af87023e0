"""Try it: a trained toy run predicts typed input off the GUI thread."""

from __future__ import annotations

import csv
import json
import random
import subprocess
import sys
import threading

import pytest

pytest.importorskip("PySide6")

from dataclasses import replace  # noqa: E402

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl  # noqa: E402
from PySide6.QtGui import QDropEvent  # noqa: E402
from PySide6.QtWidgets import QLabel  # noqa: E402

from helpers import FIXTURE_PLUGINS, train_toy  # noqa: E402


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """One real toy run (red near (0, 0), green near (1, -1), blue near (2, -2))."""
    import trainlab.pluginhost.host as host

    root = tmp_path_factory.mktemp("tryit")
    data = root / "rows.csv"
    rnd = random.Random(3)
    with open(data, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["a", "b", "label"])
        for _ in range(240):
            label = rnd.choice(["red", "green", "blue"])
            c = {"red": 0, "green": 1, "blue": 2}[label]
            writer.writerow([c + rnd.gauss(0, 0.3), -c + rnd.gauss(0, 0.3), label])
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRAINLAB_HOME", str(root / "home"))
        mp.syspath_prepend(str(FIXTURE_PLUGINS))
        mp.setattr(host, "_registry", None)
        from trainlab.engine.scripting import RunRequest, run_training

        result = run_training(RunRequest(task="toy-classification", data=str(data), params={"epochs": "8", "lr": "0.05"}))
    assert result.status == "completed", result.error
    return result.run_dir


@pytest.fixture
def panel(qtbot, monkeypatch):
    monkeypatch.syspath_prepend(str(FIXTURE_PLUGINS))
    from trainlab_desktop.tryit.page import TryItPanel

    widget = TryItPanel()
    qtbot.addWidget(widget)
    widget.resize(800, 480)
    widget.show()
    return widget


def test_typed_input_gets_its_top_predictions_from_a_worker_thread(qtbot, panel, trained_run, monkeypatch):
    import trainlab.engine.scripting as runner

    threads = []
    real_predict = runner.predict

    def spy(*args, **kwargs):
        threads.append(threading.get_ident())
        return real_predict(*args, **kwargs)

    monkeypatch.setattr(runner, "predict", spy)
    panel.set_run(trained_run)
    assert panel.kind == "text" and panel.text_edit.isEnabled()

    qtbot.keyClicks(panel.text_edit, "2.1,-2.0")
    with qtbot.waitSignal(panel.predicted, timeout=60_000) as done:
        qtbot.mouseClick(panel.predict_button, Qt.MouseButton.LeftButton)
    predictions = done.args[0]
    assert [p["label"] for p in predictions][0] == "blue"
    assert len(predictions) == 3  # top 5 of three labels
    assert abs(sum(p["probability"] for p in predictions) - 1.0) < 1e-4
    shown = panel.shown_predictions()
    assert shown[0][0] == "blue" and shown[0][1].endswith("%")
    assert threads and threads[0] != threading.get_ident()

    # Ctrl+Enter predicts too; top-k narrows the list
    panel.top_k.blockSignals(True)
    panel.top_k.setValue(1)
    panel.top_k.blockSignals(False)
    panel.text_edit.setPlainText("0.0,0.1")
    with qtbot.waitSignal(panel.predicted, timeout=30_000) as done:
        qtbot.keyClick(panel.text_edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert [p["label"] for p in done.args[0]] == ["red"]


def test_a_dropped_text_is_predicted(qtbot, panel, trained_run):
    panel.set_run(trained_run)
    mime = QMimeData()
    mime.setText("1.0,-1.0")
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(panel.predicted, timeout=30_000) as done:
        panel.dropEvent(event)
    assert done.args[0][0]["label"] == "green"
    assert panel.text_edit.toPlainText() == "1.0,-1.0"


def test_bad_input_shows_the_error_and_the_panel_stays_usable(qtbot, panel, trained_run):
    panel.set_run(trained_run)
    with qtbot.waitSignal(panel.failed, timeout=30_000) as failed:
        panel.submit("not numbers")
    assert "ValueError" in failed.args[0]
    assert "Prediction failed" in panel.status.text()
    with qtbot.waitSignal(panel.predicted, timeout=30_000):
        panel.submit("2.0,-2.0")
    assert panel.status.text() == ""


def test_a_run_without_a_model_cannot_be_tried(qtbot, panel, tmp_path):
    run = tmp_path / "failed-run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"id": "x", "task": "toy-classification", "status": "failed"}))
    panel.set_run(str(run))
    assert not panel.input_stack.isEnabled()
    assert "no trained model" in panel.status.text()


def test_the_desktop_views_import_neither_torch_nor_pyqtgraph():
    code = (
        "import sys\n"
        "import trainlab_desktop.tryit.page, trainlab_desktop.history.page, trainlab_desktop.results.page\n"
        "import trainlab_desktop.dialogs.plugins, trainlab_desktop.results.confusion, trainlab_desktop.common.i18n\n"
        "print(sorted(m for m in ('torch', 'pyqtgraph', 'transformers') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_damaged_run_json_is_named_and_nothing_can_be_tried(qtbot, panel, tmp_path):
    run = tmp_path / "damaged"
    (run / "model").mkdir(parents=True)
    (run / "run.json").write_text('{"id": "x", "task": ')
    panel.set_run(str(run))
    assert not panel.input_stack.isEnabled() and not panel.sample_button.isEnabled()
    assert str(run / "run.json") in panel.status.text() and "is not valid JSON" in panel.status.text()


# -- by declared input and family -------------------------------------------------------


@pytest.fixture(scope="module")
def regression_run(tmp_path_factory):
    return train_toy(tmp_path_factory.mktemp("tryreg"), "toy-regression", epochs="15")


@pytest.fixture(scope="module")
def multilabel_run(tmp_path_factory):
    return train_toy(tmp_path_factory.mktemp("tryml"), "toy-multilabel", epochs="10")


def test_a_row_task_takes_a_row_and_shows_the_predicted_number(qtbot, panel, regression_run):
    panel.set_run(regression_run)
    assert panel.kind == "row" and panel.input_stack.currentWidget().isAncestorOf(panel.row_entry)
    field = panel.row_entry.fields[0]
    assert field.placeholderText() == "comma-separated numbers"  # the task's InputSpec.title
    assert panel.status.text() == "Enter comma-separated numbers and press Predict."
    assert not panel.top_k.isVisibleTo(panel)  # a number has no top labels
    qtbot.keyClicks(field, "0.1,-0.4,0.9")
    with qtbot.waitSignal(panel.predicted, timeout=60_000) as done:
        qtbot.keyClick(field, Qt.Key.Key_Return)
    value = done.args[0][0]["value"]
    assert isinstance(value, float) and panel.prediction.value == value
    assert panel.shown_value() == f"{value:.6g}"
    assert panel.shown_predictions() == []


def test_a_row_tasks_examples_that_are_not_rows_are_not_offered(qtbot, panel, regression_run):
    # the toy task describes its examples as "row 17": not something its predictor takes
    panel.set_run(regression_run)
    assert not panel.sample_button.isEnabled()
    assert "no example this task can take" in panel.sample_button.toolTip()


def test_a_multilabel_prediction_shows_the_chosen_labels_and_every_score(qtbot, panel, multilabel_run):
    panel.set_run(multilabel_run)
    field = panel.row_entry.fields[0]
    field.setText("1.5,-1.2,1.4")  # a and c switched on by their features, b off
    with qtbot.waitSignal(panel.predicted, timeout=60_000) as done:
        qtbot.mouseClick(panel.predict_button, Qt.MouseButton.LeftButton)
    rows = done.args[0]
    assert sorted(r["label"] for r in rows if r["chosen"]) == ["a", "c"]
    assert panel.prediction.labels == ("a", "c")
    shown = panel.shown_predictions()
    assert [label for label, _ in shown][:2] in (["✓ a", "✓ c"], ["✓ c", "✓ a"]) and shown[2][0] == "b"
    assert panel.output.findChild(QLabel, "predictionLabels").text() == "Labels: a, c"


def test_the_input_widget_follows_the_declared_input_not_the_task_id(qtbot, panel, trained_run, monkeypatch, tmp_path):
    import trainlab_desktop.tryit.page as tryit
    from PySide6.QtGui import QColor, QImage

    from trainlab import InputSpec, TaskSpec

    # a task whose id says "image" but whose input is a text: the text box
    spec = TaskSpec(id="image-captions-to-topics", title="Captions", factory="x:Y", input=InputSpec(kind="text"))
    monkeypatch.setattr(tryit, "task_spec", lambda task: spec)
    panel.set_run(trained_run)
    assert panel.kind == "text" and panel.input_stack.currentWidget().isAncestorOf(panel.text_edit)
    assert not panel.choose_button.isVisibleTo(panel)

    # one whose id says nothing of images, declaring an image input: the image well
    spec = TaskSpec(id="cell-counts", title="Cells", factory="x:Y", input=InputSpec(kind="image", title="a photo of a cell"))
    monkeypatch.setattr(tryit, "task_spec", lambda task: spec)
    panel.set_run(trained_run)
    assert panel.kind == "image" and panel.input_stack.currentWidget().isAncestorOf(panel.drop_area)
    assert panel.choose_button.isVisibleTo(panel) and panel.choose_button.text() == "Choose Image…"
    assert panel.status.text() == "Drop or choose a photo of a cell."
    picture = tmp_path / "cell.png"
    image = QImage(40, 30, QImage.Format.Format_RGB32)
    image.fill(QColor("teal"))
    assert image.save(str(picture))
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(picture)), QUrl.fromLocalFile(str(tmp_path / "notes.txt"))])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(panel.failed, timeout=30_000):  # the toy predictor takes rows, not images
        panel.dropEvent(event)
    assert panel.current_input == str(picture) and not panel.drop_area.pixmap().isNull()

    # a file of declared suffixes: the well names it; other files are refused
    spec = TaskSpec(id="calls", title="Calls", factory="x:Y", input=InputSpec(kind="file", suffixes=(".wav",)))
    monkeypatch.setattr(tryit, "task_spec", lambda task: spec)
    panel.set_run(trained_run)
    assert panel.choose_button.text() == "Choose File…" and "a file (.wav)" in panel.status.text()
    (tmp_path / "call.wav").write_bytes(b"RIFF")
    assert panel._dropped_input(mime) is None
    mime.setUrls([QUrl.fromLocalFile(str(tmp_path / "call.wav"))])
    assert panel._dropped_input(mime) == str(tmp_path / "call.wav")


def test_a_row_input_with_named_columns_gets_a_field_per_column(qtbot, panel, regression_run, monkeypatch):
    import trainlab_desktop.tryit.page as tryit
    from trainlab import InputSpec
    from trainlab.viewmodel.results import task_spec

    real = task_spec("toy-regression")
    spec = replace(real, input=InputSpec(kind="row", columns=("x0", "x1", "x2")))  # a row input that names its columns
    monkeypatch.setattr(tryit, "task_spec", lambda task: spec)
    panel.set_run(regression_run)
    assert [panel.row_entry._layout.labelForField(f).text() for f in panel.row_entry.fields] == ["x0", "x1", "x2"]
    for field, value in zip(panel.row_entry.fields, ("0.1", "-0.4", "0.9")):
        field.setText(value)
    with qtbot.waitSignal(panel.predicted, timeout=60_000):
        qtbot.keyClick(panel.row_entry.fields[2], Qt.Key.Key_Return)
    assert panel.current_input == "0.1,-0.4,0.9" and panel.shown_value()


def test_a_number_reads_in_the_targets_units_when_the_run_names_them(qtbot, panel, regression_run, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(regression_run, run)
    report = json.loads((run / "eval.json").read_text())
    report["target"]["units"] = "kg"  # where a task's evaluation names the target's units
    (run / "eval.json").write_text(json.dumps(report))
    panel.set_run(str(run))
    with qtbot.waitSignal(panel.predicted, timeout=60_000):
        panel.submit("0.1,-0.4,0.9")
    assert panel.shown_value() == f"{panel.prediction.value:.6g} kg"
