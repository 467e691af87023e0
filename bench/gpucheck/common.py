"""What every check shares: its environment, its outcome, engine runs and timing.

A check is a function ``check(env: CheckEnv, out: Outcome) -> None``.  It
records assertions with ``out.expect`` (a false one fails the check),
figures with ``out.figure`` and plain facts with ``out.fact``; it raises
``Skipped`` when it cannot apply here.  On a machine without CUDA
(``--cpu-dry-run``) a check still runs its code at tiny scale on the CPU, so
that a rotten check shows up before a GPU session is spent on it; it guards
its CUDA-only assertions with ``env.cuda``.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

ROOT = Path(__file__).resolve().parents[2]


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Skipped(Exception):
    """The check does not apply here (its reason is the message)."""


@dataclass
class Outcome:
    checks: dict[str, bool] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)
    goals: dict[str, dict[str, Any]] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)

    def expect(self, name: str, ok: Any, detail: Any = "") -> bool:
        ok = bool(ok)
        self.checks[name] = ok
        if detail != "":
            self.details[name] = str(detail)[:500]
        say(f"  {'PASS' if ok else 'FAIL'} {name}" + (f": {detail}" if detail != "" else ""))
        return ok

    def figure(self, name: str, value: Any) -> None:
        self.figures[name] = round(value, 4) if isinstance(value, float) else value
        say(f"  figure {name} = {self.figures[name]}")

    def goal(self, name: str, value: float | None, at_least: float | None = None, at_most: float | None = None) -> None:
        """A figure with a target; a missed target is reported, not a failed check."""
        if at_least is not None:
            met, text = value is not None and value >= at_least, f">= {at_least:g}"
        else:
            met, text = value is not None and value <= at_most, f"<= {at_most:g}"
        shown = None if value is None else round(value, 4)
        self.goals[name] = {"value": shown, "goal": text, "met": met}
        say(f"  goal {name}: {shown} (goal {text}): {'met' if met else 'NOT met'}")

    def fact(self, name: str, value: Any) -> None:
        self.facts[name] = value

    @property
    def failed(self) -> list[str]:
        return [name for name, ok in self.checks.items() if not ok]


@dataclass
class CheckEnv:
    name: str
    cuda: bool
    dry_run: bool
    work: Path
    deadline: float  # time.monotonic() by which the check must have returned

    @property
    def device(self) -> str:
        return "cuda" if self.cuda else "cpu"

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def pick(self, full: Any, tiny: Any) -> Any:
        """``full`` on a GPU, ``tiny`` in the CPU dry run."""
        return tiny if self.dry_run or not self.cuda else full

    def memory_gib(self) -> float:
        """Memory of cuda:0 (a MIG slice is smaller than the GPU), 0 without CUDA."""
        if not self.cuda:
            return 0.0
        import torch

        return torch.cuda.get_device_properties(0).total_memory / 2**30

    def sync(self) -> None:
        if self.cuda:
            import torch

            torch.cuda.synchronize()


# -- the engine, through its script API ------------------------------------------------------


def register_tasks() -> None:
    """The check's own tasks (synthetic data, probes) in this process's registry."""
    from trainlab.pluginhost.host import registry

    from gpucheck.tasks import GpuCheckPlugin

    reg = registry()
    if any(p.name == "gpu-check" for p in reg.plugins):
        return
    record = reg.add_plugin(GpuCheckPlugin(), "gpu-check", "1")
    if record.status != "ok":
        raise RuntimeError(f"the gpu-check plugin did not load: {record.status}: {record.message}")


def engine_run(task: str, data: Path | str, params: dict[str, Any], out: Path, callbacks: Iterable[Any] = ()):
    """``run_training`` on ``task``; returns (RunResult, run folder)."""
    from trainlab.engine.scripting import RunRequest, run_training

    result = run_training(RunRequest(task=task, data=str(data), params=dict(params), out=str(out)), callbacks=list(callbacks))
    return result, Path(result.run_dir)


def read_events(run_dir: Path) -> list[dict[str, Any]]:
    """metrics.jsonl as plain JSON (a truncated last line is tolerated, as the contract says)."""
    events = []
    path = Path(run_dir) / "metrics.jsonl"
    if not path.exists():
        return events
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events


def checkpoint_state(path: Path) -> dict[str, Any]:
    """The JSON part of a TrainLab checkpoint (loop position, scaler, ...), read with safetensors alone."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as handle:
        return json.loads((handle.metadata() or {})["trainlab"])


def free_cuda() -> None:
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:
        pass


def callback_base():
    from trainlab.api.callbacks import Callback

    return Callback


def stopwatch(warm_steps: int, measured_steps: int, sync: Callable[[], None]):
    """A callback timing optimizer steps ``warm_steps+1 .. warm_steps+measured_steps``, then stopping the run.

    The device is synchronised at the two ends only (as the hand-written
    loops are), so the loop's own overlap of CPU and GPU work is measured.
    Stopping skips evaluation and the model export, which are not what is
    compared.
    """

    class Stopwatch(callback_base()):
        def __init__(self) -> None:
            self.t0 = self.t1 = None
            self.samples0 = self.samples1 = 0

        def on_step_end(self, state) -> None:
            if state.step == warm_steps:
                sync()
                self.t0, self.samples0 = time.perf_counter(), state.samples_seen
            elif state.step == warm_steps + measured_steps:
                sync()
                self.t1, self.samples1 = time.perf_counter(), state.samples_seen
                state.control.request_stop("measured")

        @property
        def rate(self) -> float:
            if self.t0 is None or self.t1 is None:
                raise RuntimeError(f"the run ended before step {warm_steps + measured_steps}: no measurement")
            return (self.samples1 - self.samples0) / (self.t1 - self.t0)

        @property
        def seconds(self) -> float:
            return (self.t1 or 0.0) - (self.t0 or 0.0)

    return Stopwatch()


def tf32_off_callback():
    """Turns TF32 off once the engine has set up the run (it turns TF32 on for every CUDA run)."""

    class Tf32Off(callback_base()):
        def on_run_start(self, state) -> None:
            set_tf32(False)

    return Tf32Off()


def set_tf32(enabled: bool) -> None:
    """TF32 for fp32 matmuls and convolutions, on or off.

    Matmuls through ``set_float32_matmul_precision``: after torch's newer
    per-backend switch alone, torch raises on every reader of the older one
    (``get_float32_matmul_precision``, ``matmul.allow_tf32``).
    """
    import torch

    torch.set_float32_matmul_precision("high" if enabled else "highest")
    conv = getattr(torch.backends.cudnn, "conv", None)
    if conv is not None and getattr(conv, "fp32_precision", None) is not None:
        conv.fp32_precision = "tf32" if enabled else "ieee"
    else:  # torch < 2.9
        torch.backends.cudnn.allow_tf32 = enabled


def tf32_state() -> dict[str, Any]:
    """Every TF32 switch torch has, new and legacy API; a reader that raises says so."""
    import torch

    readers = {
        "matmul.fp32_precision": lambda: torch.backends.cuda.matmul.fp32_precision,
        "cudnn.conv.fp32_precision": lambda: torch.backends.cudnn.conv.fp32_precision,
        "legacy matmul.allow_tf32": lambda: torch.backends.cuda.matmul.allow_tf32,
        "legacy cudnn.allow_tf32": lambda: torch.backends.cudnn.allow_tf32,
        "legacy get_float32_matmul_precision()": torch.get_float32_matmul_precision,
    }
    state = {}
    for name, read in readers.items():
        try:
            state[name] = read()
        except Exception as exc:  # noqa: BLE001 - torch raises when the two APIs were mixed
            state[name] = f"raises {type(exc).__name__}: {str(exc)[:160]}"
    return state


# -- side-by-side figures ---------------------------------------------------------------------------


def alternate(env: CheckEnv, variants: dict[str, Callable[[], float]], rounds: int) -> tuple[dict[str, list[float]], int]:
    """Each variant once per round, the order rotating from round to round.

    Returns the rates per variant and how many rounds ran: after the first,
    a round is left out when it would not end before the check's deadline
    (the figures then rest on fewer rounds, and say so).
    """
    names = list(variants)
    rates: dict[str, list[float]] = {name: [] for name in names}
    durations: list[float] = []
    for r in range(rounds):
        if durations and env.left() < max(durations) * 1.3 + 5:
            say(f"  stopping after {r} round(s): {env.left():.0f} s left of this check's time")
            return rates, r
        start = time.monotonic()
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            rate = variants[name]()
            rates[name].append(rate)
            say(f"  round {r + 1} {name}: {rate:,.1f} samples/s")
            free_cuda()
        durations.append(time.monotonic() - start)
    return rates, rounds


def ratios(rates: dict[str, list[float]], top: str, bottom: str) -> list[float]:
    """Per-round ratios (measured in the same round)."""
    return [a / b for a, b in zip(rates[top], rates[bottom]) if b]


def spread(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {
        "median": round(statistics.median(values), 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
        "n": len(values),
    }


def env_threads() -> None:
    """On the CPU dry run, one torch thread: the machine is shared and the figures mean nothing there."""
    if os.environ.get("GPU_CHECK_DRY_RUN") == "1":
        import torch

        torch.set_num_threads(1)
