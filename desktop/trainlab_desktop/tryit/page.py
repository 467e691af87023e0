"""Try a trained run on your own input, of the kind its task declares.

The input widget comes from the task's ``InputSpec`` (``tryit_inputs``:
image, file, text or table row), never from its id; the answer is the
family's typed prediction (``tryit_outputs``: labels with scores, a set of
labels, a number).  "Random Validation Example" takes an example the run's
evaluation listed (``eval.json``: the classification and multi-label
examples, the regression's worst ones, another family's example rows that
name their input, ``ExampleRows.input_column``) that the task can take as
input: a file that is there, a text, a row written as comma-separated values.

Predictions run in a one-thread pool through ``trainlab.engine.scripting.predict``
(its typed ``PredictedInput``, and the warnings of its input check),
which imports torch there (never on the GUI thread) and keeps the run's
predictor loaded, so only the first prediction of a run pays for loading it.
One thread: the predictor is used by one caller at a time, and a burst of
requests cannot pile up threads; only the newest answer is shown.

A text-generation run, or a local model folder opened with "Chat with a
Model Folder…", shows a chat instead (``tryit.chat``): streamed answers,
multi-turn, and the comparison with the base model or another model.
"""

from __future__ import annotations

import random
import traceback
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from trainlab.api.descriptors import FAMILIES as BUILT_IN_FAMILIES
from trainlab.api.descriptors import InputSpec, TaskSpec
from trainlab.api.details import ExampleRows
from trainlab.api.errors import UsageError
from trainlab.api.predictions import Prediction
from trainlab.runfolder.eval_report import EvalRecord, LabelSetExample, RegressionExample
from trainlab.runfolder.index import RunDir
from trainlab.runfolder.records import RunRecord
from trainlab.viewmodel.results import recorded_declarations, task_spec
from trainlab_desktop.results.details import resolve_image
from trainlab_desktop.tryit.chat import ChatPanel
from trainlab_desktop.tryit.inputs import DropArea, RowEntry, TextEntry, accepts_file, input_suffixes, page, row_columns
from trainlab_desktop.tryit.outputs import PredictionView, number_text, prediction_rows

# The family whose runs (and any local model folder) try-it shows as a chat
CHAT_FAMILY = "text-generation"
# The value units of a regression run, where its parameters or its report name them.
UNIT_KEYS = ("target_units", "units", "unit")


class _PredictSignals(QObject):
    done = Signal(int, object, object, list)  # request id, its Prediction, that prediction's JSON, warnings
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
            from trainlab.engine.scripting import predict  # imports torch here, off the GUI thread

            warnings: list[str] = []
            answers = predict(self.run_dir, [self.item], self.top_k, on_warning=warnings.append)
            answer = answers[0]
            if answer.error:  # this input could not be used (an unreadable image)
                self._emit(self.signals.failed, self.request_id, answer.error, "")
                return
        except Exception as exc:  # noqa: BLE001 - shown in the panel, never fatal
            message = str(exc) if exc.__class__.__name__ in ("UsageError", "DataError") else f"{type(exc).__name__}: {exc}"
            self._emit(self.signals.failed, self.request_id, message, traceback.format_exc())
            return
        body = answer.to_json().get("prediction") or {}
        self._emit(self.signals.done, self.request_id, answer.prediction, body, warnings)

    @staticmethod
    def _emit(signal, *args) -> None:
        try:
            signal.emit(*args)
        except RuntimeError:  # the panel went away meanwhile
            pass


class TryItPanel(QWidget):
    """Give a run's model one input of its declared kind and see its prediction."""

    # the latest input's prediction as rows: [{"label", "probability"}] best
    # first (multi-label: every label, with "chosen"), or [{"value"}]
    predicted = Signal(list)
    failed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("TryItPanel")
        self.setAcceptDrops(True)
        self.run_dir: str | None = None
        self.record: RunRecord | None = None
        self.spec: TaskSpec | None = None
        self.input_spec = InputSpec()
        self.family = "classification"
        self.units = ""
        self.current_input: str | None = None
        self.prediction: Prediction | None = None
        self.predictions: list[dict[str, Any]] = []
        self.error = ""
        self._truth = ""  # what the evaluation says of an example tried from it
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

        # one page per input kind; set_run shows the run's
        self.drop_area = DropArea()
        self.text_edit = TextEntry()
        self.text_edit.entered.connect(self.predict_entered)
        self.row_entry = RowEntry()
        self.row_entry.entered.connect(self.predict_entered)
        self.input_stack = QStackedWidget()
        self._pages = {
            "file": self.input_stack.addWidget(page(self.drop_area)),
            "text": self.input_stack.addWidget(page(self.text_edit)),
            "row": self.input_stack.addWidget(page(self.row_entry)),
        }
        self._pages["image"] = self._pages["file"]
        self.predict_button = QPushButton(self.tr("Predict"))
        self.predict_button.setDefault(True)
        self.predict_button.clicked.connect(self.predict_entered)

        self.choose_button = QPushButton(self.tr("Choose Image…"))
        self.choose_button.clicked.connect(self.choose_file)
        self.sample_button = QPushButton(self.tr("Random Validation Example"))
        self._sample_tip = self.tr("Try an example from this run's evaluation and compare with its true label")
        self.sample_button.setToolTip(self._sample_tip)
        self.sample_button.clicked.connect(self.try_random_example)
        self.top_k = QSpinBox()
        self.top_k.setRange(1, 20)
        self.top_k.setValue(5)
        self.top_k.setToolTip(self.tr("How many of the most likely labels to show"))
        self.top_k.valueChanged.connect(lambda _: self.predict_current())
        self.top_k_label = QLabel(self.tr("Top:"))
        options = QHBoxLayout()
        options.addWidget(self.choose_button)
        options.addWidget(self.sample_button)
        options.addStretch(1)
        options.addWidget(self.top_k_label)
        options.addWidget(self.top_k)
        options.addWidget(self.predict_button)

        self.status = QLabel()
        self.status.setObjectName("tryStatus")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.output = PredictionView()

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
        results_col.addWidget(self.output)
        results_col.addStretch(1)

        self.predict_page = QWidget()
        body = QHBoxLayout(self.predict_page)
        body.setContentsMargins(0, 0, 0, 0)
        body.addWidget(self.input_box, 3)
        body.addSpacing(12)
        body.addLayout(results_col, 2)

        # text-generation runs and model folders: a chat instead of one prediction
        self.chat = ChatPanel()
        self.chat_folder_button = QPushButton(self.tr("Chat with a Model Folder…"))
        self.chat_folder_button.setToolTip(self.tr("Chat with a local language model folder (one with a chat template), without a run"))
        self.chat_folder_button.clicked.connect(self.choose_model_folder)
        self.pages = QStackedWidget()
        self.pages.addWidget(self.predict_page)
        self.pages.addWidget(self.chat)

        heading = QHBoxLayout()
        heading.addWidget(self.title)
        heading.addStretch(1)
        heading.addWidget(self.chat_folder_button)
        layout = QVBoxLayout(self)
        layout.addLayout(heading)
        layout.addWidget(self.run_label)
        layout.addWidget(self.pages, 1)
        self._set_enabled(False)
        self.status.setText(self.tr("Choose a finished run to try it."))

    @property
    def kind(self) -> str:
        """What the run's task takes: image, file, text or row (``InputSpec.kind``)."""
        return self.input_spec.kind

    # -- run --------------------------------------------------------------------
    def is_chat(self) -> bool:
        """Whether the chat shows (a text-generation run, or a model folder)."""
        return self.pages.currentWidget() is self.chat

    def _show_chat(self, source: str | None) -> None:
        self.pages.setCurrentWidget(self.chat if source else self.predict_page)
        self.chat.set_source(source)

    def choose_model_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, self.tr("Choose a Language Model Folder"))
        if path:
            self.open_model_folder(path)

    def shutdown(self) -> None:
        """The window closes: end a chat's answers (generation stops at its next token)."""
        self.chat.stop()

    def open_model_folder(self, path: str) -> None:
        """Chat with the model in ``path`` (a local folder with its tokenizer), without a run."""
        self.set_run(None)
        self.run_label.setText(self.tr("Model folder: {path}").format(path=path))
        self._show_chat(path)
        self.status.setText(self.chat.error)

    def set_run(self, run_dir: str | None) -> None:
        """Use this run's model (None: no run)."""
        self._request += 1  # drop answers for the previous run
        self._show_chat(None)
        self.run_dir = str(run_dir) if run_dir else None
        self.current_input = None
        self.prediction = None
        self.predictions = []
        self.error = ""
        self._truth = ""
        self.output.clear()
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
        self.spec = task_spec(self.record.task)
        self.input_spec = self.spec.input if self.spec is not None else InputSpec()
        evaluation = self._evaluation()
        report = evaluation.primary if evaluation is not None else None
        recorded_family, _ = recorded_declarations(self.record)
        self.family = (
            (report.family if report is not None else "")
            or recorded_family
            or (self.spec.family if self.spec is not None else "classification")
        )
        self.units = self._units(report)
        self._configure_input()
        parts = [self.record.title, self.record.task or "?"]
        if self.record.label_names:
            parts.append(self.tr("{count} labels").format(count=len(self.record.label_names)))
        self.run_label.setText(" · ".join(parts))
        has_model = (Path(self.run_dir) / "model").is_dir()
        self._set_enabled(has_model and self.spec is not None)
        self.sample_button.setToolTip(self._sample_tip)
        examples = self._eval_examples(evaluation)
        self.sample_button.setEnabled(has_model and self.spec is not None and bool(examples))
        if has_model and evaluation is not None and not examples:
            self.sample_button.setToolTip(self.tr("This run's evaluation lists no example this task can take as input"))
        if has_model and self.family == CHAT_FAMILY:
            self._show_chat(self.run_dir)
        if not has_model:
            self.status.setText(self.tr("This run has no trained model (it did not complete)."))
        elif self.spec is None:
            self.status.setText(self.tr("The task {task} of this run is not installed here.").format(task=self.record.task))
        else:
            self.status.setText(self._hint())

    def _configure_input(self) -> None:
        spec = self.input_spec
        what = spec.title
        self.input_stack.setCurrentIndex(self._pages.get(spec.kind, self._pages["text"]))
        files = spec.kind in ("image", "file")
        self.choose_button.setVisible(files)
        self.choose_button.setText(self.tr("Choose Image…") if spec.kind == "image" else self.tr("Choose File…"))
        self.predict_button.setVisible(not files)
        labels = self.spec.has_classes() if self.spec is not None else self.family != "regression"  # top-k: classes only
        self.top_k.setVisible(labels)
        self.top_k_label.setVisible(labels)
        if spec.kind == "image":
            self.drop_area.clear()
            self.drop_area.setText(self.tr("Drop {what} here\nor choose one").format(what=what or self.tr("an image")))
        elif spec.kind == "file":
            self.drop_area.clear()
            self.drop_area.setText(self.tr("Drop {what} here\nor choose one").format(what=what or self._file_words()))
        elif spec.kind == "row":
            self.row_entry.configure(spec, what or self.tr("comma-separated values"))
        else:
            self.text_edit.setPlaceholderText(self.tr("Type or paste {what}").format(what=what or self.tr("a text")))
        tip = {"text": self.tr("Predict for the text (Ctrl+Enter)"), "row": self.tr("Predict for the row (Enter)")}
        self.predict_button.setToolTip(tip.get(spec.kind, ""))

    def _file_words(self) -> str:
        suffixes = input_suffixes(self.input_spec)
        return self.tr("a file ({suffixes})").format(suffixes=", ".join(suffixes)) if suffixes else self.tr("a file")

    def _hint(self) -> str:
        what = self.input_spec.title
        kind = self.input_spec.kind
        if kind == "image":
            return self.tr("Drop or choose {what}.").format(what=what or self.tr("an image"))
        if kind == "file":
            return self.tr("Drop or choose {what}.").format(what=what or self._file_words())
        if kind == "row":
            return self.tr("Enter {what} and press Predict.").format(what=what or self.tr("a row of comma-separated values"))
        return self.tr("Type {what} and press Predict.").format(what=what or self.tr("a text"))

    def _units(self, report) -> str:
        sources = [dict(self.record.parameters) if self.record else {}, dict(report.target) if report is not None else {}]
        for source in sources:
            for key in UNIT_KEYS:
                if isinstance(source.get(key), str) and source[key].strip():
                    return source[key].strip()
        return ""

    def _set_enabled(self, enabled: bool) -> None:
        for widget in (self.input_stack, self.top_k, self.sample_button, self.choose_button, self.predict_button):
            widget.setEnabled(enabled)

    # -- input -------------------------------------------------------------------
    def choose_file(self) -> None:
        patterns = " ".join(f"*{s}" for s in input_suffixes(self.input_spec)) or "*"
        if self.kind == "image":
            title, kind = self.tr("Choose an Image"), self.tr("Images ({patterns})")
        else:
            title, kind = self.tr("Choose a File"), self.tr("Files ({patterns})")
        path, _ = QFileDialog.getOpenFileName(self, title, "", kind.format(patterns=patterns))
        if path:
            self.predict_file(path)

    def predict_file(self, path: str, truth: str = "") -> None:
        """Show a chosen, dropped or example file in the well and predict it."""
        if self.kind == "image":
            if not self.drop_area.show_image(path):
                self.drop_area.setText(self.tr("Cannot read this image:\n{path}").format(path=path))
        else:
            self.drop_area.setText(Path(path).name)
            self.drop_area.setToolTip(path)
        self.submit(path, truth)

    def predict_image(self, path: str, truth: str = "") -> None:
        self.predict_file(path, truth)

    def predict_entered(self) -> None:
        """Predict what was typed: the text, or the row."""
        item = self.row_entry.value() if self.kind == "row" else self.text_edit.toPlainText().strip()
        if item:
            self.submit(item)

    def predict_current(self) -> None:
        if self.current_input is not None:
            self.submit(self.current_input, self._truth)

    def _evaluation(self) -> EvalRecord | None:
        try:
            return RunDir(self.run_dir).read_eval() if self.run_dir else None
        except UsageError as exc:  # the results view says more; here the button only explains itself
            self.sample_button.setToolTip(self.tr("Cannot read {problem}").format(problem=str(exc)))
            return None

    def _eval_examples(self, evaluation: EvalRecord | None = None) -> list[tuple[str, str]]:
        """(input, what the evaluation says of it) for each listed example this task can take."""
        evaluation = evaluation if evaluation is not None else self._evaluation()
        report = evaluation.primary if evaluation is not None else None
        if report is None:
            return []
        if self.family == "regression":
            examples = list(report.worst_examples)
        elif self.family in BUILT_IN_FAMILIES:
            examples = list(report.misclassified) + list(report.correct_examples)
        else:  # another family: the example rows of its details that name their input
            declared = self.spec.detail_specs() if self.spec is not None else ()
            pairs = [p for d in report.view_details(declared) if isinstance(d, ExampleRows) for p in d.example_inputs()]
            if self.kind in ("image", "file"):  # a path in eval.json may be relative to the run folder
                pairs = [(resolve_image(item, self.run_dir or ""), truth) for item, truth in pairs]
            return [(item, self.tr("True: {truth}").format(truth=truth) if truth else "") for item, truth in pairs
                    if self._usable(item)]
        return [(e.example, self._truth_of(e)) for e in examples if self._usable(e.example)]

    def _truth_of(self, example) -> str:
        if isinstance(example, RegressionExample):
            return self.tr("True value: {value}").format(value=number_text(example.true, self.units))
        if isinstance(example, LabelSetExample):
            return self.tr("True labels: {labels}").format(labels=", ".join(example.true) or self.tr("none"))
        return self.tr("True label: {label}").format(label=example.true) if example.true else ""

    def _usable(self, example: str) -> bool:
        kind = self.kind
        if kind in ("image", "file"):
            return accepts_file(self.input_spec, example) and Path(example).is_file()
        if kind == "row":  # a row task's examples may be descriptions ("row 17"), not rows
            columns = row_columns(self.input_spec)
            fields = example.count(",") + 1
            return fields == len(columns) if columns else fields > 1
        return bool(example.strip())

    def try_random_example(self) -> None:
        examples = self._eval_examples()
        if not examples:
            return
        item, truth = random.choice(examples)
        if self.kind in ("image", "file"):
            self.predict_file(item, truth)
            return
        if self.kind == "row":
            self.row_entry.set_value(item)
        else:
            self.text_edit.setPlainText(item)
        self.submit(item, truth)

    def submit(self, item: str, truth: str = "") -> int:
        """Predict ``item`` off the GUI thread; returns the request id.

        ``truth``: what the evaluation says of it, shown above the answer."""
        if not self.run_dir:
            return -1
        self._truth = truth or ""
        self.current_input = item
        self._request += 1
        self.error = ""
        self.status.setText(self.tr("Predicting…"))
        self._pool.start(_PredictJob(self._request, self.run_dir, item, self.top_k.value(), self._signals))
        return self._request

    def busy(self) -> bool:
        return self._pool.activeThreadCount() > 0

    # -- output ---------------------------------------------------------------------
    def _done(self, request_id: int, prediction: Prediction | None, body: dict, warnings: list) -> None:
        if request_id != self._request:
            return
        self.prediction = prediction
        self.predictions = prediction_rows(prediction, body)
        self.status.setText("\n".join(warnings))  # a file name given to a task that takes texts, ...
        self.output.show_prediction(prediction, body, self._truth, self.top_k.value(), self.units)
        self.predicted.emit(self.predictions)

    def _failed(self, request_id: int, message: str, details: str) -> None:
        if request_id != self._request:
            return
        self.error = message
        self.prediction = None
        self.predictions = []
        self.output.clear()
        self.status.setText(self.tr("Prediction failed: {error}").format(error=message))
        self.status.setToolTip(details)
        self.failed.emit(message)

    def shown_predictions(self) -> list[tuple[str, str]]:
        """(label, percentage) as displayed, top first."""
        return self.output.shown_scores()

    def shown_value(self) -> str:
        """A predicted number as displayed, with its units ('' for labels)."""
        return self.output.shown_value()

    # -- drag and drop ------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802
        if self.run_dir and self._dropped_input(event.mimeData()) is not None:
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        item = self._dropped_input(event.mimeData())
        if item is None:
            return
        event.acceptProposedAction()
        if self.kind in ("image", "file"):
            self.predict_file(item)
            return
        if self.kind == "row":
            self.row_entry.set_value(item)
        else:
            self.text_edit.setPlainText(item)
        self.submit(item)

    def _dropped_input(self, mime) -> str | None:
        if self.kind in ("image", "file"):
            for url in mime.urls():
                path = url.toLocalFile()
                if accepts_file(self.input_spec, path) and Path(path).is_file():
                    return path
            return None
        if mime.hasText() and mime.text().strip():
            text = mime.text().strip()
            return text.splitlines()[0].strip() if self.kind == "row" else text
        for url in mime.urls():
            path = url.toLocalFile()
            if path.lower().endswith(".txt"):
                try:
                    return Path(path).read_text(encoding="utf-8-sig").strip() or None
                except (OSError, UnicodeDecodeError):
                    return None
        return None
