"""The output side of try-it: a typed prediction as people read it.

``PredictionView`` shows the ``trainlab.api.predictions`` value that
``trainlab.engine.scripting.predict`` answered for one input:

- ``LabelScores``: the top labels with probability bars, the best in bold;
- ``LabelSet``: the chosen labels, then each label's score bar (chosen ones
  ticked);
- ``Number``: the value, in the target's units when the run names them;
- another family's prediction: its JSON, key by key.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QProgressBar, QWidget

from trainlab.api.predictions import LabelScores, LabelSet, Number, Prediction


def prediction_rows(prediction: Prediction | None, body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows ``TryItPanel.predicted`` carries: labels with probabilities, best first, or ``[{"value"}]``."""
    if isinstance(prediction, LabelScores):
        return [{"label": label, "probability": p} for label, p in prediction.scores]
    if isinstance(prediction, LabelSet):
        ranked = sorted(prediction.scores, key=lambda s: -s[1])
        return [{"label": label, "probability": p, "chosen": label in prediction.labels} for label, p in ranked]
    if isinstance(prediction, Number):
        return [{"value": prediction.value}]
    return [{k: v for k, v in body.items() if k != "kind"}]


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

    def clear(self) -> None:
        while self.grid.count():
            widget = self.grid.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()
        self.value_label = None

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
            for key, item in body.items():
                if key in ("input", "kind"):
                    continue
                self.grid.addWidget(QLabel(str(key)), row, 0)
                self.grid.addWidget(QLabel(str(item)), row, 1, 1, 2)
                row += 1

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
