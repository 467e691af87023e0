"""The built-in regression and multi-label tasks against plain PyTorch scripts (for bench/task_families.py).

For ``image-regression``, ``image-multilabel``, ``text-regression`` and
``text-multilabel`` this module writes data in the task's documented format
(docs/contract.md "Data formats": a folder with ``train.csv`` and ``val.csv``;
images as PNG files listed in an ``image`` column; multi-label cells joined
by ``;``), and holds the script a careful person writes by hand for the same
model, data, seed, batch order, optimizer and schedule:

* images: TrainLab's ``small-cnn`` (the class the task builds) at a small
  image size, each PNG decoded with PIL and resized/centre-cropped by
  torchvision v2 every epoch as the task does (no workers: 2 shared cores;
  the task's ``num_workers=auto`` picks none there either), normalised with
  the ImageNet mean and std, batches from ``torch.randperm`` seeded as
  ``Task.batch_order`` seeds it;
* texts: a BERT built here from a tiny config (no hub) and saved as a model
  folder, which both sides load, so both start from the same weights; texts
  tokenised once, batches from the task's own length-grouped order
  (``trainlab_plugins.text.batching``, imported: the order is what is
  compared, not re-derived), padded per batch to the longest text.

Both sides take their recipe from one place, ``recipe(task_id, overrides)``:
the task's parameters resolved by ``trainlab.api.params.resolve`` (engine
defaults < task defaults < model preset < the bench's overrides), so the
script's learning rate, batch size, warmup, weight decay and clipping are the
task's defaults, not numbers written twice.
"""

from __future__ import annotations

import csv
import math
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pairs import count_region

IMAGE_SIDE = 16  # small-cnn keeps full resolution below 64 px (stride-1 stem)
TINY_TEXT_BERT = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 128,
    "max_position_embeddings": 128,
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
}
MULTILABEL_IMAGE_LABELS = ("blue-bar", "green-disc", "red-square", "white-bar")
TOPICS = {
    "food": ("pizza", "bread", "soup", "cheese", "dinner", "lunch", "menu", "cake"),
    "sports": ("football", "match", "goal", "team", "player", "score", "coach", "league"),
    "technology": ("computer", "phone", "software", "screen", "internet", "chip", "data", "network"),
    "weather": ("rain", "storm", "sunny", "wind", "cloud", "snow", "cold", "heat"),
}
POSITIVE = ("good", "great", "excellent", "tasty", "friendly", "fresh", "lovely", "perfect")
NEGATIVE = ("bad", "awful", "slow", "rude", "dirty", "terrible", "bland", "noisy")
FILLER = ("the", "food", "service", "place", "price", "was", "and", "very", "quite", "our", "table", "staff", "room", "today", "with")


@dataclass
class Sizes:
    """How much work one run of a built-in entry is."""

    images_train: int = 512
    images_val: int = 128
    texts_train: int = 1024
    texts_val: int = 256
    epochs: int = 3


# -- data in the documented formats -------------------------------------------------


def write_image_data(root: Path, family: str, sizes: Sizes, seed: int = 7) -> Path:
    """A folder with train.csv/val.csv listing PNGs: discs whose area is the number,
    or coloured shapes each switching a label on."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    side = IMAGE_SIDE + 4  # larger than image_size: the resize does real work on both sides
    root.mkdir(parents=True, exist_ok=True)
    (root / "images").mkdir(exist_ok=True)
    column = "label" if family == "regression" else "labels"
    yy, xx = np.mgrid[0:side, 0:side]
    for split, n in (("train", sizes.images_train), ("val", sizes.images_val)):
        rows = []
        for i in range(n):
            pixels = rng.integers(0, 60, (side, side, 3)).astype(np.float32)
            if family == "regression":
                radius = rng.uniform(1.5, side * 0.4)
                cx, cy = rng.uniform(radius, side - radius, 2)
                pixels[(xx - cx) ** 2 + (yy - cy) ** 2 <= radius**2] = rng.uniform(180, 255)
                value = f"{math.pi * radius * radius:.3f}"
            else:
                present = [name for name in MULTILABEL_IMAGE_LABELS if rng.random() < 0.4]
                for name in present:
                    x0, y0 = rng.integers(0, side - 6, 2)
                    if name == "red-square":
                        pixels[y0 : y0 + 5, x0 : x0 + 5] = (230, 30, 30)
                    elif name == "green-disc":
                        pixels[(xx - x0 - 3) ** 2 + (yy - y0 - 3) ** 2 <= 7] = (30, 220, 30)
                    elif name == "blue-bar":
                        pixels[y0 : y0 + 2, 2 : side - 2] = (40, 40, 240)
                    else:
                        pixels[2 : side - 2, x0 : x0 + 2] = (250, 250, 250)
                value = ";".join(present)
            name = f"images/{split}-{i:05d}.png"
            Image.fromarray(pixels.clip(0, 255).astype(np.uint8)).save(root / name)
            rows.append((name, value))
        _write_table(root / f"{split}.csv", ("image", column), rows)
    return root


def write_text_data(root: Path, family: str, sizes: Sizes, seed: int = 11) -> Path:
    """A folder with train.csv/val.csv: reviews rated by their words, or texts tagged by their topics."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    column = "label" if family == "regression" else "labels"
    for split, n in (("train", sizes.texts_train), ("val", sizes.texts_val)):
        rows = []
        for _ in range(n):
            if family == "regression":
                good, bad = rng.randint(0, 4), rng.randint(0, 4)
                words = [rng.choice(POSITIVE) for _ in range(good)] + [rng.choice(NEGATIVE) for _ in range(bad)]
                words += [rng.choice(FILLER) for _ in range(rng.randint(3, 12))]
                value = f"{3 + 0.5 * (good - bad) + rng.gauss(0, 0.2):.3f}"
            else:
                topics = sorted(rng.sample(sorted(TOPICS), rng.choice((0, 1, 1, 2, 2, 3))))
                words = [rng.choice(TOPICS[t]) for t in topics for _ in range(rng.randint(2, 4))]
                words += [rng.choice(FILLER) for _ in range(rng.randint(2, 8))]
                value = ";".join(topics)
            rng.shuffle(words)
            rows.append((" ".join(words), value))
        _write_table(root / f"{split}.csv", ("text", column), rows)
    return root


def _write_table(path: Path, header: tuple[str, str], rows: list[tuple[str, str]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def _read_table(path: Path, family: str, label_names: list[str] | None = None) -> tuple[list[str], Any]:
    """(first column, targets): floats, or multi-hot rows over ``label_names``."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))[1:]
    first = [row[0] for row in rows]
    if family == "regression":
        return first, torch.tensor([float(row[1]) for row in rows], dtype=torch.float32)
    index = {name: j for j, name in enumerate(label_names or [])}
    hot = torch.zeros(len(rows), len(index))
    for i, row in enumerate(rows):
        for name in filter(None, row[1].split(";")):
            hot[i, index[name]] = 1.0
    return first, hot


def label_names_of(path: Path) -> list[str]:
    with open(path, newline="", encoding="utf-8") as handle:
        return sorted({name for row in list(csv.reader(handle))[1:] for name in row[1].split(";") if name})


def _quiet_transformers() -> None:
    # its progress bars on stderr would bury the bench's lines (TrainLab silences them too)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


def write_text_model(folder: Path, family: str, label_names: list[str]) -> Path:
    """A BERT from ``TINY_TEXT_BERT`` with the shipped tiny-bert vocabulary, saved as a model folder."""
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from trainlab import resource_path

    _quiet_transformers()
    tokenizer = AutoTokenizer.from_pretrained(str(resource_path("vocab", "tiny-bert")), local_files_only=True)
    names = ["label"] if family == "regression" else label_names  # text-regression names its output by the label column
    config = BertConfig(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        num_labels=len(names),
        id2label=dict(enumerate(names)),
        label2id={name: i for i, name in enumerate(names)},
        problem_type="regression" if family == "regression" else "multi_label_classification",
        **TINY_TEXT_BERT,
    )
    torch.manual_seed(5)
    BertForSequenceClassification(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


# -- the recipe both sides use -------------------------------------------------------


def recipe(task_id: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """The task's parameters as a run resolves them (defaults, preset, then ``overrides``)."""
    from trainlab.api.params import ENGINE_PARAMS, resolve
    from trainlab.pluginhost.host import registry

    values = resolve(registry().task(task_id).spec, ENGINE_PARAMS, {}, overrides)
    # what the scripts below implement; a changed default must change them too
    assert values["optimizer"] == "adamw" and values["schedule"] == "linear" and values["grad_accum"] == 1, values
    assert not values["class_weighting"] and values["precision"] in ("auto", "fp32")  # task_families runs TrainLab in fp32, values
    return values


@dataclass
class SideFigures:
    """What one run of either side measured."""

    train_seconds: float  # wall time in training passes
    train_cpu: float  # process CPU time in training passes (all threads)
    samples: int  # training examples seen
    seconds: float  # the whole script, data reading and the final save included
    cpu: float
    quality: float
    weights: dict[str, torch.Tensor]


def _seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


def _optimizer_and_schedule(model: torch.nn.Module, values: dict[str, Any], steps_per_epoch: int):
    decay = [p for n, p in model.named_parameters() if p.requires_grad and not (p.ndim <= 1 or n.endswith(".bias"))]
    no_decay = [p for n, p in model.named_parameters() if p.requires_grad and (p.ndim <= 1 or n.endswith(".bias"))]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": float(values["weight_decay"])}, {"params": no_decay, "weight_decay": 0.0}],
        lr=float(values["lr"]),
        fused=True,  # as the engine's (core/trainlab/engine/loop.py), on the CPU too
    )
    total = steps_per_epoch * int(values["epochs"])
    warmup = int(round(total * float(values["warmup_ratio"])))

    def factor(step: int) -> float:
        if warmup and step < warmup:
            return (step + 1) / (warmup + 1)
        return max(0.0, 1.0 - min(1.0, (step - warmup) / max(1, total - warmup)))

    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _loss(family: str, outputs: torch.Tensor, targets: torch.Tensor, mean: float, std: float) -> torch.Tensor:
    if family == "regression":
        return torch.nn.functional.mse_loss(outputs.float().reshape(-1), (targets.float() - mean) / std)
    return torch.nn.functional.binary_cross_entropy_with_logits(outputs.float(), targets.float())


def quality_of(family: str, outputs: torch.Tensor, targets: torch.Tensor, mean: float, std: float) -> float:
    """R^2 in the target's units, or micro-F1 at threshold 0.5."""
    if family == "regression":
        pred, target = (outputs.reshape(-1).double() * std + mean), targets.double()
        return float(1 - ((target - pred) ** 2).sum() / ((target - target.mean()) ** 2).sum())
    pred, target = (outputs.sigmoid() >= 0.5), targets.bool()
    tp, fp, fn = int((pred & target).sum()), int((pred & ~target).sum()), int((~pred & target).sum())
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def _outputs(model: torch.nn.Module, inputs: Any) -> torch.Tensor:
    if isinstance(inputs, dict):  # a transformers model: keyword inputs, .logits out
        return model(**inputs).logits
    return model(inputs)


def train_and_evaluate(
    family: str, model: torch.nn.Module, values: dict[str, Any], batches_of, batch_at, val_batches, val_targets, mean, std, samples_per_epoch
):
    """The loop every plain script shares: train an epoch, evaluate, repeat.

    ``batches_of(epoch)``: the epoch's index batches; ``batch_at(split, indices)``:
    (inputs, targets). Returns (train seconds, train CPU seconds, samples, quality).
    """
    clip = float(values["clip_grad_norm"])
    optimizer, schedule = _optimizer_and_schedule(model, values, len(batches_of(1)))
    train_seconds = train_cpu = 0.0
    quality = float("nan")
    for epoch in range(1, int(values["epochs"]) + 1):
        count_region(True)  # under callgrind (task_families --instructions): the training passes only
        wall0, cpu0 = time.perf_counter(), time.process_time()
        model.train()
        for indices in batches_of(epoch):
            inputs, targets = batch_at("train", indices)
            loss = _loss(family, _outputs(model, inputs), targets, mean, std)
            loss.backward()
            if clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            schedule.step()
        train_seconds += time.perf_counter() - wall0
        train_cpu += time.process_time() - cpu0
        count_region(False)
        model.eval()
        outputs = []
        with torch.inference_mode():
            for indices in val_batches:
                inputs, _ = batch_at("val", indices)
                outputs.append(_outputs(model, inputs).float())
        quality = quality_of(family, torch.cat(outputs), val_targets, mean, std)
    return train_seconds, train_cpu, samples_per_epoch * int(values["epochs"]), quality


def target_scaling(family: str, targets: torch.Tensor) -> tuple[float, float]:
    """Mean and population sd of the training targets (what RegressionTask standardises with)."""
    if family != "regression":
        return 0.0, 1.0
    values = targets.double()
    std = float(values.std(unbiased=False))
    return float(values.mean()), std if std > 0 else 1.0


def plain_image_script(family: str, data: Path, values: dict[str, Any], out_dir: Path) -> SideFigures:
    """small-cnn on the PNG tables, by hand."""
    from PIL import Image
    from safetensors.torch import save_file
    from torchvision.transforms import v2

    from trainlab_plugins.image.models import SmallCNN

    start, cpu_start = time.perf_counter(), time.process_time()
    seed, batch, size = int(values["seed"]), int(values["batch_size"]), int(values["image_size"])
    _seed(seed)
    labels = label_names_of(data / "train.csv") if family == "multilabel" else None
    splits = {name: _read_table(data / f"{name}.csv", family, labels) for name in ("train", "val")}
    mean, std = target_scaling(family, splits["train"][1])
    transform = v2.Compose([v2.Resize(size, antialias=True), v2.CenterCrop(size), v2.PILToTensor()])
    pixel_mean = torch.tensor([255 * m for m in (0.485, 0.456, 0.406)]).view(1, 3, 1, 1)
    pixel_std = torch.tensor([255 * s for s in (0.229, 0.224, 0.225)]).view(1, 3, 1, 1)

    def batch_at(split: str, indices: list[int]):
        paths, targets = splits[split]
        images = []
        for i in indices:
            with Image.open(data / paths[i]) as image:
                images.append(transform(image.convert("RGB")))
        return (torch.stack(images).float() - pixel_mean) / pixel_std, targets[indices]

    n = len(splits["train"][0])

    def batches_of(epoch: int) -> list[list[int]]:
        order = torch.randperm(n, generator=torch.Generator().manual_seed(seed * 1_000_003 + epoch)).tolist()
        return [order[i : i + batch] for i in range(0, n, batch)]

    n_val = len(splits["val"][0])
    val_batches = [list(range(i, min(i + batch, n_val))) for i in range(0, n_val, batch)]
    outputs = 1 if family == "regression" else len(labels or [])
    model = SmallCNN(outputs, stem_stride=2 if size >= 64 else 1)
    train_s, train_cpu, samples, quality = train_and_evaluate(
        family, model, values, batches_of, batch_at, val_batches, splits["val"][1], mean, std, n
    )
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(out_dir / "plain-image.safetensors"))
    return SideFigures(
        train_s, train_cpu, samples, time.perf_counter() - start, time.process_time() - cpu_start, quality,
        {k: v.detach().clone() for k, v in model.state_dict().items()},
    )  # fmt: skip


def plain_text_script(family: str, data: Path, values: dict[str, Any], out_dir: Path) -> SideFigures:
    """The tiny BERT folder on the text tables, by hand (transformers, no Trainer)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from trainlab_plugins.text.batching import length_grouped_batches, sorted_batches

    _quiet_transformers()
    start, cpu_start = time.perf_counter(), time.process_time()
    seed, batch = int(values["seed"]), int(values["batch_size"])
    _seed(seed)
    folder = str(values["model"])
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    labels = label_names_of(data / "train.csv") if family == "multilabel" else None
    splits = {}
    for name in ("train", "val"):
        texts, targets = _read_table(data / f"{name}.csv", family, labels)
        ids = tokenizer(texts, truncation=True, max_length=int(values["max_length"]))["input_ids"]
        splits[name] = ([torch.tensor(row) for row in ids], targets)
    mean, std = target_scaling(family, splits["train"][1])
    pad = tokenizer.pad_token_id or 0

    def batch_at(split: str, indices: list[int]):
        rows, targets = splits[split]
        width = max(len(rows[i]) for i in indices)
        ids = torch.full((len(indices), width), pad, dtype=torch.long)
        mask = torch.zeros((len(indices), width), dtype=torch.long)
        for r, i in enumerate(indices):
            ids[r, : len(rows[i])] = rows[i]
            mask[r, : len(rows[i])] = 1
        return {"input_ids": ids, "attention_mask": mask}, targets[indices]

    lengths = {name: np.array([len(row) for row in rows]) for name, (rows, _) in splits.items()}
    model = AutoModelForSequenceClassification.from_pretrained(folder, local_files_only=True)
    val_batches = sorted_batches(lengths["val"], batch)
    val_targets = splits["val"][1][[i for b in val_batches for i in b]]  # in the order the batches give them
    train_s, train_cpu, samples, quality = train_and_evaluate(
        family, model, values, lambda epoch: length_grouped_batches(lengths["train"], batch, seed, epoch),
        batch_at, val_batches, val_targets, mean, std, len(lengths["train"]),
    )  # fmt: skip
    model.save_pretrained(str(out_dir / "plain-text-model"))
    return SideFigures(
        train_s, train_cpu, samples, time.perf_counter() - start, time.process_time() - cpu_start, quality,
        {k: v.detach().clone() for k, v in model.state_dict().items()},
    )  # fmt: skip
