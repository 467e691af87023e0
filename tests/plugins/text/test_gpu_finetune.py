"""QLoRA and 8-bit AdamW on CUDA: tests behind the ``gpu`` marker.

They need a CUDA GPU and bitsandbytes (the ``qlora`` extra), and skip without
them: on this project's CPU machines they always skip, and what runs there is
the refusal (tests/plugins/text/test_lora.py: exit 2 naming what is missing). On a GPU
machine run them with ``pytest -m gpu tests/plugins/text/test_gpu_finetune.py``;
bench/gpu_check.sh runs the same paths at a larger size (its qlora and
adamw8bit checks).
"""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch

from helpers import make_bert_folder, make_decoder_folder, sample_head

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
    pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is None, reason="needs bitsandbytes (pip install 'trainlab[qlora]')"),
]


def train(params: dict, data, out):
    from trainlab.engine.scripting import RunRequest, run_training

    return run_training(RunRequest(task="text-classification", data=str(data), params=params, out=str(out)))


def test_qlora_trains_4_bit_base_weights_and_saves_the_adapters_only(tmp_path):
    from safetensors.torch import load_file

    model = make_decoder_folder(tmp_path / "qwen2")
    params = {"model": str(model), "finetune": "qlora", "epochs": "1", "batch_size": "8", "lr": "5e-3", "max_length": "32", "device": "cuda"}
    outcome = train(params, sample_head(tmp_path, rows=40), tmp_path / "run")
    assert outcome.status == "completed", outcome.error
    run = tmp_path / "run"
    record = json.loads((run / "run.json").read_text())
    assert record["parameters"]["finetune"] == "qlora"
    adapters = load_file(str(run / "adapter" / "adapter_model.safetensors"))
    lora_b = [t for name, t in adapters.items() if "lora_B" in name]
    assert lora_b and any(bool(t.abs().sum() > 0) for t in lora_b)  # the adapters trained
    assert not list((run / "model").glob("*.safetensors"))  # a 4-bit base is not merged: model/ names it


def test_adamw8bit_keeps_its_optimizer_state_in_8_bits_and_trains(tmp_path):
    import bitsandbytes as bnb

    from trainlab.engine.loop import Trainer

    seen = {}
    original = Trainer._make_optimizer

    def spy(self):
        optimizer = original(self)
        seen["optimizer"] = optimizer
        return optimizer

    model = make_bert_folder(tmp_path / "bert")
    params = {"model": str(model), "finetune": "full", "optimizer": "adamw8bit", "epochs": "2", "batch_size": "8", "lr": "1e-3",
              "max_length": "32", "device": "cuda"}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Trainer, "_make_optimizer", spy)
        outcome = train(params, sample_head(tmp_path, rows=80), tmp_path / "run")
    assert outcome.status == "completed", outcome.error
    optimizer = seen["optimizer"]
    assert isinstance(optimizer, bnb.optim.optimizer.Optimizer8bit)
    # its moments of the large matrices are uint8 with per-block scales
    states = [s for s in optimizer.state.values() if "state1" in s]
    assert states and any(s["state1"].dtype == torch.uint8 for s in states)
    losses = [e["loss"] for e in map(json.loads, (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) if e["event"] == "eval"]
    assert all(map(lambda v: v == v, losses))  # finite evaluation losses
