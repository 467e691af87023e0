"""What a fine-tune trains, decided before a model is built: modes, size classes, base fingerprints.

``finetune`` is an engine parameter whose values each task declares (by
declaring the parameter itself with the choices it supports; a task that
declares nothing supports ``full`` only):

* ``full``: every weight;
* ``head``: only the task's output layer (the image task's ``freeze_backbone``);
* ``lora``: low-rank adapters on the attention/MLP projections plus the head;
* ``qlora``: LoRA on 4-bit base weights (CUDA and bitsandbytes only);
* ``auto``: chosen from the model's size class.

Imports neither torch nor bitsandbytes at module level: ``trainlab tasks``
reads the parameter without them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainlab.api.descriptors import Param
from trainlab.api.errors import UsageError

FINETUNE_MODES = ("auto", "full", "head", "lora", "qlora")

FINETUNE_PARAM = Param(
    "finetune",
    "choice",
    "full",
    "What training changes: full (every weight), head (only the output layer), lora (small adapters "
    "plus the head), qlora (LoRA on 4-bit base weights; CUDA and the trainlab[qlora] extra), auto "
    "(by the model's size). Each task lists the values it supports.",
    choices=("full",),
    group="model",
    title="Fine-tuning",
)

# What every fine-tuning family that offers ``lora``/``qlora`` and activation
# checkpointing declares alike; a task adds them to its ``params`` as they are
# (the LoRA target layers differ by family, so each declares ``lora_target_modules``).
GRADIENT_CHECKPOINTING_PARAM = Param(
    "gradient_checkpointing",
    "choice",
    "auto",
    "Recompute activations in the backward pass instead of keeping them (less memory, about a third slower); "
    "auto: on for models of 1.5B parameters and more, or when the weights and optimizer alone fill most of the device.",
    choices=("auto", "on", "off"),
    title="Gradient checkpointing",
    group="model",
    advanced=True,
)

LORA_PARAMS = (
    Param("lora_rank", "int", 0, "LoRA adapter rank (0: by the model's size, 8 or 16).", minimum=0, maximum=1024, title="LoRA rank", group="model", advanced=True),
    Param("lora_alpha", "int", 0, "LoRA scaling alpha (0: twice the rank).", minimum=0, maximum=4096, title="LoRA alpha", group="model", advanced=True),
    Param("lora_dropout", "float", 0.05, "Dropout on the LoRA adapters' input.", minimum=0.0, maximum=0.9, title="LoRA dropout", group="model", advanced=True),
)

QLORA_EXTRA = "pip install 'trainlab[qlora]'"


@dataclass(frozen=True)
class SizeClass:
    """What a model of up to ``max_params`` parameters gets on a 24 GB GPU by default.

    The limits follow from about 16 bytes per parameter for a full fine-tune
    with AdamW (weights, gradients, two fp32 moments) plus activations: up to
    0.6B a full fine-tune fits; up to 3.5B bf16 weights with LoRA do (about 2
    bytes a parameter), with checkpointing from 1.5B on; past that only
    4-bit weights (QLoRA) leave room for activations.
    """

    name: str
    max_params: float
    finetune: str  # on CUDA; on a CPU qlora falls back to lora
    gradient_checkpointing: bool
    micro_batch: int
    lora_rank: int


SIZE_CLASSES = (
    SizeClass("small (up to 0.6B)", 0.6e9, "full", False, 32, 8),
    SizeClass("1.5B", 1.6e9, "lora", True, 16, 16),
    SizeClass("3B", 3.5e9, "lora", True, 8, 16),
    SizeClass("7B", 8.5e9, "qlora", True, 4, 16),
    SizeClass("larger than 8B", float("inf"), "qlora", True, 1, 16),
)


def size_class(n_params: int) -> SizeClass:
    for cls in SIZE_CLASSES:
        if n_params <= cls.max_params:
            return cls
    return SIZE_CLASSES[-1]


def resolve_finetune(requested: str, n_params: int, *, cuda: bool) -> str:
    """The mode a run uses: ``auto`` by size class; QLoRA only where it can run."""
    mode = requested
    if requested == "auto":
        mode = size_class(n_params).finetune
        if mode == "qlora" and not (cuda and bitsandbytes_available()):
            mode = "lora"
    return mode


def bitsandbytes_available() -> bool:
    return importlib.util.find_spec("bitsandbytes") is not None


def check_quantized_training(what: str, device: Any) -> None:
    """UsageError (exit 2) naming what is missing for 4-bit weights or 8-bit AdamW."""
    kind = getattr(device, "type", str(device).split(":")[0])
    if kind != "cuda":
        raise UsageError(f"{what} needs a CUDA GPU (bitsandbytes); this run is on {device}: use --device cuda, or finetune=lora")
    if not bitsandbytes_available():
        raise UsageError(f"{what} needs the bitsandbytes package, which is not installed: {QLORA_EXTRA}")


# -- the base model's fingerprint -----------------------------------------------
# Hashing every byte of a 14 GB base model at each prediction would take a
# minute; the config, the tokenizer files, each weight file's size and
# safetensors header (names, shapes, dtypes, offsets) and 64 KiB samples at
# 16 places through it change whenever the weights are swapped or retrained.
SAMPLES_PER_FILE = 16
SAMPLE_BYTES = 64 << 10
FINGERPRINT_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt")


def model_fingerprint(folder: Path) -> str:
    """A SHA-256 over what identifies a model folder's weights (see above)."""
    folder = Path(folder)
    digest = hashlib.sha256()
    for name in FINGERPRINT_FILES:
        path = folder / name
        if path.is_file():
            digest.update(name.encode() + b"\0" + path.read_bytes())
    weights = sorted(p for p in folder.iterdir() if p.suffix in (".safetensors", ".bin", ".pt", ".pth"))
    for path in weights:
        size = path.stat().st_size
        digest.update(f"{path.name}\0{size}\0".encode())
        with path.open("rb") as handle:
            if path.suffix == ".safetensors":
                header_len = int.from_bytes(handle.read(8), "little")
                header = json.loads(handle.read(header_len) or b"{}")
                header.pop("__metadata__", None)  # TrainLab's checksum lives there
                digest.update(json.dumps(header, sort_keys=True).encode())
            for i in range(SAMPLES_PER_FILE):
                handle.seek(size * i // SAMPLES_PER_FILE)
                digest.update(handle.read(SAMPLE_BYTES))
    return digest.hexdigest()


def check_base_fingerprint(folder: Path, expected: str, *, what: str) -> None:
    """UsageError naming ``folder`` when it no longer holds the model ``what`` was trained on."""
    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise UsageError(f"{what} needs its base model at {folder}, which is gone; put the model back there (or retrain)")
    found = model_fingerprint(folder)
    if found != expected:
        raise UsageError(
            f"base model folder {folder} changed since {what} was trained (fingerprint {found[:12]}, "
            f"expected {expected[:12]}): its adapters would be applied to other weights; restore that folder or retrain"
        )
