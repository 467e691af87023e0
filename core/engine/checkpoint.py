"""Checkpoints: one safetensors file each, written atomically.

Everything a resume needs goes into a single file, so a checkpoint is either
wholly there or not at all: model weights, optimizer tensors and RNG states as
tensors; optimizer hyper-parameters, scheduler, gradient scaler, Python and
NumPy RNG states and the loop position as JSON in the safetensors metadata.
Nothing in it needs pickle, so nothing needs ``weights_only=False``.

Each file carries its checksum in its header (``trainlab.fileio``) and is
verified before it is used: flipped bytes must not resume or evaluate as if
nothing happened.  ``verify_checkpoint`` checks one without loading it, so
that resume can choose between the kept checkpoints.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

from trainlab.api import DataError, RunFailed
from trainlab.fileio import DamagedFileError, save_safetensors, verify_safetensors

FORMAT = "trainlab-checkpoint/1"
META_KEY = "trainlab"


class CheckpointError(RunFailed):
    """A checkpoint could not be written (the run fails: exit 1)."""


class DamagedCheckpoint(DamagedFileError, CheckpointError):
    """A checkpoint that cannot be used: unreadable, damaged, of an unknown
    format.  Bad input (exit 2), the message naming the file."""


def _model_tensors(model: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """State dict with shared tensors stored once; returns (tensors, aliases)."""
    tensors: dict[str, Any] = {}
    aliases: dict[str, str] = {}
    seen: dict[tuple[int, int, tuple[int, ...]], str] = {}
    for name, tensor in model.state_dict().items():
        key = (tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tuple(tensor.shape))
        if tensor.numel() and key in seen:
            aliases[name] = seen[key]
            continue
        seen[key] = name
        tensors[name] = tensor.detach().contiguous()
    return tensors, aliases


def model_state_tensors(model: Any) -> dict[str, Any]:
    tensors, _ = _model_tensors(model)
    return tensors


def _rng_state() -> tuple[dict[str, Any], dict[str, Any]]:
    import numpy as np
    import torch

    tensors = {"rng.torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        for i, state in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"rng.cuda.{i}"] = state
    version, state, gauss = random.getstate()
    np_state = np.random.get_state()
    plain = {
        "python": [version, list(state), gauss],
        "numpy": [np_state[0], np_state[1].tolist(), int(np_state[2]), int(np_state[3]), float(np_state[4])],
    }
    return tensors, plain


def _restore_rng(tensors: dict[str, Any], plain: dict[str, Any]) -> None:
    import numpy as np
    import torch

    if "rng.torch" in tensors:
        torch.set_rng_state(tensors["rng.torch"].to(torch.uint8))
    cuda = sorted((k for k in tensors if k.startswith("rng.cuda.")), key=lambda k: int(k.rsplit(".", 1)[1]))
    if cuda and torch.cuda.is_available():
        states = [tensors[k].to(torch.uint8) for k in cuda][: torch.cuda.device_count()]
        torch.cuda.set_rng_state_all(states)
    if "python" in plain:
        version, state, gauss = plain["python"]
        random.setstate((version, tuple(state), gauss))
    if "numpy" in plain:
        name, keys, pos, has_gauss, cached = plain["numpy"]
        np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))


def _split_optimizer(optimizer: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    import torch

    state_dict = optimizer.state_dict()
    tensors: dict[str, Any] = {}
    plain_state: dict[str, dict[str, Any]] = {}
    for param_id, values in state_dict["state"].items():
        for key, value in values.items():
            if isinstance(value, torch.Tensor):
                tensors[f"optim.{param_id}.{key}"] = value.detach().contiguous()
            else:
                plain_state.setdefault(str(param_id), {})[key] = value
    return tensors, {"param_groups": state_dict["param_groups"], "state": plain_state}


def _join_optimizer(tensors: dict[str, Any], plain: dict[str, Any]) -> dict[str, Any]:
    state: dict[int, dict[str, Any]] = {}
    for name, value in tensors.items():
        if name.startswith("optim."):
            _, param_id, key = name.split(".", 2)
            state.setdefault(int(param_id), {})[key] = value
    for param_id, values in plain.get("state", {}).items():
        state.setdefault(int(param_id), {}).update(values)
    groups = []
    for group in plain["param_groups"]:
        # JSON turned tuples (betas) into lists; optimizers expect tuples.
        groups.append({k: (tuple(v) if isinstance(v, list) and k != "params" else v) for k, v in group.items()})
    return {"state": state, "param_groups": groups}


def ensure_free_space(folder: Path, tensors: dict[str, Any]) -> None:
    need = sum(t.numel() * t.element_size() for t in tensors.values()) + (1 << 20)
    free = shutil.disk_usage(folder).free
    if free < need * 1.05 + (32 << 20):
        raise CheckpointError(
            f"not enough free disk space in {folder} to write a checkpoint: "
            f"needs about {need / 1e6:.0f} MB, {free / 1e6:.0f} MB free; free some space or use --out on another disk"
        )


def save_checkpoint(
    path: Path,
    model: Any,
    meta: dict[str, Any],
    *,
    optimizer: Any = None,
    scheduler: Any = None,
    scaler: Any = None,
    full: bool = True,
) -> None:
    """Write ``path`` atomically.  ``full=False`` keeps only the weights."""
    tensors, aliases = _model_tensors(model)
    tensors = {f"model.{k}": v for k, v in tensors.items()}
    plain: dict[str, Any] = {"format": FORMAT, "aliases": aliases, "meta": meta}
    if full:
        if optimizer is not None:
            opt_tensors, plain["optimizer"] = _split_optimizer(optimizer)
            tensors.update(opt_tensors)
        if scheduler is not None:
            plain["scheduler"] = {k: v for k, v in scheduler.state_dict().items() if k != "lr_lambdas"}
        if scaler is not None and scaler.is_enabled():
            plain["scaler"] = scaler.state_dict()
        rng_tensors, plain["rng"] = _rng_state()
        tensors.update(rng_tensors)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ensure_free_space(path.parent, tensors)
    save_safetensors(path, tensors, {META_KEY: json.dumps(plain, default=_json_default)})


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"cannot store {type(value).__name__} in a checkpoint")


def verify_checkpoint(path: Path) -> str:
    """Whether ``path`` is a usable checkpoint, without loading its tensors.

    Returns ``"verified"`` (its checksum matches) or ``"unverified"`` (written
    by a TrainLab from before checksums); raises DamagedCheckpoint naming the
    file otherwise.  A verified file version is not hashed again.
    """
    return _check(Path(path))[0]


def _check(path: Path) -> tuple[str, dict[str, Any]]:
    try:
        verdict = verify_safetensors(path)
    except DataError as exc:
        raise DamagedCheckpoint(f"checkpoint {exc}") from None
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
        plain = json.loads(metadata[META_KEY])
    except (OSError, KeyError, ValueError, RuntimeError, SafetensorError) as exc:
        raise DamagedCheckpoint(f"checkpoint {path} is unreadable: {_one_line(exc)}") from None
    if not isinstance(plain, dict) or plain.get("format") != FORMAT:
        found = plain.get("format") if isinstance(plain, dict) else None
        raise DamagedCheckpoint(f"checkpoint {path} has unknown format {found!r} (this TrainLab reads {FORMAT})")
    return verdict, plain


def read_checkpoint(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(tensors, plain) of a checkpoint file, verified; DamagedCheckpoint if unusable."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    _, plain = _check(Path(path))
    try:
        tensors = load_file(str(path), device="cpu")
    except (OSError, ValueError, RuntimeError, SafetensorError) as exc:
        raise DamagedCheckpoint(f"checkpoint {path} is unreadable: {_one_line(exc)}") from None
    return tensors, plain


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def load_model_weights(model: Any, tensors: dict[str, Any], plain: dict[str, Any]) -> None:
    state = {k[len("model.") :]: v for k, v in tensors.items() if k.startswith("model.")}
    for alias, target in plain.get("aliases", {}).items():
        state[alias] = state[target]
    model.load_state_dict(state)


def restore_training_state(
    tensors: dict[str, Any], plain: dict[str, Any], *, optimizer: Any, scheduler: Any, scaler: Any
) -> None:
    if optimizer is not None and "optimizer" in plain:
        optimizer.load_state_dict(_join_optimizer(tensors, plain["optimizer"]))
    if scheduler is not None and "scheduler" in plain:
        scheduler.load_state_dict({**scheduler.state_dict(), **plain["scheduler"]})
    if scaler is not None and "scaler" in plain and scaler.is_enabled():
        scaler.load_state_dict(plain["scaler"])
    _restore_rng(tensors, plain.get("rng", {}))
