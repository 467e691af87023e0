"""What every image task shares at run time, whatever it learns from the images.

``ImageTask`` is mixed in before a family base class (``ClassificationTask``,
``RegressionTask``, ``MultiLabelTask``): it reads the data (class folders or
tables), decodes and transforms images, picks the backbone and its weights,
moves batches, and exports the model folder; the family supplies the loss,
the evaluation and the fitted state.  A family's image task adds its label
reader (``trainlab_plugins.image.labels``), its target type, its number of
outputs and how its outputs read (``output_description``).
"""

from __future__ import annotations

import os
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import torch

from trainlab import DataError, DataSummary, RunContext, TaskSpec, UsageError, model_store_dir
from trainlab_plugins.image import MODELS
from trainlab_plugins.image.data import read_image_data
from trainlab_plugins.image.dataset import DecodedImages, ImageBatchCollator, ImageFolderDataset
from trainlab_plugins.image.export import META_FILE, load_model_folder, read_model_description, save_model_folder
from trainlab_plugins.image.folder import IMAGE_EXTENSIONS, Splits
from trainlab_plugins.image.models import auto_cnn_options, build_model, describe_cnn
from trainlab_plugins.image.predictor import make_predictor
from trainlab_plugins.image.transforms import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    cached_bytes,
    cached_parts,
    decode_side,
    eval_resize,
    eval_transform,
    resolve_augmentation,
    train_transform,
)

PROBE_IMAGES = 8  # images decoded in prepare() to measure the decoding cost
SKIPPED_LISTED = 100
# memory_cache=auto: decoded images may take this share of the RAM available when the run is prepared.
MEMORY_CACHE_SHARE = 0.25
MB = 1 << 20


def memory_cache_budget(value: Any) -> int | None:
    """Bytes the decoded images may take: ``auto`` (a share of the available RAM), ``off``, or a number of MB."""
    text = str(value).strip().lower()
    if text == "auto":
        import psutil

        return int(psutil.virtual_memory().available * MEMORY_CACHE_SHARE)
    if text in ("off", "false", "0", "none", "no"):
        return None
    try:
        megabytes = float(text)
    except ValueError:
        raise UsageError(f"memory_cache: expected auto, off or a budget in MB, got {value!r}") from None
    if not 0 < megabytes < 1 << 40:
        raise UsageError(f"memory_cache: {value!r} MB is not a budget")
    return int(megabytes * MB)


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def auto_workers(cores: int, decode_ms: float, cuda: bool) -> int:
    """Loader worker processes for ``auto``.

    Workers pay for themselves only when decoding is a real share of a step
    and there are cores to spare: on a GPU the CPU does nothing else, so
    decoding that costs more than ~0.3 ms an image gets up to 8 workers; on a
    CPU the model needs the cores too, so workers start at 4 cores and 1 ms an
    image.  Tiny images (a few KB) cost less to decode than to ship between
    processes.
    """
    if cores <= 1:
        return 0
    if cuda:
        return min(cores - 1, 8) if decode_ms >= 0.3 else 0
    if cores < 4 or decode_ms < 1.0:
        return 0
    return min(cores // 4, 4)



def describe_counts(summary: DataSummary, totals: Mapping[str, int], names: Mapping[str, str] | None = None) -> list[str]:
    """Images per split (``totals``) and per class or label where the task has
    them, a line per split, as the text tasks say their rows."""
    names = names or {}
    lines = []
    for split, per_label in summary.counts.items():
        if set(per_label) == {"images"}:  # a number per image: no classes to count
            lines.append(f"{names.get(split, split)}: {per_label['images']} images")
            continue
        shown = ", ".join(f"{label} {n}" for label, n in list(per_label.items())[:12])
        more = f", ... ({len(per_label)} labels)" if len(per_label) > 12 else ""
        lines.append(f"{names.get(split, split)}: {totals.get(split, 0)} images ({shown}{more})")
    if not names and summary.extra.get("splits_from", "folders") != "folders":
        lines.append(f"validation split: {summary.extra['splits_from']}")
    return lines

class ImageTask:
    """The image side of a task; mixed in before the family's base class."""

    target_dtype = "int64"  # of the targets in a batch; float32 for numbers and label sets

    def __init__(self, spec: TaskSpec, params: Mapping[str, Any]):
        super().__init__(spec, params)
        self._arch: tuple[str, str] | None = None  # resolved on first use: predict needs none of it
        self._arch_options: dict[str, Any] | None = None  # a small CNN's widths and convs (auto, or a model folder's)
        self.image_size = int(self.params.get("image_size", 224))
        self.crop_fraction = float(self.params.get("crop_fraction", 1.0))
        self.augmentation = resolve_augmentation(
            str(self.params.get("augmentation", "auto")),
            str(self.params.get("hflip", "auto")),
            int(self.params.get("epochs", 1)),
        )
        self._items: dict[str, list[tuple[str, Any]]] = {}
        self._datasets: dict[str, ImageFolderDataset] = {}
        self._collator = ImageBatchCollator(self.image_size, self.target_dtype)
        self._skipped: dict[str, str] = {}
        self._decode_ms = 0.0
        self._norm: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
        self._prebuilt: torch.nn.Module | None = None
        self._prepared = False
        self._trained_run = False  # resuming or evaluating: the weights come from a checkpoint

    def __getstate__(self) -> dict[str, Any]:
        # Loader workers receive the task through its bound collate method:
        # no device tensors across processes.
        state = dict(self.__dict__)
        state["_norm"] = {}
        state["_prebuilt"] = None
        return state

    # -- what a family's image task supplies ------------------------------------
    def label_reader(self) -> Any:
        """How this family reads a table's label cell (``trainlab_plugins.image.labels``)."""
        raise NotImplementedError

    def num_outputs(self) -> int:
        """Outputs of the model's head."""
        return len(self.label_names)

    def output_description(self) -> dict[str, Any]:
        """How the model's outputs read, for model.json (and the predictor)."""
        raise NotImplementedError

    def fit(self, found: Splits, ctx: RunContext) -> None:
        """Fit what the family learns from the training targets (target scaling); optional."""

    def describe_targets(self, found: Splits, summary: DataSummary) -> None:
        """Add the family's figures and warnings to the data summary; optional."""

    # -- model choice -------------------------------------------------------
    @property
    def arch(self) -> str:
        """The architecture built: ``auto`` builds small-cnn (sized by ``arch_options``)."""
        arch = self._model_choice()[0]
        return "small-cnn" if arch == "auto" else arch

    @property
    def arch_options(self) -> dict[str, Any] | None:
        """The small CNN's widths and convolutions per stage: chosen from the data for ``auto``,
        read from the model folder being fine-tuned; None for the fixed presets."""
        if self._arch_options is None and self._model_choice()[0] == "auto":
            self._arch_options = auto_cnn_options(self.image_size, len(self._items.get("train", [])))
        return self._arch_options

    def _model_choice(self) -> tuple[str, str]:
        if self._arch is None:
            self._arch = self._resolve_model(str(self.params.get("model", "small-cnn")))
        return self._arch

    def _resolve_model(self, value: str) -> tuple[str, str]:
        """(architecture, weights file of a model folder to fine-tune or "")."""
        if value in MODELS:
            return value, ""
        for folder in (Path(value).expanduser(), model_store_dir() / value):
            if (folder / META_FILE).is_file():
                meta, weights = read_model_description(folder)
                arch = meta.get("architecture")
                if arch not in MODELS:
                    raise UsageError(f"model folder {folder} has architecture {arch!r}, which this TrainLab does not know")
                options = meta.get("architecture_options")
                self._arch_options = dict(options) if isinstance(options, dict) else None
                return arch, str(weights)
        raise UsageError(
            f"model {value!r} is neither a preset ({', '.join(MODELS)}) nor a TrainLab image model folder "
            f"(a folder with {META_FILE}, for example a run's model/ folder)"
        )

    # -- data ---------------------------------------------------------------
    def prepare(self, data_path: str, ctx: RunContext, label_names: Sequence[str] | None = None) -> DataSummary:
        found = read_image_data(
            data_path,
            self.label_reader(),
            image_column=str(self.params.get("image_column", "image")),
            label_column=str(self.params.get("label_column", "label")),
            val_fraction=float(self.params.get("val_fraction", 0.2)),
            seed=int(ctx.seed),
            label_names=label_names,
            whole=ctx.whole_data,  # other data than the run's own: evaluate all of it
            should_stop=ctx.should_stop,
            task_id=self.spec.id,
        )
        self.label_names = list(found.label_names)
        self._items = found.items
        self._datasets = {}
        if self._model_choice()[0] == "auto":
            self._arch_options = None  # sized again to this data
        arch, folder_weights = self._model_choice()
        if arch == "auto" and not ctx.whole_data:  # other data evaluated: the model folder's network
            ctx.log(
                f"model auto: small-cnn with {describe_cnn(self.arch_options)}, for {len(found.items.get('train', []))} "
                f"training images at {self.image_size} px"
            )
        elif not ctx.whole_data:  # a preset or a model folder: said as plainly, so every run names its network
            network = f"small-cnn with {describe_cnn(self.arch_options or {})}" if arch == "small-cnn" else arch
            ctx.log(f"model: {network}" + (f", fine-tuned from {self.params.get('model')}" if folder_weights else ""))
        self._collator = ImageBatchCollator(self.image_size, self.target_dtype, self._target_width())
        self._prepared = True
        self._trained_run = label_names is not None
        self.fit(found, ctx)
        if not self._trained_run:
            # Built now so that a missing or unfitting weights file is bad
            # input (exit 2) before the run starts, not a failed run.
            self._prebuilt = self._build(ctx)
        reader = self.label_reader()
        counts = {split: reader.counts([t for _, t in items], self.label_names) for split, items in found.items.items()}
        records = [r for recs in found.records.values() for r in recs]
        short_sides = [min(r.width, r.height) for r in records]
        median_side = int(statistics.median(short_sides)) if short_sides else 0
        # auto depends on the images: resolved here (the same again on resume: same data, same parameters)
        self.augmentation = resolve_augmentation(
            str(self.params.get("augmentation", "auto")),
            str(self.params.get("hflip", "auto")),
            int(self.params.get("epochs", 1)),
            median_side,
        )
        self._decode_ms = self._probe_decode_ms()
        workers = self.num_workers(ctx)  # validates a hand-set value before the run
        cache = self._plan_memory_cache(found, workers, ctx)
        if cache["splits"]:
            ctx.log(
                f"decoded {' and '.join(cache['splits'])} images kept in memory after their first use "
                f"(about {cache['bytes'] / MB:.1f} MB of a {cache['budget_bytes'] / MB:.0f} MB budget)"
            )
        elif cache.get("reason") != "memory_cache off":
            ctx.log(f"decoded images not kept in memory: {cache['reason']}")
        if found.explicit:
            splits_from = found.form
        else:
            splits_from = f"val_fraction {self.params.get('val_fraction', 0.2):g}"
        summary = DataSummary(
            label_names=self.label_names,
            counts=counts,
            skipped=dict(found.skipped),
            skipped_examples=list(found.skipped_examples),
            warnings=list(found.warnings),
            extra={
                "splits_from": splits_from,
                "median_short_side": median_side,
                "modes": dict(Counter(r.mode for r in records).most_common()),
                "formats": dict(Counter(r.format for r in records).most_common()),
                "augmentation": self.augmentation.describe(),
                "decode_ms_per_image": round(self._decode_ms, 3),
                "num_workers": workers,
                "memory_cache": cache,
            },
        )
        if self._model_choice()[0] == "auto" and not ctx.whole_data:
            summary.extra["model"] = {"architecture": self.arch, "architecture_options": self.arch_options, "chosen_by": "auto"}
        if label_names is None and self.label_names:
            imbalance = summary.imbalance_warning("train")
            if imbalance:
                summary.warnings.append(imbalance)
        self.describe_targets(found, summary)
        if found.skipped:
            summary.warnings.append(skipped_warning(found, data_path))
        if median_side and median_side * 2 <= self.image_size:
            summary.warnings.append(
                f"most images are small (median shorter side {median_side} px) for image_size {self.image_size}: "
                f"upscaling adds time, not detail; consider --set image_size={max(16, median_side)}"
            )
        # other data evaluated whole is read into the "val" split: name it as the data it is
        names = {"val": Path(data_path).name} if ctx.whole_data else {}
        for line in describe_counts(summary, {split: len(items) for split, items in found.items.items()}, names):
            ctx.log(line)
        return summary

    def _target_width(self) -> int:
        return 0

    def _probe_decode_ms(self) -> float:
        """Milliseconds to decode and transform one training image (a few sampled)."""
        split = next((s for s in ("train", "val", "test") if self._items.get(s)), None)
        if split is None:
            return 0.0
        dataset = self.dataset(split)
        step = max(1, len(dataset) // PROBE_IMAGES)
        picks = list(range(0, len(dataset), step))[:PROBE_IMAGES]
        dataset.decode_uncached(picks[0])  # first call imports and warms up the decoders
        start = time.perf_counter()
        for index in picks:
            dataset.decode_uncached(index)
        return (time.perf_counter() - start) * 1000.0 / len(picks)

    def _plan_memory_cache(self, found: Splits, workers: int, ctx: RunContext) -> dict[str, Any]:
        """Which splits keep their decoded images in memory (``memory_cache``), as the data summary says it.

        Only where the loader runs in the training process (a worker process
        would fill a copy of its own) and an image is read more than once (two
        epochs or more).  Splits are taken in the order they are
        read most (train, val, test) while their estimated size fits the budget.
        """
        budget = memory_cache_budget(self.params.get("memory_cache", "auto"))
        if budget is None:
            return {"splits": [], "reason": "memory_cache off"}
        if int(self.params.get("epochs", 1)) < 2 or ctx.purpose not in ("train", "resume"):
            # and the memory stays that of the file list (bench/scale.py)
            return {"splits": [], "reason": "each image is read once (one epoch, or an evaluation)"}
        needs = {split: self._cached_need(found, split) for split in self.splits()}
        # Asked for on every rank alike (collective), before anything a machine decides
        # for itself (its loader workers follow its cores): a rank with workers says no.
        shared = self._shared_caches(needs, budget if not workers else -1, ctx)
        if workers:
            return {"splits": [], "reason": f"{workers} loader worker processes decode (each would keep a copy of its own)"}
        # The budget is the machine's: a rank's own copy may take its share of it.
        own = budget // max(1, ctx.processes_on_this_machine)
        plan: dict[str, Any] = {"splits": [], "bytes": 0, "budget_bytes": own}
        if shared:
            plan.update(shared_splits=sorted(shared), machine_budget_bytes=budget)
        machine_used = 0
        for split, need in needs.items():
            if split in shared:  # one copy for the machine's ranks, against the machine's budget
                machine_used += need
            elif plan["bytes"] + need > own:
                plan.setdefault("not_kept", []).append(split)
                plan["reason"] = f"{split} would take {(plan['bytes'] + need) / MB:.1f} MB in all, more than the budget of {own / MB:.1f} MB"
                break
            augmentation = self.augmentation if split == "train" else None
            fixed, random = cached_parts(augmentation, self.image_size, self.crop_fraction)
            self.dataset(split).keep_decoded(own - plan["bytes"], fixed, random, shared.get(split), self.image_size)
            plan["splits"].append(split)
            if split not in shared:
                plan["bytes"] += need
        if shared:
            plan["bytes"] += machine_used  # what this run keeps, whoever holds it
        return plan

    def _cached_need(self, found: Splits, split: str) -> int:
        augmentation = self.augmentation if split == "train" else None
        records = found.records.get(split) or []
        sizes = [(r.width, r.height) for r in records] if len(records) == len(self._items[split]) else []
        if not sizes:  # no headers to size them by: as large as the image size
            sizes = [(self.image_size, self.image_size)] * len(self._items[split])
        return cached_bytes(augmentation, self.image_size, sizes, self.crop_fraction)

    def _shared_caches(self, needs: dict[str, int], budget: int, ctx: RunContext) -> dict[str, Any]:
        """The splits whose decoded images the ranks of this machine keep in one shared array.

        Splits whose kept images all have one size (no random crop) are asked
        for, every one in order on every rank (the call is collective), each
        said to fit while the splits so far fit the machine's budget.
        """
        import torch

        shared, total = {}, 0
        for split, need in needs.items():
            augmentation = self.augmentation if split == "train" else None
            if augmentation is not None and augmentation.name != "none":
                continue  # kept reduced to each image's own shape: a copy per rank
            total += need
            count = len(self._items[split])
            array = ctx.shared_array(f"decoded images: {split}", (DecodedImages.shared_bytes(count, self.image_size),),
                                     torch.uint8, fits=total <= budget)  # fmt: skip
            if array is not None:
                shared[split] = array
        return shared

    def memory_cache_state(self) -> dict[str, dict[str, int]]:
        """Per cached split: images stored so far and their bytes."""
        return {
            split: {"images": d.cache.stored, "bytes": d.cache.used, "full": d.cache.full}
            for split, d in self._datasets.items()
            if d.cache is not None
        }

    def splits(self) -> list[str]:
        return [s for s in ("train", "val", "test") if self._items.get(s)]

    def dataset(self, split: str) -> ImageFolderDataset:
        if split not in self._datasets:
            if split not in self._items:
                raise KeyError(f"no {split} split in this data")
            if split == "train":
                transform = train_transform(self.augmentation, self.image_size, self.crop_fraction)
                side = decode_side(self.augmentation, self.image_size, self.crop_fraction)
            else:
                transform = eval_transform(self.image_size, self.crop_fraction)
                side = decode_side(None, self.image_size, self.crop_fraction)
            self._datasets[split] = ImageFolderDataset(self._items[split], transform, side)
        return self._datasets[split]

    def collate(self, items: list[Any]) -> dict[str, Any]:
        return self._collator(items)

    def num_workers(self, ctx: RunContext) -> int:
        value = str(self.params.get("num_workers", "auto")).strip()
        if value == "auto":
            return auto_workers(usable_cores(), self._decode_ms, ctx.is_cuda)
        try:
            workers = int(value)
        except ValueError:
            raise UsageError(f"num_workers: expected auto or a number, got {value!r}") from None
        if not 0 <= workers <= 256:
            raise UsageError(f"num_workers: {workers} is outside 0..256")
        return workers

    def loader_options(self, split: str, ctx: RunContext) -> dict[str, Any]:
        workers = self.num_workers(ctx)
        options: dict[str, Any] = {"num_workers": workers, "pin_memory": bool(ctx.is_cuda)}
        if workers:
            options["persistent_workers"] = True
            if ctx.multiprocessing_context:
                options["multiprocessing_context"] = ctx.multiprocessing_context
        return options

    def label_counts(self) -> list[int]:
        if not self.label_names:
            return []
        counts = self.label_reader().counts([t for _, t in self._items.get("train", [])], self.label_names)
        return [counts.get(name, 0) for name in self.label_names]

    def describe_examples(self, split: str, keys: Sequence[Any]) -> list[str]:
        items = self._items.get(split, [])
        return [items[int(k)][0] if 0 <= int(k) < len(items) else str(k) for k in keys]

    def skipped_during_training(self) -> dict[str, Any]:
        if not self._skipped:
            return {}
        return {
            "count": len(self._skipped),
            "reasons": dict(Counter(self._skipped.values()).most_common()),
            "files": [{"path": p, "reason": r} for p, r in list(self._skipped.items())[:SKIPPED_LISTED]],
        }

    # -- model --------------------------------------------------------------
    def build_model(self, ctx: RunContext) -> torch.nn.Module:
        if self._prebuilt is not None:
            model, self._prebuilt = self._prebuilt, None
            return model
        return self._build(ctx)

    def _build(self, ctx: RunContext) -> torch.nn.Module:
        if not self._prepared and not self.label_names:
            raise UsageError("build_model() before prepare(): the model's outputs are not known yet")
        arch, base_weights = self._model_choice()
        initial = not self._trained_run
        pretrained = initial and bool(self.params.get("pretrained", False)) and not base_weights
        weights = str(self.params.get("weights") or base_weights or "") if initial else ""
        freeze = bool(self.params.get("freeze_backbone", False)) or self.params.get("finetune") == "head"
        if freeze and initial and not (pretrained or weights):
            ctx.log(f"warning: freeze_backbone without pretrained weights trains only the head of a random {arch}")
        return build_model(
            self.arch,
            self.num_outputs(),
            image_size=self.image_size,
            pretrained=pretrained,
            weights=weights,
            freeze=freeze,
            log=ctx.log,
            options=self.arch_options,
        )

    def channels_last(self, ctx: RunContext) -> bool:
        """``channels_last``: auto on CUDA only. On the CPU it measured faster (oneDNN's
        convolutions: docs/tasks/image-classification.md), but a stopped run resumed
        there no longer ended with the uninterrupted run's weights bit for bit
        (tests/plugins/image/test_image_families.py, the plugin kit's resume check): ``true`` asks for it."""
        value = str(self.params.get("channels_last", "auto")).lower()
        if value == "auto":
            return getattr(ctx.device, "type", str(ctx.device)) == "cuda"
        return value == "true"

    def prepare_model(self, model: torch.nn.Module, ctx: RunContext) -> torch.nn.Module:
        model = model.to(ctx.device)
        if self.channels_last(ctx):
            model = model.to(memory_format=torch.channels_last)
        return model

    def to_device(self, batch: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
        skipped = batch.get("skipped")
        if skipped is not None and skipped.entries:
            self._note_skipped(skipped.entries, empty=batch["pixels"].shape[0] == 0)
        device = ctx.device
        pixels = batch["pixels"].to(device, non_blocking=True)
        if self.channels_last(ctx):  # on the bytes: a quarter of the copy; the float maths keeps the layout
            pixels = pixels.contiguous(memory_format=torch.channels_last)
        mean, std = self._normalisation(device)
        pixels = (pixels.float() - mean) / std
        return {"pixels": pixels, "labels": batch["labels"].to(device, non_blocking=True), "keys": batch["keys"]}

    def _normalisation(self, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
        key = str(device)
        if key not in self._norm:
            self._norm[key] = (
                torch.tensor([255.0 * m for m in IMAGENET_MEAN], device=device).view(1, 3, 1, 1),
                torch.tensor([255.0 * s for s in IMAGENET_STD], device=device).view(1, 3, 1, 1),
            )
        return self._norm[key]

    def _note_skipped(self, skipped: Iterable[tuple[str, str]], empty: bool) -> None:
        for path, reason in skipped:
            self._skipped[path] = reason
        if empty and len(self._skipped) >= len(self._items.get("train", [])):
            train_paths = {p for p, _ in self._items.get("train", [])}
            if train_paths and train_paths <= self._skipped.keys():
                raise DataError(
                    f"none of the {len(train_paths)} training images could be decoded "
                    f"(first: {next(iter(self._skipped.items()))[0]})"
                )

    def forward(self, model: torch.nn.Module, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        return model(batch["pixels"]), batch["labels"]

    def batch_keys(self, batch: dict[str, Any]) -> list[int]:
        return batch["keys"].tolist()

    def train_step(self, model, batch, ctx):
        if batch["pixels"].shape[0] == 0:
            # Every file of this batch was unreadable: a zero loss keeps the step harmless.
            zero = sum((p.sum() * 0.0 for p in model.parameters() if p.requires_grad), torch.zeros((), device=ctx.device))
            return zero, 0
        return super().train_step(model, batch, ctx)

    # -- outputs ------------------------------------------------------------
    def preprocessing(self) -> dict[str, Any]:
        return {
            "image_size": self.image_size,
            "crop_fraction": self.crop_fraction,
            "resize": eval_resize(self.image_size, self.crop_fraction),
            "interpolation": "bilinear",
            "mean": list(IMAGENET_MEAN),
            "std": list(IMAGENET_STD),
        }

    def save_model(self, model: torch.nn.Module, out_dir: Path, ctx: RunContext) -> None:
        save_model_folder(
            model,
            Path(out_dir),
            arch=self.arch,
            label_names=self.label_names,
            preprocessing=self.preprocessing(),
            log=ctx.log,
            task=self.spec.id,
            family=self.spec.family,
            outputs=self.num_outputs(),
            output=self.output_description(),
            options=self.arch_options,
        )

    def load_trained_model(self, model_dir: Path, ctx: RunContext) -> torch.nn.Module:
        model, meta = load_model_folder(model_dir, "cpu")
        self.label_names = list(meta["label_names"])
        return model

    def load_predictor(self, model_dir: Path, device: Any):
        return make_predictor(model_dir, device)

    def expand_inputs(self, inputs: Iterable[str]) -> list[str]:
        files: list[str] = []
        for item in inputs:
            path = Path(item).expanduser()
            if path.is_dir():
                found = sorted(
                    str(p) for p in path.rglob("*")
                    if p.suffix.lower() in IMAGE_EXTENSIONS and p.is_file()
                    and not any(part.startswith(".") for part in p.relative_to(path).parts)
                )  # fmt: skip
                if not found:
                    raise DataError(f"no image files in folder {path}")
                files += found
            elif path.is_file():
                files.append(str(path))
            else:
                raise DataError(f"input {item} does not exist")
        return files


SKIPPED_NAMED = 3  # files the data check names in its warning; run.json keeps more


def skipped_warning(found: Any, data_path: str) -> str:
    """``skipped 1 not a readable image, 1 truncated image: cats/a.jpg (not a readable image), dogs/b.jpg (truncated image)``:
    the counts by reason, then the first few files by name and how many more."""
    total = sum(found.skipped.values())
    counts = ", ".join(f"{n} {reason}" for reason, n in found.skipped.most_common())
    root = Path(data_path)

    def shown(place: str) -> str:
        try:
            return str(Path(place).relative_to(root))
        except ValueError:
            return place  # a table's row, or a file outside the folder: as the scan named it

    named = [f"{shown(place)} ({reason})" for place, reason in found.skipped_examples[:SKIPPED_NAMED]]
    more = f", and {total - len(named)} more (listed in run.json)" if total > len(named) else ""
    return f"skipped {counts}: {', '.join(named)}{more}" if named else f"skipped {counts}"
