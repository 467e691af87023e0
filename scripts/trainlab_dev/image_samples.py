"""Synthetic "shapes" image datasets: the bundled sample, test data and benchmark data.

Each image is one filled shape (circle, square, star, ...) of random size,
position, rotation and colour on a noisy gradient background, saved as JPEG.
Everything is drawn from a seed, so a dataset is reproducible.

    python scripts/trainlab_dev/image_samples.py OUT [--classes 6] [--per-class 150] [--size 64]

regenerates the bundled sample (resources/trainlab_resources/samples/images/shapes) with the
defaults.  No torch here: PIL and numpy only.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Callable

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

SUPERSAMPLE = 4  # shapes are drawn 4x larger, then reduced: smooth edges


def _polygon(points: list[tuple[float, float]]) -> Callable[[ImageDraw.ImageDraw, float, float, float], None]:
    def draw(canvas: ImageDraw.ImageDraw, cx: float, cy: float, r: float) -> None:
        canvas.polygon([(cx + x * r, cy + y * r) for x, y in points], fill=255)

    return draw


def _regular(n: int, inner: float | None = None, turn: float = -math.pi / 2):
    points = []
    for k in range(n):
        angle = turn + 2 * math.pi * k / n
        points.append((math.cos(angle), math.sin(angle)))
        if inner is not None:
            angle += math.pi / n
            points.append((inner * math.cos(angle), inner * math.sin(angle)))
    return _polygon(points)


def _circle(canvas, cx, cy, r):
    canvas.ellipse((cx - r, cy - r, cx + r, cy + r), fill=255)


def _ring(canvas, cx, cy, r):
    _circle(canvas, cx, cy, r)
    inner = 0.55 * r
    canvas.ellipse((cx - inner, cy - inner, cx + inner, cy + inner), fill=0)


def _crescent(canvas, cx, cy, r):
    _circle(canvas, cx, cy, r)
    canvas.ellipse((cx - 0.45 * r, cy - 1.05 * r, cx + 1.55 * r, cy + 0.95 * r), fill=0)


def _half_disk(canvas, cx, cy, r):
    canvas.pieslice((cx - r, cy - 0.5 * r - r, cx + r, cy - 0.5 * r + r), 0, 180, fill=255)


_w = 0.32
SHAPES: dict[str, Callable] = {
    "circle": _circle,
    "square": _regular(4, turn=math.pi / 4),
    "triangle": _regular(3),
    "star": _regular(5, inner=0.42),
    "cross": _polygon(
        [(-_w, -1), (_w, -1), (_w, -_w), (1, -_w), (1, _w), (_w, _w), (_w, 1), (-_w, 1), (-_w, _w), (-1, _w), (-1, -_w), (-_w, -_w)]
    ),
    "ring": _ring,
    "crescent": _crescent,
    "hexagon": _regular(6),
    "arrow": _polygon([(-1, -0.25), (0.2, -0.25), (0.2, -0.7), (1, 0), (0.2, 0.7), (0.2, 0.25), (-1, 0.25)]),
    "half-disk": _half_disk,
}


def _luma(rgb: np.ndarray) -> float:
    return float(rgb @ np.array([0.299, 0.587, 0.114]))


def draw_shape(shape: str, size: int, rng: np.random.Generator) -> Image.Image:
    """One RGB image of ``shape``, ``size`` px square."""
    big = size * SUPERSAMPLE
    mask = Image.new("L", (big, big), 0)
    radius = big * rng.uniform(0.25, 0.42)
    margin = radius * 1.05
    cx, cy = rng.uniform(margin, big - margin, size=2)
    SHAPES[shape](ImageDraw.Draw(mask), cx, cy, radius)
    mask = mask.rotate(rng.uniform(0, 360), resample=Image.Resampling.BILINEAR, center=(cx, cy))
    mask = mask.resize((size, size), Image.Resampling.LANCZOS)

    background = rng.uniform(0, 255, size=3)
    foreground = rng.uniform(0, 255, size=3)
    while abs(_luma(foreground) - _luma(background)) < 80:
        foreground = rng.uniform(0, 255, size=3)
    ramp = np.linspace(-1, 1, size)
    angle = rng.uniform(0, 2 * math.pi)
    gradient = (np.cos(angle) * ramp[None, :] + np.sin(angle) * ramp[:, None])[..., None]
    back = background + gradient * rng.uniform(5, 25) * rng.choice([-1, 1], size=3)
    alpha = np.asarray(mask, dtype=np.float32)[..., None] / 255.0
    pixels = back * (1 - alpha) + foreground * alpha + rng.normal(0, 8, size=(size, size, 3))
    image = Image.fromarray(pixels.clip(0, 255).astype(np.uint8), "RGB")
    if rng.random() < 0.3:
        image = image.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 0.8)))
    return image


def make_shapes_dataset(
    root: str | Path,
    *,
    classes: int = 6,
    per_class: int = 150,
    size: int = 64,
    seed: int = 0,
    quality: int = 85,
    splits: dict[str, int] | None = None,
) -> Path:
    """Write ``root/<shape>/<shape>_NNNN.jpg`` (or ``root/<split>/<shape>/...`` with ``splits``)."""
    root = Path(root)
    names = list(SHAPES)[:classes]
    if len(names) < classes:
        raise ValueError(f"at most {len(SHAPES)} shape classes")
    layout = splits or {"": per_class}
    rng = np.random.default_rng(seed)
    for split, count in layout.items():
        for name in names:
            folder = root / split / name if split else root / name
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(count):
                draw_shape(name, size, rng).save(folder / f"{name}_{i:04d}.jpg", quality=quality, optimize=True)
    return root


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="folder to write (class folders are created inside)")
    parser.add_argument("--classes", type=int, default=6)
    parser.add_argument("--per-class", type=int, default=150)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quality", type=int, default=85)
    args = parser.parse_args(argv)
    make_shapes_dataset(
        args.out, classes=args.classes, per_class=args.per_class, size=args.size, seed=args.seed, quality=args.quality
    )


if __name__ == "__main__":
    main()
