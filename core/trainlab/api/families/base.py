"""What every task family's evaluation shares: the metric accumulator.

A ``MetricAccumulator`` sees one pass over one split.  The engine calls:

* ``update(batch)`` with each ``EvalBatch`` the task's ``eval_step`` returned;
* ``state()`` / ``merge(state)`` to combine the shares of several processes
  (a run over several GPUs evaluates a shard on each; every example is
  counted once because each process holds disjoint examples);
* ``compute()`` once, for the split's report: ``{"metrics": {name: value},
  "loss", "samples", "family", ...}`` plus the family's own details, all JSON
  values (it goes into eval events, ``eval.json`` and ``run.json``).

This base class keeps the model outputs, targets and example keys of the
pass (concatenated on the CPU) and the summed loss (on the device, read once
at the end: no device sync per batch); a family implements ``compute``.
A batch whose ``loss_sum`` is None measured no loss: when no batch of any
process carried one, ``loss_sum`` and ``loss`` are None, and the report says
``"loss": null`` rather than a 0 nobody measured.
Keeping the rows, not running sums, is what lets a family report examples
(the worst regressions, the misclassified texts) and fit thresholds, and lets
``merge`` be a plain concatenation.  A plugin of another family may subclass
it or implement the four methods itself.
"""

from __future__ import annotations

from typing import Any, Sequence

from trainlab.api.details import fill_details


class MetricAccumulator:
    """Collects one split's evaluation batches; subclasses compute the metrics."""

    family = ""

    def __init__(self, task: Any, split: str) -> None:
        self.task = task
        self.split = split
        self._outputs: list[Any] = []
        self._targets: list[Any] = []
        self.keys: list[Any] = []
        self._has_keys = True
        self._loss_sum: Any = None  # a device tensor while updating; None while no batch carried a loss
        self._loss_total: float | None = None  # merged in from other processes; None while none carried a loss
        self.samples = 0

    # -- the engine's side -------------------------------------------------
    def update(self, batch: Any) -> None:
        outputs = batch.outputs if batch.outputs is not None else batch.logits
        self.add_loss(batch.loss_sum)
        self._outputs.append(outputs.detach().float().cpu())
        targets = batch.targets.detach().cpu()
        self._targets.append(targets)
        self.samples += int(targets.shape[0])
        if batch.keys is None:
            self._has_keys = False
        else:
            self.keys.extend(batch.keys)

    def state(self) -> dict[str, Any]:
        """Everything collected, as CPU tensors and plain values."""
        return {
            "outputs": self.outputs,
            "targets": self.targets,
            "keys": list(self.keys) if self._has_keys else None,
            "loss_sum": self.loss_sum,
            "samples": self.samples,
        }

    def merge(self, state: dict[str, Any]) -> None:
        """Add another accumulator's ``state()`` (another process's examples)."""
        if state["samples"]:
            self._outputs.append(state["outputs"])
            self._targets.append(state["targets"])
        if state.get("keys") is None:
            self._has_keys = False
        else:
            self.keys.extend(state["keys"])
        self.merge_loss(state.get("loss_sum"))
        self.samples += int(state["samples"])

    def add_loss(self, loss_sum: Any) -> None:
        """One batch's summed loss (a device tensor), or None: the batch measured none."""
        if loss_sum is None:
            return
        loss = loss_sum.detach().float()
        self._loss_sum = loss if self._loss_sum is None else self._loss_sum + loss

    def merge_loss(self, loss_sum: float | None) -> None:
        """Another process's summed loss, or None: that process measured none."""
        if loss_sum is not None:
            self._loss_total = (self._loss_total or 0.0) + float(loss_sum)

    def compute(self) -> dict[str, Any]:
        raise NotImplementedError(f"{type(self).__name__} must implement compute()")

    # -- what compute() reads -------------------------------------------------
    @property
    def outputs(self) -> Any:
        import torch

        return torch.cat(self._outputs) if self._outputs else torch.zeros(0)

    @property
    def targets(self) -> Any:
        import torch

        return torch.cat(self._targets) if self._targets else torch.zeros(0)

    @property
    def loss_sum(self) -> float | None:
        """The summed loss of every batch that carried one; None when none did."""
        if self._loss_sum is None and self._loss_total is None:
            return None
        own = float(self._loss_sum.item()) if self._loss_sum is not None else 0.0
        return own + (self._loss_total or 0.0)

    @property
    def loss(self) -> float | None:
        """The mean loss per example; None when examples were seen but none carried a loss
        (an empty pass reads 0.0, as it always has)."""
        if not self.samples:
            return 0.0
        total = self.loss_sum
        return None if total is None else total / self.samples

    def example_keys(self) -> Sequence[Any] | None:
        return list(self.keys) if self._has_keys and self.keys else None

    def describe(self, keys: Sequence[Any]) -> list[str]:
        """A path or a text for each key, from the task (for example lists)."""
        try:
            return list(self.task.describe_examples(self.split, keys))
        except Exception:  # noqa: BLE001 - examples are a nicety; the metrics stand without them
            return [str(k) for k in keys]

    def report(self, metrics: dict[str, float], *, details: Any = None, **extra: Any) -> dict[str, Any]:
        """The report layout every family shares; ``metrics`` also appear at
        the top level, where plugin API 1 readers of eval.json look for them.

        ``details`` (plugin API 2.1): what the results page shows besides the
        metrics, either ``{name: data}`` for the task's declared details
        (``TaskSpec.details``: rows of a ``Table`` or ``ExampleRows``, lines
        of a ``Series``, a picture path or a matrix of a ``Figure``) or a list
        of complete details; written under ``details`` in their JSON form.
        ``extra`` keys are written as they are (plugin API 2.0), for readers
        of eval.json; the window lists numbers among them as details, never
        as metrics.
        """
        out: dict[str, Any] = {"family": self.family, "samples": self.samples, "loss": self.loss}
        out.update(metrics)
        out["metrics"] = dict(metrics)
        out.update(extra)
        if details is not None:
            declared = self.task.spec.detail_specs() if getattr(self.task, "spec", None) is not None else ()
            out["details"] = [d.to_json() for d in fill_details(declared, details)]
        return out


def plain(value: Any) -> Any:
    """A key or value as a JSON value (tensors and numpy scalars become numbers)."""
    if hasattr(value, "item"):
        return value.item()
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)
