"""The analytic SFT memory model answers for a 7B model without loading it."""

from __future__ import annotations

import re

from transformers import Qwen2Config

from trainlab_plugins.textgen.memory import GiB, MiB, format_size, sft_memory

# Qwen2.5-7B's shapes
QWEN_7B = Qwen2Config(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4, vocab_size=152064)


def test_a_7b_qlora_at_length_1024_fits_in_24_gb_and_full_fine_tuning_does_not():
    qlora = sft_memory(QWEN_7B, mode="qlora", precision="bf16", max_length=1024, micro_batch=1, checkpointing=True, lora_rank=16, device="cuda")
    assert 6 * GiB < qlora.weights < 8 * GiB  # 4-bit projections; embeddings and output layer upcast to fp32 by PEFT
    assert qlora.total < 0.9 * 24 * GiB and qlora.fits(24 * GiB)
    assert qlora.runtime == 0  # the graph's bookkeeping is host memory, not the GPU's
    full = sft_memory(QWEN_7B, mode="full", precision="bf16", max_length=1024, micro_batch=1, checkpointing=True, device="cuda")
    assert full.weights > 28 * GiB and full.total > 24 * GiB
    assert full.optimizer == 2 * full.weights  # two fp32 AdamW moments per fp32 weight


def test_checkpointing_and_a_chunked_loss_shrink_what_they_should():
    args = dict(mode="lora", precision="bf16", max_length=2048, micro_batch=4, lora_rank=16, device="cuda")
    kept = sft_memory(QWEN_7B, checkpointing=False, **args)
    recomputed = sft_memory(QWEN_7B, checkpointing=True, **args)
    assert recomputed.activations < kept.activations / 5
    assert recomputed.weights == kept.weights and recomputed.total < kept.total / 3
    short = {**args, "max_length": 1024, "micro_batch": 1}
    whole_chunk = sft_memory(QWEN_7B, checkpointing=True, **short)
    small_chunk = sft_memory(QWEN_7B, checkpointing=True, loss_chunk=256, **short)
    assert whole_chunk.peak_at == "loss backward"  # at one example the logits' buffers outweigh a layer's activations
    assert small_chunk.logits * 4 == whole_chunk.logits and small_chunk.total < whole_chunk.total


def test_templates_that_add_tokens_train_the_embeddings_in_full_and_cost_their_adam_states():
    args = {"mode": "lora", "precision": "bf16", "max_length": 1024, "micro_batch": 1, "checkpointing": True, "device": "cuda"}
    plain = sft_memory(QWEN_7B, **args)
    added = sft_memory(QWEN_7B, trained_embeddings=True, **args)
    rows = 2 * 3584 * 152064  # untied embeddings and output layer
    assert added.optimizer - plain.optimizer == 4 * rows and added.adapters - plain.adapters == 2 * rows


def test_the_dry_run_answers_for_a_7b_from_its_config_alone(tmp_path):
    """A folder with a 7B's config.json and a tokenizer, no weights: the dry run says whether QLoRA
    at length 1024 fits a 24 GB GPU, on a machine that could not load the model."""
    import json

    from helpers import make_decoder_folder, one_json_line, run_trainlab
    from transformers import AutoTokenizer

    small = make_decoder_folder(tmp_path / "small")
    folder = tmp_path / "qwen-7b-shapes"
    tokenizer = AutoTokenizer.from_pretrained(str(small))
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})  # chatml's markers, as Qwen's vocabulary has them
    tokenizer.save_pretrained(str(folder))
    config = QWEN_7B.to_dict()
    config.update(eos_token_id=tokenizer.eos_token_id, architectures=["Qwen2ForCausalLM"])
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    data = tmp_path / "chats.jsonl"
    data.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"Say {i}"}, {"role": "assistant", "content": f"{i}"}]}) + "\n" for i in range(12)), encoding="utf-8")
    proc = run_trainlab("train", "text-generation", "--data", data, "--set", f"model={folder}", "--set", "template=chatml", "--set", "max_length=1024",
                        "--batch-size", "1", "--device", "cpu", "--dry-run", "--json", env={"TRAINLAB_HOME": str(tmp_path / "home")})  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "holds no weights" in proc.stderr
    line = next(x for x in proc.stderr.splitlines() if x.startswith("on a GPU"))
    assert "max_length 1024" in line and "a 24 GB GPU fits qlora" in line and "full" not in line.split("fits")[1]
    result = one_json_line(proc)
    assert result["memory"]["probe"]["method"] == "analytic" and "no weights" in result["memory"]["probe"]["probe_error"]
    assert result["memory"]["parameters"] > 7e9


def test_the_engine_states_the_analytic_model_where_its_probe_cannot_load_the_model(qwen_folder, tmp_path, monkeypatch):
    import json

    import trainlab.engine.memory as engine_memory
    from trainlab.engine.plan import RunRequest, plan_run

    data = tmp_path / "chats.jsonl"
    data.write_text(
        "".join(json.dumps({"messages": [{"role": "user", "content": f"Say {i}"}, {"role": "assistant", "content": f"{i}"}]}) + "\n" for i in range(12)),
        encoding="utf-8",
    )
    params = {"model": str(qwen_folder), "template": "chatml", "max_length": "64", "batch_size": "4", "device": "cpu", "precision": "fp32", "finetune": "full"}
    plan = plan_run(RunRequest(task="text-generation", data=str(data), params=params, out=str(tmp_path / "r")))

    def no_room(*args, **kwargs):
        raise RuntimeError("the memory probe failed: Killed")

    monkeypatch.setattr(engine_memory, "run_probe", no_room)
    estimate = engine_memory.estimate_memory(plan)
    assert estimate.probe["method"] == "analytic" and "Killed" in estimate.probe["probe_error"]
    analytic = plan.task._memory_model(4)
    assert estimate.weights == analytic.weights and estimate.activations == analytic.activations + analytic.logits
    assert estimate.other == analytic.runtime > 0  # the CPU's graph and kept heap
    assert estimate.summary_line().startswith("needs about ")


def test_a_dry_run_that_does_not_fit_advises_only_lighter_fine_tunes_the_task_offers(qwen_folder, tmp_path):
    """The advice after "does not fit" names a fine-tune lighter than the run's own, and QLoRA only on CUDA."""
    import json

    from trainlab.cli.commands import fit_advice
    from trainlab.engine.plan import RunRequest, plan_run

    data = tmp_path / "chats.jsonl"
    data.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"Say {i}"}, {"role": "assistant", "content": f"{i}"}]}) + "\n" for i in range(12)), encoding="utf-8")

    def advice(mode: str, device: str) -> str:
        params = {"model": str(qwen_folder), "template": "chatml", "max_length": "64", "device": "cpu", "finetune": mode}
        return fit_advice(plan_run(RunRequest(task="text-generation", data=str(data), params=params, dry_run=True)), device)

    assert advice("full", "cpu") == "lower micro_batch_size or use finetune=lora"
    assert advice("lora", "cpu") == "lower micro_batch_size"
    assert advice("lora", "cuda:0") == "lower micro_batch_size or use finetune=qlora"


def test_sizes_read_in_mib_below_a_gib_and_in_gib_above():
    assert format_size(38 * MiB) == "38 MiB" and format_size(1.2 * MiB) == "1.2 MiB" and format_size(300 * 1024) == "300 KiB"
    assert format_size(3.15 * GiB) == "3.15 GiB" and format_size(24 * GiB) == "24.0 GiB" and format_size(160 * GiB) == "160 GiB"
    tiny = sft_memory(Qwen2Config(hidden_size=96, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4, vocab_size=2000),
                      mode="full", precision="fp32", max_length=128, micro_batch=16, checkpointing=False, device="cpu")
    assert tiny.total < 100 * MiB
    line = tiny.line(24 * GiB)
    assert f"about {format_size(tiny.total)} of 24.0 GiB" in line and "MiB" in line and not re.search(r"\b0\.0", line), line


def test_the_tiny_chat_dry_run_states_its_memory_in_mib_never_as_zero(tmp_path):
    """The sample on tiny-chat: the data check's SFT memory model, its GPU answer and the engine's estimate
    each give a figure a user can read (MiB, MB), not "0.0 GiB" or "0.00 GB"."""
    from helpers import run_trainlab
    from trainlab.pluginhost.host import sample_path

    proc = run_trainlab("train", "text-generation", "--data", sample_path("text-generation"), "--device", "cpu", "--dry-run",
                        env={"TRAINLAB_HOME": str(tmp_path / "home")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stderr.splitlines()  # the data check's lines
    model = next(x for x in lines if x.startswith("SFT memory model"))
    assert re.search(r": about \d+ MiB \(weights [\d.]+ MiB, activations \d+ MiB, logits \d+ MiB\)$", model), model
    gpu = next(x for x in lines if x.startswith("on a GPU"))
    assert re.search(r"qlora about [\d.]+ MiB, lora about [\d.]+ MiB, full about [\d.]+ MiB;", gpu), gpu
    memory = next(x for x in proc.stdout.splitlines() if x.startswith("memory: "))  # the plan's
    assert re.search(r"\(weights \d+ [kM]B, gradients \d+ [kM]B, optimizer \d+ [kM]B, activations \d+ [kM]B,", memory), memory
    assert not re.search(r"\b0\.0+ G", proc.stdout + proc.stderr), proc.stdout + proc.stderr
