"""Model formats: what kind of model a folder or file holds, and which tasks take it.

A format is a short name: ``transformers`` (a folder with ``config.json``),
``trainlab-image`` (a TrainLab image model folder: ``model.json`` whose
``format`` starts with ``trainlab-image``), ``torchvision-checkpoint`` (a
torch hub weights file), or the ``format`` string of a plugin's own
``model.json``.  A task lists the formats its ``model`` parameter takes in
``TaskSpec.model_formats``; ``accepts`` and ``tasks_accepting`` match the
two, so neither the model store nor the window knows any task by name.
Cheap: file names and one small JSON file, no torch.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from trainlab.pluginhost.host import registry

CONFIG_FILE = "config.json"
MODEL_DESCRIPTION = "model.json"
TORCH_CHECKPOINT_SUFFIXES = (".pth", ".pt", ".safetensors")
TRANSFORMERS = "transformers"
TRAINLAB_IMAGE = "trainlab-image"
TORCHVISION_CHECKPOINT = "torchvision-checkpoint"


def model_format(path: str | os.PathLike[str]) -> str:
    """The format of a model folder or file (module docstring); "" for neither."""
    path = Path(path)
    if path.is_file():
        return TORCHVISION_CHECKPOINT if path.suffix in TORCH_CHECKPOINT_SUFFIXES else ""
    if not path.is_dir():
        return ""
    if (path / MODEL_DESCRIPTION).is_file():
        try:
            declared = json.loads((path / MODEL_DESCRIPTION).read_text(encoding="utf-8")).get("format")
        except (OSError, ValueError, AttributeError):
            declared = None
        if isinstance(declared, str) and declared.strip():
            # TrainLab's image exports name their head (classifier, ...); one format for all of them
            return TRAINLAB_IMAGE if declared.startswith(TRAINLAB_IMAGE) else declared.strip()
    return TRANSFORMERS if (path / CONFIG_FILE).is_file() else ""


def accepts(spec: Any, model: dict[str, Any] | str) -> bool:
    """Whether task ``spec`` (a TaskSpec) takes ``model`` (an ``available_models`` entry or a format)."""
    fmt = model if isinstance(model, str) else str(model.get("format") or "")
    return bool(fmt) and fmt in tuple(getattr(spec, "model_formats", ()) or ())


def tasks_accepting(fmt: str) -> list[str]:
    """Ids of the installed tasks whose ``model_formats`` include ``fmt`` (registry order)."""
    try:
        return [task_id for task_id, entry in registry().tasks.items() if accepts(entry.spec, fmt)]
    except Exception:  # noqa: BLE001 - a listing never fails over the plugins
        return []
