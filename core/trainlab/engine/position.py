"""Where a run's loop is: saved in every checkpoint, restored on resume.

Kept apart from the loop (which imports torch) so that planning a run, a dry
run included, can read it without loading torch.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any


@dataclass
class LoopPosition:
    """Where the loop is, saved in every checkpoint (resume restarts here)."""

    epoch: int = 1  # the epoch to run next (1-based)
    batches_done: int = 0  # batches of that epoch already trained
    step: int = 0
    samples_seen: int = 0
    micro_splits: int = 1
    best_metric: float | None = None
    best_step: int | None = None
    best_epoch: int | None = None
    bad_evals: int = 0
    epochs_total: int = 0
    segments: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return copy.deepcopy(dict(self.__dict__))

    def copy(self) -> "LoopPosition":
        return LoopPosition(**self.to_json())
