"""Runs over several processes on the GPU machine: NCCL at world size 1, and the consumer-card preflight.

The check machines have one GPU, so a group of two GPUs cannot be formed
there; what one GPU can show is that ``trainlab train --gpus 1`` goes
through torchrun, joins an NCCL group, passes the pre-training all_reduce and
writes one run (rank 0), and that the preflight reads the real NVML topology
without failing.  Its decision for two GeForce cards without peer-to-peer is
checked against a faked NVML (tests/fixtures/fake_nvml.py), as in the tests.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

from gpucheck.common import ROOT, CheckEnv, Outcome


def _toy_data(env: CheckEnv):
    rows = ["x0,x1,x2,x3,label"]
    rng = random.Random(0)
    for r in range(400):
        c = r % 3
        rows.append(",".join(f"{c + rng.gauss(0, 0.5):.3f}" for _ in range(4)) + f",c{c}")
    data = env.work / "toy.csv"
    data.write_text("\n".join(rows) + "\n")
    return data


def _launched_run(env: CheckEnv, task: str, data, run_dir, launch: list[str], *extra: str) -> subprocess.CompletedProcess:
    """``trainlab train TASK`` for two epochs through the launcher, with the test fixture plugins (the toy task, the DDP probe)."""
    run_env = dict(os.environ)
    plugins = [ROOT / "tests" / "fixtures" / "plugins", ROOT / "tests" / "fixtures" / "ddp_probe"]
    run_env["PYTHONPATH"] = os.pathsep.join([*map(str, plugins), run_env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "trainlab", "train", task, "--data", str(data), "--epochs", "2", *launch, *extra, "--out", str(run_dir), "--json"],
        capture_output=True, text=True, env=run_env, timeout=max(10.0, env.left() - 5),
    )  # fmt: skip


def check_nccl_world_size_1(env: CheckEnv, out: Outcome) -> None:
    """trainlab train --gpus 1 (torchrun, NCCL, one rank); on the CPU dry run --nproc-per-node 1 (gloo)."""
    data = _toy_data(env)
    run_dir = env.work / "run"
    launch = ["--gpus", "1"] if env.cuda else ["--nproc-per-node", "1", "--device", "cpu"]
    proc = _launched_run(env, "toy-classification", data, run_dir, launch, "--set", "telemetry_every=0.5")
    out.expect("the launched run completed", proc.returncode == 0, proc.stderr[-800:] if proc.returncode else "")
    try:
        printed = json.loads(proc.stdout.strip().splitlines()[-1])
        out.fact("run", {k: printed.get(k) for k in ("status", "steps", "samples_per_second")})
    except (ValueError, IndexError):
        out.expect("train --json printed one JSON object", False, proc.stdout[-300:])
    record = json.loads((run_dir / "run.json").read_text()) if (run_dir / "run.json").is_file() else {}
    out.fact("group", {k: record.get(k) for k in ("world_size", "backend", "ranks", "preflight")})
    out.expect("run.json records world size 1", record.get("world_size") == 1, record.get("world_size"))
    out.expect("backend", record.get("backend") == ("nccl" if env.cuda else "gloo"), record.get("backend"))
    if env.cuda:
        ranks = record.get("ranks") or [{}]
        out.expect("rank 0 trained on cuda:0 and names its GPU", ranks[0].get("device") == "cuda:0" and ranks[0].get("gpu"), ranks)
    _check_rank_telemetry(env, out, run_dir)
    _check_batch_norm_group(env, out, data, launch)


def _events(run_dir, kind: str) -> list[dict]:
    """The run's ``metrics.jsonl`` events of one kind, as written (a damaged line is skipped)."""
    path = run_dir / "metrics.jsonl"
    events = []
    for line in path.read_text().splitlines() if path.is_file() else []:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == kind:
            events.append(event)
    return events


def _check_batch_norm_group(env: CheckEnv, out: Outcome, data, launch: list[str]) -> None:
    """A model whose only buffers are batch-norm statistics (the DDP probe's norm=batch): DDP does
    not broadcast them before each forward, and rank 0's reach every rank (an NCCL broadcast of
    CUDA tensors, float and int64) before each evaluation (the DDP strategy's sync_buffers)."""
    run_dir = env.work / "run-norm"
    proc = _launched_run(env, "ddp-probe", data, run_dir, launch, "--set", "norm=batch")
    out.expect("a batch-norm model's group run completed", proc.returncode == 0, proc.stderr[-800:] if proc.returncode else "")
    evaluations = [event.get("accuracy") for event in _events(run_dir, "eval")]
    out.fact("batch_norm_run_accuracy", evaluations)
    out.expect("both evaluations ran, with an accuracy", len(evaluations) == 2 and all(a is not None for a in evaluations), evaluations)


def _check_rank_telemetry(env: CheckEnv, out: Outcome, run_dir) -> None:
    """Every system sample carries rank 0's own entry (the ranks' gather); on CUDA its torch
    memory, and the GPU entry NVML matched to it by UUID names rank 0."""
    samples = _events(run_dir, "system")
    out.expect("system samples written", bool(samples), len(samples))
    if not samples:
        return
    last = samples[-1]
    out.fact("rank_telemetry", {"ranks": last.get("ranks"), "gpus": [{k: g.get(k) for k in ("index", "uuid", "host", "rank", "torch_device",
             "torch_allocated_bytes")} for g in last.get("gpus", [])]})  # fmt: skip
    out.expect("every sample has rank 0's entry", all([r.get("rank") for r in s.get("ranks", [])] == [0] for s in samples),
               [s.get("ranks") for s in samples[:2]])  # fmt: skip
    if env.cuda:
        (mine,) = last.get("ranks") or [{}]
        out.expect("rank 0's entry: cuda:0, its GPU's UUID, torch memory above 0",
                   mine.get("device") == "cuda:0" and mine.get("uuid") and (mine.get("torch_allocated_bytes") or 0) > 0, mine)  # fmt: skip
        named = [g for g in last.get("gpus", []) if g.get("rank") == 0]
        out.expect("one GPU entry names rank 0, with its torch memory",
                   len(named) == 1 and named[0].get("torch_allocated_bytes") == mine.get("torch_allocated_bytes"), last.get("gpus"))  # fmt: skip


def check_p2p_preflight(env: CheckEnv, out: Outcome) -> None:
    """The preflight against a faked topology of two GeForce cards, then against this machine's NVML."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fixtures.fake_nvml import FakeNvml, rtx_4090

    from trainlab.engine.distributed_preflight import apply_p2p_preflight, p2p_advice

    class TwoGeForce(FakeNvml):
        NVML_P2P_CAPS_INDEX_READ = 0
        NVML_P2P_STATUS_OK = 0

        def nvmlDeviceGetP2PStatus(self, a, b, index):
            self._count("nvmlDeviceGetP2PStatus")
            return 5  # NVML_P2P_STATUS_NOT_SUPPORTED

    fake = TwoGeForce([rtx_4090(), rtx_4090(uuid="GPU-4090ffff-0000-1111-2222-333344445555")])
    chosen: dict[str, str] = {}
    advice = apply_p2p_preflight(chosen, nvml=fake)
    out.expect("two GeForce cards without P2P: NCCL_P2P_DISABLE=1", advice.disable and chosen.get("NCCL_P2P_DISABLE") == "1", advice.reason)
    user = {"NCCL_P2P_DISABLE": "0"}
    out.expect("the user's NCCL_P2P_DISABLE is kept", not apply_p2p_preflight(user, nvml=fake).disable and user["NCCL_P2P_DISABLE"] == "0")
    try:
        import pynvml
    except ImportError:
        out.fact("real_nvml", "pynvml not installed")
        return
    real = p2p_advice(pynvml, None, {})
    out.fact("real_topology", {"reason": real.reason, "cards": list(real.cards), "disable": real.disable})
    if env.cuda:
        out.expect("the real NVML topology was read", bool(real.cards), real.reason)
