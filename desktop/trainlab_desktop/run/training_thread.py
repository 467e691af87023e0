"""The training worker: one run in a QThread, with a fixed signal vocabulary.

Signals (superqt's discipline, on a QThread as the product's design asks):

* ``started()`` (QThread's own): the thread is up; torch is not loaded yet.
* ``stateChanged(str)``: ``preparing`` (checking data, building the model),
  ``running``, ``paused``, ``stopping``.
* ``eventBatch(object)``: an ``EventBatch`` of the run's events, coalesced,
  in the order they happened (a ``RunSession`` reduces them).
* ``errored(str, str)``: the run failed or could not start: message, traceback.
* ``runFinished(object)``: always last: the run's ``RunOutcome`` (the same
  type whether the run executed here or in a child process).

Coalescing.  A tiny model can make 20,000 steps a second, and the engine's
``on_event`` may also be called from the telemetry thread.  Events go into an
``EventCoalescer``; a batch is emitted only when none is in flight, and the
GUI-side drain timer (30 Hz) collects what arrived meanwhile and only then
allows the next emit.  So the GUI thread handles at most one queued batch per
tick however fast the run goes, and no event is left stranded when the run
goes quiet (during evaluation, say).

The run executes in this thread (``run_here``: plan, then execute, on the
data check's ``PreparedTask`` when it still fits) or in another process
(``RunProcess``, ``trainlab.engine.run_process``): one child process, whose
crash cannot take the window down, or, given a ``LaunchChoice`` of several
processes, a group started through the CLI's launcher and followed through
the run folder.  All deliver the same events.  Pause, resume and stop are
requests the run honours between optimizer steps: the thread's
``RunControl``, or words ``RunProcess`` passes to the other process.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable

from PySide6.QtCore import QThread, QTimer, Signal

from trainlab.api.callbacks import Callback, RunControl
from trainlab.api.errors import UsageError
from trainlab.api.events import EvalResult, Event, Finished, Log, Progress, Started, SystemSample, TrainStep
from trainlab.engine.outcome import RunOutcome
from trainlab.engine.run_process import RunProcess
from trainlab.runfolder.status import SESSION_ACTIVE, RunStatus, SessionState

log = logging.getLogger("trainlab.desktop")

DRAIN_INTERVAL_MS = 33  # ~30 Hz: as often as a plot is worth redrawing
# How much lower than the window the training runs, in nice steps: the GUI
# thread wins the CPU when both want it (a training thread and its torch
# threads can keep every core busy).  0 turns it off.
TRAINING_NICENESS = 5

# Held while a background job imports task and engine modules (the data check,
# the engine prewarm); a run waits for it before it starts importing.  Two
# threads importing transformers at once can see it half initialised
# ("cannot import name 'AutoTokenizer'"): its lazy module is not thread-safe.
engine_import_lock = threading.Lock()


@contextlib.contextmanager
def importing_heavy_modules(torch: bool = True):
    """Hold ``engine_import_lock``, with the cyclic GC paused, then freeze.

    Importing torch and transformers creates hundreds of thousands of
    long-lived objects; a full collection in the middle of it walks them all
    while holding the GIL, and the GUI thread stalls meanwhile
    (``bench/gui_latency.py``'s ``check_stall_max_ms`` shows it).  Pausing
    the collector for the import and then moving what survived into the
    permanent generation (``gc.freeze``) keeps later full collections short
    too.  The modules live as long as the process anyway.

    With ``torch`` (the default), the first time, torch's large shared
    libraries are loaded without the GIL first (``preload_torch_libraries``).
    """
    with engine_import_lock:
        if torch:
            preload_torch_libraries()
        enabled = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            gc.freeze()
            if enabled:
                gc.enable()


_preloaded = False


def preload_torch_libraries() -> None:
    """Load libtorch_cpu and libtorch_cuda while other threads run (Linux).

    ``import torch`` loads hundreds of megabytes of shared libraries: the
    dynamic loader maps and relocates them while the import holds the GIL,
    and the window froze meanwhile (``bench/gui_latency.py``, ``check_stall_max_ms``).
    ``dlopen`` called through ctypes runs without the GIL, so loading the
    two big libraries that way first leaves torch's own import a library that
    is already there.  They are loaded RTLD_LOCAL, as torch loads them; any
    failure just leaves the work to ``import torch``.
    """
    global _preloaded
    if _preloaded or not sys.platform.startswith("linux") or "torch" in sys.modules:
        return
    _preloaded = True
    import ctypes
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.submodule_search_locations:
            return
        lib = os.path.join(list(spec.submodule_search_locations)[0], "lib")
        dlopen = ctypes.CDLL(None).dlopen  # a foreign call: ctypes releases the GIL around it
        dlopen.restype = ctypes.c_void_p
        dlopen.argtypes = [ctypes.c_char_p, ctypes.c_int]
        for name in ("libtorch_cpu.so", "libtorch_cuda.so"):
            path = os.path.join(lib, name)
            if os.path.exists(path) and not dlopen(os.fsencode(path), os.RTLD_NOW):
                log.debug("could not preload %s; import torch will load it", path)
    except Exception:  # noqa: BLE001 - an optimisation: never in the way of the import itself
        log.debug("preloading torch's libraries failed", exc_info=True)


STATES = tuple(s for s in SessionState if s in SESSION_ACTIVE)  # the worker's, in order


@dataclass(frozen=True)
class EventBatch:
    """Events that arrived since the last batch, in the order they happened.

    A ``Progress`` event is superseded by the next one: only the newest of a
    batch is kept (it says everything an older one said).  Every other event
    is kept (train points are plotted with downsampling).  The session
    reduces ``events`` in order; the properties are the same events by kind.
    """

    events: tuple[Event, ...] = ()
    received: int = 0  # events coalesced into this batch

    def _of(self, kind: type) -> tuple:
        return tuple(e for e in self.events if isinstance(e, kind))

    def _last(self, kind: type):
        return next((e for e in reversed(self.events) if isinstance(e, kind)), None)

    started = cached_property(lambda self: self._last(Started))
    train = cached_property(lambda self: self._of(TrainStep))
    evals = cached_property(lambda self: self._of(EvalResult))
    progress = cached_property(lambda self: self._last(Progress))
    system = cached_property(lambda self: self._of(SystemSample))
    logs = cached_property(lambda self: self._of(Log))
    finished = cached_property(lambda self: self._last(Finished))


_KINDS = (TrainStep, Progress, EvalResult, SystemSample, Log, Started, Finished)


class EventCoalescer:
    """Thread-safe buffer: ``add`` from any thread, ``take`` from the GUI."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reset()
        self.in_flight = False
        self.total = 0

    def _reset(self) -> None:
        self._events: list[Event | None] = []
        self._progress_at: int | None = None  # where the buffered Progress sits
        self._superseded = 0

    def add(self, event: Event) -> EventBatch | None:
        """Buffer ``event``; returns a batch to emit when none is in flight."""
        if not isinstance(event, _KINDS):
            return None
        with self._lock:
            self.total += 1
            if isinstance(event, Progress):
                if self._progress_at is not None:
                    self._events[self._progress_at] = None
                    self._superseded += 1
                self._progress_at = len(self._events)
            self._events.append(event)
            if self.in_flight:
                return None
            self.in_flight = True
            return self._take_locked()

    def take(self, release: bool = True) -> EventBatch | None:
        """What is buffered (None if nothing); ``release`` ends the in-flight batch."""
        with self._lock:
            batch = self._take_locked() if self._events else None
            if release and batch is None:
                self.in_flight = False
            return batch

    def _take_locked(self) -> EventBatch:
        events = self._events
        kept = tuple(e for e in events if e is not None) if self._superseded else tuple(events)
        batch = EventBatch(events=kept, received=len(events))
        self._reset()
        return batch


class TrainingWorker(QThread):
    """Runs one ``RunRequest``; see the module docstring for the signals.

    Give it a parent, or ``deleteLater`` it in the GUI thread once it has
    finished (``RunController`` does both): a worker left to Python's
    garbage collector may be destroyed from another thread, together with its
    drain timer that the GUI thread's event loop runs.
    """

    stateChanged = Signal(str)
    eventBatch = Signal(object)
    errored = Signal(str, str)
    runFinished = Signal(object)  # RunOutcome

    def __init__(self, request: Any, *, mode: str = "thread", parent=None, niceness: int | None = None,
                 prepared: Any = None, launch: Any = None):
        super().__init__(parent)
        self.niceness = TRAINING_NICENESS if niceness is None else niceness
        if mode not in ("thread", "process"):
            raise ValueError(f"mode must be 'thread' or 'process', not {mode!r}")
        self.request = request
        self.mode = mode
        self.launch = launch if launch is not None and launch.group else None  # a LaunchChoice of several processes
        self.process = None  # the RunProcess of a run in another process: its command is known before it starts
        if self.launch is not None or mode == "process":
            if self.launch is not None:
                self.process = RunProcess(request, launch_args=self.launch.launch_args(), shown_gpus=self.launch.telemetry_indices)
            else:
                self.process = RunProcess(request)
        # The data check's PreparedTask: plan_run takes it over when it still
        # fits the request (a child process prepares its own).
        self.prepared = prepared
        self.coalescer = EventCoalescer()
        self.state = SessionState.PREPARING
        self.result: Any = None  # the RunOutcome, once runFinished was emitted
        self.run_dir = ""
        self._control = None
        self._control_lock = threading.Lock()
        self._pending_pause = False
        self._stop_requested = False
        self._drain = QTimer(self)
        self._drain.setSingleShot(True)
        self._drain.setInterval(DRAIN_INTERVAL_MS)
        self._drain.timeout.connect(self.drain)
        # The worker object lives in the GUI thread, so this connection is
        # queued when the batch was emitted by the training thread.
        self.eventBatch.connect(self._batch_delivered)

    # -- control (GUI thread) ------------------------------------------------
    @property
    def paused(self) -> bool:
        return self.state == SessionState.PAUSED

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def pause(self) -> None:
        with self._control_lock:
            if self._stop_requested or self.state == SessionState.PAUSED:
                return
            self._pending_pause = True
            if self._control is not None:
                self._control.pause()
            if self.process is not None:
                self.process.pause()  # held until the run can hear it
        self._set_state(SessionState.PAUSED)

    def resume(self) -> None:
        with self._control_lock:
            self._pending_pause = False
            if self._control is not None:
                self._control.resume()
            if self.process is not None:
                self.process.resume()
        if self.state == SessionState.PAUSED:
            self._set_state(SessionState.RUNNING if self.run_dir else SessionState.PREPARING)

    def request_stop(self) -> None:
        """Ask the run to stop after the current step (it is kept, cancelled)."""
        with self._control_lock:
            if self._stop_requested:
                return
            self._stop_requested = True
            if self._control is not None:
                self._control.request_stop()
            if self.process is not None:
                self.process.stop()  # nothing yet when it has not started: _run_process then never starts it
        if self.isRunning():
            self._set_state(SessionState.STOPPING)

    # -- delivery (GUI thread) -----------------------------------------------
    def _batch_delivered(self, _batch: EventBatch) -> None:
        if not self._drain.isActive():
            self._drain.start()

    def drain(self) -> None:
        """Deliver what arrived while a batch was in flight; then allow the next."""
        batch = self.coalescer.take(release=True)
        if batch is not None:
            self.eventBatch.emit(batch)

    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self.stateChanged.emit(state)

    # -- the thread ------------------------------------------------------------
    def _on_event(self, event: Event) -> None:
        """From the training thread (or the telemetry thread, or while following another process)."""
        if isinstance(event, Started):
            self.run_dir = event.run_dir
            if self.state == SessionState.PREPARING:
                self._set_state(SessionState.RUNNING)
        batch = self.coalescer.add(event)
        if batch is not None:
            self.eventBatch.emit(batch)

    def run(self) -> None:  # noqa: D401 - QThread entry point

        if self.process is None:
            # this thread, and the torch threads it starts (run_here keeps them off one core)
            lower_priority(self.niceness)
        try:
            outcome = self._run_here() if self.process is None else self._run_process()
        except BaseException as exc:  # noqa: BLE001 - a failed run must leave the window usable
            cancelled = isinstance(exc, (_Cancelled, KeyboardInterrupt))  # StopRequested: stopped while preparing
            outcome = RunOutcome.not_started(
                task=getattr(self.request, "task", "") or "",
                run_dir=self.run_dir,
                status=RunStatus.CANCELLED if cancelled else RunStatus.FAILED,
                error=str(exc).strip() or type(exc).__name__,
                traceback="" if cancelled else traceback.format_exc(),
                usage_error=_is_usage_error(exc),
            )
        # Final flush: whatever is still buffered goes out before runFinished.
        rest = self.coalescer.take(release=False)
        if rest is not None:
            self.eventBatch.emit(rest)
        if outcome.status == RunStatus.FAILED:
            self.errored.emit(outcome.error or "the run failed", outcome.traceback)
        self.result = outcome
        self.runFinished.emit(outcome)

    def _run_here(self) -> Any:
        # Imported here, in the worker thread: this is where torch loads, once
        # a data check that may be importing the same modules has finished.
        with engine_import_lock:
            pass

        with self._control_lock:
            self._control = RunControl()
            if self._stop_requested:
                self._control.request_stop()
            elif self._pending_pause:
                self._control.pause()
        from trainlab.engine.run_here import run_here

        if self._stop_requested:
            raise _Cancelled("stopped before the run started")
        prepared, self.prepared = self.prepared, None  # one run takes it over, or it is dropped
        return run_here(self.request, control=self._control, callbacks=[event_bridge(self._on_event)], prepared=prepared)

    def _run_process(self) -> Any:
        process = self.process
        with self._control_lock:
            if self._stop_requested:
                raise _Cancelled("stopped before the run started")
            process.start()
            # a group's ranks inherit it: torchrun starts them after the launcher's imports
            lower_priority(self.niceness, pid=process.pid)
        for event in process.events():
            self._on_event(event)
        return process.result(process.wait())


_EventBridge: type | None = None


def event_bridge(sink: Callable[[Event], None]) -> Any:
    """The engine callback that hands every event to ``sink`` (the worker's ``_on_event``).

    One class for the process, made on first use (the engine's ``Callback``
    is imported with the run, not with the window).  A class defined inside
    ``_run_here`` closing over the worker put the worker in a reference
    cycle (every class is in one): a finished worker then lived on until the
    cyclic GC ran, in whatever thread allocated next, often the next run's
    worker thread.  A parentless worker freed there destroys its QThread and
    its drain QTimer from a foreign thread while the GUI thread's timer list
    still points at them: the intermittent segfault of the GUI tests.
    """
    global _EventBridge
    if _EventBridge is None:
        class EventBridge(Callback):
            def __init__(self, sink: Callable[[Event], None]) -> None:
                self._sink = sink

            def on_event(self, event: Event) -> None:
                self._sink(event)

        _EventBridge = EventBridge
    return _EventBridge(sink)


def lower_priority(steps: int, pid: int | None = None) -> bool:
    """Raise the nice value of the calling thread (Linux: nice is per thread)
    or of process ``pid`` by ``steps``; False where that is not possible."""
    if steps <= 0:
        return False
    try:
        import psutil

        if pid is not None:
            process = psutil.Process(pid)
            if sys.platform == "win32":
                process.nice(psutil.BELOW_NORMAL_PRIORITY_CLASS)
            else:
                process.nice(min(19, process.nice() + steps))
            return True
        if sys.platform.startswith("linux"):
            tid = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + steps))
            return True
    except Exception as exc:  # noqa: BLE001 - OSError, psutil.NoSuchProcess/AccessDenied: never fatal
        log.debug("could not lower the training's priority: %s", exc)
    return False


class _Cancelled(Exception):
    pass


def _is_usage_error(exc: BaseException) -> bool:
    return isinstance(exc, UsageError)


def prewarm_engine() -> None:
    """Import what starting a run imports, off the GUI thread, ahead of Start.

    torch, the engine's loop and, through the first optimizer built,
    torch._dynamo (torch 2.x imports it lazily in ``Optimizer.__init__``):
    a couple of seconds of imports that, done in the worker thread after
    Start, would compete with the GUI thread for the GIL.  The window calls
    this once the data check has passed, while the user reads the summary.
    """
    with importing_heavy_modules():
        import torch

        import trainlab.engine.loop  # noqa: F401 - imported for its side effect

        torch.optim.AdamW([torch.zeros(1, requires_grad=True)])


def wait_for(worker: TrainingWorker, timeout_s: float) -> bool:
    """Block until the worker's thread ended (used at shutdown only)."""
    deadline = time.monotonic() + timeout_s
    while worker.isRunning():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        worker.wait(int(min(remaining, 0.1) * 1000))
    return True
