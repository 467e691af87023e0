"""The memory estimate by the Start button: the figure, its breakdown, what helps, and the disk a LoRA run writes.

``EstimateView`` is the widget (a line, an "Estimate" link, the advice row,
the disk line); ``MemoryEstimates`` keeps the results per settings key
(``trainlab.viewmodel.estimate``) and runs the child that makes them, off the
GUI thread.  The Train page gives it the form's settings and tells it when
Start is pressed.

What Start does about it: with an estimate for the settings, nothing more
(its figure, and its advice when it does not fit, were by Start before the
press). Without one, the run starts at once and, once it has ended, the
static part (weights, gradients, optimizer states: the meta device, no
probe, no model on the GPU) is counted for the next Start, at a lower
priority (never beside the run: it took the GUI thread's turns on a
machine of few cores). Nobody asked for that count: while it runs the line
keeps what it said before the run, not "estimating", and shows the figure
once it comes (the sample's count, torch's imports at a lower priority
while the window loads the results, takes seconds). The activation probe would compete
with the run for its device and count the run's memory as its own, so it
runs only on request (the Estimate link), never during a run, and Start
ends one still running.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from trainlab.engine.memory import HEADROOM, format_size
from trainlab.viewmodel.estimate import CANCELLED as ESTIMATE_CANCELLED
from trainlab.viewmodel.estimate import (
    DiskNeed,
    EstimateResult,
    Remedy,
    current_ram,
    disk_need,
    estimate_in_child,
    outputs_of,
    remedies,
    result_from,
    settings_key,
)

log = logging.getLogger("trainlab.desktop")


@dataclass(frozen=True)
class EstimateSettings:
    """The run the form describes, as the estimate needs it."""

    task_id: str
    data: str
    explicit: dict[str, Any]
    remembered: dict[str, Any]
    values: dict[str, Any]  # every value, resolved
    schema: dict[str, Any]  # name -> Param
    summary: Any = None  # the data check's DataSummary (what a LoRA run writes), when it passed
    runs_folder: str = ""

    @property
    def key(self) -> str:
        return settings_key(self.task_id, self.data, self.values)

    def request(self) -> dict[str, Any]:
        return {"task": self.task_id, "data": self.data, "params": dict(self.explicit), "remembered": dict(self.remembered)}


class EstimateView(QWidget):
    """What the estimate says, next to Start."""

    estimateRequested = Signal()
    remedyChosen = Signal(str, str)  # parameter, value

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("estimate_view")
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 2, 0, 2)
        column.setSpacing(2)
        row = QHBoxLayout()
        self.line = QLabel(self)
        self.line.setObjectName("memory_estimate")
        self.line.setWordWrap(True)
        self.line.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        row.addWidget(self.line, 1)
        self.button = QPushButton(self.tr("Estimate"), self)
        self.button.setObjectName("estimate_button")
        self.button.setFlat(True)
        self.button.setStyleSheet("QPushButton { color: palette(link); text-decoration: underline; border: none; padding: 0 4px; }"
                                  "QPushButton:disabled { color: palette(placeholder-text); text-decoration: none; }")
        self.button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.button.setToolTip(self.tr("Estimate the memory this run needs: the weights, gradients and optimizer states "
                                       "are counted, the activations measured in two training steps in another process"))
        self.button.clicked.connect(self.estimateRequested)
        row.addWidget(self.button)
        column.addLayout(row)
        self.disk = QLabel(self)
        self.disk.setObjectName("disk_estimate")
        self.disk.setWordWrap(True)
        self.disk.hide()
        column.addWidget(self.disk)
        self.advice = QWidget(self)
        self.advice.setObjectName("estimate_advice")
        advice_column = QVBoxLayout(self.advice)
        advice_column.setContentsMargins(0, 0, 0, 0)
        self.advice_text = QLabel(self.advice)
        self.advice_text.setWordWrap(True)
        self.advice_text.setProperty("role", "warning")
        advice_column.addWidget(self.advice_text)
        self._remedy_row = QHBoxLayout()
        advice_column.addLayout(self._remedy_row)
        self.remedy_buttons: dict[str, QPushButton] = {}
        self.advice.hide()
        column.addWidget(self.advice)
        self.show_idle()

    # -- what it shows ---------------------------------------------------------------
    def _set_line(self, text: str, role: str = "", tip: str = "") -> None:
        self.line.setText(text)
        self.line.setToolTip(tip)
        self.line.setProperty("role", role)
        self.line.style().unpolish(self.line)
        self.line.style().polish(self.line)

    def show_idle(self) -> None:
        self._set_line(self.tr("Memory: not estimated for these settings yet"), "muted")
        self.show_advice(None, [])

    def show_running(self) -> None:
        self._set_line(self.tr("Memory: estimating\u2026"), "muted")

    def show_stale(self, result: EstimateResult) -> None:
        text = self.figure_text(result) if result.memory is not None else self.tr("No estimate")
        self._set_line(self.tr("%s (for other settings: estimate again)") % text, "muted", self.breakdown(result))
        self.show_advice(None, [])

    def show_result(self, result: EstimateResult, remedies: list[Remedy]) -> None:
        if result.memory is None:
            self._set_line(self.tr("No estimate: %s") % result.error, "muted")
            self.show_advice(None, [])
            return
        fits = result.fits
        self._set_line(self.tr("Memory: %s") % self.figure_text(result), "warning" if fits is False else "", self.breakdown(result))
        self.show_advice(result if fits is False else None, remedies)

    def figure_text(self, result: EstimateResult) -> str:
        m = result.memory
        assert m is not None
        where = self.tr("GPU memory") if m.kind == "gpu" else self.tr("free RAM")
        if not result.measured:
            return (self.tr("weights, gradients and optimizer need about %1 of your %2 %3; activations not measured")
                    .replace("%1", format_size(result.static_total)).replace("%2", format_size(m.capacity)).replace("%3", where))
        return (self.tr("needs about %1 of your %2 %3").replace("%1", format_size(m.total))
                .replace("%2", format_size(m.capacity)).replace("%3", where))

    def breakdown(self, result: EstimateResult) -> str:
        m = result.memory
        if m is None:
            return ""
        other = self.tr("CUDA context") if m.kind == "gpu" else self.tr("the process before the model")
        rows = [
            (self.tr("weights"), m.weights),
            (self.tr("gradients"), m.gradients),
            (self.tr("optimizer states"), m.optimizer),
        ]
        if result.measured:
            rows.append((self.tr("activations (micro-batch of %s)") % m.micro_batch, m.activations))
            rows.append((other, m.other))
        lines = [f"{name}: {format_size(value)}" for name, value in rows]
        lines.append(self.tr("total: %1 of %2 on %3 (10% kept free)").replace("%1", format_size(m.total if result.measured else result.static_total))
                     .replace("%2", format_size(m.capacity)).replace("%3", m.device))
        lines.append(self.tr("parameters: %1, trainable: %2").replace("%1", f"{m.parameters:,}").replace("%2", f"{m.trainable:,}"))
        if result.measured:
            how = m.probe.get("method", "") if isinstance(m.probe, dict) else ""
            cached = isinstance(m.probe, dict) and m.probe.get("cached")
            lines.append(self.tr("activations from a two-step probe (%1)%2").replace("%1", str(how))
                         .replace("%2", self.tr(", cached") if cached else ""))
        return "\n".join(lines)

    def show_advice(self, result: EstimateResult | None, remedies: list[Remedy]) -> None:
        for button in self.remedy_buttons.values():
            button.deleteLater()
        self.remedy_buttons = {}
        while self._remedy_row.count():
            self._remedy_row.takeAt(0)
        if result is None or result.memory is None:
            self.advice.hide()
            return
        m = result.memory
        need = m.total if result.measured else result.static_total
        room = format_size(m.capacity * (1 - HEADROOM))
        if m.kind == "gpu":
            text = self.tr("Does not fit: this run needs about %1, more than the %2 it can use on %3 (10% kept free).").replace("%3", m.device)
        else:
            text = self.tr("Does not fit: this run needs about %1, more than the %2 of free RAM it can use (10% kept free).")
        text = text.replace("%1", format_size(need)).replace("%2", room) + " " + self.tr(
            "You can still start it: if memory runs out, the run splits its batches and retries.")
        if remedies:
            text += " " + self.tr("What helps:")
        self.advice_text.setText(text)
        titles = {
            "micro_batch_size": (self.tr("Micro-batches that fit"), self.tr("micro_batch_size=auto: the largest micro-batch that fits; "
                                                                          "batch_size stays the effective batch")),
            "gradient_checkpointing": (self.tr("Gradient checkpointing"), self.tr("gradient_checkpointing=on: recompute activations "
                                                                                  "in the backward pass (about a third slower)")),
            "finetune": (self.tr("LoRA adapters"), self.tr("finetune=lora: train small adapters and the head, not every weight")),
        }
        for remedy in remedies:
            title, tip = titles.get(remedy.param, (f"{remedy.param}={remedy.value}", ""))
            button = QPushButton(title, self.advice)
            button.setObjectName(f"remedy_{remedy.param}")
            button.setToolTip(tip)
            button.clicked.connect(lambda _=False, r=remedy: self.remedyChosen.emit(r.param, r.value))
            self._remedy_row.addWidget(button)
            self.remedy_buttons[remedy.param] = button
        self._remedy_row.addStretch(1)
        self.advice.show()

    def show_disk(self, need: DiskNeed | None) -> None:
        if need is None:
            self.disk.hide()
            return
        free = format_size(need.free) if need.free is not None else self.tr("unknown")
        if need.merged_model:
            text = self.tr("Writes about %1: merged model + adapters").replace("%1", format_size(need.total))
        elif need.adapter_bytes is not None:
            text = self.tr("Writes about %1: adapters only; model/ names the base model").replace("%1", format_size(need.total))
        else:
            text = self.tr("Writes the adapters only (their size comes with the estimate); model/ names the base model")
        text += " " + self.tr("(%1 free in %2)").replace("%1", free).replace("%2", need.folder)
        role = ""
        if not need.enough:
            text += " " + self.tr("\u2014 not enough free space")
            role = "error"
        self.disk.setText(text)
        self.disk.setToolTip(self.tr("Checkpoints hold every weight, the base model's included, and take more space "
                                     "while the run lasts (keep_checkpoints=last halves it)"))
        self.disk.setProperty("role", role)
        self.disk.style().unpolish(self.disk)
        self.disk.style().polish(self.disk)
        self.disk.show()

    def set_can_estimate(self, can: bool) -> None:
        self.button.setEnabled(can)


class MemoryEstimates(QObject):
    """The estimates made in this window, by settings key; which one the view shows."""

    resultReady = Signal(object)  # EstimateResult, for the settings it was made for
    _childEnded = Signal(str, object)  # key, the child's JSON: from the thread that waited for it

    def __init__(self, view: EstimateView, settings: Callable[[], EstimateSettings | None], parent: QObject | None = None):
        super().__init__(parent)
        self.view = view
        self._settings = settings
        self._results: dict[str, EstimateResult] = {}
        self._running: dict[str, tuple[bool, threading.Event]] = {}  # key -> (measured, its cancel)
        self._unasked: set[str] = set()  # keys of the counts after a run (no Estimate pressed): not shown as running
        self._asked_next: dict[str, EstimateSettings] = {}  # Estimate pressed during such a count: the probe once it ends
        self._pending: EstimateSettings | None = None  # the static part to count once the run is stepping
        self._stepping = False
        self._shown: EstimateResult | None = None
        self._closing = False
        self._threads: list[threading.Thread] = []  # each waits for one child
        self._childEnded.connect(self._done)
        self._busy = False  # a run is in flight: no probe beside it
        view.estimateRequested.connect(self.request)

    # -- reading ------------------------------------------------------------------
    def result(self, key: str | None = None) -> EstimateResult | None:
        """The estimate for ``key`` (default: the form's settings), None when there is none."""
        if key is None:
            settings = self._settings()
            key = settings.key if settings is not None else None
        return self._results.get(key) if key is not None else None

    def running(self, key: str | None = None) -> bool:
        if key is None:
            return bool(self._running)
        return key in self._running

    @property
    def stale(self) -> bool:
        """The view shows a figure made for other settings than the form's."""
        settings = self._settings()
        return self._shown is not None and (settings is None or self._shown.key != settings.key)

    # -- what changes it ------------------------------------------------------------
    def refresh(self) -> None:
        """The settings may have changed: show their estimate, or mark the shown one stale."""
        settings = self._settings()
        key = settings.key if settings is not None else None
        self.view.set_can_estimate(key is not None and not self._busy and (key not in self._running or key in self._unasked))
        result = self._results.get(key) if key is not None else None
        if result is not None:
            result = current_ram(result)
            self._shown = result
            self.view.show_result(result, remedies(settings.values, settings.schema))
        elif key is not None and key in self._running and key not in self._unasked:
            self.view.show_running()
        elif self._shown is not None:
            self.view.show_stale(self._shown)
        else:
            self.view.show_idle()
        if settings is None:
            self.view.show_disk(None)
            return
        outputs = (result.outputs if result is not None and result.outputs else None) or outputs_of(settings.summary)
        self.view.show_disk(disk_need(outputs, result.memory if result is not None else None, Path(settings.runs_folder)))

    def set_busy(self, busy: bool) -> None:
        """A run is in flight (no probe beside it) or not."""
        self._busy = busy
        self.refresh()

    def request(self, measured: bool = True, *, nice: bool = False, settings: EstimateSettings | None = None,
                asked: bool = True) -> bool:
        """Estimate the form's settings in the background; False when it cannot (no settings, already running).

        ``asked``: the user wants the figure now (the line says "estimating" until it comes); the count
        after a run is not asked for, and the line keeps what it said."""
        settings = settings or self._settings()
        if asked and measured and settings is not None and settings.key in self._unasked and not (self._busy or self._closing):
            # the count after a run gives way to the probe asked for, which starts once it has ended
            self._running[settings.key][1].set()
            self._unasked.discard(settings.key)
            self._asked_next[settings.key] = settings
            self.refresh()
            return True
        if self._closing or settings is None or settings.key in self._running or (measured and self._busy):
            return False
        cancel = threading.Event()
        self._running[settings.key] = (measured, cancel)
        if not asked:
            self._unasked.add(settings.key)

        def wait_for_child() -> None:
            try:
                data = estimate_in_child(settings.request(), measured=measured, nice=nice, cancel=cancel)
            except Exception as exc:  # noqa: BLE001 - the child could not even start: shown as the reason
                data = {"error": str(exc) or type(exc).__name__}
            if self._closing:
                return
            try:
                self._childEnded.emit(settings.key, data)
            except RuntimeError:  # the window is gone
                pass

        self._threads = [t for t in self._threads if t.is_alive()]
        thread = threading.Thread(target=wait_for_child, name="memory-estimate", daemon=True)
        self._threads.append(thread)
        thread.start()
        self.refresh()
        return True

    def start_pressed(self) -> None:
        """Start was pressed: a probe still running ends (it would compete with the run for its device);
        without an estimate for these settings, the static part is counted once the run has ended."""
        settings = self._settings()
        for measured, cancel in self._running.values():
            if measured:
                cancel.set()
        self._asked_next.clear()  # a probe asked for before Start would compete with the run
        self._stepping = False
        self._pending = settings if settings is not None and settings.key not in self._results else None

    def run_ended(self) -> None:
        """The run has ended: the static part of its settings is counted now, for the next Start.

        Not during the run: on a machine of few cores even a niced child
        (plan_run, torch's imports, the data scan) takes the GUI thread's
        turns, and the window's stalls beside the run grow several-fold
        (bench/gui_latency.py measures them).
        """
        self._stepping = True
        self._start_pending()

    def _start_pending(self) -> None:
        pending = self._pending
        if pending is None or not self._stepping or pending.key in self._running:
            return  # a cancelled probe still ending: its _done comes back here
        self._pending = None
        if pending.key not in self._results:
            self.request(measured=False, nice=True, settings=pending, asked=False)

    def shutdown(self) -> None:
        """The window closes: end the children (and their probes) now."""
        self._closing = True
        for _measured, cancel in self._running.values():
            cancel.set()
        for thread in self._threads:
            thread.join(timeout=10)

    # -- results ----------------------------------------------------------------------
    def _done(self, key: str, data: Any) -> None:
        measured, _cancel = self._running.pop(key, (True, None))
        self._unasked.discard(key)
        asked = self._asked_next.pop(key, None)
        data = data if isinstance(data, dict) else {}
        if data.get("error") == ESTIMATE_CANCELLED:
            if asked is None or not self.request(settings=asked):
                self.refresh()
            self._start_pending()
            return
        result = result_from(key, data)
        old = self._results.get(key)
        if measured or old is None or not old.measured:  # a measured figure is not replaced by a static one
            self._results[key] = result
        if result.error:
            log.info("no memory estimate: %s", result.error)
        self.refresh()
        self.resultReady.emit(result)
        if asked is not None:  # the count ended before it saw its cancel: the probe asked for now
            self.request(settings=asked)
        self._start_pending()
