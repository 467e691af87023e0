"""What the loop's per-step loss bookkeeping costs: LossWindow against the six operations it replaced.

Per step the loop used to keep the running loss and the count of finite
steps on the device with six tensor operations (detach, cast, multiply by
the step's size, add to the sum, isfinite, add to the count); it now hands
the detached loss to ``LossWindow``, which folds steps in runs.  Both are
timed here on the CPU, alternating, over ``--steps`` steps and one read;
the figure is microseconds per step (median over ``--rounds``).  On CUDA
each of the operations removed is also a kernel launch.

    python bench/loss_window.py [--steps 20000] [--rounds 7] [--quick] [--json]
"""

from __future__ import annotations

import statistics
import sys

import torch

from pairs import Clock, bench_parser, emit, run_pairs, speaker
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
    parser = bench_parser(__doc__, "2,000 steps, 2 rounds")
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7, help="pairs of runs, alternating")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.rounds = 2000, 2
    say = speaker(args)
    torch.set_num_threads(1)
    loss = torch.tensor(0.5)
    sides = {"six_operations": six_operations, "loss_window": loss_window}
    assert six_operations(loss, 10)[0] == loss_window(loss, 10)[0]  # the same sum

    def per_step(side):
        def run() -> float:
            with Clock() as clock:
                side(loss, args.steps)
            return clock.wall / args.steps * 1e6
        return run

    times = run_pairs({name: per_step(side) for name, side in sides.items()}, args.rounds)
    result = {name: round(statistics.median(v), 3) for name, v in times.items()}
    result.update(unit="microseconds per step (CPU, one thread)", steps=args.steps, rounds=args.rounds,
                  spread={name: [round(min(v), 3), round(max(v), 3)] for name, v in times.items()})  # fmt: skip
    say(f"six operations {result['six_operations']} us a step, LossWindow {result['loss_window']} us")
    return emit("loss_window", args, result)


if __name__ == "__main__":
    sys.exit(main())
