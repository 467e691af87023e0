"""Try a trained run on your own input: an image (chosen or dropped) or a text.

Predictions run in a one-thread pool through ``trainlab.engine.runner.predict``,
which imports torch there (never on the GUI thread) and keeps the run's
predictor loaded, so only the first prediction of a run pays for loading it.
One thread: the predictor is used by one caller at a time, and a burst of
requests cannot pile up threads; only the newest answer is shown.
"""

from __future__ import annotations

import random
import traceback
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QObject, QRunnable, QSize, Qt, QThreadPool, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QImageReader, QPixmap
from PySide6.QtWidgets import (
    QFileDialog,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from trainlab.api import UsageError
from trainlab.records import EvalExample, RunRecord
from trainlab.runs import RunDir

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff")
PREVIEW_SIZE = 280


class _PredictSignals(QObject):
    done = Signal(int, list)  # request id, predictions of the one input
    failed = Signal(int, str, str)  # request id, message, traceback


class _PredictJob(QRunnable):
    """One prediction in the pool thread; it reports through the panel's ``signals``.

    Not a signals object of its own: the job dies in the pool thread, and a
    QObject of the GUI thread destroyed with it there is the kind of
    cross-thread deletion that crashed the GUI tests (see ``TrainingWorker``).
    """

    def __init__(self, request_id: int, run_dir: str, item: str, top_k: int, signals: _PredictSignals) -> None:
        super().__init__()
        self.request_id = request_id
        self.run_dir = run_dir
        self.item = item
        self.top_k = top_k
        self.signals = signals

    def run(self) -> None:
        try:
            from trainlab.engine.runner import predict  # imports torch here, off the GUI thread

            results = predict(self.run_dir, [self.item], self.top_k)
            if results and results[0].get("error"):  # this input could not be used (an unreadable image)
                self._emit(self.signals.failed, self.request_id, results[0]["error"], "")
                return
            predictions = results[0]["predictions"] if results else []
        except Exception as exc:  # noqa: BLE001 - shown in the panel, never fatal
            message = str(exc) if exc.__class__.__name__ in ("UsageError", "DataError") else f"{type(exc).__name__}: {exc}"
            self._emit(self.signals.failed, self.request_id, message, traceback.format_exc())
            return
        self._emit(self.signals.done, self.request_id, predictions)

    @staticmethod
    def _emit(signal, *args) -> None:
        try:
            signal.emit(*args)
        except RuntimeError:  # the panel went away meanwhile
            pass


def input_kind(task: str) -> str:
    """"image" or "text": what a run's task takes as input."""
    task = str(task or "")
    if "image" in task or "vision" in task:
        return "image"
    return "text"


class _DropArea(QLabel):
    """The image well: shows the chosen image, takes a dropped one."""

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setObjectName("dropArea")
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setWordWrap(True)
        self.setMinimumSize(QSize(PREVIEW_SIZE, PREVIEW_SIZE * 3 // 4))
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet("QLabel#dropArea { border: 2px dashed palette(mid); border-radius: 8px; }")


class TryItPanel(QWidget):
    """Pick a run's input (image or text) and see its top predictions."""

    predicted = Signal(list)  # [{"label", "probability"}, ...] of the latest input
    failed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("TryItPanel")
        self.setAcceptDrops(True)
        self.run_dir: str | None = None
        self.record: RunRecord | None = None
        self.kind = "text"
        self.current_input: str | None = None
        self.predictions: list[dict[str, Any]] = []
        self.error = ""
        self._true_label: str | None = None  # when the input came from the evaluation
        self._request = 0
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._pool.setExpiryTimeout(-1)  # keep the thread: the loaded model stays with it
        # Made after the pool: children go in the order they came, so the pool
        # has waited for a running job before the signals it emits go.
        self._signals = _PredictSignals(self)
        self._signals.done.connect(self._done)
        self._signals.failed.connect(self._failed)

        self.title = QLabel(self.tr("Try it"))
        self.title.setProperty("role", "subheading")
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        self.run_label = QLabel()
        self.run_label.setProperty("role", "muted")
        self.run_label.setWordWrap(True)

        # image input
        self.drop_area = _DropArea(self.tr("Drop an image here\nor choose one"))
        self.choose_button = QPushButton(self.tr("Choose Image…"))
        self.choose_button.clicked.connect(self.choose_image)
        image_page = QWidget()
        image_layout = QVBoxLayout(image_page)
        image_layout.setContentsMargins(0, 0, 0, 0)
        image_layout.addWidget(self.drop_area, 1)

        # text input
        self.text_edit = QPlainTextEdit()
        self.text_edit.setObjectName("tryText")
        self.text_edit.setPlaceholderText(self.tr("Type or paste a text to classify"))
        self.predict_button = QPushButton(self.tr("Predict"))
        self.predict_button.setToolTip(self.tr("Classify the text (Ctrl+Enter)"))
        self.predict_button.setDefault(True)
        self.predict_button.clicked.connect(self.predict_text)
        # An event filter, not a QShortcut: the text edit claims Ctrl+Return
        # for itself (ShortcutOverride), so a shortcut would never fire.
        self.text_edit.installEventFilter(self)
        text_page = QWidget()
        text_layout = QVBoxLayout(text_page)
        text_layout.setContentsMargins(0, 0, 0, 0)
        text_layout.addWidget(self.text_edit, 1)
        text_buttons = QHBoxLayout()
        text_buttons.addStretch(1)
        text_buttons.addWidget(self.predict_button)
        text_layout.addLayout(text_buttons)

        self.input_stack = QStackedWidget()
        self.input_stack.addWidget(image_page)
        self.input_stack.addWidget(text_page)

        self.sample_button = QPushButton(self.tr("Random Validation Example"))
        self._sample_tip = self.tr("Try an example from this run's evaluation and compare with its true label")
        self.sample_button.setToolTip(self._sample_tip)
        self.sample_button.clicked.connect(self.try_random_example)
        self.top_k = QSpinBox()
        self.top_k.setRange(1, 20)
        self.top_k.setValue(5)
        self.top_k.setToolTip(self.tr("How many of the most likely labels to show"))
        self.top_k.valueChanged.connect(lambda _: self.predict_current())
        options = QHBoxLayout()
        options.addWidget(self.choose_button)
        options.addWidget(self.sample_button)
        options.addStretch(1)
        options.addWidget(QLabel(self.tr("Top:")))
        options.addWidget(self.top_k)

        self.status = QLabel()
        self.status.setObjectName("tryStatus")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.results_box = QWidget()
        self.results_grid = QGridLayout(self.results_box)
        self.results_grid.setContentsMargins(0, 0, 0, 0)
        self.results_grid.setColumnStretch(1, 1)
        self.results_grid.setHorizontalSpacing(10)

        self.input_box = QWidget()
        input_layout = QVBoxLayout(self.input_box)
        input_layout.setContentsMargins(0, 0, 0, 0)
        input_layout.addWidget(self.input_stack, 1)
        input_layout.addLayout(options)

        results_col = QVBoxLayout()
        results_title = QLabel(self.tr("Predictions"))
        results_title.setFont(font)
        results_col.addWidget(results_title)
        results_col.addWidget(self.status)
        results_col.addWidget(self.results_box)
        results_col.addStretch(1)

        body = QHBoxLayout()
        body.addWidget(self.input_box, 3)
        body.addSpacing(12)
        body.addLayout(results_col, 2)

        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(self.run_label)
        layout.addLayout(body, 1)
        self._set_enabled(False)
        self.status.setText(self.tr("Choose a finished run to try it."))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if (
            watched is self.text_edit
            and event.type() == QEvent.Type.KeyPress
            and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
            and event.modifiers() & Qt.KeyboardModifier.ControlModifier
        ):
            self.predict_text()
            return True
        return super().eventFilter(watched, event)

    # -- run --------------------------------------------------------------------
    def set_run(self, run_dir: str | None) -> None:
        """Use this run's model (None: no run)."""
        self._request += 1  # drop answers for the previous run
        self.run_dir = str(run_dir) if run_dir else None
        self.current_input = None
        self.predictions = []
        self.error = ""
        self._show_predictions([])
        self.drop_area.clear()
        self.drop_area.setText(self.tr("Drop an image here\nor choose one"))
        if not self.run_dir:
            self.record = None
            self.run_label.clear()
            self._set_enabled(False)
            self.status.setText(self.tr("Choose a finished run to try it."))
            return
        folder = RunDir(self.run_dir)
        try:
            self.record = folder.read_record()
        except UsageError as exc:  # a damaged run.json: say which file, and why
            self.record = None
            self.run_label.setText(folder.path.name)
            self._set_enabled(False)
            self.status.setText(self.tr("Cannot read {problem}").format(problem=str(exc)))
            return
        self.kind = input_kind(self.record.task)
        self.input_stack.setCurrentIndex(0 if self.kind == "image" else 1)
        self.choose_button.setVisible(self.kind == "image")
        self.run_label.setText(
            self.tr("{name} · {task} · {count} labels").format(
                name=self.record.title, task=self.record.task or "?", count=len(self.record.label_names)
            )
        )
        has_model = (Path(self.run_dir) / "model").is_dir()
        self._set_enabled(has_model)
        self.sample_button.setToolTip(self._sample_tip)
        self.sample_button.setEnabled(has_model and bool(self._eval_examples()))
        if has_model:
            hint = self.tr("Drop or choose an image.") if self.kind == "image" else self.tr("Type a text and press Predict.")
            self.status.setText(hint)
        else:
            self.status.setText(self.tr("This run has no trained model (it did not complete)."))

    def _set_enabled(self, enabled: bool) -> None:
        for widget in (self.input_stack, self.top_k, self.sample_button, self.choose_button):
            widget.setEnabled(enabled)

    # -- input -------------------------------------------------------------------
    def choose_image(self) -> None:
        patterns = " ".join(f"*{s}" for s in IMAGE_SUFFIXES)
        path, _ = QFileDialog.getOpenFileName(
            self, self.tr("Choose an Image"), "", self.tr("Images ({patterns})").format(patterns=patterns)
        )
        if path:
            self.predict_image(path)

    def predict_image(self, path: str, true_label: str | None = None) -> None:
        reader = QImageReader(path)
        reader.setAutoTransform(True)
        size = reader.size()
        if size.isValid():
            reader.setScaledSize(size.scaled(PREVIEW_SIZE, PREVIEW_SIZE, Qt.AspectRatioMode.KeepAspectRatio))
        image = reader.read()
        if image.isNull():
            self.drop_area.setText(self.tr("Cannot read this image:\n{path}").format(path=path))
        else:
            self.drop_area.setPixmap(QPixmap.fromImage(image))
        self.drop_area.setToolTip(path)
        self.submit(path, true_label)

    def predict_text(self) -> None:
        text = self.text_edit.toPlainText().strip()
        if text:
            self.submit(text)

    def predict_current(self) -> None:
        if self.current_input is not None:
            self.submit(self.current_input, self._true_label)

    def _eval_examples(self) -> list[EvalExample]:
        if not self.run_dir:
            return []
        try:
            evaluation = RunDir(self.run_dir).read_eval()
        except UsageError as exc:  # the results view says more; here the button only explains itself
            self.sample_button.setToolTip(self.tr("Cannot read {problem}").format(problem=str(exc)))
            return []
        report = evaluation.primary if evaluation is not None else None
        if report is None:
            return []
        examples = list(report.misclassified) + list(report.correct_examples)
        if self.kind == "image":
            examples = [e for e in examples if Path(e.example).is_file()]
        return examples

    def try_random_example(self) -> None:
        examples = self._eval_examples()
        if not examples:
            return
        example = random.choice(examples)
        text = example.example
        truth = example.true or None
        if self.kind == "image":
            self.predict_image(text, truth)
        else:
            self.text_edit.setPlainText(text)
            self.submit(text, truth)

    def submit(self, item: str, true_label: str | None = None) -> int:
        """Predict ``item`` off the GUI thread; returns the request id."""
        if not self.run_dir:
            return -1
        self._true_label = true_label
        self.current_input = item
        self._request += 1
        self.error = ""
        self.status.setText(self.tr("Predicting…"))
        self._pool.start(_PredictJob(self._request, self.run_dir, item, self.top_k.value(), self._signals))
        return self._request

    def busy(self) -> bool:
        return self._pool.activeThreadCount() > 0

    # -- output ---------------------------------------------------------------------
    def _done(self, request_id: int, predictions: list) -> None:
        if request_id != self._request:
            return
        self.predictions = predictions
        self.status.clear()
        self._show_predictions(predictions)
        self.predicted.emit(predictions)

    def _failed(self, request_id: int, message: str, details: str) -> None:
        if request_id != self._request:
            return
        self.error = message
        self.predictions = []
        self._show_predictions([])
        self.status.setText(self.tr("Prediction failed: {error}").format(error=message))
        self.status.setToolTip(details)
        self.failed.emit(message)

    def _show_predictions(self, predictions: list) -> None:
        while self.results_grid.count():
            widget = self.results_grid.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()
        row = 0
        if self._true_label:
            truth = QLabel(self.tr("True label: {label}").format(label=self._true_label))
            truth.setProperty("role", "muted")
            self.results_grid.addWidget(truth, row, 0, 1, 3)
            row += 1
        for rank, prediction in enumerate(predictions):
            label = QLabel(str(prediction["label"]))
            label.setObjectName("predictionLabel")
            probability = float(prediction["probability"])
            bar = QProgressBar()
            bar.setRange(0, 1000)
            bar.setValue(round(probability * 1000))
            bar.setTextVisible(False)
            bar.setFixedHeight(10)
            value = QLabel(f"{probability:.1%}")
            value.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if rank == 0:
                for widget in (label, value):
                    font = widget.font()
                    font.setBold(True)
                    widget.setFont(font)
            self.results_grid.addWidget(label, row, 0)
            self.results_grid.addWidget(bar, row, 1)
            self.results_grid.addWidget(value, row, 2)
            row += 1

    def shown_predictions(self) -> list[tuple[str, str]]:
        """(label, percentage) as displayed, top first."""
        out = []
        for row in range(self.results_grid.rowCount()):
            label = self.results_grid.itemAtPosition(row, 0)
            value = self.results_grid.itemAtPosition(row, 2)
            if label is not None and value is not None:
                out.append((label.widget().text(), value.widget().text()))
        return out

    # -- drag and drop ------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802
        if self.run_dir and self._dropped_input(event.mimeData()) is not None:
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        item = self._dropped_input(event.mimeData())
        if item is None:
            return
        event.acceptProposedAction()
        if self.kind == "image":
            self.predict_image(item)
        else:
            self.text_edit.setPlainText(item)
            self.submit(item)

    def _dropped_input(self, mime) -> str | None:
        if self.kind == "image":
            for url in mime.urls():
                path = url.toLocalFile()
                if path and path.lower().endswith(IMAGE_SUFFIXES):
                    return path
            return None
        if mime.hasText() and mime.text().strip():
            return mime.text().strip()
        for url in mime.urls():
            path = url.toLocalFile()
            if path.lower().endswith(".txt"):
                try:
                    return Path(path).read_text(encoding="utf-8-sig").strip() or None
                except (OSError, UnicodeDecodeError):
                    return None
        return None
