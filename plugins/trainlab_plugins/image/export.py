"""The model folder: safetensors weights, a JSON description, torch.export and ONNX programs.

One layout for every image task; ``model.json`` says which (``format`` and
``family``), how many outputs the head has and how they read (``output``:
softmax logits, sigmoid logits with each label's threshold, or a value).  A
regression model's programs include the target scaling, so that they give
values in the target's units; its weights are the bare network, as
torchvision builds it.

Every program is checked before it is kept: the folder's weights are loaded
into a fresh model on the CPU, the program is run on the same batch, and the
outputs must agree within ``TOLERANCE``.  An export that fails or disagrees is
left out and its error recorded in ``model.json``; the weights always stay.

The weights file carries its checksum (``trainlab.system.fileio``), verified when
the folder is loaded; ``model.json`` may only name weights inside its folder.
"""

from __future__ import annotations

import errno
import importlib.util
import platform
from pathlib import Path
from typing import Any, Callable, Mapping

import torch

import trainlab
from trainlab import (
    DataError,
    UsageError,
    atomic_write,
    atomic_write_json,
    atomic_write_text,
    read_json,
    save_safetensors,
    verify_safetensors,
)
from trainlab_plugins.image.models import WEIGHT_ENUMS, build_architecture

FORMAT = "trainlab-image-classifier"
# model.json's format per task family; a folder of any of them can start
# the training of any image task (its backbone; the head is made anew).
FORMATS = {"classification": FORMAT, "regression": "trainlab-image-regressor", "multilabel": "trainlab-image-multilabel"}
FORMAT_VERSION = 1
META_FILE = "model.json"
WEIGHTS_FILE = "model.safetensors"
EXPORT_FILE = "model.pt2"
ONNX_FILE = "model.onnx"
TOLERANCE = 1e-4
MAX_BATCH = 4096


def cpu_state_dict(
    model: torch.nn.Module, arch: str, num_classes: int, options: Mapping[str, Any] | None = None
) -> dict[str, torch.Tensor]:
    """fp32, contiguous CPU tensors with exactly the keys of a plain ``arch`` model."""
    state = {k: v.detach().to("cpu").contiguous() for k, v in model.state_dict().items()}
    reference = build_architecture(arch, num_classes, options=options).state_dict()
    for key, tensor in reference.items():
        # FrozenBatchNorm2d (freeze_backbone) has no batch counter; plain BN does.
        if key not in state and key.endswith("num_batches_tracked"):
            state[key] = torch.zeros_like(tensor)
    return {k: (v.float() if v.is_floating_point() else v) for k, v in state.items() if k in reference}


def num_outputs(meta: Mapping[str, Any]) -> int:
    """The head's outputs: ``num_outputs`` (every family), else one per label (folders of before it)."""
    return int(meta["num_outputs"]) if "num_outputs" in meta else len(meta["label_names"])


class ValueInUnits(torch.nn.Module):
    """A regression network whose output is brought back to the target's units: what the programs hold."""

    def __init__(self, network: torch.nn.Module, mean: float, std: float):
        super().__init__()
        self.network = network
        self.register_buffer("mean", torch.tensor(float(mean)))
        self.register_buffer("std", torch.tensor(float(std)))

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.network(pixels).squeeze(-1) * self.std + self.mean


def exported_module(network: torch.nn.Module, output: Mapping[str, Any]) -> torch.nn.Module:
    """What the programs compute: the network, with the target scaling for a value."""
    if output.get("kind") == "value":
        return ValueInUnits(network, output.get("target_mean", 0.0), output.get("target_std", 1.0)).eval()
    return network


def read_model_description(model_dir: str | Path) -> tuple[dict[str, Any], Path]:
    """(model.json's content, the weights file it names) of a model folder.

    The weights must lie inside the folder: a ``model.json`` naming
    ``../../evil.pth``, an absolute path or a symlink that leads out is refused.
    """
    folder = Path(model_dir)
    meta_path = folder / META_FILE
    if not meta_path.is_file():
        raise UsageError(f"{folder} is not a TrainLab image model folder (no {META_FILE})")
    try:
        meta = read_json(meta_path)
    except (OSError, ValueError) as exc:
        raise DataError(f"{meta_path} is unreadable: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") not in FORMATS.values():
        found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise UsageError(f"{meta_path} is not a TrainLab image model description (format {found!r})")
    files = meta.get("files")
    name = files.get("weights", WEIGHTS_FILE) if isinstance(files, dict) else WEIGHTS_FILE
    if not isinstance(name, str) or not name.strip():
        raise DataError(f"{meta_path}: files.weights is not a file name ({name!r})")
    weights = folder / name
    inside = not Path(name).is_absolute() and ".." not in Path(name).parts
    if not inside or not weights.resolve().is_relative_to(folder.resolve()):
        raise DataError(f"{meta_path}: the weights file {name!r} lies outside the model folder; refused")
    return meta, weights


def load_model_folder(model_dir: str | Path, device: Any = "cpu") -> tuple[torch.nn.Module, dict[str, Any]]:
    """(model in eval mode on ``device``, its model.json) from a model folder."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    meta, weights = read_model_description(model_dir)
    meta_path = Path(model_dir) / META_FILE
    try:
        model = build_architecture(
            meta["architecture"], num_outputs(meta), int(meta["preprocessing"]["image_size"]), meta.get("architecture_options")
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DataError(f"{meta_path} lacks or garbles {exc}: architecture, label_names and preprocessing.image_size are needed") from None
    if not weights.is_file():
        raise DataError(f"{meta_path} names the weights file {weights.name}, which is missing")
    verify_safetensors(weights)
    try:
        model.load_state_dict(load_file(str(weights), device="cpu"), strict=True)
    except (OSError, SafetensorError) as exc:
        raise DataError(f"{weights} is unreadable: {exc}") from None
    except RuntimeError as exc:
        raise DataError(f"{weights} does not fit the {meta['architecture']} that {meta_path.name} describes: {' '.join(str(exc).split())[:300]}") from None
    return model.to(device).eval(), meta


def _example(image_size: int, batch: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    return torch.randn(batch, 3, image_size, image_size, generator=generator)


def _max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).abs().max())


def export_torch_program(model: torch.nn.Module, path: Path, image_size: int) -> dict[str, Any]:
    """A torch.export program with a dynamic batch size, checked against ``model``."""
    batch = torch.export.Dim("batch", min=1, max=MAX_BATCH)
    # Batch 2 in the example: torch.export specialises sizes 0 and 1.
    program = torch.export.export(model, (_example(image_size, 2),), dynamic_shapes=({0: batch},))
    atomic_write(path, lambda tmp: _save_program(program, tmp))
    loaded = torch.export.load(str(path)).module()
    check = _example(image_size, 3)
    with torch.no_grad():
        diff = _max_diff(loaded(check), model(check))
    if diff > TOLERANCE:
        path.unlink(missing_ok=True)
        raise RuntimeError(f"torch.export program differs from the model by {diff:.2e} (> {TOLERANCE:g})")
    return {"file": path.name, "verified": True, "max_abs_diff": diff, "dynamic_batch": True}


def _save_program(program: Any, tmp: Path) -> None:
    # Into memory first, then to the file from Python: torch.export.save
    # writing to a file that fails (a full disk) raises, and then the
    # writer's destructor throws c10::Error again, which aborts the process
    # (SIGABRT).  A BytesIO cannot fail that way; the file write raises a
    # plain OSError.  (A file object, not a path: torch.export.save warns
    # about a path not ending in .pt2.)
    import io

    buffer = io.BytesIO()
    torch.export.save(program, buffer)
    with open(tmp, "wb") as handle:
        handle.write(buffer.getbuffer())


def onnx_available() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in ("onnx", "onnxscript"))


def export_onnx(model: torch.nn.Module, path: Path, image_size: int, output_name: str = "logits") -> dict[str, Any]:
    """ONNX through torch.onnx's dynamo exporter; checked with onnxruntime when installed."""
    batch = torch.export.Dim("batch", min=1, max=MAX_BATCH)
    program = torch.onnx.export(
        model, (_example(image_size, 2),), dynamo=True, dynamic_shapes=({0: batch},), input_names=["pixels"],
        output_names=[output_name], verbose=False,
    )  # fmt: skip
    atomic_write(path, lambda tmp: program.save(str(tmp)))
    if importlib.util.find_spec("onnxruntime") is None:
        return {"file": path.name, "verified": False, "note": "onnxruntime is not installed: not run"}
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    check = _example(image_size, 3)
    (output,) = session.run(None, {session.get_inputs()[0].name: check.numpy()})
    with torch.no_grad():
        diff = _max_diff(torch.from_numpy(output), model(check))
    if diff > TOLERANCE:
        path.unlink(missing_ok=True)
        raise RuntimeError(f"ONNX model differs from the model by {diff:.2e} (> {TOLERANCE:g})")
    return {"file": path.name, "verified": True, "max_abs_diff": diff, "dynamic_batch": True}


def save_model_folder(
    model: torch.nn.Module,
    out_dir: Path,
    *,
    arch: str,
    label_names: list[str],
    preprocessing: Mapping[str, Any],
    log: Callable[[str], None] = print,
    onnx: bool | None = None,
    task: str = "image-classification",
    family: str = "classification",
    outputs: int | None = None,
    output: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write weights, exports and model.json into ``out_dir``; returns model.json's content.

    ``outputs``: the head's size (default one per label); ``output``: how
    the outputs read (``ImageTask.output_description``), kept in model.json;
    ``options``: a small CNN's widths and convolutions (``model=auto``), kept
    as ``architecture_options`` (a folder without them is the fixed small-cnn).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    num_classes = len(label_names) if outputs is None else int(outputs)
    output = dict(output or {"kind": "logits", "activation": "softmax"})
    options = dict(options) if options else None
    state = cpu_state_dict(model, arch, num_classes, options)
    save_safetensors(out_dir / WEIGHTS_FILE, state, {"format": "pt"})

    # Every export runs on a model rebuilt from the file just written, so what
    # is verified is what a user will load.
    image_size = int(preprocessing["image_size"])
    reference = _rebuilt(arch, num_classes, image_size, out_dir / WEIGHTS_FILE, options)
    exports: dict[str, Any] = {}
    with torch.no_grad():
        same = all(torch.equal(reference.state_dict()[k], v) for k, v in state.items())
    if not same:
        raise RuntimeError(f"{out_dir / WEIGHTS_FILE} does not reload to the trained weights")
    _check_reload(model, reference, image_size)
    program = exported_module(reference, output)
    try:
        exports["torch_export"] = export_torch_program(program, out_dir / EXPORT_FILE, image_size)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:  # a full disk fails the run, naming the folder; not an export that "failed"
            raise
        exports["torch_export"] = {"error": f"{type(exc).__name__}: {exc}"}
        log(f"warning: torch.export of {arch} failed: {exc}")
    except Exception as exc:  # noqa: BLE001 - the weights are still usable; say what failed
        exports["torch_export"] = {"error": f"{type(exc).__name__}: {exc}"}
        log(f"warning: torch.export of {arch} failed: {exc}")
    if onnx is None:
        onnx = onnx_available()
    if onnx:
        try:
            exports["onnx"] = export_onnx(program, out_dir / ONNX_FILE, image_size, "value" if output.get("kind") == "value" else "logits")
        except Exception as exc:  # noqa: BLE001
            exports["onnx"] = {"error": f"{type(exc).__name__}: {exc}"}
            log(f"warning: ONNX export of {arch} failed: {exc}")
    else:
        exports["onnx"] = {"skipped": "the optional packages onnx and onnxscript are not installed (pip install 'trainlab[onnx]')"}

    meta = {
        "format": FORMATS.get(family, FORMAT),
        "format_version": FORMAT_VERSION,
        "task": task,
        "family": family,
        "architecture": arch,
        **({"architecture_options": options} if options else {}),
        "num_classes": num_classes,
        "num_outputs": num_classes,
        "label_names": list(label_names),
        "output": output,
        "preprocessing": dict(preprocessing),
        "input": {
            "layout": "NCHW",
            "dtype": "float32",
            "channels": "RGB",
            "value": "(pixel / 255 - mean) / std, after resize and centre crop",
        },
        "files": {
            "weights": WEIGHTS_FILE,
            "torch_export": EXPORT_FILE if "file" in exports["torch_export"] else None,
            "onnx": ONNX_FILE if "file" in exports.get("onnx", {}) else None,
        },
        "exports": exports,
        "torchvision": (
            {"constructor": f"torchvision.models.{arch}", "kwargs": {"num_classes": num_classes}}
            if arch in WEIGHT_ENUMS
            else None
        ),
        "versions": {"trainlab": trainlab.__version__, "torch": torch.__version__, "python": platform.python_version()},
    }
    atomic_write_text(out_dir / "README.md", _readme(meta))
    atomic_write_json(out_dir / META_FILE, meta)
    return meta


def _check_reload(model: torch.nn.Module, reference: torch.nn.Module, image_size: int) -> None:
    """The rebuilt model must compute what the trained one does (same weights, same forward)."""
    device = next(model.parameters()).device
    check = _example(image_size, 3)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            trained = model(check.to(device)).float().cpu()
            rebuilt = reference(check)
    finally:
        model.train(was_training)
    diff = _max_diff(trained, rebuilt)
    # On a GPU, TF32 and other kernels differ from the CPU's in the last bits.
    limit = TOLERANCE if device.type == "cpu" else 1e-2 * max(1.0, float(rebuilt.abs().max()))
    if diff > limit:
        raise RuntimeError(f"the model rebuilt from {WEIGHTS_FILE} differs from the trained one by {diff:.2e}")


def _rebuilt(
    arch: str, num_classes: int, image_size: int, weights: Path, options: Mapping[str, Any] | None = None
) -> torch.nn.Module:
    from safetensors.torch import load_file

    model = build_architecture(arch, num_classes, image_size, options)
    model.load_state_dict(load_file(str(weights), device="cpu"), strict=True)
    return model.eval()


def _readme(meta: Mapping[str, Any]) -> str:
    pre = meta["preprocessing"]
    output = meta.get("output", {})
    family = meta.get("family", "classification")
    names = ", ".join(meta["label_names"])
    if family == "regression":
        title = f"# {meta['architecture']} image regressor (one number per image)"
        reads = [
            f"The program gives the value in the target's units. The weights alone give the standardised value: "
            f"multiply by {output.get('target_std')} and add {output.get('target_mean')}."
        ]
        result = "values"
    elif family == "multilabel":
        title = f"# {meta['architecture']} multi-label image classifier ({meta['num_outputs']} labels)"
        reads = [
            f"Labels, in output order: {names}. A label is predicted when the sigmoid of its output reaches "
            f"its threshold: {output.get('thresholds')} (in model.json)."
        ]
        result = "logits"
    else:
        title = f"# {meta['architecture']} image classifier ({meta['num_classes']} classes)"
        reads = [f"Classes, in output order: {names}."]
        result = "logits"
    lines = [
        title,
        "",
        "Trained with TrainLab. " + " ".join(reads),
        "",
        f"Input: RGB, shorter side resized to {pre['resize']} px (bilinear), centre crop {pre['image_size']} px, "
        f"values (pixel / 255 - mean) / std with mean {pre['mean']} and std {pre['std']}; NCHW float32.",
        "",
        "Without TrainLab, with plain torch:",
        "",
        "```python",
        "import torch",
        f"program = torch.export.load('{EXPORT_FILE}').module()",
        f"{result} = program(torch.randn(1, 3, {pre['image_size']}, {pre['image_size']}))  # your normalised batch",
        "```",
    ]
    if meta["torchvision"]:
        lines += [
            "",
            "Or with torchvision:",
            "",
            "```python",
            "import torchvision",
            "from safetensors.torch import load_file",
            f"model = torchvision.models.{meta['architecture']}(num_classes={meta['num_classes']})",
            f"model.load_state_dict(load_file('{WEIGHTS_FILE}'))",
            "```",
        ]
    return "\n".join(lines) + "\n"
