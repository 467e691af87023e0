"""What every bench here shares: its options and output, and for side-by-side ones alternating pairs,
CPU time beside wall time, the spread.

Every bench takes ``--json`` and ``--quick`` (``bench_parser``) and ends with
``emit``: its figures as one JSON object, the last line of stdout (with
``--json`` the only one; progress and the human summary go to stderr through
``speaker``, silent with ``--json``).  ``--quick`` is a small configuration,
a minute at most, that checks the bench still works; its figures are not the
ones a goal reads.  The object names the bench and says whether it was quick.

On a shared machine wall time measures the load as much as the code: a
ratio of wall times can swing by a quarter within one hour. CPU time (what
this process's threads ran, ``time.process_time``, or the calling thread's,
``time.thread_time``) leaves out the time spent waiting for a core, so it
moves far less; both are reported, and a bench states which one its goal
reads.

* ``Clock``: wall, process CPU and thread CPU seconds of one measured block.
* ``order(pair)``: ABBA alternation, so drift over the run (a neighbour's
  job starting, the CPU warming) falls on both sides equally;
  ``run_pairs(sides, pairs)`` runs each side once a pair in that order.
* ``spread(values)`` and ``ratio_summary(a, b)``: the median with min, max
  and the half-range as a share of the median (``spread_pct``: a ratio
  reading 1.00 with spread 3 % lies within 0.97-1.03).
* ``instruction_counter()``: whether this machine can count instructions
  (``perf stat``; valgrind's callgrind), the one measure the load cannot
  move. On virtual machines without hardware counters perf says "not
  supported" and only callgrind is left, which runs 20-100x slower: a bench
  offers it as an option on a small workload, never by default.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence, TypeVar

T = TypeVar("T")


def bench_parser(doc: str | None, quick: str) -> argparse.ArgumentParser:
    """An argument parser with the options every bench takes; ``quick`` says what ``--quick`` runs."""
    parser = argparse.ArgumentParser(description=(doc or "").strip().split("\n\n")[0] or None)
    parser.add_argument("--json", action="store_true", help="only the JSON object, on stdout; no progress on stderr")
    parser.add_argument("--quick", action="store_true",
                        help=f"a small run (a minute at most) that checks the bench works, not the goal's figures: {quick}")
    return parser


def speaker(args: argparse.Namespace) -> Callable[..., None]:
    """``say(*parts)``: a line of progress or summary on stderr; nothing with ``--json``."""
    if getattr(args, "json", False):
        return lambda *parts: None
    return lambda *parts: print(*parts, file=sys.stderr, flush=True)


def emit(bench: str, args: argparse.Namespace, figures: Mapping[str, Any]) -> int:
    """Print ``figures`` as the last line of stdout, with the bench's name, whether it was
    ``--quick`` and the load average at the end (a figure of the same name wins); returns 0."""
    result = {"bench": bench, "quick": bool(getattr(args, "quick", False)), **figures}
    result.setdefault("load_average_end", load_average())
    sys.stdout.flush()
    print(json.dumps(result), flush=True)
    return 0


def run_pairs(sides: Mapping[str, Callable[[], T]], pairs: int, after: Callable[[int, str, T], None] | None = None,
              before: Callable[[int], None] | None = None) -> dict[str, list[T]]:
    """Each side once per pair, the sides in ``order``'s alternation; what each returned, by side,
    in pair order.  ``before(pair)`` sets up what both sides of a pair share (untimed);
    ``after(pair, side, result)`` is called after each run (to say it)."""
    results: dict[str, list[T]] = {name: [] for name in sides}
    for pair in range(pairs):
        if before is not None:
            before(pair)
        for name in order(pair, list(sides)):
            result = sides[name]()
            results[name].append(result)
            if after is not None:
                after(pair, name, result)
    return results


@dataclass
class Clock:
    """``with Clock() as c: ...`` then ``c.wall``, ``c.cpu`` (process) and ``c.thread`` in seconds."""

    wall: float = 0.0
    cpu: float = 0.0
    thread: float = 0.0
    _start: tuple[float, float, float] = field(default=(0.0, 0.0, 0.0), repr=False)

    def __enter__(self) -> "Clock":
        self._start = (time.perf_counter(), time.process_time(), time.thread_time())
        return self

    def __exit__(self, *exc: Any) -> None:
        wall, cpu, thread = self._start
        self.wall += time.perf_counter() - wall
        self.cpu += time.process_time() - cpu
        self.thread += time.thread_time() - thread


def order(pair: int, names: Sequence[str]) -> list[str]:
    """ABBA: pairs 0 and 3 run A first, 1 and 2 B first, and so on."""
    names = list(names)
    return names if pair % 4 in (0, 3) else names[::-1]


def spread(values: Sequence[float]) -> dict[str, Any]:
    values = [float(v) for v in values]
    if not values:
        return {"n": 0}
    median = statistics.median(values)
    half = (max(values) - min(values)) / 2
    return {
        "median": round(median, 6),
        "min": round(min(values), 6),
        "max": round(max(values), 6),
        "spread_pct": round(100 * half / median, 2) if median else None,
        "n": len(values),
    }


def ratio_summary(numerators: Sequence[float], denominators: Sequence[float]) -> dict[str, Any]:
    """Pairwise ratios numerator/denominator: their median, min, max and spread."""
    ratios = [a / b for a, b in zip(numerators, denominators) if b]
    return {**spread(ratios), "ratios": [round(r, 4) for r in ratios]}


def load_average() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def instruction_counter() -> dict[str, Any]:
    """What can count instructions here: ``perf`` (hardware counters) and/or ``callgrind``."""
    found: dict[str, Any] = {"perf": "absent", "callgrind": "absent"}
    perf = shutil.which("perf")
    if perf:
        try:
            done = subprocess.run([perf, "stat", "-x,", "-e", "instructions:u", "true"], capture_output=True, text=True, timeout=20)
            line = (done.stderr.strip().splitlines() or [""])[-1]
            found["perf"] = "not supported (no hardware counters in this VM)" if "not supported" in line or "not counted" in line else "ok"
        except (OSError, subprocess.SubprocessError) as exc:
            found["perf"] = f"failed: {exc}"
    if shutil.which("valgrind"):
        found["callgrind"] = "ok"
    return found


def perf_instructions(command: Sequence[str], env: dict[str, str] | None = None, timeout: float = 600) -> int | None:
    """User-space instructions of ``command`` through ``perf stat``; None where perf cannot count them."""
    perf = shutil.which("perf")
    if not perf:
        return None
    done = subprocess.run([perf, "stat", "-x,", "-e", "instructions:u", *command], capture_output=True, text=True, env=env, timeout=timeout)
    for line in done.stderr.splitlines():
        parts = line.split(",")
        if len(parts) > 2 and parts[2].startswith("instructions") and parts[0].isdigit():
            return int(parts[0])
    return None


def callgrind_instructions(command: Sequence[str], out_file: str, env: dict[str, str] | None = None, timeout: float = 1800) -> int | None:
    """Instructions executed by ``command`` under callgrind (``Ir``); slow: keep the workload small."""
    valgrind = shutil.which("valgrind")
    if not valgrind:
        return None
    done = subprocess.run(
        [valgrind, "--tool=callgrind", f"--callgrind-out-file={out_file}", *command],
        capture_output=True, text=True, env=env, timeout=timeout,
    )  # fmt: skip
    for line in done.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1].strip())
    return None


REGION_ENV = "TRAINLAB_BENCH_CALLGRIND"  # set in a child run under callgrind_region_instructions


def count_region(on: bool) -> None:
    """Turn callgrind's counting on or off for this process (no-op outside ``callgrind_region_instructions``).

    Counting only the measured passes, not ``import torch`` and the set-up,
    is what makes callgrind usable here: with counting off from the start,
    valgrind runs the rest some 5-10x slower instead of 50-100x.
    ``callgrind_control`` is synchronous: it returns once the process has
    switched, so both sides of a ratio pay the same few calls per toggle. A
    pair of toggles counts some 4 million instructions of its own, varying by
    about as much run to run (tests/project/test_bench_instructions.py): keep the
    counted region hundreds of millions long.
    """
    if not os.environ.get(REGION_ENV):
        return
    subprocess.run(["callgrind_control", "--instr=" + ("on" if on else "off"), str(os.getpid())],
                   capture_output=True, check=True, timeout=120)


def callgrind_region_instructions(command: Sequence[str], out_file: str, env: dict[str, str] | None = None,
                                  timeout: float = 1800) -> int | None:
    """Instructions ``command`` executed while it had counting on (``count_region``); None without valgrind."""
    valgrind = shutil.which("valgrind")
    if not valgrind or not shutil.which("callgrind_control"):
        return None
    env = {**(env if env is not None else os.environ), REGION_ENV: "1"}
    done = subprocess.run(
        [valgrind, "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out_file}", *command],
        capture_output=True, text=True, env=env, timeout=timeout,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed under callgrind ({done.returncode}):\n{done.stderr[-2000:]}")
    for line in done.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1].strip())
    return None

