"""Scanning a folder of class folders and splitting it (no torch here).

The scan opens every candidate file with PIL, which parses the header only
(format, size, mode) and leaves the pixels on disk, so 100,000 files take
seconds, not minutes.  Header reads run on a few threads because on network
disks the time goes into waiting for the file system, not the GIL.

Nothing found is dropped without a word: files that are not images, class
folders whose names cannot be labels, and folders reached a second time
through a symlink (each folder is entered once, by device and inode, so a
``self -> .`` link neither repeats images nor loops) are counted as skipped.
A symlink never carries one split's images into another: a link to the
data folder, a folder above it, or into another split's folder (a folder
or a single file) is skipped, and each one is named in a note; a link out
of the data folder is followed, and named too.  The scan asks ``should_stop`` between folders and files and raises
``StopRequested`` when told to.
"""

from __future__ import annotations

import os
import random
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from trainlab import DataError, StopRequested

# Extensions PIL reads out of the box; everything else in a class folder is
# counted as "not an image" rather than opened.
IMAGE_EXTENSIONS = frozenset(
    {
        ".jpg", ".jpeg", ".jpe", ".jfif", ".png", ".bmp", ".dib", ".gif", ".tif", ".tiff",
        ".webp", ".ppm", ".pgm", ".pbm", ".pnm", ".tga", ".ico",
    }
)  # fmt: skip
SPLIT_ALIASES = {"train": ("train", "training"), "val": ("val", "valid", "validation"), "test": ("test", "testing")}
SKIP_EXAMPLES = 20
SEEN_BEFORE = "folder reached again through a symlink (a loop or a second link)"
TO_DATA_ROOT = "symlink to the data folder or a folder above it"
INTO_SPLIT = "symlink into the {split} split"


@dataclass(frozen=True)
class ImageRecord:
    path: str
    label: str
    width: int
    height: int
    mode: str
    format: str


@dataclass
class ScanResult:
    """Images found under one folder, plus what was skipped and why."""

    records: list[ImageRecord] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)
    skipped_examples: list[tuple[str, str]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)  # class folders, sorted
    refused_folders: list[tuple[str, str]] = field(default_factory=list)  # (folder name, why it is no class)

    links: list[tuple[str, str]] = field(default_factory=list)  # (symlink, why skipped or "outside")

    def skip(self, path: str, reason: str) -> None:
        self.skipped[reason] += 1
        if len(self.skipped_examples) < SKIP_EXAMPLES:
            self.skipped_examples.append((path, reason))


@dataclass(frozen=True)
class Fence:
    """Where a scan's symlinks may not lead: the data folder (and above) and the other splits' folders.

    Paths are real (symlinks resolved); ``own`` is the split being scanned.
    """

    root: str
    splits: tuple[tuple[str, str], ...] = ()
    own: str = ""

    @classmethod
    def around(cls, root: Path, splits: dict[str, Path], own: str = "") -> "Fence":
        return cls(os.path.realpath(root), tuple((name, os.path.realpath(folder)) for name, folder in splits.items()), own)

    def check(self, link: str, result: "ScanResult") -> bool:
        """Whether the symlink ``link`` may be followed; a refused one is skipped and kept by name."""
        real = os.path.realpath(link)
        for name, folder in self.splits:
            if name != self.own and _within(real, folder):
                reason = INTO_SPLIT.format(split=name)
                break
        else:
            if not _within(self.root, real):
                if not _within(real, self.root):
                    result.links.append((link, "outside"))
                return True
            reason = TO_DATA_ROOT
        result.skip(link, reason)
        result.links.append((link, reason))
        return False


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


@dataclass
class Splits:
    """The outcome of reading a dataset root: items per split, in label order."""

    label_names: list[str]
    items: dict[str, list[tuple[str, Any]]]  # split -> [(path, target)]: a class index here
    records: dict[str, list[ImageRecord]]
    skipped: Counter
    skipped_examples: list[tuple[str, str]]
    warnings: list[str]
    explicit: bool  # the splits came from the data (folders or tables), not from val_fraction
    form: str = "folders"  # "folders" (class folders) or "tables" (images listed in tables)


def shown_names(names: Iterable[str]) -> str:
    """Class names for a message: as they are, or quoted and escaped when one holds a
    newline or another unprintable character, so that the message stays on one line."""
    return ", ".join(name if name.isprintable() else repr(name) for name in names)


def _is_hidden(name: str) -> bool:
    return name.startswith(".") or name.startswith("__MACOSX")


def _label_problem(name: str) -> str | None:
    """Why a folder name cannot be a class label, or None."""
    if name.startswith(".."):
        return "starts with '..'"
    if any(sep and sep in name for sep in ("/", "\\", os.sep, os.altsep)):
        return "contains a path separator"
    return None


def _folder_key(path: str) -> tuple[int, int] | None:
    """(device, inode) of the folder ``path`` leads to, symlinks followed."""
    try:
        stat = os.stat(path)  # not DirEntry.stat(): it has no inode on Windows
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def _never() -> bool:
    return False


def _walk_files(
    folder: Path, visited: set[tuple[int, int]], result: ScanResult, should_stop: Callable[[], bool] = _never, fence: Fence | None = None
) -> Iterable[str]:
    """Every non-hidden file below ``folder``, in a stable order, each folder entered once."""
    stack = [str(folder)]
    while stack:
        if should_stop():
            raise StopRequested(f"the scan of {folder} was stopped on request")
        current = stack.pop()
        try:
            with os.scandir(current) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            result.skip(current, f"unreadable folder ({exc.strerror or type(exc).__name__})")
            continue
        subdirs = []
        for entry in entries:
            if _is_hidden(entry.name):
                continue
            try:
                if fence is not None and entry.is_symlink() and not fence.check(entry.path, result):
                    continue
                if entry.is_dir():
                    key = _folder_key(entry.path)
                    if key is None or key in visited:
                        result.skip(entry.path, SEEN_BEFORE if key else "unreadable folder")
                        continue
                    visited.add(key)
                    subdirs.append(entry.path)
                elif entry.is_file():
                    yield entry.path
            except OSError:
                continue
        stack.extend(reversed(subdirs))


TRUNCATED = "truncated image"  # the file ends before its image data does

# How each format's file ends when it is whole: JPEG's end-of-image marker, PNG's IEND chunk (with its CRC).
_ENDINGS = {"JPEG": (b"\xff\xd9", 2), "PNG": (b"IEND", 8)}
_TAIL_BYTES = 1024  # where the ending is looked for: some writers pad a little after it


def _cut_short(path: str, image: Any) -> bool:
    """Whether a JPEG or PNG file lacks its ending: a copy or download cut short.

    Only the file's last bytes are read; a file without its ending (data
    appended after it, by some cameras) is decoded whole to be sure, so that
    a readable image is never skipped.  Found here, a truncated image is
    named by the data check instead of being dropped from a batch in training.
    """
    ending = _ENDINGS.get(image.format or "")
    if ending is None:
        return False
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - _TAIL_BYTES))
            tail = handle.read()
    except OSError:
        return False
    if ending[0] in tail:
        return False
    try:
        image.load()  # the whole decode, for this rare file alone
    except (OSError, SyntaxError, ValueError):
        return True
    return False


def read_header(path: str) -> tuple[int, int, str, str] | str:
    """(width, height, mode, format) from the file's header, or the reason it is unusable."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as image:
                if _cut_short(path, image):
                    return TRUNCATED
                return image.width, image.height, image.mode, image.format or ""
    except UnidentifiedImageError:
        return "not a readable image"
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        return "too many pixels (decompression-bomb limit)"
    except OSError as exc:
        return f"unreadable ({exc.__class__.__name__})"
    except Exception as exc:  # noqa: BLE001 - a broken file must never stop the scan
        return f"unreadable ({exc.__class__.__name__}: {exc})"


def scan_class_folders(
    root: Path, threads: int = 8, should_stop: Callable[[], bool] | None = None, fence: Fence | None = None
) -> ScanResult:
    """Read ``root/<label>/**/<image>`` headers; files elsewhere are counted as skipped.

    ``should_stop``: asked between folders and files; when it returns True
    the scan raises StopRequested.  ``fence``: where symlinks may not lead
    (default: ``root`` and the folders above it).
    """
    stop = should_stop or _never
    fence = fence or Fence.around(root, {})
    result = ScanResult()
    candidates: list[tuple[str, str]] = []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as exc:
        raise DataError(f"cannot read the data folder {root}: {exc.strerror or exc}") from None
    visited = {key for key in [_folder_key(str(root))] if key}
    folders: list[tuple[os.DirEntry, str | None]] = []
    for entry in entries:
        problem = _label_problem(entry.name)
        if _is_hidden(entry.name) and problem is None:
            continue
        try:
            if entry.is_symlink() and not fence.check(entry.path, result):
                continue
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        if is_dir:
            folders.append((entry, problem))
        else:
            result.skip(entry.path, "not inside a class folder")
    # Every class folder is marked before any is walked, so that a link into
    # another class is not walked as this one; real folders before links, so
    # that a second link to a class never takes its images.
    classes = []
    for entry, problem in sorted(folders, key=lambda item: item[0].is_symlink()):
        key = _folder_key(entry.path)
        if key is None or key in visited:
            result.skip(entry.path, SEEN_BEFORE if key else "unreadable folder")
            continue
        visited.add(key)
        classes.append((entry, problem))
    for entry, problem in sorted(classes, key=lambda item: item[0].name):
        if problem:
            result.refused_folders.append((entry.name, problem))
        else:
            result.labels.append(entry.name)
        for path in _walk_files(Path(entry.path), visited, result, stop, fence):
            if problem:
                result.skip(path, f"in a class folder whose name {problem}")
            elif os.path.splitext(path)[1].lower() in IMAGE_EXTENSIONS:
                candidates.append((path, entry.name))
            else:
                result.skip(path, "not an image file")
    if candidates:
        pool = ThreadPoolExecutor(max_workers=max(1, threads))
        try:
            headers = pool.map(read_header, (p for p, _ in candidates))
            for (path, label), header in zip(candidates, headers):
                if stop():
                    raise StopRequested(f"the scan of {root} was stopped on request")
                if isinstance(header, str):
                    result.skip(path, header)
                else:
                    result.records.append(ImageRecord(path, label, *header))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)  # a stop must not wait for every header
    return result


def find_split_folders(root: Path) -> dict[str, Path]:
    """train/val/test sub-folders of ``root`` (case-insensitive, common aliases)."""
    try:
        names = {e.name.lower(): Path(e.path) for e in os.scandir(root) if e.is_dir()}
    except OSError:
        return {}
    found = {}
    for split, aliases in SPLIT_ALIASES.items():
        for alias in aliases:
            if alias in names:
                found[split] = names[alias]
                break
    return found


def stratified_split(
    records: Sequence[ImageRecord], label_names: Sequence[str], fraction: float, seed: int
) -> tuple[list[ImageRecord], list[ImageRecord], list[str]]:
    """Hold out ``fraction`` of each class (at least one image, never the only one)."""
    by_label: dict[str, list[ImageRecord]] = {name: [] for name in label_names}
    for record in records:
        by_label[record.label].append(record)
    train, val, notes = [], [], []
    rng = random.Random(seed)
    for label in label_names:
        group = sorted(by_label[label], key=lambda r: r.path)
        rng.shuffle(group)
        if len(group) == 1:
            notes.append(f"class {label!r} has a single image: it stays in training and is not validated")
            train += group
            continue
        n_val = min(len(group) - 1, max(1, round(len(group) * fraction)))
        val += group[:n_val]
        train += group[n_val:]
    return train, val, notes


def read_dataset(
    data_path: str,
    *,
    val_fraction: float,
    seed: int,
    label_names: Sequence[str] | None = None,
    whole: bool = False,
    should_stop: Callable[[], bool] | None = None,
) -> Splits:
    """Scan ``data_path`` and return its splits; DataError names what is wrong.

    ``label_names`` (a trained run's classes: resuming it, or evaluating it)
    fixes the classes and their order; the data may lack some of them but
    must not hold others.  ``whole`` (evaluating on other data): a plain
    folder of class folders becomes one ``val`` split, and of a folder with
    split folders only val/ and test/ are read.  ``should_stop``: see
    ``scan_class_folders``.
    """
    root = Path(data_path).expanduser()
    if not root.exists():
        raise DataError(f"data folder {root} does not exist")
    if not root.is_dir():
        raise DataError(f"data path {root} is a file; image classification needs a folder of class folders")
    folders = find_split_folders(root)
    if whole and ("val" in folders or "test" in folders):
        folders.pop("train", None)  # evaluation reads the held-out splits only
    elif whole and "train" in folders:
        folders = {"val": folders["train"]}
    elif folders and "train" not in folders:
        raise DataError(
            f"{root} has {'/'.join(sorted(f.name for f in folders.values()))} but no train/ folder; "
            "add train/ (with one sub-folder per class) or use a plain folder of class folders"
        )
    every_split = find_split_folders(root)  # evaluation reads fewer, but no link may reach any
    scans = {
        split: scan_class_folders(folder, should_stop=should_stop, fence=Fence.around(root, every_split, split))
        for split, folder in folders.items()
    }
    if not folders:
        scans["val" if whole else "all"] = scan_class_folders(root, should_stop=should_stop, fence=Fence.around(root, {}))
    skipped: Counter = Counter()
    examples: list[tuple[str, str]] = []
    notes: list[str] = []
    for split, scan in scans.items():
        skipped.update(scan.skipped)
        examples += scan.skipped_examples
        if scan.refused_folders:
            named = ", ".join(f"{name!r} ({why})" for name, why in scan.refused_folders)
            notes.append(f"class folders in {folders.get(split, root)} not used, their names cannot be labels: {named}; rename them")
    notes += _link_notes(root, [link for scan in scans.values() for link in scan.links])

    # The classes: from the training data, or the run's own.
    source = scans.get("train", scans.get("all"))
    if label_names is None:
        where = folders.get("train", root)
        if not source.labels:
            raise DataError(
                f"no class folders in {where}: put each class's images in its own sub-folder ({where}/<label>/<image>)"
            )
        found = sorted({r.label for r in source.records})
        if not found:
            raise DataError(f"no usable images in the class folders of {where} ({_skip_text(skipped)})")
        if len(found) < 2:
            raise DataError(
                f"only one class with images in {where} ({found[0]!r}); classification needs at least two classes"
            )
        empty = sorted(set(source.labels) - set(found))
        if empty:
            notes.append(f"class folders without usable images are ignored: {', '.join(empty)}")
        names = found
    else:
        names = list(label_names)
        for split, scan in scans.items():
            unknown = sorted({r.label for r in scan.records} - set(names))
            if unknown:
                raise DataError(
                    f"{folders.get(split, root)} holds classes the model was not trained on: {shown_names(unknown)} "
                    f"(it knows {shown_names(names)})"
                )
        if not any(scan.records for scan in scans.values()):
            raise DataError(f"no usable images in {root} ({_skip_text(skipped)})")

    # A held-out split must not hold a class that training lacks.
    train_labels = {r.label for r in source.records} if source is not None else set(names)
    for split, scan in scans.items():
        if split in ("train", "all") or whole:
            continue
        extra = sorted({r.label for r in scan.records} - train_labels)
        if extra:
            raise DataError(
                f"{folders[split]} holds classes that {folders['train']} lacks: {shown_names(extra)}; "
                "add training images for them or remove those folders"
            )
        missing = sorted(train_labels - {r.label for r in scan.records})
        if missing and split == "val":
            notes.append(f"classes with no validation images in {folders[split]}: {', '.join(missing)}")

    records = {split: scan.records for split, scan in scans.items() if split != "all"}
    if source is not None and "val" not in records:
        train, val, split_notes = stratified_split(source.records, names, val_fraction, seed)
        records["train"], records["val"] = train, val
        notes += split_notes
        if folders:
            notes.append(f"no val/ folder in {root}: held out {val_fraction:g} of each class for validation")

    index = {name: i for i, name in enumerate(names)}
    items = {split: [(r.path, index[r.label]) for r in recs] for split, recs in records.items()}
    if not whole and not items.get("val"):
        raise DataError(f"no validation images in {root}: every class has a single image; add more images per class")
    return Splits(names, items, records, skipped, examples, notes, bool(folders))


def _link_notes(root: Path, links: list[tuple[str, str]]) -> list[str]:
    """One note for the symlinks skipped (each named, with why), one for those followed out of the data folder."""

    def name(link: str) -> str:
        try:
            return os.path.relpath(link, root)
        except ValueError:  # another drive on Windows
            return link

    notes = []
    refused = [(name(link), why) for link, why in links if why != "outside"]
    if refused:
        shown = ", ".join(f"{link} ({why.removeprefix('symlink ')})" for link, why in refused[:SKIP_EXAMPLES])
        more = f" and {len(refused) - SKIP_EXAMPLES} more" if len(refused) > SKIP_EXAMPLES else ""
        notes.append(f"skipped {len(refused)} symlink(s) that would take images from elsewhere in the data: {shown}{more}")
    outside = [f"{name(link)} -> {os.path.realpath(link)}" for link, why in links if why == "outside"]
    if outside:
        more = f" and {len(outside) - SKIP_EXAMPLES} more" if len(outside) > SKIP_EXAMPLES else ""
        notes.append(f"followed {len(outside)} symlink(s) to folders outside {root}: {', '.join(outside[:SKIP_EXAMPLES])}{more}")
    return notes


def _skip_text(skipped: Counter) -> str:
    if not skipped:
        return "no image files found"
    return "skipped: " + ", ".join(f"{n} {reason}" for reason, n in skipped.most_common())
