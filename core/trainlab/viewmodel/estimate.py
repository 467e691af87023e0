"""The memory estimate as the window asks for it: the child that makes it, its result, and what helps.

No Qt here.  ``python -m trainlab.viewmodel.estimate`` is the child process
that plans the run and estimates it (``trainlab.engine.memory``: weights,
gradients and optimizer states on the meta device, the activation probe in
a grandchild, cached by ``probe_key``), exactly as ``train --dry-run``
does.  A child, not a thread of the window: planning seeds every random
generator and builds the task's model, and a run may be training in the
window's own process at that moment (the default run mode), which must not
see its generators reseeded or share the GIL with a model build.

``measured=False`` is the cheap kind (no probe, no training step, nothing
on the GPU): weights, gradients and optimizer states only, which the window
makes beside a run started without an estimate (``docs/finetuning.md``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

import trainlab.engine.memory as engine_memory
from trainlab.engine import memory
from trainlab.engine.memory import HEADROOM, NOT_SHAPING, MemoryEstimate
from trainlab.engine.plan import RunRequest, plan_run
from trainlab.system.fileio import free_bytes

# a requested estimate probes two training steps in a grandchild: a large
# model takes minutes to load; past this the window says so and gives up
ESTIMATE_TIMEOUT_S = 900.0
POLL_S = 0.25  # how often the waiting thread looks for a cancel
CANCELLED = "cancelled"  # the error of an estimate cancelled before it ended
# NOT_SHAPING leaves out what changes neither the model nor a step's shapes;
# the micro-batch (from batch_size and micro_batch_size) does change the
# total, and merged_model what the run writes
MEMORY_NEUTRAL = frozenset(NOT_SHAPING - {"batch_size", "micro_batch_size", "merged_model"})


def settings_key(task_id: str, data: str, values: Mapping[str, Any]) -> str:
    """What an estimate is valid for: the task, the data and every value that changes memory or outputs."""
    shaping = {k: v for k, v in sorted(values.items()) if k not in MEMORY_NEUTRAL}
    where = str(Path(data).expanduser().resolve()) if data else ""
    return json.dumps([task_id, where, shaping], sort_keys=True, default=str)


@dataclass(frozen=True)
class Remedy:
    """One change that lowers the memory a run needs: set ``param`` to ``value``."""

    param: str
    value: str


@dataclass(frozen=True)
class EstimateResult:
    """An estimate for one ``key`` of settings, or why there is none (``error``)."""

    key: str
    memory: MemoryEstimate | None = None
    measured: bool = True  # False: weights, gradients and optimizer only (activations not probed)
    error: str = ""
    outputs: dict[str, Any] | None = None  # LoRA: {"merged_model": bool, "merged_model_bytes": int}
    made_at: float = field(default_factory=time.time)

    @property
    def static_total(self) -> int:
        m = self.memory
        return m.weights + m.gradients + m.optimizer if m is not None else 0

    @property
    def fits(self) -> bool | None:
        """True or False when the estimate can tell, None when it cannot (no estimate, activations not measured)."""
        if self.memory is None or not self.memory.capacity:
            return None
        if self.measured:
            return self.memory.fits
        # the static part alone over the limit: activations only add to it
        return False if self.static_total > self.memory.capacity * (1 - HEADROOM) else None

    def with_capacity(self, capacity: int) -> "EstimateResult":
        return replace(self, memory=replace(self.memory, capacity=int(capacity))) if self.memory is not None else self


def current_ram(result: EstimateResult) -> EstimateResult:
    """A RAM estimate against the RAM free now (the probe's figure may be hours old); a GPU's stays."""
    if result.memory is None or result.memory.kind != "ram":
        return result
    return result.with_capacity(engine_memory.device_memory_bytes("cpu"))  # through the module: the hardware boundary


def remedies(values: Mapping[str, Any], schema: Mapping[str, Any]) -> list[Remedy]:
    """What lowers the run's memory that the task supports and the settings do not use yet."""
    found = []
    if "micro_batch_size" in schema and str(values.get("micro_batch_size", "0")).strip().lower() != "auto":
        found.append(Remedy("micro_batch_size", "auto"))
    param = schema.get("gradient_checkpointing")
    if param is not None and "on" in (param.choices or ()) and values.get("gradient_checkpointing") != "on":
        found.append(Remedy("gradient_checkpointing", "on"))
    param = schema.get("finetune")
    if param is not None and "lora" in (param.choices or ()) and values.get("finetune") not in ("lora", "qlora"):
        found.append(Remedy("finetune", "lora"))
    return found


def outputs_of(summary: Any) -> dict[str, Any] | None:
    """A LoRA run's outputs as its data check or plan found them (``DataSummary.extra``), else None."""
    extra = getattr(summary, "extra", None) or {}
    finetune = extra.get("finetune") if isinstance(extra, dict) else None
    outputs = finetune.get("outputs") if isinstance(finetune, dict) else None
    return dict(outputs) if isinstance(outputs, dict) else None


@dataclass(frozen=True)
class DiskNeed:
    """What a LoRA run writes to model/ and adapter/, and the free space where runs go."""

    merged_model: bool
    merged_bytes: int
    adapter_bytes: int | None  # the trainable weights (adapters and head), once an estimate counted them
    folder: str
    free: int | None

    @property
    def total(self) -> int:
        return self.merged_bytes + (self.adapter_bytes or 0)

    @property
    def enough(self) -> bool:
        return self.free is None or self.free >= self.total


def disk_need(outputs: dict[str, Any] | None, memory: MemoryEstimate | None, folder: Path) -> DiskNeed | None:
    if not outputs:
        return None

    merged = bool(outputs.get("merged_model"))
    # the adapters' file holds the trainable tensors at their dtype: the gradients' bytes
    adapters = int(memory.gradients) if memory is not None else None
    return DiskNeed(merged, int(outputs.get("merged_model_bytes") or 0) if merged else 0, adapters, str(folder), free_bytes(folder))


# -- the child process, from the window's side ----------------------------------------
def estimate_in_child(request: dict[str, Any], *, measured: bool = True, nice: bool = False,
                      cancel: threading.Event | None = None, timeout: float | None = None) -> dict[str, Any]:
    """Run the estimate child for ``request`` (``RunRequest`` fields); its JSON result, or {"error": reason}.

    Never raises for the estimate's own failures: the window shows them as "no estimate: <reason>".
    ``cancel`` (set by the window when it closes) ends the child and its probe.
    """
    timeout = ESTIMATE_TIMEOUT_S if timeout is None else timeout
    payload = json.dumps({"request": request, "measured": measured, "nice": nice})
    posix = os.name == "posix"
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainlab.viewmodel.estimate"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
        # its own process group, so that ending it ends the probe it started too
        start_new_session=posix,
        creationflags=0 if posix else getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0),
    )
    deadline = time.monotonic() + timeout
    pending: str | None = payload
    while True:
        try:
            out, err = proc.communicate(input=pending, timeout=POLL_S)
            break
        except subprocess.TimeoutExpired:
            pending = None
            late = time.monotonic() > deadline
            if late or (cancel is not None and cancel.is_set()):
                _end(proc, posix)
                proc.communicate()
                if late:
                    return {"error": f"the estimate took longer than {timeout:g} s and was stopped"}
                return {"error": CANCELLED}
    lines = [line for line in (out or "").splitlines() if line.startswith("{")]
    if not lines:
        tail = " ".join((err or "").strip().splitlines()[-1:]) or f"the estimate ended with exit code {proc.returncode}"
        return {"error": tail.removeprefix("trainlab: ")}
    return json.loads(lines[-1])


def _end(proc: subprocess.Popen, posix: bool) -> None:
    try:
        if posix:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError, OSError):
        pass


def result_from(key: str, data: dict[str, Any]) -> EstimateResult:
    """The child's JSON as an ``EstimateResult`` for ``key``."""
    if data.get("error") or not isinstance(data.get("memory"), dict):
        return EstimateResult(key, error=str(data.get("error") or "the estimate gave no figure"))
    outputs = data.get("outputs")
    return EstimateResult(key, MemoryEstimate.from_json(data["memory"]), measured=bool(data.get("measured", True)),
                          outputs=dict(outputs) if isinstance(outputs, dict) else None)


# -- the child process itself ---------------------------------------------------------
def _estimate(spec: dict[str, Any]) -> dict[str, Any]:
    measured = bool(spec.get("measured", True))
    request = dict(spec["request"])
    if not measured:  # micro_batch_size=auto would probe while planning
        request["params"] = {**request.get("params", {}), "micro_batch_size": "0"}
    plan = plan_run(RunRequest(**request))
    outputs = outputs_of(plan.summary)
    if measured:
        estimate = plan.memory or memory.estimate_memory(plan)  # what train --dry-run prints
    else:
        static = memory.static_bytes(memory.meta_model(plan.task, plan.ctx), str(plan.params.get("optimizer") or "adamw"))
        estimate = memory.MemoryEstimate(
            device=str(plan.ctx.device), kind="gpu" if plan.ctx.is_cuda else "ram",
            capacity=memory.device_memory_bytes(plan.ctx.device), weights=static.weights, gradients=static.gradients,
            optimizer=static.optimizer, activations=0, other=0, micro_batch=memory.plan_micro_batch(plan),
            batch_size=int(plan.params["batch_size"]), activation_per_example=0.0, activation_intercept=0.0,
            parameters=static.parameters, trainable=static.trainable,
        )
    return {"memory": estimate.to_json(), "measured": measured, "outputs": outputs}


def main() -> int:
    spec = json.loads(sys.stdin.read())
    if spec.get("nice") and hasattr(os, "nice"):
        os.nice(10)  # beside a run that just started: the run comes first
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # library prints must not corrupt the result line
    try:
        result = _estimate(spec)
    except Exception as exc:  # noqa: BLE001 - any failure is the window's "no estimate: <reason>"
        text = " ".join(str(exc).split()) or type(exc).__name__
        result = {"error": text}
    real_stdout.write(json.dumps(result) + "\n")
    real_stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
