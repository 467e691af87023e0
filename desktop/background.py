"""Run one function off the GUI thread and get its result back as a signal.

For short jobs the window must not wait on (checking a data folder, which
imports the task's module and so torch; loading thumbnails).  The QThread is
kept alive in ``_alive`` until it has finished, so it is never destroyed while
running, and ``wait_all`` lets the window wait for stragglers when it closes.
"""

from __future__ import annotations

import traceback
from typing import Any, Callable

from PySide6.QtCore import QThread, Signal

_alive: set["BackgroundCall"] = set()


class BackgroundCall(QThread):
    """``fn()`` in its own thread; ``done(result)`` or ``failed(message, traceback)``.

    ``progress(object)`` lets ``fn`` report partial results: it receives a
    ``report`` callable as its only argument when ``wants_report`` is set.
    """

    done = Signal(object)
    failed = Signal(str, str)
    progress = Signal(object)

    def __init__(self, fn: Callable[..., Any], *, wants_report: bool = False):
        super().__init__()
        self._fn = fn
        self._wants_report = wants_report
        self.cancelled = False
        _alive.add(self)
        self.finished.connect(self._forget)

    def run(self) -> None:
        try:
            result = self._fn(self.progress.emit) if self._wants_report else self._fn()
        except Exception as exc:  # noqa: BLE001 - reported to the window, never fatal
            self.failed.emit(_message(exc), traceback.format_exc())
        else:
            self.done.emit(result)

    def _forget(self) -> None:
        _alive.discard(self)
        self.deleteLater()


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    return text if text else type(exc).__name__


def start(fn: Callable[..., Any], on_done: Callable[[Any], None] | None = None,
          on_failed: Callable[[str, str], None] | None = None, *, on_progress=None) -> BackgroundCall:
    call = BackgroundCall(fn, wants_report=on_progress is not None)
    if on_done is not None:
        call.done.connect(on_done)
    if on_failed is not None:
        call.failed.connect(on_failed)
    if on_progress is not None:
        call.progress.connect(on_progress)
    call.start()
    return call


def running() -> int:
    return sum(1 for call in _alive if call.isRunning())


def wait_all(timeout_ms: int = 30_000) -> bool:
    """Wait for every background call; False if one is still running."""
    ok = True
    for call in list(_alive):
        if call.isRunning() and not call.wait(timeout_ms):
            ok = False
    return ok
