"""Checkpoints: one safetensors file each, written atomically.

Everything a resume needs goes into a single file, so a checkpoint is either
wholly there or not at all: model weights, optimizer tensors and RNG states as
tensors; optimizer hyper-parameters, scheduler, gradient scaler, Python and
NumPy RNG states and the loop position as JSON in the safetensors metadata.
Nothing in it needs pickle, so nothing needs ``weights_only=False``.

Each file carries its checksum in its header (``trainlab.system.fileio``) and is
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

from trainlab.api.errors import DataError, RunFailed
from trainlab.system.fileio import (
    DamagedFileError,
    disk_full_message,
    file_size_limit_message,
    is_disk_full,
    is_file_too_large,
    save_safetensors,
    verify_safetensors,
)
from trainlab.system.signals import signals_deferred

FORMAT = "trainlab-checkpoint/1"
META_KEY = "trainlab"


class CheckpointError(RunFailed):
    """A checkpoint could not be written (the run fails: exit 1)."""


class DamagedCheckpoint(DamagedFileError, CheckpointError):
    """A checkpoint that cannot be used: unreadable, damaged, of an unknown
    format.  Bad input (exit 2), the message naming the file."""


def _model_tensors(model: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """State dict with shared tensors stored once; returns (tensors, aliases)."""
    return state_tensors(model.state_dict())


def state_tensors(state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A model's state dict with shared tensors stored once: (tensors, aliases)."""
    tensors: dict[str, Any] = {}
    aliases: dict[str, str] = {}
    seen: dict[tuple[int, int, tuple[int, ...]], str] = {}
    for name, tensor in state.items():
        local = getattr(tensor, "_local_tensor", tensor)  # a sharded parameter (DTensor): its own shard's storage
        key = (local.untyped_storage().data_ptr(), local.storage_offset(), tuple(tensor.shape))
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
    return split_optimizer_state(optimizer.state_dict())


def split_optimizer_state(state_dict: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """An optimizer's state dict (parameters numbered, as ``Optimizer.state_dict``) as
    (tensors named ``optim.<number>.<key>``, the rest as JSON)."""
    import torch

    tensors: dict[str, Any] = {}
    plain_state: dict[str, dict[str, Any]] = {}
    for param_id, values in state_dict["state"].items():
        for key, value in values.items():
            if isinstance(value, torch.Tensor):
                tensors[f"optim.{param_id}.{key}"] = value.detach().contiguous()
            else:
                plain_state.setdefault(str(param_id), {})[key] = value
    return tensors, {"param_groups": state_dict["param_groups"], "state": plain_state}


def join_optimizer_state(tensors: dict[str, Any], plain: dict[str, Any]) -> dict[str, Any]:
    """The optimizer's state dict back from ``split_optimizer_state``'s parts (parameters numbered)."""
    return _join_optimizer(tensors, plain)


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


MARGIN = 32 << 20  # what the rest of a run writes besides its checkpoints (run.json, metrics.jsonl, eval.json)


def ensure_free_space(folder: Path, tensors: dict[str, Any]) -> None:
    need = sum(t.numel() * t.element_size() for t in tensors.values()) + (1 << 20)
    require_free_space(folder, int(need * 1.05), "to write a checkpoint")


def require_free_space(folder: Path, need: int, purpose: str, *, shown: Path | None = None) -> None:
    """CheckpointError naming ``folder`` (or ``shown``: where the files go in the end) and
    its free space when less than ``need`` (+ a margin) is free."""
    free = shutil.disk_usage(folder).free
    if free < need + MARGIN:
        raise CheckpointError(
            f"not enough free disk space in {shown or folder} {purpose}: "
            f"needs about {max(1, round(need / 1e6))} MB, {free / 1e6:.0f} MB free; free some space or use --out on another disk"
        )


def tensor_bytes(module: Any) -> int:
    """Bytes of a model's weights and buffers as a checkpoint stores them."""
    return sum(t.numel() * t.element_size() for t in model_state_tensors(module).values())


def optimizer_state_bytes(optimizer: Any) -> int:
    """Bytes the optimizer's state will take once it has stepped (it is empty before).

    AdamW keeps two tensors per trainable parameter, SGD with momentum one;
    estimated from the parameters before the first step, so the free-space
    check can come before the first epoch's work.
    """
    per_param = 2 if "betas" in optimizer.defaults else 1
    total = 0
    for group in optimizer.param_groups:
        for param in group["params"]:
            if param.requires_grad:
                total += per_param * param.numel() * param.element_size()
    return total


def run_space_needed(model: Any, optimizer: Any, kept: dict[str, int] | None = None) -> int:
    """The most disk space a run's checkpoints and its exported model take at once.

    At the peak a new ``last`` is written beside the old one while ``best``
    exists (2 x full + weights); the export writes the weights again in up
    to three formats (safetensors, torch.export, ONNX) while both
    checkpoints are kept (full + 4 x weights).  ``kept`` are the bytes of
    files already on disk that count towards it (a resumed run's).
    """
    weights = tensor_bytes(model)
    full = weights + optimizer_state_bytes(optimizer) + (1 << 20)
    peak = max(2 * full + weights, full + 4 * weights)
    return max(0, peak - sum((kept or {}).values()))


def checkpoint_step(path: Path) -> int | None:
    """The loop step a checkpoint was written at, from its header alone (no hashing); None if unreadable."""
    try:
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as handle:
            plain = json.loads((handle.metadata() or {})[META_KEY])
        return int(plain["meta"]["position"]["step"])
    except Exception:  # noqa: BLE001 - a missing or damaged file has no step to tell
        return None


def checkpoint_position(path: Path, *, verify: bool = True) -> dict[str, Any]:
    """The loop position saved in a checkpoint; DamagedCheckpoint if unusable.

    ``verify=False`` reads the header alone, for a file verified just before.
    """
    _, plain = _check(Path(path), verify=verify)
    meta = plain.get("meta")
    position = meta.get("position") if isinstance(meta, dict) else None
    if not isinstance(position, dict):
        raise DamagedCheckpoint(f"checkpoint {path} holds no loop position")
    return position


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
    parts = _split_optimizer(optimizer) if full and optimizer is not None else None
    write_checkpoint(path, tensors, aliases, meta, optimizer_parts=parts, scheduler=scheduler, scaler=scaler, full=full)


def write_checkpoint(
    path: Path,
    model_tensors: dict[str, Any],
    aliases: dict[str, str],
    meta: dict[str, Any],
    *,
    optimizer_parts: tuple[dict[str, Any], dict[str, Any]] | None = None,
    scheduler: Any = None,
    scaler: Any = None,
    full: bool = True,
) -> None:
    """Write ``path`` atomically from a model's tensors (``state_tensors``) and an optimizer's
    parts (``split_optimizer_state``): what ``save_checkpoint`` writes, for a caller that
    gathered them itself (a sharded model's full state)."""
    tensors = {f"model.{k}": v for k, v in model_tensors.items()}
    plain: dict[str, Any] = {"format": FORMAT, "aliases": aliases, "meta": meta}
    if full:
        if optimizer_parts is not None:
            opt_tensors, plain["optimizer"] = optimizer_parts
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
    try:
        # A Ctrl-C or SIGTERM meanwhile (the second, after the one that asked
        # for this checkpoint) acts once it is written; a third aborts at once,
        # the previous checkpoint kept (the write is atomic).
        with signals_deferred(abort_after=2, note="writing the checkpoint first (Ctrl-C again to abort at once)"):
            save_safetensors(path, tensors, {META_KEY: json.dumps(plain, default=_json_default)})
    except Exception as exc:
        if is_disk_full(exc):  # the disk filled while writing (another program), despite the check
            raise CheckpointError(disk_full_message(path.parent, f"writing {path.name}")) from None
        if is_file_too_large(exc):  # ulimit -f, or the largest file the file system holds
            raise CheckpointError(file_size_limit_message(path)) from None
        raise


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


def _check(path: Path, *, verify: bool = True) -> tuple[str, dict[str, Any]]:
    verdict = "unverified"
    if verify:
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


def read_checkpoint_header(path: Path) -> dict[str, Any]:
    """The JSON part of a checkpoint (meta, optimizer groups, scheduler...), without its tensors or a checksum pass."""
    return _check(Path(path), verify=False)[1]


def model_state(tensors: dict[str, Any], plain: dict[str, Any]) -> dict[str, Any]:
    """The model's state dict in a checkpoint's tensors, shared tensors under each of their names."""
    state = {k[len("model.") :]: v for k, v in tensors.items() if k.startswith("model.")}
    for alias, target in plain.get("aliases", {}).items():
        if target in state:
            state[alias] = state[target]
    return state


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def load_model_weights(model: Any, tensors: dict[str, Any], plain: dict[str, Any]) -> None:
    model.load_state_dict(model_state(tensors, plain))


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
