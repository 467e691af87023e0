"""Synthetic object-detection sets: shapes on varied backgrounds, with their boxes.

Each image holds one to four filled shapes (circle, square, triangle) of
random size, position and colour on a noisy gradient background; the boxes
are the shapes' exact extents.  Written as COCO (``train.json`` beside
``train/`` and ``val.json`` beside ``val/``), as a YOLO folder (``data.yaml``,
``images/<split>/``, ``labels/<split>/``) or as Pascal VOC (``Annotations/``,
``JPEGImages/``, ``ImageSets/Main/``, the class names in ``labels.txt``).  Everything is drawn from a seed.

    python scripts/trainlab_dev/detection_samples.py OUT [--format coco] [--train 160] [--val 40] [--size 96]

No torch here: PIL and numpy only.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

CLASSES = ("circle", "square", "triangle")
# COCO ids that are not 0..n-1, as in real COCO files (1-based, with gaps)
CATEGORY_IDS = (1, 3, 7)


def _background(rng: np.random.Generator, size: int) -> np.ndarray:
    a, b = rng.integers(0, 256, 3), rng.integers(0, 256, 3)
    t = np.linspace(0.0, 1.0, size)[None, :, None] if rng.random() < 0.5 else np.linspace(0.0, 1.0, size)[:, None, None]
    image = a * (1 - t) + b * t + rng.normal(0, 12, (size, size, 3))
    return np.clip(np.broadcast_to(image, (size, size, 3)), 0, 255).astype(np.uint8)


def draw_image(rng: np.random.Generator, size: int, max_objects: int = 4) -> tuple[Image.Image, list[tuple[int, list[float]]]]:
    """One image and its objects as (class index, [x1, y1, x2, y2])."""
    image = Image.fromarray(_background(rng, size))
    canvas = ImageDraw.Draw(image)
    objects: list[tuple[int, list[float]]] = []
    for _ in range(int(rng.integers(1, max_objects + 1))):
        cls = int(rng.integers(0, len(CLASSES)))
        side = int(rng.integers(size // 6, size // 3))
        x1, y1 = int(rng.integers(0, size - side)), int(rng.integers(0, size - side))
        x2, y2 = x1 + side, y1 + side
        colour = tuple(int(v) for v in rng.integers(0, 256, 3))
        if cls == 0:
            canvas.ellipse((x1, y1, x2 - 1, y2 - 1), fill=colour)
        elif cls == 1:
            canvas.rectangle((x1, y1, x2 - 1, y2 - 1), fill=colour)
        else:
            canvas.polygon([(x1, y2 - 1), ((x1 + x2) / 2, y1), (x2 - 1, y2 - 1)], fill=colour)
        objects.append((cls, [float(x1), float(y1), float(x2), float(y2)]))
    return image, objects


def _images(out: Path, counts: dict[str, int], size: int, seed: int):
    rng = np.random.default_rng(seed)
    for split, count in counts.items():
        for n in range(count):
            image, objects = draw_image(rng, size)
            yield split, f"{split}_{n:04d}.jpg", image, objects


def write_coco(out: Path, counts: dict[str, int], size: int = 96, seed: int = 0) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, dict] = {}
    ann_id = 100
    for split, name, image, objects in _images(out, counts, size, seed):
        (out / split).mkdir(exist_ok=True)
        image.save(out / split / name, quality=85)
        data = files.setdefault(split, {"images": [], "annotations": [],
                                        "categories": [{"id": c, "name": n} for c, n in zip(CATEGORY_IDS, CLASSES)]})
        image_id = len(data["images"]) + 1
        data["images"].append({"id": image_id, "file_name": name, "width": size, "height": size})
        for cls, (x1, y1, x2, y2) in objects:
            ann_id += 1
            data["annotations"].append({"id": ann_id, "image_id": image_id, "category_id": CATEGORY_IDS[cls],
                                        "bbox": [x1, y1, x2 - x1, y2 - y1], "area": (x2 - x1) * (y2 - y1), "iscrowd": 0})
    for split, data in files.items():
        (out / f"{split}.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
    return out


def write_yolo(out: Path, counts: dict[str, int], size: int = 96, seed: int = 0) -> Path:
    for split, name, image, objects in _images(out, counts, size, seed):
        (out / "images" / split).mkdir(parents=True, exist_ok=True)
        (out / "labels" / split).mkdir(parents=True, exist_ok=True)
        image.save(out / "images" / split / name, quality=85)
        lines = [f"{cls} {(x1 + x2) / 2 / size:.6f} {(y1 + y2) / 2 / size:.6f} {(x2 - x1) / size:.6f} {(y2 - y1) / size:.6f}"
                 for cls, (x1, y1, x2, y2) in objects]
        (out / "labels" / split / name).with_suffix(".txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    splits = "".join(f"{split}: images/{split}\n" for split in counts)
    names = "".join(f"  {i}: {n}\n" for i, n in enumerate(CLASSES))
    (out / "data.yaml").write_text(f"path: .\n{splits}names:\n{names}", encoding="utf-8")
    return out


def write_voc(out: Path, counts: dict[str, int], size: int = 96, seed: int = 0) -> Path:
    for folder in ("Annotations", "JPEGImages", "ImageSets/Main"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    stems: dict[str, list[str]] = {}
    for split, name, image, objects in _images(out, counts, size, seed):
        image.save(out / "JPEGImages" / name, quality=85)
        stem = Path(name).stem
        stems.setdefault(split, []).append(stem)
        objs = "".join(
            f"  <object>\n    <name>{CLASSES[cls]}</name>\n    <difficult>0</difficult>\n    <bndbox>\n"
            f"      <xmin>{int(x1) + 1}</xmin>\n      <ymin>{int(y1) + 1}</ymin>\n"
            f"      <xmax>{int(x2)}</xmax>\n      <ymax>{int(y2)}</ymax>\n    </bndbox>\n  </object>\n"
            for cls, (x1, y1, x2, y2) in objects
        )
        xml = (f"<annotation>\n  <filename>{name}</filename>\n  <size>\n    <width>{size}</width>\n"
               f"    <height>{size}</height>\n    <depth>3</depth>\n  </size>\n{objs}</annotation>\n")
        (out / "Annotations" / f"{stem}.xml").write_text(xml, encoding="utf-8")
    (out / "labels.txt").write_text("\n".join(CLASSES) + "\n", encoding="utf-8")
    for split, names in stems.items():
        (out / "ImageSets" / "Main" / f"{split}.txt").write_text("\n".join(names) + "\n", encoding="utf-8")
    return out


WRITERS = {"coco": write_coco, "yolo": write_yolo, "voc": write_voc}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--format", choices=sorted(WRITERS), default="coco")
    parser.add_argument("--train", type=int, default=160)
    parser.add_argument("--val", type=int, default=40)
    parser.add_argument("--size", type=int, default=96)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    WRITERS[args.format](args.out, {"train": args.train, "val": args.val}, args.size, args.seed)


if __name__ == "__main__":
    main()
