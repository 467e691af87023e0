"""The analytic SFT memory model answers for a 7B model without loading it."""

from __future__ import annotations

from transformers import Qwen2Config

from trainlab_plugins.textgen.memory import GiB, sft_memory

# Qwen2.5-7B's shapes
QWEN_7B = Qwen2Config(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4, vocab_size=152064)


def test_a_7b_qlora_at_length_1024_fits_in_24_gb_and_full_fine_tuning_does_not():
    qlora = sft_memory(QWEN_7B, mode="qlora", precision="bf16", max_length=1024, micro_batch=1, checkpointing=True, lora_rank=16)
    assert 4 * GiB < qlora.weights < 7 * GiB  # 4-bit projections, 16-bit embeddings and output layer
    assert qlora.total < 0.9 * 24 * GiB
    full = sft_memory(QWEN_7B, mode="full", precision="bf16", max_length=1024, micro_batch=1, checkpointing=True)
    assert full.weights > 28 * GiB and full.total > 24 * GiB
    assert full.optimizer == 2 * full.weights  # two fp32 AdamW moments per fp32 weight


def test_checkpointing_and_a_chunked_loss_shrink_what_they_should():
    args = dict(mode="lora", precision="bf16", max_length=2048, micro_batch=4, lora_rank=16)
    kept = sft_memory(QWEN_7B, checkpointing=False, **args)
    recomputed = sft_memory(QWEN_7B, checkpointing=True, **args)
    assert recomputed.activations < kept.activations / 5
    assert recomputed.weights == kept.weights and recomputed.logits == kept.logits
    small_chunk = sft_memory(QWEN_7B, checkpointing=True, loss_chunk=256, **args)
    assert small_chunk.logits * 4 == recomputed.logits


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
    assert estimate.summary_line().startswith("needs about ")
