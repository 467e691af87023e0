"""Reading box annotations people already have: COCO JSON, YOLO folders, Pascal VOC XML.

No torch here: the standard library, PIL (image headers: size and EXIF
orientation), PyYAML (YOLO's ``data.yaml``) and defusedxml (VOC files are
parsed without entity expansion or external references).

Every reader gives the same thing, ``Found``: the class names, per split a
list of ``ImageBoxes`` (an image file, its size as shown, its boxes as
``[x1, y1, x2, y2]`` in pixels of the image as shown, their class indices and
crowd flags), and every annotation it could not use, named by file and line
(or a COCO file's annotation id) with the reason, skipped and counted.

EXIF orientation: the pixels are turned upright when an image is decoded
(``PIL.ImageOps.exif_transpose``), and the boxes are turned with them: a box
is read in the frame of the stored pixels and mapped by ``orient_box``.  Where
the file states the image's size (COCO ``width``/``height``, VOC ``<size>``)
and that size is the upright one while the stored one differs, the boxes
were drawn on the upright image and are kept as they are.

The three readers stay in one module with the checks they share (a box inside
its image, a known class, a found image, the skip-and-count record), so that a
rule changed for one format is changed for all.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from trainlab import DataError, StopRequested, atomic_write_text

IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp"})
SPLITS = ("train", "val", "test")
SPLIT_ALIASES = {"train": ("train", "training"), "val": ("val", "valid", "validation"), "test": ("test", "testing")}
FORMATS = ("coco", "yolo", "voc")
# A box may reach this far past the image's edge (pixels) before it is named:
# annotation tools round outward.
EDGE_SLACK = 1.0
EXIF_ORIENTATION = 0x0112
READER_VERSION = 1  # part of the cache key: a reader that reads differently gets a new entry

# The reasons an annotation or image is skipped (counted under these words).
OUTSIDE = "box outside the image"
PARTLY_OUTSIDE = "box partly outside the image (clipped)"
EMPTY_BOX = "box of zero or negative size"
UNKNOWN_CLASS = "unknown class"
MISSING_IMAGE = "missing image"
UNREADABLE_IMAGE = "unreadable image"
BAD_LINE = "unreadable annotation"
UNKNOWN_IMAGE = "annotation of an image not listed"


@dataclass
class ImageBoxes:
    """One image and its boxes, in pixels of the upright image."""

    path: str
    width: int  # upright
    height: int
    boxes: list[list[float]] = field(default_factory=list)  # [x1, y1, x2, y2]
    labels: list[int] = field(default_factory=list)  # class indices
    crowd: list[bool] = field(default_factory=list)  # COCO iscrowd, VOC difficult: ignored by the metric
    orientation: int = 1  # EXIF orientation of the stored pixels

    @staticmethod
    def from_json(data: dict[str, Any]) -> ImageBoxes:
        return ImageBoxes(**data)


@dataclass
class Found:
    """What a reader found: classes, images per split, and what it skipped."""

    form: str
    classes: list[str]
    splits: dict[str, list[ImageBoxes]]
    problems: list[tuple[str, str]] = field(default_factory=list)  # (file:line, reason)
    skipped: Counter = field(default_factory=Counter)  # reason -> count
    category_ids: list[int] = field(default_factory=list)  # COCO ids of the classes, in order
    explicit: bool = True  # splits given by the data; False: made by make_split

    def to_json(self) -> dict[str, Any]:
        return {
            "form": self.form,
            "classes": self.classes,
            "splits": {s: [asdict(i) for i in items] for s, items in self.splits.items()},
            "problems": [list(p) for p in self.problems],
            "skipped": dict(self.skipped),
            "category_ids": self.category_ids,
            "explicit": self.explicit,
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> Found:
        return Found(
            form=data["form"],
            classes=list(data["classes"]),
            splits={s: [ImageBoxes.from_json(i) for i in items] for s, items in data["splits"].items()},
            problems=[(str(a), str(b)) for a, b in data["problems"]],
            skipped=Counter(data["skipped"]),
            category_ids=list(data.get("category_ids") or []),
            explicit=bool(data.get("explicit", True)),
        )

    def note(self, where: Any, reason: str, detail: Any = "") -> None:
        """Name a skipped annotation or image: counted under ``reason``, listed with ``detail``."""
        self.problems.append((str(where), f"{reason}: {detail}" if detail != "" else reason))
        self.skipped[reason] += 1


# -- EXIF orientation --------------------------------------------------------------
def upright_size(width: int, height: int, orientation: int) -> tuple[int, int]:
    return (height, width) if orientation in (5, 6, 7, 8) else (width, height)


def orient_point(x: float, y: float, width: int, height: int, orientation: int) -> tuple[float, float]:
    """Where the point ``(x, y)`` of the stored pixels (``width`` x ``height``) lands
    once ``PIL.ImageOps.exif_transpose`` has turned the image upright."""
    if orientation == 2:  # mirrored
        return width - x, y
    if orientation == 3:  # turned 180 degrees
        return width - x, height - y
    if orientation == 4:  # flipped upside down
        return x, height - y
    if orientation == 5:  # transposed
        return y, x
    if orientation == 6:  # turned 90 degrees clockwise to be upright
        return height - y, x
    if orientation == 7:  # transversed
        return height - y, width - x
    if orientation == 8:  # turned 90 degrees anticlockwise to be upright
        return y, width - x
    return x, y


def orient_box(box: Sequence[float], width: int, height: int, orientation: int) -> list[float]:
    """A box ``[x1, y1, x2, y2]`` of the stored pixels, in the upright image's pixels."""
    if orientation in (0, 1):
        return [float(v) for v in box]
    x1, y1, x2, y2 = box
    a = orient_point(x1, y1, width, height, orientation)
    b = orient_point(x2, y2, width, height, orientation)
    return [min(a[0], b[0]), min(a[1], b[1]), max(a[0], b[0]), max(a[1], b[1])]


def image_header(path: Path) -> tuple[int, int, int]:
    """(stored width, stored height, EXIF orientation) from the file's header; OSError if unreadable."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            width, height = image.size
            try:
                orientation = int(image.getexif().get(EXIF_ORIENTATION, 1) or 1)
            except Exception:  # noqa: BLE001 - a broken EXIF block is no orientation
                orientation = 1
    except (UnidentifiedImageError, ValueError) as exc:
        raise OSError(str(exc)) from exc
    return width, height, orientation if 1 <= orientation <= 8 else 1


def check_box(box: list[float], width: int, height: int) -> tuple[list[float] | None, str]:
    """(the box to keep or None, the reason it was named or ""): degenerate and
    outside boxes are dropped; a box partly outside is clipped to the image."""
    x1, y1, x2, y2 = box
    if not (x2 > x1 and y2 > y1):
        return None, EMPTY_BOX
    if x2 <= 0 or y2 <= 0 or x1 >= width or y1 >= height:
        return None, OUTSIDE
    if x1 < -EDGE_SLACK or y1 < -EDGE_SLACK or x2 > width + EDGE_SLACK or y2 > height + EDGE_SLACK:
        clipped = [max(0.0, x1), max(0.0, y1), min(float(width), x2), min(float(height), y2)]
        return clipped, PARTLY_OUTSIDE
    return [max(0.0, x1), max(0.0, y1), min(float(width), x2), min(float(height), y2)], ""


def _is_file(path: Path) -> bool:
    """Whether ``path`` is a file; False, not an error, for a name no file can have (too long, a NUL)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _shown(path: Path) -> str:
    """A path named in a message: as it is, or quoted and escaped when it holds a newline or another control character."""
    text = str(path)
    return text if text.isprintable() else repr(text)


def _read_text(path: Path) -> str:
    """A list file's text (classes.txt, a YOLO image list, a VOC split list); DataError naming it otherwise."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot be read as UTF-8 text ({' '.join(str(exc).split())})") from None


def _is_id(value: Any) -> bool:
    """Whether a COCO id can be one: a number or a string (a list or an object cannot key anything)."""
    return isinstance(value, (int, str)) and not isinstance(value, bool)


class _Images:
    """Image headers read once each, with the reason a file cannot be used."""

    def __init__(self, found: Found) -> None:
        self.found = found

    def header(self, path: Path, where: Any) -> tuple[int, int, int] | None:
        if not _is_file(path):
            self.found.note(where, MISSING_IMAGE, path)
            return None
        try:
            return image_header(path)
        except OSError as exc:
            self.found.note(where, UNREADABLE_IMAGE, exc)
            return None


def _add_box(found: Found, image: ImageBoxes, box: list[float], label: int, crowd: bool, where: Any,
             stored: tuple[int, int] | None) -> None:
    """Check one box (in stored pixels when ``stored`` is given, else upright) and keep it if usable."""
    if stored is not None:
        width, height = stored
        if not (box[2] > box[0] and box[3] > box[1]):
            found.note(where, EMPTY_BOX)
            return
        kept, reason = check_box(box, width, height)
        if kept is not None:
            kept = orient_box(kept, width, height, image.orientation)
    else:
        kept, reason = check_box(box, image.width, image.height)
    if reason:
        found.note(where, reason)
    if kept is None:
        return
    image.boxes.append([round(v, 3) for v in kept])
    image.labels.append(label)
    image.crowd.append(bool(crowd))


# -- COCO --------------------------------------------------------------------------------
def read_coco_file(path: Path, found: Found, image_root: Path | None = None,
                   classes: list[str] | None = None, category_ids: list[int] | None = None) -> list[ImageBoxes]:
    """The images and boxes of one COCO instances file (``bbox`` is ``[x, y, w, h]``)."""
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: not a readable COCO JSON file ({exc})") from None
    except RecursionError:  # arrays or objects nested thousands deep
        raise DataError(f"{path}: not a readable COCO JSON file (nested too deeply)") from None
    if not isinstance(data, dict) or not isinstance(data.get("images"), list) or not isinstance(data.get("annotations", []), list):
        raise DataError(f"{path}: not a COCO instances file (it needs 'images', 'annotations' and 'categories' lists)")
    categories = data.get("categories") or []
    try:
        cats = sorted((int(c["id"]), str(c["name"])) for c in categories)
    except (KeyError, TypeError, ValueError, OverflowError):
        raise DataError(f"{path}: every category needs an id and a name") from None
    if classes is not None and category_ids is not None and not found.classes:
        found.classes[:] = classes
        found.category_ids[:] = category_ids
    if not found.classes:
        found.classes[:] = [name for _, name in cats]
        found.category_ids[:] = [cid for cid, _ in cats]
    index_of = {cid: found.classes.index(name) for cid, name in cats if name in found.classes}
    roots = [r for r in (image_root, path.parent, path.parent / "images") if r is not None]
    headers = _Images(found)
    images: dict[Any, ImageBoxes] = {}
    listed = {entry.get("id") for entry in data["images"] if isinstance(entry, dict) and _is_id(entry.get("id"))}
    stated: dict[Any, tuple[int, int] | None] = {}
    for n, entry in enumerate(data["images"]):
        ident = entry.get("id", n) if isinstance(entry, dict) else n
        where = _JsonWhere(path, text, "images", ident)
        if not isinstance(entry, dict) or "file_name" not in entry or not _is_id(entry.get("id")):
            found.note(where, BAD_LINE)
            continue
        name = str(entry["file_name"])
        file = next((r / name for r in roots if _is_file(r / name)), roots[0] / name)
        header = headers.header(file, where)
        if header is None:
            continue
        width, height, orientation = header
        upright = upright_size(width, height, orientation)
        said = (entry.get("width"), entry.get("height"))
        drawn_upright = orientation != 1 and said == upright and upright != (width, height)
        images[entry["id"]] = ImageBoxes(str(file), upright[0], upright[1], orientation=1 if drawn_upright else orientation)
        stated[entry["id"]] = None if drawn_upright else (width, height)
    for n, ann in enumerate(data.get("annotations", [])):
        ident = ann.get("id", n) if isinstance(ann, dict) else n
        where = _JsonWhere(path, text, "annotations", ident)
        try:
            image_id, cid = ann["image_id"], int(ann["category_id"])
            x, y, w, h = (float(v) for v in ann["bbox"])
        except (KeyError, TypeError, ValueError, OverflowError):
            found.note(where, BAD_LINE)
            continue
        if not _is_id(image_id):
            found.note(where, BAD_LINE)
            continue
        if image_id not in images:
            if image_id not in listed:  # an image found missing was named once, not for each of its boxes
                found.note(where, UNKNOWN_IMAGE, image_id)
            continue
        if cid not in index_of:
            found.note(where, UNKNOWN_CLASS, cid)
            continue
        image = images[image_id]
        _add_box(found, image, [x, y, x + w, y + h], index_of[cid], bool(ann.get("iscrowd", 0)), where, stated[image_id])
    return list(images.values())


def _json_line(text: str, section: str, ident: Any) -> int:
    """The line of ``"id": ident`` in the JSON ``text``'s ``section`` list (0 if not found):
    a COCO file's faults named by line, as the other formats' are."""
    import re

    start = text.find(f'"{section}"')
    match = re.compile(r'"id"\s*:\s*' + re.escape(json.dumps(ident)) + r"\b").search(text, max(0, start))
    return text.count("\n", 0, match.start()) + 1 if match else 0


class _JsonWhere:
    """``file:line (annotation id N)``, the line looked up only when a fault is named."""

    def __init__(self, path: Path, text: str, section: str, ident: Any) -> None:
        self.path, self.text, self.section, self.ident = path, text, section, ident

    def __str__(self) -> str:
        kind = "image" if self.section == "images" else "annotation"
        return f"{self.path}:{_json_line(self.text, self.section, self.ident)} ({kind} id {self.ident})"


def _coco_split_files(root: Path) -> dict[str, Path]:
    files: dict[str, Path] = {}
    for split, aliases in SPLIT_ALIASES.items():
        for alias in aliases:
            for candidate in (root / f"{alias}.json", root / "annotations" / f"{alias}.json",
                              root / "annotations" / f"instances_{alias}.json", root / alias / "_annotations.coco.json"):
                if candidate.is_file() and split not in files:
                    files[split] = candidate
    return files


def read_coco(root: Path, found: Found) -> None:
    if root.is_file():
        found.splits["all"] = read_coco_file(root, found)
        return
    files = _coco_split_files(root)
    if not files:
        single = sorted(root.glob("*.json")) or sorted((root / "annotations").glob("*.json"))
        if len(single) != 1:
            raise DataError(f"{root}: found no train.json/val.json and not one single COCO file")
        found.splits["all"] = read_coco_file(single[0], found)
        return
    for split, file in files.items():
        folder = next((root / a for a in SPLIT_ALIASES[split] if (root / a).is_dir()), None)
        found.splits[split] = read_coco_file(file, found, image_root=folder)


# -- YOLO --------------------------------------------------------------------------------
def _yolo_names(value: Any, where: Path) -> list[str]:
    if isinstance(value, dict):
        try:
            indexed = {int(k): str(v) for k, v in value.items()}
        except (TypeError, ValueError, OverflowError):
            raise DataError(f"{where}: names must map class numbers to names") from None
        if sorted(indexed) != list(range(len(indexed))):
            raise DataError(f"{where}: names must number the classes 0, 1, 2, ... without gaps")
        return [indexed[i] for i in range(len(indexed))]
    if isinstance(value, list) and value:
        return [str(v) for v in value]
    raise DataError(f"{where}: 'names' must list the class names")


def _yolo_image_folders(root: Path, config: dict[str, Any], yaml_path: Path | None) -> dict[str, list[Path]]:
    base = root
    if yaml_path is not None and config.get("path"):
        base = Path(str(config["path"])).expanduser()
        if not base.is_absolute():
            base = (yaml_path.parent / base).resolve()
        if not base.is_dir():
            base = root
    folders: dict[str, list[Path]] = {}
    for split, aliases in SPLIT_ALIASES.items():
        value = config.get(split) if split in config else next((config[a] for a in aliases if a in config), None)
        if value:
            entries = value if isinstance(value, list) else [value]
            folders[split] = [p if p.is_absolute() else base / p for p in (Path(str(e)) for e in entries)]
            continue
        for alias in aliases:
            if (root / "images" / alias).is_dir():
                folders[split] = [root / "images" / alias]
                break
    if not folders and (root / "images").is_dir():
        folders["all"] = [root / "images"]
    return folders


def _label_file(image: Path) -> Path:
    """YOLO's rule: the label file's path is the image's with the last ``images`` folder named ``labels``."""
    parts = list(image.parts)
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] == "images":
            parts[i] = "labels"
            return Path(*parts).with_suffix(".txt")
    return image.with_suffix(".txt")


def _list_images(folder: Path) -> list[Path]:
    if _is_file(folder) and folder.suffix == ".txt":  # a list of image paths, one a line
        lines = _read_text(folder).splitlines()
        return [(folder.parent / line.strip()) for line in lines if line.strip()]
    try:
        is_dir = folder.is_dir()
    except (OSError, ValueError):  # a name no folder can have (too long)
        is_dir = False
    if not is_dir:
        raise DataError(f"image folder {_shown(folder)} does not exist")
    return sorted(p for p in folder.rglob("*") if p.suffix.lower() in IMAGE_EXTENSIONS and p.is_file())


def read_yolo_label_file(file: Path, image: ImageBoxes, stored: tuple[int, int], classes: list[str], found: Found) -> None:
    """``class cx cy w h`` a line, in fractions of the stored image (a polygon's points give its box)."""
    width, height = stored
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        found.note(str(file), BAD_LINE, exc)
        return
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        where = f"{file}:{number}"
        try:
            cls = int(fields[0])
            values = [float(v) for v in fields[1:]]
        except ValueError:
            found.note(where, BAD_LINE)
            continue
        if len(values) == 4:
            cx, cy, w, h = values
            box = [(cx - w / 2) * width, (cy - h / 2) * height, (cx + w / 2) * width, (cy + h / 2) * height]
        elif len(values) >= 6 and len(values) % 2 == 0:  # a segment: x1 y1 x2 y2 ...
            xs, ys = values[0::2], values[1::2]
            box = [min(xs) * width, min(ys) * height, max(xs) * width, max(ys) * height]
        else:
            found.note(where, BAD_LINE)
            continue
        if not 0 <= cls < len(classes):
            found.note(where, UNKNOWN_CLASS, cls)
            continue
        _add_box(found, image, box, cls, False, where, stored)


def read_yolo(root: Path, found: Found) -> None:
    import yaml

    yaml_path = next((root / n for n in ("data.yaml", "dataset.yaml", "data.yml") if (root / n).is_file()), None)
    if yaml_path is None and root.is_file() and root.suffix in (".yaml", ".yml"):
        yaml_path, root = root, root.parent
    config: dict[str, Any] = {}
    if yaml_path is not None:
        try:
            config = yaml.safe_load(yaml_path.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:  # PyYAML's messages span lines: one line here
            raise DataError(f"{yaml_path}: not readable YAML ({' '.join(str(exc).split())})") from None
        except RecursionError:  # lists or mappings nested hundreds deep
            raise DataError(f"{yaml_path}: not readable YAML (nested too deeply)") from None
        if not isinstance(config, dict):
            raise DataError(f"{yaml_path}: expected a mapping with 'names'")
        found.classes[:] = _yolo_names(config.get("names"), yaml_path)
    else:
        names_file = next((root / n for n in ("classes.txt", "labels.txt") if (root / n).is_file()), None)
        if names_file is None:
            raise DataError(f"{root}: a YOLO folder needs a data.yaml with the class names (or classes.txt)")
        found.classes[:] = [n.strip() for n in _read_text(names_file).splitlines() if n.strip()]
    headers = _Images(found)
    for split, folders in _yolo_image_folders(root, config, yaml_path).items():
        items: list[ImageBoxes] = []
        for folder in folders:
            for path in _list_images(folder):
                header = headers.header(path, str(path))
                if header is None:
                    continue
                width, height, orientation = header
                upright = upright_size(width, height, orientation)
                image = ImageBoxes(str(path), upright[0], upright[1], orientation=orientation)
                label_file = _label_file(path)
                if _is_file(label_file):
                    read_yolo_label_file(label_file, image, (width, height), found.classes, found)
                items.append(image)
        found.splits[split] = items


# -- Pascal VOC ---------------------------------------------------------------------------
def parse_voc_file(path: Path) -> dict[str, Any]:
    """A VOC annotation as ``{"filename", "size": (w, h) or None, "objects": [{... "line"}]}``.

    Parsed with defusedxml's SAX reader: entity declarations and external
    references are refused, and each object keeps the line it starts on.
    """
    from xml.sax import SAXException
    from xml.sax.handler import ContentHandler

    import defusedxml.sax
    from defusedxml import DefusedXmlException

    class Handler(ContentHandler):
        def __init__(self) -> None:
            super().__init__()
            self.stack: list[str] = []
            self.text: list[str] = []
            self.out: dict[str, Any] = {"filename": "", "size": {}, "objects": []}
            self.current: dict[str, Any] | None = None

        def startElement(self, name, attrs):
            self.stack.append(name)
            self.text = []
            if name == "object":
                self.current = {"line": self._locator.getLineNumber() if self._locator else 0, "box": {}}

        def characters(self, content):
            self.text.append(content)

        def endElement(self, name):
            value = "".join(self.text).strip()
            parent = self.stack[-2] if len(self.stack) > 1 else ""
            if name == "object" and self.current is not None:
                self.out["objects"].append(self.current)
                self.current = None
            elif self.current is not None and parent == "bndbox":
                self.current["box"][name] = value
            elif self.current is not None and parent == "object" and name in ("name", "difficult"):
                self.current[name] = value
            elif parent == "size" and name in ("width", "height"):
                self.out["size"][name] = value
            elif parent == "annotation" and name == "filename":
                self.out["filename"] = value
            self.stack.pop()
            self.text = []

    handler = Handler()
    try:
        defusedxml.sax.parse(str(path), handler)
    except (SAXException, DefusedXmlException, OSError, ValueError) as exc:
        raise ValueError(str(exc)) from None
    return handler.out


def read_voc(root: Path, found: Found) -> None:
    ann_dir = root / "Annotations" if (root / "Annotations").is_dir() else root
    img_dir = next((root / n for n in ("JPEGImages", "images") if (root / n).is_dir()), ann_dir)
    xml_files = sorted(ann_dir.glob("*.xml"))
    if not xml_files:
        raise DataError(f"{ann_dir}: no .xml annotation files")
    names_file = next((root / n for n in ("labels.txt", "classes.txt") if (root / n).is_file()), None)
    parsed: list[tuple[Path, dict[str, Any]]] = []
    for file in xml_files:
        try:
            parsed.append((file, parse_voc_file(file)))
        except ValueError as exc:
            found.note(str(file), BAD_LINE, exc)
    if names_file is not None:
        found.classes[:] = [n.strip() for n in _read_text(names_file).splitlines() if n.strip()]
    else:
        found.classes[:] = sorted({o.get("name", "") for _, d in parsed for o in d["objects"]} - {""})
    by_stem: dict[str, ImageBoxes] = {}
    headers = _Images(found)
    for file, data in parsed:
        name = data["filename"] or file.stem
        image_path = img_dir / name
        if not _is_file(image_path):
            beside = (img_dir / (file.stem + e) for e in (".jpg", ".png", ".jpeg"))
            image_path = next((p for p in beside if _is_file(p)), image_path)
        header = headers.header(image_path, str(file))
        if header is None:
            continue
        width, height, orientation = header
        upright = upright_size(width, height, orientation)
        try:
            said = (int(float(data["size"]["width"])), int(float(data["size"]["height"])))
        except (KeyError, ValueError, OverflowError):
            said = None
        drawn_upright = orientation != 1 and said == upright and upright != (width, height)
        image = ImageBoxes(str(image_path), upright[0], upright[1], orientation=1 if drawn_upright else orientation)
        stored = None if drawn_upright else (width, height)
        for obj in data["objects"]:
            where = f"{file}:{obj['line']}"
            label = obj.get("name", "")
            try:
                b = obj["box"]
                # VOC counts pixels from 1, both corners inclusive
                box = [float(b["xmin"]) - 1, float(b["ymin"]) - 1, float(b["xmax"]), float(b["ymax"])]
            except (KeyError, ValueError):
                found.note(where, BAD_LINE)
                continue
            if label not in found.classes:
                found.note(where, UNKNOWN_CLASS, label)
                continue
            _add_box(found, image, box, found.classes.index(label), obj.get("difficult", "0") == "1", where, stored)
        by_stem[file.stem] = image
    sets = root / "ImageSets" / "Main"
    listed = {s: sets / f"{s}.txt" for s in SPLITS if (sets / f"{s}.txt").is_file()}
    if listed:
        for split, file in listed.items():
            stems = [line.split()[0] for line in _read_text(file).splitlines() if line.strip()]
            found.splits[split] = [by_stem[s] for s in stems if s in by_stem]
    else:
        found.splits["all"] = list(by_stem.values())


# -- finding the format, splitting, caching ------------------------------------------------
def detect_format(root: Path) -> str:
    if root.is_file():
        if root.suffix == ".json":
            return "coco"
        if root.suffix in (".yaml", ".yml"):
            return "yolo"
        raise DataError(f"{root}: give a folder, a COCO .json file or a YOLO data.yaml")
    if not root.is_dir():
        raise DataError(f"data {root} does not exist")
    if any((root / n).is_file() for n in ("data.yaml", "dataset.yaml", "data.yml")) or (root / "labels").is_dir():
        return "yolo"
    if (root / "Annotations").is_dir() or any(root.glob("*.xml")):
        return "voc"
    if _coco_split_files(root) or any(root.glob("*.json")) or any((root / "annotations").glob("*.json")):
        return "coco"
    raise DataError(
        f"{root}: no detection annotations found: expected COCO (train.json beside train/), "
        "YOLO (data.yaml, images/<split>/, labels/<split>/) or Pascal VOC (Annotations/*.xml)"
    )


def make_split(found: Found, val_fraction: float, seed: int) -> None:
    """Split the ``all`` images into train and val, or add val to data with only train."""
    pool_name = "all" if "all" in found.splits else ("train" if "val" not in found.splits else "")
    if not pool_name:
        return
    pool = found.splits.pop(pool_name)
    order = sorted(range(len(pool)), key=lambda i: pool[i].path)
    random.Random(seed).shuffle(order)
    n_val = max(1, round(len(pool) * val_fraction)) if len(pool) > 1 else 0
    val = sorted(order[:n_val])
    val_set = set(val)
    found.splits = {"train": [pool[i] for i in range(len(pool)) if i not in val_set], "val": [pool[i] for i in val],
                    **{k: v for k, v in found.splits.items() if k not in ("train", "val")}}  # fmt: skip
    found.explicit = False


def fingerprint(root: Path, form: str) -> str:
    """A digest of every file under the data (path, size, modification time) and the reader."""
    digest = hashlib.sha256(f"{READER_VERSION}\0{form}\0{root.resolve()}".encode())
    files: Iterable[Path]
    if root.is_file():
        files = [root, *(p for p in root.parent.rglob("*") if p.is_file())]
    else:
        files = (p for p in root.rglob("*") if p.is_file())
    for path in sorted(files):
        stat = path.stat()
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:32]


def read_detection_data(data_path: str, form: str = "auto", *, cache: Path | None = None,
                        should_stop: Callable[[], bool] | None = None, log: Callable[[str], None] | None = None) -> tuple[Found, bool]:
    """(what the data holds, whether it came from the cache), before any split is made.

    With ``cache`` (a folder), the parsed annotations are kept there under
    the data's fingerprint and read back while no file of the data changed.
    """
    root = Path(data_path).expanduser()
    form = detect_format(root) if form in ("", "auto") else form
    if form not in FORMATS:
        raise DataError(f"format {form!r}: expected auto, {', '.join(FORMATS)}")
    if should_stop is not None and should_stop():
        raise StopRequested()
    key = fingerprint(root, form) if cache is not None else ""
    entry = cache / f"{key}.json" if cache is not None else None
    if entry is not None and entry.is_file():
        try:
            found = Found.from_json(json.loads(entry.read_text(encoding="utf-8")))
            os.utime(entry)
            return found, True
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            pass  # a damaged entry is read again
    found = Found(form=form, classes=[], splits={})
    {"coco": read_coco, "yolo": read_yolo, "voc": read_voc}[form](root, found)
    if not found.classes:
        raise DataError(f"{root}: no classes found in the {form.upper()} annotations")
    if not any(found.splits.values()):
        raise DataError(f"{root}: no usable images in the {form.upper()} data")
    if entry is not None:
        try:
            atomic_write_text(entry, json.dumps(found.to_json()))
        except OSError as exc:
            if log is not None:
                log(f"annotation cache not written: {exc}")
    return found, False
