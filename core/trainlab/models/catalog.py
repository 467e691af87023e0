"""Pretrained models available on this machine, found without the network.

A model name resolves, in this order, through

1. TrainLab's model store (``trainlab.system.paths.model_store_dir()``): folders
   added with ``trainlab models import DIR``;
2. the local Hugging Face cache (``HF_HUB_CACHE``, else ``HF_HOME/hub``,
   else ``~/.cache/huggingface/hub``), where the same model may sit under its
   short id (``bert-base-chinese``) or its organisation-qualified id
   (``google-bert/bert-base-chinese``); either name finds either entry.

Nothing here opens a connection or imports torch: the listing reads folder
names and small JSON files, so ``trainlab models`` stays instant.  Only
``import_model`` asks transformers whether a model type can classify
sequences.  Checkpoints in ``$TORCH_HOME/hub/checkpoints`` are listed too.

Every model has a *format* (``trainlab.models.formats``: ``transformers``,
``trainlab-image``, ``torchvision-checkpoint`` or a plugin's own); which
tasks take it comes from their ``TaskSpec.model_formats``, so nothing here
knows any task by name.

Before a folder is imported or used, its weights are checked without being
loaded (``check_weights``): safetensors headers and checksums, and for
pickled ``.bin`` weights the pickle alone, which must hold nothing but
tensors.  The refusal of a pickle is the same one line wherever weights are
read (``refuse_pickle``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainlab.api.errors import UsageError
from trainlab.models.formats import (  # noqa: F401 - re-exported: callers find formats with the models
    MODEL_DESCRIPTION,
    TORCH_CHECKPOINT_SUFFIXES,
    TORCHVISION_CHECKPOINT,
    TRAINLAB_IMAGE,
    TRANSFORMERS,
    accepts,
    model_format,
    tasks_accepting,
)
from trainlab.system.fileio import verify_safetensors
from trainlab.system.paths import model_store_dir

METADATA_FILE = "trainlab-model.json"
CONFIG_FILE = "config.json"
# Any one of these makes a usable tokenizer (fast tokenizer JSON, WordPiece,
# BPE pair, or a SentencePiece model).
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "spiece.model", "sentencepiece.bpe.model", "tokenizer.model")
BPE_FILES = ("vocab.json", "merges.txt")
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
# Files `hf download` fetches that a PyTorch run never reads; not copied into
# the store (they are often as large as the weights themselves).
SKIP_ON_IMPORT = ("*.h5", "*.msgpack", "*.ot", "*.onnx", "*.tflite", "*.mlmodel", ".git", ".cache", "onnx", "coreml", "openvino")
_NAME_RE = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")


# --------------------------------------------------------------------------
# Where models live


def hf_hub_cache_dir() -> Path:
    """The Hugging Face hub cache, as huggingface_hub itself would find it."""
    for key in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(key):
            return Path(os.environ[key]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser()
    return cache / "huggingface" / "hub"


def torch_checkpoints_dir() -> Path:
    """``$TORCH_HOME/hub/checkpoints``, as ``torch.hub.get_dir()`` would find it."""
    if os.environ.get("TORCH_HOME"):
        home = Path(os.environ["TORCH_HOME"]).expanduser()
    else:
        home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "torch"
    return home / "hub" / "checkpoints"


def store_dir() -> Path:
    return model_store_dir()


# --------------------------------------------------------------------------
# What a model folder holds


@dataclass
class FolderCheck:
    """What a folder offers for text classification, and what it lacks."""

    path: Path
    model_type: str = ""
    architectures: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    @property
    def usable(self) -> bool:
        return not self.missing

    def describe_missing(self) -> str:
        return "; ".join(self.missing)


def check_folder(path: Path) -> FolderCheck:
    """Config, tokenizer and weights of a model folder (cheap: no torch)."""
    path = Path(path)
    result = FolderCheck(path)
    if not path.is_dir():
        result.missing.append(f"{path} is not a folder")
        return result
    config_path = path / CONFIG_FILE
    if not config_path.is_file():
        result.missing.append("config.json (the model configuration)")
    else:
        try:
            config = json.loads(config_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            result.missing.append(f"a readable config.json ({exc})")
            config = {}
        if isinstance(config, dict):
            result.model_type = str(config.get("model_type") or "")
            result.architectures = [str(a) for a in config.get("architectures") or []]
        if config_path.is_file() and not result.model_type and not result.missing:
            result.missing.append("model_type in config.json")
    has_tokenizer = any((path / name).is_file() for name in TOKENIZER_FILES) or all(
        (path / name).is_file() for name in BPE_FILES
    )
    if not has_tokenizer:
        result.missing.append("a tokenizer (tokenizer.json, vocab.txt, vocab.json + merges.txt or a SentencePiece .model)")
    if not _has_weights(path):
        if any(path.glob("*.h5")) or any(path.glob("*.msgpack")):
            result.missing.append("PyTorch weights (model.safetensors or pytorch_model.bin); only TensorFlow/Flax weights are there")
        else:
            result.missing.append("weights (model.safetensors or pytorch_model.bin)")
    return result


def _has_weights(path: Path) -> bool:
    return bool(weight_files(path))


def weight_files(folder: Path) -> list[Path]:
    """The weights transformers would load from ``folder``: safetensors first, else pickled ``.bin``."""
    folder = Path(folder)
    for single, index_name in zip(WEIGHT_FILES, WEIGHT_INDEXES):
        if (folder / single).is_file():
            return [folder / single]
        index = folder / index_name
        if index.is_file():
            try:
                shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                continue
            if shards and all((folder / shard).is_file() for shard in shards):
                return [folder / shard for shard in shards]
    return []


def supports_sequence_classification(model_type: str) -> bool:
    """Whether transformers has a sequence-classification head for this type (imports transformers)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES

    return model_type in MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES


def check_text_model_folder(path: Path) -> FolderCheck:
    """``check_folder`` plus whether the model type classifies sequences."""
    result = check_folder(path)
    if result.model_type and not supports_sequence_classification(result.model_type):
        result.missing.append(
            f"a model type with a sequence-classification head (config.json says {result.model_type!r}, "
            "which transformers cannot use for text classification)"
        )
    return result


# --------------------------------------------------------------------------
# Weights that are safe to load


class UnsafeWeightsError(UsageError):
    """Pickled weights that would run code, or more than tensors, when loaded (exit 2)."""


# Lines of torch's weights_only message that are advice, not the reason.
_TORCH_ADVICE = ("Weights only load failed", "Please file an issue", "Check the documentation", "In PyTorch 2.6")


def check_weights(folder: Path, *, pickles: bool = True) -> None:
    """Refuse a model folder whose weights are damaged or would run code when loaded.

    Reads safetensors headers (and hashes files that carry a checksum, once
    per file version) and, with ``pickles``, the pickle of ``.bin`` files;
    never their tensors.
    """
    folder = Path(folder)
    for file in weight_files(folder):
        if file.suffix == ".safetensors":
            verify_safetensors(file)
        elif pickles:
            check_pickle_weights(file, model_folder=folder)


def check_pickle_weights(path: Path, *, model_folder: Path | None = None) -> None:
    """UnsafeWeightsError unless ``torch.load(path, weights_only=True)`` accepts the file.

    torch's own zip format (torch.save since 1.6) is memory-mapped, so only
    the pickle is read; the legacy format has to be read whole.
    """
    import pickle
    import warnings
    import zipfile

    import torch

    path = Path(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns about pickle protocols it did not write
            torch.load(path, map_location="cpu", weights_only=True, mmap=zipfile.is_zipfile(path))
    except pickle.UnpicklingError as exc:
        raise refuse_pickle(path, exc, model_folder=model_folder) from None
    except Exception as exc:  # noqa: BLE001 - any unreadable file is bad input
        raise UsageError(f"cannot read weights file {path}: {type(exc).__name__}: {_one_line(str(exc))}") from None


def refuse_pickle(path: Path, exc: BaseException, *, model_folder: Path | None = None) -> UnsafeWeightsError:
    """The one-line refusal of a pickle that ``torch.load(weights_only=True)`` rejected.

    Names the file and what the pickle would have called (from torch's
    message), and how to convert it on a machine where it may run; never
    torch's advice to load it with ``weights_only=False`` here.
    """
    if model_folder is None:
        target = Path(path).with_suffix(".safetensors")
        # save_file refuses tensors that are not contiguous (a transposed layer, as some published checkpoints
        # hold) or that share memory (tied weights): each is written from its own contiguous copy
        how = (
            "python -c \"import torch; from safetensors.torch import save_file; "
            "save_file({k: v.clone(memory_format=torch.contiguous_format) for k, v in "
            f"torch.load('{path}', weights_only=False).items()}}, '{target}')\" and use {target.name}"
        )
    else:
        how = (
            "python -c \"from transformers import AutoModel; "
            f"AutoModel.from_pretrained('{model_folder}', weights_only=False).save_pretrained('{model_folder}')\" "
            f"(it writes model.safetensors there) and delete {Path(path).name}"
        )
    return UnsafeWeightsError(
        f"cannot read weights file {path}: it is a pickle that {_refusal_reason(str(exc))} when loaded, and "
        f"TrainLab loads pickled weights only if they hold nothing but tensors; if you trust the file, convert it "
        f"to safetensors on a trusted machine: {how}"
    )


def _refusal_reason(message: str) -> str:
    found = re.search(r"GLOBAL ([\w.]+)", message)
    if found:
        return f"would call {found.group(1)}"
    found = re.search(r"reduce for unrecognized function (.+?)(?: which belongs to|$)", message, re.MULTILINE)
    if found:
        return f"would call {found.group(1).strip()}"
    found = re.search(r"Unsupported operand (\d+)", message)
    if found:
        return f"uses pickle instruction {found.group(1)}, which loading only tensors does not allow,"
    lines = [line.strip() for line in message.splitlines() if line.strip() and not line.strip().startswith(_TORCH_ADVICE)]
    detail = lines[0].removeprefix("WeightsUnpickler error:").strip() if lines else ""
    return f"holds more than tensors ({_one_line(detail)})" if detail else "holds more than tensors"


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --------------------------------------------------------------------------
# The Hugging Face cache


def _cache_entries() -> list[tuple[str, Path]]:
    """(repo id, repository folder) for every model in the HF cache."""
    root = hf_hub_cache_dir()
    if not root.is_dir():
        return []
    entries = []
    for folder in sorted(root.glob("models--*")):
        if folder.is_dir():
            entries.append((folder.name[len("models--") :].replace("--", "/"), folder))
    return entries


def _snapshot(repo_folder: Path) -> Path | None:
    """The snapshot ``refs/main`` points at, else the newest one."""
    snapshots = repo_folder / "snapshots"
    ref = repo_folder / "refs" / "main"
    if ref.is_file():
        commit = ref.read_text(encoding="utf-8").strip()
        if (snapshots / commit).is_dir():
            return snapshots / commit
    if not snapshots.is_dir():
        return None
    candidates = [p for p in snapshots.iterdir() if p.is_dir()]
    return max(candidates, key=lambda p: p.stat().st_mtime) if candidates else None


def _short(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _find_in_cache(name: str) -> list[tuple[str, Path]]:
    """Cache entries for ``name``: the exact id first, then the other form of it."""
    entries = _cache_entries()
    exact = [(rid, folder) for rid, folder in entries if rid == name]
    if exact:
        return exact
    short = _short(name)
    if "/" in name:
        # an org-qualified name may sit under its legacy short id
        return [(rid, folder) for rid, folder in entries if rid == short]
    return [(rid, folder) for rid, folder in entries if "/" in rid and _short(rid) == short]


# --------------------------------------------------------------------------
# The store


def _slug(name: str) -> str:
    return name.replace("/", "--")


def _read_metadata(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((folder / METADATA_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _store_entries() -> list[tuple[str, Path]]:
    root = store_dir()
    if not root.is_dir():
        return []
    entries = []
    for folder in sorted(root.iterdir()):
        if folder.is_dir() and not folder.name.startswith("."):
            name = str(_read_metadata(folder).get("name") or folder.name.replace("--", "/"))
            entries.append((name, folder))
    return entries


def _find_in_store(name: str) -> list[tuple[str, Path]]:
    entries = _store_entries()
    exact = [(n, f) for n, f in entries if n == name]
    if exact:
        return exact
    # a short name matches any organisation's, a qualified one only the short
    # form (alice/tiny is not bob/tiny)
    return [(n, f) for n, f in entries if _short(n) == _short(name) and ("/" not in n or "/" not in name)]


def _folder_size(path: Path) -> int:
    total = 0
    for item in path.rglob("*"):
        try:
            if item.is_file():
                total += item.stat().st_size
        except OSError:
            pass
    return total


def import_model(src_dir: str | os.PathLike[str], name: str | None = None) -> dict[str, Any]:
    """Copy a model folder into the store; UsageError says what the folder lacks.

    A transformers folder must hold a model transformers can load for
    sequence classification: config.json, a tokenizer and PyTorch weights.  ``name``
    defaults to the folder's name; an entry of that name is replaced.
    Returns the new entry as ``available_models`` lists it, plus
    ``replaced``.  A folder described by a ``model.json`` (a TrainLab image
    model, a plugin's own format) is copied as it is; its safetensors are
    verified and its task checks the rest when it loads it.
    """
    src = Path(src_dir).expanduser()
    if not src.exists():
        raise UsageError(f"{src}: no such folder")
    src = src.resolve()
    if not src.is_dir():
        raise UsageError(f"{src}: not a folder; `trainlab models import` takes the folder that holds config.json")
    fmt = model_format(src)
    if fmt in ("", TRANSFORMERS):
        check = check_text_model_folder(src)
        if not check.usable:
            raise UsageError(f"{src} is not a model folder TrainLab can use: missing {check.describe_missing()}")
        check_weights(src)
    else:  # a folder described by its own model.json: its task checks it when it loads
        check = FolderCheck(src)
        for weights in src.glob("*.safetensors"):
            verify_safetensors(weights)
    name = (name or src.name).strip()
    if not _NAME_RE.match(name):
        raise UsageError(f"model name {name!r}: use letters, digits, '.', '_', '-' and at most one '/'")
    root = store_dir()
    root.mkdir(parents=True, exist_ok=True)
    ignore = _import_ignore(src)
    needed = _bytes_to_copy(src, ignore)
    free = shutil.disk_usage(root).free
    if needed > free:
        raise UsageError(f"not enough disk space in {root} to import {src}: {needed / 1e9:.1f} GB needed, {free / 1e9:.1f} GB free")
    target = root / _slug(name)
    tmp = root / f".import-{_slug(name)}-{uuid.uuid4().hex[:8]}"
    try:
        # symlinks=False: a Hugging Face snapshot holds links into its blob store
        shutil.copytree(src, tmp, symlinks=False, ignore=ignore)
        metadata = {
            "name": name,
            "imported_from": str(src),
            "imported_at": time.time(),
            "model_type": check.model_type,
            "architectures": check.architectures,
            "format": fmt or TRANSFORMERS,
        }
        (tmp / METADATA_FILE).write_text(json.dumps(metadata, indent=2) + "\n", encoding="utf-8")
        replaced = target.exists()
        old = root / f".replaced-{_slug(name)}-{uuid.uuid4().hex[:8]}"
        if replaced:
            os.replace(target, old)
        os.replace(tmp, target)
        if replaced:
            shutil.rmtree(old, ignore_errors=True)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise UsageError(f"could not import {src} into {root}: {exc}") from exc
    entry = _describe(name, target, "store", _check_stored(target))
    entry["replaced"] = replaced
    return entry


def _bytes_to_copy(src: Path, ignore) -> int:
    total = 0
    for folder, dirs, files in os.walk(src):
        skipped = ignore(folder, dirs + files)
        dirs[:] = [d for d in dirs if d not in skipped]
        for name in files:
            if name not in skipped:
                try:
                    total += os.stat(os.path.join(folder, name)).st_size
                except OSError:
                    pass
    return total


def _import_ignore(src: Path):
    patterns = shutil.ignore_patterns(*SKIP_ON_IMPORT)
    # with safetensors there, the pickle-based .bin copy is dead weight
    has_safetensors = (src / "model.safetensors").is_file() or (src / "model.safetensors.index.json").is_file()

    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = set(patterns(folder, names))
        if has_safetensors and Path(folder) == src:
            skipped.update(n for n in names if n.startswith("pytorch_model") and (n.endswith(".bin") or n.endswith(".bin.index.json")))
        return skipped

    return ignore


# --------------------------------------------------------------------------
# Listing and resolving


def _check_stored(folder: Path) -> FolderCheck:
    """What a folder lacks: transformers folders are checked file by file; others are their task's to check."""
    return check_folder(folder) if model_format(folder) in ("", TRANSFORMERS) else FolderCheck(folder)


def _describe(name: str, path: Path, source: str, check: FolderCheck) -> dict[str, Any]:
    return {
        "name": name,
        "source": source,
        "format": model_format(path) or TRANSFORMERS,
        "path": str(path),
        "model_type": check.model_type,
        "architectures": check.architectures,
        "usable": check.usable,
        "missing": list(check.missing),
        "size_bytes": _folder_size(path) if path.is_dir() else 0,
    }


def available_models() -> list[dict[str, Any]]:
    """Every model on this machine: store, Hugging Face cache, torch hub checkpoints.

    Each entry: name, source (``store``, ``hf-cache`` or ``torch-hub``),
    format (``model_format``), path, usable, missing (what a transformers
    folder lacks), size_bytes, and model_type/architectures for transformers
    folders or file/arch for checkpoints; ``tasks``: the installed tasks
    that take its format (``task``: the first of them, the one key listings
    had before model formats).
    """
    models = [_describe(name, folder, "store", _check_stored(folder)) for name, folder in _store_entries()]
    for repo_id, folder in _cache_entries():
        snapshot = _snapshot(folder)
        if snapshot is None:
            entry = _describe(repo_id, folder, "hf-cache", FolderCheck(folder, missing=["a downloaded snapshot"]))
        else:
            entry = _describe(repo_id, snapshot, "hf-cache", check_folder(snapshot))
            entry["size_bytes"] = _folder_size(folder / "blobs") if (folder / "blobs").is_dir() else entry["size_bytes"]
        models.append(entry)
    checkpoints = torch_checkpoints_dir()
    if checkpoints.is_dir():
        for file in sorted(checkpoints.iterdir()):
            if file.is_file() and file.suffix in TORCH_CHECKPOINT_SUFFIXES:
                models.append(
                    {
                        "name": file.name,
                        "source": "torch-hub",
                        "format": TORCHVISION_CHECKPOINT,
                        "path": str(file),
                        "file": file.name,
                        # torchvision names files <arch>-<hash prefix>.pth; EfficientNet-PyTorch's
                        # efficientnet-lite0-<hash>.pth spells the preset's name with hyphens
                        "arch": file.stem.rsplit("-", 1)[0].replace("-", "_"),
                        "usable": True,
                        "missing": [],
                        "size_bytes": file.stat().st_size,
                    }
                )
    accepting: dict[str, list[str]] = {}
    for entry in models:
        fmt = entry["format"]
        if fmt not in accepting:
            accepting[fmt] = tasks_accepting(fmt)
        entry["tasks"] = list(accepting[fmt])
        entry["task"] = accepting[fmt][0] if accepting[fmt] else ""
    return models


def staging_help(name: str) -> str:
    folder = _short(name)
    return (
        f"to stage it, on a machine with internet run `hf download {name} --local-dir {folder}`, "
        f"carry the folder {folder}/ here, then run `trainlab models import {folder}` "
        f"(or pass the folder itself: --model /path/to/{folder})"
    )


def resolve(name: str) -> Path:
    """The folder of a named text model, found offline; UsageError when it is not here.

    Store first, then the Hugging Face cache (short and org-qualified ids
    both match).  The error lists what is available and how to stage it.
    """
    name = name.strip()
    for found, source in ((_find_in_store(name), "model store"), (_find_in_cache(name), "Hugging Face cache")):
        if not found:
            continue
        if len(found) > 1:
            ids = ", ".join(n for n, _ in found)
            raise UsageError(f"model {name!r} is ambiguous in the {source}: {ids}; give the full id")
        found_name, folder = found[0]
        path = folder if source == "model store" else _snapshot(folder)
        check = check_folder(path) if path is not None else FolderCheck(folder, missing=["a downloaded snapshot"])
        if not check.usable:
            raise UsageError(
                f"model {found_name!r} in the {source} ({check.path}) is incomplete: missing "
                f"{check.describe_missing()}; {staging_help(found_name)}"
            )
        return check.path
    usable = sorted({m["name"] for m in available_models() if m["format"] == TRANSFORMERS and m["usable"]})
    listing = ", ".join(usable) if usable else "none"
    raise UsageError(
        f"model {name!r} is not available offline (models on this machine: {listing}; "
        f"presets such as tiny-bert need no download); {staging_help(name)}"
    )


# The public name plugins use (``trainlab.resolve_model``); ``resolve`` stays
# for TrainLab's own callers.
resolve_model = resolve
