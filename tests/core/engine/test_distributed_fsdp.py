"""sharding=fsdp through the real command: two gloo ranks on this CPU, against the DDP run of the same request.

Slow (each run starts torchrun and two ranks): behind --runslow.  The
strategy itself over two ranks (loss curve against DDP, the checkpoint
round trip) is checked in the default suite by test_strategy_fsdp.py.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest
from helpers import make_decoder_folder, sample_head, subprocess_env
from safetensors.torch import load_file
from test_distributed import (  # noqa: F401 - fixtures
    PARITY_REL_TOL,
    STEPS_PER_EPOCH,
    _env,
    _finish,
    _sha,
    _start,
    _steps,
    _train_args,
    _wait_for_training,
    probe_home,
    two_rank_run,
)
from trainlab.engine.torchrun import free_port

pytestmark = pytest.mark.slow

_FSDP: dict[str, object] = {}


@pytest.fixture(scope="module")
def fsdp_run(two_rank_run, probe_home, tmp_path_factory):
    """The DDP reference's request with sharding=fsdp, uninterrupted."""
    if "run" not in _FSDP:
        root = tmp_path_factory.mktemp("fsdp-run")
        probe = root / "probe"
        probe.mkdir()
        code, outcome, stderr = _finish(_start([*_train_args(two_rank_run["data"], root / "run", probe, "--set", "sharding=fsdp"),
                                                "--nproc-per-node", 2], probe_home))  # fmt: skip
        assert code == 0 and outcome["status"] == "completed", stderr[-3000:]
        _FSDP["run"] = {"run": root / "run", "probe": probe, "outcome": outcome, "stderr": stderr}
    return _FSDP["run"]


def test_fsdp_trains_as_ddp_does_and_exports_a_whole_model(fsdp_run, two_rank_run):
    outcome, reference = fsdp_run["outcome"], two_rank_run["outcome"]
    assert outcome["steps"] == reference["steps"]
    for name in ("accuracy", "macro_f1", "loss"):
        assert outcome["metrics"][name] == pytest.approx(reference["metrics"][name], rel=PARITY_REL_TOL)
    for rank in (0, 1):  # the same shares of the same batches
        assert _steps(fsdp_run["probe"], rank) == _steps(two_rank_run["probe"], rank)
    run = fsdp_run["run"]
    assert json.loads((run / "run.json").read_text())["parameters"]["sharding"] == "fsdp"
    # the export: a plain full state dict, the same tensors DDP exports within float tolerance
    mine, theirs = load_file(str(run / "model" / "model.safetensors")), load_file(str(two_rank_run["run"] / "model" / "model.safetensors"))
    assert mine.keys() == theirs.keys()
    for key in mine:
        assert mine[key].shape == theirs[key].shape
        assert (mine[key] - theirs[key]).abs().max() <= 1e-4 * max(1.0, float(theirs[key].abs().max())), key
    # checkpoints: the engine's safetensors files alone, with the optimizer's state
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["best.safetensors", "last.safetensors"]
    last = load_file(str(run / "checkpoints" / "last.safetensors"))
    assert any(k.startswith("optim.") and k.endswith(".exp_avg") for k in last)


def test_sigterm_then_resume_of_a_sharded_run_ends_as_the_uninterrupted_one(fsdp_run, two_rank_run, probe_home, tmp_path):
    probe = tmp_path / "probe"
    probe.mkdir()
    run = tmp_path / "run"
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
                "-m", *map(str, _train_args(two_rank_run["data"], run, probe, "--set", "sharding=fsdp", "--set", "step_delay=0.1"))]  # fmt: skip
    proc = subprocess.Popen(torchrun, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(probe_home))
    _wait_for_training(proc)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    outcome = json.loads(stdout.strip().splitlines()[-1])
    assert outcome["status"] == "cancelled", stderr[-3000:]
    stopped_at = outcome["steps"]
    assert 0 < stopped_at < 2 * STEPS_PER_EPOCH
    for rank in (0, 1):
        (probe / f"train-rank{rank}.txt").unlink()
    code, resumed, stderr = _finish(_start(["trainlab", "train", "--resume", run, "--nproc-per-node", 2, "--device", "cpu", "--json"], probe_home))
    assert code == 0 and resumed["status"] == "completed", stderr[-3000:]
    for rank in (0, 1):  # the resumed steps saw what the uninterrupted run's saw
        assert _steps(probe, rank) == _steps(fsdp_run["probe"], rank)[stopped_at:]
    # the optimizer's shards came back from rank 0's broadcast as they were: the same model, bit for bit
    assert _sha(run / "model" / "model.safetensors") == _sha(fsdp_run["run"] / "model" / "model.safetensors")
    assert resumed["metrics"] == fsdp_run["outcome"]["metrics"]


def test_sharding_fsdp_in_one_process_is_refused_naming_the_option(two_rank_run, probe_home, tmp_path):
    probe = tmp_path / "probe"
    probe.mkdir()
    code, outcome, _ = _finish(_start(_train_args(two_rank_run["data"], tmp_path / "one", probe, "--set", "sharding=fsdp"), probe_home))
    assert code == 2 and "sharding=fsdp" in outcome["error"] and "--nproc-per-node" in outcome["error"]


def test_a_lora_fine_tune_of_a_decoder_shards_and_exports_adapters_and_the_merged_model(probe_home, tmp_path):
    """LoRA under FSDP2: the frozen base and the adapters sharded together, only the adapters trained;
    the same validation metrics as DDP's run of the same request."""
    model, data = make_decoder_folder(tmp_path / "qwen2"), sample_head(tmp_path, rows=32)
    outcomes = {}
    for sharding in ("none", "fsdp"):
        run = tmp_path / f"run-{sharding}"
        args = [sys.executable, "-m", "trainlab", "train", "text-classification", "--data", str(data), "--epochs", "1", "--batch-size", "8",
                "--nproc-per-node", "2", "--device", "cpu", "--precision", "fp32", "--set", f"model={model}", "--set", "finetune=lora",
                "--set", "max_length=16", "--set", f"sharding={sharding}", "--out", str(run), "--json"]  # fmt: skip
        proc = subprocess.run(args, capture_output=True, text=True, timeout=300, env=subprocess_env(TRAINLAB_HOME=str(probe_home), OMP_NUM_THREADS="1"))
        assert proc.returncode == 0, proc.stderr[-3000:]
        outcomes[sharding] = json.loads(proc.stdout.strip().splitlines()[-1])
        assert (run / "adapter" / "adapter_model.safetensors").is_file() and (run / "model" / "model.safetensors").is_file()
    for name in ("accuracy", "macro_f1", "loss"):
        assert outcomes["fsdp"]["metrics"][name] == pytest.approx(outcomes["none"]["metrics"][name], rel=PARITY_REL_TOL)
