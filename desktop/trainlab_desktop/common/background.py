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
    """``fn()`` in its own thread; ``done(tag, result)`` or ``failed(tag, message, traceback)``.

    ``tag`` is whatever the caller passed (a generation number, say), so a
    receiver can connect a bound method rather than a lambda: Qt then drops
    the connection when the receiver is destroyed, and a late result never
    reaches a deleted widget.  ``progress(tag, value)`` lets ``fn`` report
    partial results: it receives a ``report`` callable as its only argument
    when ``wants_report`` is set.
    """

    done = Signal(object, object)
    failed = Signal(object, str, str)
    progress = Signal(object, object)

    def __init__(self, fn: Callable[..., Any], *, tag: Any = None, wants_report: bool = False):
        super().__init__()
        self._fn = fn
        self.tag = tag
        self._wants_report = wants_report
        _alive.add(self)
        self.finished.connect(self._forget)

    def run(self) -> None:
        try:
            if self._wants_report:
                result = self._fn(lambda value: self.progress.emit(self.tag, value))
            else:
                result = self._fn()
        except Exception as exc:  # noqa: BLE001 - reported to the window, never fatal
            self.failed.emit(self.tag, _message(exc), traceback.format_exc())
        else:
            self.done.emit(self.tag, result)

    def _forget(self) -> None:
        _alive.discard(self)
        self.deleteLater()


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    return text if text else type(exc).__name__


def start(fn: Callable[..., Any], on_done: Callable[[Any, Any], None] | None = None,
          on_failed: Callable[[Any, str, str], None] | None = None, *, on_progress=None, tag: Any = None) -> BackgroundCall:
    """Run ``fn`` in a thread.  Pass bound methods of QObjects as callbacks
    (never lambdas over widgets): each receives ``tag`` first."""
    call = BackgroundCall(fn, tag=tag, wants_report=on_progress is not None)
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
