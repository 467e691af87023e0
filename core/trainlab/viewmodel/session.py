"""One run as a view sees it: a plain object, no Qt, no torch.

A ``RunSession`` takes a run's events in the order they happened, from any
source: the window's worker (its coalesced batches, order kept), a child
process (the same events over a pipe), or the tail of a ``metrics.jsonl``
(``follow`` then ``poll``: a run started from the command line, or a
finished run opened again).  ``apply`` reduces them, and nothing else does,
into what views show:

* ``status``: a ``SessionState`` (``STATUSES``);
* ``progress`` (``RunProgress``): step, epoch and their totals, rate, ETA, phase;
* ``curves`` (``trainlab.viewmodel.curves.RunCurves``): the buffers the plots draw;
* ``evals``: every ``EvalResult`` in order, each with its full ``metrics``;
* ``log``: the run's last ``LOG_LIMIT`` ``Log`` events;
* ``started`` (``StartedInfo``): run folder, task, device, precision, totals;
* ``result``: the ``RunOutcome`` once the run has ended.

Subscribers are called with a ``SessionChange`` naming what changed, so a
view redraws only that.  Watching one's own run and following someone
else's is the same code: both end in ``apply``.  The controls the window
holds over its own run (pause, stop) are known before the engine confirms
them: ``set_status`` takes the worker's word for those.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from trainlab.api.errors import UsageError
from trainlab.api.events import EvalResult, Event, Finished, Log, Phase, Progress, Started, SystemSample, TrainStep
from trainlab.engine.outcome import RunOutcome
from trainlab.runfolder.index import RunDir
from trainlab.runfolder.status import (
    SESSION_ACTIVE,
    SESSION_ENDED,
    SessionState,
    session_state_of_ended,
    session_state_of_stored,
)
from trainlab.viewmodel.curves import RunCurves

if TYPE_CHECKING:  # pragma: no cover
    from trainlab.engine.outcome import RunOutcome
    from trainlab.runfolder.tail import MetricsTail

log = logging.getLogger("trainlab.viewmodel.session")

IDLE, PREPARING, RUNNING = SessionState.IDLE, SessionState.PREPARING, SessionState.RUNNING
PAUSED, STOPPING = SessionState.PAUSED, SessionState.STOPPING
STATUSES = tuple(SessionState)
ACTIVE = SESSION_ACTIVE
LOG_LIMIT = 2000  # a run that logs every step must not grow the window without bound


@dataclass
class RunProgress:
    """Where a run stands: the numbers a progress line shows (plain values)."""

    step: int = 0
    total_steps: int = 0
    epoch: int = 0
    epochs: int = 0
    samples_per_second: float = 0.0
    eta_seconds: float | None = None
    phase: str = ""
    units_per_second: float = 0.0  # the task's throughput unit per second (tokens), 0 when it counts none
    unit: str = ""

    @property
    def fraction(self) -> float:
        return min(1.0, self.step / self.total_steps) if self.total_steps else 0.0


@dataclass(frozen=True)
class StartedInfo:
    """What the run's ``Started`` event said."""

    run_dir: str
    task: str
    device: str
    precision: str
    total_steps: int
    epochs: int
    resumed: bool = False


@dataclass(frozen=True)
class SessionChange:
    """What one call changed: each view looks at the parts it draws.

    ``reset``: everything is new (another run); ``replay``: the events were
    read back from a run's history (opening it), not seen as they happened.
    """

    reset: bool = False
    status: bool = False
    started: bool = False
    progress: bool = False
    train: bool = False
    evals: tuple[EvalResult, ...] = ()
    logs: tuple[Log, ...] = ()
    system: tuple[SystemSample, ...] = ()
    finished: bool = False
    replay: bool = False

    def __bool__(self) -> bool:
        return any((self.reset, self.status, self.started, self.progress, self.train, self.evals, self.logs,
                    self.system, self.finished))


Subscriber = Callable[["RunSession", SessionChange], None]


class RunSession:
    """The state of one run (the current one, or the one opened); see the module docstring."""

    def __init__(self, smoothing: float = 0.9, log_limit: int = LOG_LIMIT) -> None:
        self._subscribers: list[Subscriber] = []
        self._log_limit = log_limit
        self.curves = RunCurves(smoothing)
        self._tail: MetricsTail | None = None
        self._reset(IDLE, "")

    def _reset(self, status: SessionState, source: str) -> None:
        # A new RunCurves, not a cleared one: a view still drawing the old
        # run's buffers never sees them change under it.  The smoothing the
        # user chose carries over.
        self.curves = RunCurves(self.curves.smoother.weight)
        self.progress = RunProgress()
        self.evals: list[EvalResult] = []
        self.log: deque[Log] = deque(maxlen=self._log_limit)
        self.started: StartedInfo | None = None
        self.result: RunOutcome | None = None
        self.last_system: SystemSample | None = None
        self.status = status
        self.source = source  # "worker" (a run this process started), "follow" (a metrics.jsonl), "" (none)
        self.run_dir = ""
        self._tail = None
        self.bad_lines = 0  # lines of the followed metrics.jsonl that are not events, skipped

    # -- subscribers -----------------------------------------------------------
    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Call ``subscriber(session, change)`` after every change; returns the unsubscribe."""
        self._subscribers.append(subscriber)
        return lambda: self._subscribers.remove(subscriber) if subscriber in self._subscribers else None

    def _notify(self, change: SessionChange) -> SessionChange:
        if change:
            for subscriber in list(self._subscribers):
                try:
                    subscriber(self, change)
                except Exception:  # noqa: BLE001 - one broken view must not stop the others (or the run)
                    log.exception("a view of the run failed on %s", change)
        return change

    # -- state ------------------------------------------------------------------
    @property
    def active(self) -> bool:
        """Preparing, running, paused or stopping."""
        return self.status in ACTIVE

    @property
    def ended(self) -> bool:
        return self.status in SESSION_ENDED

    @property
    def following(self) -> bool:
        """Reading a ``metrics.jsonl`` that may still grow."""
        return self._tail is not None

    @property
    def live(self) -> bool:
        """A run that is going on: this process's own, or a followed one still running."""
        return self.active and (self.source == "worker" or self.following)

    @property
    def error(self) -> str:
        return self.result.error if self.result is not None else ""

    # -- a run of this process ----------------------------------------------------
    def begin(self, history: str | Path | None = None) -> SessionChange:
        """A new run is being prepared; ``history``: the run folder it continues,
        whose curves (and evaluations) are read back first."""
        self._reset(PREPARING, "worker")
        if history is not None:
            self._read_history(history)
        return self._notify(SessionChange(reset=True, status=True))

    def _read_history(self, run_dir: str | Path) -> None:
        folder = RunDir(run_dir)
        self.run_dir = str(folder.path)
        try:
            events = [e for e in folder.events() if not isinstance(e, (SystemSample, Finished, Log, Progress))]
        except OSError as exc:
            log.info("could not read the earlier curves of %s: %s", folder.path, exc)
            return
        self.curves.add_events(events)
        self.evals.extend(e for e in events if isinstance(e, EvalResult))

    def set_status(self, status: SessionState | str) -> SessionChange:
        """The worker's state (preparing, running, paused, stopping): known before
        the engine's events confirm it."""
        if status not in ACTIVE or not self.active or status == self.status:
            return SessionChange()
        self.status = SessionState(status)
        return self._notify(SessionChange(status=True))

    def finish(self, outcome: "RunOutcome") -> SessionChange:
        """The run's ``RunOutcome`` (the last word on how it ended)."""
        self.result = outcome
        self.status = session_state_of_ended(outcome.status)
        self.run_dir = outcome.run_dir or self.run_dir
        self._tail = None
        return self._notify(SessionChange(status=True, finished=True))

    # -- the one reduction -----------------------------------------------------------
    def apply(self, events: Iterable[Event], *, replay: bool = False) -> SessionChange:
        """Reduce ``events`` (in the order they happened); notify what changed."""
        prog = self.progress
        status_before, started = self.status, False
        progressed = trained = finished = False
        pending: list[TrainStep] = []
        evals: list[EvalResult] = []
        logs: list[Log] = []
        system: list[SystemSample] = []
        for event in events:
            if isinstance(event, TrainStep):
                pending.append(event)
                prog.step, prog.epoch = event.step, event.epoch
                if event.samples_per_second:
                    prog.samples_per_second = event.samples_per_second
                progressed = True
                continue
            if isinstance(event, Progress):
                prog.step, prog.epoch = event.step, event.epoch
                prog.total_steps = event.total_steps or prog.total_steps
                prog.epochs = event.epochs or prog.epochs
                prog.samples_per_second = event.samples_per_second or prog.samples_per_second
                if event.units_per_second:
                    prog.units_per_second, prog.unit = event.units_per_second, event.unit
                prog.eta_seconds = event.eta_seconds
                prog.phase = event.phase
                progressed = True
                if self.source == "follow" and self.status in (RUNNING, PAUSED):
                    # no worker here to say so: the engine's phase is the word
                    self.status = PAUSED if event.phase == Phase.PAUSED else RUNNING
                continue
            if isinstance(event, SystemSample):
                self.last_system = event
                system.append(event)
                continue
            if isinstance(event, Log):
                self.log.append(event)
                logs.append(event)
                continue
            if pending:  # the curves take consecutive steps in one go
                self.curves.add_train(pending)
                pending, trained = [], True
            if isinstance(event, Started):
                self._started(event)
                started = progressed = True
            elif isinstance(event, EvalResult):
                self.curves.add_evals([event])
                self.evals.append(event)
                evals.append(event)
            elif isinstance(event, Finished):
                self._finished(event)
                finished = True
        if pending:
            self.curves.add_train(pending)
            trained = True
        return self._notify(SessionChange(
            status=self.status != status_before, started=started, progress=progressed, train=trained,
            evals=tuple(evals), logs=tuple(logs), system=tuple(system), finished=finished, replay=replay,
        ))

    def _started(self, event: Started) -> None:
        self.started = StartedInfo(event.run_dir, event.task, event.device, event.precision, event.total_steps,
                                   event.epochs, event.resumed)
        self.curves.started(event)
        self.run_dir = event.run_dir or self.run_dir
        prog = self.progress
        prog.total_steps, prog.epochs, prog.step, prog.epoch = event.total_steps, event.epochs, event.step, event.epoch
        if self.status == PREPARING:  # a followed run's liveness is run.json's to say
            self.status = RUNNING

    def _finished(self, event: Finished) -> None:
        outcome = RunOutcome.from_finished(event)
        if not outcome.run_dir and self.run_dir:
            outcome = RunOutcome.from_json({**outcome.to_json(), "run_dir": self.run_dir})
        self.result = outcome
        self.status = session_state_of_ended(outcome.status)
        self._tail = None  # nothing follows a run's last event

    # -- a run folder -----------------------------------------------------------------
    def follow(self, run_dir: str | Path) -> SessionChange:
        """Show the run in ``run_dir``: what its ``metrics.jsonl`` holds now, and,
        while ``run.json`` says it runs, what ``poll`` finds appended later
        (an unreadable ``run.json``: the curves, and no status)."""
        folder = RunDir(run_dir)
        try:
            stored = folder.read_record().status
        except UsageError as exc:  # its curves may still be there to see
            log.info("cannot read %s: %s", folder.run_json, exc)
            stored = ""
        self._reset(IDLE, "follow")
        self.run_dir = str(folder.path)
        self.status = session_state_of_stored(stored)
        self._tail = folder.tail()
        self._notify(SessionChange(reset=True, status=True))
        change = self._poll(replay=True, everything=True)
        if self._tail is not None and not self.active:
            self._tail = None  # an ended run: nothing more will come
        return change

    def poll(self) -> SessionChange:
        """Read what the followed ``metrics.jsonl`` gained since the last call (one chunk)."""
        return self._poll(replay=False, everything=False)

    def _poll(self, *, replay: bool, everything: bool) -> SessionChange:
        tail = self._tail
        if tail is None:
            return SessionChange()
        events = tail.read_all() if everything else tail.read_new()
        self.bad_lines = tail.bad_lines
        if tail.restarted:  # the file was replaced: start its curves again
            self.curves = RunCurves(self.curves.smoother.weight)
            self.progress, self.evals = RunProgress(), []
            self._notify(SessionChange(reset=True))
        return self.apply(events, replay=replay)

    def stop_following(self) -> None:
        self._tail = None

    def clear(self) -> SessionChange:
        """No run any more (its folder was deleted, say)."""
        self._reset(IDLE, "")
        return self._notify(SessionChange(reset=True, status=True))

    # -- what views ask ------------------------------------------------------------------
    def metric_names(self) -> list[str]:
        """Every metric the run's evaluations reported, in the order first seen."""
        names: dict[str, None] = {}
        for event in self.evals:
            names.update(dict.fromkeys(event.metrics))
        return list(names)

    def latest_eval(self, split: str = "val") -> EvalResult | None:
        return next((e for e in reversed(self.evals) if e.split == split), None)
