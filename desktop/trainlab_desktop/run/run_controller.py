"""The window's run: one ``TrainingWorker`` at a time and the ``RunSession`` it feeds.

``RunController`` starts, pauses, stops, continues and follows runs; it owns
no widget.  Whatever the source (the worker's batches, a child process, the
tail of a run folder's ``metrics.jsonl``), the events go to
``session.apply`` and the views subscribe to the session.  What the window
does when a run ends beyond that (results, notifications) hangs on
``runFinished``.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from trainlab.runfolder.index import RunDir
from trainlab.viewmodel.session import RunSession
from trainlab_desktop.run.training_thread import TrainingWorker

log = logging.getLogger("trainlab.desktop")

FOLLOW_MS = 500  # how often a followed run's metrics.jsonl is read


class RunController(QObject):
    """Starts and steers the window's runs; ``session`` is their state."""

    runStarted = Signal()
    runFinished = Signal(object)  # RunOutcome, once the session has it
    runErrored = Signal(str, str)  # message, traceback (before runFinished)

    def __init__(self, parent: QObject | None = None, smoothing: float = 0.9):
        super().__init__(parent)
        self.session = RunSession(smoothing)
        self.worker: Any = None  # TrainingWorker while a run is in flight
        self.started_at = 0.0
        self._keep_awake = None
        self._follow_timer = QTimer(self)
        self._follow_timer.setInterval(FOLLOW_MS)
        self._follow_timer.timeout.connect(self._follow_tick)

    # -- state ---------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.worker is not None and self.worker.isRunning()

    @property
    def busy(self) -> bool:
        """A run of this window, or a followed one that is still going."""
        return self.running or self.session.live

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started_at

    def continuable(self) -> bool:
        """The session's run ended and left a checkpoint to go on from."""
        session = self.session
        return bool(session.run_dir) and session.ended and RunDir(session.run_dir).checkpoints.is_dir()

    # -- runs ------------------------------------------------------------------------
    def start(self, request: Any, *, mode: str = "thread", prepared: Any = None, launch: Any = None) -> bool:
        """Run ``request`` (a ``RunRequest``); False while a run is in flight.

        ``prepared``: the data check's ``PreparedTask``, taken over when it
        fits (a run in a child process prepares its own).  ``launch``: a
        ``LaunchChoice``; of several processes, the run is a group of child
        processes (the CLI's launcher, torchrun), whatever ``mode`` says.
        """
        if self.running:
            return False

        self.stop_following()
        self.session.begin(history=request.resume)
        group = launch is not None and launch.group
        worker = TrainingWorker(request, mode=mode, parent=self, prepared=prepared if mode == "thread" and not group else None,
                                launch=launch)  # fmt: skip
        worker.stateChanged.connect(self.session.set_status)
        worker.eventBatch.connect(self._apply_batch)
        worker.errored.connect(self.runErrored)
        worker.runFinished.connect(self._run_finished)
        self.worker = worker
        self.started_at = time.monotonic()
        what = f"continuing {request.resume}" if request.resume else f"{request.task} on {request.data}"
        where = "child process" if mode == "process" else "in this window"
        if group:
            where = f"a group of {launch.world_size} processes"
        log.info("starting a run (%s, %s)", what, where)
        self._acquire_keep_awake()
        worker.start()
        self.runStarted.emit()
        return True

    def _apply_batch(self, batch: Any) -> None:
        """The worker's coalesced events, in order."""
        self.session.apply(batch.events)

    def toggle_pause(self) -> None:
        if not self.running:
            return
        if self.worker.paused:
            self.worker.resume()
            log.info("run resumed")
        else:
            self.worker.pause()
            log.info("run paused (after the current step)")

    def stop(self) -> None:
        if self.running:
            self.worker.request_stop()
            log.info("stopping the run after the current step")

    def _run_finished(self, outcome: Any) -> None:
        worker = self.worker
        if worker is not None:
            worker.wait(5000)  # run() has returned; let the thread end fully
            worker.deleteLater()
        self.worker = None
        self._release_keep_awake()
        self.session.finish(outcome)
        log.info("run %s: %s (%s)", outcome.run_dir or "(none)", outcome.status, outcome.error)
        self.runFinished.emit(outcome)

    # -- a run folder ----------------------------------------------------------------
    def follow(self, run_dir: str | Path) -> bool:
        """Show the run in ``run_dir`` (and what it still writes, while it runs).

        False while this window's own run is in flight.
        """
        if self.running:
            return False
        self.stop_following()
        self.session.follow(run_dir)
        if self.session.following:
            self._follow_timer.start()
        return True

    def _follow_tick(self) -> None:
        self.session.poll()
        if not self.session.following:
            self._follow_timer.stop()

    def stop_following(self) -> None:
        self._follow_timer.stop()
        self.session.stop_following()

    def forget(self, run_dirs: list) -> None:
        """Those runs were deleted: the session lets go of one of them."""
        if self.running or not self.session.run_dir:
            return
        if str(Path(self.session.run_dir).resolve()) in {str(Path(d).resolve()) for d in run_dirs}:
            self.stop_following()
            self.session.clear()

    # -- while a run is active, the machine stays awake ------------------------------------
    def _acquire_keep_awake(self) -> None:
        from trainlab_desktop.common.notify import KeepAwake

        if self._keep_awake is None:
            self._keep_awake = KeepAwake()
        self._keep_awake.acquire()

    def _release_keep_awake(self) -> None:
        if self._keep_awake is not None:
            self._keep_awake.release()

    def shutdown(self) -> None:
        self.stop_following()
        self._release_keep_awake()
