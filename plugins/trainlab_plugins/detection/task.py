"""The runtime side of object-detection (imported when a run starts).

Data: ``formats`` reads COCO, YOLO or VOC (cached by the data's
fingerprint), ``dataset`` decodes, resizes and augments.  Model:
``networks`` builds torchvision's detectors (or a small FCOS), never
downloading; weights already on the machine come from ``weights``.  The
detector computes its own losses in training mode (a dict of parts: summed
for the step, their epoch means logged and reported) and its detections in
evaluation mode, which ``trainlab.DetectionMetrics`` scores as COCO mAP.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from trainlab import (
    DataError,
    DataSummary,
    DetectionMetrics,
    EvalBatch,
    ExampleList,
    RunContext,
    Task,
    TaskSpec,
    UsageError,
    atomic_write_text,
    cache_dir,
    save_safetensors,
)

from trainlab_plugins.detection import formats
from trainlab_plugins.detection.dataset import (
    DetectionDataset,
    collate,
    resolve_augmentation,
    train_transform,
)
from trainlab_plugins.detection.export import write_program
from trainlab_plugins.detection.networks import (
    ARCHITECTURES,
    GRAPH_FILE,
    ONNX_EXTRA,
    ONNX_FILE,
    build_detector,
    detect_tiled,
    export_graph,
    export_onnx,
    graph_kind,
    load_weights,
)
from trainlab_plugins.detection.predictor import make_predictor

MODEL_FILE = "model.safetensors"
META_FILE = "model.json"
MB = 1 << 20
SKIPPED_LISTED = 100
# model=auto: on a CPU, TrainLab's small FCOS (trains from scratch in minutes on small sets);
# on a GPU, Faster R-CNN with the ResNet-50 FPN v2 backbone.
AUTO_CPU, AUTO_GPU = "small-fcos", "fasterrcnn_resnet50_fpn_v2"


def resolve_architecture(value: str, cuda: bool) -> str:
    if value == "auto":
        return AUTO_GPU if cuda else AUTO_CPU
    if value not in ARCHITECTURES:
        raise UsageError(f"model {value!r}: expected auto or one of {', '.join(ARCHITECTURES)}")
    return value


def read_weights_file(path: Path) -> dict[str, torch.Tensor]:
    """A weights file already on the machine: .safetensors, or .pt/.pth read with weights_only=True."""
    if not path.is_file():
        raise UsageError(f"weights {path}: no such file")
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path))
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any failure to read is bad input, named
        raise UsageError(f"weights {path}: not readable as weights ({exc})") from None
    if isinstance(state, dict) and isinstance(state.get("model"), dict):
        state = state["model"]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise UsageError(f"weights {path}: not a dict of tensors")
    return state


# image_size=auto: the training images' median longer side, at most this on each device.
# Small images are never blown up: a 128 px image resized to 512 costs 16 times the pixels
# and shows the detector nothing more.
AUTO_SIZE_CAP = {"cpu": 320, "gpu": 512}
MIN_IMAGE_SIZE, MAX_IMAGE_SIZE = 32, 4096


def resolve_image_size(value: str, items: Sequence[formats.ImageBoxes], cuda: bool) -> tuple[int, str]:
    """(the longer side images are resized to; why), for ``image_size`` = auto or a number of pixels."""
    text = str(value).strip().lower()
    if text != "auto":
        try:
            size = int(text)
        except ValueError:
            size = 0
        if not MIN_IMAGE_SIZE <= size <= MAX_IMAGE_SIZE:
            raise UsageError(f"image_size={value}: auto, or the longer side in pixels ({MIN_IMAGE_SIZE} to {MAX_IMAGE_SIZE})")
        return size, f"image_size {size}"
    cap = AUTO_SIZE_CAP["gpu" if cuda else "cpu"]
    sides = sorted(max(item.width, item.height) for item in items)
    if not sides:
        return cap, f"image_size auto: {cap} (no images to measure)"
    median = sides[len(sides) // 2]
    size = max(MIN_IMAGE_SIZE, min(median, cap))
    where = "a GPU" if cuda else "a CPU"
    why = "the images' own size" if size == median else f"the cap on {where}"
    return size, f"image_size auto: {size} px ({why}; median image {median} px)"


# tile=auto tiles when the median box is under SMALL_BOX of the image's side and the median
# image's longer side is over LARGE_IMAGE times image_size: resized whole, such boxes would
# be a few pixels.
SMALL_BOX, LARGE_IMAGE = 0.05, 1.5


def resolve_tile(value: str, items: Sequence[formats.ImageBoxes], image_size: int) -> tuple[int, str]:
    """(the tile side in pixels, 0 for none; why), for ``tile`` = auto, off or a number of pixels."""
    value = str(value).strip().lower()
    if value in ("off", "0", "none", ""):
        return 0, "off"
    if value != "auto":
        try:
            side = int(value)
        except ValueError:
            side = 0
        if side < 32:
            raise UsageError(f"tile={value}: auto, off, or the tile's side in pixels (32 or more)")
        return side, f"tile={side}"
    sides = sorted(max(item.width, item.height) for item in items)
    relative = sorted(((b[2] - b[0]) * (b[3] - b[1])) ** 0.5 / max(1, item.width, item.height) for item in items for b in item.boxes)
    if not sides or not relative:
        return 0, "auto: no boxes to measure"
    image_side, box = sides[len(sides) // 2], relative[len(relative) // 2]
    why = f"median box {box:.1%} of the image's side, median image {image_side} px"
    if box < SMALL_BOX and image_side > LARGE_IMAGE * image_size:
        return image_size, f"auto: {why}: tiles of {image_size} px"
    return 0, f"auto: {why}: no tiling"


def box_statistics(found: formats.Found) -> dict[str, Any]:
    """What the data check shows beyond the counts: boxes per image, their size, images without boxes."""
    per_image, relative = [], []
    for items in found.splits.values():
        for item in items:
            per_image.append(len(item.boxes))
            area = max(1.0, float(item.width * item.height))
            relative += [((b[2] - b[0]) * (b[3] - b[1]) / area) ** 0.5 for b in item.boxes]
    sizes = Counter("small (<10% of the side)" if r < 0.1 else "medium (10-30%)" if r < 0.3 else "large (>30%)"
                    for r in relative)  # fmt: skip
    return {
        "images_without_boxes": sum(1 for n in per_image if n == 0),
        "boxes_per_image": {
            "mean": round(sum(per_image) / len(per_image), 2) if per_image else 0.0,
            "max": max(per_image, default=0),
        },
        "box_sizes": dict(sizes),
    }


class ObjectDetectionTask(Task):
    """COCO, YOLO or VOC data -> a torchvision detector; see docs/tasks/object-detection.md."""

    def __init__(self, spec: TaskSpec, params: Mapping[str, Any]):
        super().__init__(spec, params)
        self.image_size = 0  # the longer side in pixels, from image_size at the first prepare (or the trained model's)
        self.arch = ""
        self.found: formats.Found | None = None
        self.category_ids: list[int] = []
        self.augmentation = "none"
        self._datasets: dict[str, DetectionDataset] = {}
        self._parts: dict[str, float] = {}
        self._part_steps = 0
        self._log: Any = None
        self._trained_run = False
        self.tile: int | None = None  # the tile side in pixels (0: none), from tile= at the first prepare

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_log"] = None  # loader workers get the task through its collate: no callbacks across processes
        return state

    # -- data ---------------------------------------------------------------
    def prepare(self, data_path: str, ctx: RunContext, label_names: Sequence[str] | None = None) -> DataSummary:
        # torchvision's detectors give no loss in evaluation mode: no epoch has a validation
        # loss, so monitor=loss would never find a best epoch; say so before any training
        if str(self.params.get("monitor", "")) == "loss":
            choices = ", ".join(m for m in self.spec.monitor_choices() if m != "loss")
            raise UsageError(f"monitor=loss: object detection measures no validation loss (its detectors give none "
                             f"in evaluation); monitor one of {choices}")  # fmt: skip
        self._log = ctx.log
        try:
            cache = cache_dir("detection-annotations")
        except OSError:
            cache = None
        found, cached = formats.read_detection_data(data_path, str(self.params.get("format", "auto")), cache=cache,
                                                    should_stop=ctx.should_stop, log=ctx.log)  # fmt: skip
        if cached:
            ctx.log("annotations read from the cache (the data is unchanged since it was last read)")
        if label_names is not None:  # a trained run's classes: the data's must be among them
            unknown = [c for c in found.classes if c not in label_names]
            if unknown:
                raise DataError(f"{data_path}: classes {', '.join(unknown)} are not among the model's ({', '.join(label_names)})")
            remap = [list(label_names).index(c) for c in found.classes]
            for items in found.splits.values():
                for item in items:
                    item.labels = [remap[i] for i in item.labels]
            found.classes = list(label_names)
        if ctx.whole_data:
            found.splits = {"val": [i for items in found.splits.values() for i in items]}
        else:
            formats.make_split(found, float(self.params.get("val_fraction", 0.2)), int(ctx.seed))
        if not found.splits.get("train") and not ctx.whole_data:
            raise DataError(f"{data_path}: no training images")
        self.found = found
        self.label_names = list(found.classes)
        if found.category_ids and not self.category_ids:
            self.category_ids = list(found.category_ids)
        self._trained_run = label_names is not None
        if not self.arch:
            self.arch = resolve_architecture(str(self.params.get("model", "auto")), ctx.is_cuda)
        if self.params.get("model", "auto") == "auto" and not self._trained_run:
            ctx.log(f"model auto: {self.arch} ({ARCHITECTURES[self.arch]}) on {'a GPU' if ctx.is_cuda else 'the CPU'}")
        self.augmentation = resolve_augmentation(str(self.params.get("augmentation", "auto")), int(self.params.get("epochs", 1)))
        self._datasets = {}
        counts = {
            split: {name: sum(1 for item in items for label, crowd in zip(item.labels, item.crowd) if label == i and not crowd)
                    for i, name in enumerate(self.label_names)}
            for split, items in found.splits.items()
        }  # fmt: skip
        stats = box_statistics(found)
        summary = DataSummary(
            label_names=self.label_names,
            counts=counts,
            skipped=dict(found.skipped),
            skipped_examples=list(found.problems[:SKIPPED_LISTED]),
            group_noun="class",
            count_noun="boxes",
            extra={
                "format": found.form,
                "splits_from": "the data" if found.explicit else f"val_fraction {self.params.get('val_fraction', 0.2):g}",
                "images": {split: len(items) for split, items in found.splits.items()},
                "images_per_class": {
                    split: {name: sum(1 for item in items if i in item.labels) for i, name in enumerate(self.label_names)}
                    for split, items in found.splits.items()
                },
                **stats,
                "augmentation": self.augmentation,
                "model": self.arch,
                "annotations_cached": cached,
            },
        )
        if found.skipped:
            summary.warnings.append(
                "skipped " + ", ".join(f"{n} {reason}" for reason, n in found.skipped.most_common())
                + f" (first: {found.problems[0][0]})" if found.problems else ""
            )
        if stats["images_without_boxes"]:
            summary.warnings.append(f"{stats['images_without_boxes']} images have no boxes (kept: they teach what is not an object)")
        for split, items in found.splits.items():
            boxes = sum(counts[split].values())
            ctx.log(f"{split}: {len(items)} images, {boxes} boxes ("
                    + ", ".join(f"{name} {n}" for name, n in counts[split].items()) + ")")  # fmt: skip
        for where, reason in found.problems[:10]:
            ctx.log(f"skipped: {where}: {reason}")
        if len(found.problems) > 10:
            ctx.log(f"... and {len(found.problems) - 10} more skipped (listed in the data summary)")
        if not self.image_size:
            self.image_size, why = resolve_image_size(str(self.params.get("image_size", "auto")),
                                                      found.splits.get("train") or [], ctx.is_cuda)  # fmt: skip
            ctx.log(why)
        if self.tile is None:
            self.tile, why = resolve_tile(str(self.params.get("tile", "auto")), found.splits.get("train") or [], self.image_size)
            ctx.log(f"tiling {why}")
        if not self._trained_run:
            self._check_weights()
            self._check_export()
        return summary

    def _check_export(self) -> None:
        """export=onnx without the onnx extra fails before training, not at its end."""
        if self.export_kind() == "onnx" and str(self.params.get("export", "auto")) == "onnx":
            import importlib.util

            if importlib.util.find_spec("onnx") is None:
                raise UsageError(f"export=onnx needs the onnx extra, which is not installed: {ONNX_EXTRA}")

    def _check_weights(self) -> None:
        weights = str(self.params.get("weights") or "")
        if weights:
            read_weights_file(Path(weights).expanduser())  # bad input before the run starts

    def splits(self) -> list[str]:
        return [s for s in ("train", "val", "test") if self.found is not None and self.found.splits.get(s)]

    def dataset(self, split: str) -> DetectionDataset:
        if split not in self._datasets:
            if self.found is None or split not in self.found.splits:
                raise KeyError(f"no {split} split in this data")
            train = split == "train"
            transform = train_transform(self.augmentation, self.image_size, bool(self.params.get("hflip", True))) if train else None
            budget = int(float(self.params.get("memory_cache_mb", 1024)) * MB)
            self._datasets[split] = DetectionDataset(self.found.splits[split], self.image_size, transform,
                                                     keep_crowd=not train, cache_bytes=budget,
                                                     tile=self.tile or 0, crop=train)  # fmt: skip
        return self._datasets[split]

    def collate(self, items: list[Any]) -> dict[str, Any]:
        return collate(items)

    def loader_options(self, split: str, ctx: RunContext) -> dict[str, Any]:
        workers = int(str(self.params.get("num_workers", "0")))
        options: dict[str, Any] = {"num_workers": workers, "pin_memory": bool(ctx.is_cuda)}
        if workers:
            options["persistent_workers"] = True
            if ctx.multiprocessing_context:
                options["multiprocessing_context"] = ctx.multiprocessing_context
        return options

    def describe_examples(self, split: str, keys: Sequence[Any]) -> list[str]:
        items = self.found.splits.get(split, []) if self.found is not None else []
        dataset = self._datasets.get(split)
        index = [dataset.item_index(int(k)) if dataset is not None and 0 <= int(k) < len(dataset) else int(k) for k in keys]
        return [items[i].path if 0 <= i < len(items) else str(k) for i, k in zip(index, keys)]

    # -- model --------------------------------------------------------------
    def _detector(self) -> torch.nn.Module:
        return build_detector(self.arch, len(self.label_names), self.image_size, score_thresh=0.05, detections_per_img=100)

    def build_model(self, ctx: RunContext) -> torch.nn.Module:
        if not self.label_names:
            raise UsageError("build_model() before prepare(): the classes are not known yet")
        model = self._detector()
        weights = str(self.params.get("weights") or "")
        if weights and not self._trained_run:
            loaded, skipped = load_weights(model, read_weights_file(Path(weights).expanduser()), self.arch)
            if not loaded:
                raise UsageError(f"weights {weights}: no tensor fits {self.arch} (neither a full detector nor its backbone)")
            ctx.log(f"weights: {loaded} tensors from {weights}" + (f"; {len(skipped)} of another shape left out (first: {skipped[0]})" if skipped else ""))
        return model

    def to_device(self, batch: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
        device = ctx.device
        return {
            "images": ExampleList(image.to(device, non_blocking=True).float().div_(255.0) for image in batch["images"]),
            "targets": ExampleList({k: v.to(device, non_blocking=True) for k, v in t.items()} for t in batch["targets"]),
            "keys": batch["keys"],
        }

    def train_step(self, model: torch.nn.Module, batch: dict[str, Any], ctx: RunContext) -> tuple[torch.Tensor, int]:
        targets = [{"boxes": t["boxes"], "labels": t["labels"]} for t in batch["targets"]]
        parts = model(list(batch["images"]), targets)
        loss = sum(parts.values())
        for name, value in parts.items():  # read back once an epoch (metric_accumulator): no device sync per step
            self._parts[name] = self._parts.get(name, 0.0) + value.detach()
        self._part_steps += 1
        return loss, len(batch["images"])

    def eval_step(self, model: torch.nn.Module, batch: dict[str, Any], ctx: RunContext) -> EvalBatch:
        if self.tile:  # whole images at their own resolution, seen window by window
            detections = [detect_tiled(model, image, self.tile) for image in batch["images"]]
        else:
            detections = model(list(batch["images"]))
        outputs = ExampleList({k: d[k].float() if k != "labels" else d[k] for k in ("boxes", "scores", "labels")} for d in detections)
        targets = batch["targets"]
        if any("file_size" in t for t in targets):  # boxes in the file's pixels, as the worst images are drawn over it
            targets = ExampleList(dict(t) for t in targets)
            for image, out, target in zip(batch["images"], outputs, targets):
                if "file_size" in target:
                    height, width = target["file_size"].tolist()
                    scale = torch.tensor([width / image.shape[-1], height / image.shape[-2]] * 2, device=out["boxes"].device)
                    out["boxes"] = out["boxes"] * scale
                    target["boxes"] = target["boxes"].float() * scale
        # The detectors give no loss in evaluation mode: no loss is measured (not a 0); mAP is what evaluation measures.
        return EvalBatch(loss_sum=None, outputs=outputs, targets=targets, keys=batch["keys"].tolist())

    def metric_accumulator(self, split: str) -> DetectionMetrics:
        accumulator = DetectionMetrics(self, split)
        parts = self.loss_parts()
        if parts:
            accumulator.extra = {"train_loss_parts": parts}
            if self._log is not None:
                self._log("training loss by part: " + ", ".join(f"{k} {v:.4f}" for k, v in parts.items()))
        return accumulator

    def loss_parts(self) -> dict[str, float]:
        """The detector's loss parts, each the mean over the steps since the last call."""
        if not self._part_steps:
            return {}
        parts = {name: float(value) / self._part_steps for name, value in self._parts.items()}
        self._parts, self._part_steps = {}, 0
        return parts

    # -- fitted state and outputs ------------------------------------------------
    def fitted_state(self) -> dict[str, Any]:
        return {"architecture": self.arch, "category_ids": self.category_ids, "classes": self.label_names, "tile": self.tile or 0,
                "image_size": self.image_size}

    def load_fitted_state(self, state: Mapping[str, Any]) -> None:
        self.arch = str(state.get("architecture") or self.arch)
        self.category_ids = [int(c) for c in state.get("category_ids") or []]
        if state.get("classes"):
            self.label_names = [str(c) for c in state["classes"]]
        if "tile" in state:
            self.tile = int(state["tile"] or 0)
        if state.get("image_size"):
            self.image_size = int(state["image_size"])

    def model_description(self) -> dict[str, Any]:
        return {
            "format": "trainlab-detection",
            "task": self.spec.id,
            "family": self.spec.family,
            "architecture": self.arch,
            "classes": self.label_names,
            "category_ids": self.category_ids or list(range(1, len(self.label_names) + 1)),
            "image_size": self.image_size,
            "score_threshold": float(self.params.get("score_threshold", 0.3)),
            "cross_class_iou": float(self.params.get("cross_class_iou", 0.7)),
            "tile": self.tile or 0,
            "labels": "1..n in the order of classes; 0 is the background",
            "input": "RGB float in [0, 1], any size: the detector resizes its longer side to image_size",
        }

    def save_model(self, model: torch.nn.Module, out_dir: Path, ctx: RunContext) -> None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
        save_safetensors(out_dir / MODEL_FILE, state)
        atomic_write_text(out_dir / META_FILE, json.dumps(self.model_description(), indent=2))
        write_program(out_dir)
        # out_dir is a folder the engine renames into place as model/: the files are named by what they are
        ctx.log(f"model saved: model/{MODEL_FILE} with {META_FILE} and predict.py (runs without TrainLab)")
        self._export_graph(state, out_dir, ctx)

    def export_kind(self) -> str:
        """"torch", "onnx" or "off": what save_model exports for this run's detector and ``export``."""
        wanted = str(self.params.get("export", "auto"))
        return graph_kind(self.arch) if wanted == "auto" else wanted

    def _export_graph(self, state: dict[str, torch.Tensor], out_dir: Path, ctx: RunContext) -> None:
        kind = self.export_kind()
        if kind == "off":
            return
        detector = self._detector()
        detector.load_state_dict(state)
        detector.eval()
        try:
            if kind == "onnx":
                export_onnx(detector, self.image_size, out_dir / ONNX_FILE)
            else:
                export_graph(detector, self.arch, self.image_size, out_dir / GRAPH_FILE)
        except ImportError:
            ctx.log(f"{ONNX_FILE} not written: {self.arch} exports through ONNX, which needs the onnx extra: {ONNX_EXTRA}")
            return
        except Exception as exc:  # noqa: BLE001  an export that fails leaves the trained model and predict.py usable
            ctx.log(f"exported graph not written: {self.arch} does not export with {kind}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            return
        name = ONNX_FILE if kind == "onnx" else GRAPH_FILE
        ctx.log(f"exported graph: model/{name} (python predict.py --graph IMAGE runs it without TrainLab)")

    def load_trained_model(self, model_dir: Path, ctx: RunContext) -> torch.nn.Module:
        from safetensors.torch import load_file

        meta = json.loads((Path(model_dir) / META_FILE).read_text(encoding="utf-8"))
        self.arch, self.label_names = meta["architecture"], list(meta["classes"])
        self.image_size = int(meta["image_size"])
        model = self._detector()
        model.load_state_dict(load_file(str(Path(model_dir) / MODEL_FILE)))
        return model

    def load_predictor(self, model_dir: Path, device: Any):
        return make_predictor(Path(model_dir), device, float(self.params.get("score_threshold", 0.3)),
                              float(self.params.get("cross_class_iou", 1.0)))

    def expand_inputs(self, inputs: Iterable[str]) -> list[str]:
        files: list[str] = []
        for item in inputs:
            path = Path(item).expanduser()
            if path.is_dir():
                found = sorted(str(p) for p in path.rglob("*") if p.is_file() and p.suffix.lower() in formats.IMAGE_EXTENSIONS)
                if not found:
                    raise DataError(f"no image files in folder {path}")
                files += found
            else:
                files.append(str(path))  # a missing or unreadable file is that input's error line
        return files
