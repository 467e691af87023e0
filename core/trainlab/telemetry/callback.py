"""Telemetry in a run: a sampler beside the training loop, its samples in metrics.jsonl."""

from __future__ import annotations

import socket
from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

from trainlab.api.callbacks import Callback, RunState
from trainlab.api.errors import UsageError
from trainlab.api.events import Finished, Log, SystemSample
from trainlab.telemetry.ranks import with_ranks
from trainlab.telemetry.sampler import MAX_RUN_INTERVAL, MIN_INTERVAL, TelemetrySampler


class TelemetryCallback(Callback):
    """Writes ``system`` events into a run while it trains.

    A sampler thread starts with the run and stops at its end (or exception);
    one sample every ``every`` seconds (default 5; 0 turns telemetry off) goes
    to ``state.emit``, so ``metrics.jsonl`` keeps the run's GPU history and
    every other callback (the window's bridge) sees it.  Problems (a GPU lost,
    a query failing) go into the run once each, as warning ``log`` events.

    ``ranks`` (a run over several processes, on rank 0): returns the ranks'
    last telemetry records (``trainlab.telemetry.ranks``), merged into each
    sample written.
    """

    def __init__(
        self, every: float = 5.0, *, nvml: Any = None, processes: bool = True, ranks: Callable[[], Sequence[Mapping[str, Any]]] | None = None
    ) -> None:
        every = float(every)
        if every and every < MIN_INTERVAL:
            raise UsageError(f"telemetry every {every:g} s: must be 0 (off) or at least {MIN_INTERVAL:g} s")
        if every > MAX_RUN_INTERVAL:
            raise UsageError(f"telemetry every {every:g} s: must be at most {MAX_RUN_INTERVAL:g} s (an hour)")
        self.every = every
        self._nvml = nvml
        self._processes = processes
        self._ranks = ranks
        self._host = socket.gethostname()
        self.sampler: TelemetrySampler | None = None
        self._state: RunState | None = None
        self._finished = False

    def on_run_start(self, state: RunState) -> None:
        if not self.every:
            return
        self._state = state
        self._finished = False
        # The thread wakes once per sample written: with every=60 it reads /proc
        # and NVML once a minute, not every 5 s only to throw 11 samples away.
        # A GPU lost in between is reported at the next sample.
        self.sampler = TelemetrySampler(self.every, path=state.run_dir, nvml=self._nvml, processes=self._processes)
        self.sampler.on_problem(self._problem)
        self.sampler.start(self._sample)

    def on_event(self, event: Any) -> None:
        # The engine emits Finished before on_run_end: nothing is written after
        # it.  Only a flag here: this runs under the engine's event lock, which
        # the sampler thread may be waiting for, so joining it would deadlock.
        if isinstance(event, Finished):
            self._finished = True

    def _sample(self, sample: SystemSample) -> None:
        state = self._state
        if state is None or self.sampler is None or self._finished:
            return
        if self._ranks is not None:
            sample = with_ranks(sample, self._ranks(), self._host)
        state.emit(replace(sample, step=state.step, epoch=state.epoch))

    def _problem(self, message: str) -> None:
        state = self._state
        if state is not None and not self._finished:
            state.emit(Log(level="warning", message=f"telemetry: {message}", step=state.step, epoch=state.epoch))

    def _close(self) -> None:
        if self.sampler is not None:
            self.sampler.close()
        self._state = None

    def on_run_end(self, state: RunState) -> None:
        self._close()

    def on_exception(self, state: RunState, exc: BaseException) -> None:
        self._close()
