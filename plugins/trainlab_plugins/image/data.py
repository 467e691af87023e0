"""Reading the data of an image task: a folder of class folders, or images listed in a table.

``read_image_data`` returns the same ``Splits`` for both forms: items of
``(image path, target)`` per split, the image headers, what was skipped and
the notes for the data summary.  The target is what the task's family
learns (a class index, a number, a multi-hot tuple), read by the family's
label reader (``trainlab_plugins.image.labels``).  No torch here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence

from trainlab import DataError
from trainlab_plugins.image.folder import ScanResult, Splits, read_dataset
from trainlab_plugins.image.labels import ClassLabels, Row
from trainlab_plugins.image.table import find_table_files, is_table, no_usable_rows, read_table

NO_LABEL = "row without a label"


def read_image_data(
    data_path: str,
    labels: Any,
    *,
    image_column: str,
    label_column: str,
    val_fraction: float,
    seed: int,
    label_names: Sequence[str] | None = None,
    whole: bool = False,
    should_stop: Callable[[], bool] | None = None,
    task_id: str = "",
) -> Splits:
    """The splits of ``data_path`` for a family whose label reader is ``labels``.

    ``label_names``: a trained run's (resuming or evaluating it): the data's
    labels must be among them.  ``whole``: the data is not the run's own, so
    all of it is evaluated (a table becomes one ``val`` split; of a folder of
    tables, its val and test tables are read, else its train table).
    """
    root = Path(data_path).expanduser()
    if not root.exists():
        raise DataError(f"data path {root} does not exist")
    if not is_table(root):
        if isinstance(labels, ClassLabels):
            if root.is_file():
                raise DataError(
                    f"data path {root} is a file; image classification needs a folder of class folders "
                    "or a table (.csv, .tsv, .jsonl) with image and label columns"
                )
            return read_dataset(
                data_path, val_fraction=val_fraction, seed=seed, label_names=label_names, whole=whole, should_stop=should_stop
            )
        raise DataError(
            f"{root}: {task_id or 'this task'} reads images listed in a table: a .csv, .tsv or .jsonl file with columns "
            f"{image_column!r} and {label_column!r}, or a folder with train.* and val.* tables"
        )
    return _read_tables(root, labels, image_column, label_column, val_fraction, seed, label_names, whole, should_stop)


def _read_tables(
    root: Path,
    labels: Any,
    image_column: str,
    label_column: str,
    val_fraction: float,
    seed: int,
    label_names: Sequence[str] | None,
    whole: bool,
    should_stop: Callable[[], bool] | None,
) -> Splits:
    if root.is_dir():
        files = find_table_files(root)
        if whole:
            files = {s: f for s, f in files.items() if s != "train"} or {"val": files["train"]}
    else:
        files = {"val" if whole else "train": root}
    explicit = root.is_dir() and "val" in files and not whole

    skipped: Counter = Counter()
    examples: list[tuple[str, str]] = []
    rows: dict[str, list[Row]] = {}
    for split, file in files.items():
        scan = ScanResult()
        parsed: list[Row] = []
        for item in read_table(file, image_column, label_column, scan, should_stop):
            label = labels.parse(item.value, item.where)
            if label is None:
                scan.skip(item.where, NO_LABEL)
            else:
                parsed.append((item, label))
        if not parsed:
            raise no_usable_rows(file, scan)
        skipped.update(scan.skipped)
        examples += scan.skipped_examples
        rows[split] = parsed

    source = files.get("train", next(iter(files.values())))
    trained = label_names is not None
    names = labels.names(rows.get("train", next(iter(rows.values()))), label_names, str(source))
    for split, split_rows in rows.items():
        if trained or split != "train":
            labels.check(split, split_rows, names, trained, str(files[split]))

    notes: list[str] = []
    if not whole and "val" not in rows:
        rows["train"], rows["val"], notes = labels.split(rows["train"], val_fraction, seed)
        if root.is_dir():
            notes.append(f"no val table in {root}: held out {val_fraction:g} of the training rows for validation")
        if not rows["val"]:
            raise DataError(f"{source}: too few rows to hold out a validation split; add rows or a val table")

    index = {name: i for i, name in enumerate(names)}
    items = {split: [(item.record.path, labels.target(label, index)) for item, label in split_rows] for split, split_rows in rows.items()}
    records = {
        split: [replace(item.record, label=labels.record_label(label)) for item, label in split_rows]
        for split, split_rows in rows.items()
    }
    return Splits(names, items, records, skipped, examples, notes, explicit, form="tables")
