"""The output side of try-it: a typed prediction as people read it.

``PredictionView`` shows the ``trainlab.api.predictions`` value that
``trainlab.engine.scripting.predict`` answered for one input:

- ``LabelScores``: the top labels with probability bars, the best in bold;
- ``LabelSet``: the chosen labels, then each label's score bar (chosen ones
  ticked);
- ``Number``: the value, in the target's units when the run names them;
- another family's prediction: its ``summary()``, then what its
  ``display()`` hint asks for: a text, named numbers with their unit
  (``Values``), a table, a plot of its series, or an image with its boxes
  (drawn by the results view's widgets, ``results.details``); its JSON key
  by key only when it has neither.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QProgressBar, QWidget

from trainlab.api.details import BoxedImage, Column, Series, Table, Values
from trainlab.api.predictions import LabelScores, LabelSet, Number, Prediction
from trainlab_desktop.results.details import (
    SCORE_THRESHOLD,
    BoxedImageView,
    DetailTable,
    ScoreSlider,
    draw_series,
    has_scored_boxes,
)
from trainlab_desktop.results.details import number_text as column_number


def prediction_rows(prediction: Prediction | None, body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows ``TryItPanel.predicted`` carries: labels with probabilities, best first, or ``[{"value"}]``."""
    if isinstance(prediction, LabelScores):
        return [{"label": label, "probability": p} for label, p in prediction.scores]
    if isinstance(prediction, LabelSet):
        ranked = sorted(prediction.scores, key=lambda s: -s[1])
        return [{"label": label, "probability": p, "chosen": label in prediction.labels} for label, p in ranked]
    if isinstance(prediction, Number):
        return [{"value": prediction.value}]
    hint = display_hint(prediction)
    if isinstance(hint, Values):
        return [{"label": name, "value": value} for name, value in hint.values]
    return [{k: v for k, v in body.items() if k != "kind"}]


def display_hint(prediction: Prediction | None) -> Any:
    """What ``prediction.display()`` asks try-it to draw (None when it asks nothing or fails)."""
    if prediction is None:
        return None
    try:
        return prediction.display()
    except Exception:  # noqa: BLE001 - a plugin's prediction: its summary still shows
        return None


def prediction_summary(prediction: Prediction | None) -> str:
    if prediction is None:
        return ""
    try:
        return str(prediction.summary())
    except Exception:  # noqa: BLE001 - a plugin's prediction: its JSON still shows
        return ""


def number_text(value: float, units: str = "") -> str:
    text = f"{value:.6g}" if math.isfinite(value) else str(value)
    return f"{text} {units}".strip()


class PredictionView(QWidget):
    """One input's prediction, laid out by its type."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setColumnStretch(1, 1)
        self.grid.setHorizontalSpacing(10)
        self.value_label: QLabel | None = None
        self.summary_label: QLabel | None = None
        self.hint_widget: QWidget | None = None  # what the prediction's display() asked for
        self.plot_items: list[Any] = []
        self.threshold = SCORE_THRESHOLD  # boxes' score threshold, kept from one input to the next
        self.threshold_slider: ScoreSlider | None = None

    def clear(self) -> None:
        while self.grid.count():
            widget = self.grid.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()
        self.value_label = None
        self.summary_label = None
        self.hint_widget = None
        self.plot_items = []
        self.threshold_slider = None

    def show_prediction(self, prediction: Prediction | None, body: Mapping[str, Any], truth: str = "",
                        top_k: int = 5, units: str = "") -> None:
        self.clear()
        row = 0
        if truth:
            label = QLabel(truth)
            label.setProperty("role", "muted")
            self.grid.addWidget(label, row, 0, 1, 3)
            row += 1
        if isinstance(prediction, LabelScores):
            for rank, (name, p) in enumerate(prediction.scores[:top_k]):
                self._score_row(row, name, p, strong=rank == 0)
                row += 1
        elif isinstance(prediction, LabelSet):
            chosen = ", ".join(prediction.labels) if prediction.labels else self.tr("no label")
            head = QLabel(self.tr("Labels: {labels}").format(labels=chosen))
            head.setObjectName("predictionLabels")
            self._bold(head)
            self.grid.addWidget(head, row, 0, 1, 3)
            row += 1
            for name, p in sorted(prediction.scores, key=lambda s: -s[1])[:top_k]:
                picked = name in prediction.labels
                self._score_row(row, ("\u2713 " if picked else "") + name, p, strong=picked)
                row += 1
        elif isinstance(prediction, Number):
            value = QLabel(number_text(prediction.value, units))
            value.setObjectName("predictionValue")
            font = value.font()
            font.setPointSizeF(font.pointSizeF() * 1.8)
            font.setBold(True)
            value.setFont(font)
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.value_label = value
            self.grid.addWidget(value, row, 0, 1, 3)
        else:
            self._show_other(prediction, body, row)

    def _show_other(self, prediction: Prediction | None, body: Mapping[str, Any], row: int) -> None:
        """Another family's prediction: its summary, then its display hint drawn."""
        summary = prediction_summary(prediction)
        hint = display_hint(prediction)
        if summary:
            label = QLabel(summary)
            label.setObjectName("predictionSummary")
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self._bold(label)
            self.summary_label = label
            self.grid.addWidget(label, row, 0, 1, 3)
            row += 1
        widget: QWidget | None = None
        if isinstance(hint, str) and hint.strip() and hint != summary:
            widget = QLabel(hint)
            widget.setWordWrap(True)
            widget.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        elif isinstance(hint, Values):
            column = Column("value", display=hint.display, unit=hint.unit)
            holder = QWidget()
            grid = QGridLayout(holder)
            grid.setContentsMargins(0, 0, 0, 0)
            for index, (name, value) in enumerate(hint.values):
                grid.addWidget(QLabel(name), index, 0)
                text = QLabel(column_number(column, value))
                text.setObjectName("predictionNumber")
                text.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                grid.addWidget(text, index, 1)
            grid.setColumnStretch(2, 1)
            widget = holder
        elif isinstance(hint, Table):
            widget = DetailTable(hint, "")
        elif isinstance(hint, Series):
            from trainlab_desktop.results.charts import PlotCanvas

            canvas = PlotCanvas()
            canvas.setMinimumHeight(220)
            self.plot_items = draw_series(canvas, hint, hint.title)
            widget = canvas
        elif isinstance(hint, BoxedImage):
            view = BoxedImageView()
            view.show_image(hint.image, hint.boxes, self.threshold if has_scored_boxes(hint.boxes) else None)
            widget = view
        if widget is not None:
            widget.setObjectName(widget.objectName() or "predictionDisplay")
            self.hint_widget = widget
            self.grid.addWidget(widget, row, 0, 1, 3)
            if isinstance(widget, BoxedImageView) and has_scored_boxes(widget.all_boxes):
                self.threshold_slider = ScoreSlider(self.threshold)
                self.threshold_slider.changed.connect(self._threshold_moved)
                self.grid.addWidget(self.threshold_slider, row + 1, 0, 1, 3)
            return
        if summary:
            return
        for key, item in body.items():
            if key in ("input", "kind"):
                continue
            self.grid.addWidget(QLabel(str(key)), row, 0)
            self.grid.addWidget(QLabel(str(item)), row, 1, 1, 2)
            row += 1

    def _threshold_moved(self, value: float) -> None:
        self.threshold = value
        if isinstance(self.hint_widget, BoxedImageView):
            self.hint_widget.set_threshold(value)

    def _score_row(self, row: int, name: str, probability: float, strong: bool) -> None:
        label = QLabel(str(name))
        label.setObjectName("predictionLabel")
        bar = QProgressBar()
        bar.setRange(0, 1000)
        bar.setValue(round(max(0.0, min(1.0, probability)) * 1000))
        bar.setTextVisible(False)
        bar.setFixedHeight(10)
        value = QLabel(f"{probability:.1%}")
        value.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if strong:
            self._bold(label)
            self._bold(value)
        self.grid.addWidget(label, row, 0)
        self.grid.addWidget(bar, row, 1)
        self.grid.addWidget(value, row, 2)

    @staticmethod
    def _bold(widget: QLabel) -> None:
        font = widget.font()
        font.setBold(True)
        widget.setFont(font)

    def shown_scores(self) -> list[tuple[str, str]]:
        """(label, percentage) rows as displayed, top first."""
        out = []
        for row in range(self.grid.rowCount()):
            label = self.grid.itemAtPosition(row, 0)
            value = self.grid.itemAtPosition(row, 2)
            if label is not None and value is not None and label.widget() is not value.widget():
                out.append((label.widget().text(), value.widget().text()))
        return out

    def shown_value(self) -> str:
        """The predicted number as displayed ('' when the prediction is not a number)."""
        return self.value_label.text() if self.value_label is not None else ""

    def shown_summary(self) -> str:
        """Another family's prediction's summary line as displayed."""
        return self.summary_label.text() if self.summary_label is not None else ""
