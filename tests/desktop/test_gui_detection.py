"""An object-detection run in the window: its mAP, per-class table, PR curves and worst images, and try-it's boxes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from trainlab_dev.detection_samples import write_coco


@pytest.fixture(scope="module")
def detection_run(tmp_path_factory):
    """A real, tiny object-detection run (small-fcos at 64 px, one epoch): the plumbing, not the accuracy."""
    from trainlab.engine.scripting import RunRequest, run_training

    root = tmp_path_factory.mktemp("detection")
    data = write_coco(root / "shapes", {"train": 12, "val": 6}, size=64, seed=2)
    params = {"epochs": "1", "image_size": "64", "batch_size": "6", "model": "small-fcos", "score_threshold": "0.0", "export": "off"}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRAINLAB_HOME", str(root / "home"))
        result = run_training(RunRequest(task="object-detection", data=str(data), params=params, out=str(root / "run")))
    assert result.status == "completed", result.error
    return str(root / "run")


def test_the_results_page_shows_map_the_per_class_table_curves_and_worst_images(qtbot, detection_run):
    from trainlab_desktop.results.page import ResultsView

    view = ResultsView()
    qtbot.addWidget(view)
    view.resize(1200, 900)
    view.show()
    qtbot.waitExposed(view)
    with qtbot.waitSignal(view.loaded):
        assert view.load_run(detection_run)
    assert view.family == "object-detection"
    # the detectors give no loss in evaluation: no validation loss row or curve, rather than a 0 never measured
    table = view.page.split_table
    titles = [table.item(row, 0).text() for row in range(table.rowCount())]
    assert titles and "Loss" not in titles and "mAP" in " ".join(titles), titles
    assert "map" in view.page.curves and "loss" not in view.page.curves
    details = view.page.details
    assert list(details.blocks) == ["per_class", "pr_curves", "worst_images"]
    assert details.table("per_class").column_texts("class") == ["circle", "square", "triangle"]
    report = json.loads((Path(detection_run) / "eval.json").read_text())
    curves = next(d for d in report["details"] if d["name"] == "pr_curves")["lines"]
    assert len(details.blocks["pr_curves"].series.items) == len(curves) > 0
    worst = details.table("worst_images")
    errors = [int(t) for t in worst.column_texts("errors")]
    assert errors == sorted(errors, reverse=True) and len(errors) == 6  # every validation image, worst first
    qtbot.waitUntil(lambda: view.thumbnails_pending() == 0, timeout=10_000)
    worst.selectRow(0)
    preview = details.blocks["worst_images"].preview
    shown = preview.parts["image"]
    assert any(b.role == "true" for b in shown.boxes) and not shown.pixmap().isNull()

    # the slider redraws the predicted boxes from its score; the row keeps them down to 0.05
    def drawn() -> int:
        return sum(1 for b in preview.parts["image"].boxes if b.role == "predicted")

    scores = [b.score for b in shown.all_boxes if b.role == "predicted"]
    assert scores and min(scores) >= 0.05 and preview.threshold_slider.value() == pytest.approx(0.3)
    assert drawn() == sum(1 for s in scores if s >= 0.3)
    preview.threshold_slider.slider.setValue(5)
    assert drawn() == len(scores)
    preview.threshold_slider.slider.setValue(100)
    assert drawn() == sum(1 for s in scores if s >= 1.0)
    worst.selectRow(1)  # the next image keeps the threshold chosen
    assert preview.threshold_slider.value() == pytest.approx(1.0) and drawn() == 0


def test_try_it_draws_the_boxes_found_in_a_dropped_image(qtbot, detection_run):
    from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
    from PySide6.QtGui import QDropEvent
    from trainlab_desktop.results.details import BoxedImageView
    from trainlab_desktop.tryit.page import TryItPanel

    panel = TryItPanel()
    qtbot.addWidget(panel)
    panel.resize(800, 600)
    panel.show()
    panel.set_run(detection_run)
    assert panel.kind == "image"
    picture = min((Path(detection_run).parent / "shapes" / "val").glob("*.jpg"))
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(picture))])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(panel.predicted, timeout=120_000):
        panel.dropEvent(event)
    widget = panel.output.hint_widget
    assert isinstance(widget, BoxedImageView) and widget.all_boxes and not widget.pixmap().isNull()
    # the run reports every box (score_threshold 0): the slider, at 0.3 first, hides the weaker ones
    scores = [b.score for b in widget.all_boxes]
    slider = panel.output.threshold_slider
    assert len(widget.boxes) == sum(1 for s in scores if s >= 0.3)
    slider.slider.setValue(0)
    assert len(widget.boxes) == len(scores)
    slider.slider.setValue(round(max(scores) * 100))
    assert len(widget.boxes) == sum(1 for s in scores if s >= slider.value()) < len(scores)
    assert panel.output.shown_summary().split(":")[0].endswith("boxes")  # "100 boxes: circle 0.23, ..."


@pytest.mark.parametrize("layout", ["coco", "yolo", "voc"])
def test_the_data_check_previews_a_detection_folders_images_by_file_name(qtbot, tmp_path, layout):
    from trainlab_dev import detection_samples
    from trainlab_desktop.run.data_panel import ImagePreview, read_preview

    data = getattr(detection_samples, f"write_{layout}")(tmp_path / layout, {"train": 3, "val": 2}, size=32, seed=1)
    preview = read_preview(str(data))
    assert isinstance(preview, ImagePreview) and len(preview.classes) == 1, preview
    label, images = preview.classes[0]
    assert label == "" and len(images) >= 3 and all(name.endswith(".jpg") for name, _ in images)
    assert all(not image.isNull() and max(image.width(), image.height()) <= 72 for _, image in images)


def test_the_window_shows_the_thumbnails_of_a_coco_folder(qtbot, window, tmp_path):
    data = write_coco(tmp_path / "shapes", {"train": 4, "val": 2}, size=32, seed=3)
    window.show_page("train")
    assert window.select_task("object-detection")
    panel = window.data_panel
    panel.set_path(str(data))
    qtbot.waitUntil(lambda: not panel.checking, timeout=60_000)
    qtbot.waitUntil(lambda: panel.thumbs.count() > 0, timeout=10_000)
    assert panel.preview.isVisible() and panel.preview.currentWidget() is panel.thumbs
    names = [panel.thumbs.item(i).text() for i in range(panel.thumbs.count())]
    assert names == [f"train_{i:04d}.jpg" for i in range(4)], names
