"""Synthetic image tables: the bundled regression and multi-label samples, and test data.

* ``cells``: a microscope-like field of bright round cells on a dark, noisy
  background; the label is how many cells it holds (``image,label`` CSV).
* ``scenes``: a noisy gradient background with any of four shapes on it
  (circle, cross, square, triangle; each with probability 0.4, so some
  images show none), turned a little; the labels are the shapes present
  (``image,labels`` CSV, ``;``-joined).

Everything is drawn from a seed, so a table is reproducible.  The images lie
beside the table, which names them by relative path.

    python scripts/trainlab_dev/table_samples.py cells OUT [--images 300] [--size 64] [--seed 0]
    python scripts/trainlab_dev/table_samples.py scenes OUT [--images 400] [--size 64] [--seed 0]

regenerate the bundled samples (resources/trainlab_resources/samples/images/cells and
resources/trainlab_resources/samples/images/scenes) with the defaults.  No torch here: PIL and
numpy only.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

if not __package__:  # run as a file: its folder's parent, scripts/, holds the trainlab_dev package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from trainlab_dev.image_samples import SHAPES, SUPERSAMPLE, _luma

SCENE_LABELS = ("circle", "cross", "square", "triangle")  # at most four: one to a quarter
SCENE_PROBABILITY = 0.4
# Shapes turned at most this much (degrees): with any turn at all, a small CNN
# trained from scratch needs far more than a minute of a CPU to tell a turned
# square from a cross on 400 images (measured: micro-F1 0.73 after 15 epochs,
# against 0.86 here with the same settings).
SCENE_TURN = 15.0
MAX_CELLS = 14


def _place(rng: np.random.Generator, size: float, radius: float, taken: list[tuple[float, float, float]], gap: float) -> tuple[float, float] | None:
    """A centre ``radius`` away from the border and ``gap`` beyond every circle in ``taken``, or None."""
    for _ in range(200):
        x, y = rng.uniform(radius, size - radius, size=2)
        if all(math.hypot(x - tx, y - ty) >= radius + tr + gap for tx, ty, tr in taken):
            return float(x), float(y)
    return None


def draw_cells(count: int, size: int, rng: np.random.Generator) -> Image.Image:
    """A dark field with ``count`` separate bright cells (soft edges, a brighter nucleus)."""
    big = size * SUPERSAMPLE
    mask = Image.new("L", (big, big), 0)
    nuclei = Image.new("L", (big, big), 0)
    canvas, inner = ImageDraw.Draw(mask), ImageDraw.Draw(nuclei)
    taken: list[tuple[float, float, float]] = []
    while len(taken) < count:
        radius = big * rng.uniform(0.045, 0.075)
        spot = _place(rng, big, radius, taken, gap=big * 0.02)
        if spot is None:  # crowded: start the field again (rare below MAX_CELLS)
            mask.paste(0, (0, 0, big, big))
            nuclei.paste(0, (0, 0, big, big))
            taken = []
            continue
        x, y = spot
        stretch = rng.uniform(0.8, 1.2)
        canvas.ellipse((x - radius * stretch, y - radius / stretch, x + radius * stretch, y + radius / stretch), fill=255)
        r = radius * 0.4
        inner.ellipse((x - r, y - r, x + r, y + r), fill=255)
        taken.append((x, y, radius * max(stretch, 1 / stretch)))
    mask = mask.resize((size, size), Image.Resampling.LANCZOS).filter(ImageFilter.GaussianBlur(0.6))
    nuclei = nuclei.resize((size, size), Image.Resampling.LANCZOS)
    back = rng.uniform(10, 50)
    cell = rng.uniform(120, 200)
    tint = rng.uniform(0.7, 1.0, size=3)
    alpha = np.asarray(mask, dtype=np.float32)[..., None] / 255.0
    core = np.asarray(nuclei, dtype=np.float32)[..., None] / 255.0
    ramp = np.linspace(-1, 1, size)
    shade = (ramp[None, :] * rng.uniform(-10, 10) + ramp[:, None] * rng.uniform(-10, 10))[..., None]
    pixels = (back + shade) * (1 - alpha) + cell * alpha + 40 * core + rng.normal(0, 10, size=(size, size, 1))
    return Image.fromarray((pixels * tint).clip(0, 255).astype(np.uint8), "RGB")


def draw_scene(present: list[str], size: int, rng: np.random.Generator) -> Image.Image:
    """The shapes ``present`` on a noisy gradient, each in its own quarter of the image (of random
    size, position within it, colour and a slight turn), so that they never overlap."""
    big = size * SUPERSAMPLE
    background = rng.uniform(0, 255, size=3)
    ramp = np.linspace(-1, 1, size)
    angle = rng.uniform(0, 2 * math.pi)
    gradient = (np.cos(angle) * ramp[None, :] + np.sin(angle) * ramp[:, None])[..., None]
    pixels = background + gradient * rng.uniform(5, 25) * rng.choice([-1, 1], size=3)
    half = big / 2
    for name, quarter in zip(present, rng.permutation(4)):
        radius = half * rng.uniform(0.34, 0.46)
        left, top = (quarter % 2) * half, (quarter // 2) * half
        x, y = left + rng.uniform(radius, half - radius), top + rng.uniform(radius, half - radius)
        mask = Image.new("L", (big, big), 0)
        SHAPES[name](ImageDraw.Draw(mask), x, y, radius)
        mask = mask.rotate(rng.uniform(-SCENE_TURN, SCENE_TURN), resample=Image.Resampling.BILINEAR, center=(x, y))
        mask = mask.resize((size, size), Image.Resampling.LANCZOS)
        colour = rng.uniform(0, 255, size=3)
        while abs(_luma(colour) - _luma(background)) < 80:
            colour = rng.uniform(0, 255, size=3)
        alpha = np.asarray(mask, dtype=np.float32)[..., None] / 255.0
        pixels = pixels * (1 - alpha) + colour * alpha
    pixels = pixels + rng.normal(0, 8, size=(size, size, 3))
    return Image.fromarray(pixels.clip(0, 255).astype(np.uint8), "RGB")


def make_cells_table(root: str | Path, *, images: int = 300, size: int = 64, seed: int = 0, quality: int = 85) -> Path:
    """Write ``root/cell_NNNN.jpg`` and ``root/cells.csv`` (image, label: the number of cells)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(images):
        count = int(rng.integers(0, MAX_CELLS + 1))
        name = f"cell_{i:04d}.jpg"
        draw_cells(count, size, rng).save(root / name, quality=quality, optimize=True)
        rows.append((name, count))
    return _write_csv(root / "cells.csv", ("image", "label"), rows)


def make_scenes_table(root: str | Path, *, images: int = 400, size: int = 64, seed: int = 0, quality: int = 85) -> Path:
    """Write ``root/scene_NNNN.jpg`` and ``root/scenes.csv`` (image, labels: the shapes, ``;``-joined)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(images):
        present = [name for name in SCENE_LABELS if rng.random() < SCENE_PROBABILITY]
        name = f"scene_{i:04d}.jpg"
        draw_scene(present, size, rng).save(root / name, quality=quality, optimize=True)
        rows.append((name, ";".join(present)))
    return _write_csv(root / "scenes.csv", ("image", "labels"), rows)


def _write_csv(path: Path, header: tuple[str, str], rows: list[tuple[str, object]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("cells", "scenes"))
    parser.add_argument("out", help="folder to write (the table and its images)")
    parser.add_argument("--images", type=int, help="how many (cells: 300, scenes: 400)")
    parser.add_argument("--size", type=int, default=64, help="side in px")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    make = make_cells_table if args.kind == "cells" else make_scenes_table
    given = {"images": args.images} if args.images is not None else {}
    print(make(args.out, size=args.size, seed=args.seed, **given))


if __name__ == "__main__":
    main()
