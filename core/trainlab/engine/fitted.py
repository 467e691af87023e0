"""A task's fitted state, kept with the run (``Task.fitted_state``).

``task_state.json`` holds the JSON values; tensors the task returns under
``"tensors"`` go to ``task_state.safetensors`` beside it (never a pickle).
Both are written into the run folder and into ``model/`` when a run
completes, so that ``trainlab eval``, ``predict`` and a later "train N more
epochs" find what evaluation and prediction need (target scaling,
vocabularies, thresholds), also from a copied ``model/`` folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainlab.system.fileio import atomic_write_json, read_json, save_safetensors, verify_safetensors

STATE_JSON = "task_state.json"
STATE_TENSORS = "task_state.safetensors"


def save_fitted_state(task: Any, *folders: Path) -> None:
    """Write ``task.fitted_state()`` into each folder (nothing when it is empty)."""
    state = dict(task.fitted_state() or {})
    tensors = state.pop("tensors", None) or {}
    if not state and not tensors:
        return
    for folder in folders:
        folder = Path(folder)
        atomic_write_json(folder / STATE_JSON, state)
        if tensors:
            save_safetensors(folder / STATE_TENSORS, {k: v.detach().contiguous().cpu() for k, v in tensors.items()})


def load_fitted_state(task: Any, *folders: Path) -> bool:
    """Give the task the state saved in the first of ``folders`` that has one; False if none."""
    for folder in folders:
        folder = Path(folder)
        if not (folder / STATE_JSON).is_file():
            continue
        state: dict[str, Any] = dict(read_json(folder / STATE_JSON))
        if (folder / STATE_TENSORS).is_file():
            from safetensors.torch import load_file

            verify_safetensors(folder / STATE_TENSORS)
            state["tensors"] = load_file(str(folder / STATE_TENSORS), device="cpu")
        task.load_fitted_state(state)
        return True
    return False
