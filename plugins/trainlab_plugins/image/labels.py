"""How each task family reads the label cell of a listed image, and splits and counts its rows.

* ``ClassLabels`` (image-classification): a class name per image;
* ``NumberLabels`` (image-regression): a finite number per image;
* ``LabelSets`` (image-multilabel): any number of label names per image
  (``;``-joined in CSV/TSV, a JSON list in JSONL; a row may have none).

Each turns a cell into a parsed label (``parse``; None: the row has no label
and is skipped), finds the label names of the training rows, refuses labels
a held-out split or a trained model does not know, makes the validation
split when the data has none, and gives each row its training target.  A
``Row`` is ``(ListedImage, parsed label)``.  No torch here.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any, Sequence

from trainlab import DataError
from trainlab_plugins.image.folder import shown_names
from trainlab_plugins.image.table import ListedImage

Row = tuple[ListedImage, Any]
MIN_REGRESSION_ROWS = 4  # two to train on, two to validate: R^2 needs two


def _shown(names: Sequence[str], limit: int = 20) -> str:
    more = f", ... ({len(names)} in all)" if len(names) > limit else ""
    return ", ".join(repr(n) for n in list(names)[:limit]) + more


class ClassLabels:
    """A class name per image; the classes are those of the training rows."""

    def parse(self, value: Any, where: str) -> str | None:
        if value is None:
            return None
        if isinstance(value, (dict, list)):
            raise DataError(f"{where}: label {value!r} is not a class name")
        if isinstance(value, bool):
            return str(value).lower()
        if isinstance(value, float):
            if not value.is_integer():
                raise DataError(f"{where}: label {value!r} is not a class name or an integer")
            value = int(value)
        text = str(value).strip()
        return text or None

    def record_label(self, parsed: str) -> str:
        return parsed

    def names(self, train: Sequence[Row], given: Sequence[str] | None, source: str) -> list[str]:
        if given is not None:
            return list(given)
        found = sorted({label for _, label in train})
        if len(found) < 2:
            only = f" ({found[0]!r})" if found else ""
            raise DataError(f"{source}: only one class{only}; classification needs at least two classes")
        return found

    def check(self, split: str, rows: Sequence[Row], names: Sequence[str], trained: bool, source: str) -> None:
        known = set(names)
        unknown = sorted({label for _, label in rows} - known)
        if not unknown:
            return
        if trained:
            raise DataError(
                f"{source} holds classes the model was not trained on: {shown_names(unknown)} (it knows {shown_names(names)})"
            )
        first = next(item.where for item, label in rows if label in unknown)
        raise DataError(
            f"{source} holds classes that training lacks: {shown_names(unknown)} (first: {first}); "
            "add training images for them or remove those rows"
        )

    def split(self, rows: Sequence[Row], fraction: float, seed: int) -> tuple[list[Row], list[Row], list[str]]:
        """``fraction`` of each class held out (at least one row, never a class's only one)."""
        by_label: dict[str, list[Row]] = {}
        for row in rows:
            by_label.setdefault(row[1], []).append(row)
        rng = random.Random(seed)
        train: list[Row] = []
        val: list[Row] = []
        notes = []
        for label in sorted(by_label):
            group = sorted(by_label[label], key=lambda r: (r[0].record.path, r[0].where))
            rng.shuffle(group)
            if len(group) == 1:
                notes.append(f"class {label!r} has a single image: it stays in training and is not validated")
                train += group
                continue
            n_val = min(len(group) - 1, max(1, round(len(group) * fraction)))
            val += group[:n_val]
            train += group[n_val:]
        return train, val, notes

    def target(self, parsed: str, index: dict[str, int]) -> int:
        return index[parsed]

    def counts(self, targets: Sequence[int], names: Sequence[str]) -> dict[str, int]:
        found = Counter(targets)
        return {name: found.get(i, 0) for i, name in enumerate(names)}


class NumberLabels:
    """A finite number per image (the target of a regression)."""

    def parse(self, value: Any, where: str) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or isinstance(value, (dict, list)):
            raise DataError(f"{where}: label {value!r} is not a number")
        if isinstance(value, (int, float)):
            try:
                number = float(value)
            except OverflowError:  # an integer past the largest float
                number = math.inf
        else:
            text = str(value).strip()
            if not text:
                return None
            try:
                number = float(text)
            except ValueError:
                hint = "; write decimals with a point (1.5, not 1,5)" if "," in text else ""
                raise DataError(f"{where}: label {text!r} is not a number{hint}") from None
        if not math.isfinite(number):
            raise DataError(f"{where}: label {value!r} is not a finite number; NaN and infinity cannot be learned: fill in or remove the row")
        return number

    def record_label(self, parsed: float) -> str:
        return repr(parsed)

    def names(self, train: Sequence[Row], given: Sequence[str] | None, source: str) -> list[str]:
        if given is None and len(train) < MIN_REGRESSION_ROWS:
            raise DataError(
                f"{source}: too few rows with an image and a number ({len(train)}); regression needs at least {MIN_REGRESSION_ROWS}"
            )
        return []

    def check(self, split: str, rows: Sequence[Row], names: Sequence[str], trained: bool, source: str) -> None:
        """Any number is a valid target."""

    def split(self, rows: Sequence[Row], fraction: float, seed: int) -> tuple[list[Row], list[Row], list[str]]:
        """Hold out ``fraction`` spread over the range of the target.

        The rows are sorted by target and cut into consecutive groups of
        about ``1 / fraction``; one row of each group, chosen with the seed,
        is held out, so the validation split covers low, middle and high
        values even when it is small.
        """
        rng = random.Random(seed)
        ordered = sorted(rows, key=lambda r: (r[1], r[0].record.path, r[0].where))
        n_val = min(len(ordered) - 1, max(1, round(len(ordered) * fraction)))
        bounds = [round(i * len(ordered) / n_val) for i in range(n_val + 1)]
        held = {bounds[i] + rng.randrange(bounds[i + 1] - bounds[i]) for i in range(n_val)}
        train = [r for i, r in enumerate(ordered) if i not in held]
        val = [r for i, r in enumerate(ordered) if i in held]
        return train, val, []

    def target(self, parsed: float, index: dict[str, int]) -> float:
        return float(parsed)

    def counts(self, targets: Sequence[float], names: Sequence[str]) -> dict[str, int]:
        return {"images": len(targets)}


class LabelSets:
    """Any number of label names per image, joined by ``separator`` in a CSV/TSV cell."""

    def __init__(self, separator: str = ";"):
        self.separator = separator

    def parse(self, value: Any, where: str) -> tuple[str, ...]:
        if value is None:
            return ()
        if isinstance(value, str):
            parts = value.split(self.separator) if self.separator else [value]
        elif isinstance(value, list):
            parts = []
            for item in value:
                if isinstance(item, bool) or not isinstance(item, (str, int)):
                    raise DataError(f"{where}: label {item!r} in the list is not a label name")
                parts.append(str(item))
        else:
            raise DataError(f"{where}: labels {value!r} are neither a list nor a {self.separator!r}-joined string")
        labels = dict.fromkeys(p.strip() for p in parts)  # ordered, each once
        return tuple(label for label in labels if label)

    def record_label(self, parsed: tuple[str, ...]) -> str:
        return self.separator.join(parsed)

    def names(self, train: Sequence[Row], given: Sequence[str] | None, source: str) -> list[str]:
        if given is not None:
            return list(given)
        found = sorted({label for _, labels in train for label in labels})
        if not found:
            raise DataError(f"{source}: no row has a label; multi-label training needs rows with labels (column joined by {self.separator!r})")
        return found

    def check(self, split: str, rows: Sequence[Row], names: Sequence[str], trained: bool, source: str) -> None:
        known = set(names)
        for item, labels in rows:
            unknown = [label for label in labels if label not in known]
            if unknown:
                origin = "the trained model" if trained else "training"
                raise DataError(f"{item.where}: label {unknown[0]!r} does not occur in {origin} (labels: {_shown(names)})")

    def split(self, rows: Sequence[Row], fraction: float, seed: int) -> tuple[list[Row], list[Row], list[str]]:
        """A random ``fraction`` held out, then every label kept in training where possible.

        A label whose rows all fell into validation gets one of them back
        (the one with the fewest labels, so the others move least); a label
        with a single row is trained on and not validated.
        """
        ordered = sorted(rows, key=lambda r: (r[0].record.path, r[0].where))
        random.Random(seed).shuffle(ordered)
        n_val = min(len(ordered) - 1, max(1, round(len(ordered) * fraction)))
        val, train = ordered[:n_val], ordered[n_val:]
        in_train = Counter(label for _, labels in train for label in labels)
        total = Counter(label for _, labels in rows for label in labels)
        notes = []
        for label in sorted(total, key=lambda name: (total[name], name)):
            if total[label] == 1:
                notes.append(f"label {label!r} occurs in a single image: it is trained on and not validated")
            if in_train[label]:
                continue
            back = min((r for r in val if label in r[1]), key=lambda r: len(r[1]))
            val.remove(back)
            train.append(back)
            in_train.update(back[1])
        return train, val, notes

    def target(self, parsed: tuple[str, ...], index: dict[str, int]) -> tuple[float, ...]:
        hot = [0.0] * len(index)
        for label in parsed:
            hot[index[label]] = 1.0
        return tuple(hot)

    def counts(self, targets: Sequence[tuple[float, ...]], names: Sequence[str]) -> dict[str, int]:
        return {name: int(sum(t[j] for t in targets)) for j, name in enumerate(names)}
