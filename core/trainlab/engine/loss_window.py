"""The training loss between two read-backs, kept on the device.

The loop reads the loss back from the device every ``log_interval`` seconds,
not at every step (a read waits for the device).  Until then each step adds
its summed loss here: a detached 0-dim tensor and a factor (the examples it
counts), with no arithmetic of its own.  Steps are folded into a running sum
in runs of the same factor, every ``FOLD_EVERY`` steps at the most, with a
handful of operations for the whole run; before this window a step cost
six (detach, cast, multiply, add, isfinite, add).  A read folds what is
left and brings the sum and the count of steps before the first non-finite
one back in one device sync: a NaN or infinite loss fails the run naming its
first step.

The sum is that of each step's value times its factor, in float32 on the
device, summed pairwise within a fold rather than one step after the other:
it may differ from a step-by-step sum in its last bits.
"""

from __future__ import annotations

from typing import Any

FOLD_EVERY = 256  # steps held at the most before they are summed (0-dim tensors: bytes each)


class LossWindow:
    """Summed training loss of the steps since the last read, on the device."""

    def __init__(self, device: Any):
        self.device = device
        self.reset()

    def reset(self) -> None:
        self._values: list[Any] = []
        self._factor: float | None = None
        self._sum: Any = None  # the steps folded so far: sum of value * factor
        self._leading: Any = None  # ... and how many of them came before the first non-finite one
        self.steps = 0

    def add(self, value: Any, factor: float) -> None:
        """One step: ``value`` (a 0-dim tensor, detached) counts ``factor`` times."""
        if self._values and (factor != self._factor or len(self._values) >= FOLD_EVERY):
            self._fold()
        self._values.append(value)
        self._factor = factor
        self.steps += 1

    def _fold(self) -> None:
        import torch

        stacked = torch.stack(self._values).float()
        total = stacked.sum() * self._factor
        leading = torch.isfinite(stacked).cumprod(0).sum()  # steps before the first non-finite one
        if self._sum is None:
            self._sum, self._leading = total, leading
        else:
            # The earlier steps were all finite exactly when their sum is: only then do these count on.
            self._leading = self._leading + leading * torch.isfinite(self._sum)
            self._sum = self._sum + total
        self._values = []

    def read(self) -> tuple[float, int]:
        """(the window's summed loss, its steps before the first non-finite one): one device sync."""
        import torch

        if self._values:
            self._fold()
        if self._sum is None:
            return 0.0, 0
        total, leading = torch.stack((self._sum.float(), self._leading.float())).tolist()
        return total, int(leading)
