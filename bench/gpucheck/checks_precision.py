"""Precision and memory paths of the engine on CUDA: autocast, GradScaler, TF32, channels_last, OOM, SDPA."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from gpucheck.common import (
    CheckEnv,
    Outcome,
    checkpoint_state,
    engine_run,
    env_threads,
    free_cuda,
    read_events,
    register_tasks,
    say,
    set_tf32,
    stopwatch,
    tf32_off_callback,
)

# TF32 keeps 10 bits of mantissa: a 1024-long fp32 dot product then errs by
# about 3e-4 relative; true fp32 by about 1e-6.
TF32_ENGAGED_ABOVE = 5e-5
TF32_OFF_BELOW = 1e-5


def placeholder(env: CheckEnv) -> Path:
    path = env.work / "in-memory.txt"
    path.write_text("the data of this task is made in memory\n")
    return path


def train_losses(run_dir: Path) -> list[float]:
    return [e["loss"] for e in read_events(run_dir) if e.get("event") == "train" and e.get("loss") is not None]


def started_event(run_dir: Path) -> dict[str, Any]:
    return next((e for e in read_events(run_dir) if e.get("event") == "started"), {})


def log_messages(run_dir: Path) -> list[str]:
    return [e.get("message", "") for e in read_events(run_dir) if e.get("event") == "log"]


def weights_finite(path: Path) -> bool:
    from safetensors.torch import load_file

    return all(bool(t.float().isfinite().all()) for t in load_file(str(path)).values() if t.is_floating_point())


def _tensor_params(env: CheckEnv, **extra: Any) -> dict[str, Any]:
    params = {
        "arch": "small",
        "image_size": env.pick(64, 16),
        "pool": env.pick(512, 32),
        "length": env.pick(2048, 64),
        "classes": 10,
        "batch_size": env.pick(64, 16),
        "epochs": 2,
        "lr": 2e-3,
        "device": env.device,
        "probe": True,
        "log_interval": 0.0,  # every step's loss in metrics.jsonl: the curve is what is checked
    }
    params.update(extra)
    return params


def check_autocast_bf16(env: CheckEnv, out: Outcome) -> None:
    """precision auto picks bf16 on this GPU; the step runs under bf16 autocast with fp32 master weights; the loss falls."""
    from gpucheck.tasks import PROBES

    env_threads()
    register_tasks()
    result, run_dir = engine_run("gpu-check-tensors", placeholder(env), _tensor_params(env, precision="auto" if env.cuda else "bf16"), env.work / "run")
    out.expect("run completed", result.status == "completed", result.error)
    started = started_event(run_dir)
    out.fact("started", {k: started.get(k) for k in ("device", "precision")})
    if env.cuda:
        import torch

        major, minor = torch.cuda.get_device_capability()
        out.fact("compute_capability", f"{major}.{minor}")
        out.expect("precision auto resolved to bf16 (compute capability 8.0+)", started.get("precision") == ("bf16" if major >= 8 else "fp16"),
                   started.get("precision"))  # fmt: skip
    seen = PROBES.get("gpu-check-tensors", {}).get("first_step", {})
    out.fact("first_step", seen)
    out.expect("the step ran under autocast bfloat16", seen.get("autocast") == {"enabled": True, "dtype": "bfloat16"}, seen.get("autocast"))
    out.expect("master weights stay float32", seen.get("param_dtypes") == ["float32"], seen.get("param_dtypes"))
    losses = train_losses(run_dir)
    out.expect("training loss fell", len(losses) >= 2 and losses[-1] < losses[0], f"{losses[:1]} -> {losses[-1:]}")
    if result.status == "completed":
        out.expect("final weights finite", weights_finite(run_dir / "model" / "model.safetensors"))


def check_autocast_fp16_gradscaler(env: CheckEnv, out: Outcome) -> None:
    """fp16 autocast with the GradScaler: provoked overflows make it skip steps and back off; training still converges."""
    from gpucheck.tasks import PROBES

    env_threads()
    register_tasks()
    # The loss times 4096: fp16 gradients overflow at the scaler's initial
    # 65536 until it has backed off; AdamW does not mind the constant factor.
    precision = "fp16" if env.cuda else "fp32"  # fp16 needs CUDA; the dry run runs the code in fp32
    params = _tensor_params(env, precision=precision, loss_multiplier=4096.0)
    result, run_dir = engine_run("gpu-check-tensors", placeholder(env), params, env.work / "run")
    out.expect("run completed", result.status == "completed", result.error)
    seen = PROBES.get("gpu-check-tensors", {}).get("first_step", {})
    out.fact("first_step", seen)
    state = checkpoint_state(run_dir / "checkpoints" / "last.safetensors")
    scaler = state.get("scaler")
    out.fact("scaler", scaler)
    losses = train_losses(run_dir)
    out.expect("training loss fell", len(losses) >= 2 and losses[-1] < losses[0], f"{losses[:1]} -> {losses[-1:]}")
    if result.status == "completed":
        out.expect("final weights finite", weights_finite(run_dir / "model" / "model.safetensors"))
    if not env.cuda:
        out.expect("no scaler state without fp16", scaler is None, scaler)
        return
    out.expect("the step ran under autocast float16", seen.get("autocast") == {"enabled": True, "dtype": "float16"}, seen.get("autocast"))
    out.expect("master weights stay float32", seen.get("param_dtypes") == ["float32"], seen.get("param_dtypes"))
    out.expect("the checkpoint holds the GradScaler's state", isinstance(scaler, dict) and "scale" in scaler, scaler)
    if isinstance(scaler, dict) and scaler.get("scale"):
        scale = float(scaler["scale"])
        skipped = round(math.log2(65536.0 / scale)) if scale > 0 else None
        out.figure("final_scale", scale)
        out.figure("overflow_steps_skipped", skipped)
        out.expect("the scaler backed off after overflows (scale below 65536)", 0 < scale < 65536.0, scale)
        out.expect("and some steps still trained", skipped is not None and skipped < result.steps, f"{skipped} of {result.steps} steps skipped")


def check_tf32(env: CheckEnv, out: Outcome) -> None:
    """fp32 runs on CUDA compute in TF32 (the engine turns it on); turned off, they compute in true fp32."""
    import torch

    from gpucheck.tasks import PROBES

    env_threads()
    register_tasks()
    seen = {}
    for label, callbacks in (("engine", []), ("tf32_off", [tf32_off_callback()])):
        PROBES.clear()
        params = _tensor_params(env, precision="fp32", epochs=1, length=env.pick(256, 32))
        result, _ = engine_run("gpu-check-tensors", placeholder(env), params, env.work / f"run-{label}", callbacks)
        out.expect(f"{label}: run completed", result.status == "completed", result.error)
        seen[label] = PROBES.get("gpu-check-tensors", {}).get("first_step", {})
        out.fact(label, {k: seen[label].get(k) for k in ("tf32", "numerics", "autocast")})
    engine, off = seen["engine"], seen["tf32_off"]
    out.expect("fp32 runs without autocast", engine.get("autocast", {}).get("enabled") is False, engine.get("autocast"))
    # torch raises on the older API's readers (get_float32_matmul_precision,
    # matmul.allow_tf32) once TF32 was set through the newer one alone; code
    # that reads them (plugins, torch.compile's autotuner) would then fail.
    if not env.cuda:
        # The engine's TF32 set-up only sets flags: the dry run can call it as a CUDA run would.
        import types

        from gpucheck.common import tf32_state
        import trainlab.engine.device as device

        enable = getattr(device, "enable_tf32", None)
        if enable is None:
            out.fact("engine_tf32_setup", "trainlab.engine.device.enable_tf32 not found: not exercised on the CPU")
            return
        enable(types.SimpleNamespace(type="cuda"))
        state = tf32_state()
        out.fact("after_engine_tf32_setup", state)
        engine = {"tf32": state}
    raising = [k for k, v in engine.get("tf32", {}).items() if str(v).startswith("raises")]
    out.expect("torch's TF32 switches all readable after the engine's set-up", not raising, raising)
    if not env.cuda:
        return
    flags, off_flags = engine.get("tf32", {}), off.get("tf32", {})
    if "matmul.fp32_precision" in flags and not str(flags["matmul.fp32_precision"]).startswith("raises"):
        out.expect("engine set TF32 for matmuls", flags["matmul.fp32_precision"] == "tf32", flags["matmul.fp32_precision"])
        out.expect("engine set TF32 for cuDNN convolutions", flags["cudnn.conv.fp32_precision"] == "tf32", flags["cudnn.conv.fp32_precision"])
    errors, off_errors = engine.get("numerics", {}), off.get("numerics", {})
    out.figure("fp32_matmul_rel_error_engine", errors.get("matmul"))
    out.figure("fp32_conv_rel_error_engine", errors.get("conv"))
    out.figure("fp32_matmul_rel_error_tf32_off", off_errors.get("matmul"))
    out.figure("fp32_conv_rel_error_tf32_off", off_errors.get("conv"))
    out.expect("engine: matmuls really computed in TF32", (errors.get("matmul") or 0) > TF32_ENGAGED_ABOVE, errors.get("matmul"))
    out.expect("TF32 off: matmuls in true fp32", (off_errors.get("matmul") or 1) < TF32_OFF_BELOW, off_errors.get("matmul"))
    # cuDNN may still pick a kernel without tensor cores for a convolution: a fact, not a failure.
    out.fact("conv_tf32_engaged", (errors.get("conv") or 0) > TF32_ENGAGED_ABOVE)
    out.fact("conv_tf32_off_true_fp32", (off_errors.get("conv") or 1) < TF32_OFF_BELOW)

    n = 8192
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    for enabled in (True, False):
        set_tf32(enabled)
        for _ in range(3):
            a @ b
        torch.cuda.synchronize()
        start, reps = time.perf_counter(), 10
        for _ in range(reps):
            a @ b
        torch.cuda.synchronize()
        tflops = 2 * n**3 * reps / (time.perf_counter() - start) / 1e12
        out.figure(f"fp32_matmul_tflops_{'tf32' if enabled else 'ieee'}", tflops)
    out.figure("tf32_matmul_speedup", out.figures["fp32_matmul_tflops_tf32"] / out.figures["fp32_matmul_tflops_ieee"])


def check_channels_last(env: CheckEnv, out: Outcome) -> None:
    """The image task on CUDA: model, input and every convolution's output in channels_last, under bf16 autocast."""
    from gpucheck.data import make_jpegs
    from gpucheck.tasks import PROBES

    env_threads()
    register_tasks()
    data = make_jpegs(env.work / "images", classes=4, train_per_class=env.pick(32, 6), val_per_class=2, side=env.pick(160, 40))
    params = {"model": "resnet50", "pretrained": False, "image_size": env.pick(128, 32), "batch_size": env.pick(32, 8),
              "epochs": 1, "augmentation": "none", "device": env.device, "precision": "auto" if env.cuda else "bf16"}  # fmt: skip
    watch = stopwatch(1, 1, env.sync)
    result, _ = engine_run("gpu-check-image", data, params, env.work / "run", [watch])
    out.expect("run trained its steps", result.status in ("completed", "cancelled") and result.steps >= 2, f"{result.status} {result.error}")
    seen = PROBES.get("gpu-check-image", {}).get("first_step", {})
    out.fact("first_step", seen)
    out.expect("the step ran under autocast bfloat16", seen.get("autocast") == {"enabled": True, "dtype": "bfloat16"}, seen.get("autocast"))
    out.expect("convolutions compute in bfloat16", seen.get("last_conv_output_dtype") == "bfloat16", seen.get("last_conv_output_dtype"))
    out.expect("master weights stay float32", seen.get("param_dtypes") == ["float32"], seen.get("param_dtypes"))
    if not env.cuda:
        return
    out.expect("input pixels in channels_last", seen.get("input_channels_last") is True)
    out.expect("model weights in channels_last", seen.get("first_conv_weight_channels_last") is True)
    out.expect("the last convolution's output still channels_last", seen.get("last_conv_output_channels_last") is True)


def check_oom_recovery(env: CheckEnv, out: Outcome) -> None:
    """A real CUDA out-of-memory under a memory cap: the run finishes with the same effective batch, and says so.

    On the CPU the out-of-memory is injected above a quarter of the batch, so
    that everything but the memory cap itself still runs.
    """
    import torch

    env_threads()
    register_tasks()
    batch = env.pick(128, 16)
    params = {"channels": env.pick(64, 8), "layers": env.pick(8, 2), "side": env.pick(128, 16), "n_train": 4 * batch,
              "n_val": batch, "batch_size": batch, "epochs": 2, "precision": "fp32", "device": env.device, "seed": 7}  # fmt: skip
    data = placeholder(env)
    if env.cuda:
        free_cuda()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    reference, ref_dir = engine_run("gpu-check-memory", data, params, env.work / "reference")
    out.expect("reference run (no cap) completed", reference.status == "completed", reference.error)
    out.fact("reference", {"steps": reference.steps, "metrics": reference.metrics})
    if env.cuda:
        peak = torch.cuda.max_memory_allocated() - base
        free_cuda()
        total = torch.cuda.get_device_properties(0).total_memory
        # 40 % of the uncapped peak: batch 128 and its halves do not fit, quarters do.
        cap = torch.cuda.memory_allocated() + 0.4 * peak
        out.fact("peak_bytes_uncapped", int(peak))
        out.fact("cap_bytes", int(cap))
        ooms_before = torch.cuda.memory_stats().get("num_ooms", 0)
        torch.cuda.set_per_process_memory_fraction(cap / total, 0)
        try:
            capped, cap_dir = engine_run("gpu-check-memory", data, params, env.work / "capped")
        finally:
            torch.cuda.set_per_process_memory_fraction(1.0, 0)
        ooms = torch.cuda.memory_stats().get("num_ooms", 0) - ooms_before
        out.figure("cuda_ooms_raised", ooms)
        out.expect("CUDA really ran out of memory under the cap", ooms >= 1, f"{ooms} OOM(s) counted by torch's allocator")
    else:
        capped, cap_dir = engine_run("gpu-check-memory", data, {**params, "oom_above": batch // 4}, env.work / "capped")
    out.expect("capped run completed", capped.status == "completed", capped.error)
    messages = [m for m in log_messages(cap_dir) if "out of memory" in m]
    out.fact("log", messages)
    out.expect("the run's log says it split the batch", messages, f"{len(messages)} out-of-memory line(s) in metrics.jsonl")
    out.expect("the log names the same effective batch", any(f"same effective batch of {batch}" in m for m in messages), messages[:1])
    out.expect("same number of optimizer steps as without the cap", capped.steps == reference.steps, f"{capped.steps} vs {reference.steps}")
    position = checkpoint_state(cap_dir / "checkpoints" / "last.safetensors").get("meta", {}).get("position", {})
    out.figure("micro_splits", position.get("micro_splits"))
    out.expect("the loop kept training in micro-batches", (position.get("micro_splits") or 1) >= 2, position.get("micro_splits"))
    ref_loss, cap_loss = reference.metrics.get("loss"), capped.metrics.get("loss")
    if ref_loss is not None and cap_loss is not None:
        diff = abs(cap_loss - ref_loss) / max(abs(ref_loss), 1e-9)
        out.figure("val_loss_relative_difference", diff)
        # No batch norm: micro-batches sum to the same gradient; only rounding differs.
        out.expect("the same training as without the cap (validation loss within 2 %)", diff < 0.02, f"{cap_loss:.5f} vs {ref_loss:.5f}")


def check_sdpa(env: CheckEnv, out: Outcome) -> None:
    """The text task on CUDA: transformers picked SDPA attention, and a fused SDPA kernel ran (not the math fallback)."""
    from gpucheck.data import BERT_TINY, make_bert_folder, make_texts
    from gpucheck.tasks import PROFILED_STEP, PROBES

    env_threads()
    register_tasks()
    model = make_bert_folder(env.work / "bert", {**BERT_TINY, "hidden_size": 128, "num_attention_heads": 4}, max_positions=128)
    data = make_texts(env.work / "texts", train_rows=env.pick(256, 64), val_rows=16, min_words=5, max_words=40)
    params = {"model": str(model), "max_length": 64, "batch_size": 16, "epochs": 1, "lr": 1e-4, "device": env.device,
              "precision": "auto" if env.cuda else "bf16"}  # fmt: skip
    watch = stopwatch(1, PROFILED_STEP, env.sync)
    result, _ = engine_run("gpu-check-text", data, params, env.work / "run", [watch])
    out.expect("run trained its steps", result.status in ("completed", "cancelled") and result.steps >= PROFILED_STEP, f"{result.status} {result.error}")
    seen = PROBES.get("gpu-check-text", {})
    out.fact("probe", seen)
    out.expect("transformers picked sdpa attention", seen.get("attn_implementation") == "sdpa", seen.get("attn_implementation"))
    ops = seen.get("attention_ops", [])
    say(f"  attention ops: {ops}")
    out.expect("the forward ran under autocast bfloat16", seen.get("autocast") == {"enabled": True, "dtype": "bfloat16"}, seen.get("autocast"))
    out.expect("scaled_dot_product_attention was called", any("scaled_dot_product" in op for op in ops), ops)
    if not env.cuda:
        return
    fused = [op for op in ops if any(k in op for k in ("flash_attention", "efficient_attention", "cudnn_attention")) and "cpu" not in op]
    out.fact("fused_kernels", fused)
    out.expect("a fused CUDA SDPA kernel ran (flash, memory-efficient or cuDNN)", fused, ops)
    out.expect("not the math fallback", not any("attention_math" in op for op in ops), ops)
