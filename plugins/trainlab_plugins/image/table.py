"""Images listed in a table: a ``.csv``, ``.tsv`` or ``.jsonl`` file, or a
folder with ``train.*`` and ``val.*`` (optionally ``test.*``).

Each row names an image (``image_column``, a path relative to the table's
folder, or absolute) and its label cell (``label_column``), which the task's
family reads (``trainlab_plugins.image.labels``).  No torch here.

What stops reading is a ``DataError`` naming the file and line (a missing
column with the columns that exist, a malformed row, bytes that are not
UTF-8).  What only loses one row is skipped and counted, never fatal: a row
without an image path, a listed file that does not exist or is not a
readable image; the examples kept name the table and line.
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from trainlab import DataError, StopRequested
from trainlab_plugins.image.folder import ImageRecord, ScanResult, read_header

TABLE_SUFFIXES = (".csv", ".tsv", ".jsonl")
SPLIT_FILES = {"train": ("train",), "val": ("val", "valid", "validation", "dev"), "test": ("test",)}
MISSING_FILE = "listed image does not exist"
NOT_A_FILE = "listed path is not a regular file (a folder, a device or a FIFO)"
NO_PATH = "row without an image path"


@dataclass(frozen=True)
class ListedImage:
    """One usable row: the image's header, its raw label cell, and where it was listed."""

    record: ImageRecord
    value: Any  # the label cell as read: a string (CSV/TSV) or any JSON value
    where: str  # "train.csv line 12"


def is_table(path: Path) -> bool:
    """Whether ``path`` is image data in table form (a table file, or a folder with train.*)."""
    if path.is_file():
        return path.suffix.lower() in TABLE_SUFFIXES
    return path.is_dir() and bool(_stem_files(path, "train"))


def _stem_files(folder: Path, stem: str) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_file() and p.stem.lower() == stem and p.suffix.lower() in TABLE_SUFFIXES)
    except OSError:
        return []


def find_table_files(folder: Path) -> dict[str, Path]:
    """``train.*``, ``val.*`` and ``test.*`` of a folder; DataError if one is ambiguous."""
    found: dict[str, Path] = {}
    for split, stems in SPLIT_FILES.items():
        for stem in stems:
            files = _stem_files(folder, stem)
            if len(files) > 1:
                raise DataError(f"{folder}: both {files[0].name} and {files[1].name}; keep one {stem} table")
            if files:
                found[split] = files[0]
                break
    return found


def _decode(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DataError(f"{path}: line {line}: bytes that are not UTF-8 ({exc.reason}); save the table as UTF-8") from None


def _missing_column(path: Path, name: str, option: str, existing: list[str]) -> DataError:
    shown = ", ".join(repr(c) for c in existing) or "none"
    return DataError(f"{path}: no column {name!r} (columns: {shown}); choose one with --set {option}=NAME")


def _csv_rows(path: Path, text: str, image_column: str, label_column: str) -> Iterator[tuple[int, Any, Any]]:
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = next(reader, None)
        while header is not None and not any(cell.strip() for cell in header):
            header = next(reader, None)
        if header is None:
            raise DataError(f"{path}: the table is empty")
        header = [cell.strip() for cell in header]
        for name, option in ((image_column, "image_column"), (label_column, "label_column")):
            if name not in header:
                raise _missing_column(path, name, option, header)
        image_at, label_at = header.index(image_column), header.index(label_column)
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            if len(row) <= max(image_at, label_at):
                raise DataError(f"{path}: line {reader.line_num}: {len(row)} fields where the header has {len(header)}")
            yield reader.line_num, row[image_at], row[label_at]
    except csv.Error as exc:
        raise DataError(f"{path}: line {reader.line_num}: malformed {path.suffix[1:].upper()} ({exc})") from None


def _jsonl_rows(path: Path, text: str, image_column: str, label_column: str) -> Iterator[tuple[int, Any, Any]]:
    first = True
    for line, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError as exc:
            raise DataError(f"{path}: line {line}: not valid JSON ({getattr(exc, 'msg', exc)})") from None
        except RecursionError:  # arrays or objects nested thousands deep
            raise DataError(f"{path}: line {line}: JSON nested too deeply to read") from None
        if not isinstance(record, dict):
            raise DataError(f'{path}: line {line}: expected a JSON object like {{"{image_column}": ..., "{label_column}": ...}}')
        if first:
            for name, option in ((image_column, "image_column"), (label_column, "label_column")):
                if name not in record:
                    raise _missing_column(path, name, option, list(record))
            first = False
        yield line, record.get(image_column), record.get(label_column)
    if first:
        raise DataError(f"{path}: the table is empty")


def _resolve(base: Path, cell: Any) -> str:
    text = "" if cell is None else str(cell).strip()
    if not text:
        return ""
    path = Path(text)
    try:
        path = path.expanduser()
    except (RuntimeError, ValueError):  # an unknown ~user, or a NUL in the name: no such file, counted as missing
        pass
    return str(path if path.is_absolute() else base / path)


def _path_problem(image: str) -> str:
    """Why a listed path cannot be an image file ("" when it can): checked by ``stat``, never opened,
    since opening a FIFO waits for a writer and a device such as /dev/zero never ends."""
    try:
        mode = os.stat(image).st_mode
    except (OSError, ValueError):  # ValueError: a NUL or a lone surrogate, which no file name holds
        return MISSING_FILE
    return "" if stat.S_ISREG(mode) else NOT_A_FILE


def read_table(
    path: Path,
    image_column: str,
    label_column: str,
    result: ScanResult,
    should_stop: Callable[[], bool] | None = None,
    threads: int = 8,
) -> list[ListedImage]:
    """The usable rows of one table, images checked by their headers only.

    Skipped rows go into ``result`` (counted by reason; examples name the
    table, the line and the file).
    """
    path = Path(path)
    if path.suffix.lower() not in TABLE_SUFFIXES:
        raise DataError(f"{path}: unsupported table type {path.suffix or '(none)'}; use .csv, .tsv or .jsonl")
    text = _decode(path)
    if not text.strip():
        raise DataError(f"{path}: the table is empty")
    reader = _jsonl_rows if path.suffix.lower() == ".jsonl" else _csv_rows
    base = path.parent
    listed: list[tuple[str, Any, str]] = []
    for line, image_cell, label_cell in reader(path, text, image_column, label_column):
        where = f"{path.name} line {line}"
        image = _resolve(base, image_cell)
        problem = _path_problem(image) if image else NO_PATH
        if problem == NO_PATH:
            result.skip(where, NO_PATH)
        elif problem:
            result.skip(f"{where}: {image}", problem)
        else:
            listed.append((image, label_cell, where))
    stop = should_stop or (lambda: False)
    rows: list[ListedImage] = []
    if listed:
        pool = ThreadPoolExecutor(max_workers=max(1, threads))
        try:
            for (image, value, where), header in zip(listed, pool.map(read_header, (p for p, _, _ in listed))):
                if stop():
                    raise StopRequested(f"the check of the images listed in {path} was stopped on request")
                if isinstance(header, str):
                    result.skip(f"{where}: {image}", header)
                else:
                    rows.append(ListedImage(ImageRecord(image, "", *header), value, where))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    return rows


def no_usable_rows(path: Path, result: ScanResult) -> DataError:
    """The error for a table none of whose rows is usable, naming the first problem."""
    if not result.skipped:
        return DataError(f"{path}: the table lists no images")
    where, reason = result.skipped_examples[0] if result.skipped_examples else ("", "")
    where = where if where.isprintable() else repr(where)  # a listed path with a newline: still one line
    hint = f" (paths are relative to {path.parent}, or absolute)" if reason == MISSING_FILE else ""
    counts = ", ".join(f"{n} {why}" for why, n in result.skipped.most_common())
    return DataError(f"{path}: no usable image ({counts}); first: {where}: {reason}{hint}")
