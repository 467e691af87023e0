#!/usr/bin/env bash
# Telemetry on a real NVIDIA GPU: does NVML see the training?
#
# Now part of the GPU check (bench/gpu_check.sh, docs/gpu-check.md); this
# runs its telemetry checks only:
#
#     bash bench/device_check.sh [gpu_check.sh options]     # about a minute
#
#   doctor                trainlab doctor --json: the GPUs, the driver, torch's kernels, bf16
#   nvml_match            NVML and torch matched by UUID; torch's memory on the right GPU
#   telemetry_sampler     the sampler (real NVML, 0.5 s) beside a CUDA loop: utilisation,
#                         memory used rising, this process among the GPU's processes
#   telemetry_engine_run  a real engine run on cuda: metrics.jsonl's system events name
#                         the GPU and torch's memory
#   telemetry_overhead    bench/telemetry_overhead.py with the real NVML
#
# In a developer's .venv with TrainLab installed: bash bench/device_check.sh --no-install.
# The last line is the JSON object of gpu_check.sh; exit 0 only when no check failed.
exec bash "$(dirname "$0")/gpu_check.sh" --only doctor,nvml_match,telemetry_sampler,telemetry_engine_run,telemetry_overhead "$@"
