"""The installation (from wheels, without Qt) and ``trainlab doctor --json``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from gpucheck.common import ROOT, CheckEnv, Outcome

QT_MODULES = ("PySide6", "pyqtgraph", "shiboken6")


def check_install(env: CheckEnv, out: Outcome) -> None:
    """TrainLab comes from the wheels gpu_check.sh installed, imports without Qt, finds its plugins."""
    import trainlab

    how = os.environ.get("GPU_CHECK_INSTALL", "")
    site = os.environ.get("GPU_CHECK_SITE", "")
    out.fact("install", how)
    out.fact("trainlab_file", trainlab.__file__)
    if site:
        out.expect("trainlab imported from the wheel install", Path(trainlab.__file__).resolve().is_relative_to(Path(site).resolve()),
                   trainlab.__file__)  # fmt: skip
    else:
        out.fact("note", "not installed from wheels here (gpu_check.sh --no-install, or no wheels folder)")
    source = (ROOT / "core" / "trainlab" / "system" / "release.py").read_text(encoding="utf-8")
    tree_version = re.search(r'TRAINLAB_VERSION = "([^"]+)"', source).group(1)
    out.expect("installed version is the working tree's", trainlab.__version__ == tree_version, f"{trainlab.__version__} vs {tree_version}")
    wheel_stamp, tree_stamp = os.environ.get("GPU_CHECK_WHEEL_STAMP", ""), os.environ.get("GPU_CHECK_TREE_STAMP", "")
    if wheel_stamp and tree_stamp:
        out.expect("the wheel was built from these sources (bench/gpu_bundle.sh after the last change)", wheel_stamp == tree_stamp,
                   f"wheel {wheel_stamp[:12]}, tree {tree_stamp[:12]}")  # fmt: skip

    import trainlab.cli.commands  # noqa: F401 - the CLI's module level must not need Qt
    import trainlab.engine.scripting  # noqa: F401
    from trainlab.pluginhost.host import load_factory, registry

    reg = registry()
    status = {p.name: p.status for p in reg.plugins}
    out.fact("plugins", status)
    for task_id in ("image-classification", "text-classification"):
        ok = task_id in reg.tasks
        out.expect(f"built-in task {task_id} found", ok, status)
        if ok:
            load_factory(reg.task(task_id).spec.factory)  # the runtime modules import here too
    qt = [name for name in QT_MODULES if name in sys.modules]
    out.expect("no Qt module imported by the engine, CLI and plugins", not qt, ", ".join(qt))
    version = subprocess.run([sys.executable, "-m", "trainlab", "--version"], capture_output=True, text=True, timeout=60)
    out.expect("python -m trainlab --version", version.returncode == 0 and trainlab.__version__ in version.stdout,
               (version.stdout + version.stderr).strip()[:200])  # fmt: skip

    import torch

    facts = {"python": sys.version.split()[0], "executable": sys.executable, "torch": torch.__version__, "cuda": torch.version.cuda}
    for name in ("torchvision", "transformers", "safetensors", "pynvml", "psutil", "pluggy", "numpy", "PIL", "platformdirs"):
        try:
            module = __import__(name)
            facts[name] = getattr(module, "__version__", "present")
        except ImportError:
            facts[name] = None
    out.fact("versions", facts)


def check_doctor(env: CheckEnv, out: Outcome) -> None:
    """``trainlab doctor --json``: it runs, and on a GPU machine sees a usable GPU with a new enough driver."""
    proc = subprocess.run([sys.executable, "-m", "trainlab", "doctor", "--json"], capture_output=True, text=True,
                          timeout=max(10.0, min(120.0, env.left() - 5)))  # fmt: skip
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        out.expect("doctor printed one JSON object", False, (proc.stdout + proc.stderr)[-400:])
        return
    out.expect("doctor printed one JSON object", True)
    out.expect("doctor: this machine can train (exit 0)", proc.returncode == 0, "; ".join(report.get("problems", [])))
    out.fact("torch", {k: report["torch"].get(k) for k in ("version", "cuda", "cudnn", "arch_list", "cuda_available")})
    out.fact("driver", report["driver"])
    out.fact("gpus", report["gpus"])
    out.fact("devices", report["devices"])
    out.fact("warnings", report["warnings"])
    if not env.cuda:
        return
    gpus = report["gpus"]
    out.expect("doctor sees a GPU", gpus, f"{len(gpus)} GPU(s)")
    out.expect("doctor: driver new enough", report["driver"].get("new_enough") is True, report["driver"].get("message", ""))
    out.expect("doctor: a GPU usable by torch", any(g.get("usable") for g in gpus), [g.get("kernels_note") for g in gpus])
    out.expect("doctor: the GPU matched to a torch device", any(g.get("torch_device") for g in gpus))
    out.expect("doctor: bf16 supported", any(g.get("bf16") for g in gpus), [g.get("bf16_reason") for g in gpus])
    out.expect("doctor lists cuda:0 among the devices", "cuda:0" in report["devices"], report["devices"])
