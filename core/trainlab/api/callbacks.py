"""Engine callbacks, the run state they see, and the control flags.

Callbacks have paired start/end hooks and an exception hook, in the manner of
Lightning's and the HF Trainer's; they steer the loop only through the
``RunControl`` flags.  Metrics writing, checkpointing, early stopping,
telemetry and the GUI bridge are all callbacks.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

if TYPE_CHECKING:  # pragma: no cover
    from trainlab.api.events import EvalResult, Event


class RunControl:
    """Thread-safe requests to a running loop: stop, pause/resume.

    The loop honours them between optimizer steps, so a stop or pause takes
    effect within one step.
    """

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._running = threading.Event()
        self._running.set()
        self.stop_reason = ""

    def request_stop(self, reason: str = "stopped by the user") -> None:
        if not self._stop.is_set():
            self.stop_reason = reason
        self._stop.set()
        self._running.set()  # wake a paused loop so it can stop

    def pause(self) -> None:
        if not self._stop.is_set():
            self._running.clear()

    def resume(self) -> None:
        self._running.set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    def wait_while_paused(self, timeout: float | None = None) -> bool:
        """Block while paused; True when running again (or stopping)."""
        return self._running.wait(timeout)


@dataclass
class RunState:
    """What callbacks can read about the run; ``emit`` adds an event to it.

    ``emit_to`` is where emitted events go (the engine passes its callback
    list's dispatcher); without it, ``emit`` drops the event.
    """

    task_id: str
    params: dict[str, Any]
    run_dir: Path
    control: RunControl
    total_steps: int = 0
    epochs: int = 0
    step: int = 0  # optimizer steps completed
    epoch: int = 0  # the current epoch, 1-based
    samples_seen: int = 0
    best_metric: float | None = None
    best_step: int | None = None
    last_eval: Any = None
    metrics: dict[str, Any] = field(default_factory=dict)
    status: str = "running"
    error: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # free for callbacks to share values in
    emit_to: Callable[["Event"], None] | None = field(default=None, repr=False, compare=False)

    def emit(self, event: "Event") -> None:
        if self.emit_to is not None:
            self.emit_to(event)


class Callback:
    """Override what you need; every hook is a no-op by default.

    ``on_event`` sees every event of the run and may be called from another
    thread (the telemetry sampler); all other hooks run on the training thread.
    """

    def on_run_start(self, state: RunState) -> None: ...

    def on_run_end(self, state: RunState) -> None: ...

    def on_epoch_start(self, state: RunState) -> None: ...

    def on_epoch_end(self, state: RunState) -> None: ...

    def on_step_end(self, state: RunState) -> None: ...

    def on_eval_start(self, state: RunState) -> None: ...

    def on_eval_end(self, state: RunState, result: "EvalResult") -> None: ...

    def on_event(self, event: "Event") -> None: ...

    def on_exception(self, state: RunState, exc: BaseException) -> None: ...


_HOOKS = (
    "on_run_start",
    "on_run_end",
    "on_epoch_start",
    "on_epoch_end",
    "on_step_end",
    "on_eval_start",
    "on_eval_end",
    "on_event",
    "on_exception",
)


class CallbackList:
    """Dispatches each hook only to the callbacks that override it.

    The per-step hook runs on the hot path; skipping no-op overrides keeps
    the engine's overhead per step to a few attribute lookups.
    """

    def __init__(self, callbacks: Iterable[Callback]):
        self.callbacks = list(callbacks)
        self._by_hook: dict[str, list[Callable[..., Any]]] = {}
        for hook in _HOOKS:
            self._by_hook[hook] = [getattr(cb, hook) for cb in self.callbacks if _overrides(cb, hook)]
        # Reentrant: a plugin callback that fails in on_event is reported by
        # emitting a Log from inside the dispatch (IsolatedCallback).
        self._event_lock = threading.RLock()

    def call(self, hook: str, *args: Any) -> None:
        for func in self._by_hook[hook]:
            func(*args)

    def has(self, hook: str) -> bool:
        return bool(self._by_hook[hook])

    def emit(self, event: "Event") -> None:
        with self._event_lock:
            for func in self._by_hook["on_event"]:
                func(event)


class IsolatedCallback(Callback):
    """Wraps a plugin's callback: its errors are logged once and it is dropped."""

    def __init__(self, inner: Any, owner: str, log: Callable[[str], None]):
        self.inner = inner
        self.owner = owner
        self.log = log
        self.broken = False
        for hook in _HOOKS:
            if callable(getattr(inner, hook, None)):
                setattr(self, hook, self._wrap(hook))

    def _wrap(self, hook: str) -> Callable[..., None]:
        def call(*args: Any) -> None:
            if self.broken:
                return
            try:
                getattr(self.inner, hook)(*args)
            except Exception as exc:  # noqa: BLE001 - a plugin must not kill the run
                self.broken = True
                self.log(f"callback {type(self.inner).__name__} of plugin {self.owner!r} failed in {hook}: {exc!r}; disabled")

        return call


def _overrides(callback: Any, hook: str) -> bool:
    attr = getattr(callback, hook, None)
    if not callable(attr):
        return False
    return getattr(attr, "__func__", attr) is not getattr(Callback, hook)
