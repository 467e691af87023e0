"""The registry of GPU checks: what runs, in which order, under which time limit.

Order is priority: when the time budget runs short, the checks at the end
are the ones skipped.  ``seconds`` is a check's own limit (its process is
killed past it); the estimates beside them are what the design expects on
an H200 and are replaced by the measured ``seconds`` of the JSON line once
the script has run there.

To add a check: write ``check_NAME(env: CheckEnv, out: Outcome) -> None`` in
a ``gpucheck`` module (see ``gpucheck.common`` for the helpers) and add one
``Check`` line here.  A pending check (``pending=``) is listed as
``skipped`` with what will write it, so the JSON line shows what
is still missing.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    name: str
    function: str  # "gpucheck.module:function"; empty for a pending check
    needs_cuda: bool  # without CUDA: skipped (after running its code on the CPU at tiny scale)
    seconds: int  # time limit of the check's process
    about: str
    pending: str = ""  # what will write it


CHECKS: tuple[Check, ...] = (
    Check("install", "gpucheck.checks_basic:check_install", False, 60,
          "TrainLab installed from the wheels beside the script, without Qt, with --no-index; its plugins load"),
    Check("doctor", "gpucheck.checks_basic:check_doctor", False, 60,
          "trainlab doctor --json: a usable GPU, a new enough driver, bf16"),
    Check("nvml_match", "gpucheck.checks_telemetry:check_nvml_match", True, 60,
          "NVML matched to torch devices by UUID; telemetry puts torch's memory on the right GPU"),
    Check("telemetry_sampler", "gpucheck.checks_telemetry:check_telemetry_sampler", True, 60,
          "the sampler beside a CUDA loop: utilisation, memory rising, this process listed"),
    Check("telemetry_engine_run", "gpucheck.checks_telemetry:check_telemetry_engine_run", True, 90,
          "a real engine run on cuda writes system events naming the GPU and torch's memory"),
    Check("autocast_bf16", "gpucheck.checks_precision:check_autocast_bf16", True, 60,
          "precision auto = bf16 on the GPU; bf16 autocast, fp32 master weights, the loss falls"),
    Check("autocast_fp16_gradscaler", "gpucheck.checks_precision:check_autocast_fp16_gradscaler", True, 60,
          "fp16 autocast and the GradScaler: provoked overflows skip steps, the scale backs off, training converges"),
    Check("tf32", "gpucheck.checks_precision:check_tf32", True, 60,
          "fp32 runs compute in TF32 (measured against float64), and in true fp32 with TF32 off"),
    Check("channels_last", "gpucheck.checks_precision:check_channels_last", True, 90,
          "the image task: model, input and convolution outputs in channels_last under bf16"),
    Check("oom_recovery", "gpucheck.checks_precision:check_oom_recovery", True, 90,
          "a real CUDA OOM under a memory cap: same effective batch, same steps, the log says so"),
    Check("sdpa", "gpucheck.checks_precision:check_sdpa", True, 90,
          "the text task: transformers picked sdpa, and a fused CUDA SDPA kernel ran"),
    Check("resnet50_synthetic", "gpucheck.figures_image:check_resnet50_synthetic", True, 110,
          "figures: ResNet-50 bf16 channels_last on GPU tensors, engine vs hand-tuned loop (>= 0.97) and vs strict fp32 (>= 2)"),
    Check("resnet50_jpeg", "gpucheck.figures_image:check_resnet50_jpeg", True, 120,
          "figures: the same from JPEG files through the loader"),
    Check("text_bf16_vs_fp32", "gpucheck.figures_text:check_text_bf16_vs_fp32", True, 100,
          "figures: a BERT-base-sized fine-tune's samples/s, bf16 against fp32"),
    Check("telemetry_overhead", "gpucheck.checks_telemetry:check_telemetry_overhead", True, 60,
          "bench/telemetry_overhead.py with the real NVML (its own bench too: last)"),
    # -- Newer GPU checks ------------------------------------------------------------------------------
    Check("nccl_world_size_1", "gpucheck.checks_distributed:check_nccl_world_size_1", True, 120,
          "trainlab train --gpus 1: torchrun, an NCCL group of one, the all_reduce preflight, one run written by rank 0; "
          "a batch-norm model's statistics broadcast over NCCL before evaluations"),
    Check("p2p_preflight", "gpucheck.checks_distributed:check_p2p_preflight", False, 30,
          "the consumer-card preflight: NCCL_P2P_DISABLE=1 for two faked GeForce cards without P2P; the real NVML topology read"),
    Check("lora", "gpucheck.checks_finetune:check_lora", True, 120,
          "full vs LoRA fine-tune of a BERT-base-sized model: adapters saved, merged model loads, estimate vs measured peak (<= 15 %)"),
    Check("qlora", "gpucheck.checks_finetune:check_qlora", True, 120,
          "a QLoRA (4-bit base) fine-tune of a 0.5B-shaped decoder; without bitsandbytes: refused with exit 2 naming it"),
    Check("adamw8bit", "gpucheck.checks_finetune:check_adamw8bit", True, 90,
          "optimizer=adamw8bit on a full fine-tune, estimate vs peak; without bitsandbytes: refused with exit 2 naming it"),
    Check("lora_1p5b_24gb", "gpucheck.checks_finetune:check_lora_decoder_fits_24gb", True, 240,
          "a 1.5B Qwen2-shaped decoder, LoRA + checkpointing at length 512: estimate and peak under 24 GB"),
    Check("fsdp_two_gpus", "gpucheck.checks_fsdp:check_fsdp_two_gpus", True, 240,
          "2+ GPUs only: a full bf16 fine-tune of a Qwen2-shaped decoder with sharding=fsdp against DDP: loss within 5 %, "
          "safetensors checkpoints, the whole model exported, less memory per rank"),
    Check("textgen_qlora", "gpucheck.checks_textgen:check_textgen_qlora", True, 180,
          "text-generation QLoRA of a 0.5B Qwen2-shaped decoder, 4 x 1024 tokens, checkpointing: the loss falls; the SFT memory "
          "model (about 3.15 GiB) within 15 % of the allocator's peak; without bitsandbytes LoRA is measured and the check skipped"),
    Check("textgen_sdpa", "gpucheck.checks_textgen:check_textgen_sdpa", True, 60,
          "the decoder text-generation trains attends through SDPA: a fused CUDA kernel (flash, memory-efficient or cuDNN), "
          "not the math fallback, for padded and for packed rows"),
    Check("textgen_flash_attn", "gpucheck.checks_textgen:check_textgen_flash_attn", True, 60,
          "FlashAttention-2 where flash-attn is installed: packed rows give the SDPA loss through flash's kernels; else skipped, saying so"),
    Check("textgen_fused_loss", "gpucheck.checks_textgen:check_textgen_fused_loss", True, 60,
          "Liger's or Cut Cross-Entropy's fused linear cross-entropy, where installed, equals the chunked loss within 1e-5 (fp32, "
          "4096 tokens x 151,936 classes); else skipped, saying so"),
)  # fmt: skip


def by_name() -> dict[str, Check]:
    return {check.name: check for check in CHECKS}
