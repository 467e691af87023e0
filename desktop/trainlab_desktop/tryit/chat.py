"""Try-it as a chat, for text-generation runs and local model folders.

The answer streams as the model writes it: the model's predictor
(``trainlab.engine.chat``, shared with ``trainlab chat``) runs ``generate``
in a thread of its own, read by a ``BackgroundCall`` thread that reports the
answer so far through its ``progress`` signal, at most every
``UPDATE_SECONDS``: the GUI thread only draws.  Stop sets the flag the
predictor's stopping criterion reads, so the answer ends at the next token.

The conversation is kept per column and given to the model whole (the system
prompt, then every turn) through its chat template; Clear forgets it.
Compare adds a second column for the run's base model (its ``model``
parameter, or the base a LoRA run names) or any other run or model folder:
each prompt goes to both, streaming side by side when the memory check
finds room for both models, else one after the other, each loaded only
while it answers, as the panel says.
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)
from trainlab.api.errors import UsageError
from trainlab.engine.chat import (
    ChatModel,
    ChatSettings,
    ChatSource,
    base_source,
    chat_source,
    compare_plan,
    load_chat_model,
    memory_size,
    resolve_chat_device,
)

from trainlab_desktop.common import background

UPDATE_SECONDS = 0.05  # the answer so far is drawn at most this often


class ChatColumn(QWidget):
    """One model's side of the chat: its name and its conversation."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel()
        self.title.setProperty("role", "muted")
        self.title.setWordWrap(True)
        self.view = QTextBrowser()
        self.view.setOpenLinks(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.view, 1)


class ChatPanel(QWidget):
    """Chat with one model, or compare two on the same prompts."""

    answered = Signal()  # a turn ended (every column answered, stopped or failed)
    updated = Signal(int)  # a column's view was redrawn while it answers

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ChatPanel")
        self.sources: list[ChatSource] = []
        self.histories: list[list[dict[str, str]]] = []
        self.partial: list[str] = []  # the answer being written, per column
        self.last_prompts: list[str] = []  # what each model was given last (its chat template's text)
        self.together = True
        self.error = ""
        self.updates = 0  # redraws while answering (streaming: several per answer)
        self._models: dict[ChatSource, ChatModel] = {}
        self._models_lock = threading.Lock()
        self._turn = 0
        self._pending = 0
        self._stop = threading.Event()
        self._plan_request = 0
        self._planning = False  # the memory check of a comparison is running

        self.model_label = QLabel()
        self.model_label.setWordWrap(True)
        self.compare_base_button = QPushButton(self.tr("Compare with Base Model"))
        self.compare_base_button.setToolTip(self.tr("Ask the model this run was fine-tuned from the same prompts, side by side"))
        self.compare_base_button.clicked.connect(self.compare_with_base)
        self.compare_other_button = QPushButton(self.tr("Compare with…"))
        self.compare_other_button.setToolTip(self.tr("Ask another run or model folder the same prompts, side by side"))
        self.compare_other_button.clicked.connect(self.choose_comparison)
        self.single_button = QPushButton(self.tr("Single Model"))
        self.single_button.clicked.connect(self.end_comparison)
        header = QHBoxLayout()
        header.addWidget(self.model_label, 1)
        header.addWidget(self.compare_base_button)
        header.addWidget(self.compare_other_button)
        header.addWidget(self.single_button)

        self.system_edit = QLineEdit()
        self.system_edit.setPlaceholderText(self.tr("System prompt (optional)"))
        self.temperature = QDoubleSpinBox()
        self.temperature.setRange(0.0, 5.0)
        self.temperature.setSingleStep(0.1)
        self.temperature.setDecimals(2)
        self.temperature.setToolTip(self.tr("Sampling temperature; 0 always takes the likeliest token"))
        self.top_p = QDoubleSpinBox()
        self.top_p.setRange(0.01, 1.0)
        self.top_p.setSingleStep(0.05)
        self.top_p.setDecimals(2)
        self.top_p.setValue(1.0)
        self.top_p.setToolTip(self.tr("Nucleus sampling: sample among the likeliest tokens that make up this share (temperature above 0)"))
        self.max_new_tokens = QSpinBox()
        self.max_new_tokens.setRange(1, 32768)
        self.max_new_tokens.setValue(256)
        self.max_new_tokens.setToolTip(self.tr("Longest answer, in tokens"))
        settings = QHBoxLayout()
        settings.addWidget(QLabel(self.tr("System:")))
        settings.addWidget(self.system_edit, 1)
        settings.addWidget(QLabel(self.tr("Temperature:")))
        settings.addWidget(self.temperature)
        settings.addWidget(QLabel(self.tr("Top-p:")))
        settings.addWidget(self.top_p)
        settings.addWidget(QLabel(self.tr("Max new tokens:")))
        settings.addWidget(self.max_new_tokens)

        self.columns = [ChatColumn(), ChatColumn()]
        transcripts = QHBoxLayout()
        for column in self.columns:
            transcripts.addWidget(column, 1)
        self.columns[1].hide()

        self.status = QLabel()
        self.status.setObjectName("chatStatus")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.prompt_edit = QPlainTextEdit()
        self.prompt_edit.setPlaceholderText(self.tr("Type a message (Ctrl+Enter sends)"))
        self.prompt_edit.setMaximumHeight(90)
        self.send_button = QPushButton(self.tr("Send"))
        self.send_button.setDefault(True)
        self.send_button.setShortcut("Ctrl+Return")
        self.send_button.clicked.connect(self.send_entered)
        self.stop_button = QPushButton(self.tr("Stop"))
        self.stop_button.setToolTip(self.tr("End the answer now"))
        self.stop_button.clicked.connect(self.stop)
        self.clear_button = QPushButton(self.tr("Clear Conversation"))
        self.clear_button.clicked.connect(self.clear)
        buttons = QVBoxLayout()
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.clear_button)
        entry = QHBoxLayout()
        entry.addWidget(self.prompt_edit, 1)
        entry.addLayout(buttons)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(header)
        layout.addLayout(settings)
        layout.addLayout(transcripts, 1)
        layout.addWidget(self.status)
        layout.addLayout(entry)
        self._sync_buttons()

    # -- what to chat with -----------------------------------------------------------
    def set_source(self, given: str | None) -> None:
        """Chat with the run or model folder ``given`` (None: nothing)."""
        self.stop()
        self._turn += 1  # answers still coming belong to the previous model
        self._plan_request += 1
        self.sources = []
        self.error = ""
        if given:
            try:
                self.sources = [chat_source(given)]
            except UsageError as exc:
                self.error = str(exc)
        self._reset_columns()
        self.status.setText(self.error)
        self._release_unused()
        self._sync_buttons()

    def base(self) -> ChatSource | None:
        return base_source(self.sources[0]) if self.sources else None

    def compare_with_base(self) -> None:
        base = self.base()
        if base is not None:
            self.compare_with(base)

    def choose_comparison(self) -> None:
        path = QFileDialog.getExistingDirectory(self, self.tr("Choose a Run or Model Folder to Compare With"))
        if path:
            self.compare_with(path)

    def compare_with(self, given: str | ChatSource) -> None:
        """Answer every prompt with the model in ``given`` (a run or model folder) too, side by side."""
        if not self.sources or self.busy():
            return
        try:
            other = given if isinstance(given, ChatSource) else chat_source(given, template_from=self.sources[0])
        except UsageError as exc:
            self.status.setText(str(exc))
            return
        self.sources = [self.sources[0], other]
        self._reset_columns()
        self._plan_request += 1
        self._planning = True
        self.status.setText(self.tr("Checking the memory both models need…"))
        first = self.sources[0]
        loaded = first in self._models
        self._start(lambda: compare_plan(first, other, resolve_chat_device("auto"), a_loaded=loaded), self._planned, self._plan_failed,
                    tag=self._plan_request)
        self._sync_buttons()

    def end_comparison(self) -> None:
        if len(self.sources) == 2 and not self.busy():
            self.sources = self.sources[:1]
            self._plan_request += 1
            self._reset_columns()
            self.status.clear()
            self._release_unused()
            self._sync_buttons()

    def _planned(self, tag: int, plan: Any) -> None:
        if tag != self._plan_request or len(self.sources) != 2:
            return
        self._planning = False
        self.together = bool(plan.together)
        need, free = memory_size(sum(plan.needs)), memory_size(plan.free)
        if self.together:
            self.status.setText(self.tr("Both models answer at once, side by side (about {need} of weights; {free} free).").format(need=need, free=free))
        else:
            self.status.setText(
                self.tr("Both models do not fit in memory together (about {need} of weights; {free} free): they answer one after the other.").format(
                    need=need, free=free
                )
            )
        self._sync_buttons()

    def _plan_failed(self, tag: int, message: str, details: str) -> None:
        if tag != self._plan_request:
            return
        self._planning = False
        self.together = False
        self.status.setText(self.tr("Cannot estimate the memory of both models ({error}): they answer one after the other.").format(error=message))
        self.status.setToolTip(details)
        self._sync_buttons()

    def _reset_columns(self) -> None:
        self._planning = False
        self.histories = [[] for _ in self.sources]
        self.partial = ["" for _ in self.sources]
        self.last_prompts = ["" for _ in self.sources]
        self.together = len(self.sources) < 2
        for i, column in enumerate(self.columns):
            column.setVisible(i < max(1, len(self.sources)))
            column.title.setText(self._title(i) if i < len(self.sources) else "")
            column.view.clear()
        self.model_label.setText(self.sources[0].describe() if self.sources else "")

    def _title(self, i: int) -> str:
        source = self.sources[i]
        if len(self.sources) == 1:
            return source.label
        base = self.base()
        if i == 1 and base is not None and base.folder == source.folder:
            return self.tr("Base model: {name}").format(name=source.label)
        return source.label

    # -- the conversation ----------------------------------------------------------
    def settings(self) -> ChatSettings:
        return ChatSettings(
            system=self.system_edit.text(),
            temperature=self.temperature.value(),
            top_p=self.top_p.value(),
            max_new_tokens=self.max_new_tokens.value(),
        )

    def send_entered(self) -> None:
        text = self.prompt_edit.toPlainText().strip()
        if text and self.send(text):
            self.prompt_edit.clear()

    def send(self, text: str) -> bool:
        """Give ``text`` to the model (both, comparing) as the next user turn; False when it cannot go now."""
        if not self.sources or self.busy() or not self.ready():
            return False
        self._turn += 1
        self._stop = threading.Event()
        self.error = ""
        settings = self.settings()
        for i, history in enumerate(self.histories):
            history.append({"role": "user", "content": text})
            self.partial[i] = ""
            self._draw(i)
        if self.together:
            groups = [[i] for i in range(len(self.sources))]
        else:
            groups = [list(range(len(self.sources)))]
        self._pending = len(groups)
        if len(self.sources) == 2 and not self.together:
            self.status.setText(self.tr("The models answer one after the other: both do not fit in memory together."))
        else:
            self.status.setText(self.tr("Answering…"))
        for group in groups:
            jobs = [(i, self.sources[i], settings.messages(self.histories[i])) for i in group]
            self._start(self._answer_job(jobs, settings, self._stop, release=not self.together), self._answered, self._answer_failed,
                        tag=self._turn, progress=self._streamed)
        self._sync_buttons()
        return True

    def _answer_job(self, jobs: list[tuple[int, ChatSource, list[dict[str, str]]]], settings: ChatSettings, stop: threading.Event,
                    release: bool) -> Callable[[Callable[[Any], None]], list[tuple[int, str]]]:
        """The work of one thread: each job's answer in turn, reported as it grows."""

        def work(report: Callable[[Any], None]) -> list[tuple[int, str]]:
            answers: list[tuple[int, str]] = []
            for column, source, messages in jobs:
                if stop.is_set():
                    break
                if release:  # one after the other: only this model in memory
                    self._release(keep=source)
                model = self._model(source, lambda column=column: report(("loading", column, "")))
                report(("prompt", column, model.prompt(messages)))
                text, last = "", 0.0
                try:
                    for piece in model.stream(messages, settings, stop.is_set):
                        text += piece
                        now = time.monotonic()
                        if now - last >= UPDATE_SECONDS:
                            last = now
                            report(("text", column, text))
                finally:
                    if release:
                        self._release(keep=None)
                report(("text", column, text))
                answers.append((column, text.strip()))
            return answers

        return work

    def _model(self, source: ChatSource, loading: Callable[[], None]) -> ChatModel:
        with self._models_lock:
            model = self._models.get(source)
            if model is None:
                loading()
                model = load_chat_model(source)
                self._models[source] = model
            return model

    def _release(self, keep: ChatSource | None) -> None:
        with self._models_lock:
            for source in [s for s in self._models if s != keep]:
                self._models.pop(source).close()

    def _release_unused(self) -> None:
        if self.busy():
            return
        with self._models_lock:
            for source in [s for s in self._models if s not in self.sources]:
                self._models.pop(source).close()

    def _streamed(self, tag: int, value: Any) -> None:
        if tag != self._turn:
            return
        what, column, text = value
        if column >= len(self.partial):
            return
        if what == "loading":
            self.columns[column].title.setText(self.tr("{name} (loading…)").format(name=self._title(column)))
        elif what == "prompt":
            self.last_prompts[column] = text
            self.columns[column].title.setText(self._title(column))
        elif what == "text":
            self.partial[column] = text
            self.updates += 1
            self._draw(column)
            self.updated.emit(column)

    def _answered(self, tag: int, answers: list) -> None:
        if tag != self._turn:
            return
        for column, text in answers:
            if column < len(self.histories):
                self.histories[column].append({"role": "assistant", "content": text})
                self.partial[column] = ""
                self._draw(column)
        self._one_done()

    def _answer_failed(self, tag: int, message: str, details: str) -> None:
        if tag != self._turn:
            return
        self.error = message
        self.status.setText(self.tr("The model could not answer: {error}").format(error=message))
        self.status.setToolTip(details)
        # the unanswered turn goes: the next prompt follows the last answer
        for i, history in enumerate(self.histories):
            if history and history[-1]["role"] == "user":
                history.pop()
                self.partial[i] = ""
                self._draw(i)
        self._one_done()

    def _one_done(self) -> None:
        self._pending = max(0, self._pending - 1)
        if self._pending == 0:
            if not self.error:
                self.status.setText(self.tr("Stopped.") if self._stop.is_set() else "")
            self._sync_buttons()
            self.answered.emit()

    def stop(self) -> None:
        """End the answers being written (at their next token)."""
        self._stop.set()

    def clear(self) -> None:
        """Forget the conversation (an answer being written is stopped first)."""
        if self.busy():
            self.stop()
            self._turn += 1  # its end is not part of the new conversation
            self._pending = 0
        self._reset_columns_keep_plan()
        self.status.clear()
        self._sync_buttons()

    def _reset_columns_keep_plan(self) -> None:
        together, planning = self.together, self._planning
        self._reset_columns()
        self.together, self._planning = together, planning

    def busy(self) -> bool:
        return self._pending > 0

    def ready(self) -> bool:
        """A model to talk to, and for a comparison, its memory check done."""
        return bool(self.sources) and not self._planning

    def _draw(self, column: int) -> None:
        parts = []
        for message in self.histories[column]:
            who = {"user": self.tr("You"), "assistant": self.tr("Model")}.get(message["role"], message["role"])
            parts.append(f"<p><b>{html.escape(who)}:</b> {html.escape(message['content']).replace(chr(10), '<br>')}</p>")
        if self.histories[column] and self.histories[column][-1]["role"] == "user":
            parts.append(f"<p><b>{html.escape(self.tr('Model'))}:</b> {html.escape(self.partial[column]).replace(chr(10), '<br>')}▍</p>")
        view = self.columns[column].view
        view.setHtml("".join(parts))
        bar = view.verticalScrollBar()
        bar.setValue(bar.maximum())

    def shown_answers(self) -> list[str]:
        """Each column's latest answer as drawn (the one being written, or the last)."""
        out = []
        for i, history in enumerate(self.histories):
            if history and history[-1]["role"] == "user":
                out.append(self.partial[i])
            else:
                out.append(next((m["content"] for m in reversed(history) if m["role"] == "assistant"), ""))
        return out

    def _sync_buttons(self) -> None:
        busy = self.busy()
        has = bool(self.sources)
        self.send_button.setEnabled(has and not busy and not self._planning)
        self.stop_button.setEnabled(busy)
        self.clear_button.setEnabled(has)
        self.compare_base_button.setVisible(has and len(self.sources) == 1)
        self.compare_base_button.setEnabled(has and not busy and self.base() is not None)
        if has and self.base() is None:
            self.compare_base_button.setToolTip(self.tr("This model names no base model folder on this computer; use Compare with…"))
        self.compare_other_button.setVisible(has and len(self.sources) == 1)
        self.compare_other_button.setEnabled(has and not busy)
        self.single_button.setVisible(len(self.sources) == 2)
        self.single_button.setEnabled(not busy)
        self.prompt_edit.setEnabled(has)

    def _start(self, fn, on_done, on_failed, *, tag: Any, progress=None) -> None:
        # the call keeps itself alive until it has finished (``background``), then deletes itself
        background.start(fn, on_done, on_failed, on_progress=progress, tag=tag)

