"""What the loop's per-step loss bookkeeping costs: LossWindow against the six operations it replaced.

Per step the loop used to keep the running loss and the count of finite
steps on the device with six tensor operations (detach, cast, multiply by
the step's size, add to the sum, isfinite, add to the count); it now hands
the detached loss to ``LossWindow``, which folds steps in runs.  Both are
timed here on the CPU, alternating, over ``--steps`` steps and one read;
the figure is microseconds per step (median over ``--rounds``).  On CUDA
each of the operations removed is also a kernel launch.

    python bench/loss_window.py [--steps 20000] [--rounds 7] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch

from pairs import order
from trainlab.engine.loss_window import LossWindow


def six_operations(loss: torch.Tensor, steps: int) -> list[float]:
    loss_sum, finite = torch.zeros(()), torch.zeros(())
    for _ in range(steps):
        loss_sum += loss.detach().float() * 128
        finite += torch.isfinite(loss_sum)
    return torch.stack((loss_sum.float(), finite.float())).tolist()


def loss_window(loss: torch.Tensor, steps: int) -> tuple[float, int]:
    window = LossWindow(torch.device("cpu"))
    for _ in range(steps):
        window.add(loss.detach(), 128.0)
    return window.read()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    loss = torch.tensor(0.5)
    sides = {"six_operations": six_operations, "loss_window": loss_window}
    assert six_operations(loss, 10)[0] == loss_window(loss, 10)[0]  # the same sum
    times: dict[str, list[float]] = {name: [] for name in sides}
    for round_ in range(args.rounds):
        for name in order(round_, list(sides)):
            start = time.perf_counter()
            sides[name](loss, args.steps)
            times[name].append((time.perf_counter() - start) / args.steps * 1e6)
    result = {name: round(statistics.median(v), 3) for name, v in times.items()}
    result.update(unit="microseconds per step (CPU, one thread)", steps=args.steps, rounds=args.rounds,
                  spread={name: [round(min(v), 3), round(max(v), 3)] for name, v in times.items()})  # fmt: skip
    if not args.json:
        print(f"six operations {result['six_operations']} us a step, LossWindow {result['loss_window']} us", file=sys.stderr)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
