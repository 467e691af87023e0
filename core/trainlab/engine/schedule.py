"""Learning-rate schedules with warmup, in segments.

A run's schedule is a list of segments; "train N more epochs" on a finished
run appends one, with its own warmup and decay, starting at the current step.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Segment:
    start_step: int
    steps: int
    kind: str = "linear"  # linear, cosine, constant
    warmup_steps: int = 0

    def factor(self, step: int) -> float:
        local = step - self.start_step
        if self.warmup_steps and local < self.warmup_steps:
            return (local + 1) / (self.warmup_steps + 1)
        if self.kind == "constant":
            return 1.0
        span = max(1, self.steps - self.warmup_steps)
        progress = min(1.0, max(0.0, (local - self.warmup_steps) / span))
        if self.kind == "cosine":
            return 0.5 * (1.0 + math.cos(math.pi * progress))
        return max(0.0, 1.0 - progress)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class SegmentedSchedule:
    """A picklable ``lr_lambda`` for ``torch.optim.lr_scheduler.LambdaLR``."""

    def __init__(self, segments: list[Segment]):
        self.segments = list(segments)

    def __call__(self, step: int) -> float:
        segment = self.segments[0]
        for candidate in self.segments:
            if step >= candidate.start_step:
                segment = candidate
        return segment.factor(step)


def make_segment(start_step: int, steps: int, kind: str, warmup_ratio: float) -> Segment:
    return Segment(start_step=start_step, steps=steps, kind=kind, warmup_steps=int(round(steps * warmup_ratio)))
