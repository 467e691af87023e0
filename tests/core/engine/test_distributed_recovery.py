"""Two gloo ranks on this CPU: pause and resume, one rank out of memory, every rank's telemetry.

The real command in subprocesses (``trainlab train --nproc-per-node 2``) with
the DDP probe plugin, as in tests/core/engine/test_distributed.py, whose uninterrupted
two-rank run is the reference here too.  The out-of-memory error is torch's
own, raised by the probe task on one rank only; the pause is the word
``pause`` written into the run folder's ``control`` file.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from test_distributed import (  # noqa: F401 - fixtures
    BATCH,
    PARITY_REL_TOL,
    STEPS_PER_EPOCH,
    _finish,
    _sha,
    _start,
    _steps,
    _train_args,
    _wait_for_training,
    probe_home,
    two_rank_run,
)
from trainlab.engine.distributed_control import request
from trainlab.telemetry import RANK_FIELDS

WAIT_S = 90  # bound on each wait for the run's files; seen: a second or two


def _events(run: Path) -> list[dict]:
    path = run / "metrics.jsonl"
    if not path.exists():
        return []
    events = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:  # a half-written last line
            pass
    return events


def _wait_until(what: str, condition, proc) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before {what}: {proc.stderr.read()[-3000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {WAIT_S} s")
        time.sleep(0.05)  # polling a file the run writes, each wait bounded above


def _assert_both_ranks_in(sample: dict) -> None:
    ranks = sample["ranks"]
    assert [entry["rank"] for entry in ranks] == [0, 1], sample
    for entry in ranks:
        assert set(entry) == set(RANK_FIELDS)
        assert entry["device"] == "cpu" and entry["host"] and entry["local_rank"] == entry["rank"]
        assert entry["torch_allocated_bytes"] is None and entry["uuid"] is None  # no CUDA memory on the CPU
    assert all(gpu["rank"] is None and gpu["host"] for gpu in sample["gpus"])  # CPU ranks use no GPU


@pytest.mark.long
def test_a_paused_group_stops_stepping_on_every_rank_and_resumes_to_the_same_weights(two_rank_run, probe_home, tmp_path):
    probe = tmp_path / "probe"
    probe.mkdir()
    run = tmp_path / "run"
    args = _train_args(two_rank_run["data"], run, probe, "--set", "step_delay=0.1", "--set", "telemetry_every=0.5")
    proc = _start([*args, "--nproc-per-node", 2], probe_home)
    try:
        _pause_and_resume(proc, run, probe, two_rank_run)
    finally:
        if proc.poll() is None:  # a failed check: stop the group (SIGTERM reaches every rank), never leave it paused
            proc.terminate()
            proc.wait(120)


def _pause_and_resume(proc, run: Path, probe: Path, two_rank_run: dict) -> None:
    _wait_for_training(proc)
    request(run, "pause")
    _wait_until("paused progress event", lambda: any(e.get("phase") == "paused" for e in _events(run)), proc)
    events = _events(run)
    paused_at = next(i for i, e in enumerate(events) if e.get("phase") == "paused")
    steps = [len(_steps(probe, rank)) for rank in (0, 1)]
    assert steps[0] == steps[1] < 2 * STEPS_PER_EPOCH  # both ranks stopped after the same step, before the end
    # While paused, rank 0's sampler goes on writing (each sample at least 0.5 s after
    # the last): three more of them are a pause of a second or more.
    _wait_until("three system samples while paused",
                lambda: sum(e["event"] == "system" for e in _events(run)[paused_at:]) >= 3, proc)  # fmt: skip
    during = _events(run)[paused_at:]
    assert not [e for e in during if e["event"] == "train"], "a train step was reported while paused"
    assert [len(_steps(probe, rank)) for rank in (0, 1)] == steps, "a rank stepped while paused"
    for sample in (e for e in during if e["event"] == "system"):
        _assert_both_ranks_in(sample)  # the gather goes on while the ranks hold
    request(run, "resume")
    code, outcome, stderr = _finish(proc, timeout=120)
    assert code == 0 and outcome["status"] == "completed", stderr[-3000:]
    assert [len(_steps(probe, rank)) for rank in (0, 1)] == [2 * STEPS_PER_EPOCH] * 2
    assert _sha(run / "model" / "model.safetensors") == _sha(two_rank_run["run"] / "model" / "model.safetensors")
    assert not (run / "control").exists()  # the word does not outlive the run
    logs = [e["message"] for e in _events(run) if e["event"] == "log"]
    assert "paused" in logs and "resumed" in logs


@pytest.mark.long
def test_stop_while_paused_ends_every_rank_cancelled_with_the_checkpoint(two_rank_run, probe_home, tmp_path):
    run = tmp_path / "run"
    proc = _start([*_train_args(two_rank_run["data"], run, tmp_path, "--set", "step_delay=0.1"), "--nproc-per-node", 2], probe_home)
    try:
        _wait_for_training(proc)
        request(run, "pause")
        _wait_until("paused progress event", lambda: any(e.get("phase") == "paused" for e in _events(run)), proc)
        request(run, "stop")
        code, outcome, stderr = _finish(proc, timeout=120)
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(120)
    assert code == 130 and outcome["status"] == "cancelled", stderr[-3000:]
    assert json.loads((run / "run.json").read_text())["status"] == "cancelled"
    assert (run / "checkpoints" / "last.safetensors").exists()
    assert len(_steps(tmp_path, 0)) == len(_steps(tmp_path, 1)) < 2 * STEPS_PER_EPOCH  # both stopped where they held


def _oom_run(two_rank_run, probe_home, tmp_path, batch: int, *extra: str) -> tuple[dict, Path, Path]:
    probe = tmp_path / "probe"
    probe.mkdir()
    run = tmp_path / "run"
    args = _train_args(two_rank_run["data"], run, probe, "--set", "oom_rank=1", "--set", f"oom_rank_above={batch // 2}",
                       "--set", "telemetry_every=0.5", *extra)  # fmt: skip
    args[args.index("--batch-size") + 1] = batch
    # A rank left waiting in an unmatched collective would fail the run after 30 s
    # (the collective timeout): completing is the proof that none was.
    code, outcome, stderr = _finish(_start([*args, "--nproc-per-node", 2], probe_home, TRAINLAB_COLLECTIVE_TIMEOUT="30"), timeout=240)
    assert code == 0 and outcome["status"] == "completed", stderr[-3000:]
    weights = {(probe / f"weights-rank{rank}.txt").read_text() for rank in (0, 1)}
    assert len(weights) == 1, "the ranks ended with different weights"
    rank0, rank1 = _steps(probe, 0), _steps(probe, 1)
    assert len(rank0[0]) == len(rank1[0]) == batch  # step 1's first try on both ranks, thrown away
    assert len(rank1[1]) == 2  # rank 1's stand-in in that step's all-reduce (two examples, weight 0)
    for steps in (rank0[1:], rank1[2:]):  # from the retry on, every rank trains in halves
        assert steps and max(len(piece) for piece in steps) <= batch // 2
    events = _events(run)
    said = [e["message"] for e in events if e["event"] == "log" and "out of memory" in e["message"]]
    assert len(said) == 1 and "on rank 1" in said[0] and "every rank" in said[0] and f"about {batch // 2}" in said[0], said
    return outcome, run, probe


@pytest.mark.long
def test_one_rank_out_of_memory_makes_every_rank_split_the_same_way(two_rank_run, probe_home, tmp_path):
    outcome, run, _ = _oom_run(two_rank_run, probe_home, tmp_path, BATCH)
    assert outcome["steps"] == two_rank_run["outcome"]["steps"]
    for name in ("accuracy", "macro_f1", "loss"):  # the same effective batch: the same run up to rounding
        assert outcome["metrics"][name] == pytest.approx(two_rank_run["outcome"]["metrics"][name], rel=PARITY_REL_TOL)
    samples = [e for e in _events(run) if e["event"] == "system"]
    assert samples, "no telemetry sample written"
    for sample in samples:  # every rank's entry, from the run's first sample on
        _assert_both_ranks_in(sample)


@pytest.mark.long
@pytest.mark.parametrize("norm", ["batch+count", "batch"])
def test_out_of_memory_recovery_keeps_the_buffer_broadcasts_matched(two_rank_run, probe_home, tmp_path, norm):
    """Buffers other than a batch norm's statistics are broadcast by DDP before each step's
    first forward: the stand-in of the rank that ran out inside that forward must not
    broadcast again.  A batch norm alone is not broadcast in training (RankGroup.wrap)."""
    _oom_run(two_rank_run, probe_home, tmp_path, 10, "--set", f"norm={norm}", "--epochs", "1")  # 9 global batches of 20
