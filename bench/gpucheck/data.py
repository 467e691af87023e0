"""Data and models the checks make for themselves: JPEG folders, text files, a BERT folder.

Nothing is downloaded: images are drawn with numpy and PIL, texts are made
of words of the tiny-bert vocabulary shipped with TrainLab, and the BERT
model is built from a ``BertConfig`` with random weights.
"""

from __future__ import annotations

import csv
import os
import random
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

# BERT-base: 12 layers, hidden 768, 12 heads, 3072 intermediate, 30522 tokens.
BERT_BASE = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072, "vocab_size": 30522}
BERT_TINY = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128, "vocab_size": 0}


def _draw_jpeg(job: tuple[str, int, int, int]) -> None:
    import numpy as np
    from PIL import Image

    path, label, side, seed = job
    rng = np.random.default_rng(seed)
    # A smooth background in the class's hue, a bright box, a little noise:
    # files of a realistic size (tens of KB) that decode like photographs.
    hue = np.array([(label * 67) % 256, (label * 131) % 256, (label * 29) % 256], dtype=np.float32)
    ramp = np.linspace(0.4, 1.0, side, dtype=np.float32)
    image = hue[None, None, :] * ramp[:, None, None] * ramp[None, :, None]
    x0, y0 = rng.integers(0, side // 2, size=2)
    w, h = rng.integers(side // 6, side // 2, size=2)
    image[y0 : y0 + h, x0 : x0 + w] = 255 - hue
    image += rng.normal(0, 6, size=image.shape).astype(np.float32)
    Image.fromarray(np.clip(image, 0, 255).astype(np.uint8)).save(path, quality=90)


def make_jpegs(root: Path, *, classes: int, train_per_class: int, val_per_class: int, side: int) -> Path:
    """``root/train/<class>/*.jpg`` and ``root/val/<class>/*.jpg``, drawn in parallel."""
    jobs = []
    for split, count in (("train", train_per_class), ("val", val_per_class)):
        for label in range(classes):
            folder = root / split / f"class_{label:02d}"
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(count):
                jobs.append((str(folder / f"{i:05d}.jpg"), label, side, (split == "val") * 10**7 + label * 10**5 + i))
    workers = max(1, min(16, (os.cpu_count() or 1)))
    if workers == 1 or len(jobs) < 64:
        for job in jobs:
            _draw_jpeg(job)
    else:
        with ProcessPoolExecutor(workers) as pool:
            list(pool.map(_draw_jpeg, jobs, chunksize=64))
    return root


def vocabulary_words() -> list[str]:
    from trainlab_resources import resource_path

    words = []
    for line in (resource_path("vocab", "tiny-bert") / "vocab.txt").read_text(encoding="utf-8").splitlines():
        if line.isascii() and line.isalpha() and len(line) >= 3:
            words.append(line)
    return words


def make_texts(folder: Path, *, train_rows: int, val_rows: int, min_words: int, max_words: int, seed: int = 0) -> Path:
    """``train.csv`` and ``val.csv`` of texts whose label is which of four marker words they hold."""
    rng = random.Random(seed)
    words = vocabulary_words()
    markers, filler = words[:4], words[4:]
    folder.mkdir(parents=True, exist_ok=True)
    for split, rows in (("train", train_rows), ("val", val_rows)):
        with open(folder / f"{split}.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["text", "label"])
            for r in range(rows):
                label = r % len(markers)
                text = [rng.choice(filler) for _ in range(rng.randint(min_words, max_words))]
                text.insert(rng.randrange(len(text) + 1), markers[label])
                writer.writerow([" ".join(text), f"topic_{label}"])
    return folder


def make_bert_folder(folder: Path, size: dict[str, Any], max_positions: int = 512) -> Path:
    """A BERT model folder (random weights, the tiny-bert vocabulary) that the text task loads as a pretrained model."""
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM
    from transformers.utils import logging as hf_logging

    from trainlab_resources import resource_path

    hf_logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(str(resource_path("vocab", "tiny-bert")))
    shape = dict(size)
    shape["vocab_size"] = max(int(shape.get("vocab_size") or 0), len(tokenizer))
    config = BertConfig(pad_token_id=tokenizer.pad_token_id, max_position_embeddings=max_positions, **shape)
    BertForMaskedLM(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder
