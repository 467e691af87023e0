"""Runs over several processes on this CPU: gloo, two ranks, one thread each.

Every test drives the real command (``trainlab train --nproc-per-node 2``,
torchrun itself, two ``--nnodes 2`` launches) in subprocesses, with the DDP
probe plugin (tests/fixtures/ddp_probe), whose task writes each rank's
training examples and a hash of its weights at each evaluation, and whose
run callback leaves a file in every rank.
"""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import FIXTURE_PLUGINS, PROBE_PLUGIN, subprocess_env, write_toy_csv
from trainlab.engine.torchrun import free_port

ROWS, VAL_FRACTION, BATCH = 240, 0.25, 8  # 180 training rows: 12 global batches of 16 (8 per rank) an epoch
TRAIN_ROWS = ROWS - int(ROWS * VAL_FRACTION)
STEPS_PER_EPOCH = -(-TRAIN_ROWS // (2 * BATCH))
# Metrics of two ranks against one process over the same global batches: the
# same sums in another order (the all-reduce averages two half-batch means),
# so float32 rounding, about 1e-7 per step; 1e-5 leaves room over 24 Adam steps.
PARITY_REL_TOL = 1e-5
KILLED_RANK_LIMIT_S = 60  # seen: a few seconds (gloo sees the closed connection); the collective timeout is 20 s here


# tests/core/engine/test_distributed_recovery.py imports the two fixtures below, which makes pytest
# count them as that module's own too: made once a session all the same, here.
_MADE: dict[str, object] = {}


@pytest.fixture(scope="session")
def probe_home(tmp_path_factory):
    """A TrainLab home that already knows the fixture plugins (no first-sight probe in every rank)."""
    if "home" not in _MADE:
        home = tmp_path_factory.mktemp("ddp-home")
        env = subprocess_env([FIXTURE_PLUGINS, PROBE_PLUGIN], TRAINLAB_HOME=str(home))
        subprocess.run([sys.executable, "-m", "trainlab", "plugins", "--json"], capture_output=True, env=env, timeout=120)
        _MADE["home"] = home
    return _MADE["home"]


def _env(home: Path, **extra) -> dict[str, str]:
    return subprocess_env([FIXTURE_PLUGINS, PROBE_PLUGIN], TRAINLAB_HOME=str(home), OMP_NUM_THREADS="1", **extra)


def _start(args, home, **env) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(home, **env))


def _train_args(data, out, probe, *extra):
    # fp32 whatever the CPU: PARITY_REL_TOL is float32's rounding (auto is bf16 on a CPU with native bfloat16)
    return ["trainlab", "train", "ddp-probe", "--data", data, "--device", "cpu", "--precision", "fp32", "--batch-size", BATCH, "--out", out,
            "--set", f"probe_dir={probe}", "--json", *extra]  # fmt: skip


def _finish(proc: subprocess.Popen, timeout: float = 240) -> tuple[int, dict, str]:
    stdout, stderr = proc.communicate(timeout=timeout)
    lines = [line for line in stdout.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one JSON object on stdout, got {stdout!r}\n{stderr[-3000:]}"
    return proc.returncode, json.loads(lines[0]), stderr


def _wait_for_training(proc: subprocess.Popen) -> list[str]:
    """stderr lines up to the first training report (the run is in its steps)."""
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith("epoch 1 step"):
            return seen
    raise AssertionError("the run ended before training began:\n" + "".join(seen[-40:]))


def _steps(probe: Path, rank) -> list[list[int]]:
    return [json.loads(line) for line in (probe / f"train-rank{rank}.txt").read_text().splitlines()]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="session")
def two_rank_run(tmp_path_factory, probe_home):
    """One uninterrupted run on two ranks (the reference of the tests below)."""
    if "reference" not in _MADE:
        _MADE["reference"] = _reference_run(tmp_path_factory, probe_home)
    return _MADE["reference"]


def _reference_run(tmp_path_factory, probe_home):
    root = tmp_path_factory.mktemp("ddp-run")
    data = write_toy_csv(root / "toy.csv", rows=ROWS)
    probe = root / "probe"
    probe.mkdir()
    started = time.perf_counter()
    code, outcome, stderr = _finish(_start([*_train_args(data, root / "run", probe), "--nproc-per-node", 2], probe_home))
    assert code == 0, stderr[-3000:]
    return {"root": root, "data": data, "probe": probe, "run": root / "run", "outcome": outcome, "stderr": stderr,
            "seconds": time.perf_counter() - started}  # fmt: skip


def test_two_ranks_split_each_epoch_and_end_with_the_same_weights(two_rank_run):
    probe = two_rank_run["probe"]
    rank0, rank1 = _steps(probe, 0), _steps(probe, 1)
    assert len(rank0) == len(rank1) == 2 * STEPS_PER_EPOCH  # every rank steps together
    for epoch in range(2):
        part = slice(epoch * STEPS_PER_EPOCH, (epoch + 1) * STEPS_PER_EPOCH)
        mine = [k for batch in rank0[part] for k in batch]
        theirs = [k for batch in rank1[part] for k in batch]
        assert not set(mine) & set(theirs), "the ranks' shards overlap"
        assert sorted(mine + theirs) == list(range(TRAIN_ROWS)), "the shards do not cover the epoch"
        assert all(len(b) == BATCH for b in rank0[part][:-1])
    assert rank0[:STEPS_PER_EPOCH] != rank0[STEPS_PER_EPOCH:], "the same order in both epochs (set_epoch forgotten)"
    weights = {(probe / f"weights-rank{r}.txt").read_text() for r in (0, 1)}
    assert len(weights) == 1, "the ranks ended with different weights"
    for rank in (0, 1):  # the plugin's callback ran in every rank
        assert (probe / f"callback-rank{rank}.txt").read_text().split() == [str(2 * STEPS_PER_EPOCH), "completed"]
        # and the task was told that two processes share the machine (a memory budget is divided by it)
        assert (probe / f"context-rank{rank}.txt").read_text().split() == ["2"]


def test_rank_zero_alone_writes_and_records_the_group(two_rank_run):
    run = two_rank_run["run"]
    events = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events].count("started") == 1 and [e["event"] for e in events].count("finished") == 1
    assert [e["epoch"] for e in events if e["event"] == "eval"] == [1, 2]  # one writer: each evaluation once
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["best.safetensors", "last.safetensors"]
    assert not list(run.glob("*.tmp")) and not list((run / "checkpoints").glob("*.tmp"))
    record = json.loads((run / "run.json").read_text())
    assert record["world_size"] == 2 and record["backend"] == "gloo" and len(record["ranks"]) == 2
    assert record["effective_batch"] == 2 * BATCH and record["launch"]["nproc_per_node"] == 2
    assert "nproc_per_node" not in record["parameters"]  # a launch option, not a task parameter
    assert f"effective batch {2 * BATCH} = {BATCH} per rank x 2 rank(s) x 1 accumulation" in two_rank_run["stderr"]
    report = json.loads((run / "eval.json").read_text())
    assert report["samples"] == ROWS - TRAIN_ROWS  # each validation example once, none padded in
    assert sum(row["support"] for row in report["per_class"]) == ROWS - TRAIN_ROWS


def test_metrics_equal_a_one_process_run_over_the_same_batches(two_rank_run, probe_home, tmp_path):
    probe = tmp_path / "probe"
    probe.mkdir()
    args = _train_args(two_rank_run["data"], tmp_path / "one", probe)
    args[args.index("--batch-size") + 1] = 2 * BATCH  # one process, the group's batch
    code, single, stderr = _finish(_start(args, probe_home))
    assert code == 0, stderr[-2000:]
    double = two_rank_run["outcome"]
    assert single["steps"] == double["steps"]
    for name in ("accuracy", "macro_f1"):
        assert double["metrics"][name] == pytest.approx(single["metrics"][name], rel=PARITY_REL_TOL)
    assert double["metrics"]["loss"] == pytest.approx(single["metrics"]["loss"], rel=PARITY_REL_TOL)
    ranks = [_steps(two_rank_run["probe"], r) for r in (0, 1)]
    for step, batch in enumerate(_steps(probe, "single")):  # each step: the group's batch is the one process's
        assert sorted(batch) == sorted(ranks[0][step] + ranks[1][step])


@pytest.mark.long
def test_sigterm_to_torchrun_stops_every_rank_and_resume_is_exact(two_rank_run, probe_home, tmp_path):
    """torchrun started directly (as a lab's script would): SIGTERM, exit 130, resume, same weights."""
    probe = tmp_path / "probe"
    probe.mkdir()
    run = tmp_path / "run"
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
                "--master-port", str(free_port()), "-m", *map(str, _train_args(two_rank_run["data"], run, probe, "--set", "step_delay=0.1"))]  # fmt: skip
    proc = subprocess.Popen(torchrun, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(probe_home))
    _wait_for_training(proc)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    outcome = json.loads(stdout.strip().splitlines()[-1])
    assert outcome["status"] == "cancelled" and outcome["exit_code"] == 130, stderr[-3000:]
    assert json.loads((run / "run.json").read_text())["status"] == "cancelled"
    assert (run / "checkpoints" / "last.safetensors").exists()
    stopped_at = outcome["steps"]
    assert 0 < stopped_at < 2 * STEPS_PER_EPOCH
    assert len(_steps(probe, 0)) >= stopped_at and len(_steps(probe, 1)) == len(_steps(probe, 0))  # both stopped together

    for rank in (0, 1):
        (probe / f"train-rank{rank}.txt").unlink()
    code, resumed, stderr = _finish(_start(["trainlab", "train", "--resume", run, "--nproc-per-node", 2, "--device", "cpu", "--json"], probe_home))
    assert code == 0 and resumed["status"] == "completed", stderr[-3000:]
    reference = two_rank_run["probe"]
    for rank in (0, 1):  # the resumed steps saw what the uninterrupted run's saw
        assert _steps(probe, rank) == _steps(reference, rank)[stopped_at:]
    assert _sha(run / "model" / "model.safetensors") == _sha(two_rank_run["run"] / "model" / "model.safetensors")
    assert resumed["metrics"] == two_rank_run["outcome"]["metrics"]


@pytest.mark.long
def test_a_killed_rank_fails_the_run_within_a_bounded_time_naming_it(two_rank_run, probe_home, tmp_path):
    import psutil

    run = tmp_path / "run"
    proc = _start([*_train_args(two_rank_run["data"], run, tmp_path, "--set", "step_delay=0.2", "--epochs", 20), "--nproc-per-node", 2],
                  probe_home, TRAINLAB_COLLECTIVE_TIMEOUT="20")  # fmt: skip
    _wait_for_training(proc)
    ranks = {}
    for child in psutil.Process(proc.pid).children(recursive=True):
        try:
            if child.environ().get("RANK") is not None and "trainlab" in " ".join(child.cmdline()):
                ranks[int(child.environ()["RANK"])] = child
        except psutil.Error:
            continue
    assert sorted(ranks) == [0, 1]
    ranks[1].kill()
    killed = time.perf_counter()
    code, outcome, stderr = _finish(proc, timeout=KILLED_RANK_LIMIT_S + 60)
    took = time.perf_counter() - killed
    assert code == 1 and outcome["status"] == "failed", stderr[-3000:]
    assert took < KILLED_RANK_LIMIT_S
    assert "rank 1" in outcome["error"]
    record = json.loads((run / "run.json").read_text())
    assert record["status"] == "failed" and "rank 1" in record["error"]


@pytest.mark.long
def test_two_nnodes_launches_on_loopback_form_one_run(two_rank_run, probe_home, tmp_path):
    port = free_port()
    run = tmp_path / "run"
    nodes = [
        _start([*_train_args(two_rank_run["data"], run, tmp_path, "--epochs", 1), "--nnodes", 2, "--node-rank", rank, "--nproc-per-node", 1,
                "--master-addr", "127.0.0.1", "--master-port", port], probe_home)  # fmt: skip
        for rank in (0, 1)
    ]
    results = [_finish(node) for node in nodes]
    for code, outcome, stderr in results:
        assert code == 0, stderr[-3000:]
    record = json.loads((run / "run.json").read_text())
    assert record["world_size"] == 2 and record["status"] == "completed"
    assert record["launch"]["nnodes"] == 2
    assert len(_steps(tmp_path, 0)) == len(_steps(tmp_path, 1)) == STEPS_PER_EPOCH
    assert not set(sum(_steps(tmp_path, 0), [])) & set(sum(_steps(tmp_path, 1), []))


@pytest.mark.long
def test_two_ranks_keep_one_copy_of_the_decoded_images(probe_home, tmp_path):
    # image-classification on two ranks: train (no random crop) and val in one shared array
    from trainlab.engine.shared_memory import SHARED_FOLDER, _usable
    from trainlab_dev.image_samples import make_shapes_dataset

    if not _usable():
        pytest.skip("no shared arrays on this machine (x86-64 with /dev/shm)")
    data = make_shapes_dataset(tmp_path / "shapes", classes=2, size=24, splits={"train": 12, "val": 4})
    before = {p.name for p in SHARED_FOLDER.glob("trainlab-*")}
    code, outcome, stderr = _finish(_start(
        ["trainlab", "train", "image-classification", "--data", data, "--device", "cpu", "--epochs", 2, "--batch-size", 4,
         "--set", "image_size=16", "--set", "augmentation=none", "--set", "memory_cache=auto", "--out", tmp_path / "run",
         "--json", "--nproc-per-node", 2], probe_home))  # fmt: skip
    assert code == 0 and outcome["status"] == "completed", stderr[-3000:]
    cache = json.loads((tmp_path / "run" / "run.json").read_text())["data_summary"]["extra"]["memory_cache"]
    assert cache["shared_splits"] == ["train", "val"] == cache["splits"]
    assert {p.name for p in SHARED_FOLDER.glob("trainlab-*")} == before
