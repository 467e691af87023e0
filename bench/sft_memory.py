"""The analytic SFT memory model (``trainlab_plugins/textgen/memory.py``) against the measured peak, on the CPU.

Each case builds a decoder from a config (random weights, nothing
downloaded), wraps it as text-generation trains it (``SFTModel``: the
chunked loss over the trained tokens), and takes ``--steps`` AdamW steps of
full fine-tuning in fp32 on random batches of ``batch x length`` tokens,
all trained, one torch thread.  Each case runs in its own process: the
measured figure is the peak resident memory (``ru_maxrss``) above the
process's baseline, taken after importing torch and transformers and before
the model is built (after one step of a minute model of the same kind, so
that torch's lazily loaded kernels count in the baseline, as they do in a
process that trained before), with glibc's mmap threshold fixed as in
``finetune_memory.py``; the estimate is ``sft_memory`` for the same
config, batch, length and checkpointing.  ``error_pct`` is (estimate -
measured) / measured.

Cases: the tests' decoders (Qwen2 and Llama shapes of ``tests/helpers.py``'s
``make_decoder_folder``: width 32, 2 layers), the bundled ``tiny-chat``, and
a larger decoder (width 512, 4 layers, vocabulary 32,000) where weights and
activations dwarf the allocator's noise; each with and without gradient
checkpointing.

    .venv/bin/python bench/sft_memory.py [--steps 3] [--quick] [--json]
    .venv/bin/python bench/sft_memory.py --saved [--json]

``--saved`` checks the model's 16-bit terms instead, where the CPU's peak
is too noisy to: the bytes autograd saves for the backward (saved-tensor
hooks, parameters left out) in one forward of the width-512 decoder under
bf16 autocast, batch 2 x 256, no checkpointing, against the model's
``activations`` for LoRA (bf16 base, PEFT rank 16 on every projection,
dropout 0.05) and full fine-tuning (fp32 weights).

Last line: one JSON object, a row per case and ``max_abs_error_pct`` (goal
on the CPU: <= 10 for the test models).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from pairs import bench_parser, emit, speaker

TEST_SHAPE = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 600,
}
CASES = {
    # name: (architecture, config, batch, length)
    "test-qwen2": ("qwen2", TEST_SHAPE, 8, 64),
    "test-llama": ("llama", TEST_SHAPE, 8, 64),
    "tiny-chat": ("qwen2", "tiny-chat", 16, 128),
    "bench-512": (
        "qwen2",
        {
            "hidden_size": 512,
            "intermediate_size": 1408,
            "num_hidden_layers": 4,
            "num_attention_heads": 8,
            "num_key_value_heads": 4,
            "vocab_size": 32000,
        },
        8,
        256,
    ),
}
QUICK = ("test-qwen2", "tiny-chat")
CHILD_ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MALLOC_MMAP_THRESHOLD_": "65536"}
LOSS_CHUNK = 1024


def _config(arch: str, shape):
    from transformers import AutoConfig, LlamaConfig, Qwen2Config

    if shape == "tiny-chat":
        from trainlab_resources import resource_path

        return AutoConfig.from_pretrained(str(resource_path("vocab", "tiny-chat")))
    cls = Qwen2Config if arch == "qwen2" else LlamaConfig
    return cls(max_position_embeddings=512, **shape)


def _warm_up(config, checkpointing: bool) -> None:
    """One step of a one-layer, width-8 model of the same kind, then freed: torch's lazily loaded
    kernels and thread pools are part of the baseline, as they are of any process that trained before."""
    import gc

    import torch
    import transformers
    from trainlab_plugins.textgen.model import SFTModel

    small = config.__class__(
        hidden_size=8,
        intermediate_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        vocab_size=64,
    )
    lm = transformers.AutoModelForCausalLM.from_config(small)
    if checkpointing:
        lm.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": False}
        )
    model = SFTModel(lm, loss_chunk=LOSS_CHUNK).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, 64, (2, 8))
    loss_sum, tokens, _ = model(
        input_ids=ids, labels=ids.clone(), attention_mask=torch.ones_like(ids)
    )
    (loss_sum / tokens).backward()
    optimizer.step()
    del model, lm, optimizer, loss_sum
    gc.collect()


def child(case: str, checkpointing: bool, steps: int) -> dict:
    import resource

    import psutil
    import torch
    import transformers
    from trainlab_plugins.textgen.memory import sft_memory
    from trainlab_plugins.textgen.model import SFTModel

    torch.set_num_threads(1)
    torch.manual_seed(0)
    arch, shape, batch, length = CASES[case]
    config = _config(arch, shape)
    config.use_cache = False
    _warm_up(config, checkpointing)
    baseline = psutil.Process().memory_info().rss
    lm = transformers.AutoModelForCausalLM.from_config(config)
    if checkpointing:
        lm.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": False}
        )
    model = SFTModel(lm, loss_chunk=LOSS_CHUNK).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator().manual_seed(1)
    for _ in range(steps):
        ids = torch.randint(0, config.vocab_size, (batch, length), generator=gen)
        loss_sum, tokens, _ = model(
            input_ids=ids, labels=ids.clone(), attention_mask=torch.ones_like(ids)
        )
        (loss_sum / tokens).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    estimate = sft_memory(
        config,
        mode="full",
        precision="fp32",
        max_length=length,
        micro_batch=batch,
        checkpointing=checkpointing,
        loss_chunk=LOSS_CHUNK,
    )
    measured = peak - baseline
    return {
        "case": case,
        "checkpointing": checkpointing,
        "batch": batch,
        "length": length,
        "parameters": sum(p.numel() for p in lm.parameters()),
        "measured_mb": round(measured / 1e6, 2),
        "estimate_mb": round(estimate.total / 1e6, 2),
        "estimate_parts_mb": {k: round(v / 1e6, 2) for k, v in estimate.parts().items()},
        "estimate_peak_at": estimate.peak_at,
        "error_pct": round(100 * (estimate.total - measured) / measured, 1),
    }


def saved_bytes(mode: str) -> dict:
    import torch
    import transformers
    from trainlab_plugins.textgen.memory import sft_memory
    from trainlab_plugins.textgen.model import SFTModel

    torch.manual_seed(0)
    arch, shape, _, _ = CASES["bench-512"]
    batch, length = 2, 256
    config = _config(arch, shape)
    config.use_cache = False
    lm = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16 if mode == "lora" else torch.float32)
    if mode == "lora":
        from peft import LoraConfig, get_peft_model

        targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
        lm = get_peft_model(lm, LoraConfig(task_type="CAUSAL_LM", r=16, lora_alpha=32, lora_dropout=0.05, target_modules=targets))
    model = SFTModel(lm, loss_chunk=LOSS_CHUNK).train()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    storages: dict[int, int] = {}

    def pack(tensor):
        ptr = tensor.untyped_storage().data_ptr()
        if ptr not in params:
            storages.setdefault(ptr, tensor.untyped_storage().nbytes())
        return tensor

    ids = torch.randint(0, config.vocab_size, (batch, length), generator=torch.Generator().manual_seed(1))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), torch.autocast("cpu", dtype=torch.bfloat16):
        model(input_ids=ids, labels=ids.clone(), attention_mask=torch.ones_like(ids))
    estimate = sft_memory(config, mode=mode, precision="bf16", max_length=length, micro_batch=batch, checkpointing=False,
                          lora_rank=16, loss_chunk=LOSS_CHUNK)  # fmt: skip
    measured = sum(storages.values())
    return {
        "mode": mode,
        "measured_mb": round(measured / 1e6, 2),
        "estimate_mb": round(estimate.activations / 1e6, 2),
        "error_pct": round(100 * (estimate.activations - measured) / measured, 1),
    }


def main() -> int:
    parser = bench_parser(__doc__, "the test Qwen2 decoder and tiny-chat, one step")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--saved", action="store_true", help="the 16-bit terms against autograd's saved tensors (see above)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--checkpointing", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.checkpointing, args.steps)))
        return 0
    say = speaker(args)
    if args.saved:
        rows = [saved_bytes(mode) for mode in ("lora", "full")]
        for row in rows:
            say(f"{row['mode']:5s} bf16 saved activations  measured {row['measured_mb']:8.2f} MB  estimate {row['estimate_mb']:8.2f} MB  error {row['error_pct']:+6.1f} %")
        return emit("sft_memory_saved", args, {"rows": rows})
    steps = 1 if args.quick else args.steps
    rows = []
    for case in QUICK if args.quick else CASES:
        for checkpointing in (False, True):
            command = [
                sys.executable,
                __file__,
                "--child",
                case,
                "--steps",
                str(steps),
                *(["--checkpointing"] if checkpointing else []),
            ]
            proc = subprocess.run(
                command, capture_output=True, text=True, env=CHILD_ENV, check=False
            )
            if proc.returncode != 0:
                raise SystemExit(
                    f"sft_memory: the {case} child failed:\n{proc.stderr[-3000:]}"
                )
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            rows.append(row)
            say(f"{case:11s} checkpointing {'on ' if checkpointing else 'off'}  measured {row['measured_mb']:8.2f} MB  "
                f"estimate {row['estimate_mb']:8.2f} MB  error {row['error_pct']:+6.1f} %")  # fmt: skip
    tests = [r for r in rows if r["case"].startswith("test-")]
    return emit(
        "sft_memory",
        args,
        {
            "steps": steps,
            "rows": rows,
            "max_abs_error_pct": max(abs(r["error_pct"]) for r in rows),
            "max_abs_error_pct_test_models": max(
                (abs(r["error_pct"]) for r in tests), default=None
            ),
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
