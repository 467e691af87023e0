"""Reading labelled text: CSV, TSV, JSONL files or a folder of splits.

No torch here.  Every problem that makes the data unusable is a
``DataError`` naming the file and line (and for a missing column, the columns
that exist); rows with empty text or no label are skipped and counted.

Every format has the same bound: a text (or any cell) longer than
``MAX_FIELD_CHARS`` is a ``DataError`` naming the file and line, as the CSV
reader's own field limit is, so no single row can make tokenising (or
anything after) take more memory than the plan shows.
"""

from __future__ import annotations

import csv
import io
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from trainlab import DataError
from trainlab_plugins.text.labels import ClassLabel, LabelKind

SUFFIXES = (".csv", ".tsv", ".jsonl")
SPLIT_NAMES = ("train", "val", "test")
# Other names people give the validation file; `val` wins when both exist.
VAL_ALIASES = ("validation", "valid", "dev")
MAX_SKIPPED_EXAMPLES = 20
# The csv module's default field limit, which every reader here applies: far
# beyond any max_length a text model reads, and a row of that size costs little.
MAX_FIELD_CHARS = 131_072
# A JSON line holding two fields at the limit, every character escaped
# (``\uXXXX`` pairs), fits in this; a longer one is refused before it is parsed.
MAX_JSON_LINE_CHARS = 16 * MAX_FIELD_CHARS
CLASS_LABEL = ClassLabel()


@dataclass(frozen=True)
class Columns:
    text: str = "text"
    label: str = "label"
    pair: str = ""  # empty: single texts


@dataclass
class TextSplit:
    """The usable rows of one split; ``lines`` are 1-based line numbers in ``path``.

    ``labels`` hold what the family's ``LabelKind`` read: class names,
    numbers, or tuples of label names.
    """

    name: str
    path: Path
    texts: list[str] = field(default_factory=list)
    pairs: list[str] | None = None
    labels: list[Any] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, name: str, indices: Sequence[int]) -> "TextSplit":
        return TextSplit(
            name=name,
            path=self.path,
            texts=[self.texts[i] for i in indices],
            pairs=None if self.pairs is None else [self.pairs[i] for i in indices],
            labels=[self.labels[i] for i in indices],
            lines=[self.lines[i] for i in indices],
        )


@dataclass
class Skipped:
    """Rows left out, by reason, with a few examples (``file:line``, reason)."""

    counts: Counter = field(default_factory=Counter)
    examples: list[tuple[str, str]] = field(default_factory=list)

    def add(self, path: Path, line: int, reason: str) -> None:
        self.counts[reason] += 1
        if len(self.examples) < MAX_SKIPPED_EXAMPLES:
            self.examples.append((f"{path.name}:{line}", reason))


@dataclass
class TextData:
    splits: dict[str, TextSplit]
    skipped: Skipped
    files: list[Path]
    split_from: str = ""  # the file val was carved out of, if any


# --------------------------------------------------------------------------
# Files


def decode(path: Path) -> str:
    """The file's text (UTF-8, BOM or not); DataError names the first bad line."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DataError(f"{path}: the file is UTF-16; save it as UTF-8")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        hint = "save it as UTF-8"
        try:
            data.decode("gb18030")
            hint = "it looks like GBK/GB18030 (common for Chinese spreadsheets); convert it with `iconv -f gb18030 -t utf-8`"
        except UnicodeDecodeError:
            pass
        raise DataError(f"{path}: line {line}: bytes that are not UTF-8 ({exc.reason}); {hint}") from None


def _missing_column(path: Path, kind: str, name: str, existing: Sequence[str]) -> DataError:
    option = {"text": "text_column", "label": "label_column", "pair": "text_pair_column"}[kind]
    shown = ", ".join(repr(c) for c in existing) or "none"
    return DataError(f"{path}: no column {name!r} (columns: {shown}); choose one with --set {option}=NAME")


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _csv_rows(path: Path, text: str, delimiter: str, columns: Columns) -> Iterator[tuple[int, Any, Any, Any]]:
    # newline="": only \n, \r and \r\n end a line, as the csv module expects
    # (str.splitlines would also break at U+2028 and friends inside a text).
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = next(reader, None)
        while header is not None and not any(cell.strip() for cell in header):
            header = next(reader, None)
    except csv.Error as exc:
        raise _csv_error(path, reader, exc, 1, 0) from None
    if header is None:
        raise DataError(f"{path}: the file is empty")
    header = [cell.strip() for cell in header]
    if delimiter == "," and columns.text not in header and len(header) == 1 and ";" in header[0]:
        # Spreadsheets in many locales write semicolon-separated "CSV".
        yield from _csv_rows(path, text, ";", columns)
        return
    index = {}
    for kind, name in (("text", columns.text), ("label", columns.label), ("pair", columns.pair)):
        if kind == "pair" and not name:
            continue
        if name not in header:
            raise _missing_column(path, kind, name, header)
        index[kind] = header.index(name)
    width = len(header)
    needed = max(index.values())
    rows = 0
    while True:
        start = reader.line_num + 1
        rows += 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise _csv_error(path, reader, exc, start, rows) from None
        if not row or not any(cell.strip() for cell in row):
            continue
        line = reader.line_num
        if len(row) > width and any(cell.strip() for cell in row[width:]):
            sep = "tab" if delimiter == "\t" else repr(delimiter)
            raise DataError(
                f"{path}: line {line}: {len(row)} fields where the header has {width}; "
                f"quote texts that contain the separator ({sep})"
            )
        if len(row) <= needed:
            raise DataError(f"{path}: line {line}: {len(row)} fields where the header has {width}")
        yield line, row[index["text"]], row[index["label"]], row[index["pair"]] if "pair" in index else None


def _csv_error(path: Path, reader: Any, exc: csv.Error, start: int, row: int) -> DataError:
    """The one-line DataError for a csv.Error; ``start``: the line the bad row begins on."""
    if "field larger than field limit" in str(exc):
        where = f"line {start} (row {row})" if row else f"line {start}"
        return DataError(
            f"{path}: {where}: a field longer than {csv.field_size_limit():,} characters, the CSV reader's limit; "
            "usually a quote (\") opened and never closed before it, else split that text or use a .jsonl file"
        )
    return DataError(f"{path}: line {reader.line_num}: malformed {path.suffix[1:].upper()} ({exc})")


def _too_long(path: Path, line: int, what: str, limit: int, reader: str = "JSONL") -> DataError:
    return DataError(
        f"{path}: line {line}: {what} longer than {limit:,} characters, the {reader} reader's limit; "
        "split that text or remove the row"
    )


def _json_lines(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    """(line number, decoded value) of each non-blank line of a JSON-lines text."""
    # split on "\n" only: a JSON string may hold U+2028, which splitlines breaks at;
    # found one at a time, so no list of every line is built beside the text
    line, start = 0, 0
    while start <= len(text):
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
        line += 1
        if end - start > MAX_JSON_LINE_CHARS:
            raise _too_long(path, line, "a line", MAX_JSON_LINE_CHARS)
        raw = text[start:end]
        start = end + 1
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise DataError(f"{path}: line {line}: not valid JSON ({getattr(exc, 'msg', exc)})") from None
        except RecursionError:  # arrays or objects nested thousands deep
            raise DataError(f"{path}: line {line}: JSON nested too deeply to read") from None
        yield line, value


def _bounded(value: Any, path: Path, line: int, name: str) -> Any:
    """``value`` as read, or DataError when it is (or, as JSON, holds) a text over ``MAX_FIELD_CHARS``."""
    if isinstance(value, str):
        size = len(value)
    elif isinstance(value, (list, dict)):
        size = len(json.dumps(value, ensure_ascii=False))
    else:
        return value
    if size > MAX_FIELD_CHARS:
        raise _too_long(path, line, f"field {name!r}", MAX_FIELD_CHARS)
    return value


def _jsonl_rows(path: Path, text: str, columns: Columns) -> Iterator[tuple[int, Any, Any, Any]]:
    seen_keys: list[str] | None = None
    for line, record in _json_lines(path, text):
        if not isinstance(record, dict):
            raise DataError(f"{path}: line {line}: expected a JSON object like {{\"text\": ..., \"label\": ...}}")
        if seen_keys is None:
            seen_keys = list(record)
            for kind, name in (("text", columns.text), ("label", columns.label), ("pair", columns.pair)):
                if name and name not in record:
                    raise _missing_column(path, kind, name, seen_keys)
        yield (
            line,
            _bounded(record.get(columns.text), path, line, columns.text),
            _bounded(record.get(columns.label), path, line, columns.label),
            _bounded(record.get(columns.pair), path, line, columns.pair) if columns.pair else None,
        )
    if seen_keys is None:
        raise DataError(f"{path}: the file is empty")


def read_file(path: Path, columns: Columns, split: str, skipped: Skipped, label_kind: LabelKind = CLASS_LABEL) -> TextSplit:
    """One file's usable rows, labels read by ``label_kind``; DataError for anything that stops reading."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    if path.suffix.lower() not in SUFFIXES:
        raise DataError(f"{path}: unsupported file type {path.suffix or '(none)'}; use .csv, .tsv or .jsonl")
    text = decode(path)
    if not text.strip():
        raise DataError(f"{path}: the file is empty")
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        rows = _jsonl_rows(path, text, columns)
    else:
        rows = _csv_rows(path, text, "\t" if suffix == ".tsv" else ",", columns)
    out = TextSplit(name=split, path=path, pairs=[] if columns.pair else None)
    for line, text_value, label_value, pair_value in rows:
        body = _cell_text(text_value)
        if not body.strip():
            skipped.add(path, line, "empty text")
            continue
        label = label_kind.parse(label_value, path, line)
        if label is None:
            skipped.add(path, line, "no label")
            continue
        out.texts.append(body)
        out.labels.append(label)
        out.lines.append(line)
        if out.pairs is not None:
            out.pairs.append(_cell_text(pair_value))
    if not out.texts:
        raise DataError(f"{path}: no usable rows (every row lacks text or a label)")
    return out


# --------------------------------------------------------------------------
# Splits


def find_split_files(folder: Path) -> dict[str, Path]:
    """``train.*``, ``val.*`` and ``test.*`` in a folder (DataError if ambiguous)."""
    found: dict[str, Path] = {}
    for split in SPLIT_NAMES:
        names = (split, *VAL_ALIASES) if split == "val" else (split,)
        for name in names:
            files = sorted(p for p in folder.iterdir() if p.is_file() and p.stem == name and p.suffix.lower() in SUFFIXES)
            if len(files) > 1:
                raise DataError(f"{folder}: both {files[0].name} and {files[1].name}; keep one {name} file")
            if files:
                found[split] = files[0]
                break
    if "train" not in found:
        present = ", ".join(sorted(p.name for p in folder.iterdir() if p.suffix.lower() in SUFFIXES)) or "none"
        raise DataError(
            f"{folder}: no train.csv, train.tsv or train.jsonl (text files here: {present}); "
            "a folder needs train.* and val.* (optionally test.*), or pass one file"
        )
    return found


def stratified_split(split: TextSplit, fraction: float, seed: int, strata: Sequence[Any] | None = None) -> tuple[TextSplit, TextSplit]:
    """Carve a validation split out of ``split``, per stratum (default: per label), reproducibly."""
    by_label: dict[Any, list[int]] = {}
    for i, label in enumerate(split.labels if strata is None else strata):
        by_label.setdefault(label, []).append(i)
    rng = random.Random(seed)
    train_idx: list[int] = []
    val_idx: list[int] = []
    for label in sorted(by_label):
        indices = by_label[label]
        rng.shuffle(indices)
        # a stratum with a single row stays in training
        take = 0 if len(indices) < 2 else min(len(indices) - 1, max(1, round(len(indices) * fraction)))
        val_idx += indices[:take]
        train_idx += indices[take:]
    return split.subset("train", sorted(train_idx)), split.subset("val", sorted(val_idx))


def read_data(
    path: str | Path, columns: Columns, val_fraction: float, seed: int, whole: bool = False, label_kind: LabelKind = CLASS_LABEL
) -> TextData:
    """All splits of a data path, labels read by ``label_kind``.

    A folder gives its ``train``/``val``/``test`` files (no ``val``: carved out
    of ``train``); a single file is split by ``val_fraction``, unless
    ``whole``: then the whole file is the ``val`` split (evaluating a trained
    model on new data; of a folder, its val file, else test, else train).
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise DataError(f"{path}: no such file or folder")
    skipped = Skipped()
    if path.is_dir():
        files = find_split_files(path)
        splits = {name: read_file(file, columns, name, skipped, label_kind) for name, file in files.items()}
        data = TextData(splits, skipped, list(files.values()))
        if whole:
            data.splits = {"val": splits.get("val") or splits.get("test") or splits["train"]}
        elif "val" not in splits:
            train = splits["train"]
            data.splits["train"], data.splits["val"] = stratified_split(train, val_fraction, seed, label_kind.strata(train.labels))
            data.split_from = files["train"].name
    else:
        rows = read_file(path, columns, "train", skipped, label_kind)
        data = TextData({}, skipped, [path])
        if whole:
            rows.name = "val"
            data.splits = {"val": rows}
        else:
            train, val = stratified_split(rows, val_fraction, seed, label_kind.strata(rows.labels))
            data.splits = {"train": train, "val": val}
            data.split_from = path.name
    if not whole and not data.splits["val"].texts:
        raise DataError(f"{path}: too few rows to hold out a validation split; add a val file or more rows")
    return data


def label_order(labels: Sequence[str]) -> list[str]:
    """Sorted label names: numerically when every label is an integer."""
    unique = set(labels)
    try:
        return sorted(unique, key=lambda x: (int(x), x))
    except ValueError:
        return sorted(unique)


def check_labels(data: TextData, label_names: Sequence[str], trained: bool) -> None:
    """Every label in every split must be known; DataError names the row.

    ``trained``: the names come from a trained model rather than from this
    data's training split (the message says which).  A row's label may be a
    tuple of labels (multi-label): each must be known.
    """
    known = set(label_names)
    for split in data.splits.values():
        for row, line in zip(split.labels, split.lines):
            for label in row if isinstance(row, tuple) else (row,):
                if label in known:
                    continue
                source = "the trained model" if trained else "training"
                shown = ", ".join(repr(n) for n in list(label_names)[:20])
                raise DataError(f"{split.path}: line {line}: label {label!r} does not occur in {source} (labels: {shown})")


# --------------------------------------------------------------------------
# Texts to predict


def read_texts(path: Path, columns: Columns) -> list[str]:
    """The texts of a file for prediction; a text pair becomes ``text<TAB>pair``.

    ``.txt``: one text per line.  CSV/TSV/JSONL: the text column (and the
    pair column when the model was trained on pairs); a file with a single
    column needs no column name to match.  Labels, if any, are ignored.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".txt":
        texts = []
        for number, line in enumerate(decode(path).split("\n"), start=1):
            if len(line) > MAX_FIELD_CHARS:
                raise _too_long(path, number, "a line", MAX_FIELD_CHARS, "text file")
            if line.strip():
                texts.append(line.rstrip("\r"))
        return texts
    if suffix not in SUFFIXES:
        raise DataError(f"{path}: unsupported file type {path.suffix}; use .txt, .csv, .tsv or .jsonl")
    text = decode(path)
    texts: list[str] = []
    if suffix == ".jsonl":
        records = list(_json_records(path, text))
        if not records:
            raise DataError(f"{path}: the file is empty")
        first = records[0][1]
        key = columns.text
        if key not in first:
            if len(first) != 1:
                raise _missing_column(path, "text", key, list(first))
            key = next(iter(first))
        pair = columns.pair if columns.pair and columns.pair in first else ""
        texts = [
            _joined(_bounded(rec.get(key), path, line, key), _bounded(rec.get(pair), path, line, pair) if pair else None)
            for line, rec in records
        ]
        return [t for t in texts if t.strip()]
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t" if suffix == ".tsv" else ",", strict=True)
    start, rows = 1, 0  # where the row being read begins, and its number
    try:
        header = [cell.strip() for cell in next(reader, [])]
        if not header:
            raise DataError(f"{path}: the file is empty")
        if columns.text in header:
            text_index = header.index(columns.text)
        elif len(header) == 1:
            text_index = 0
        else:
            raise _missing_column(path, "text", columns.text, header)
        pair_index = header.index(columns.pair) if columns.pair and columns.pair in header else None
        start, rows = reader.line_num + 1, 1
        for row in reader:
            if len(row) > text_index and row[text_index].strip():
                texts.append(_joined(row[text_index], row[pair_index] if pair_index is not None and len(row) > pair_index else None))
            start, rows = reader.line_num + 1, rows + 1
    except csv.Error as exc:
        raise _csv_error(path, reader, exc, start, rows) from None
    return texts


def _json_records(path: Path, text: str) -> Iterator[tuple[int, dict]]:
    for line, record in _json_lines(path, text):
        if isinstance(record, str):
            record = {"text": record}
        if not isinstance(record, dict):
            raise DataError(f"{path}: line {line}: expected a JSON object or string")
        yield line, record


def _joined(body: Any, pair: Any) -> str:
    body = _cell_text(body)
    return f"{body}\t{_cell_text(pair)}" if pair is not None else body
