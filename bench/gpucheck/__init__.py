"""The GPU check: every CUDA path of TrainLab, checked in one run.

``bench/gpu_check.sh`` is the entry point; it installs TrainLab from wheels
and runs ``python -m gpucheck.driver``, which runs each check of
``gpucheck.registry.CHECKS`` in its own process, under its own time limit,
and prints one JSON line.  See docs/gpu-check.md.
"""
